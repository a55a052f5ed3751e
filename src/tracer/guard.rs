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
//!   call overlaps the region. Opens of `/proc/*/mem` for writing (which ignores page
//!   protections) are refused whatever the profile says (`sink::decide::proc_mem`);
//!   process_vm_writev honours page protections, ptrace cannot attach to a process sbx
//!   already traces, and io_uring is gated.
//!
//! Path syscalls other than opens (unlink, rename, mkdir, chmod...) get one more defence
//! ([`Via::Held`]): sbx itself opens the checked directory (or file) with
//! `openat2(O_PATH, RESOLVE_NO_SYMLINKS)`, keeps the fd, and hands the kernel
//! `/proc/SBX/fd/N/name`. The kernel's walk reaches exactly what sbx opened through the magic
//! link, so a directory on the path swapped for a symlink after the check no longer redirects
//! the call, and no workload task can `dup2` over the fd: it lives in sbx's own fd table.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};

use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::{Error, ptrace, regs};
use crate::arch::Arch;
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
    mapped: crate::tid::TidSet,
    /// Processes that exec'd and have not been given the region yet: their new address space
    /// lacks it (no need to read their maps) unless a vfork or CLONE_VM child sharing it was
    /// given it meanwhile, which [`Self::prepare`] learns from the kernel's EEXIST.
    fresh: crate::tid::TidSet,
    /// `/proc/PID/mem` of each mapped process, opened on first use.
    mem: crate::tid::TidMap<File>,
    slots: crate::tid::TidMap<u64>,
    free: Vec<u64>,
    next: u64,
    /// The fds sbx opened for each thread's last [`Via::Held`] rewrite. The kernel may look
    /// them up (`/proc/SBX/fd/N`) until the thread's syscall is over, so they are let go only
    /// when that thread stops for its next guarded call or is gone (into [`Self::closing`],
    /// closed after the resume that follows): a number is never reused while a lookup
    /// through it can still happen.
    held: crate::tid::TidMap<Vec<Held>>,
    /// Held fds of calls that are over, closed once the stopped thread is resumed
    /// ([`Self::after_resume`]): their closing is not on its way.
    closing: Vec<Held>,
    /// sbx's own pid, as the workload sees it (same pid namespace: see [`Self::can_hold_for`]).
    me: u32,
    /// sbx's uid and gid when each of its real, effective and saved ids are the same, and it
    /// is dumpable: then a workload task with that euid/egid may follow `/proc/SBX/fd/N`.
    own_ids: Option<(u32, u32)>,
    /// RLIMIT_NOFILE's soft limit was raised after an EMFILE.
    raised_nofile: bool,
    /// Fds of a thread's current call taken into sbx ([`Self::pin`]), with their paths, until
    /// a [`Via::Pinned`] rewrite hands them to the kernel (then they are [`Self::held`]).
    pinned: crate::tid::TidMap<Vec<Held>>,
    /// Threads whose pending call got other argument registers (a re-pointed argument, the
    /// call replaced): the sink puts the originals back at the call's exit
    /// ([`Self::take_rewrote`], `regs::restore_args`).
    rewrote: crate::tid::TidSet,
    /// Threads whose current call's copy goes below their stack pointer instead of into the
    /// region ([`Self::use_stack`]), with that stack pointer.
    stack: crate::tid::TidMap<u64>,
    /// The last copy written on a thread's stack: (stack pointer, base, bytes), restored if
    /// the call restarts after a signal handler ran over it ([`Self::restore_stack_copy`]).
    stack_copy: crate::tid::TidMap<(u64, u64, Vec<u8>)>,
    /// The `mmap` syscall number, for an injection after a failed copy onto a stack.
    mmap_nr: u64,
}

/// Bytes left untouched below a thread's stack pointer before the copy's place: x86_64's red
/// zone (128) and more.
const STACK_MARGIN: u64 = 256;

/// An fd of the workload taken into sbx by [`Guard::pin`]: the object a call on that fd acts
/// on, which no sibling's `dup2` can change any more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// sbx's duplicate (`/proc/SBX/fd/RAW` names the object).
    pub raw: i32,
    /// The object's path as the kernel names it (`readlink /proc/self/fd/RAW`).
    pub path: Vec<u8>,
    /// Opened with O_PATH: fchmod, fchown, fsetxattr and fremovexattr answer EBADF.
    pub o_path: bool,
}

/// An fd sbx opened for a [`Via::Held`] rewrite, and the checked path it was opened on.
#[derive(Debug)]
struct Held {
    fd: OwnedFd,
    path: Vec<u8>,
}

