//! Turn a raw syscall (number + six argument words) into the [`Target`]s it acts on.
//!
//! Pure: memory and `/proc` come in through the [`Memory`] and [`ProcView`] traits, so every
//! decoder is unit-tested with byte arrays. Owns open-flag, sockaddr and path decoding.

pub mod memory;

pub use memory::{Memory, ProcView};
pub mod flags;
pub mod path;
pub mod sockaddr;
