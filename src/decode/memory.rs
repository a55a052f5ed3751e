//! How decoders see a tracee: its memory and its `/proc` view, behind traits so decoders are
//! unit-tested with byte arrays and fake views (reverie's `MemoryAccess` shape).
//!
//! The tracer supplies the real implementations (`tracer/memory.rs`, `tracer/procfs.rs`).

/// Read access to a stopped tracee's memory.
pub trait Memory {
    /// Copy up to `buf.len()` bytes from `addr`; returns how many bytes were readable
    /// (a short count means the rest was unmapped).
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize;

    /// Read a NUL-terminated string of at most `cap` bytes (NUL excluded).
    /// `None` when the memory is unreadable or no NUL was found within `cap` bytes.
    fn read_cstr(&self, addr: u64, cap: usize) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut chunk = [0u8; 256];
        let mut at = addr;
        while out.len() < cap {
            // Never read across a page boundary in one go: the next page may be unmapped
            // while the string ends before it.
            let to_page_end = 4096 - (at % 4096);
            let want = chunk
                .len()
                .min(usize::try_from(to_page_end).unwrap_or(chunk.len()));
            let n = self.read(at, &mut chunk[..want]);
            if n == 0 {
                return None;
            }
            if let Some(end) = chunk[..n].iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return (out.len() <= cap).then_some(out);
            }
            out.extend_from_slice(&chunk[..n]);
            at = at.checked_add(n as u64)?;
        }
        None
    }

    /// Read up to 256 bytes (never across a page boundary) at each address, as many as
    /// possible in one go; `None` for an address that could not be read. Used to read the
    /// strings of an argv/envp array with few system calls.
    fn read_heads(&self, addrs: &[u64]) -> Vec<Option<Vec<u8>>> {
        let spans: Vec<(u64, usize)> = addrs.iter().map(|&a| (a, head_len(a))).collect();
        self.read_spans(&spans)
    }

    /// Read each `(addr, len)` span (none across a page boundary), as many as possible in one
    /// go: up to `len` bytes each, `None` for a span that could not be read at all. The
    /// default reads one by one.
    fn read_spans(&self, spans: &[(u64, usize)]) -> Vec<Option<Vec<u8>>> {
        spans
            .iter()
            .map(|&(a, len)| {
                let mut b = vec![0u8; len];
                let n = self.read(a, &mut b);
                (n > 0).then(|| {
                    b.truncate(n);
                    b
                })
            })
            .collect()
    }

    /// Read the spans as [`Memory::read_spans`] does, but give back what was read as ranges:
    /// `(start, bytes, short)`, `short` when the read stopped before the range's end
    /// (unreadable memory, or the bytes after it are simply not known). An implementation
    /// may merge nearby spans into one range. The default reads each span as its own range.
    fn read_ranges(&self, spans: &[(u64, usize)]) -> Vec<(u64, Vec<u8>, bool)> {
        spans
            .iter()
            .map(|&(a, len)| {
                let mut b = vec![0u8; len];
                let n = self.read(a, &mut b);
                b.truncate(n);
                (a, b, n < len)
            })
            .collect()
    }

    /// The NUL-terminated string at `addr` (NUL excluded, at most `cap` bytes) if memory read
    /// beforehand holds all of it; `None` means "read it" (see [`Prefetched`]).
    fn held_cstr(&self, _addr: u64, _cap: usize) -> Option<&[u8]> {
        None
    }
}

/// A [`Memory`] that answers from spans read beforehand (all in one go, see
/// [`Prefetched::new`]) whatever falls inside them, and asks `inner` for the rest. Memory
/// that changed since is not seen: use it within one stop, for reads that decide nothing
/// (an exec's argv and environment names).
pub struct Prefetched<'a> {
    inner: &'a dyn Memory,
    /// Start, the bytes read, and whether the read stopped short (unreadable memory follows).
    spans: Vec<(u64, Vec<u8>, bool)>,
}

