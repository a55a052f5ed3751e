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

    /// All spans in one `process_vm_readv`: see [`TraceeMemory::read_ranges`], each span then
    /// cut out of its range.
    fn read_spans(&self, spans: &[(u64, usize)]) -> Vec<Option<Vec<u8>>> {
        let ranges = self.read_ranges(spans);
        spans
            .iter()
            .map(|&(a, len)| {
                let (start, data, _) = ranges.iter().find(|(s, d, _)| {
                    a >= *s && a - *s <= u64::try_from(d.len()).unwrap_or(u64::MAX)
                })?;
                let off = usize::try_from(a - start).ok()?;
                let n = len.min(data.len() - off);
                (n > 0).then(|| data[off..off + n].to_vec())
            })
            .collect()
    }

    /// All spans in one `process_vm_readv`. Spans close together (an environment's strings
    /// lie back to back on the stack) are read as one range: the kernel pins the pages of each
    /// iovec separately, and 36 small iovecs over the same 3 pages cost sbx 16 us per exec
    /// against a few us for one. The kernel copies the ranges in address order and stops at
    /// the first byte it cannot read: the range it stopped in is cut short there, and the
    /// ranges after it come back empty (short), so their spans are read again on their own.
    fn read_ranges(&self, spans: &[(u64, usize)]) -> Vec<(u64, Vec<u8>, bool)> {
        // Spans at most this far apart are read as one range.
        const MERGE_GAP: u64 = 256;
        let mut sorted: Vec<(u64, usize)> = spans.iter().copied().filter(|s| s.1 > 0).collect();
        sorted.sort_unstable_by_key(|s| s.0);
        // [start, end) of each range.
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for (a, len) in sorted {
            let end = a.saturating_add(len as u64);
            match ranges.last_mut() {
                Some((_, e)) if a <= e.saturating_add(MERGE_GAP) => *e = (*e).max(end),
                _ => ranges.push((a, end)),
            }
        }
        let mut bufs: Vec<Vec<u8>> = ranges
            .iter()
            .map(|&(s, e)| vec![0u8; usize::try_from(e - s).unwrap_or(0)])
            .collect();
        let remote: Option<Vec<RemoteIoVec>> = ranges
            .iter()
            .zip(&bufs)
            .map(|(&(s, _), b)| {
                usize::try_from(s)
                    .ok()
                    .map(|base| RemoteIoVec { base, len: b.len() })
            })
            .collect();
        let mut left = match remote {
            Some(remote) if !remote.is_empty() => {
                let mut local: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                process_vm_readv(Pid::from_raw(self.tid), &mut local, &remote).unwrap_or(0)
            }
            _ => 0,
        };
        ranges
            .iter()
            .zip(bufs)
            .map(|(&(s, _), mut b)| {
                let n = left.min(b.len());
                left -= n;
                let short = n < b.len();
                b.truncate(n);
                (s, b, short)
            })
            .collect()
    }
}

/// Write `value` at `addr` in the memory of thread `tid`, as the kernel's own `put_user` for
/// that process would: through `process_vm_writev`, which honours the page protections (a
/// read-only page fails, unlike a write through `/proc/PID/mem`). Whether it was written whole.
/// Exactly `len` bytes of thread `tid`'s memory at `addr`, or `None`.
pub fn read_bytes(tid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    (TraceeMemory { tid }.read(addr, &mut buf) == len).then_some(buf)
}

pub fn write_u32(tid: i32, addr: u64, value: u32) -> bool {
    use nix::sys::uio::process_vm_writev;
    let Ok(base) = usize::try_from(addr) else {
        return false;
    };
    let bytes = value.to_ne_bytes();
    let local = [std::io::IoSlice::new(&bytes)];
    let remote = [RemoteIoVec {
        base,
        len: bytes.len(),
    }];
    process_vm_writev(Pid::from_raw(tid), &local, &remote) == Ok(bytes.len())
}

#[cfg(test)]
mod tests {
    /// Needs the host kernel's process_vm_readv (qemu-user, which runs the aarch64 unit
    /// tests in CI, does not read its own process as a kernel does): skipped there with
    /// `--skip ::live::` (.ci/aarch64.sh).
    mod live {
        use super::super::*;

        /// `read_heads` on sbx's own memory: heads back to back, far apart and repeated come
        /// back as `read` alone would give them; with an unmapped one among them, nothing comes
        /// back wrong (a head may then be missing or cut short: the caller reads it alone).
        #[test]
        fn read_heads_matches_one_read_per_head() {
            let mut block = vec![0u8; 3 * 4096];
            for (i, b) in block.iter_mut().enumerate() {
                *b = u8::try_from(i % 251).unwrap();
            }
            let far = vec![7u8; 600];
            let base = block.as_ptr() as u64;
            let mut addrs = vec![
                base + 10,
                base + 40,
                base + 4000,
                base + 4096 + 300,
                base + 10, // repeated
                far.as_ptr() as u64 + 5,
                base + 2 * 4096 + 100,
            ];
            let mem = TraceeMemory {
                tid: i32::try_from(std::process::id()).unwrap(),
            };
            let alone = |a: u64| {
                let mut one = vec![0u8; crate::decode::memory::head_len(a)];
                let n = mem.read(a, &mut one);
                one.truncate(n);
                (n > 0).then_some(one)
            };
            let got = mem.read_heads(&addrs);
            for (a, g) in addrs.iter().zip(&got) {
                assert_eq!(g, &alone(*a), "{a:#x}");
            }
            // A head stops at its page end: `block` lies anywhere in the heap.
            let first = crate::decode::memory::head_len(base + 10);
            assert_eq!(got[0].as_deref(), Some(&block[10..10 + first]));
            assert_eq!(
                got[2].as_ref().map(Vec::len),
                Some(crate::decode::memory::head_len(base + 4000)),
                "a head stops at its page end"
            );

            addrs.push(0x1000); // unmapped
            let got = mem.read_heads(&addrs);
            assert_eq!(got.last(), Some(&None));
            for (a, g) in addrs.iter().zip(&got) {
                if let Some(g) = g {
                    let w = alone(*a).expect("read_heads read what read cannot");
                    assert!(w.starts_with(g) && !g.is_empty(), "{a:#x}");
                }
            }
            drop(far);
        }
    }
}
