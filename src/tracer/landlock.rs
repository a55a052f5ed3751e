//! Landlock: the in-kernel layers under sbx's own checks, with no stop. Through the
//! `landlock` crate (the Landlock maintainers' binding, best-effort ABI handling).
//!
//! sbx puts itself, just before it starts the workload, in one Landlock domain that the
//! workload inherits:
//! - **scopes** (ABI 6): signals (`kill`, `tgkill`, `sigqueue`, `pidfd_send_signal`, SIGIO and
//!   SIGURG through an fd's owner) reach only processes of the domain, and, unless the
//!   profile allows an abstract unix socket, abstract unix sockets connect and send only to
//!   sockets made inside it;
//! - **the fence** (issue 40, `crate::fence`): file rights beneath the roots the profile's
//!   rules can reach (ABI 2 and up: ABI 1 refuses every rename across directories, which a
//!   profile may allow, so it gets no file fence) and, from ABI 4, TCP connect and bind to
//!   the ports the profile names.
//!
//! sbx enters the domain itself rather than the child alone: Landlock refuses a domain's
//! processes ptrace access to processes outside it or in a parent domain, and the race guard
//! hands the workload paths through `/proc/SBX/fd/N`, which the kernel walks with a ptrace
//! access check of sbx by the workload. In one shared domain that check passes. The price:
//! sbx's own file accesses during and after the run are fenced too, so the fence carries
//! sbx's needs (`/proc`, see `cli::enforce`), and sbx opens its output files before it enters.

use std::collections::BTreeSet;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};

use crate::fence::Fence;

/// What sbx asks of Landlock for one run.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Scope abstract unix sockets (the profile allows none).
    pub abstract_unix: bool,
    /// The fence, or `None` for the scopes alone.
    pub fence: Option<&'a Fence>,
    /// Set no_new_privs (needed without CAP_SYS_ADMIN).
    pub no_new_privs: bool,
}

/// Which in-kernel layers are in force under the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layer {
    Active {
        abi: i64,
        signal: bool,
        abstract_unix: bool,
        /// File rights fenced (`crate::fence::right` bits), 0: no file fence.
        fs: u64,
        /// TCP ports, `None`: not fenced.
        connect: Option<BTreeSet<u16>>,
        bind: Option<BTreeSet<u16>>,
        /// What is not fenced and why.
        unfenced: Vec<String>,
    },
    /// Not active, and why.
    Unavailable(String),
}

impl Layer {
    /// The file rights fenced in force (0: no file fence).
    pub fn fs_fenced(&self) -> u64 {
        match self {
            Layer::Active { fs, .. } => *fs,
            Layer::Unavailable(_) => 0,
        }
    }

    /// Is every part of the fence that `fence` asked for in force, and does it fence files
    /// at all (a profile reaching `/` for every file right fences none)?
    pub fn fences_all_of(&self, fence: &Fence) -> bool {
        match self {
            Layer::Active {
                fs, connect, bind, ..
            } => {
                fence.handled_fs != 0
                    && *fs & fence.handled_fs == fence.handled_fs
                    && (fence.connect.is_none() || connect.is_some())
                    && (fence.bind.is_none() || bind.is_some())
            }
            Layer::Unavailable(_) => false,
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Layer::Active {
                abi,
                signal,
                abstract_unix,
                fs,
                connect,
                bind,
                unfenced,
            } => {
                let mut what = Vec::new();
                if *signal {
                    what.push("signals");
                }
                if *abstract_unix {
                    what.push("abstract unix sockets");
                }
                if what.is_empty() {
                    write!(f, "Landlock ABI {abi} scopes nothing (ABI 6 needed)")?;
                } else {
                    write!(
                        f,
                        "Landlock ABI {abi} scopes {} to the run",
                        what.join(" and ")
                    )?;
                }
                if *fs != 0 {
                    write!(f, "; fence: files ({})", crate::fence::right::names(*fs))?;
                } else {
                    write!(f, "; no file fence")?;
                }
                let ports = |p: &Option<BTreeSet<u16>>| match p {
                    Some(s) => format!(
                        "ports [{}]",
                        s.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
                    ),
                    None => "unfenced".into(),
                };
                write!(
                    f,
                    ", tcp connect {}, tcp bind {}",
                    ports(connect),
                    ports(bind)
                )?;
                for u in unfenced {
                    write!(f, "; unfenced: {u}")?;
                }
                Ok(())
            }
            Layer::Unavailable(why) => write!(f, "no Landlock scoping ({why})"),
        }
    }
}

/// Does the kernel support what `f` asks of a ruleset? (A hard-requirement ruleset fails
/// where the kernel lacks the feature; nothing is created.)
fn supports(f: impl FnOnce(Ruleset) -> Result<Ruleset, RulesetError>) -> bool {
    f(Ruleset::default().set_compatibility(CompatLevel::HardRequirement)).is_ok()
}

