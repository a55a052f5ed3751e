//! [`ProcView`] and process identity from `/proc/PID`.
//!
//! The tracer reads `/proc` only at stops where the answer can have changed (exec, credential
//! syscalls) and caches it in the process table; path resolution reads cwd/root/fd links on
//! demand because they change with every chdir/dup.

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use crate::decode::ProcView;
use crate::event::Creds;

/// The `/proc` view of one thread.
#[derive(Debug, Clone, Copy)]
pub struct TraceeProc {
    pub pid: i32,
    pub tid: i32,
}

fn readlink(p: &Path) -> Option<Vec<u8>> {
    std::fs::read_link(p)
        .ok()
        .map(|t| t.into_os_string().into_vec())
}

impl ProcView for TraceeProc {
    fn pid(&self) -> i32 {
        self.pid
    }
    fn tid(&self) -> i32 {
        self.tid
    }
    fn cwd(&self) -> Option<Vec<u8>> {
        // Threads may have their own cwd (unshare(CLONE_FS)); ask the thread.
        readlink(Path::new(&format!(
            "/proc/{}/task/{}/cwd",
            self.pid, self.tid
        )))
        .or_else(|| readlink(Path::new(&format!("/proc/{}/cwd", self.pid))))
    }
    fn root(&self) -> Option<Vec<u8>> {
        readlink(Path::new(&format!(
            "/proc/{}/task/{}/root",
            self.pid, self.tid
        )))
        .or_else(|| readlink(Path::new(&format!("/proc/{}/root", self.pid))))
    }
    /// The calling thread's own fd table: a thread cloned without CLONE_FILES has one of
    /// its own, where `/proc/PID/fd` is the leader's.
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        readlink(Path::new(&format!(
            "/proc/{}/task/{}/fd/{}",
            self.pid, self.tid, fd
        )))
    }
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>> {
        readlink(Path::new(OsStr::from_bytes(path)))
    }
}

/// A thread's root directory (`/proc/PID/task/TID/root`) remembered between stops: path
/// resolution asks for it at every path argument, and reading a `/proc` root link is one of the
/// dearest lookups sbx makes. A root changes only through chroot, pivot_root (which moves the
/// root of every process in the namespace), setns and unshare/namespace clones: the tracer
/// empties every thread's cache whenever a syscall of the gated or spawn class, an unknown
/// number or a foreign ABI stops, at entry and again at exit (`tracer::Tracer::seccomp_stop`).
/// A sink may use it only if every such call stops with an exit stop or never runs (record;
/// enforce in kill/deny mode when the profile allows none of them).
#[derive(Debug, Default)]
pub struct RootCache(std::cell::OnceCell<Vec<u8>>);

impl RootCache {
    /// The cached root, or `view`'s root read now (and remembered if it could be read).
    pub fn get_or_read(&self, view: &TraceeProc) -> Option<Vec<u8>> {
        if let Some(r) = self.0.get() {
            return Some(r.clone());
        }
        let r = view.root()?;
        Some(self.0.get_or_init(|| r).clone())
    }

    /// A cache holding what `parent` holds: a new task starts with the root of the thread
    /// that created it.
    pub fn inherit(parent: &RootCache) -> RootCache {
        let c = RootCache::default();
        if let Some(r) = parent.0.get() {
            let _ = c.0.set(r.clone());
        }
        c
    }

    /// The root if it is cached (nothing is read).
    pub fn known(&self) -> Option<&[u8]> {
        self.0.get().map(Vec::as_slice)
    }

    /// Forget the root (it may have changed).
    pub fn clear(&mut self) {
        self.0.take();
    }
}

impl TraceeProc {
    /// `/proc/PID/task/TID/fd/N`'s target (what the thread's fd really refers to; see
    /// `fd_path`).
    pub fn fd_path_bytes(&self, fd: i32) -> Option<Vec<u8>> {
        readlink(Path::new(&format!(
            "/proc/{}/task/{}/fd/{}",
            self.pid, self.tid, fd
        )))
    }
}

