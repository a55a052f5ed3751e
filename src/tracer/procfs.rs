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
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        readlink(Path::new(&format!("/proc/{}/fd/{}", self.pid, fd)))
    }
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>> {
        readlink(Path::new(OsStr::from_bytes(path)))
    }
}

impl TraceeProc {
    /// `/proc/PID/fd/N`'s target (what an fd really refers to).
    pub fn fd_path_bytes(&self, fd: i32) -> Option<Vec<u8>> {
        readlink(Path::new(&format!("/proc/{}/fd/{}", self.pid, fd)))
    }
}

/// Whether the program at `exe` is set-user-ID or set-group-ID (true when it cannot be
/// looked at, so the caller re-reads the ids rather than assume).
pub fn is_setid(exe: &[u8]) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(OsStr::from_bytes(exe)).map_or(true, |m| m.permissions().mode() & 0o6000 != 0)
}

/// `/proc/PID/comm` without the newline.
pub fn comm(pid: i32) -> Vec<u8> {
    let mut c = std::fs::read(format!("/proc/{pid}/comm")).unwrap_or_default();
    if c.last() == Some(&b'\n') {
        c.pop();
    }
    c
}

/// `/proc/PID/exe`.
pub fn exe(pid: i32) -> Vec<u8> {
    readlink(Path::new(&format!("/proc/{pid}/exe"))).unwrap_or_default()
}

/// Real and effective ids from `/proc/PID/status` (`Uid:` and `Gid:` lines).
pub fn creds(pid: i32) -> Option<Creds> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_creds(&s)
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
pub fn socket_type(pid: i32, fd: i32) -> Option<i32> {
    socket_opt(pid, fd, libc::SO_TYPE)
}

/// The protocol of the tracee's socket `fd` (`SO_PROTOCOL`: for netlink, NETLINK_ROUTE...).
pub fn socket_protocol(pid: i32, fd: i32) -> Option<i32> {
    socket_opt(pid, fd, libc::SO_PROTOCOL)
}

/// A duplicate of the tracee's fd `fd` in sbx, by `pidfd_getfd` (Linux 5.6+; needs ptrace
/// access, which the tracer has).
fn tracee_fd(pid: i32, fd: i32) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = i32::try_from(pidfd).ok().filter(|&f| f >= 0)?;
    // SAFETY: `pidfd` is a fresh fd returned by the kernel that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: pidfd_getfd takes two fds and flags, no pointers.
    let sock = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) };
    let sock = i32::try_from(sock).ok().filter(|&f| f >= 0)?;
    // SAFETY: `sock` is a fresh fd (a duplicate of the tracee's) that nothing else owns.
    Some(unsafe { OwnedFd::from_raw_fd(sock) })
}

/// An integer `SOL_SOCKET` option of the tracee's socket `fd`.
fn socket_opt(pid: i32, fd: i32, opt: libc::c_int) -> Option<i32> {
    use std::os::fd::AsRawFd;
    let sock = tracee_fd(pid, fd)?;
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

/// The raw peer address (`getpeername`) of the tracee's connected socket `fd`.
pub fn socket_peer(pid: i32, fd: i32) -> Option<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let sock = tracee_fd(pid, fd)?;
    let mut buf = [0u8; 128];
    let mut len = libc::socklen_t::try_from(buf.len()).ok()?;
    // SAFETY: `buf` and `len` are live locals; the kernel writes at most `len` (128) bytes to
    // `buf` and sets `len` to the address's full length.
    let r = unsafe { libc::getpeername(sock.as_raw_fd(), buf.as_mut_ptr().cast(), &raw mut len) };
    let len = usize::try_from(len).ok()?.min(buf.len());
    (r == 0).then(|| buf[..len].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn reads_own_process() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(!exe(me).is_empty());
        assert!(creds(me).is_some());
    }
}
