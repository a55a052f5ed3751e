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
    /// strings of an argv/envp array with few system calls; the default reads one by one.
    fn read_heads(&self, addrs: &[u64]) -> Vec<Option<Vec<u8>>> {
        addrs
            .iter()
            .map(|&a| {
                let mut b = vec![0u8; head_len(a)];
                let n = self.read(a, &mut b);
                (n > 0).then(|| {
                    b.truncate(n);
                    b
                })
            })
            .collect()
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