/// A thread's fd directory, `/proc/PID/task/TID/fd`, held open (`O_PATH`) so that looking up
/// what one of its fds refers to is a `readlinkat` of the fd number alone, without walking
/// `/proc`, the pid, `task` and the tid again (a `find` asks once per directory it enters).
/// The directory stands for the task it was opened for, not its number: once that task is
/// gone every lookup fails (ENOENT), even if the number is reused.
#[derive(Debug)]
pub struct FdDir(std::os::fd::OwnedFd);

impl FdDir {
    pub fn open(pid: i32, tid: i32) -> Option<FdDir> {
        use nix::fcntl::OFlag;
        nix::fcntl::open(
            Path::new(&format!("/proc/{pid}/task/{tid}/fd")),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .ok()
        .map(FdDir)
    }

    /// What fd `fd` of the thread refers to (as [`TraceeProc::fd_path_bytes`]).
    pub fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        nix::fcntl::readlinkat(&self.0, Path::new(&fd.to_string()))
            .ok()
            .map(OsStringExt::into_vec)
    }
}

/// The mode of the file at `path` (following symlinks), if it can be looked at.
pub fn mode(path: &[u8]) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(OsStr::from_bytes(path))
        .ok()
        .map(|m| m.permissions().mode())
}

/// The start of a small `/proc` file: one `open`, one `read`, one `close` (`std::fs::read`
/// would add a `statx` and a second `read` for end of file). The files read this way are
/// `single_open` seq files, which hand out their whole text (up to `N` bytes) in the first read.
fn read_head<const N: usize>(path: &str) -> Option<([u8; N], usize)> {
    use std::io::Read;
    let mut buf = [0u8; N];
    let n = std::fs::File::open(path).ok()?.read(&mut buf).ok()?;
    Some((buf, n))
}

/// The tasks runnable on the machine now, the reader included: the numerator of the 4th
/// field of `/proc/loadavg` ("1/78").
pub fn runnable_tasks() -> Option<u32> {
    let (buf, n) = read_head::<128>("/proc/loadavg")?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    text.split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// Has the directory at `path` (followed: a `/proc` magic link such as
/// `/proc/PID/task/TID/cwd`) been removed? Reading a removed directory fails with ENOENT on
/// every filesystem (the kernel's `IS_DEADDIR`), where a live one gives at least `.` and
/// `..`; a link count cannot tell (overlayfs keeps one on a removed lower directory). glibc's
/// `readdir` takes that ENOENT for the end of the directory, so `getdents64` is called
/// directly. False when the directory cannot be opened.
pub fn dir_removed(path: &str) -> bool {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(dir) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
    else {
        return false;
    };
    let mut buf = [0u8; 512];
    // SAFETY: getdents64 writes at most `buf.len()` bytes into `buf`, a live array on this
    // stack, for the fd `dir` holds open during the call; it keeps no pointer afterwards.
    let n = unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            dir.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    n < 0 && nix::errno::Errno::last() == nix::errno::Errno::ENOENT
}

/// `/proc/PID/comm` without the newline.
pub fn comm(pid: i32) -> Vec<u8> {
    // TASK_COMM_LEN is 16: 15 bytes and the newline fit in 32.
    let Some((buf, n)) = read_head::<32>(&format!("/proc/{pid}/comm")) else {
        return Vec::new();
    };
    let mut c = buf[..n].to_vec();
    if c.last() == Some(&b'\n') {
        c.pop();
    }
    c
}

/// The head of `/proc/TID/status` (Name .. Gid lines and more), as text.
fn status_head(tid: i32) -> Option<String> {
    // Uid: and Gid: are the 9th and 10th lines (< 400 bytes even with a 64-byte Name).
    let (buf, n) = read_head::<1024>(&format!("/proc/{tid}/status"))?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// `Tgid:` and `PPid:` of `/proc/TID/status`.
pub fn status_ids(tid: i32) -> Option<(i32, i32)> {
    let s = status_head(tid)?;
    let field = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
    };
    Some((field("Tgid:")?, field("PPid:")?))
}

/// Whether thread `tid` belongs to the thread group of `pid`: `/proc/PID/task/TID` exists only
/// then (one `statx`, instead of reading `/proc/TID/status`).
pub fn in_thread_group(pid: i32, tid: i32) -> bool {
    std::fs::symlink_metadata(format!("/proc/{pid}/task/{tid}")).is_ok()
}

/// `/proc/PID/exe`.
pub fn exe(pid: i32) -> Vec<u8> {
    readlink(Path::new(&format!("/proc/{pid}/exe"))).unwrap_or_default()
}

/// A path argument of process `pid` made absolute and symlink-free as the process sees it
/// (relative to its cwd, inside its root), or `None` when it does not exist.
pub fn resolve_arg(pid: i32, arg: &[u8]) -> Option<Vec<u8>> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    if arg.is_empty() || arg.contains(&0) {
        return None;
    }
    let mut p = if arg.first() == Some(&b'/') {
        format!("/proc/{pid}/root").into_bytes()
    } else {
        format!("/proc/{pid}/cwd/").into_bytes()
    };
    p.extend_from_slice(arg);
    let real = std::fs::canonicalize(std::ffi::OsStr::from_bytes(&p)).ok()?;
    Some(real.into_os_string().into_vec())
}

