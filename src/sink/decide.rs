//! The enforce decision, as a pure stage between observing a stop and acting on it
//! (docs/architecture.md, "Enforce: observe, decide, act").
//!
//! - **observe** (`EnforceSink::observe`): decode the stop; every read of workload memory and
//!   of `/proc` is done there, and the result is an [`Observed`].
//! - **decide** ([`decide`], this module): a function of the [`Observed`] event, the policy and
//!   a snapshot of the run's state ([`RunState`]). It never touches ptrace or the workload.
//!   Every refusal that is not a profile rule's ("structural": unknown numbers, untraced
//!   clones, device nodes, the guard region, socket kinds no rule can describe...) is a named
//!   entry of [`CHECKS`], in the order they are made; the profile's rules are its last entry.
//!   This table is the place to read the whole security policy of a stop.
//! - **act** (`EnforceSink::act`): ask, report, kill, answer an errno, or hand the call to the
//!   kernel through the race guard.
//!
//! The only outside questions decide asks go through [`RunState`]: whether a path only a
//! probe rule admits exists ([`RunState::lookup`]) and which objects the run created
//! ([`RunState::prov`]), so tests give both as tables.

use std::net::IpAddr;

use crate::arch::{Class, SyscallDef};
use crate::dns::DnsBook;
use crate::event::{Access, AccessSet, Object, SockAddr, Syscall, Target};
use crate::policy::{CompiledPolicy, Decision, DenyReason, Provenance, Scope};
use crate::profile::{Proto, Verb};
use crate::show::{escape, sockaddr};

use crate::policy::self_view as canonical_proc;

/// One syscall stop, observed: decoded, with every read of workload memory and `/proc` done.
#[derive(Debug, Clone)]
pub struct Observed {
    pub pid: i32,
    pub tid: i32,
    /// `None`: a number the table does not know, or a foreign ABI.
    pub def: Option<&'static SyscallDef>,
    pub args: [u64; 6],
    /// The call with its complete targets: DNS query names added, a restarted call's held
    /// fd mapped back to the checked path, creates settled (`Create` only for new names).
    pub syscall: Syscall,
    /// Something the kernel will read could not be read.
    pub unreadable: bool,
    /// `listen`: the socket's current name (an unbound inet socket has port 0).
    pub listen_name: Option<SockAddr>,
    /// sendmsg/sendmmsg: the `(level, type)` of each control message the kernel will read
    /// (from the copy the guard hands it).
    pub cmsgs: Vec<(u32, u32)>,
    /// The processes a signal, priority, limit, pidfd... call acts on, and where they are.
    pub procs: Vec<ProcTarget>,
    /// Path targets under `/proc/PID/` of a process outside the traced tree (sbx's own
    /// included).
    pub proc_files: Vec<ProcFile>,
    /// What the call would do to processes of the tree whose rights are wider than the
    /// caller's (`by` lists, and so the environment it may see).
    pub wider: Vec<Wider>,
    /// A call that sets `RLIMIT_CORE` above 0 (as a violation names it).
    pub core_raise: Option<String>,
}

/// A call that would use a process of the tree whose rights are wider than the caller's
/// ([`crate::sink::targets::Privileged`], or one of its `/proc/PID` files beyond its status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wider {
    /// The call or file as a violation names it.
    pub object: String,
    /// `pid 12 (npm <- bash)`.
    pub whose: String,
    /// What the call would do: `send it a core-dumping signal`.
    pub what: &'static str,
    pub verb: Verb,
    pub errno: i32,
}

/// A path under `/proc/PID/` (or `/proc/PID/task/TID/`) of a process outside the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcFile {
    /// The target as a violation names it.
    pub object: String,
    /// What follows `/proc/PID/`: `environ`, `fd/3`, `task/12/stat`...
    pub rest: Vec<u8>,
    /// `pid 1234 (sshd)`, or `sbx itself`.
    pub whose: String,
    /// Anything but reading and looking (writes, creates, deletes...).
    pub changes: bool,
}

/// The files of a process outside the tree a workload may read, as any process of the same
/// user can (what `ps` and `top` read): its status, never its memory, environment, fds,
/// directories or maps.
pub const PROC_FILES_READABLE: &[&str] = &["", "stat", "status", "statm", "cmdline", "comm"];

/// A process (or thread, or group) a call acts on: a signal's target, a priority's, a
/// resource limit's, a pidfd's, an fd's signal owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcTarget {
    /// The call as a violation names it: `kill(1234, SIGTERM)`.
    pub call: String,
    pub whom: Whom,
}

/// Where a call's target process is, as observed at the stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whom {
    /// In the traced tree, or nothing outside it: every member of a group is the tree's (sbx
    /// itself may be one, its signals are forwarded), a zombie, or the target is gone (the
    /// kernel answers ESRCH).
    Tree,
    /// A process outside the tree (its description: `pid 1234 (sshd)`).
    Outside(String),
    /// Every process the caller may reach: `kill(-1, ...)`, a user's processes.
    Everyone(String),
    /// `kill` of the caller's own process group, which holds processes outside the tree:
    /// these are the group's processes in the tree. sbx signals them itself, and the call
    /// returns 0 without reaching the others.
    TreeMembers(Vec<i32>),
}

impl Observed {
    fn class(&self) -> Option<Class> {
        self.def.map(|d| d.class)
    }
    fn name(&self) -> &'static str {
        self.def.map_or("", |d| d.name)
    }
}

/// What decide knows of the run besides the event: a snapshot taken for this stop.
pub struct RunState<'a> {
    pub policy: &'a CompiledPolicy,
    /// The `by` lists the calling process's exec chain holds.
    pub scope: Scope,
    /// What the run created (provenance), if anything.
    pub prov: Option<&'a dyn Provenance>,
    /// Host names the run resolved, by address.
    pub names: &'a DnsBook,
    /// The inet addresses the run's own TCP servers listen on (from their `listen`): a
    /// connect to one is the run talking to itself.
    pub own_listeners: &'a [(IpAddr, u16)],
    /// The race guard is on (kill, deny and ask modes).
    pub guard: bool,
    /// `--metadata`: stat and chdir are decided too.
    pub metadata: bool,
    /// Collect the allowed (access, object) pairs (`--unused`).
    pub track_allowed: bool,
    /// Whether a path exists (`Ok`) or the errno looking it up gives: asked only for a path
    /// that only a probe rule admits.
    pub lookup: &'a dyn Fn(&[u8]) -> Result<(), i32>,
}

impl std::fmt::Debug for RunState<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunState")
            .field("scope", &self.scope)
            .field("guard", &self.guard)
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

/// One reason the call must not run as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The [`CHECKS`] entry that refused it.
    pub check: &'static str,
    pub verb: Verb,
    /// What was refused, in the profile's words where it has them.
    pub object: String,
    pub reason: String,
    /// The errno deny mode answers (the first refusal's).
    pub errno: i32,
    /// A profile rule could allow it: ask mode asks about it and the diff proposes a rule.
    pub allowable: bool,
}

