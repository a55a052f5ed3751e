//! Observe the processes a call acts on (signals, pidfds, priorities, resource limits,
//! scheduling, memory policy, an fd's signal owner): which call aims at whom, and where each
//! target is, read from the tracer's tree and `/proc` at the stop. Part of enforce's observe
//! stage; `decide::outside_tree` refuses targets outside the tree.
//!
//! The filter stops these calls only when they can reach another process (a signal other
//! than 0, a pid other than 0 for "myself", `F_SETOWN`...): see `filter::process_target_rules`.

use super::decide::{ProcTarget, Whom};
use crate::decode::{Blob, BlobKind};
use crate::tracer::{SyscallStop, TreeView};

const F_SETOWN: u32 = 8;
const F_SETOWN_EX: u32 = 15;
/// `ioctl` requests that set an fd's signal owner (`f_setown`) from an `int *`.
pub const FIOSETOWN: u64 = 0x8901;
pub const SIOCSPGRP: u64 = 0x8902;
/// `pidfd_open` flag: a pidfd for one thread.
const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

/// What a call aims at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aim {
    Process(i32),
    Thread(i32),
    /// A process group; 0: the caller's.
    Group(i32),
    /// Every process the caller may reach.
    Everyone(&'static str),
    /// The process a pidfd (or a `/proc/PID` directory fd) of the caller stands for.
    Pidfd(i32),
}

/// The targets of one stop, and the copy of a memory argument naming one (the guard hands
/// the kernel that copy, so a sibling thread cannot change the target after the check).
#[derive(Debug, Default)]
pub struct Targets {
    pub procs: Vec<ProcTarget>,
    pub blob: Option<Blob>,
}

/// The signal or priority call `name` of this stop: whom it aims at, and where they are.
/// `sbx`: sbx's own pid.
pub fn observe(stop: &SyscallStop<'_>, name: &str, sbx: i32) -> Targets {
    let mut out = Targets::default();
    let (aims, blob) = aims(stop, name);
    out.blob = blob;
    for (call, aim) in aims {
        let whom = match aim {
            Aim::Process(p) => process(stop.tree, p, sbx),
            Aim::Thread(t) => process(stop.tree, t, sbx),
            // `kill(0, sig)` or `kill(-own group, sig)` where the caller's group holds
            // processes outside the tree (sbx shares the group of whoever started it: a CI
            // step's shell, a pipeline's other commands): the signal goes to the tree's
            // members only (`trap 'kill 0' EXIT` keeps working, and reaches nothing outside).
            Aim::Group(g) if name == "kill" && (g == 0 || g == own_group(stop.pid)) => {
                let own = own_group(stop.pid);
                match members(stop.tree, own, sbx) {
                    Ok((_, None)) => Whom::Tree,
                    Ok((inside, Some(_))) => Whom::TreeMembers(inside),
                    Err(w) => w,
                }
            }
            Aim::Group(g) => group(stop.tree, if g == 0 { own_group(stop.pid) } else { g }, sbx),
            Aim::Everyone(w) => Whom::Everyone(w.into()),
            Aim::Pidfd(fd) => pidfd(stop, fd, sbx),
        };
        out.procs.push(ProcTarget { call, whom });
    }
    out
}

/// The low 32 bits of an `unsigned int` argument, as the kernel reads it.
fn low(a: u64) -> u32 {
    u32::try_from(a & 0xffff_ffff).unwrap_or(0)
}

/// The low 32 bits of an `int` argument, as the kernel reads it.
fn int(a: u64) -> i32 {
    crate::decode::int_arg(a)
}

fn signal_name(sig: i32) -> String {
    crate::decode::flags::signal_name(sig)
}