impl std::fmt::Debug for Prefetched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefetched")
            .field("spans", &self.spans.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Prefetched<'a> {
    /// Read `spans` from `inner` at once and keep what was read.
    pub fn new(inner: &'a dyn Memory, spans: &[(u64, usize)]) -> Prefetched<'a> {
        let mut p = Prefetched {
            inner,
            spans: Vec::new(),
        };
        p.add(spans);
        p
    }

    /// `data`, read at `start` already (`short`: the read stopped before unreadable memory).
    pub fn known(inner: &'a dyn Memory, start: u64, data: Vec<u8>, short: bool) -> Prefetched<'a> {
        Prefetched {
            inner,
            spans: vec![(start, data, short)],
        }
    }

    /// Read more spans (the ones not answered already) in one go, and keep them.
    pub fn add(&mut self, spans: &[(u64, usize)]) {
        let missing: Vec<(u64, usize)> = spans
            .iter()
            .copied()
            .filter(|&(a, len)| a != 0 && len > 0 && self.head(a, len).is_none())
            .collect();
        if missing.is_empty() {
            return;
        }
        self.spans.extend(
            self.inner
                .read_ranges(&missing)
                .into_iter()
                .filter(|(_, data, _)| !data.is_empty()),
        );
    }

    /// What a read of `len` bytes at `addr` gives, if a span knows: all `len` bytes, or the
    /// bytes up to where unreadable memory cut the span's own read short.
    pub fn held(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.find(addr, len, false)
    }

    /// [`Prefetched::held`], or fewer bytes if a NUL ends them first (a string's head needs no
    /// more).
    fn head(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.find(addr, len, true)
    }

    fn find(&self, addr: u64, len: usize, to_nul: bool) -> Option<&[u8]> {
        self.spans.iter().find_map(|(start, data, short)| {
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            let have = data.get(off..)?;
            if have.len() >= len {
                Some(&have[..len])
            } else if *short && !have.is_empty() {
                Some(have)
            } else if to_nul {
                let nul = have.iter().position(|&b| b == 0)?;
                Some(&have[..=nul])
            } else {
                None
            }
        })
    }
}

impl Memory for Prefetched<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        match self.held(addr, buf.len()) {
            Some(data) => {
                buf[..data.len()].copy_from_slice(data);
                data.len()
            }
            None => self.inner.read(addr, buf),
        }
    }

    fn held_cstr(&self, addr: u64, cap: usize) -> Option<&[u8]> {
        self.spans.iter().find_map(|(start, data, _)| {
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            let have = data.get(off..)?;
            let have = &have[..have.len().min(cap.saturating_add(1))];
            // A word-at-a-time search for the NUL (the environment is scanned at every exec).
            std::ffi::CStr::from_bytes_until_nul(have)
                .ok()
                .map(std::ffi::CStr::to_bytes)
        })
    }

    fn read_spans(&self, spans: &[(u64, usize)]) -> Vec<Option<Vec<u8>>> {
        let mut out: Vec<Option<Vec<u8>>> = spans
            .iter()
            .map(|&(a, len)| self.head(a, len).map(<[u8]>::to_vec))
            .collect();
        let missing: Vec<usize> = (0..spans.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<(u64, usize)> = missing.iter().map(|&i| spans[i]).collect();
            for (i, got) in missing.into_iter().zip(self.inner.read_spans(&asked)) {
                out[i] = got;
            }
        }
        out
    }
}

/// How many bytes [`Memory::read_heads`] reads at `addr`: up to 256, not past the page end.
pub fn head_len(addr: u64) -> usize {
    let to_page_end = 4096 - (addr % 4096);
    usize::try_from(to_page_end.min(256)).unwrap_or(256)
}

/// The parts of `/proc/PID` path resolution needs.
pub trait ProcView {
    /// The process id whose view this is (for `/proc/self`).
    fn pid(&self) -> i32;
    /// The thread id (for `/proc/thread-self`).
    fn tid(&self) -> i32;
    /// `/proc/PID/cwd`, absolute as seen from sbx.
    fn cwd(&self) -> Option<Vec<u8>>;
    /// `/proc/PID/root`, absolute as seen from sbx (`/` unless chrooted).
    fn root(&self) -> Option<Vec<u8>>;
    /// `/proc/PID/fd/N`'s target.
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>>;
    /// If the absolute path `path` (as seen from sbx) is a symlink, its target bytes.
    /// `None` if it is not a symlink or does not exist.
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>>;
}

