//! [`Memory`] for a stopped tracee, through `process_vm_readv`.
//!
//! A read that hits an unmapped page returns what it read so far (a short count), never an
//! error: decoders treat a short read as "unreadable" and fail closed.

use std::io::IoSliceMut;

use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid;

use crate::decode::Memory;

/// The memory of thread `tid` (all threads of a process share it).
#[derive(Debug, Clone, Copy)]
pub struct TraceeMemory {
    pub tid: i32,
}

impl Memory for TraceeMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Ok(base) = usize::try_from(addr) else {
            return 0;
        };
        if buf.is_empty() {
            return 0;
        }
        let len = buf.len();
        let mut local = [IoSliceMut::new(buf)];
        let remote = [RemoteIoVec { base, len }];
        process_vm_readv(Pid::from_raw(self.tid), &mut local, &remote).unwrap_or(0)
    }
}