/// What decide says about one stop.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Decided {
    /// Empty when the call may run.
    pub refusals: Vec<Refusal>,
    /// Only a probe rule admits the path, and it is absent: the open must fail, with this
    /// errno from the lookup.
    pub must_fail: Option<i32>,
    /// The call acts on an fd that is not open: answered EBADF without running it.
    pub closed_fd: bool,
    /// Targets to add to the violation's event (a netlink socket refused for want of a rule
    /// is added as a send, so the diff proposes `send netlink PROTOCOL`).
    pub extra_targets: Vec<Target>,
    /// The allowed (access, object) pairs, with [`RunState::track_allowed`].
    pub allowed: Vec<(AccessSet, Object)>,
    /// Instead of running the call: send this signal to these processes, and return 0
    /// (a `kill` of the caller's group narrowed to the tree's members).
    pub signal_instead: Option<(i32, Vec<i32>)>,
}

impl Decided {
    /// Some refusal is one no profile rule can lift: never asked about, never proposed.
    pub fn unallowable(&self) -> bool {
        self.refusals.iter().any(|r| !r.allowable)
    }

    fn refuse(
        &mut self,
        check: &'static str,
        verb: Verb,
        object: String,
        reason: impl Into<String>,
        errno: i32,
        allowable: bool,
    ) {
        self.refusals.push(Refusal {
            check,
            verb,
            object,
            reason: reason.into(),
            errno,
            allowable,
        });
    }
}