/// The kernel's Landlock ABI version as far as sbx uses it (1 to 6), if Landlock is enabled:
/// the newest ABI whose feature the kernel accepts.
pub fn abi() -> Option<i64> {
    type Probe = fn(Ruleset) -> Result<Ruleset, RulesetError>;
    let probes: [(i64, Probe); 6] = [
        (6, |r| r.scope(Scope::Signal)),
        (5, |r| r.handle_access(AccessFs::IoctlDev)),
        (4, |r| r.handle_access(AccessNet::ConnectTcp)),
        (3, |r| r.handle_access(AccessFs::Truncate)),
        (2, |r| r.handle_access(AccessFs::Refer)),
        (1, |r| r.handle_access(AccessFs::Execute)),
    ];
    probes
        .into_iter()
        .find(|(_, p)| supports(p))
        .map(|(v, _)| v)
}

/// Put sbx (the calling thread, which must be the only one: the workload is forked from it)
/// in the domain `req` describes.
pub fn enter(req: &Request<'_>) -> Layer {
    let Some(abi) = abi() else {
        let why = match super::facilities::try_landlock() {
            Err(e) => super::facilities::landlock_refusal(e),
            Ok(v) => format!("Landlock ABI {v} lacks what sbx asks of it"),
        };
        return Layer::Unavailable(why);
    };
    match build_and_restrict(req, abi) {
        Ok(layer) => layer,
        Err(e) => Layer::Unavailable(e),
    }
}

fn build_and_restrict(req: &Request<'_>, abi: i64) -> Result<Layer, String> {
    let err = |e: RulesetError| e.to_string();
    let mut unfenced = Vec::new();
    let mut ruleset = Ruleset::default();
    let signal = abi >= 6;
    let abstract_unix = abi >= 6 && req.abstract_unix;
    if signal {
        ruleset = ruleset.scope(Scope::Signal).map_err(err)?;
    }
    if abstract_unix {
        ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(err)?;
    }
    let mut fs = 0u64;
    let mut connect = None;
    let mut bind = None;
    if let Some(fence) = req.fence {
        unfenced.extend(fence.unfenced.iter().cloned());
        if abi >= 2 {
            // Best effort: rights newer than the kernel's ABI (TRUNCATE before 3) drop out.
            let want = BitFlags::<AccessFs>::from_bits_truncate(fence.handled_fs)
                & AccessFs::from_all(ABI::from(i32::try_from(abi).unwrap_or(1)));
            if !want.is_empty() {
                ruleset = ruleset.handle_access(want).map_err(err)?;
                fs = want.bits();
            }
            if fence.handled_fs & !fs != 0 {
                unfenced.push(format!(
                    "{} (kernel Landlock ABI {abi})",
                    crate::fence::right::names(fence.handled_fs & !fs)
                ));
            }
        } else if fence.handled_fs != 0 {
            unfenced.push(format!(
                "files (kernel Landlock ABI {abi} refuses every rename across directories)"
            ));
        }
        if abi >= 4 {
            if fence.connect.is_some() {
                ruleset = ruleset.handle_access(AccessNet::ConnectTcp).map_err(err)?;
                connect = fence.connect.clone();
            }
            if fence.bind.is_some() {
                ruleset = ruleset.handle_access(AccessNet::BindTcp).map_err(err)?;
                bind = fence.bind.clone();
            }
        } else if fence.connect.is_some() || fence.bind.is_some() {
            unfenced.push(format!("tcp ports (kernel Landlock ABI {abi}, 4 needed)"));
        }
    }
    if !signal && fs == 0 && connect.is_none() && bind.is_none() {
        return Err(format!("kernel Landlock ABI {abi}, scoping needs 6"));
    }
    let mut created = ruleset.create().map_err(err)?;
    if let Some(fence) = req.fence {
        if fs != 0 {
            for (root, rights) in &fence.roots {
                // A file takes file rights only (directory rights beneath it mean nothing).
                let dir = std::fs::metadata(root).is_ok_and(|m| m.is_dir());
                let mask = if dir {
                    fs
                } else {
                    fs & crate::fence::right::FILE
                };
                let access = BitFlags::<AccessFs>::from_bits_truncate(rights & mask);
                if access.is_empty() {
                    continue;
                }
                created = created
                    .add_rule(PathBeneath::new(open_root(root)?, access))
                    .map_err(err)?;
            }
        }
        for (ports, what) in [
            (&connect, AccessNet::ConnectTcp),
            (&bind, AccessNet::BindTcp),
        ] {
            for &port in ports.iter().flatten() {
                created = created.add_rule(NetPort::new(port, what)).map_err(err)?;
            }
        }
    }
    let status = created
        .no_new_privs(req.no_new_privs)
        .restrict_self()
        .map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel enforced none of it".into());
    }
    Ok(Layer::Active {
        abi,
        signal,
        abstract_unix,
        fs,
        connect,
        bind,
        unfenced,
    })
}