#[allow(clippy::type_complexity)]
fn aims(stop: &SyscallStop<'_>, name: &str) -> (Vec<(String, Aim)>, Option<Blob>) {
    let a = &stop.args;
    let one = |call: String, aim: Aim| (vec![(call, aim)], None);
    let none = || (Vec::new(), None);
    match name {
        "kill" => {
            let (pid, sig) = (int(a[0]), int(a[1]));
            if sig == 0 {
                return none();
            }
            let aim = match pid {
                0 => Aim::Group(0),
                -1 => Aim::Everyone("every process the caller may signal"),
                p if p < 0 => Aim::Group(p.saturating_neg()),
                p => Aim::Process(p),
            };
            one(format!("kill({pid}, {})", signal_name(sig)), aim)
        }
        "tkill" if int(a[1]) != 0 => one(
            format!("tkill({}, {})", int(a[0]), signal_name(int(a[1]))),
            Aim::Thread(int(a[0])),
        ),
        "tgkill" if int(a[2]) != 0 => one(
            format!(
                "tgkill({}, {}, {})",
                int(a[0]),
                int(a[1]),
                signal_name(int(a[2]))
            ),
            Aim::Thread(int(a[1])),
        ),
        "rt_sigqueueinfo" => one(
            format!("rt_sigqueueinfo({}, {})", int(a[0]), signal_name(int(a[1]))),
            Aim::Process(int(a[0])),
        ),
        "rt_tgsigqueueinfo" => one(
            format!(
                "rt_tgsigqueueinfo({}, {}, {})",
                int(a[0]),
                int(a[1]),
                signal_name(int(a[2]))
            ),
            Aim::Thread(int(a[1])),
        ),
        "pidfd_send_signal" | "pidfd_getfd" | "process_madvise" => {
            one(format!("{name}(fd {})", int(a[0])), Aim::Pidfd(int(a[0])))
        }
        "pidfd_open" if int(a[0]) > 0 => {
            let aim = if low(a[1]) & PIDFD_THREAD != 0 {
                Aim::Thread(int(a[0]))
            } else {
                Aim::Process(int(a[0]))
            };
            one(format!("pidfd_open({})", int(a[0])), aim)
        }
        "process_vm_readv" | "process_vm_writev" => {
            one(format!("{name}({})", int(a[0])), Aim::Process(int(a[0])))
        }
        // ptrace(request, pid, ...): PTRACE_TRACEME (0) names no other process.
        "ptrace" if a[0] != 0 => one(
            format!("ptrace({}, {})", a[0], int(a[1])),
            Aim::Thread(int(a[1])),
        ),
        "prlimit64" | "migrate_pages" | "move_pages" if int(a[0]) != 0 => {
            one(format!("{name}({})", int(a[0])), Aim::Process(int(a[0])))
        }
        "sched_setaffinity" | "sched_setscheduler" | "sched_setparam" | "sched_setattr"
            if int(a[0]) != 0 =>
        {
            one(format!("{name}({})", int(a[0])), Aim::Thread(int(a[0])))
        }
        // setpriority(which, who, prio): PRIO_PROCESS 0, PRIO_PGRP 1, PRIO_USER 2.
        // ioprio_set(which, who, ioprio): IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3.
        "setpriority" | "ioprio_set" => {
            let (which, who) = (int(a[0]), int(a[1]));
            let base = i32::from(name == "ioprio_set");
            let call = format!("{name}({which}, {who})");
            match which - base {
                0 if who == 0 => none(),
                0 => one(call, Aim::Thread(who)),
                1 => one(call, Aim::Group(who)),
                2 => one(call, Aim::Everyone("every process of a user")),
                // The kernel answers EINVAL.
                _ => none(),
            }
        }
        "kcmp" => (
            vec![
                (format!("kcmp({}, ..)", int(a[0])), Aim::Process(int(a[0]))),
                (format!("kcmp(.., {})", int(a[1])), Aim::Process(int(a[1]))),
            ],
            None,
        ),
        "fcntl" => match low(a[1]) {
            F_SETOWN => {
                let arg = int(a[2]);
                let call = format!("fcntl({}, F_SETOWN, {arg})", int(a[0]));
                match arg {
                    0 => none(),
                    p if p < 0 => one(call, Aim::Group(p.saturating_neg())),
                    p => one(call, Aim::Process(p)),
                }
            }
            F_SETOWN_EX => {
                let Some(bytes) = crate::tracer::memory::read_bytes(stop.tid, a[2], 8) else {
                    return one(
                        format!("fcntl({}, F_SETOWN_EX, <unreadable>)", int(a[0])),
                        Aim::Everyone("an owner sbx could not read"),
                    );
                };
                let word =
                    |o: usize| i32::from_le_bytes(bytes[o..o + 4].try_into().unwrap_or([0; 4]));
                let (ty, pid) = (word(0), word(4));
                let blob = Blob {
                    arg: 2,
                    bytes,
                    kind: BlobKind::Plain { size_arg: None },
                };
                let call = format!("fcntl({}, F_SETOWN_EX, {{{ty}, {pid}}})", int(a[0]));
                // F_OWNER_TID 0, F_OWNER_PID 1, F_OWNER_PGRP 2; pid 0 clears the owner.
                let aim = match (ty, pid) {
                    (_, 0) => None,
                    (0, p) => Some(Aim::Thread(p)),
                    (1, p) => Some(Aim::Process(p)),
                    (2, p) => Some(Aim::Group(p)),
                    _ => None,
                };
                (aim.map(|aim| (call, aim)).into_iter().collect(), Some(blob))
            }
            _ => none(),
        },
        "ioctl" if matches!(a[1] & 0xffff_ffff, FIOSETOWN | SIOCSPGRP) => {
            let req = if a[1] & 0xffff_ffff == FIOSETOWN {
                "FIOSETOWN"
            } else {
                "SIOCSPGRP"
            };
            let Some(bytes) = crate::tracer::memory::read_bytes(stop.tid, a[2], 4) else {
                return one(
                    format!("ioctl({}, {req}, <unreadable>)", int(a[0])),
                    Aim::Everyone("an owner sbx could not read"),
                );
            };
            let pid = i32::from_le_bytes(bytes[..4].try_into().unwrap_or([0; 4]));
            let blob = Blob {
                arg: 2,
                bytes,
                kind: BlobKind::Plain { size_arg: None },
            };
            let call = format!("ioctl({}, {req}, {pid})", int(a[0]));
            let aim = match pid {
                0 => None,
                p if p < 0 => Some(Aim::Group(p.saturating_neg())),
                p => Some(Aim::Process(p)),
            };
            (aim.map(|aim| (call, aim)).into_iter().collect(), Some(blob))
        }
        _ => none(),
    }
}