/// Remove from the environment of process `pid`, which has just exec'd, every variable
/// `keep` refuses: its `NAME=value` string on the new stack is overwritten in place with
/// `_SBX=` (or `_=`) and zeros, so the value is gone and the name no longer defined. Returns
/// the names removed.
///
/// Race-free at the exec event: the new program has not run, and its fresh memory is shared
/// with no other task (exec ends the other threads, and a vfork parent or `CLONE_VM` sibling
/// keeps the old memory). `/proc/PID/mem` writes ignore page protections.
pub fn thin_environment(pid: i32, keep: &dyn Fn(&[u8]) -> bool) -> std::io::Result<Vec<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    let stat = std::fs::read(format!("/proc/{pid}/stat"))?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "unreadable /proc/PID/stat");
    let after = stat
        .iter()
        .rposition(|&b| b == b')')
        .map(|i| &stat[i + 1..])
        .ok_or_else(bad)?;
    let fields: Vec<&[u8]> = after
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty())
        .collect();
    // Field 3 (state) is index 0: env_start is field 50, env_end field 51 (proc(5)).
    let num = |i: usize| -> std::io::Result<u64> {
        std::str::from_utf8(fields.get(i).ok_or_else(bad)?)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let (start, end) = (num(47)?, num(48)?);
    if end <= start || end - start > 64 << 20 {
        return Err(bad());
    }
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/proc/{pid}/mem"))?;
    let mut env = vec![0u8; usize::try_from(end - start).map_err(|_| bad())?];
    mem.read_exact_at(&mut env, start)?;
    let mut removed = Vec::new();
    let mut at = 0usize;
    while at < env.len() {
        let len = env[at..]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(env.len() - at);
        let s = &env[at..at + len];
        if let Some(eq) = s.iter().position(|&b| b == b'=')
            && !keep(&s[..eq])
        {
            removed.push(s[..eq].to_vec());
            let mut blank = vec![0u8; len];
            let tag: &[u8] = if len >= 5 { b"_SBX=" } else { b"_=" };
            blank[..tag.len()].copy_from_slice(tag);
            mem.write_all_at(&blank, start + at as u64)?;
        }
        at += len + 1;
    }
    Ok(removed)
}

/// The argv of process `pid` as the kernel holds it (`/proc/PID/cmdline`).
pub fn cmdline(pid: i32) -> Vec<Vec<u8>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut out: Vec<Vec<u8>> = raw.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    if out.last().is_some_and(Vec::is_empty) {
        out.pop();
    }
    out
}