/// A named check of the decision table.
#[derive(Debug)]
pub struct Check {
    pub name: &'static str,
    /// What it refuses and why, for the reader of the table (docs/security.md says more).
    pub what: &'static str,
    pub run: fn(&Observed, &RunState<'_>, &mut Decided),
}

/// The decision table, in order. The first refusal's errno is deny mode's answer.
pub const CHECKS: &[Check] = &[
    Check {
        name: "unknown-syscall",
        what: "a number the table does not know, or a foreign ABI (the filter refuses both in-kernel; reaching here means filter and table disagree)",
        run: unknown_syscall,
    },
    Check {
        name: "untraced-clone",
        what: "clone(CLONE_UNTRACED): a child the tracer would never see",
        run: untraced_clone,
    },
    Check {
        name: "namespace-clone",
        what: "clone with namespace flags, unless `syscall clone` or `syscall unshare` is allowed",
        run: namespace_clone,
    },
    Check {
        name: "gated-syscall",
        what: "a gated syscall (mount, ptrace, bpf...) without a `syscall NAME` rule",
        run: gated_syscall,
    },
    Check {
        name: "argument-rule",
        what: "the filter's argument rules (TIOCSTI/TIOCLINUX, PR_SET_SECCOMP, seccomp listeners), repeated where the refusal was traced",
        run: argument_rule,
    },
    Check {
        name: "guard-region",
        what: "a memory call over the race guard's read-only region",
        run: guard_region,
    },
    Check {
        name: "device-node",
        what: "mknod of a character or block device: the node opens the device, which no path rule covers",
        run: device_node_check,
    },
    Check {
        name: "memory-file-write",
        what: "a write through /proc/PID/mem, which ignores page protections (the guard region's too)",
        run: memory_file_write,
    },
    Check {
        name: "listen-autobind",
        what: "listen on an inet socket never bound: decided as a bind of the wildcard address, port 0",
        run: listen_autobind,
    },
    Check {
        name: "socket-kind",
        what: "socket() of a kind no rule can describe (packet, raw), or a netlink protocol without a rule",
        run: socket_kind,
    },
    Check {
        name: "outside-tree",
        what: "a signal, pidfd, priority, scheduling, resource limit, memory policy or signal owner aimed at a process outside the traced tree (groups: every member must be the tree's)",
        run: outside_tree,
    },
    Check {
        name: "outside-proc-files",
        what: "/proc/PID/... of a process outside the tree, sbx's own included (fd, fdinfo, mem, environ, cwd, root, maps...): only its stat, status, statm, cmdline and comm may be read",
        run: outside_proc_files,
    },
    Check {
        name: "wider-rights",
        what: "a core-dumping signal, a resource limit change, ptrace, process_vm_readv/writev, pidfd_getfd, or a /proc/PID file beyond its status, aimed at a process of the tree whose rights (`by` lists, environment) are wider than the caller's",
        run: wider_rights,
    },
    Check {
        name: "core-limit",
        what: "setrlimit or prlimit64 raising RLIMIT_CORE: the workload starts with 0 (hard), so no core file holds a process's memory",
        run: core_limit,
    },
    Check {
        name: "routing-cmsg",
        what: "a sendmsg control message that re-routes the datagram (IP_RETOPTS, IPv6 routing headers, IPV6_NEXTHOP)",
        run: routing_cmsg,
    },
    Check {
        name: "unreadable-argument",
        what: "an argument the kernel will read could not be read: fail closed",
        run: unreadable_argument,
    },
    Check {
        name: "closed-fd",
        what: "a call on an fd that is not open: answered EBADF without running it (a sibling's dup2 could fill it)",
        run: closed_fd,
    },
    Check {
        name: "policy",
        what: "the profile's rules, for every target of a checked call",
        run: policy_targets,
    },
];

/// Decide one observed stop.
pub fn decide(ev: &Observed, st: &RunState<'_>) -> Decided {
    let mut d = Decided::default();
    for c in CHECKS {
        (c.run)(ev, st, &mut d);
    }
    d
}

/// Why a right held by other programs is refused.
pub const SCOPED_REASON: &str = "a rule allows it only to the programs of its `by` list, and this process's exec chain runs others";

fn checked(ev: &Observed) -> bool {
    matches!(ev.class(), Some(Class::Checked | Class::Metadata))
}

fn unknown_syscall(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if ev.def.is_none() {
        d.refuse(
            "unknown-syscall",
            Verb::Syscall,
            ev.syscall.name.clone(),
            "unknown syscall",
            libc::ENOSYS,
            false,
        );
    }
}

fn untraced_clone(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    // clone reaches the tracer only with CLONE_UNTRACED or namespace flags.
    if ev.class() == Some(Class::Spawn) && ev.args[0] & crate::filter::CLONE_UNTRACED != 0 {
        d.refuse(
            "untraced-clone",
            Verb::Syscall,
            "clone(CLONE_UNTRACED)".into(),
            "an untraced child would escape the sandbox",
            libc::EPERM,
            true,
        );
    }
}

fn namespace_clone(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    let flags = ev.args[0];
    if ev.class() == Some(Class::Spawn)
        && flags & crate::filter::CLONE_UNTRACED == 0
        && flags & crate::filter::CLONE_NAMESPACES != 0
        && !st.policy.syscall_allowed("unshare")
        && !st.policy.syscall_allowed("clone")
    {
        d.refuse(
            "namespace-clone",
            Verb::Syscall,
            "clone(namespace flags)".into(),
            "no rule allows syscall clone (or unshare)",
            libc::EPERM,
            true,
        );
    }
}

fn gated_syscall(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    let name = ev.name();
    if ev.class() == Some(Class::Gated) && !st.policy.syscall_allowed(name) {
        d.refuse(
            "gated-syscall",
            Verb::Syscall,
            name.to_string(),
            format!("no rule allows syscall {name}"),
            libc::EPERM,
            true,
        );
    }
}

fn argument_rule(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    let name = ev.name();
    // A gated call is tested only when allowed (the gated check refused it otherwise). A
    // free call stops only on the filter's argument rules: the same test here. Deny and ask
    // modes trace what kill mode refuses in-kernel.
    let applies = match ev.class() {
        Some(Class::Gated) => st.policy.syscall_allowed(name),
        Some(Class::Free) => true,
        _ => false,
    };
    if !applies {
        return;
    }
    if let Some((what, why, allowable)) =
        crate::filter::refused_by_args(name, &ev.args, |n| st.policy.syscall_allowed(n))
    {
        d.refuse(
            "argument-rule",
            Verb::Syscall,
            what,
            why,
            libc::EPERM,
            allowable,
        );
    }
}

fn guard_region(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if ev.class() == Some(Class::Memory) && touches_guard(ev.name(), &ev.args) {
        d.refuse(
            "guard-region",
            Verb::Syscall,
            format!("{} over sbx's guard region", ev.syscall.name),
            "the race defence's memory must stay read-only and mapped",
            libc::EPERM,
            false,
        );
    }
}

fn device_node_check(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if !checked(ev) {
        return;
    }
    if let Some(kind) = device_node(ev.name(), &ev.args) {
        d.refuse(
            "device-node",
            Verb::Syscall,
            format!("{}({kind} device node)", ev.syscall.name),
            "a device node opens the device itself, which no path rule covers: never allowed under enforce",
            libc::EPERM,
            false,
        );
    }
}

fn memory_file_write(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    // The race guard's region is read-only to the workload, but not to writes through a
    // memory file: no profile rule may allow one while the guard is on.
    if !checked(ev) || !st.guard {
        return;
    }
    for t in &ev.syscall.targets {
        if let Object::Path(p) = &t.object
            && t.access.contains(Access::Write)
            && (proc_mem(&p.abs) || proc_mem(p.effective()))
        {
            d.refuse(
                "memory-file-write",
                Verb::Write,
                escape(p.effective()),
                "writes to process memory ignore page protections, sbx's race-guard region's too: never allowed under enforce",
                libc::EACCES,
                false,
            );
        }
    }
}

fn listen_autobind(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    if !checked(ev) || ev.name() != "listen" {
        return;
    }
    if let Some((verb, object, reason)) = ev
        .listen_name
        .as_ref()
        .and_then(|name| autobind_refusal(st.policy, name))
    {
        d.refuse("listen-autobind", verb, object, reason, libc::EPERM, true);
    }
}

/// `listen` on an inet socket that was never bound (its name has port 0): the kernel binds
/// it to every address on a random port, which no `bind` checked. Decided as a bind of the
/// wildcard address, port 0 (`bind tcp *:*` or `bind tcp 0.0.0.0:0` allows it). A bound
/// socket's address was decided at its bind.
fn autobind_refusal(policy: &CompiledPolicy, name: &SockAddr) -> Option<(Verb, String, String)> {
    let wildcard = match name {
        SockAddr::Inet { port: 0, .. } => SockAddr::Inet {
            addr: [0; 4],
            port: 0,
        },
        SockAddr::Inet6 { port: 0, .. } => SockAddr::Inet6 {
            addr: [0; 16],
            port: 0,
            scope_id: 0,
        },
        _ => return None,
    };
    match policy.decide_net_named(Verb::Bind, Some(Proto::Tcp), &wildcard, &[]) {
        Decision::Allow | Decision::AllowIfAbsent => None,
        Decision::Deny { verb, reason } => Some((
            verb,
            net_text(Some(Proto::Tcp), &wildcard),
            format!(
                "{} (listen on a socket never bound: the kernel binds every address, a random port)",
                reason_text(verb, &reason)
            ),
        )),
    }
}

fn socket_kind(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    // socketpair is free, and stops only for another family than unix (the filter).
    if ev.name() == "socketpair" && crate::decode::int_arg(ev.args[0]) != libc::AF_UNIX {
        d.refuse(
            "socket-kind",
            Verb::Syscall,
            format!("socketpair(domain {})", crate::decode::int_arg(ev.args[0])),
            "only unix socket pairs are created under enforce",
            libc::EACCES,
            false,
        );
        return;
    }
    if !checked(ev) {
        return;
    }
    if let Some((what, why, allowable)) = socket_refusal(st.policy, ev.name(), &ev.args) {
        if allowable {
            let protocol = u16::try_from(crate::decode::int_arg(ev.args[2])).ok();
            d.extra_targets.push(Target {
                access: AccessSet::of(Access::Send),
                object: Object::Socket(SockAddr::Netlink {
                    protocol,
                    port_id: 0,
                    groups: 0,
                }),
            });
        }
        d.refuse(
            "socket-kind",
            Verb::Syscall,
            what,
            why,
            libc::EACCES,
            allowable,
        );
    }
}

/// `socket(domain, type, protocol)` is created only when the profile's rules can describe
/// what the kernel will make of it: an **allowlist**, decided on the (domain, type, protocol)
/// the kernel creates, never a list of known bad kinds.
///
/// | domain | type | protocol | why |
/// |---|---|---|---|
/// | unix | stream, dgram, seqpacket | 0 | `connect`/`send`/`bind unix PATH` rules; abstract names by `unix @NAME` |
/// | inet, inet6 | stream | 0, IPPROTO_TCP | `tcp` rules (0 is TCP for a stream socket) |
/// | inet, inet6 | dgram | 0, IPPROTO_UDP | `udp` rules (0 is UDP for a datagram socket) |
/// | netlink | raw, dgram | one the profile has a `connect`, `bind` or `send` rule for | its writes are not stopped |
///
/// Everything else is refused and no rule can allow it: packet sockets (`AF_PACKET`, and
/// `AF_INET` with `SOCK_PACKET`, which the kernel turns into one), raw inet sockets, SCTP
/// (which connects through `setsockopt(SCTP_SOCKOPT_CONNECTX)`, never a `connect`), MPTCP,
/// UDP-Lite, ICMP "ping" sockets, and every other family (vsock, bluetooth, alg, xdp, can,
/// tipc, rds...). `(what, why, allowable)`.
fn socket_refusal(
    policy: &CompiledPolicy,
    name: &str,
    args: &[u64; 6],
) -> Option<(String, String, bool)> {
    if name != "socket" {
        return None;
    }
    const SOCK_TYPE_MASK: i32 = 0xf;
    const SOCK_PACKET: i32 = 10;
    let (domain, ty, protocol) = (
        crate::decode::int_arg(args[0]),
        crate::decode::int_arg(args[1]) & SOCK_TYPE_MASK,
        crate::decode::int_arg(args[2]),
    );
    let never = |what: String, why: &str| {
        Some((
            what,
            format!("{why}: no rule can describe it, never allowed under enforce"),
            false,
        ))
    };
    match domain {
        libc::AF_UNIX
            if matches!(
                ty,
                libc::SOCK_STREAM | libc::SOCK_DGRAM | libc::SOCK_SEQPACKET
            ) && protocol == 0 =>
        {
            None
        }
        libc::AF_INET | libc::AF_INET6 => {
            let family = if domain == libc::AF_INET {
                "AF_INET"
            } else {
                "AF_INET6"
            };
            match (ty, protocol) {
                (libc::SOCK_STREAM, 0 | libc::IPPROTO_TCP) => None,
                (libc::SOCK_DGRAM, 0 | libc::IPPROTO_UDP) => None,
                (libc::SOCK_RAW, _) => never(
                    format!("socket({family}, SOCK_RAW)"),
                    "a raw socket's packets carry any address and port",
                ),
                (SOCK_PACKET, _) => never(
                    format!("socket({family}, SOCK_PACKET)"),
                    "the kernel makes it a packet socket, which reads and sends raw frames of every interface",
                ),
                _ => never(
                    format!("socket({family}, type {ty}, protocol {protocol})"),
                    "only TCP and UDP sockets can reach the network under a profile (SCTP, MPTCP, UDP-Lite and ICMP sockets reach peers no connect check sees)",
                ),
            }
        }
        libc::AF_NETLINK if matches!(ty, libc::SOCK_RAW | libc::SOCK_DGRAM) => {
            let protocol = u16::try_from(protocol).ok();
            let nl = Object::Socket(SockAddr::Netlink {
                protocol,
                port_id: 0,
                groups: 0,
            });
            let decide = |a| policy.decide(AccessSet::of(a), &nl);
            // Any rule for the protocol admits the socket, unless sends to it are denied
            // by a `deny` rule: the writes that would bypass that rule are not stopped.
            let send_denied = matches!(
                decide(Access::Send),
                Decision::Deny {
                    reason: DenyReason::DenyRule { .. },
                    ..
                }
            );
            let allowed = !send_denied
                && [Access::Send, Access::Connect, Access::Bind]
                    .into_iter()
                    .any(|a| matches!(decide(a), Decision::Allow | Decision::AllowIfAbsent));
            (!allowed).then(|| {
                (
                    object_text(&nl),
                    "no connect, bind or send rule for this netlink protocol, or a deny send rule (its writes are not stopped, so the socket is refused)".into(),
                    true,
                )
            })
        }
        libc::AF_PACKET => never(
            "socket(AF_PACKET)".into(),
            "a packet socket reads and sends raw frames of every interface",
        ),
        _ => never(
            format!("socket(domain {domain}, type {ty}, protocol {protocol})"),
            "a socket family sbx has no rules for",
        ),
    }
}

fn outside_tree(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    for t in &ev.procs {
        let whom = match &t.whom {
            Whom::Tree => continue,
            Whom::TreeMembers(pids) => {
                d.signal_instead = Some((crate::decode::int_arg(ev.args[1]), pids.clone()));
                continue;
            }
            Whom::Outside(w) | Whom::Everyone(w) => w,
        };
        d.refuse(
            "outside-tree",
            Verb::Syscall,
            format!("{} -> {whom}", t.call),
            "the call acts on a process outside the traced tree: never allowed under enforce",
            libc::EPERM,
            false,
        );
    }
}

fn outside_proc_files(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    for f in &ev.proc_files {
        if proc_file_harmless(f) {
            continue;
        }
        d.refuse(
            "outside-proc-files",
            if f.changes { Verb::Write } else { Verb::Read },
            f.object.clone(),
            format!(
                "a process file of {} outside the traced tree (its memory, environment, fds, directories): never allowed under enforce",
                f.whose
            ),
            libc::EACCES,
            false,
        );
    }
}

fn wider_rights(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    for w in &ev.wider {
        d.refuse(
            "wider-rights",
            w.verb,
            format!("{} -> {}", w.object, w.whose),
            format!(
                "the call would {} while that process holds rights this one does not (its `by` lists): never allowed under enforce",
                w.what
            ),
            w.errno,
            false,
        );
    }
}

fn core_limit(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if let Some(call) = &ev.core_raise {
        d.refuse(
            "core-limit",
            Verb::Syscall,
            call.clone(),
            "the workload runs with RLIMIT_CORE 0: a core file would hold a process's memory (docs/security.md)",
            libc::EPERM,
            false,
        );
    }
}

/// May a process file be read by one that may not see the process's memory, environment
/// or fds: its status files only ([`PROC_FILES_READABLE`]), `task/TID/FILE` read like FILE.
pub fn proc_file_harmless(f: &ProcFile) -> bool {
    let rest = match f.rest.strip_prefix(b"task/") {
        Some(t) => {
            let digits = t.iter().take_while(|b| b.is_ascii_digit()).count();
            match &t[digits..] {
                [] => &[][..],
                [b'/', file @ ..] if digits > 0 => file,
                _ => &f.rest[..],
            }
        }
        None if f.rest == b"task" => &[][..],
        None => &f.rest[..],
    };
    !f.changes && PROC_FILES_READABLE.iter().any(|r| r.as_bytes() == rest)
}

fn routing_cmsg(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if !checked(ev) {
        return;
    }
    for (level, ty) in &ev.cmsgs {
        if let Some((_, _, name)) = crate::filter::ROUTING_CMSGS
            .iter()
            .find(|(l, t, _)| l == level && t == ty)
        {
            d.refuse(
                "routing-cmsg",
                Verb::Syscall,
                format!("{}({name} control message)", ev.syscall.name),
                "the control message re-routes the datagram past the peer that was checked: never allowed under enforce",
                libc::EPERM,
                false,
            );
        }
    }
}

fn unreadable_argument(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    if checked(ev) && ev.unreadable {
        d.refuse(
            "unreadable-argument",
            Verb::Read,
            format!("{}(<unreadable argument>)", ev.syscall.name),
            "an argument could not be read: refused (fail closed)",
            libc::EFAULT,
            true,
        );
    }
}

fn closed_fd(ev: &Observed, _: &RunState<'_>, d: &mut Decided) {
    // A call on an fd that is not open at the check (an `Fd` target without a path):
    // answered EBADF, as the kernel would, without running it. Deciding it like a pipe
    // let a sibling thread `dup2` a file there between the check and the call.
    d.closed_fd = ev.class() == Some(Class::Checked)
        && ev
            .syscall
            .targets
            .iter()
            .any(|t| !t.access.is_empty() && matches!(t.object, Object::Fd { path: None, .. }));
}

fn policy_targets(ev: &Observed, st: &RunState<'_>, d: &mut Decided) {
    if !checked(ev) {
        return;
    }
    for t in &ev.syscall.targets {
        match decide_target(ev, st, t) {
            Ok(None) => {
                if st.track_allowed {
                    let object = match &t.object {
                        Object::Path(p) => Object::Path(canonical_proc(p, ev.pid)),
                        o => o.clone(),
                    };
                    d.allowed.push((t.access, object));
                }
            }
            Ok(Some((verb, reason, object))) => {
                d.refuse("policy", verb, object, reason, errno_for(&t.object), true)
            }
            Err(errno) => d.must_fail = Some(errno),
        }
    }
}

/// Decide one target; `Some((verb, reason, object))` when it is not allowed; `Err(errno)`
/// when only a probe rule admits it and the path is absent (`errno` from looking it up: the
/// open must fail).
fn decide_target(
    ev: &Observed,
    st: &RunState<'_>,
    t: &Target,
) -> Result<Option<(Verb, String, String)>, i32> {
    let access = if st.metadata {
        t.access
    } else {
        // Metadata is not protected without --metadata (docs/security.md).
        t.access
            .iter()
            .filter(|a| !matches!(a, Access::Stat | Access::Chdir))
            .collect()
    };
    if access.is_empty() {
        return Ok(None);
    }
    let decision = match &t.object {
        // Nothing under /proc: the object is checked as it is (no copy).
        Object::Path(p) if !crate::policy::under_proc(p) => {
            st.policy.decide_in(st.scope, access, &t.object, st.prov)
        }
        Object::Path(p) => st.policy.decide_in(
            st.scope,
            access,
            &Object::Path(canonical_proc(p, ev.pid)),
            st.prov,
        ),
        Object::Socket(addr @ (SockAddr::Inet { .. } | SockAddr::Inet6 { .. })) => {
            return Ok(decide_inet(st, access, addr, ev.syscall.sock_type));
        }
        o => st.policy.decide_in(st.scope, access, o, st.prov),
    };
    // A right that only programs of a `by` list hold: say so, not "no rule".
    let scoped = || {
        st.scope != Scope::ROOT
            && st.policy.has_scopes()
            && matches!(&t.object, Object::Path(_))
            && st.policy.decide_in(
                Scope::ROOT,
                access,
                &match &t.object {
                    Object::Path(p) => Object::Path(canonical_proc(p, ev.pid)),
                    o => o.clone(),
                },
                st.prov,
            ) == Decision::Allow
    };
    match decision {
        Decision::Allow => Ok(None),
        Decision::AllowIfAbsent if scoped() => Ok(Some((
            Verb::Read,
            SCOPED_REASON.into(),
            object_text(&t.object),
        ))),
        Decision::Deny { verb, .. } if scoped() => {
            Ok(Some((verb, SCOPED_REASON.into(), object_text(&t.object))))
        }
        Decision::AllowIfAbsent => {
            let Object::Path(p) = &t.object else {
                return Ok(None);
            };
            match (st.lookup)(p.effective()) {
                Ok(()) => Ok(Some((
                    Verb::Read,
                    "only a probe rule matches, and the path exists".into(),
                    object_text(&t.object),
                ))),
                Err(errno) => Err(errno),
            }
        }
        Decision::Deny { verb, reason } => Ok(Some((
            verb,
            reason_text(verb, &reason),
            object_text(&t.object),
        ))),
    }
}

/// An inet peer or name: by protocol, with the names the run resolved for it.
/// `sock_type`: the type of the socket the call acts on, as the decoder asked it
/// ([`crate::event::Syscall::sock_type`]).
fn decide_inet(
    st: &RunState<'_>,
    access: AccessSet,
    addr: &SockAddr,
    sock_type: Option<i32>,
) -> Option<(Verb, String, String)> {
    let proto = match sock_type {
        Some(libc::SOCK_STREAM) => Proto::Tcp,
        Some(libc::SOCK_DGRAM) => Proto::Udp,
        // A raw socket (refused at its creation, but one may be inherited), another
        // type, or one sbx could not ask: tcp/udp rules cannot describe where it
        // reaches (a raw socket's packets carry any address and port). Refused.
        other => {
            return Some((
                net_verb(access),
                format!(
                    "only TCP and UDP sockets can reach the network under a profile (socket type {})",
                    other.map_or_else(|| "unknown".to_string(), |t| t.to_string())
                ),
                net_text(None, addr),
            ));
        }
    };
    let names = match addr {
        SockAddr::Inet { addr: a, .. } => st.names.names(IpAddr::from(*a)),
        SockAddr::Inet6 { addr: a, .. } => st.names.names(IpAddr::from(*a)),
        _ => &[],
    };
    let verb = net_verb(access);
    if verb == Verb::Connect
        && proto == Proto::Tcp
        && crate::dns::own_listener(st.own_listeners, addr)
    {
        return None;
    }
    match st
        .policy
        .decide_net_named_in(st.scope, verb, Some(proto), addr, names)
    {
        Decision::Allow | Decision::AllowIfAbsent => None,
        Decision::Deny { verb, reason } => Some((
            verb,
            if st.scope != Scope::ROOT
                && st.policy.has_scopes()
                && st.policy.decide_net_named_in(
                    Scope::ROOT,
                    net_verb(access),
                    Some(proto),
                    addr,
                    names,
                ) == Decision::Allow
            {
                SCOPED_REASON.to_string()
            } else {
                reason_text(verb, &reason)
            },
            match names.first() {
                Some(n) => format!("{} ({})", net_text(Some(proto), addr), escape(n.as_bytes())),
                None => net_text(Some(proto), addr),
            },
        )),
    }
}

/// The object of a violation line, in the profile's words.
pub fn object_text(o: &Object) -> String {
    match o {
        Object::Path(p) => {
            if p.resolved.is_some() && p.resolved.as_deref() != Some(&p.abs[..]) {
                format!("{} (-> {})", escape(&p.abs), escape(p.effective()))
            } else {
                escape(&p.abs)
            }
        }
        Object::Socket(a) => net_text(None, a),
        Object::Fd { fd, path } => match path {
            Some(p) => escape(p),
            None => format!("fd {fd}"),
        },
        Object::Anon(n) => escape(n),
        Object::DnsName(n) => escape(n.as_bytes()),
        Object::Text(t) => escape(t),
        Object::Ids(ids) => format!("{ids:?}"),
    }
}

/// A socket address in the profile's words (`tcp 127.0.0.1:443`, `unix /run/x.sock`), so a
/// violation line reads like the rule that would allow it; `proto` when the socket type is known.
/// See: tests/enforce.rs::kill_connect_to_an_address_not_in_the_profile
pub fn net_text(proto: Option<Proto>, a: &SockAddr) -> String {
    let p = match proto {
        Some(Proto::Tcp) => "tcp ",
        Some(Proto::Udp) => "udp ",
        _ => "",
    };
    match a {
        SockAddr::Inet { addr, port } => {
            format!("{p}{}:{port}", std::net::Ipv4Addr::from(*addr))
        }
        // An IPv4-mapped address is the IPv4 address (docs/profile-format.md).
        SockAddr::Inet6 { addr, port, .. } => {
            match std::net::Ipv6Addr::from(*addr).to_ipv4_mapped() {
                Some(v4) => format!("{p}{v4}:{port}"),
                None => format!("{p}[{}]:{port}", std::net::Ipv6Addr::from(*addr)),
            }
        }
        SockAddr::Unix(path) => format!("unix {}", escape(path)),
        SockAddr::UnixAbstract(n) => format!("unix @{}", escape(n)),
        other => sockaddr(other),
    }
}

pub fn reason_text(verb: Verb, r: &DenyReason) -> String {
    match r {
        DenyReason::NoRule => format!("no rule allows {} here", verb.name()),
        r @ DenyReason::DenyRule { .. } => format!("{r}"),
    }
}

fn errno_for(o: &Object) -> i32 {
    match o {
        Object::Socket(_) => libc::EPERM,
        _ => libc::EACCES,
    }
}

/// The verb a network access needs.
pub fn net_verb(access: AccessSet) -> Verb {
    if access.contains(Access::Connect) {
        Verb::Connect
    } else if access.contains(Access::Bind) || access.contains(Access::Listen) {
        Verb::Bind
    } else {
        Verb::Send
    }
}

/// Does a memory-class call (`name(args)`) touch the guard region?
fn touches_guard(name: &str, a: &[u64; 6]) -> bool {
    use crate::tracer::guard;
    const MREMAP_FIXED: u64 = 2;
    const SHM_REMAP: u64 = 0o40000;
    match name {
        "mremap" => {
            guard::overlaps(a[0], a[1]) || (a[3] & MREMAP_FIXED != 0 && guard::overlaps(a[4], a[2]))
        }
        "shmdt" => guard::overlaps(a[0], 1),
        "shmat" => a[2] & SHM_REMAP != 0 && guard::overlaps(a[1], 1),
        "map_shadow_stack" => guard::overlaps(a[0], a[1]),
        // mmap, mprotect, munmap, madvise, pkey_mprotect, mseal, remap_file_pages: (addr, len).
        _ => guard::overlaps(a[0], a[1]),
    }
}

/// `Some("char"|"block")` when this mknod/mknodat makes a device node: the node would
/// give whoever opens it the device (a disk, memory), whatever directory it is in, and
/// path rules cannot see that. FIFOs, sockets and regular files are ordinary path creations.
pub fn device_node(name: &str, args: &[u64; 6]) -> Option<&'static str> {
    const S_IFMT: u64 = 0o170_000;
    let mode = match name {
        "mknod" => args[1],
        "mknodat" => args[2],
        _ => return None,
    };
    match mode & S_IFMT {
        0o020_000 => Some("char"),
        0o060_000 => Some("block"),
        _ => None,
    }
}