/// `/proc/PID/stat` in brief: (comm, state, process group).
fn brief(pid: i32) -> Option<(String, u8, i32)> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let open = stat.iter().position(|&b| b == b'(')?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let comm = String::from_utf8_lossy(stat.get(open + 1..close)?).into_owned();
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut f = rest.split_ascii_whitespace();
    let state = f.next()?.bytes().next()?;
    let _ppid = f.next()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((comm, state, pgrp))
}

fn own_group(pid: i32) -> i32 {
    brief(pid).map_or(-1, |(_, _, g)| g)
}

/// Where process (or thread) `id` is.
fn process(tree: TreeView<'_>, id: i32, sbx: i32) -> Whom {
    if tree.has_process(id) || tree.process_of(id).is_some() {
        return Whom::Tree;
    }
    if id == sbx {
        return Whom::Outside(format!("pid {id} (sbx itself)"));
    }
    match brief(id) {
        // Gone (the kernel answers ESRCH), or a zombie (nothing left to act on).
        None => Whom::Tree,
        Some((_, b'Z', _)) => Whom::Tree,
        Some((comm, ..)) => Whom::Outside(format!("pid {id} ({comm})")),
    }
}

/// Where the members of process group `g` are: all in the tree (sbx itself counts, as the
/// workload usually shares its group and sbx forwards what it gets), or the first outsider.
fn group(tree: TreeView<'_>, g: i32, sbx: i32) -> Whom {
    match members(tree, g, sbx) {
        Ok((_, None)) => Whom::Tree,
        Ok((_, Some(outsider))) => Whom::Outside(outsider),
        Err(w) => w,
    }
}

/// The tree's processes in group `g` (sbx not included), and its first member outside the
/// tree, described.
fn members(tree: TreeView<'_>, g: i32, sbx: i32) -> Result<(Vec<i32>, Option<String>), Whom> {
    let unreadable = || Whom::Everyone("a process group sbx could not read".into());
    if g <= 0 {
        return Err(unreadable());
    }
    let dir = std::fs::read_dir("/proc").map_err(|_| unreadable())?;
    let mut inside = Vec::new();
    let mut outsider = None;
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Some((comm, state, pgrp)) = brief(pid) else {
            continue;
        };
        if pgrp != g || pid == sbx {
            continue;
        }
        if tree.has_process(pid) {
            inside.push(pid);
        } else if state != b'Z' && outsider.is_none() {
            outsider = Some(format!(
                "process group {g}, whose pid {pid} ({comm}) is not the tree's"
            ));
        }
    }
    Ok((inside, outsider))
}