/// `/proc/ME/fd/N` or `/proc/ME/fd/N/rest` → (N, `""` or `/rest`).
fn split_fd_path(abs: &[u8], me: u32) -> Option<(i32, &[u8])> {
    let prefix = format!("/proc/{me}/fd/");
    let after = abs.strip_prefix(prefix.as_bytes())?;
    let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
    let rest = &after[digits..];
    if digits == 0 || !(rest.is_empty() || rest.starts_with(b"/")) {
        return None;
    }
    let fd = std::str::from_utf8(&after[..digits]).ok()?.parse().ok()?;
    Some((fd, rest))
}

/// How a checked path argument is handed to the kernel by [`Guard::protect_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// This absolute path (symlink-free when sbx checked it), dirfd AT_FDCWD. The kernel walks
    /// it again: a directory on it replaced by a symlink since the check would be followed.
    Absolute(Vec<u8>),
    /// `/proc/SBX/fd/N` where N is an fd of the workload sbx took itself ([`Guard::pin`]):
    /// the kernel acts on exactly the object sbx decided on.
    Pinned(i32),
    /// `/proc/SBX/fd/N` followed by `tail`, where N is sbx's own
    /// `openat2(AT_FDCWD, open, {O_PATH|O_CLOEXEC[|O_DIRECTORY]}, RESOLVE_NO_SYMLINKS)`: the
    /// kernel starts from exactly the object sbx opened and looks up `tail` only (empty, `/`,
    /// `/name` or `/name/`). If the open fails (ELOOP: a symlink was swapped in), the call is
    /// refused with that errno.
    Held {
        open: Vec<u8>,
        directory: bool,
        tail: Vec<u8>,
    },
}

impl Via {
    /// The race-free form of a checked, absolute, symlink-resolved path `effective`.
    ///
    /// `follow_final`: whether the kernel follows a symlink in the last component for this
    /// call (chmod, truncate, stat... or any lookup with a trailing slash). Then sbx opens the
    /// whole path and the kernel acts on that object through the magic link, so a symlink
    /// swapped in as the last component is refused too (ELOOP). Otherwise (unlink, rmdir,
    /// rename, mkdir, mknod, symlink, link's new name, lchown...) the call acts on the last
    /// component itself: sbx opens its parent directory and the kernel looks up the name
    /// there. `trailing_slash`: the literal path ended with `/`, which changes what unlink,
    /// rmdir, rename and mkdir accept, so it is kept. `/` has no component to swap: it stays
    /// [`Via::Absolute`].
    pub fn plan(effective: &[u8], trailing_slash: bool, follow_final: bool) -> Via {
        let mut eff = effective;
        while eff.len() > 1 && eff.ends_with(b"/") {
            eff = &eff[..eff.len() - 1];
        }
        if eff == b"/" || !eff.starts_with(b"/") {
            let mut p = eff.to_vec();
            if trailing_slash && !p.ends_with(b"/") {
                p.push(b'/');
            }
            return Via::Absolute(p);
        }
        let slash: &[u8] = if trailing_slash { b"/" } else { b"" };
        if follow_final {
            return Via::Held {
                open: eff.to_vec(),
                directory: trailing_slash,
                tail: slash.to_vec(),
            };
        }
        let cut = eff.iter().rposition(|&b| b == b'/').unwrap_or(0);
        let parent = if cut == 0 { b"/" as &[u8] } else { &eff[..cut] };
        let mut tail = eff[cut..].to_vec();
        tail.extend_from_slice(slash);
        Via::Held {
            open: parent.to_vec(),
            directory: true,
            tail,
        }
    }
}

/// One path argument to re-point: the argument, its dirfd argument (set to AT_FDCWD), and how.
/// `arg` [`SOCKET_PATH`]: the path of a unix sockaddr (a plain blob or a msghdr's name) that
/// names exactly the `Held` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub arg: u8,
    pub dirfd: Option<u8>,
    pub via: Via,
}

/// How [`Guard::protect_call`] changes a call besides its path arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adjust {
    /// Another syscall number.
    pub nr: Option<u64>,
    /// Argument words to set (after the paths: they win).
    pub args: Vec<(u8, u64)>,
}

/// [`Rewrite::arg`] of a unix socket path.
pub const SOCKET_PATH: u8 = u8::MAX;

/// `sizeof(sun_path)`: a unix path and its NUL.
const SUN_PATH_LEN: usize = 108;

