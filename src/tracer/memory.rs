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

    /// All heads in one `process_vm_readv` with one iovec each. The kernel copies the iovecs in
    /// order and stops at the first one it cannot read: the bytes it reports are handed out in
    /// order, and the entries after are `None` (the caller reads those one by one).
    fn read_heads(&self, addrs: &[u64]) -> Vec<Option<Vec<u8>>> {
        let lens: Vec<usize> = addrs
            .iter()
            .map(|&a| crate::decode::memory::head_len(a))
            .collect();
        let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
        let remote: Option<Vec<RemoteIoVec>> = addrs
            .iter()
            .zip(&lens)
            .map(|(&a, &len)| {
                usize::try_from(a)
                    .ok()
                    .map(|base| RemoteIoVec { base, len })
            })
            .collect();
        let mut got = match remote {
            Some(remote) => {
                let mut local: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                process_vm_readv(Pid::from_raw(self.tid), &mut local, &remote).unwrap_or(0)
            }
            None => 0,
        };
        bufs.into_iter()
            .map(|mut b| {
                if got == 0 {
                    return None;
                }
                let n = got.min(b.len());
                got -= n;
                b.truncate(n);
                Some(b)
            })
            .collect()
    }
}