/// An in-memory tracee for tests: a flat memory image at `base` and a fake filesystem.
#[derive(Debug, Default, Clone)]
pub struct FakeMemory {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Memory for FakeMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Some(off) = addr.checked_sub(self.base) else {
            return 0;
        };
        let Ok(off) = usize::try_from(off) else {
            return 0;
        };
        if off >= self.bytes.len() {
            return 0;
        }
        let n = buf.len().min(self.bytes.len() - off);
        buf[..n].copy_from_slice(&self.bytes[off..off + n]);
        n
    }
}

/// A fake `/proc` view for tests.
#[derive(Debug, Default, Clone)]
pub struct FakeProc {
    pub pid: i32,
    pub tid: i32,
    pub cwd: Vec<u8>,
    pub root: Vec<u8>,
    pub fds: std::collections::BTreeMap<i32, Vec<u8>>,
    pub symlinks: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
}

impl ProcView for FakeProc {
    fn pid(&self) -> i32 {
        self.pid
    }
    fn tid(&self) -> i32 {
        self.tid
    }
    fn cwd(&self) -> Option<Vec<u8>> {
        Some(self.cwd.clone())
    }
    fn root(&self) -> Option<Vec<u8>> {
        Some(if self.root.is_empty() {
            b"/".to_vec()
        } else {
            self.root.clone()
        })
    }
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        self.fds.get(&fd).cloned()
    }
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>> {
        self.symlinks.get(path).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads all spans as one range, from the first start to the last end, as far as memory
    /// is readable (as `TraceeMemory` merges nearby spans into one `process_vm_readv` iovec).
    struct Merging<'a>(&'a FakeMemory);

    impl Memory for Merging<'_> {
        fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
            self.0.read(addr, buf)
        }
        fn read_ranges(&self, spans: &[(u64, usize)]) -> Vec<(u64, Vec<u8>, bool)> {
            let Some(start) = spans.iter().map(|s| s.0).min() else {
                return Vec::new();
            };
            let end = spans
                .iter()
                .map(|s| s.0 + s.1 as u64)
                .max()
                .unwrap_or(start);
            let mut b = vec![0u8; usize::try_from(end - start).unwrap()];
            let n = self.0.read(start, &mut b);
            let short = n < b.len();
            b.truncate(n);
            vec![(start, b, short)]
        }
    }

    proptest! {
        /// Whatever was prefetched, span by span or merged into one range, a read or a span
        /// read gives what the memory below gives (a head may stop early at its NUL), also
        /// around the end of readable memory; a string said to be held is the one in memory.
        #[test]
        fn prefetched_reads_as_the_memory_below(
            bytes in proptest::collection::vec(any::<u8>(), 1..600),
            spans in proptest::collection::vec((0u64..700, 1usize..300), 0..6),
            asks in proptest::collection::vec((0u64..700, 1usize..300), 1..8),
        ) {
            let base = 0x1000;
            let mem = FakeMemory { base, bytes };
            let merging = Merging(&mem);
            let at = |v: &[(u64, usize)]| -> Vec<(u64, usize)> {
                v.iter().map(|&(a, l)| (base + a, l)).collect()
            };
            for below in [&mem as &dyn Memory, &merging] {
                let pre = Prefetched::new(below, &at(&spans));
                for (a, len) in at(&asks) {
                    let (mut want, mut got) = (vec![0u8; len], vec![0u8; len]);
                    let n = mem.read(a, &mut want);
                    prop_assert_eq!(pre.read(a, &mut got), n, "read at {:#x}+{}", a, len);
                    prop_assert_eq!(&got[..n], &want[..n]);
                    if let Some(s) = pre.held_cstr(a, len) {
                        prop_assert_eq!(Some(s.to_vec()), mem.read_cstr(a, len), "cstr at {:#x}", a);
                    }
                }
                let asked = at(&asks);
                for ((a, len), got) in asked.iter().zip(pre.read_spans(&asked)) {
                    let mut want = vec![0u8; *len];
                    let n = mem.read(*a, &mut want);
                    match got {
                        None => prop_assert_eq!(n, 0),
                        Some(g) => {
                            prop_assert!(!g.is_empty() && want[..n].starts_with(&g));
                            prop_assert!(g.len() == n || g.last() == Some(&0), "{:#x}+{}", a, len);
                        }
                    }
                }
            }
        }
    }
}