/// The AF_UNIX sockaddr `sa` with its path replaced by `new` when it names `old` exactly and
/// `new` fits.
fn unix_repointed(sa: &[u8], old: &[u8], new: &[u8]) -> Option<Vec<u8>> {
    let family = sa.get(0..2)?;
    if family != 1u16.to_le_bytes() || new.len() >= SUN_PATH_LEN {
        return None;
    }
    let path = &sa[2..];
    let path = &path[..path.iter().position(|&b| b == 0).unwrap_or(path.len())];
    if path != old {
        return None;
    }
    let mut out = family.to_vec();
    out.extend_from_slice(new);
    out.push(0);
    Some(out)
}

/// What [`Guard::protect_with`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protected {
    /// The arguments point into the guard region; let the call run.
    Done,
    /// A [`Via::Held`] open failed with this errno (ELOOP: a symlink on the checked path since
    /// the check; ENOENT, ENOTDIR, EACCES: what the kernel would have answered): refuse the
    /// call with it, never run it unguarded.
    Refuse(i32),
    /// The copy could not go below the stack pointer and the process had no region: the
    /// region was injected and the call restarted. Resume the tracee with PTRACE_CONT; it
    /// stops again on the same call, which is then decided afresh.
    Retry,
}

/// What a copy laid out by [`Guard::protect_call`] sets besides: the argument registers
/// (number, value), and another syscall number (a sendmmsg sent as a sendmsg).
type Laid = (Vec<(u8, u64)>, Option<u64>);

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
        let uid = nix::unistd::getresuid().ok();
        let gid = nix::unistd::getresgid().ok();
        // SAFETY: PR_GET_DUMPABLE takes no pointer arguments; it returns the flag.
        let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) } == 1;
        let own_ids = match (uid, gid) {
            (Some(u), Some(g))
                if dumpable
                    && u.real == u.effective
                    && u.real == u.saved
                    && g.real == g.effective
                    && g.real == g.saved =>
            {
                Some((u.real.as_raw(), g.real.as_raw()))
            }
            _ => None,
        };
        Guard {
            me: std::process::id(),
            own_ids,
            mmap_nr: Arch::native()
                .by_name("mmap")
                .map_or(u64::MAX, |d| u64::from(d.nr)),
            ..Guard::default()
        }
    }

    /// Can a workload task with these effective ids follow `/proc/SBX/fd/N`? The kernel lets
    /// it (ptrace read access, `PTRACE_MODE_READ_FSCREDS`) when its fsuid/fsgid (= euid/egid)
    /// are sbx's real, effective and saved ids and sbx is dumpable. Otherwise (sbx run as
    /// root, a workload that switched to another user) [`Via::Held`] would fail with EACCES.
    pub fn can_hold_for(&self, euid: u32, egid: u32) -> bool {
        self.own_ids == Some((euid, egid))
    }

    /// Take fd `fd` of thread `tid` (process `pid`) into sbx (`pidfd_getfd`), for its current
    /// call: decide on what it is now, and hand the kernel that object ([`Via::Pinned`]).
    /// `None` when the thread has no such fd open.
    pub fn pin(&mut self, pid: i32, tid: i32, fd: i32) -> Option<Pin> {
        let owned = super::procfs::tracee_fd(pid, tid, fd)?;
        let raw = owned.as_raw_fd();
        let path = std::fs::read_link(format!("/proc/self/fd/{raw}"))
            .ok()?
            .into_os_string()
            .into_encoded_bytes();
        let o_path = nix::fcntl::fcntl(&owned, nix::fcntl::FcntlArg::F_GETFL)
            .is_ok_and(|f| f & libc::O_PATH != 0);
        self.pinned.entry(tid).or_default().push(Held {
            fd: owned,
            path: path.clone(),
        });
        Some(Pin { raw, path, o_path })
    }

    /// Drop the fds pinned for `tid`'s call that no rewrite used (a refused call).
    pub fn unpin(&mut self, tid: i32) {
        if !self.pinned.is_empty() {
            self.pinned.remove(&tid);
        }
    }

    /// Does process `pid` have the region?
    pub fn has_region(&self, pid: i32) -> bool {
        self.mapped.contains(&pid)
    }

    /// For this stop of thread `tid`, in a process no other task can write (one thread, no
    /// other process sharing its address space, no shared or droppable mapping, no
    /// asynchronous I/O: the caller knows), put the copy below its stack pointer `sp` instead of
    /// into the region, which then need not be injected. The copy is written with
    /// `process_vm_writev`, which honours page protections: memory that is not writable there
    /// (an unmapped gap, a guard page, the bottom of a small stack) makes the write fail, and
    /// the region is used instead ([`Self::put_copy`]).
    pub fn use_stack(&mut self, tid: i32, sp: u64) {
        self.stack.insert(tid, sp);
    }

    /// `tid`'s copy goes into the region for this stop.
    pub fn no_stack(&mut self, tid: i32) {
        if !self.stack.is_empty() {
            self.stack.remove(&tid);
        }
    }

    /// A call of `tid` that restarts after a signal handler (same stack pointer `sp`, an
    /// argument pointing into the copy sbx put on its stack): the handler may have run over
    /// that copy; write it back, so the restarted call is decided on, and runs with, what sbx
    /// checked. (If the write fails, the call is decided on what is there.)
    pub fn restore_stack_copy(&mut self, pid: i32, tid: i32, sp: u64, args: &[u64; 6]) {
        let Some((at_sp, base, bytes)) = self.stack_copy.get(&tid) else {
            return;
        };
        let end = base + bytes.len() as u64;
        if *at_sp == sp && args.iter().any(|a| (*base..end).contains(a)) {
            let _ = write_remote(pid, *base, bytes);
        }
    }

    /// Write the copy `build(base)` makes for `tid`'s call (the bytes, laid out for address
    /// `base`, and what the caller needs besides): below the thread's stack pointer when
    /// [`Self::use_stack`] said so, else into its slot of the region. `None`: the stack write
    /// failed and the process had no region: the region was injected and the call restarted
    /// (resume the tracee with PTRACE_CONT; it stops again on the same call).
    fn put_copy<T>(
        &mut self,
        pid: i32,
        tid: i32,
        build: impl Fn(u64) -> Result<(Vec<u8>, T), Error>,
    ) -> Result<Option<(u64, T)>, Error> {
        if let Some(sp) = self.stack.remove(&tid) {
            let len = build(0)?.0.len() as u64;
            if len <= SLOT_SIZE
                && let Some(base) = sp.checked_sub(STACK_MARGIN + len).map(|b| b & !63)
            {
                let (image, extra) = build(base)?;
                if write_remote(pid, base, &image) {
                    self.stack_copy.insert(tid, (sp, base, image));
                    return Ok(Some((base, extra)));
                }
            }
            if self.prepare(pid, tid, self.mmap_nr)? == Prepared::Restarted {
                self.stack_copy.remove(&tid);
                return Ok(None);
            }
        }
        self.stack_copy.remove(&tid);
        let base = WINDOW_BASE + self.slot(tid)? * SLOT_SIZE;
        let (image, extra) = build(base)?;
        if image.len() as u64 > SLOT_SIZE {
            return Err(Error::Sink(
                "checked arguments larger than a guard slot".into(),
            ));
        }
        self.write(pid, tid, base, &image)?;
        Ok(Some((base, extra)))
    }

    /// Let go of the fds held for `tid`'s previous call (it is stopped again: that call is
    /// over); they are closed in [`Self::after_resume`].
    pub fn release(&mut self, tid: i32) {
        if !self.held.is_empty()
            && let Some(old) = self.held.remove(&tid)
        {
            self.closing.extend(old);
        }
    }

    /// The thread stopped last was resumed: close the fds of calls that are over. (A call
    /// over is never looked up through them again, so when is a matter of time only.)
    pub fn after_resume(&mut self) {
        self.closing.clear();
    }

    /// sbx's `openat2(AT_FDCWD, path, {O_PATH|O_CLOEXEC[|O_DIRECTORY]}, RESOLVE_NO_SYMLINKS)`.
    fn open_held(&mut self, path: &[u8], directory: bool) -> Result<OwnedFd, Errno> {
        let mut flags = OFlag::O_PATH | OFlag::O_CLOEXEC;
        if directory {
            flags |= OFlag::O_DIRECTORY;
        }
        let how = OpenHow::new()
            .flags(flags)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
        let path = std::ffi::OsStr::from_bytes(path);
        match nix::fcntl::openat2(nix::fcntl::AT_FDCWD, path, how) {
            // Every thread of the tree may hold up to two fds: make room once.
            Err(Errno::EMFILE) if !self.raised_nofile => {
                self.raised_nofile = true;
                raise_nofile();
                nix::fcntl::openat2(nix::fcntl::AT_FDCWD, path, how)
            }
            r => r,
        }
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
        // EEXIST: the region was mapped into this address space through another process
        // sharing it (a vfork or CLONE_VM child of this one got it first), after this one
        // exec'd and was marked fresh. Ours exactly: take it as mapped.
        let shared = rval == -i64::from(libc::EEXIST) && has_region(pid);
        if u64::try_from(rval).ok() != Some(WINDOW_BASE) && !shared {
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
        // No rewrite, so nothing to open and nothing to refuse.
        self.protect_with(pid, tid, decoded, &[]).map(drop)
    }

    /// [`Self::protect`], except that the path arguments in `rewrites` are replaced as their
    /// [`Via`] says, with the dirfd set to AT_FDCWD: the kernel then no longer depends on the
    /// dirfd (which another thread could dup2 over), on symlinks sbx already resolved, nor
    /// (with [`Via::Held`]) on the directories of the path staying what they were.
    pub fn protect_with(
        &mut self,
        pid: i32,
        tid: i32,
        decoded: &Decoded,
        rewrites: &[Rewrite],
    ) -> Result<Protected, Error> {
        self.protect_call(pid, tid, decoded, rewrites, &Adjust::default())
    }

    /// [`Self::protect_with`], and the call changed as `adjust` says (another number, other
    /// argument words): how a call on a pinned fd becomes its path form (`fchmod(fd, mode)`
    /// -> `fchmodat(AT_FDCWD, "/proc/SBX/fd/N", mode)`). A rewrite whose argument held no
    /// string (an fd, a NULL path) gets its path written anyway.
    pub fn protect_call(
        &mut self,
        pid: i32,
        tid: i32,
        decoded: &Decoded,
        rewrites: &[Rewrite],
        adjust: &Adjust,
    ) -> Result<Protected, Error> {
        const AT_FDCWD: i64 = -100;
        if decoded.strings.is_empty() && decoded.blobs.is_empty() && rewrites.is_empty() {
            self.release(tid);
            return Ok(Protected::Done);
        }
        // The fds of the thread's previous call are closed only once the new ones are open and
        // written: a call restarted after a signal may name them (see `held_path`).
        let mut held = Vec::new();
        let mut paths: Vec<(u8, Option<u8>, Vec<u8>)> = Vec::with_capacity(rewrites.len());
        // Unix socket paths: (the checked path, what the kernel gets instead).
        let mut sockets: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut pinned = self.pinned.remove(&tid).unwrap_or_default();
        for r in rewrites {
            let bytes = match &r.via {
                Via::Absolute(p) => p.clone(),
                Via::Pinned(raw) => {
                    let Some(i) = pinned.iter().position(|h| h.fd.as_raw_fd() == *raw) else {
                        return Err(Error::Internal(format!("fd {raw} was not pinned")));
                    };
                    held.push(pinned.swap_remove(i));
                    format!("/proc/{}/fd/{raw}", self.me).into_bytes()
                }
                Via::Held {
                    open,
                    directory,
                    tail,
                } => match self.open_held(open, *directory) {
                    Ok(fd) => {
                        let mut p = format!("/proc/{}/fd/{}", self.me, fd.as_raw_fd()).into_bytes();
                        p.extend_from_slice(tail);
                        held.push(Held {
                            fd,
                            path: open.clone(),
                        });
                        p
                    }
                    Err(e) => {
                        self.release(tid);
                        return Ok(Protected::Refuse(e as i32));
                    }
                },
            };
            match &r.via {
                Via::Held { open, .. } if r.arg == SOCKET_PATH => {
                    sockets.push((open.clone(), bytes));
                }
                _ => paths.push((r.arg, r.dirfd, bytes)),
            }
        }
        let repoint = |sa: &[u8]| -> Option<Vec<u8>> {
            sockets
                .iter()
                .find_map(|(old, new)| unix_repointed(sa, old, new))
        };
        let build = |base: u64| -> Result<(Vec<u8>, Laid), Error> {
            let mut image: Vec<u8> = Vec::with_capacity(256);
            let mut set: Vec<(u8, u64)> = Vec::new();
            // A sendmmsg sent as a sendmsg of its first message ([`BlobKind::MsgHdr`]).
            let mut sendmsg_nr = None;
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
                let bytes = match paths.iter().find(|(a, ..)| a == arg) {
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
            // Path arguments that held no string (fchmod's fd, utimensat's NULL path).
            for (arg, dirfd, new) in &paths {
                if decoded.strings.iter().any(|(a, _)| a == arg) {
                    continue;
                }
                if let Some(d) = dirfd {
                    set.push((*d, AT_FDCWD.cast_unsigned()));
                }
                let at = push(&mut image, new, true);
                set.push((*arg, at));
            }
            set.extend(adjust.args.iter().copied());
            for b in &decoded.blobs {
                match &b.kind {
                    BlobKind::Plain { size_arg } => {
                        let bytes = match size_arg {
                            Some(_) => repoint(&b.bytes).unwrap_or_else(|| b.bytes.clone()),
                            None => b.bytes.clone(),
                        };
                        let at = push(&mut image, &bytes, false);
                        set.push((b.arg, at));
                        if let Some(sz) = size_arg {
                            set.push((*sz, bytes.len() as u64));
                        }
                    }
                    BlobKind::MsgHdr {
                        name,
                        payload,
                        mmsg,
                        control,
                    } => {
                        let mut hdr = b.bytes.clone();
                        if hdr.len() >= 32 {
                            if name.is_empty() {
                                // No address was checked: none may reach the kernel.
                                hdr[0..12].fill(0);
                            } else {
                                let name = &repoint(name).unwrap_or_else(|| name.clone());
                                let name_at = push(&mut image, name, false);
                                hdr[0..8].copy_from_slice(&name_at.to_le_bytes());
                                hdr[8..12].copy_from_slice(
                                    &u32::try_from(name.len()).unwrap_or(0).to_le_bytes(),
                                );
                            }
                            if let Some(data) = payload {
                                // The checked bytes as one iovec (a DNS query).
                                let data_at = push(&mut image, data, false);
                                let mut iov = data_at.to_le_bytes().to_vec();
                                iov.extend_from_slice(&(data.len() as u64).to_le_bytes());
                                let iov_at = push(&mut image, &iov, false);
                                hdr[16..24].copy_from_slice(&iov_at.to_le_bytes());
                                hdr[24..32].copy_from_slice(&1u64.to_le_bytes());
                            }
                        }
                        if hdr.len() >= 48 {
                            if control.is_empty() {
                                // No control message was checked: none may reach the kernel.
                                hdr[32..48].fill(0);
                            } else {
                                // The checked control messages, from the copy.
                                let control_at = push(&mut image, control, false);
                                hdr[32..40].copy_from_slice(&control_at.to_le_bytes());
                                hdr[40..48].copy_from_slice(&(control.len() as u64).to_le_bytes());
                            }
                        }
                        let at = push(&mut image, &hdr, false);
                        set.push((b.arg, at));
                        if let Some(flags) = mmsg {
                            // sendmmsg(fd, vec, vlen, flags) -> sendmsg(fd, copy, flags).
                            set.push((2, *flags));
                            sendmsg_nr = Some(
                                Arch::native()
                                    .by_name("sendmsg")
                                    .map(|d| u64::from(d.nr))
                                    .ok_or_else(|| Error::Internal("no sendmsg syscall".into()))?,
                            );
                        }
                    }
                }
            }
            Ok((image, (set, sendmsg_nr)))
        };
        let Some((_, (set, sendmsg_nr))) = self.put_copy(pid, tid, build)? else {
            self.release(tid);
            return Ok(Protected::Retry);
        };
        match sendmsg_nr.or(adjust.nr) {
            Some(nr) => regs::set_syscall(tid, nr, &set)?,
            None => regs::set_args(tid, &set)?,
        }
        self.rewrote.insert(tid);
        if held.is_empty() {
            self.release(tid);
        } else {
            if let Some(old) = self.held.insert(tid, held) {
                self.closing.extend(old);
            }
        }
        Ok(Protected::Done)
    }

    /// A path the workload passed that names one of the fds sbx holds for this thread
    /// (`/proc/SBX/fd/N/rest`): the checked path that fd was opened on, followed by `rest`.
    /// A call restarted after a signal (it passes through seccomp again, with the arguments
    /// sbx wrote) is then decided and rewritten on the real path, not on a `/proc` path no
    /// profile allows. `None` for any other path.
    pub fn held_path(&self, tid: i32, abs: &[u8]) -> Option<Vec<u8>> {
        if !abs.starts_with(b"/proc/") || !self.held.contains_key(&tid) {
            return None;
        }
        let (fd, rest) = split_fd_path(abs, self.me)?;
        let h = self
            .held
            .get(&tid)?
            .iter()
            .find(|h| h.fd.as_raw_fd() == fd)?;
        let mut p = h.path.clone();
        if !rest.is_empty() {
            if p.ends_with(b"/") {
                p.pop();
            }
            p.extend_from_slice(rest);
        }
        Some(p)
    }

    /// Replace an allowed `open`/`openat`/`creat` by
    /// `openat2(AT_FDCWD, path, {flags, mode, resolve | RESOLVE_NO_SYMLINKS}, 24)` where `path` is the
    /// absolute, symlink-free path sbx resolved and checked: the kernel then opens exactly that
    /// file, or fails with ELOOP if a symlink was swapped in since (no exit stop needed).
    pub fn rewrite_open(
        &mut self,
        pid: i32,
        tid: i32,
        openat2_nr: u64,
        path: &[u8],
        (flags, mode, resolve): (u64, u64, u64),
    ) -> Result<Protected, Error> {
        const AT_FDCWD: i64 = -100;
        self.release(tid);
        let build = |base: u64| -> Result<(Vec<u8>, u64), Error> {
            let mut image = Vec::with_capacity(path.len() + 40);
            image.extend_from_slice(path);
            image.push(0);
            while !image.len().is_multiple_of(8) {
                image.push(0);
            }
            let how_at = base + image.len() as u64;
            for w in [flags, mode, resolve | crate::decode::RESOLVE_NO_SYMLINKS] {
                image.extend_from_slice(&w.to_le_bytes());
            }
            Ok((image, how_at))
        };
        let Some((base, how_at)) = self.put_copy(pid, tid, build)? else {
            return Ok(Protected::Retry);
        };
        regs::set_syscall(
            tid,
            openat2_nr,
            &[
                (0, AT_FDCWD.cast_unsigned()),
                (1, base),
                (2, how_at),
                (3, 24),
            ],
        )?;
        self.rewrote.insert(tid);
        Ok(Protected::Done)
    }

    /// Did the guard change the argument registers of `tid`'s pending call? Asked once per
    /// call: the answer is forgotten.
    pub fn take_rewrote(&mut self, tid: i32) -> bool {
        self.rewrote.remove(&tid)
    }

    /// A thread is gone: its slot is free again.
    pub fn thread_gone(&mut self, tid: i32) {
        self.release(tid);
        self.rewrote.remove(&tid);
        self.stack.remove(&tid);
        self.stack_copy.remove(&tid);
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

    /// A child process was forked (fork, vfork, or clone without CLONE_THREAD): it inherits a
    /// copy of the region (or shares it, with CLONE_VM) if its parent had one, so its first
    /// guarded call needs no read of its `/proc/PID/maps`. The parent is stopped at its fork
    /// event, so its own state cannot change before this runs; the child can: if its exec was
    /// already reported (it is `fresh`), its new address space has no region. A wrong "mapped"
    /// could only make the copy into the region fail, which aborts the run (fail closed).
    pub fn forked(&mut self, parent: i32, child: i32) {
        if self.mapped.contains(&parent) && !self.fresh.contains(&child) {
            self.mapped.insert(child);
        } else if !self.fresh.contains(&child) {
            // Not known to have it: leave the decision to `prepare` (maps read or injection).
            self.mapped.remove(&child);
        }
    }
}

/// Write `bytes` at `addr` in process `pid` with `process_vm_writev`, which (unlike
/// `/proc/PID/mem`) honours page protections and needs no open: true when all were written.
fn write_remote(pid: i32, addr: u64, bytes: &[u8]) -> bool {
    let local = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: one local iovec over `bytes`, live for the call and only read by the kernel;
    // the remote iovec names memory of another process, which the kernel checks.
    let n = unsafe { libc::process_vm_writev(pid, &raw const local, 1, &raw const remote, 1, 0) };
    usize::try_from(n).is_ok_and(|n| n == bytes.len())
}

/// Raise RLIMIT_NOFILE's soft limit to the hard limit (sbx only: the workload was spawned
/// with its own copy).
fn raise_nofile() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_paths_are_repointed_only_when_they_name_the_checked_path() {
        let sa = |p: &[u8]| {
            let mut b = 1u16.to_le_bytes().to_vec();
            b.extend_from_slice(p);
            b.push(0);
            b
        };
        assert_eq!(
            unix_repointed(&sa(b"/w/s.sock"), b"/w/s.sock", b"/proc/9/fd/4"),
            Some(sa(b"/proc/9/fd/4"))
        );
        assert_eq!(
            unix_repointed(&sa(b"/w/t.sock"), b"/w/s.sock", b"/proc/9/fd/4"),
            None
        );
        // Another family whose first bytes are not AF_UNIX (an open_how, AF_INET).
        let mut inet = 2u16.to_le_bytes().to_vec();
        inet.extend_from_slice(b"/w/s.sock\0");
        assert_eq!(unix_repointed(&inet, b"/w/s.sock", b"/proc/9/fd/4"), None);
        // Too long for sun_path: left as it is.
        assert_eq!(
            unix_repointed(&sa(b"/w/s.sock"), b"/w/s.sock", &[b'a'; 108]),
            None
        );
    }

    #[test]
    fn overlap_bounds() {
        assert!(overlaps(WINDOW_BASE, 1));
        assert!(overlaps(WINDOW_BASE - 4096, 8192));
        assert!(overlaps(WINDOW_BASE + REGION_LEN - 1, 1));
        assert!(!overlaps(WINDOW_BASE + REGION_LEN, 4096));
        assert!(!overlaps(WINDOW_BASE - 4096, 4096));
        assert!(overlaps(0, u64::MAX));
    }

    fn held(open: &str, directory: bool, tail: &str) -> Via {
        Via::Held {
            open: open.as_bytes().to_vec(),
            directory,
            tail: tail.as_bytes().to_vec(),
        }
    }

    #[test]
    fn plan_per_call_kind_and_trailing_slash() {
        // (resolved path, literal ends with `/`, the kernel follows the last component, plan)
        let cases: &[(&str, bool, bool, Via)] = &[
            // unlink, rename, mkdir...: the parent is opened, the name looked up in it.
            (
                "/w/real/secret.txt",
                false,
                false,
                held("/w/real", true, "/secret.txt"),
            ),
            // unlink("dir/") fails with EISDIR/ENOTDIR, rmdir("dir/") works: keep the slash.
            ("/w/real/sub", true, false, held("/w/real", true, "/sub/")),
            ("/top", false, false, held("/", true, "/top")),
            ("/top", true, false, held("/", true, "/top/")),
            // A stray trailing slash in the resolved path is not part of the name.
            ("/w/sub/", false, false, held("/w", true, "/sub")),
            // chmod, truncate, stat...: the whole path is opened, the kernel acts on it.
            ("/w/file", false, true, held("/w/file", false, "")),
            // chmod("dir/"): a directory, named with its slash.
            ("/w/dir", true, true, held("/w/dir", true, "/")),
            // Nothing to swap above `/`.
            ("/", false, false, Via::Absolute(b"/".to_vec())),
            ("/", true, false, Via::Absolute(b"/".to_vec())),
            ("/", false, true, Via::Absolute(b"/".to_vec())),
        ];
        for (eff, slash, follow, want) in cases {
            let got = Via::plan(eff.as_bytes(), *slash, *follow);
            assert_eq!(&got, want, "{eff} slash={slash} follow={follow}");
        }
    }

    #[test]
    fn fd_paths_of_sbx() {
        assert_eq!(
            split_fd_path(b"/proc/77/fd/12/secret.txt", 77),
            Some((12, b"/secret.txt" as &[u8]))
        );
        assert_eq!(
            split_fd_path(b"/proc/77/fd/12", 77),
            Some((12, b"" as &[u8]))
        );
        assert_eq!(
            split_fd_path(b"/proc/77/fd/12/", 77),
            Some((12, b"/" as &[u8]))
        );
        assert_eq!(split_fd_path(b"/proc/77/fd/12x", 77), None);
        assert_eq!(split_fd_path(b"/proc/77/fd/", 77), None);
        assert_eq!(split_fd_path(b"/proc/771/fd/12", 77), None);
        assert_eq!(split_fd_path(b"/proc/78/fd/12", 77), None);
        assert_eq!(split_fd_path(b"/w/proc/77/fd/12", 77), None);
    }

    #[test]
    fn held_paths_are_per_thread() {
        let mut g = Guard::new();
        let fd = match g.open_held(b"/", true) {
            Ok(fd) => fd,
            // qemu-user (the aarch64 unit-test run in CI) does not implement openat2.
            Err(Errno::ENOSYS) => return,
            Err(e) => panic!("openat2 of / failed: {e}"),
        };
        let n = fd.as_raw_fd();
        g.held.insert(
            5,
            vec![Held {
                fd,
                path: b"/w/real".to_vec(),
            }],
        );
        let me = g.me;
        let p = format!("/proc/{me}/fd/{n}/secret.txt");
        assert_eq!(
            g.held_path(5, p.as_bytes()),
            Some(b"/w/real/secret.txt".to_vec())
        );
        let whole = format!("/proc/{me}/fd/{n}");
        assert_eq!(g.held_path(5, whole.as_bytes()), Some(b"/w/real".to_vec()));
        assert_eq!(g.held_path(6, p.as_bytes()), None);
        g.thread_gone(5);
        assert_eq!(g.held_path(5, p.as_bytes()), None);
    }

    #[test]
    fn plan_leaves_relative_paths_alone() {
        // Never produced by the sink (it rewrites absolute paths only); kept as they are.
        assert_eq!(
            Via::plan(b"a/b", true, false),
            Via::Absolute(b"a/b/".to_vec())
        );
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