/// Where the process of the caller's fd `fd` is: a pidfd's (`Pid:` in its fdinfo; -1 once
/// it exited) or a `/proc/PID` directory's. Any other fd names no process (the kernel
/// answers EBADF).
fn pidfd(stop: &SyscallStop<'_>, fd: i32, sbx: i32) -> Whom {
    let info = std::fs::read_to_string(format!("/proc/{}/task/{}/fdinfo/{fd}", stop.pid, stop.tid))
        .unwrap_or_default();
    if let Some(pid) = info
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))
        .and_then(|v| v.trim().parse::<i32>().ok())
    {
        return if pid <= 0 {
            Whom::Tree
        } else {
            process(stop.tree, pid, sbx)
        };
    }
    let link = std::fs::read_link(format!("/proc/{}/task/{}/fd/{fd}", stop.pid, stop.tid))
        .unwrap_or_default();
    match link
        .to_str()
        .and_then(|l| l.strip_prefix("/proc/"))
        .and_then(|p| p.parse::<i32>().ok())
    {
        Some(pid) => process(stop.tree, pid, sbx),
        None => Whom::Tree,
    }
}

/// `/proc/PID/REST` -> (PID, REST without its leading `/`); `None` for other paths, and for
/// `/proc/self`, `/proc/thread-self` (the caller's own).
fn proc_pid(path: &[u8]) -> Option<(i32, &[u8])> {
    let rest = path.strip_prefix(b"/proc/")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let pid = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
    match &rest[digits..] {
        [] => Some((pid, &[][..])),
        [b'/', tail @ ..] => Some((pid, tail)),
        _ => None,
    }
}

/// The path targets of a stop under `/proc/PID/` of a process outside the tree: the
/// workload's name for it or the file it leads to (a symlink to `/proc/SBX/environ`).
pub fn proc_files(
    stop: &SyscallStop<'_>,
    targets: &[crate::event::Target],
    sbx: i32,
) -> Vec<super::decide::ProcFile> {
    use crate::event::Object;
    let mut out = Vec::new();
    for t in targets {
        let Object::Path(p) = &t.object else {
            continue;
        };
        for path in [&p.abs[..], p.effective()] {
            let Some((pid, rest)) = proc_pid(path) else {
                continue;
            };
            if pid == stop.pid {
                continue;
            }
            let whose = if pid == sbx {
                "sbx itself".to_string()
            } else {
                match process(stop.tree, pid, sbx) {
                    Whom::Outside(w) | Whom::Everyone(w) => w,
                    Whom::Tree | Whom::TreeMembers(_) => continue,
                }
            };
            out.push(super::decide::ProcFile {
                object: crate::show::escape(path),
                rest: rest.to_vec(),
                whose,
                changes: changes(t.access),
            });
            break;
        }
    }
    out
}

/// Signals whose default action dumps core (signal(7)).
const CORE_SIGNALS: [i32; 10] = [
    libc::SIGQUIT,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGSYS,
];

const RLIMIT_CORE: u64 = 4;

/// A call that uses another process of the tree with that process's rights: a core-dumping
/// signal (its core holds its memory), a limit change (`RLIMIT_CORE` first), tracing it,
/// reading or writing its memory, taking its fds. `pids`: the tree's processes it reaches,
/// the caller's own left out. `enforce` refuses it when one holds wider rights than the
/// caller (`decide::wider_rights`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Privileged {
    pub call: String,
    /// What the call would do to them, for the violation line.
    pub what: &'static str,
    pub pids: Vec<i32>,
}

/// The privileged call of this stop, if it is one (see [`Privileged`]). Cheap for every
/// other call: only the number and the signal are looked at before anything is read.
pub fn privileged(stop: &SyscallStop<'_>, name: &str, sbx: i32) -> Option<Privileged> {
    let a = &stop.args;
    let core = |i: usize| CORE_SIGNALS.contains(&int(a[i]));
    let what = match name {
        "kill" | "tkill" | "rt_sigqueueinfo" | "pidfd_send_signal" if core(1) => {
            "send it a core-dumping signal"
        }
        "tgkill" | "rt_tgsigqueueinfo" if core(2) => "send it a core-dumping signal",
        "prlimit64" if a[2] != 0 => "change its resource limits",
        "ptrace" if a[0] != 0 => "trace it",
        "process_vm_readv" | "process_vm_writev" => "read or write its memory",
        "pidfd_getfd" => "take its open files",
        _ => return None,
    };
    let (aims, _) = aims(stop, name);
    let mut pids = Vec::new();
    let mut call = String::new();
    for (c, aim) in aims {
        call = c;
        match aim {
            Aim::Process(p) | Aim::Thread(p) => pids.extend(in_tree(stop.tree, p)),
            Aim::Group(g) => {
                let g = if g == 0 { own_group(stop.pid) } else { g };
                if let Ok((inside, _)) = members(stop.tree, g, sbx) {
                    pids.extend(inside);
                }
            }
            Aim::Pidfd(fd) => pids.extend(pidfd_pid(stop, fd).and_then(|p| in_tree(stop.tree, p))),
            // Refused as reaching outside the tree (`decide::outside_tree`).
            Aim::Everyone(_) => {}
        }
    }
    pids.retain(|&p| p != stop.pid);
    pids.sort_unstable();
    pids.dedup();
    (!pids.is_empty()).then_some(Privileged { call, what, pids })
}