/// The program identity of process `pid` that just exec'd `exe`, the execve having named
/// `exec_file` ([`crate::identity::identity`]); `argv` as known, else read from the kernel.
pub fn program_identity(
    pid: i32,
    exe: &[u8],
    exec_file: Option<&[u8]>,
    argv: Option<&[Vec<u8>]>,
) -> Option<Vec<u8>> {
    let needs_argv =
        exec_file.is_none_or(|f| f == exe) && crate::identity::interpreter(exe).is_some();
    let owned;
    let argv = match argv {
        Some(a) if !a.is_empty() => a,
        _ if needs_argv => {
            owned = cmdline(pid);
            &owned
        }
        _ => &[],
    };
    crate::identity::identity(exe, exec_file, argv, &mut |a| resolve_arg(pid, a))
}

/// Real and effective ids from `/proc/PID/status` (`Uid:` and `Gid:` lines).
pub fn creds(pid: i32) -> Option<Creds> {
    parse_creds(&status_head(pid)?)
}

/// Parse the `Uid:`/`Gid:` lines of a `/proc/PID/status` text.
pub fn parse_creds(status: &str) -> Option<Creds> {
    let ids = |key: &str| -> Option<(u32, u32)> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let mut it = line[key.len()..]
            .split_whitespace()
            .map(|w| w.parse::<u32>());
        Some((it.next()?.ok()?, it.next()?.ok()?))
    };
    let (uid, euid) = ids("Uid:")?;
    let (gid, egid) = ids("Gid:")?;
    Some(Creds {
        uid,
        euid,
        gid,
        egid,
    })
}

/// The socket type (`SOCK_STREAM`, `SOCK_DGRAM`...) of the tracee's fd `fd`, by duplicating it
/// into sbx with `pidfd_getfd` (Linux 5.6+; needs ptrace access, which the tracer has).
pub fn socket_type(pid: i32, tid: i32, fd: i32) -> Option<i32> {
    socket_opt(pid, tid, fd, libc::SO_TYPE)
}

/// The protocol of the tracee's socket `fd` (`SO_PROTOCOL`: for netlink, NETLINK_ROUTE...).
pub fn socket_protocol(pid: i32, tid: i32, fd: i32) -> Option<i32> {
    socket_opt(pid, tid, fd, libc::SO_PROTOCOL)
}

/// `PIDFD_THREAD` (Linux 6.9): a pidfd for one thread, whose `pidfd_getfd` reads that
/// thread's fd table.
const PIDFD_THREAD: libc::c_long = libc::O_EXCL as libc::c_long;
/// `KCMP_FILES`: do two tasks share one fd table?
const KCMP_FILES: libc::c_long = 2;

/// A duplicate of fd `fd` of thread `tid` (of process `pid`) in sbx, by `pidfd_getfd` (Linux
/// 5.6+; needs ptrace access, which the tracer has). The fd is the thread's: a thread cloned
/// without CLONE_FILES has its own table. Before Linux 6.9 (no `PIDFD_THREAD`) a non-leader
/// thread is answered only when it shares the leader's table (`kcmp`); otherwise `None`.
pub fn tracee_fd(pid: i32, tid: i32, fd: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let mut pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
    if pidfd < 0 {
        // SAFETY: kcmp takes two pids, a type and two indexes (unused for KCMP_FILES).
        let shared =
            tid == pid || unsafe { libc::syscall(libc::SYS_kcmp, pid, tid, KCMP_FILES, 0, 0) } == 0;
        if !shared {
            return None;
        }
        // SAFETY: as above.
        pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    }
    let pidfd = i32::try_from(pidfd).ok().filter(|&f| f >= 0)?;
    // SAFETY: `pidfd` is a fresh fd returned by the kernel that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: pidfd_getfd takes two fds and flags, no pointers.
    let sock = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    let sock = i32::try_from(sock).ok().filter(|&f| f >= 0)?;
    // SAFETY: `sock` is a fresh fd (a duplicate of the tracee's) that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(sock) })
}

/// `KCMP_VM` (linux/kcmp.h: KCMP_FILE 0, KCMP_VM 1, KCMP_FILES 2).
const KCMP_VM: libc::c_long = 1;

fn kcmp_differ(a: i32, b: i32, kind: libc::c_long) -> bool {
    // SAFETY: kcmp takes two pids, a type and two indexes (unused for these types).
    let r = unsafe { libc::syscall(libc::SYS_kcmp, a, b, kind, 0, 0) };
    r > 0
}

