//! Start the workload under the tracer (design.md section 2).
//!
//! The parent resolves the command on `PATH` first (so the workload makes exactly one execve,
//! the one the policy sees), builds every argument of the child's calls, then forks. The child
//! waits on a pipe until the parent has `PTRACE_SEIZE`d it, installs the seccomp programs
//! (without `no_new_privs` only with CAP_SYS_ADMIN, so setuid programs keep working for a
//! privileged root), and execs. An exec
//! failure travels back as an errno over a `CLOEXEC` pipe. sbx's own fds are all `CLOEXEC`, so
//! the workload inherits exactly the fds, environment and personality it would have without sbx.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::sys::ptrace::Options;
use nix::unistd::{ForkResult, Pid};

use super::{Error, ptrace};

/// The ptrace options of design.md section 2.
pub fn options() -> Options {
    Options::PTRACE_O_EXITKILL
        | Options::PTRACE_O_TRACESECCOMP
        | Options::PTRACE_O_TRACEFORK
        | Options::PTRACE_O_TRACEVFORK
        | Options::PTRACE_O_TRACECLONE
        | Options::PTRACE_O_TRACEEXEC
        | Options::PTRACE_O_TRACESYSGOOD
}

/// Find `cmd` like execvp would: as given if it contains a `/`, else on `PATH`.
pub fn resolve_command(cmd: &OsStr) -> Result<PathBuf, Error> {
    let name = cmd.to_string_lossy().into_owned();
    if cmd.as_bytes().contains(&b'/') {
        let p = PathBuf::from(cmd);
        return match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => Err(Error::NotExecutable {
                cmd: name,
                why: "is a directory",
            }),
            Ok(_) if !is_executable(&p) => Err(Error::NotExecutable {
                cmd: name,
                why: "permission denied",
            }),
            Ok(_) => Ok(p),
            Err(_) => Err(Error::CommandNotFound { cmd: name }),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    let mut found_not_exec = false;
    for dir in std::env::split_paths(&path) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let p = dir.join(cmd);
        if let Ok(m) = std::fs::metadata(&p) {
            if m.is_file() && is_executable(&p) {
                return Ok(p);
            }
            found_not_exec = true;
        }
    }
    if found_not_exec {
        Err(Error::NotExecutable {
            cmd: name,
            why: "permission denied",
        })
    } else {
        Err(Error::CommandNotFound { cmd: name })
    }
}

fn is_executable(p: &Path) -> bool {
    nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).is_ok()
}

/// A seccomp program ready for `seccomp(2)` (seccompiler's `sock_filter` has the kernel's
/// `struct sock_filter` layout: `#[repr(C)]` u16, u8, u8, u32).
pub type Program = seccompiler::BpfProgram;

/// The running child and the pipe its exec failure would come back on.
#[derive(Debug)]
pub struct Spawned {
    pub pid: i32,
    /// Read end of the exec-status pipe: EOF after a successful exec, else the [`Stage`] that
    /// failed and its errno (4 bytes each).
    pub status_pipe: OwnedFd,
}

/// The step of the child's setup that failed: sbx's own (the kernel refused a feature) or the
/// workload's exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Exec,
    NoNewPrivs,
    Capabilities,
    SeccompFilter,
    NoCore,
}

impl Stage {
    const ALL: [Stage; 5] = [
        Stage::Exec,
        Stage::NoNewPrivs,
        Stage::Capabilities,
        Stage::SeccompFilter,
        Stage::NoCore,
    ];
    fn code(self) -> u32 {
        match self {
            Stage::Exec => 0,
            Stage::NoNewPrivs => 1,
            Stage::Capabilities => 2,
            Stage::SeccompFilter => 3,
            Stage::NoCore => 4,
        }
    }
    fn from_code(c: u32) -> Stage {
        Stage::ALL
            .into_iter()
            .find(|s| s.code() == c)
            .unwrap_or(Stage::Exec)
    }
}

