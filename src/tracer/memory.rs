//! [`Memory`] for a stopped tracee, through `process_vm_readv`, or through `/proc/PID/mem`
//! where `process_vm_readv` is refused (a container runtime's default seccomp profile refuses
//! it without `CAP_SYS_PTRACE`; both need the same ptrace access, which the tracer has).
//!
//! A read that hits an unmapped page returns what it read so far (a short count), never an
//! error: decoders treat a short read as "unreadable" and fail closed.

use std::io::IoSliceMut;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid;

use crate::decode::Memory;

/// The memory of thread `tid` (all threads of a process share it).
#[derive(Debug, Clone, Copy)]
pub struct TraceeMemory {
    pub tid: i32,
}

/// Set once `process_vm_readv` (or `_writev`) was refused as a call (seccomp's EPERM, or
/// ENOSYS): from then on every access goes through `/proc/PID/mem`.
static VM_CALLS_REFUSED: AtomicBool = AtomicBool::new(false);

/// Was the error a refusal of the call itself rather than of this access?
fn refused(e: nix::errno::Errno) -> bool {
    matches!(e, nix::errno::Errno::EPERM | nix::errno::Errno::ENOSYS)
}

/// Whether sbx reads tracee memory through `/proc/PID/mem` because `process_vm_readv` was
/// refused (for `-v`).
pub fn through_proc_mem() -> bool {
    VM_CALLS_REFUSED.load(Ordering::Relaxed)
}

/// Read through `/proc/TID/mem`: what it read before the first unreadable byte.
fn read_proc_mem(tid: i32, addr: u64, buf: &mut [u8]) -> usize {
    let Ok(f) = std::fs::File::open(format!("/proc/{tid}/mem")) else {
        return 0;
    };
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], addr.saturating_add(done as u64)) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    done
}

impl Memory for TraceeMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Ok(base) = usize::try_from(addr) else {
            return 0;
        };
        if buf.is_empty() {
            return 0;
        }
        if VM_CALLS_REFUSED.load(Ordering::Relaxed) {
            return read_proc_mem(self.tid, addr, buf);
        }
        let len = buf.len();
        let mut local = [IoSliceMut::new(buf)];
        let remote = [RemoteIoVec { base, len }];
        match process_vm_readv(Pid::from_raw(self.tid), &mut local, &remote) {
            Ok(n) => n,
            Err(e) if refused(e) => {
                VM_CALLS_REFUSED.store(true, Ordering::Relaxed);
                read_proc_mem(self.tid, addr, buf)
            }
            Err(_) => 0,
        }
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
            Some(_) if VM_CALLS_REFUSED.load(Ordering::Relaxed) => {
                return self.read_ranges_one_by_one(&ranges, bufs);
            }
            Some(remote) if !remote.is_empty() => {
                let mut local: Vec<IoSliceMut<'_>> =
                    bufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                match process_vm_readv(Pid::from_raw(self.tid), &mut local, &remote) {
                    Ok(n) => n,
                    Err(e) if refused(e) => {
                        VM_CALLS_REFUSED.store(true, Ordering::Relaxed);
                        return self.read_ranges_one_by_one(&ranges, bufs);
                    }
                    Err(_) => 0,
                }
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

impl TraceeMemory {
    /// Each range read on its own through `/proc/PID/mem` (`process_vm_readv` refused).
    fn read_ranges_one_by_one(
        &self,
        ranges: &[(u64, u64)],
        bufs: Vec<Vec<u8>>,
    ) -> Vec<(u64, Vec<u8>, bool)> {
        ranges
            .iter()
            .zip(bufs)
            .map(|(&(s, _), mut b)| {
                let n = read_proc_mem(self.tid, s, &mut b);
                let short = n < b.len();
                b.truncate(n);
                (s, b, short)
            })
            .collect()
    }
}

/// Exactly `len` bytes of thread `tid`'s memory at `addr`, or `None`.
pub fn read_bytes(tid: i32, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    (TraceeMemory { tid }.read(addr, &mut buf) == len).then_some(buf)
}

/// Write `value` at `addr` in the memory of thread `tid`, as the kernel's own `put_user` for
/// that process would: through `process_vm_writev`, which honours the page protections (a
/// read-only page fails, unlike a write through `/proc/PID/mem`). Where `process_vm_writev` is
/// refused, through `/proc/PID/mem` after `/proc/PID/maps` shows the bytes in a writable
/// mapping. Whether it was written whole.
pub fn write_u32(tid: i32, addr: u64, value: u32) -> bool {
    use nix::sys::uio::process_vm_writev;
    let Ok(base) = usize::try_from(addr) else {
        return false;
    };
    let bytes = value.to_ne_bytes();
    if !VM_CALLS_REFUSED.load(Ordering::Relaxed) {
        let local = [std::io::IoSlice::new(&bytes)];
        let remote = [RemoteIoVec {
            base,
            len: bytes.len(),
        }];
        match process_vm_writev(Pid::from_raw(tid), &local, &remote) {
            Ok(n) => return n == bytes.len(),
            Err(e) if refused(e) => VM_CALLS_REFUSED.store(true, Ordering::Relaxed),
            Err(_) => return false,
        }
    }
    let end = addr.saturating_add(bytes.len() as u64);
    let maps = std::fs::read_to_string(format!("/proc/{tid}/maps")).unwrap_or_default();
    if !writable_in_maps(&maps, addr, end) {
        return false;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/{tid}/mem"))
        .and_then(|f| f.write_all_at(&bytes, addr))
        .is_ok()
}

/// Does one writable mapping of a `/proc/PID/maps` text hold all of `[start, end)`?
fn writable_in_maps(maps: &str, start: u64, end: u64) -> bool {
    maps.lines().any(|l| {
        let mut f = l.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            return false;
        };
        let Some((a, b)) = range.split_once('-') else {
            return false;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            return false;
        };
        a <= start && end <= b && perms.as_bytes().get(1) == Some(&b'w')
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn writable_in_maps_needs_one_writable_mapping_holding_the_bytes() {
        let maps = "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n\
                    00601000-00602000 rw-p 00000000 00:00 0 [heap]\n";
        assert!(super::writable_in_maps(maps, 0x601000, 0x601004));
        assert!(super::writable_in_maps(maps, 0x601ffc, 0x602000));
        assert!(!super::writable_in_maps(maps, 0x601ffe, 0x602002));
        assert!(!super::writable_in_maps(maps, 0x400000, 0x400004));
        assert!(!super::writable_in_maps(maps, 0x500000, 0x500004));
        assert!(!super::writable_in_maps("garbage\n", 0, 4));
    }

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