/// Is `path` a process's memory file (`/proc/PID/mem`, `/proc/self/mem`,
/// `/proc/thread-self/mem`, `/proc/PID/task/TID/mem`)? Writes through it ignore page
/// protections (the kernel's FOLL_FORCE), the read-only race-guard region's included.
pub fn proc_mem(path: &[u8]) -> bool {
    // Every written path of every checked stop comes here: no allocation for the others.
    if !path.starts_with(b"/proc/") || !path.ends_with(b"/mem") {
        return false;
    }
    let id = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let segs: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    match segs.as_slice() {
        [b"", b"proc", who, b"mem"] => id(who) || *who == b"self" || *who == b"thread-self",
        [b"", b"proc", who, b"task", tid, b"mem"] => (id(who) || *who == b"self") && id(tid),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::event::{Outcome, PathObj};
    use crate::profile::vars::Env;

    fn policy(text: &str) -> CompiledPolicy {
        let env = Env {
            cwd: "/work".into(),
            home: "/home/u".into(),
            tmpdir: "/tmp".into(),
            vars: Default::default(),
        };
        CompiledPolicy::load("t.profile", text, &env).unwrap_or_else(|e| panic!("{e}"))
    }

    /// An `int` argument as its register holds it.
    fn w(v: i32) -> u64 {
        u64::from(v.cast_unsigned())
    }

    /// A stop of `name(args)` on x86_64 with these targets.
    fn stop(name: &str, args: [u64; 6], targets: Vec<Target>) -> Observed {
        let def = Arch::X86_64.by_name(name);
        Observed {
            pid: 100,
            tid: 100,
            def,
            args,
            syscall: Syscall {
                name: name.into(),
                nr: def.map_or(9999, |d| d.nr),
                args,
                targets,
                outcome: Outcome::Unknown,
                sock_type: None,
            },
            unreadable: false,
            listen_name: None,
            cmsgs: Vec::new(),
            procs: Vec::new(),
            proc_files: Vec::new(),
            wider: Vec::new(),
            core_raise: None,
        }
    }

    fn path(access: Access, p: &str) -> Target {
        Target {
            access: AccessSet::of(access),
            object: Object::Path(PathObj {
                literal: p.into(),
                abs: p.into(),
                resolved: None,
            }),
        }
    }

    /// Decide with a filesystem where exactly `existing` exist.
    fn run(ev: &Observed, p: &CompiledPolicy, existing: &[&str]) -> Decided {
        let names = DnsBook::default();
        let lookup = |q: &[u8]| {
            if existing.iter().any(|e| e.as_bytes() == q) {
                Ok(())
            } else {
                Err(libc::ENOENT)
            }
        };
        let st = RunState {
            policy: p,
            scope: Scope::NONE,
            prov: None,
            names: &names,
            own_listeners: &[],
            guard: true,
            metadata: false,
            track_allowed: true,
            lookup: &lookup,
        };
        decide(ev, &st)
    }

    fn checks(d: &Decided) -> Vec<&'static str> {
        d.refusals.iter().map(|r| r.check).collect()
    }

    #[test]
    fn every_check_is_in_the_architecture_doc() {
        let doc = include_str!("../../docs/architecture.md");
        for c in CHECKS {
            assert!(
                doc.contains(&format!("| `{}` |", c.name)),
                "{} is not in docs/architecture.md",
                c.name
            );
        }
    }

    #[test]
    fn every_check_has_a_distinct_name_and_policy_comes_last() {
        let mut names: Vec<_> = CHECKS.iter().map(|c| c.name).collect();
        assert_eq!(names.last(), Some(&"policy"));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CHECKS.len());
    }

    #[test]
    fn rules_decide_paths_and_probes_ask_the_filesystem() {
        let p = policy("read /work/**\nprobe /etc/maybe\n");
        let ok = run(
            &stop("openat", [0; 6], vec![path(Access::Read, "/work/a")]),
            &p,
            &[],
        );
        assert!(ok.refusals.is_empty());
        assert_eq!(ok.allowed.len(), 1);
        let bad = run(
            &stop(
                "openat",
                [0; 6],
                vec![path(Access::Read, "/home/u/.ssh/id_rsa")],
            ),
            &p,
            &[],
        );
        assert_eq!(checks(&bad), ["policy"]);
        assert_eq!(bad.refusals[0].errno, libc::EACCES);
        assert!(bad.refusals[0].allowable);
        // A probe of an absent path must fail with the lookup's errno; of a present one, it
        // is a violation.
        let probe = stop("openat", [0; 6], vec![path(Access::Read, "/etc/maybe")]);
        assert_eq!(run(&probe, &p, &[]).must_fail, Some(libc::ENOENT));
        let there = run(&probe, &p, &["/etc/maybe"]);
        assert_eq!(checks(&there), ["policy"]);
        assert!(there.refusals[0].reason.contains("probe"));
    }

    #[test]
    fn structural_refusals_are_named_and_not_allowable() {
        let p = policy("read /**\nwrite /**\ncreate /**\n");
        // A block device node, wherever it is made.
        let dev = stop(
            "mknodat",
            [0, 0, 0o060_600, 0, 0, 0],
            vec![path(Access::Create, "/work/d")],
        );
        let d = run(&dev, &p, &[]);
        assert_eq!(checks(&d), ["device-node"]);
        assert!(d.unallowable());
        // A write through a memory file, even where a rule allows the path.
        let mem = stop("openat", [0; 6], vec![path(Access::Write, "/proc/77/mem")]);
        assert_eq!(checks(&run(&mem, &p, &[])), ["memory-file-write"]);
        // Packet and raw sockets.
        let packet = stop("socket", [w(libc::AF_PACKET), 3, 0, 0, 0, 0], vec![]);
        assert_eq!(checks(&run(&packet, &p, &[])), ["socket-kind"]);
        let raw = stop("socket", [w(libc::AF_INET), 3, 1, 0, 0, 0], vec![]);
        assert_eq!(checks(&run(&raw, &p, &[])), ["socket-kind"]);
        // An unknown number: refused with ENOSYS.
        let mut unknown = stop("nosuch", [0; 6], vec![]);
        unknown.def = None;
        let d = run(&unknown, &p, &[]);
        assert_eq!(checks(&d), ["unknown-syscall"]);
        assert_eq!(d.refusals[0].errno, libc::ENOSYS);
        // An untraced clone.
        let clone = stop(
            "clone",
            [crate::filter::CLONE_UNTRACED, 0, 0, 0, 0, 0],
            vec![],
        );
        assert_eq!(checks(&run(&clone, &p, &[])), ["untraced-clone"]);
        // A memory call over the guard region.
        let g = crate::tracer::guard::WINDOW_BASE;
        let mprotect = stop("mprotect", [g, 4096, 7, 0, 0, 0], vec![]);
        assert_eq!(checks(&run(&mprotect, &p, &[])), ["guard-region"]);
    }

    #[test]
    fn gated_syscalls_and_argument_rules() {
        let none = policy("read /**\n");
        let mount = stop("mount", [0; 6], vec![]);
        let d = run(&mount, &none, &[]);
        assert_eq!(checks(&d), ["gated-syscall"]);
        assert!(!d.unallowable());
        let allowed = policy("syscall mount\n");
        assert!(run(&mount, &allowed, &[]).refusals.is_empty());
        // TIOCSTI: never allowable.
        let ioctl = stop("ioctl", [0, 0x5412, 0, 0, 0, 0], vec![]);
        let d = run(&ioctl, &none, &[]);
        assert_eq!(checks(&d), ["argument-rule"]);
        assert!(d.unallowable());
    }

    #[test]
    fn closed_fds_and_unreadable_arguments() {
        let p = policy("write /**\n");
        let fd = Target {
            access: AccessSet::of(Access::Write),
            object: Object::Fd { fd: 9, path: None },
        };
        let d = run(&stop("fchmod", [9, 0o777, 0, 0, 0, 0], vec![fd]), &p, &[]);
        assert!(d.closed_fd);
        let mut ev = stop("openat", [0; 6], vec![]);
        ev.unreadable = true;
        let d = run(&ev, &p, &[]);
        assert_eq!(checks(&d), ["unreadable-argument"]);
        assert_eq!(d.refusals[0].errno, libc::EFAULT);
    }

    #[test]
    fn listen_on_a_socket_never_bound_is_a_wildcard_bind() {
        let mut ev = stop("listen", [3, 5, 0, 0, 0, 0], vec![]);
        ev.listen_name = Some(SockAddr::Inet {
            addr: [127, 0, 0, 1],
            port: 0,
        });
        let d = run(&ev, &policy("bind tcp 127.0.0.1:8080\n"), &[]);
        assert_eq!(checks(&d), ["listen-autobind"]);
        assert!(run(&ev, &policy("bind tcp *:*\n"), &[]).refusals.is_empty());
        // A bound socket was decided at its bind.
        ev.listen_name = Some(SockAddr::Inet {
            addr: [127, 0, 0, 1],
            port: 8080,
        });
        assert!(run(&ev, &policy("read /x\n"), &[]).refusals.is_empty());
    }

    #[test]
    fn a_netlink_socket_without_a_rule_is_refused_as_a_send_the_diff_can_propose() {
        let ev = stop("socket", [w(libc::AF_NETLINK), 3, 4, 0, 0, 0], vec![]);
        let d = run(&ev, &policy("read /x\n"), &[]);
        assert_eq!(checks(&d), ["socket-kind"]);
        assert!(!d.unallowable());
        assert_eq!(d.extra_targets.len(), 1);
        let d = run(&ev, &policy("send netlink sock_diag\n"), &[]);
        assert!(d.refusals.is_empty(), "{d:?}");
    }

    /// Socket creation by allowlist: what the kernel will create, decided by (domain, type,
    /// protocol); type flags (SOCK_NONBLOCK, SOCK_CLOEXEC) do not change it.
    #[test]
    fn sockets_are_created_only_of_kinds_rules_describe() {
        let p = policy("connect tcp 127.0.0.1:80\n");
        let sock = |domain: i32, ty: i32, proto: i32| {
            let ev = stop("socket", [w(domain), w(ty), w(proto), 0, 0, 0], vec![]);
            run(&ev, &p, &[])
        };
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        let pair = stop(
            "socketpair",
            [w(libc::AF_UNIX), w(libc::SOCK_STREAM), 0, 0, 0, 0],
            vec![],
        );
        assert!(run(&pair, &p, &[]).refusals.is_empty());
        for (domain, ty, proto) in [
            (libc::AF_INET, libc::SOCK_STREAM, 0),
            (libc::AF_INET6, libc::SOCK_STREAM | flags, libc::IPPROTO_TCP),
            (libc::AF_INET, libc::SOCK_DGRAM, 0),
            (libc::AF_INET6, libc::SOCK_DGRAM, libc::IPPROTO_UDP),
            (libc::AF_UNIX, libc::SOCK_STREAM | flags, 0),
            (libc::AF_UNIX, libc::SOCK_DGRAM, 0),
            (libc::AF_UNIX, libc::SOCK_SEQPACKET, 0),
        ] {
            assert!(
                sock(domain, ty, proto).refusals.is_empty(),
                "{domain} {ty} {proto}"
            );
        }
        for (domain, ty, proto, what) in [
            (libc::AF_INET, 10, 0x0300, "SOCK_PACKET"),
            (libc::AF_INET6, 10, 0, "SOCK_PACKET"),
            (libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_RAW, "SOCK_RAW"),
            (libc::AF_INET, libc::SOCK_STREAM, 132, "protocol 132"), // SCTP
            (libc::AF_INET6, libc::SOCK_SEQPACKET, 132, "protocol 132"),
            (libc::AF_INET, libc::SOCK_STREAM, 262, "protocol 262"), // MPTCP
            (libc::AF_INET, libc::SOCK_DGRAM, 136, "protocol 136"),  // UDP-Lite
            (
                libc::AF_INET,
                libc::SOCK_DGRAM,
                libc::IPPROTO_ICMP,
                "protocol 1",
            ),
            (
                libc::AF_INET,
                libc::SOCK_STREAM,
                libc::IPPROTO_UDP,
                "protocol 17",
            ),
            (libc::AF_PACKET, libc::SOCK_DGRAM, 0, "AF_PACKET"),
            (libc::AF_VSOCK, libc::SOCK_STREAM, 0, "domain 40"),
            (libc::AF_ALG, libc::SOCK_SEQPACKET, 0, "domain 38"),
            (libc::AF_UNIX, libc::SOCK_RAW, 0, "domain 1"),
            (libc::AF_NETLINK, libc::SOCK_STREAM, 0, "domain 16"),
        ] {
            if domain != libc::AF_UNIX {
                let pair = stop("socketpair", [w(domain), w(ty), w(proto), 0, 0, 0], vec![]);
                let d = run(&pair, &p, &[]);
                assert_eq!(checks(&d), ["socket-kind"], "socketpair {what}");
            }
            let d = sock(domain, ty, proto);
            assert_eq!(checks(&d), ["socket-kind"], "{what}");
            assert!(d.refusals[0].object.contains(what), "{:?}", d.refusals[0]);
            assert!(d.unallowable(), "{what}");
        }
    }

    #[test]
    fn control_messages_that_re_route_are_refused() {
        let p = policy("send udp 127.0.0.1:53\n");
        let mut ev = stop("sendmsg", [3, 0, 0, 0, 0, 0], vec![]);
        ev.cmsgs = vec![(libc::SOL_SOCKET as u32, 1), (0, 8), (41, 50)]; // SCM_RIGHTS, pktinfo
        assert!(run(&ev, &p, &[]).refusals.is_empty());
        for (level, ty) in [(0, 7), (41, 57), (41, 5), (41, 9)] {
            ev.cmsgs = vec![(1, 1), (level, ty)];
            let d = run(&ev, &p, &[]);
            assert_eq!(checks(&d), ["routing-cmsg"], "({level}, {ty})");
            assert!(d.unallowable());
        }
    }

    #[test]
    fn calls_on_processes_outside_the_tree_are_refused() {
        let p = policy("read /x\n");
        let mut ev = stop("kill", [77, 15, 0, 0, 0, 0], vec![]);
        let target = |whom| ProcTarget {
            call: "kill(77, SIGTERM)".into(),
            whom,
        };
        ev.procs = vec![target(Whom::Tree)];
        assert!(run(&ev, &p, &[]).refusals.is_empty());
        for whom in [
            Whom::Outside("pid 77 (sshd)".into()),
            Whom::Everyone("every process the caller may signal".into()),
        ] {
            ev.procs = vec![target(whom)];
            let d = run(&ev, &p, &[]);
            assert_eq!(checks(&d), ["outside-tree"]);
            assert!(d.unallowable() && d.refusals[0].errno == libc::EPERM);
            assert!(d.refusals[0].object.starts_with("kill(77, SIGTERM) -> "));
        }
        // The caller's own group with outsiders: signalled by sbx, to the tree's members.
        ev.procs = vec![target(Whom::TreeMembers(vec![5, 6]))];
        let d = run(&ev, &p, &[]);
        assert!(d.refusals.is_empty());
        assert_eq!(d.signal_instead, Some((15, vec![5, 6])));
    }

    #[test]
    fn calls_on_wider_processes_of_the_tree_and_core_limits_are_refused() {
        let p = policy("read /x\n");
        let mut ev = stop("kill", [77, 11, 0, 0, 0, 0], vec![]);
        ev.wider = vec![Wider {
            object: "kill(77, SIGSEGV)".into(),
            whose: "pid 77 (npm)".into(),
            what: "send it a core-dumping signal",
            verb: Verb::Syscall,
            errno: libc::EPERM,
        }];
        let d = run(&ev, &p, &[]);
        assert_eq!(checks(&d), ["wider-rights"]);
        assert!(d.unallowable() && d.refusals[0].errno == libc::EPERM);
        assert_eq!(d.refusals[0].object, "kill(77, SIGSEGV) -> pid 77 (npm)");
        ev.wider.clear();
        assert!(run(&ev, &p, &[]).refusals.is_empty());
        let mut ev = stop("prlimit64", [0, 4, 0x1000, 0, 0, 0], vec![]);
        ev.core_raise = Some("prlimit64(RLIMIT_CORE, {unlimited, unlimited})".into());
        let d = run(&ev, &p, &[]);
        assert_eq!(checks(&d), ["core-limit"]);
        assert!(d.unallowable());
    }

    #[test]
    fn only_status_files_of_a_process_are_harmless() {
        let f = |rest: &str, changes: bool| ProcFile {
            object: String::new(),
            rest: rest.as_bytes().to_vec(),
            whose: String::new(),
            changes,
        };
        for ok in ["", "stat", "status", "task/9/comm", "task"] {
            assert!(proc_file_harmless(&f(ok, false)), "{ok}");
        }
        for bad in ["mem", "environ", "fd/3", "task/9/mem", "maps", "cwd"] {
            assert!(!proc_file_harmless(&f(bad, false)), "{bad}");
        }
        assert!(!proc_file_harmless(&f("stat", true)));
    }

    #[test]
    fn process_files_outside_the_tree_are_read_like_ps_reads_them() {
        let p = policy("read /**\nwrite /**\n");
        let file = |rest: &str, changes: bool| ProcFile {
            object: format!("/proc/9/{rest}"),
            rest: rest.as_bytes().to_vec(),
            whose: "sbx itself".into(),
            changes,
        };
        let mut ev = stop("openat", [0; 6], vec![]);
        for ok in [
            "",
            "stat",
            "status",
            "cmdline",
            "comm",
            "statm",
            "task",
            "task/9/stat",
        ] {
            ev.proc_files = vec![file(ok, false)];
            assert!(run(&ev, &p, &[]).refusals.is_empty(), "{ok}");
        }
        for bad in [
            "environ",
            "mem",
            "maps",
            "fd",
            "fd/3",
            "fdinfo/3",
            "cwd",
            "cwd/x",
            "root/etc",
            "task/9/environ",
            "task/9/mem",
            "auxv",
            "map_files/1-2",
            "exe",
        ] {
            ev.proc_files = vec![file(bad, false)];
            let d = run(&ev, &p, &[]);
            assert_eq!(checks(&d), ["outside-proc-files"], "{bad}");
            assert!(d.unallowable());
        }
        // Nothing of theirs may be changed, not even their status files.
        ev.proc_files = vec![file("comm", true)];
        assert_eq!(checks(&run(&ev, &p, &[])), ["outside-proc-files"]);
    }

    #[test]
    fn a_connect_to_the_runs_own_server_needs_no_rule() {
        let p = policy("read /x\n");
        let names = DnsBook::default();
        let lookup = |_: &[u8]| Ok(());
        let own = [
            (IpAddr::from([127, 0, 0, 1]), 40000),
            (IpAddr::from([0u8; 4]), 40001),
        ];
        let st = RunState {
            policy: &p,
            scope: Scope::NONE,
            prov: None,
            names: &names,
            own_listeners: &own,
            guard: true,
            metadata: false,
            track_allowed: false,
            lookup: &lookup,
        };
        let connect = |addr: [u8; 4], port: u16| {
            let mut ev = stop(
                "connect",
                [3, 0, 16, 0, 0, 0],
                vec![Target {
                    access: AccessSet::of(Access::Connect),
                    object: Object::Socket(SockAddr::Inet { addr, port }),
                }],
            );
            ev.syscall.sock_type = Some(libc::SOCK_STREAM);
            decide(&ev, &st)
        };
        assert!(connect([127, 0, 0, 1], 40000).refusals.is_empty());
        assert!(
            connect([127, 0, 0, 1], 40001).refusals.is_empty(),
            "wildcard listener"
        );
        assert!(
            connect([127, 0, 0, 2], 40001).refusals.is_empty(),
            "any loopback address"
        );
        assert_eq!(
            checks(&connect([127, 0, 0, 2], 40000)),
            ["policy"],
            "another address"
        );
        assert_eq!(
            checks(&connect([127, 0, 0, 1], 40002)),
            ["policy"],
            "another port"
        );
        assert_eq!(
            checks(&connect([192, 0, 2, 1], 40001)),
            ["policy"],
            "not loopback"
        );
    }
}
