//! (in progress)

pub mod generalize;
