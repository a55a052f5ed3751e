//! `sbx learn` (in progress)
