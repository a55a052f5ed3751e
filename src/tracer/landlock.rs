//! Landlock scoping (ABI 6, Linux 6.12): an in-kernel layer under sbx's own checks, with no
//! stop. sbx puts itself, just before it starts the workload, in a Landlock domain that
//! handles no file or network access and only scopes: **signals** (`LANDLOCK_SCOPE_SIGNAL`:
//! kill, tgkill, sigqueue, pidfd_send_signal and SIGIO/SIGURG through an fd's owner reach
//! only processes of the same domain) and, unless the profile allows an abstract unix socket,
//! **abstract unix sockets** (`LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET`: connect and send only
//! to sockets made inside the domain). The workload inherits the domain.
//!
//! sbx enters the domain itself rather than the child alone: Landlock also refuses a domain's
//! processes ptrace access to processes outside it, and the race guard hands the workload
//! paths through `/proc/SBX/fd/N`, which the kernel walks with a ptrace access check of
//! sbx. Sharing the domain keeps that working, lets the workload signal sbx (which forwards
//! what it gets), and costs sbx nothing: it signals no process outside the run and connects
//! to no abstract socket.

/// `landlock_create_ruleset` flag: return the ABI version.
const CREATE_RULESET_VERSION: libc::c_ulong = 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
const SCOPE_SIGNAL: u64 = 2;

/// `struct landlock_ruleset_attr` (ABI 6 layout).
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// Which in-kernel layer is active under the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    Scoped {
        abi: i64,
        signal: bool,
        abstract_unix: bool,
    },
    /// Not active, and why.
    Unavailable(String),
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layer::Scoped {
                abi,
                signal,
                abstract_unix,
            } => {
                let mut what = Vec::new();
                if *signal {
                    what.push("signals");
                }
                if *abstract_unix {
                    what.push("abstract unix sockets");
                }
                write!(
                    f,
                    "Landlock ABI {abi} scopes {} to the run",
                    what.join(" and ")
                )
            }
            Layer::Unavailable(why) => write!(f, "no Landlock scoping ({why})"),
        }
    }
}

/// The kernel's Landlock ABI version, if Landlock is enabled.
pub fn abi() -> Option<i64> {
    // SAFETY: with the VERSION flag the attribute pointer must be NULL and the size 0; no
    // memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v)
}

/// Put sbx (the calling thread, which must be the only one: the workload is forked from it)
/// in a domain scoping signals and, with `abstract_unix`, abstract unix sockets.
pub fn scope_self(abstract_unix: bool) -> Layer {
    let Some(abi) = abi() else {
        return Layer::Unavailable("Landlock is not enabled in this kernel".into());
    };
    if abi < 6 {
        return Layer::Unavailable(format!("kernel Landlock ABI {abi}, scoping needs 6"));
    }
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: SCOPE_SIGNAL
            | if abstract_unix {
                SCOPE_ABSTRACT_UNIX_SOCKET
            } else {
                0
            },
    };
    // SAFETY: `attr` is a live, initialized struct of the size passed; the kernel copies it.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0usize,
        )
    };
    if fd < 0 {
        return Layer::Unavailable(format!(
            "landlock_create_ruleset: {}",
            std::io::Error::last_os_error()
        ));
    }
    let Ok(fd) = i32::try_from(fd) else {
        return Layer::Unavailable("landlock_create_ruleset returned no fd".into());
    };
    // SAFETY: `fd` was just returned by the kernel and is owned here alone.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    if !nix::unistd::geteuid().is_root() {
        // Without CAP_SYS_ADMIN a domain needs no_new_privs; the workload gets it anyway.
        // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) takes no pointers.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Layer::Unavailable(format!(
                "no_new_privs: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    // SAFETY: landlock_restrict_self takes the ruleset fd and flags, no pointers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            0u32,
        )
    };
    if r != 0 {
        return Layer::Unavailable(format!(
            "landlock_restrict_self: {}",
            std::io::Error::last_os_error()
        ));
    }
    Layer::Scoped {
        abi,
        signal: true,
        abstract_unix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a domain made by [`scope_self`], a signal to a process outside it fails with EPERM
    /// in-kernel (no tracer involved), and one to a process inside it is delivered. Skipped
    /// where the kernel's Landlock ABI is below 6.
    #[test]
    fn scoped_domain_refuses_signals_to_outside_processes() {
        if abi().is_none_or(|a| a < 6) {
            eprintln!("skipped: no Landlock ABI 6");
            return;
        }
        let mut outside = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .expect("sleep");
        let victim = i32::try_from(outside.id()).expect("pid");
        // SAFETY: the child makes raw syscalls only (scope_self allocates nothing on success)
        // and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = match scope_self(false) {
                Layer::Scoped { .. } => {
                    // SAFETY: fork and kill take no pointers.
                    let inner = unsafe { libc::fork() };
                    if inner == 0 {
                        // SAFETY: pause takes nothing; _exit never returns.
                        unsafe {
                            libc::pause();
                            libc::_exit(0)
                        }
                    }
                    // SAFETY: kill takes a pid and a signal.
                    let out = unsafe { libc::kill(victim, libc::SIGTERM) };
                    let errno = std::io::Error::last_os_error().raw_os_error();
                    // SAFETY: as above.
                    let inside = unsafe { libc::kill(inner, libc::SIGKILL) };
                    if out == -1 && errno == Some(libc::EPERM) && inside == 0 {
                        0
                    } else {
                        1
                    }
                }
                Layer::Unavailable(_) => 2,
            };
            // SAFETY: _exit never returns and runs no destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked; `status` is a live int.
        unsafe { libc::waitpid(pid, &raw mut status, 0) };
        let alive = outside.try_wait().expect("wait").is_none();
        let _ = outside.kill();
        let _ = outside.wait();
        assert!(libc::WIFEXITED(status), "status {status}");
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "the domain did not refuse the signal"
        );
        assert!(alive, "the outside process was signalled");
    }
}