/// Do processes `a` and `b` have separate address spaces? `false` when they share one (a
/// `clone(CLONE_VM)` child, a vfork child before its exec) and whenever kcmp cannot tell
/// (any doubt counts as shared).
pub fn separate_memory(a: i32, b: i32) -> bool {
    kcmp_differ(a, b, KCMP_VM)
}

/// Do processes `a` and `b` have separate fd tables? `false` when they share one
/// (`clone(CLONE_FILES)`) and whenever kcmp cannot tell.
pub fn separate_files(a: i32, b: i32) -> bool {
    kcmp_differ(a, b, KCMP_FILES)
}

/// Is fd `fd` of thread `tid` open read-only (`O_RDONLY` in the flags of its fdinfo)? `false`
/// when it cannot be told.
pub fn fd_read_only(pid: i32, tid: i32, fd: i32) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/fdinfo/{fd}")) else {
        return false;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|f| f & 3 == 0)
}

/// An integer `SOL_SOCKET` option of the tracee's socket `fd`.
fn socket_opt(pid: i32, tid: i32, fd: i32, opt: libc::c_int) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let sock = tracee_fd(pid, tid, fd)?;
    let mut ty: libc::c_int = 0;
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).ok()?;
    // SAFETY: `ty` and `len` are live locals; the kernel writes at most `len` (4) bytes to `ty`
    // and updates `len`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            (&raw mut ty).cast(),
            &raw mut len,
        )
    };
    (r == 0).then_some(ty)
}

/// The raw local address (`getsockname`) of the tracee's socket `fd`.
pub fn socket_name(pid: i32, tid: i32, fd: i32) -> Option<Vec<u8>> {
    socket_addr(pid, tid, fd, libc::getsockname)
}

/// The raw peer address (`getpeername`) of the tracee's connected socket `fd`.
pub fn socket_peer(pid: i32, tid: i32, fd: i32) -> Option<Vec<u8>> {
    socket_addr(pid, tid, fd, libc::getpeername)
}

/// The next message waiting on the tracee's inet socket `fd`, read without taking it
/// (`MSG_PEEK | MSG_DONTWAIT` on sbx's duplicate) with its source as the kernel reports it
/// (the connected peer when the call gives none): `(raw source address, bytes)`, at most
/// `max` of them. `None` for other families, or when nothing is waiting.
pub fn socket_peek(pid: i32, tid: i32, fd: i32, max: usize) -> Option<(Vec<u8>, Vec<u8>)> {
    use std::os::fd::AsRawFd;
    let sock = tracee_fd(pid, tid, fd)?;
    let mut domain: libc::c_int = 0;
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::c_int>()).ok()?;
    // SAFETY: `domain` and `len` are live locals of the sizes given.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&raw mut domain).cast(),
            &raw mut len,
        )
    };
    if r != 0 || !matches!(domain, libc::AF_INET | libc::AF_INET6) {
        return None;
    }
    let mut data = vec![0u8; max];
    let mut from = [0u8; 128];
    let mut from_len = libc::socklen_t::try_from(from.len()).ok()?;
    // SAFETY: `data` holds `max` bytes and `from` 128, with `from_len` saying so; the kernel
    // writes at most that much into each.
    let n = unsafe {
        libc::recvfrom(
            sock.as_raw_fd(),
            data.as_mut_ptr().cast(),
            data.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
            from.as_mut_ptr().cast(),
            &raw mut from_len,
        )
    };
    data.truncate(usize::try_from(n).ok()?);
    let from_len = usize::try_from(from_len).ok()?.min(from.len());
    let source = if from_len > 0 {
        from[..from_len].to_vec()
    } else {
        socket_addr(pid, tid, fd, libc::getpeername)?
    };
    Some((source, data))
}

