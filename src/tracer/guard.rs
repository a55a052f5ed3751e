//! The argument-race defence (design.md section 5, after MBOX).
//!
//! A second thread, or a process sharing memory, can rewrite a path buffer after sbx checked it
//! and before the kernel reads it. So, for every checked syscall that is let through, sbx
//! copies the exact bytes it decided on into a region the workload cannot write and points the
//! argument register at the copy:
//! - the region is mapped read-only (`PROT_READ`) at a fixed 4 GiB-aligned address
//!   ([`WINDOW_BASE`]) by a syscall injected at the process's first checked stop; fork
//!   children inherit it, exec drops it (the next stop injects it again);
//! - sbx writes it through `/proc/PID/mem`, which ignores page protections;
//! - every live thread of the tree has its own slot, so concurrent syscalls never share one;
//! - the seccomp filter stops mmap(MAP_FIXED)/mprotect/munmap/mremap/madvise/... whose address
//!   falls in the window (or whose length is >= 4 GiB); the enforce sink kills a process whose
//!   call overlaps the region. Writes through `/proc/*/mem`, process_vm_writev, ptrace and
//!   io_uring are refused by the policy (gated or not allowed).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::{Error, ptrace, regs};
use crate::decode::{BlobKind, Decoded};

/// Where the region lives: 4 GiB-aligned at 256 GiB, inside the smallest user address space
/// of both architectures (aarch64 kernels may give user space only 39 bits), far above a
/// non-PIE program's brk heap and below PIE text and the mmap base.
pub const WINDOW_BASE: u64 = 0x0000_0040_0000_0000;
/// Bytes per thread slot: two paths (PATH_MAX each) plus small structs.
pub const SLOT_SIZE: u64 = 16 * 1024;
/// Slots in the region: the most threads that can be inside a checked syscall at once.
pub const SLOTS: u64 = 4096;
/// The region's length (64 MiB of address space, untouched pages cost nothing).
pub const REGION_LEN: u64 = SLOT_SIZE * SLOTS;

const PROT_READ: u64 = 1;
const MAP_PRIVATE: u64 = 0x02;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_NORESERVE: u64 = 0x4000;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;

/// Does `[addr, addr+len)` overlap the region?
pub fn overlaps(addr: u64, len: u64) -> bool {
    let end = addr.saturating_add(len.max(1));
    addr < WINDOW_BASE + REGION_LEN && end > WINDOW_BASE
}

/// Does `/proc/PID/maps` show the region, read-only and private, with nothing else in it?
fn has_region(pid: i32) -> bool {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return false;
    };
    let want = format!(
        "{:x}-{:x} r--p 00000000 00:00 0 ",
        WINDOW_BASE,
        WINDOW_BASE + REGION_LEN
    );
    maps.lines()
        .any(|l| l.starts_with(&want) || l == want.trim_end())
}

/// Per-run guard state.
#[derive(Debug, Default)]
pub struct Guard {
    /// Processes (tgids) whose address space has the region.
    mapped: HashSet<i32>,
    /// Processes that exec'd and have not been given the region yet: their new address space
    /// certainly lacks it (no need to read their maps).
    fresh: HashSet<i32>,
    /// `/proc/PID/mem` of each mapped process, opened on first use.
    mem: HashMap<i32, File>,
    slots: HashMap<i32, u64>,
    free: Vec<u64>,
    next: u64,
}

/// What [`Guard::prepare`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The region is there; the arguments can be protected.
    Ready,
    /// The region was just injected and the original syscall restarted: resume the tracee
    /// with PTRACE_CONT; it stops again on the same syscall.
    Restarted,
}

impl Guard {
    pub fn new() -> Guard {
        Guard::default()
    }

