//! What the environment lets sbx do, found by trying, not guessed from the uid.
//!
//! Containers differ from a developer's machine in ways that matter to a tracer: root without
//! `CAP_SYS_ADMIN` (a seccomp filter then needs `no_new_privs`), a runtime's seccomp profile
//! that refuses `pidfd_getfd`, `process_vm_readv` and `kcmp` without `CAP_SYS_PTRACE` (Docker's
//! and podman's default), Landlock refused or absent. [`probe`] tries each feature on sbx's own
//! process (no other process is touched) and says what answered; the commands decide from it
//! which mode to run in or which error to give.

use std::fmt;

/// How the kernel answered one try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Works,
    /// Refused with this errno (EPERM from a seccomp profile, ENOSYS from an old kernel...).
    Refused(i32),
}

impl Answer {
    pub fn works(self) -> bool {
        self == Answer::Works
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Works => f.write_str("yes"),
            Answer::Refused(e) => write!(f, "refused ({})", nix::errno::Errno::from_raw(*e)),
        }
    }
}

/// `CAP_SYS_ADMIN` (a seccomp filter without no_new_privs, Landlock without it).
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_SYS_PTRACE` (what a runtime's default seccomp profile asks for pidfd_getfd and the
/// memory calls).
pub const CAP_SYS_PTRACE: u32 = 19;

/// The facts of one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facilities {
    pub euid: u32,
    /// The effective capability set (`CapEff` of /proc/self/status).
    pub cap_eff: u64,
    /// `no_new_privs` is already set on sbx (a parent set it: a container runtime, setpriv).
    pub no_new_privs: bool,
    /// seccomp filters sbx itself already runs under (`Seccomp_filters`; a container's
    /// profile is one).
    pub seccomp_filters: u32,
    pub pidfd_getfd: Answer,
    pub process_vm_readv: Answer,
    pub kcmp: Answer,
    /// The Landlock ABI version, or how `landlock_create_ruleset` was refused (ENOSYS: not
    /// built; EOPNOTSUPP: built but disabled at boot; EPERM: refused by a seccomp profile).
    pub landlock: Result<i64, i32>,
}

impl Facilities {
    pub fn has_cap(&self, cap: u32) -> bool {
        self.cap_eff & (1u64 << cap) != 0
    }

    /// May sbx install its seccomp filter without setting `no_new_privs` on the workload?
    /// Only with `CAP_SYS_ADMIN`, whatever the uid (a container's root lacks it).
    pub fn filter_without_no_new_privs(&self) -> bool {
        self.has_cap(CAP_SYS_ADMIN) && !self.no_new_privs
    }

    /// The one-line error for a feature sbx cannot run without here, if any: exit 125.
    pub fn refusal(&self) -> Option<String> {
        match self.pidfd_getfd {
            Answer::Works => None,
            Answer::Refused(e) => Some(format!(
                "pidfd_getfd is refused here ({}{}); sbx needs it to tell a socket's type and to \
                 pin the fds a call acts on. In a container, add CAP_SYS_PTRACE, which the \
                 default Docker and podman seccomp profiles ask for this call (docker/podman run \
                 --cap-add SYS_PTRACE; GitHub `container: options: --cap-add SYS_PTRACE`; \
                 Kubernetes securityContext.capabilities.add: [\"SYS_PTRACE\"])",
                nix::errno::Errno::from_raw(e),
                if self.seccomp_filters > 0 {
                    ", by the seccomp profile sbx runs under"
                } else {
                    ""
                }
            )),
        }
    }

    /// The `-v` line.
    pub fn describe(&self) -> String {
        let landlock = match self.landlock {
            Ok(abi) => format!("ABI {abi}"),
            Err(e) if e == libc::ENOSYS => "not in this kernel".into(),
            Err(e) if e == libc::EOPNOTSUPP => "disabled at boot".into(),
            Err(e) => format!("refused ({})", nix::errno::Errno::from_raw(e)),
        };
        let mut s = format!(
            "sbx: environment: euid {}, CAP_SYS_ADMIN {}, CAP_SYS_PTRACE {}, no_new_privs {}, \
             {} seccomp filter(s) above sbx; pidfd_getfd {}, process_vm_readv {}{}, kcmp {}{}, \
             Landlock {landlock}",
            self.euid,
            yes_no(self.has_cap(CAP_SYS_ADMIN)),
            yes_no(self.has_cap(CAP_SYS_PTRACE)),
            yes_no(self.no_new_privs),
            self.seccomp_filters,
            self.pidfd_getfd,
            self.process_vm_readv,
            if self.process_vm_readv.works() {
                ""
            } else {
                " (memory read through /proc/PID/mem)"
            },
            self.kcmp,
            if self.kcmp.works() {
                ""
            } else {
                " (every CLONE_VM sharer counts as sharing: the race guard runs eagerly)"
            },
        );
        if !self.filter_without_no_new_privs() {
            s.push_str("; the workload runs with no_new_privs");
        }
        s
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// Parse the fields [`probe`] reads from `/proc/self/status`: (CapEff, NoNewPrivs,
/// Seccomp_filters).
pub fn parse_status(status: &str) -> (u64, bool, u32) {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    let cap_eff = field("CapEff:")
        .and_then(|v| u64::from_str_radix(v, 16).ok())
        .unwrap_or(0);
    let nnp = field("NoNewPrivs:").is_some_and(|v| v == "1");
    let filters = field("Seccomp_filters:")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| u32::from(field("Seccomp:").is_some_and(|v| v == "2")));
    (cap_eff, nnp, filters)
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Try `pidfd_getfd` on sbx's own process (a duplicate of the pidfd itself).
fn try_pidfd_getfd() -> Answer {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    let Ok(pidfd) = i32::try_from(pidfd) else {
        return Answer::Refused(libc::EINVAL);
    };
    if pidfd < 0 {
        return Answer::Refused(last_errno());
    }
    // SAFETY: a fresh fd from the kernel that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: pidfd_getfd takes two fds and flags, no pointers.
    let dup = unsafe {
        libc::syscall(
            libc::SYS_pidfd_getfd,
            pidfd.as_raw_fd(),
            pidfd.as_raw_fd(),
            0,
        )
    };
    match i32::try_from(dup) {
        Ok(fd) if fd >= 0 => {
            // SAFETY: a fresh duplicate that nothing else owns; dropped (closed) here.
            drop(unsafe { OwnedFd::from_raw_fd(fd) });
            Answer::Works
        }
        _ => Answer::Refused(last_errno()),
    }
}

/// Try `process_vm_readv` on a byte of sbx's own memory.
fn try_process_vm_readv() -> Answer {
    let src = [0x5au8; 8];
    let mut dst = [0u8; 8];
    let local = libc::iovec {
        iov_base: dst.as_mut_ptr().cast(),
        iov_len: dst.len(),
    };
    let remote = libc::iovec {
        iov_base: src.as_ptr().cast_mut().cast(),
        iov_len: src.len(),
    };
    // SAFETY: both iovecs describe live 8-byte arrays of this frame; the kernel writes at
    // most 8 bytes into `dst`.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n == 8 && dst == src {
        Answer::Works
    } else {
        Answer::Refused(last_errno())
    }
}

/// Try `kcmp(self, self, KCMP_VM)`.
fn try_kcmp() -> Answer {
    const KCMP_VM: libc::c_long = 1;
    // SAFETY: kcmp takes two pids, a type and two unused indexes, no pointers.
    let r = unsafe {
        let me = libc::getpid();
        libc::syscall(libc::SYS_kcmp, me, me, KCMP_VM, 0, 0)
    };
    if r == 0 {
        Answer::Works
    } else {
        Answer::Refused(last_errno())
    }
}

/// Why Landlock cannot be used here, in one phrase, from how the version query was refused.
pub fn landlock_refusal(errno: i32) -> String {
    match errno {
        libc::ENOSYS => "Landlock is not in this kernel".into(),
        libc::EOPNOTSUPP => "Landlock is built into this kernel but disabled at boot (lsm=)".into(),
        libc::EPERM => "Landlock is refused by the seccomp profile sbx runs under (a \
                        container's: allow landlock_create_ruleset, landlock_add_rule and \
                        landlock_restrict_self)"
            .into(),
        e => format!(
            "Landlock's version query failed ({})",
            nix::errno::Errno::from_raw(e)
        ),
    }
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
pub fn try_landlock() -> Result<i64, i32> {
    const VERSION: libc::c_ulong = 1;
    // SAFETY: with a NULL attribute, size 0 and the VERSION flag the kernel reads no memory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            VERSION,
        )
    };
    if r > 0 { Ok(r) } else { Err(last_errno()) }
}

/// Try everything once.
pub fn probe() -> Facilities {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let (cap_eff, no_new_privs, seccomp_filters) = parse_status(&status);
    Facilities {
        euid: nix::unistd::geteuid().as_raw(),
        cap_eff,
        no_new_privs,
        seccomp_filters,
        pidfd_getfd: try_pidfd_getfd(),
        process_vm_readv: try_process_vm_readv(),
        kcmp: try_kcmp(),
        landlock: try_landlock(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Facilities {
        Facilities {
            euid: 0,
            cap_eff: 0x0000_01ff_ffff_ffff,
            no_new_privs: false,
            seccomp_filters: 0,
            pidfd_getfd: Answer::Works,
            process_vm_readv: Answer::Works,
            kcmp: Answer::Works,
            landlock: Ok(7),
        }
    }

    #[test]
    fn status_fields_parse() {
        let s = "Name:\tsbx\nCapEff:\t00000000a80425fb\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n";
        assert_eq!(parse_status(s), (0xa80425fb, true, 3));
        // Older kernels: no Seccomp_filters line.
        assert_eq!(parse_status("CapEff:\t0\nSeccomp:\t2\n"), (0, false, 1));
        assert_eq!(parse_status(""), (0, false, 0));
    }

    /// Docker's default capability set (0xa80425fb) has neither CAP_SYS_ADMIN nor
    /// CAP_SYS_PTRACE: the filter then needs no_new_privs.
    #[test]
    fn a_containers_root_needs_no_new_privs() {
        let mut f = sample();
        assert!(f.filter_without_no_new_privs());
        f.cap_eff = 0xa80425fb;
        assert!(!f.has_cap(CAP_SYS_ADMIN) && !f.has_cap(CAP_SYS_PTRACE));
        assert!(!f.filter_without_no_new_privs());
        assert!(f.describe().contains("the workload runs with no_new_privs"));
        let mut g = sample();
        g.no_new_privs = true;
        assert!(!g.filter_without_no_new_privs());
    }

    #[test]
    fn a_refused_pidfd_getfd_is_an_error_naming_the_option() {
        let mut f = sample();
        assert_eq!(f.refusal(), None);
        f.pidfd_getfd = Answer::Refused(libc::EPERM);
        f.seccomp_filters = 1;
        let e = f.refusal().unwrap();
        assert!(e.contains("pidfd_getfd is refused here (EPERM"), "{e}");
        assert!(
            e.contains("--cap-add SYS_PTRACE") && e.contains("securityContext"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }

    #[test]
    fn describe_names_the_fallbacks() {
        let mut f = sample();
        f.process_vm_readv = Answer::Refused(libc::EPERM);
        f.kcmp = Answer::Refused(libc::EPERM);
        f.landlock = Err(libc::EOPNOTSUPP);
        let d = f.describe();
        assert!(d.contains("process_vm_readv refused (EPERM"), "{d}");
        assert!(d.contains("/proc/PID/mem") && d.contains("eagerly"), "{d}");
        assert!(d.contains("Landlock disabled at boot"), "{d}");
    }

    /// On the machine the tests run on: every probe answers without crashing, and sbx's
    /// own process reads itself.
    #[test]
    fn probing_this_process_works() {
        let f = probe();
        assert_eq!(f.euid, nix::unistd::geteuid().as_raw());
        assert!(f.describe().starts_with("sbx: environment: "));
    }
}