/// An address of the tracee's socket `fd`, by `getsockname` or `getpeername` (`call`).
fn socket_addr(
    pid: i32,
    tid: i32,
    fd: i32,
    call: unsafe extern "C" fn(
        libc::c_int,
        *mut libc::sockaddr,
        *mut libc::socklen_t,
    ) -> libc::c_int,
) -> Option<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let sock = tracee_fd(pid, tid, fd)?;
    let mut buf = [0u8; 128];
    let mut len = libc::socklen_t::try_from(buf.len()).ok()?;
    // SAFETY: `call` is getsockname or getpeername; `buf` and `len` are live locals, and the
    // kernel writes at most `len` (128) bytes to `buf` and sets `len` to the full length.
    let r = unsafe { call(sock.as_raw_fd(), buf.as_mut_ptr().cast(), &raw mut len) };
    let len = usize::try_from(len).ok()?.min(buf.len());
    (r == 0).then(|| buf[..len].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A held fd directory answers as `/proc/PID/task/TID/fd/N` does, and only for the task it
    /// was opened for: once that thread is gone, every lookup fails.
    #[test]
    #[cfg_attr(
        target_arch = "aarch64",
        ignore = "the aarch64 unit tests run under qemu-user, whose /proc is the host's"
    )]
    fn held_fd_directory_answers_for_its_own_task_only() {
        let dir = std::env::temp_dir().join(format!("sbx-fddir-{}", std::process::id()));
        std::fs::write(&dir, b"x").unwrap();
        let f = std::fs::File::open(&dir).unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
        let pid = nix::unistd::getpid().as_raw();
        let tid = nix::unistd::gettid().as_raw();
        let held = FdDir::open(pid, tid).expect("own fd directory");
        let want = TraceeProc { pid, tid }.fd_path_bytes(fd);
        assert_eq!(want.as_deref(), Some(dir.as_os_str().as_bytes()));
        assert_eq!(held.fd_path(fd), want);
        assert_eq!(held.fd_path(999_999), None, "not open");
        // Another thread's directory, held past its end.
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
        });
        let other = rx.recv().unwrap();
        let held_other = FdDir::open(pid, other).expect("a live thread's fd directory");
        assert_eq!(held_other.fd_path(fd), want, "threads share the fd table");
        t.join().unwrap();
        // join returns when the thread has released its memory; its fd table and /proc entry
        // go a little later.
        let gone = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            held_other.fd_path(fd).is_none()
        });
        assert!(gone, "the thread is gone");
        drop(f);
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn parses_status_ids() {
        let s = "Name:\tsh\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n";
        assert_eq!(
            parse_creds(s),
            Some(Creds {
                uid: 1000,
                euid: 0,
                gid: 100,
                egid: 100
            })
        );
        assert_eq!(parse_creds("Name:\tsh\n"), None);
    }

    #[test]
    fn address_space_sharing_is_told_apart() {
        let me = i32::try_from(std::process::id()).unwrap();
        // Same stdin, other memory: KCMP_FILE (0) on fd 0 would call them equal.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        assert!(separate_memory(me, pid));
        assert!(!separate_memory(me, me));
        assert!(separate_files(me, pid));
        assert!(!separate_files(me, me));
        // A pid that is gone: cannot tell, so shared.
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!separate_memory(me, pid));
    }

    #[test]
    fn read_only_fds_are_told_apart() {
        let me = i32::try_from(std::process::id()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "x").unwrap();
        let ro = std::fs::File::open(&p).unwrap();
        let rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let wo = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        use std::os::fd::AsRawFd;
        assert!(fd_read_only(me, me, ro.as_raw_fd()));
        assert!(!fd_read_only(me, me, rw.as_raw_fd()));
        assert!(!fd_read_only(me, me, wo.as_raw_fd()));
        assert!(!fd_read_only(me, me, 9999));
    }

    #[test]
    fn reads_own_process() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(!exe(me).is_empty());
        assert!(creds(me).is_some());
        assert!(!comm(me).is_empty());
        assert!(!comm(me).ends_with(b"\n"));
        let ppid = i32::try_from(std::os::unix::process::parent_id()).unwrap();
        assert_eq!(status_ids(me), Some((me, ppid)));
        assert!(in_thread_group(me, me));
        assert!(!in_thread_group(me, ppid));
    }
}