    /// Make sure process `pid` has the region; injects it from thread `tid` (stopped at a
    /// seccomp stop) if not.
    pub fn prepare(&mut self, pid: i32, tid: i32, mmap_nr: u64) -> Result<Prepared, Error> {
        if self.mapped.contains(&pid) {
            return Ok(Prepared::Ready);
        }
        // A fork child can stop before its parent's fork event tells us it inherited the
        // region: look at its mappings. Only our exact read-only anonymous mapping counts (a
        // workload mapping placed there by an mmap hint would be writable or sized otherwise).
        if !self.fresh.contains(&pid) && has_region(pid) {
            self.mapped.insert(pid);
            return Ok(Prepared::Ready);
        }
        let args = [
            WINDOW_BASE,
            REGION_LEN,
            PROT_READ,
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
            u64::MAX, // fd -1
            0,
        ];
        let saved = regs::replace_syscall(tid, mmap_nr, args)?;
        ptrace::syscall(tid)?;
        loop {
            match waitpid(Pid::from_raw(tid), Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::PtraceSyscall(_)) => break,
                Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => {
                    return Err(Error::TraceeDied { tid });
                }
                // Nothing else can happen between syscall entry and exit; be defensive.
                Ok(_) => ptrace::syscall(tid)?,
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(Error::Wait(e)),
            }
        }
        let rval = match ptrace::syscall_info(tid)? {
            ptrace::SyscallInfo::Exit { rval, .. } => rval,
            other => {
                return Err(Error::Internal(format!(
                    "expected mmap exit, got {other:?}"
                )));
            }
        };
        if u64::try_from(rval).ok() != Some(WINDOW_BASE) {
            return Err(Error::Sink(format!(
                "cannot map the guard region in process {pid} (mmap returned {rval}): something already occupies {WINDOW_BASE:#x}"
            )));
        }
        regs::restart_saved(tid, saved)?;
        self.fresh.remove(&pid);
        self.mapped.insert(pid);
        Ok(Prepared::Restarted)
    }

    fn slot(&mut self, tid: i32) -> Result<u64, Error> {
        if let Some(&s) = self.slots.get(&tid) {
            return Ok(s);
        }
        let s = match self.free.pop() {
            Some(s) => s,
            None if self.next < SLOTS => {
                self.next += 1;
                self.next - 1
            }
            None => {
                return Err(Error::Sink(format!(
                    "more than {SLOTS} threads inside checked syscalls at once: refusing to run unguarded"
                )));
            }
        };
        self.slots.insert(tid, s);
        Ok(s)
    }

    /// Write `bytes` at `addr` in `pid`'s guard region, on behalf of the stopped thread `tid`.
    ///
    /// A failed write is either a process being torn down (another thread called exit_group or
    /// was SIGKILLed: a killed tracee leaves its ptrace stop at once and drops its memory, so
    /// the write finds nothing) or a real failure. `tid` tells them apart: if it no longer
    /// answers ptrace requests it died and will never run the syscall ([`Error::TraceeDied`]);
    /// if it is still stopped the guard cannot be set up, so the run aborts (fail closed).
    fn write(&mut self, pid: i32, tid: i32, addr: u64, bytes: &[u8]) -> Result<(), Error> {
        let res = match self.mem.get(&pid) {
            Some(f) => f.write_all_at(bytes, addr),
            None => std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(format!("/proc/{pid}/mem"))
                .and_then(|f| self.mem.entry(pid).or_insert(f).write_all_at(bytes, addr)),
        };
        match res {
            Ok(()) => Ok(()),
            Err(e) => match ptrace::syscall_info(tid) {
                Err(Error::TraceeDied { .. }) => Err(Error::TraceeDied { tid }),
                _ => Err(Error::Sink(format!(
                    "cannot write the guard region of {pid}: {e}"
                ))),
            },
        }
    }

    /// Copy the decided arguments of `decoded` into `tid`'s slot and re-point the registers.
    pub fn protect(&mut self, pid: i32, tid: i32, decoded: &Decoded) -> Result<(), Error> {
        self.protect_with(pid, tid, decoded, &[])
    }

    /// [`Self::protect`], except that the path arguments in `rewrites` (argument, its dirfd
    /// argument, new bytes) are replaced by the absolute, symlink-resolved path sbx checked,
    /// with the dirfd set to AT_FDCWD: the kernel then no longer depends on the dirfd (which
    /// another thread could dup2 over) nor on symlinks sbx already resolved.
    pub fn protect_with(
        &mut self,
        pid: i32,
        tid: i32,
        decoded: &Decoded,
        rewrites: &[(u8, Option<u8>, Vec<u8>)],
    ) -> Result<(), Error> {
        const AT_FDCWD: i64 = -100;
        if decoded.strings.is_empty() && decoded.blobs.is_empty() {
            return Ok(());
        }
        let base = WINDOW_BASE + self.slot(tid)? * SLOT_SIZE;
        let mut image: Vec<u8> = Vec::with_capacity(256);
        let mut set: Vec<(u8, u64)> = Vec::new();
        let push = |image: &mut Vec<u8>, bytes: &[u8], nul: bool| -> u64 {
            while !image.len().is_multiple_of(8) {
                image.push(0);
            }
            let at = base + image.len() as u64;
            image.extend_from_slice(bytes);
            if nul {
                image.push(0);
            }
            at
        };
        for (arg, s) in &decoded.strings {
            let bytes = match rewrites.iter().find(|(a, ..)| a == arg) {
                Some((_, dirfd, new)) => {
                    if let Some(d) = dirfd {
                        set.push((*d, AT_FDCWD.cast_unsigned()));
                    }
                    new.as_slice()
                }
                None => s.as_slice(),
            };
            let at = push(&mut image, bytes, true);
            set.push((*arg, at));
        }
        for b in &decoded.blobs {
            match &b.kind {
                BlobKind::Plain { size_arg } => {
                    let at = push(&mut image, &b.bytes, false);
                    set.push((b.arg, at));
                    if let Some(sz) = size_arg {
                        set.push((*sz, b.bytes.len() as u64));
                    }
                }
                BlobKind::MsgHdr { name } => {
                    let name_at = push(&mut image, name, false);
                    let mut hdr = b.bytes.clone();
                    if hdr.len() >= 12 {
                        hdr[0..8].copy_from_slice(&name_at.to_le_bytes());
                        hdr[8..12]
                            .copy_from_slice(&u32::try_from(name.len()).unwrap_or(0).to_le_bytes());
                    }
                    let at = push(&mut image, &hdr, false);
                    set.push((b.arg, at));
                }
            }
        }
        if image.len() as u64 > SLOT_SIZE {
            return Err(Error::Sink(
                "checked arguments larger than a guard slot".into(),
            ));
        }
        self.write(pid, tid, base, &image)?;
        regs::set_args(tid, &set)
    }

    /// Replace an allowed `open`/`openat`/`creat` by
    /// `openat2(AT_FDCWD, path, {flags, mode, RESOLVE_NO_SYMLINKS}, 24)` where `path` is the
    /// absolute, symlink-free path sbx resolved and checked: the kernel then opens exactly that
    /// file, or fails with ELOOP if a symlink was swapped in since (no exit stop needed).
    pub fn rewrite_open(
        &mut self,
        pid: i32,
        tid: i32,
        openat2_nr: u64,
        path: &[u8],
        flags: u64,
        mode: u64,
    ) -> Result<(), Error> {
        const AT_FDCWD: i64 = -100;
        let base = WINDOW_BASE + self.slot(tid)? * SLOT_SIZE;
        let mut image = Vec::with_capacity(path.len() + 40);
        image.extend_from_slice(path);
        image.push(0);
        while !image.len().is_multiple_of(8) {
            image.push(0);
        }
        let how_at = base + image.len() as u64;
        for w in [flags, mode, crate::decode::RESOLVE_NO_SYMLINKS] {
            image.extend_from_slice(&w.to_le_bytes());
        }
        if image.len() as u64 > SLOT_SIZE {
            return Err(Error::Sink("path larger than a guard slot".into()));
        }
        self.write(pid, tid, base, &image)?;
        regs::set_syscall(
            tid,
            openat2_nr,
            &[
                (0, AT_FDCWD.cast_unsigned()),
                (1, base),
                (2, how_at),
                (3, 24),
            ],
        )
    }

    /// A thread is gone: its slot is free again.
    pub fn thread_gone(&mut self, tid: i32) {
        if let Some(s) = self.slots.remove(&tid) {
            self.free.push(s);
        }
    }

    /// A process is gone.
    pub fn process_gone(&mut self, pid: i32) {
        self.mapped.remove(&pid);
        self.fresh.remove(&pid);
        self.mem.remove(&pid);
    }

    /// A process exec'd: its new address space has no region (and the old mem fd is stale).
    pub fn exec(&mut self, pid: i32, former_tid: Option<i32>) {
        self.process_gone(pid);
        self.fresh.insert(pid);
        if let Some(t) = former_tid {
            self.thread_gone(t);
        }
    }

    /// A child process was forked: it inherits a copy of the region if its parent had one.
    pub fn forked(&mut self, parent: i32, child: i32) {
        if self.mapped.contains(&parent) {
            self.mapped.insert(child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_bounds() {
        assert!(overlaps(WINDOW_BASE, 1));
        assert!(overlaps(WINDOW_BASE - 4096, 8192));
        assert!(overlaps(WINDOW_BASE + REGION_LEN - 1, 1));
        assert!(!overlaps(WINDOW_BASE + REGION_LEN, 4096));
        assert!(!overlaps(WINDOW_BASE - 4096, 4096));
        assert!(overlaps(0, u64::MAX));
    }

    #[test]
    fn slots_are_unique_and_reused() {
        let mut g = Guard::new();
        let a = g.slot(10).unwrap();
        let b = g.slot(11).unwrap();
        assert_ne!(a, b);
        assert_eq!(g.slot(10).unwrap(), a);
        g.thread_gone(10);
        assert_eq!(g.slot(12).unwrap(), a);
    }
}