/// `CAP_NET_ADMIN`: network configuration (routes, addresses, firewall) through netlink and
/// ioctls on any socket.
pub const CAP_NET_ADMIN: u32 = 12;
/// `CAP_NET_RAW`: raw and packet sockets (which enforce refuses anyway), binding to a device,
/// IP options: nothing a profile can describe.
pub const CAP_NET_RAW: u32 = 13;

/// Fork the workload, seize it, and let it install `programs` and exec `path` with `argv`.
/// `drop_caps`: capabilities a root workload loses for good (bounding set, effective,
/// permitted, inheritable, ambient) before it execs; ignored for a non-root sbx, whose
/// workload has none (no_new_privs keeps file capabilities from granting any).
pub fn spawn(
    path: &Path,
    argv: &[OsString],
    programs: &[Program],
    drop_caps: &[u32],
) -> Result<Spawned, Error> {
    let c_path = cstring(path.as_os_str())?;
    let c_argv: Vec<CString> = argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?;
    let mut argv_ptrs: Vec<*const libc::c_char> = c_argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let fprogs: Vec<libc::sock_fprog> = programs
        .iter()
        .map(|p| {
            Ok(libc::sock_fprog {
                len: u16::try_from(p.len())
                    .map_err(|_| Error::Internal("seccomp program too long".into()))?,
                filter: p.as_ptr().cast::<libc::sock_filter>().cast_mut(),
            })
        })
        .collect::<Result<_, Error>>()?;
    let as_root = nix::unistd::geteuid().is_root();
    // Without CAP_SYS_ADMIN (a normal user, or a container's root) seccomp needs no_new_privs.
    let privileged = super::caps::may_skip_no_new_privs();

    let (go_r, go_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(Error::Setup)?;
    let (st_r, st_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(Error::Setup)?;

    // SAFETY: sbx is single-threaded when it spawns (the tracer runs on the main thread and
    // spawns before any other thread exists), so the child may run arbitrary code; it still
    // only makes raw syscalls on data prepared above and then execs or _exits.
    match unsafe { nix::unistd::fork() }.map_err(Error::Setup)? {
        ForkResult::Child => {
            drop(go_w);
            drop(st_r);
            child(
                go_r,
                st_w,
                &c_path,
                &argv_ptrs,
                &fprogs,
                (as_root, privileged),
                drop_caps,
            )
        }
        ForkResult::Parent { child } => {
            drop(go_r);
            drop(st_w);
            let pid = child.as_raw();
            if let Err(e) = ptrace::seize(pid, options()) {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid), nix::sys::signal::SIGKILL);
                return Err(e);
            }
            // Release the child: it installs the filters and execs under our eyes.
            nix::unistd::write(&go_w, &[1]).map_err(Error::Setup)?;
            drop(go_w);
            Ok(Spawned {
                pid,
                status_pipe: st_r,
            })
        }
    }
}

fn cstring(s: &OsStr) -> Result<CString, Error> {
    CString::new(s.as_bytes())
        .map_err(|_| Error::Internal(format!("argument {s:?} contains a NUL byte")))
}