/// The tree's process of process or thread `id`.
fn in_tree(tree: TreeView<'_>, id: i32) -> Option<i32> {
    if tree.has_process(id) {
        Some(id)
    } else {
        tree.process_of(id)
    }
}

/// The process a pidfd (or `/proc/PID` directory fd) of the caller stands for.
fn pidfd_pid(stop: &SyscallStop<'_>, fd: i32) -> Option<i32> {
    let info = std::fs::read_to_string(format!("/proc/{}/task/{}/fdinfo/{fd}", stop.pid, stop.tid))
        .unwrap_or_default();
    if let Some(pid) = info
        .lines()
        .find_map(|l| l.strip_prefix("Pid:"))
        .and_then(|v| v.trim().parse::<i32>().ok())
    {
        return (pid > 0).then_some(pid);
    }
    let link = std::fs::read_link(format!("/proc/{}/task/{}/fd/{fd}", stop.pid, stop.tid)).ok()?;
    link.to_str()?.strip_prefix("/proc/")?.parse().ok()
}

/// `setrlimit(RLIMIT_CORE, new)` or `prlimit64(pid, RLIMIT_CORE, new, old)` with a new
/// limit: the argument holding it.
pub fn core_limit_arg(name: &str, a: &[u64; 6]) -> Option<u8> {
    match name {
        "setrlimit" if a[0] & 0xffff_ffff == RLIMIT_CORE && a[1] != 0 => Some(1),
        "prlimit64" if a[1] & 0xffff_ffff == RLIMIT_CORE && a[2] != 0 => Some(2),
        _ => None,
    }
}

/// A call that sets `RLIMIT_CORE` above 0 (the workload starts with 0, hard): the call as a
/// violation names it, and the copy of the new limit the guard hands the kernel. An
/// unreadable limit counts as a raise (fail closed).
pub fn core_raise(stop: &SyscallStop<'_>, name: &str) -> (Option<String>, Option<Blob>) {
    let Some(arg) = core_limit_arg(name, &stop.args) else {
        return (None, None);
    };
    let at = stop.args[usize::from(arg)];
    let Some(bytes) = crate::tracer::memory::read_bytes(stop.tid, at, 16) else {
        return (Some(format!("{name}(RLIMIT_CORE, <unreadable>)")), None);
    };
    let word = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0xff; 8]));
    let (cur, max) = (word(0), word(8));
    let blob = Blob {
        arg,
        bytes,
        kind: BlobKind::Plain { size_arg: None },
    };
    let text = |v: u64| {
        if v == u64::MAX {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    let raise = (cur != 0 || max != 0)
        .then(|| format!("{name}(RLIMIT_CORE, {{{}, {}}})", text(cur), text(max)));
    (raise, Some(blob))
}

/// The path targets of a stop under `/proc/PID/` of another process of the tree: (its pid,
/// the file as [`proc_files`] describes one, `whose` left empty).
pub fn tree_proc_files(
    stop: &SyscallStop<'_>,
    targets: &[crate::event::Target],
) -> Vec<(i32, super::decide::ProcFile)> {
    use crate::event::Object;
    let mut out = Vec::new();
    for t in targets {
        let Object::Path(p) = &t.object else {
            continue;
        };
        for path in [&p.abs[..], p.effective()] {
            let Some((id, rest)) = proc_pid(path) else {
                continue;
            };
            let Some(pid) = in_tree(stop.tree, id).filter(|&pid| pid != stop.pid) else {
                continue;
            };
            out.push((
                pid,
                super::decide::ProcFile {
                    object: crate::show::escape(path),
                    rest: rest.to_vec(),
                    whose: String::new(),
                    changes: changes(t.access),
                },
            ));
            break;
        }
    }
    out
}

/// Does an access change the object (anything but reading, looking at it, or entering it)?
fn changes(access: crate::event::AccessSet) -> bool {
    access.iter().any(|a| {
        !matches!(
            a,
            crate::event::Access::Read | crate::event::Access::Stat | crate::event::Access::Chdir
        )
    })
}
