//! `sbx enforce` (in progress)
