//! The x86_64 syscall table.

use super::SyscallDef;

/// Sorted by number.
pub static TABLE: &[SyscallDef] = &[];