/// Open a root (following symlinks, as the workload's accesses reach it); a root gone since
/// the fence was derived is replaced by its nearest existing ancestor (never narrower).
fn open_root(root: &str) -> Result<PathFd, String> {
    let mut p = std::path::Path::new(root);
    loop {
        match PathFd::new(p) {
            Ok(fd) => return Ok(fd),
            Err(e) => match p.parent() {
                Some(up) => p = up,
                None => return Err(format!("cannot open {root}: {e}")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes_only() -> Request<'static> {
        Request {
            abstract_unix: false,
            fence: None,
            no_new_privs: true,
        }
    }

    /// Run `f` in a forked child (Landlock domains cannot be left); its exit code.
    fn in_child(f: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the test binary may be multithreaded; the child only runs `f`, which makes
        // simple syscalls, then leaves with _exit without running the parent's destructors.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = f();
            // SAFETY: _exit never returns and runs no destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked; `status` is a live int.
        unsafe { libc::waitpid(pid, &raw mut status, 0) };
        assert!(libc::WIFEXITED(status), "status {status}");
        libc::WEXITSTATUS(status)
    }

    /// In a domain made by [`enter`], a signal to a process outside it fails with EPERM
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
        let code = in_child(|| match enter(&scopes_only()) {
            Layer::Active { .. } => {
                // SAFETY: fork takes no pointers.
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
        });
        let alive = outside.try_wait().expect("wait").is_none();
        let _ = outside.kill();
        let _ = outside.wait();
        assert_eq!(code, 0, "the domain did not refuse the signal");
        assert!(alive, "the outside process was signalled");
    }

    /// The fence refuses a read outside its roots and allows one beneath them; and a process
    /// of the same domain walks `/proc/PID/fd/N` of another (the race guard's handoff), while
    /// a nested domain's process may not walk its parent domain's (why sbx shares the domain).
    #[test]
    fn fence_refuses_outside_its_roots_and_keeps_the_proc_fd_handoff() {
        if abi().is_none_or(|a| a < 2) {
            eprintln!("skipped: no Landlock ABI 2");
            return;
        }
        let d = tempfile::tempdir().expect("tempdir");
        let inside = d.path().join("in");
        let outside = d.path().join("out");
        std::fs::create_dir(&inside).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(inside.join("f"), "x").unwrap();
        std::fs::write(outside.join("f"), "x").unwrap();
        let mut fence = Fence {
            handled_fs: crate::fence::right::READ_FILE | crate::fence::right::READ_DIR,
            ..Fence::default()
        };
        fence
            .roots
            .insert(inside.to_string_lossy().into_owned(), fence.handled_fs);
        fence.roots.insert("/proc".into(), fence.handled_fs);
        let req = Request {
            abstract_unix: false,
            fence: Some(&fence),
            no_new_privs: true,
        };
        let (i, o) = (inside.clone(), outside.clone());
        let code = in_child(move || {
            let held = std::fs::File::open(&i).expect("held dir");
            let raw = std::os::fd::AsRawFd::as_raw_fd(&held);
            if !matches!(enter(&req), Layer::Active { .. }) {
                return 2;
            }
            if std::fs::read(o.join("f")).map_err(|e| e.raw_os_error()) != Err(Some(libc::EACCES)) {
                return 3;
            }
            if std::fs::read(i.join("f")).is_err() {
                return 4;
            }
            // SAFETY: getpid takes nothing.
            let me = unsafe { libc::getpid() };
            let via = format!("/proc/{me}/fd/{raw}/f");
            // SAFETY: fork takes no pointers.
            let same = unsafe { libc::fork() };
            if same == 0 {
                let ok = std::fs::read(&via).is_ok();
                // SAFETY: _exit never returns.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let mut st = 0;
            // SAFETY: waits for the child just forked into `st`, a live int.
            unsafe { libc::waitpid(same, &raw mut st, 0) };
            if !libc::WIFEXITED(st) || libc::WEXITSTATUS(st) != 0 {
                return 5;
            }
            // SAFETY: as above.
            let nested = unsafe { libc::fork() };
            if nested == 0 {
                let _ = enter(&req);
                let refused = std::fs::read(&via).is_err();
                // SAFETY: _exit never returns.
                unsafe { libc::_exit(if refused { 0 } else { 1 }) };
            }
            // SAFETY: as above.
            unsafe { libc::waitpid(nested, &raw mut st, 0) };
            if !libc::WIFEXITED(st) || libc::WEXITSTATUS(st) != 0 {
                return 6;
            }
            0
        });
        assert_eq!(code, 0, "step {code} failed");
    }
}