/// The child side. Never returns.
fn child(
    go_r: OwnedFd,
    st_w: OwnedFd,
    path: &CString,
    argv: &[*const libc::c_char],
    fprogs: &[libc::sock_fprog],
    (as_root, privileged): (bool, bool),
    drop_caps: &[u32],
) -> ! {
    let fail_at = |stage: Stage, errno: i32, code: i32| -> ! {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&stage.code().to_ne_bytes());
        b[4..].copy_from_slice(&errno.to_ne_bytes());
        // SAFETY: `b` is a live 8-byte array; write reads at most 8 bytes from it (a pipe
        // write of at most PIPE_BUF bytes is atomic).
        unsafe { libc::write(st_w.as_raw_fd(), b.as_ptr().cast(), b.len()) };
        // SAFETY: _exit never returns and runs no destructors or atexit handlers of the parent.
        unsafe { libc::_exit(code) }
    };
    let fail = |errno: i32, code: i32| -> ! { fail_at(Stage::Exec, errno, code) };
    let mut byte = [0u8; 1];
    // SAFETY: `byte` is a live 1-byte buffer; read writes at most 1 byte into it.
    if unsafe { libc::read(go_r.as_raw_fd(), byte.as_mut_ptr().cast(), 1) } != 1 {
        fail(libc::EPIPE, 127);
    }
    // Rust ignores SIGPIPE in sbx; an ignored signal survives exec, so restore the default the
    // workload would have had without sbx.
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE; no handler pointer is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    // No core files (issue 39): a core holds the memory of the process that dumped, which a
    // process with fewer rights in the tree could read. 0, hard: only CAP_SYS_RESOURCE can
    // raise it, and enforce refuses that (`decide::core_limit`).
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `no_core` is a live rlimit the kernel only reads.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &no_core) } != 0 {
        fail_at(Stage::NoCore, errno(), 125);
    }
    if !privileged {
        // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) takes no pointers.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            fail_at(Stage::NoNewPrivs, errno(), 125);
        }
    }
    if as_root && !drop_caps.is_empty() && drop_capabilities(drop_caps).is_err() {
        fail_at(Stage::Capabilities, errno(), 125);
    }
    for prog in fprogs {
        // SAFETY: `prog` points to a live sock_fprog whose `filter` points to `len` valid
        // sock_filter instructions owned by the parent's copy of `programs` (still mapped in
        // the child); the kernel copies the program before returning.
        let r = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                prog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            fail_at(Stage::SeccompFilter, errno(), 125);
        }
    }
    // SAFETY: `path` is a NUL-terminated string and `argv` a NULL-terminated array of pointers
    // to NUL-terminated strings, all alive until execv replaces the image; `environ` is ours.
    unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
    let e = errno();
    fail(e, if e == libc::ENOENT { 127 } else { 126 })
}

/// Drop `caps` from the bounding set (so no exec gives them back, setuid root included), the
/// ambient set, and the effective, permitted and inheritable sets. Raw syscalls only: runs in
/// the forked child.
fn drop_capabilities(caps: &[u32]) -> Result<(), ()> {
    for &cap in caps {
        // SAFETY: prctl(PR_CAPBSET_DROP, cap) and prctl(PR_CAP_AMBIENT, LOWER, cap) take
        // integers, no pointers.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) } != 0 {
            return Err(());
        }
        // SAFETY: as above (fails harmlessly on kernels without ambient capabilities).
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
                libc::c_ulong::from(cap),
                0,
                0,
            )
        };
    }
    let (mut hdr, mut data) = super::caps::get().ok_or(())?;
    for &cap in caps {
        let (word, bit) = ((cap / 32) as usize, 1u32 << (cap % 32));
        if let Some(d) = data.get_mut(word) {
            d.effective &= !bit;
            d.permitted &= !bit;
            d.inheritable &= !bit;
        }
    }
    // SAFETY: `hdr` and `data` are live locals laid out as capability version 3 expects
    // (`caps::get`); the kernel reads the header and the two entries.
    if unsafe { libc::syscall(libc::SYS_capset, &raw mut hdr, data.as_ptr()) } != 0 {
        return Err(());
    }
    Ok(())
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Read the exec status: `None` after a successful exec, else the stage that failed and its
/// errno.
pub fn exec_failure(status_pipe: &OwnedFd) -> Option<(Stage, i32)> {
    let mut b = [0u8; 8];
    match nix::unistd::read(status_pipe, &mut b) {
        Ok(8) => {
            let stage = u32::from_ne_bytes(b[..4].try_into().ok()?);
            let errno = i32::from_ne_bytes(b[4..].try_into().ok()?);
            Some((Stage::from_code(stage), errno))
        }
        _ => None,
    }
}
