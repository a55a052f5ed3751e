//! Build the stacked seccomp programs of a run (design.md section 3).
//!
//! Pure: data in ([`FilterSpec`] + the arch table), BPF out. Installing the programs is the
//! tracer's job (`tracer/spawn.rs`), which calls `seccomp(SECCOMP_SET_MODE_FILTER)` once per
//! program, in the order [`build`] returns them.
//!
//! The kernel runs every stacked filter and keeps the most restrictive answer
//! (KILL_PROCESS > ERRNO > TRACE > ALLOW), so each concern is its own small filter:
//!
//! 1. **unknown**: numbers absent from the table (new kernels add syscalls; x32 numbers with
//!    bit 0x4000_0000 set also land here) → TRACE in record, refused in enforce (KILL_PROCESS,
//!    or ENOSYS in errno mode). Built by hand as two comparisons per run of consecutive known
//!    numbers (`known_ranges_program`), not by seccompiler, whose one comparison per known
//!    number made it the longest filter of the stack.
//! 2. **spawn**: `clone3` → ERRNO(ENOSYS) always (its flags sit behind a pointer the filter
//!    cannot read; glibc falls back to `clone`); `clone` with `CLONE_UNTRACED` → EPERM
//!    (record) or refused (enforce); `clone` with namespace flags → refused in enforce unless
//!    `unshare` is allowed (in record they are traced by filter 3). Record also answers EPERM
//!    to `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` here ([`TERMINAL_INJECTION`]).
//! 3. **trace**: checked, creds, metadata (only with `--metadata`), gated (record only),
//!    namespace clones (record), `prctl(PR_SET_SECCOMP)` (record), the terminal-injecting
//!    ioctls (enforce: the tracer refuses them and says why), and memory syscalls that
//!    may touch the guard window → TRACE(0). The tracer looks the class up by number, so the
//!    data word is always 0.
//! 4. **refuse** (enforce only): gated syscalls the profile does not allow,
//!    `prctl(PR_SET_SECCOMP)` unless `seccomp` is allowed, and, even when `seccomp` is allowed,
//!    `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER)`: a workload filter
//!    answering SECCOMP_RET_USER_NOTIF takes precedence over sbx's TRACE, and its listener could
//!    let the call continue unchecked → KILL_PROCESS or ERRNO.
//!
//! Arguments the kernel declares `int` or `unsigned int` (prctl's option, seccomp's operation
//! and flags, ioctl's request) are compared on their low 32 bits only ([`cond32`]): the kernel
//! drops the high bits, so a full 64-bit comparison would let `PR_SET_SECCOMP | 1 << 32` past
//! a rule the kernel then runs as `PR_SET_SECCOMP` (flatpak's CVE-2019-10063 was TIOCSTI
//! hidden that way). Pointers, lengths and `unsigned long` flags are compared whole.
//!
//! Every seccompiler program starts with an architecture check that returns KILL_PROCESS for
//! any other `AUDIT_ARCH`: that is how the i386 ABI (`int 0x80` on x86_64) is refused, in
//! record as in enforce.
//!
//! Installation order matters because each later `seccomp(2)` call passes through the filters
//! already installed: the filter that traces or refuses `seccomp` is always last, and `prctl`
//! is never refused except for `PR_SET_SECCOMP`.
//!
//! Every free syscall is answered ALLOW by every filter without loading an argument, so the
//! kernel's seccomp action cache (5.11+) skips the filters for them entirely.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::arch::{Arch, Class, SyscallDef};

/// `CLONE_UNTRACED`: a child the tracer would never see.
pub const CLONE_UNTRACED: u64 = 0x0080_0000;
/// All `CLONE_NEW*` namespace flags that `clone` accepts.
pub const CLONE_NAMESPACES: u64 = 0x0002_0000 // CLONE_NEWNS
    | 0x0200_0000 // CLONE_NEWCGROUP
    | 0x0400_0000 // CLONE_NEWUTS
    | 0x0800_0000 // CLONE_NEWIPC
    | 0x1000_0000 // CLONE_NEWUSER
    | 0x2000_0000 // CLONE_NEWPID
    | 0x4000_0000; // CLONE_NEWNET
/// `PR_SET_SECCOMP`: installs a filter like `seccomp(2)`.
pub const PR_SET_SECCOMP: u64 = 22;
/// `SECCOMP_SET_MODE_FILTER` (seccomp(2) operation).
pub const SECCOMP_SET_MODE_FILTER: u64 = 1;
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`.
pub const SECCOMP_FILTER_FLAG_NEW_LISTENER: u64 = 8;
/// The ioctl requests that push input into a terminal (the same numbers on x86_64 and
/// aarch64): `TIOCSTI` queues a byte as if typed, `TIOCLINUX` subcode 3 pastes the console
/// selection (subcode 2 sets it). A workload holding the user's terminal could type a command
/// into the shell that started sbx, which runs it after sbx returns, outside any sandbox. No
/// build needs them: refused in every mode, and never allowable by a profile.
pub const TERMINAL_INJECTION: &[(u64, &str)] = &[(0x5412, "TIOCSTI"), (0x541C, "TIOCLINUX")];

/// Socket options that change where a socket's packets go, after sbx checked the peer at
/// `connect` (`(level, optname, name)`): IPv4 options carry a source route (`IP_OPTIONS`
/// with LSRR/SSRR: the packet goes to the first hop listed); IPv6 routing headers (type 4
/// segment routing, type 2) do the same; `IPV6_2292PKTOPTIONS` sets any of them as a sticky
/// option block; `IPV6_NEXTHOP` picks the next hop. Refused in every enforce mode, and no
/// profile rule can allow them. The same numbers on x86_64 and aarch64.
pub const ROUTING_SOCKOPTS: &[(u64, u64, &str)] = &[
    (0, 4, "IP_OPTIONS"),
    (41, 5, "IPV6_2292RTHDR"),
    (41, 6, "IPV6_2292PKTOPTIONS"),
    (41, 9, "IPV6_NEXTHOP"),
    (41, 57, "IPV6_RTHDR"),
];

/// Control messages of `sendmsg` that change where that message goes (`(level, type,
/// name)`): `IP_RETOPTS` sets IPv4 options (a source route) for the datagram, the IPv6
/// routing headers and `IPV6_NEXTHOP` as in [`ROUTING_SOCKOPTS`]. The tracer refuses them
/// (the filter cannot read ancillary data); no profile rule can allow them.
pub const ROUTING_CMSGS: &[(u32, u32, &str)] = &[
    (0, 7, "IP_RETOPTS"),
    (41, 5, "IPV6_2292RTHDR"),
    (41, 9, "IPV6_NEXTHOP"),
    (41, 57, "IPV6_RTHDR"),
];

/// The route-changing option `setsockopt(fd, level, optname, ...)` sets, if it is one
/// (level and optname compared on their low 32 bits, as the kernel reads them).
pub fn routing_sockopt(level: u64, optname: u64) -> Option<&'static str> {
    ROUTING_SOCKOPTS
        .iter()
        .find(|(l, o, _)| *l == level & 0xffff_ffff && *o == optname & 0xffff_ffff)
        .map(|(_, _, name)| *name)
}

/// The terminal-injecting request named by ioctl's `cmd` argument (its low 32 bits, as the
/// kernel reads it), if it is one.
pub fn terminal_injection(cmd: u64) -> Option<&'static str> {
    TERMINAL_INJECTION
        .iter()
        .find(|(nr, _)| *nr == cmd & 0xffff_ffff)
        .map(|(_, name)| *name)
}

/// Why the filter's argument rules refuse the call `name(args)` that the profile does not
/// otherwise forbid, the same test the kernel made (the tracer repeats it when a refusal was
/// traced to it rather than answered in-kernel: deny and ask modes). `allowed`: is a
/// `syscall NAME` rule in the profile? `(what, why, allowable)`; `allowable` false when no
/// profile rule could allow it.
pub fn refused_by_args(
    name: &str,
    args: &[u64; 6],
    allowed: impl Fn(&str) -> bool,
) -> Option<(String, String, bool)> {
    let low = |i: usize| args[i] & 0xffff_ffff;
    match name {
        "ioctl" => terminal_injection(args[1]).map(|req| {
            (
                format!("ioctl({req})"),
                "pushes input into a terminal, which the user's shell would run after sbx: never allowed".into(),
                false,
            )
        }),
        "setsockopt" => routing_sockopt(args[1], args[2]).map(|opt| {
            (
                format!("setsockopt({opt})"),
                "the option re-routes the socket's packets past the peer its connect was checked for: never allowed under enforce".into(),
                false,
            )
        }),
        "prctl" if low(0) == PR_SET_SECCOMP && !allowed("seccomp") => Some((
            "prctl(PR_SET_SECCOMP)".into(),
            "no rule allows syscall seccomp".into(),
            true,
        )),
        "seccomp"
            if low(0) == SECCOMP_SET_MODE_FILTER
                && low(1) & SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 =>
        {
            Some((
                "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)".into(),
                "a user-notification listener outranks sbx's stops: never allowed".into(),
                false,
            ))
        }
        _ => None,
    }
}
const MAP_FIXED: u64 = 0x10;
/// mmap's MAP_SHARED bit (MAP_SHARED_VALIDATE, 0x03, has it too).
const MAP_SHARED: u64 = 0x01;
/// mmap's MAP_DROPPABLE (Linux 6.11).
const MAP_DROPPABLE: u64 = 0x08;
const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
const MREMAP_FIXED: u64 = 2;
const FOUR_GIB: u64 = 1 << 32;
/// The address bits the window test compares: 32..=55. Bits 56..=63 are left out because the
/// kernel ignores them in the addresses of mprotect, munmap, madvise, mremap (old address),
/// mseal...: aarch64's tagged-address ABI (`prctl(PR_SET_TAGGED_ADDR_CTRL)`, open to any
/// workload) accepts a non-zero top byte there, and x86_64 LAM masks bits 57..=62. A stray
/// match only costs a stop.
const WINDOW_BITS: u64 = 0x00ff_ffff_0000_0000;
const ENOSYS: u32 = 38;
const EPERM: u32 = 1;

/// What to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec {
    pub arch: Arch,
    pub mode: FilterMode,
    /// Stop on metadata syscalls too (`--metadata`).
    pub metadata: bool,
    /// Stop chdir and fchdir even without `metadata`: enforce remembers each thread's cwd
    /// and must forget it before one changes (`sink::LinkCache::keep_cwds`).
    pub cwd_changes: bool,
    /// The guard window of the race defence (design.md section 5), if one is used.
    pub guard: Option<GuardWindow>,
    /// Stop the receives that can carry DNS answers ([`Class::Answer`]): record, and enforce
    /// of a profile that names hosts.
    pub dns: bool,
    /// Stop `sendto` without a destination address too (a send on a connected socket): enforce
    /// checks every DNS query name before it leaves, also on a UDP socket connected to a
    /// name server. Record does not (design.md: sendto with an address): it learns the names
    /// from the answers, and a TCP program's `send()`s then run at full speed.
    pub queries: bool,
}

/// Record traces everything interesting; enforce refuses what it can in-kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterMode {
    Record,
    Enforce {
        /// Names of gated syscalls the profile allows (`syscall NAME` rules). The pseudo-name
        /// `unshare` also allows namespace flags on `clone`, and `seccomp` also allows
        /// `prctl(PR_SET_SECCOMP)`.
        allowed_gated: Vec<String>,
        on_gated: Refuse,
    },
}

/// How the kernel refuses a syscall in enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refuse {
    /// SECCOMP_RET_KILL_PROCESS.
    Kill,
    /// SECCOMP_RET_ERRNO with this errno for gated syscalls; unknown numbers always get ENOSYS.
    Errno(i32),
    /// SECCOMP_RET_TRACE for gated syscalls, so the tracer can name and report each one before
    /// it refuses it (enforce deny mode); unknown numbers get ENOSYS in-kernel. Without a
    /// tracer, TRACE returns ENOSYS: still refused.
    Trace,
}

/// A 4 GiB-aligned window holding the guard region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardWindow {
    /// The window's start; must be 4 GiB aligned and at least 4 GiB.
    pub base: u64,
}

/// Why no program could be built.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("seccompiler cannot target architecture {arch:?}")]
    Arch { arch: Arch },
    #[error("guard window base {base:#x} is not 4 GiB aligned, above 4 GiB and below 2^56")]
    GuardBase { base: u64 },
    #[error("the table of {arch:?} is empty: refusing to build a filter that knows no syscall")]
    EmptyTable { arch: Arch },
    #[error("the syscall numbers of {arch:?} form too many runs for the unknown-number filter")]
    Fragmented { arch: Arch },
    #[error("building the {stage} filter")]
    Seccompiler {
        stage: &'static str,
        #[source]
        source: seccompiler::BackendError,
    },
}

/// The class of `nr` on `arch`, `None` for unknown numbers (what the tracer does with a
/// TRACE(0) stop).
/// chdir or fchdir: the calls that change a thread's cwd ([`FilterSpec::cwd_changes`]).
pub fn is_cwd_change(name: &str) -> bool {
    name == "chdir" || name == "fchdir"
}

pub fn class_of(arch: Arch, nr: u64) -> Option<Class> {
    arch.by_nr(nr).map(|d| d.class)
}

/// The runs of consecutive numbers in `sorted` (ascending, no duplicates), as `(first, last)`.
fn runs(sorted: &[u32]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &n in sorted {
        match out.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(n) => *last = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// Filter 1 by hand: `seccompiler` compares the number with every known syscall in turn (some
/// 700 instructions to reach `openat` on x86_64, run for every call the kernel's action cache
/// does not answer, twice for a traced one); the known numbers form a few runs, so two
/// comparisons per run do. Layout, after the architecture check seccompiler's programs also
/// start with (any other `AUDIT_ARCH` → KILL_PROCESS):
///
/// ```text
/// ld nr
/// jge first_0 ? next : MISS      (below the first run, or in the gap before a run)
/// jgt last_0  ? next : HIT
/// ...                            (one pair per run, ascending)
/// MISS: ret unknown              (above the last run: new syscalls, x32's bit 30, -1)
/// HIT:  ret ALLOW
/// ```
///
/// `None` when the runs are too many for BPF's 8-bit jump offsets.
fn known_ranges_program(
    audit_arch: u32,
    ranges: &[(u32, u32)],
    unknown: u32,
) -> Option<BpfProgram> {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const JGT_K: u16 = 0x25;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    // offsetof(struct seccomp_data, nr / arch)
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let n = ranges.len();
    // The farthest jump: from the first run's first comparison to HIT.
    if n == 0 || 2 * n > usize::from(u8::MAX) {
        return None;
    }
    let mut p = vec![
        insn(LD_W_ABS, 0, 0, ARCH),
        insn(JEQ_K, 1, 0, audit_arch),
        insn(RET_K, 0, 0, u32::from(SeccompAction::KillProcess)),
        insn(LD_W_ABS, 0, 0, NR),
    ];
    for (i, &(first, last)) in ranges.iter().enumerate() {
        // From the pair of run i, MISS is 2(n-i)-1 instructions ahead of the first comparison
        // and HIT 2(n-i)-1 ahead of the second.
        let skip = u8::try_from(2 * (n - i) - 1).ok()?;
        p.push(insn(JGE_K, 0, skip, first));
        p.push(insn(JGT_K, 0, skip, last));
    }
    p.push(insn(RET_K, 0, 0, unknown));
    p.push(insn(RET_K, 0, 0, u32::from(SeccompAction::Allow)));
    Some(p)
}

/// Build the programs for `spec`, in installation order.
pub fn build(spec: &FilterSpec) -> Result<Vec<BpfProgram>, FilterError> {
    let target = spec.arch.seccomp_target();
    let table = spec.arch.table();
    if table.is_empty() {
        return Err(FilterError::EmptyTable { arch: spec.arch });
    }
    if let Some(g) = spec.guard
        && (g.base % FOUR_GIB != 0 || g.base < FOUR_GIB || g.base & !WINDOW_BITS != 0)
    {
        return Err(FilterError::GuardBase { base: g.base });
    }
    let b = Builder {
        spec,
        table,
        target,
    };
    let mut out = vec![b.unknown()?, b.clone3()?];
    match &spec.mode {
        FilterMode::Record => {
            out.push(b.untraced_clone()?);
            // Traces `seccomp` (gated in record): last.
            out.push(b.trace()?);
        }
        FilterMode::Enforce {
            allowed_gated,
            on_gated,
        } => {
            // Gated syscalls are not traced in enforce, so the trace filter lets `seccomp`
            // through; the refuse filter may refuse it: last.
            out.push(b.trace()?);
            out.push(b.refuse(allowed_gated, *on_gated)?);
        }
    }
    Ok(out)
}

struct Builder<'a> {
    spec: &'a FilterSpec,
    table: &'static [SyscallDef],
    target: TargetArch,
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

/// A comparison of all 64 bits of argument `arg` (pointers, lengths, `unsigned long`).
fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> SeccompCondition {
    // Argument indexes used here are < 6, the only way construction can fail.
    SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)
        .unwrap_or_else(|_| unreachable!("argument index {arg} < 6"))
}

/// A comparison of the low 32 bits of argument `arg`: for the arguments the kernel declares
/// `int` or `unsigned int` and so truncates (module documentation).
fn cond32(arg: u8, op: SeccompCmpOp, value: u64) -> SeccompCondition {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
        .unwrap_or_else(|_| unreachable!("argument index {arg} < 6"))
}

/// `setsockopt(fd, level, optname, ...)` of a [`ROUTING_SOCKOPTS`] option: one rule each.
fn routing_sockopt_rules() -> Vec<SeccompRule> {
    ROUTING_SOCKOPTS
        .iter()
        .map(|(level, opt, _)| {
            rule(vec![
                cond32(1, SeccompCmpOp::Eq, *level),
                cond32(2, SeccompCmpOp::Eq, *opt),
            ])
        })
        .collect()
}

/// The calls that act on another process (a signal, a pidfd, a priority, a resource limit,
/// scheduling, memory placement, an fd's signal owner), stopped in enforce only when they
/// can reach one, so that the tracer refuses targets outside the traced tree
/// (`sink::targets`): a signal other than 0 (0 only asks whether a process exists), a pid
/// other than 0 (the caller itself), `F_SETOWN`/`F_SETOWN_EX`. `None` for other calls;
/// an empty list stops every call. The gated ones (`pidfd_getfd`, `kcmp`,
/// `process_madvise`, `process_vm_readv`/`writev`, `ptrace`) are stopped where a `syscall`
/// rule allows them.
pub fn process_target_rules(name: &str) -> Option<Vec<SeccompRule>> {
    use SeccompCmpOp::{Eq, Ne};
    const F_SETOWN: u64 = 8;
    const F_SETOWN_EX: u64 = 15;
    Some(match name {
        "kill" | "tkill" => vec![rule(vec![cond32(1, Ne, 0)])],
        "tgkill" => vec![rule(vec![cond32(2, Ne, 0)])],
        "rt_sigqueueinfo" | "rt_tgsigqueueinfo" | "pidfd_send_signal" | "pidfd_open"
        | "pidfd_getfd" | "kcmp" | "process_madvise" | "process_vm_readv" | "process_vm_writev"
        | "ptrace" => vec![],
        // prlimit64 on the caller itself stops too when it sets RLIMIT_CORE (4): the
        // workload runs with 0, raising it is refused (`decide::core_limit`).
        "prlimit64" => vec![
            rule(vec![cond32(0, Ne, 0)]),
            rule(vec![cond32(1, Eq, 4), cond(2, Ne, 0)]),
        ],
        "setrlimit" => vec![rule(vec![cond32(0, Eq, 4)])],
        "sched_setaffinity" | "sched_setscheduler" | "sched_setparam" | "sched_setattr"
        | "migrate_pages" | "move_pages" => vec![rule(vec![cond32(0, Ne, 0)])],
        // (PRIO_PROCESS 0, who 0) and (IOPRIO_WHO_PROCESS 1, who 0) are the caller itself.
        "setpriority" => vec![rule(vec![cond32(0, Ne, 0)]), rule(vec![cond32(1, Ne, 0)])],
        "ioprio_set" => vec![rule(vec![cond32(0, Ne, 1)]), rule(vec![cond32(1, Ne, 0)])],
        "fcntl" => vec![
            rule(vec![cond32(1, Eq, F_SETOWN)]),
            rule(vec![cond32(1, Eq, F_SETOWN_EX)]),
        ],
        // Not a process target: a socket pair of another family than unix is decided like
        // `socket` (`sink::decide::socket_kind`).
        "socketpair" => vec![rule(vec![cond32(0, Ne, 1)])],
        _ => return None,
    })
}

/// With the race guard on: the calls after which a process's memory may change outside its
/// threads' control (an AIO context or io_uring whose reads land later, userfaultfd), so
/// that the guard's copy never goes on its stack (`Guard::use_stack`). Rare calls: every
/// one stops.
pub fn async_memory_rules(name: &str) -> Option<Vec<SeccompRule>> {
    Some(match name {
        "io_setup" | "io_uring_setup" | "userfaultfd" => vec![],
        _ => return None,
    })
}

/// `ioctl(/dev/userfaultfd, USERFAULTFD_IOC_NEW)` (`_IO(0xAA, 0)`): a userfaultfd for the
/// caller's memory; with the race guard on it stops (the guard's copy no longer goes on that
/// process's stack).
pub const USERFAULTFD_IOC_NEW: u64 = 0xAA00;

/// `ioctl` requests that set an fd's signal owner: FIOSETOWN, SIOCSPGRP.
const OWNER_IOCTLS: [u64; 2] = [0x8901, 0x8902];

/// `ioctl(fd, TIOCSTI or TIOCLINUX, ...)`: one rule per request.
fn terminal_injection_rules() -> Vec<SeccompRule> {
    TERMINAL_INJECTION
        .iter()
        .map(|(req, _)| rule(vec![cond32(1, SeccompCmpOp::Eq, *req)]))
        .collect()
}

fn rule(conds: Vec<SeccompCondition>) -> SeccompRule {
    SeccompRule::new(conds).unwrap_or_else(|_| unreachable!("rules are never empty"))
}

/// `arg & bit == bit`.
fn has_bit(arg: u8, bit: u64) -> SeccompCondition {
    cond(arg, SeccompCmpOp::MaskedEq(bit), bit)
}

/// `arg & bits != 0` as one rule per bit (seccompiler has no "any bit" test).
fn any_bit(arg: u8, bits: u64) -> Vec<SeccompRule> {
    (0..64)
        .map(|i| 1u64 << i)
        .filter(|bit| bits & bit != 0)
        .map(|bit| rule(vec![has_bit(arg, bit)]))
        .collect()
}

/// The conditions "argument `arg`'s high word is the window's or the one below" (two
/// alternatives, compared on [`WINDOW_BITS`] only), each combined with `extra`.
fn in_window(arg: u8, base: u64, extra: &[SeccompCondition]) -> Vec<SeccompRule> {
    let hi = base & WINDOW_BITS;
    [hi, hi - FOUR_GIB]
        .into_iter()
        .map(|h| {
            let mut c = extra.to_vec();
            c.push(cond(arg, SeccompCmpOp::MaskedEq(WINDOW_BITS), h));
            rule(c)
        })
        .collect()
}

/// "argument `arg` (a length) is at least 4 GiB", combined with `extra`.
fn huge(arg: u8, extra: &[SeccompCondition]) -> SeccompRule {
    let mut c = extra.to_vec();
    c.push(cond(arg, SeccompCmpOp::Ge, FOUR_GIB));
    rule(c)
}

/// The rules under which a memory-class syscall may touch the guard window: traced when one
/// matches, allowed otherwise.
pub(crate) fn memory_rules(name: &str, base: u64) -> Vec<SeccompRule> {
    match name {
        "mmap" => {
            // Without MAP_FIXED the kernel never maps over an existing mapping.
            let mut r = Vec::new();
            for flag in [MAP_FIXED, MAP_FIXED_NOREPLACE] {
                let f = [has_bit(3, flag)];
                r.extend(in_window(0, base, &f));
                r.push(huge(1, &f));
            }
            // Every shared mapping (MAP_SHARED, MAP_SHARED_VALIDATE: another process may
            // write it) and every droppable one (MAP_DROPPABLE: the kernel may zero its
            // pages at any time), so the guard's copy no longer goes on this process's stack.
            r.push(rule(vec![has_bit(3, MAP_SHARED)]));
            r.push(rule(vec![has_bit(3, MAP_DROPPABLE)]));
            r
        }
        "mremap" => {
            let mut r = in_window(0, base, &[]);
            r.push(huge(1, &[]));
            // MREMAP_FIXED moves the mapping to new_address (argument 4), replacing what is
            // there.
            r.extend(in_window(4, base, &[has_bit(3, MREMAP_FIXED)]));
            r
        }
        // Every attach: the segment is shared memory (and its size is unknown to the filter).
        "shmat" => vec![],
        // shmdt(addr): no length.
        "shmdt" => in_window(0, base, &[]),
        // (addr, len, ...): mprotect, munmap, madvise, pkey_mprotect, mseal, map_shadow_stack,
        // remap_file_pages.
        _ => {
            let mut r = in_window(0, base, &[]);
            r.push(huge(1, &[]));
            r
        }
    }
}

fn refuse_action(refuse: Refuse) -> SeccompAction {
    match refuse {
        Refuse::Kill => SeccompAction::KillProcess,
        Refuse::Errno(e) => SeccompAction::Errno(u32::try_from(e).unwrap_or(EPERM)),
        Refuse::Trace => SeccompAction::Trace(0),
    }
}

impl Builder<'_> {
    fn compile(
        &self,
        stage: &'static str,
        rules: Rules,
        mismatch: SeccompAction,
        matched: SeccompAction,
    ) -> Result<BpfProgram, FilterError> {
        let err = |source| FilterError::Seccompiler { stage, source };
        let f = SeccompFilter::new(rules, mismatch, matched, self.target).map_err(err)?;
        BpfProgram::try_from(f).map_err(err)
    }

    fn nr_of(&self, name: &str) -> Option<i64> {
        self.table
            .iter()
            .find(|d| d.name == name)
            .map(|d| i64::from(d.nr))
    }

    /// Filter 1: every known number is allowed; anything else traced or refused.
    fn unknown(&self) -> Result<BpfProgram, FilterError> {
        let mut nrs: Vec<u32> = self.table.iter().map(|d| d.nr).collect();
        nrs.sort_unstable();
        nrs.dedup();
        known_ranges_program(
            self.spec.arch.audit_arch(),
            &runs(&nrs),
            u32::from(self.unknown_action()),
        )
        .ok_or(FilterError::Fragmented {
            arch: self.spec.arch,
        })
    }

    /// What filter 1 answers for a number absent from the table.
    fn unknown_action(&self) -> SeccompAction {
        match &self.spec.mode {
            FilterMode::Record => SeccompAction::Trace(0),
            FilterMode::Enforce {
                on_gated: Refuse::Kill,
                ..
            } => SeccompAction::KillProcess,
            FilterMode::Enforce {
                on_gated: Refuse::Errno(_) | Refuse::Trace,
                ..
            } => SeccompAction::Errno(ENOSYS),
        }
    }

    /// Filter 2: clone3 → ENOSYS, in every mode.
    fn clone3(&self) -> Result<BpfProgram, FilterError> {
        let rules: Rules = self
            .nr_of("clone3")
            .map(|nr| (nr, vec![]))
            .into_iter()
            .collect();
        self.compile(
            "clone3",
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(ENOSYS),
        )
    }

    /// Record only: clone(CLONE_UNTRACED) and the terminal-injecting ioctls → EPERM (enforce
    /// refuses the first in [`Self::refuse`], and traces the others so that the tracer says
    /// what it refused).
    fn untraced_clone(&self) -> Result<BpfProgram, FilterError> {
        let rules: Rules = self
            .nr_of("clone")
            .map(|nr| (nr, any_bit(0, CLONE_UNTRACED)))
            .into_iter()
            .chain(
                self.nr_of("ioctl")
                    .map(|nr| (nr, terminal_injection_rules())),
            )
            .collect();
        self.compile(
            "untraced clone",
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(EPERM),
        )
    }

    /// Filter 3: what stops the workload.
    fn trace(&self) -> Result<BpfProgram, FilterError> {
        let record = matches!(self.spec.mode, FilterMode::Record);
        let mut rules = Rules::new();
        for d in self.table {
            let nr = i64::from(d.nr);
            match d.class {
                // sendto(fd, buf, len, flags, dest_addr, addrlen): only with an address.
                Class::Checked if d.name == "sendto" && !self.spec.queries => {
                    rules.insert(nr, vec![rule(vec![cond(4, SeccompCmpOp::Ne, 0)])]);
                }
                Class::Checked | Class::Creds => {
                    rules.insert(nr, vec![]);
                }
                Class::Metadata if self.spec.metadata => {
                    rules.insert(nr, vec![]);
                }
                Class::Metadata if self.spec.cwd_changes && is_cwd_change(d.name) => {
                    rules.insert(nr, vec![]);
                }
                Class::Gated if record => {
                    rules.insert(nr, vec![]);
                }
                Class::Memory => {
                    if let Some(g) = self.spec.guard {
                        rules.insert(nr, memory_rules(d.name, g.base));
                    }
                }
                // glibc, c-ares and Python read DNS answers with recvfrom and a source address
                // (or recvmsg/recvmmsg); a recvfrom without one (stream reads) runs freely.
                Class::Answer if self.spec.dns && d.name == "recvfrom" => {
                    rules.insert(nr, vec![rule(vec![cond(4, SeccompCmpOp::Ne, 0)])]);
                }
                Class::Answer if self.spec.dns => {
                    rules.insert(nr, vec![]);
                }
                Class::Spawn if record && d.name == "clone" => {
                    // Logged as the gated pseudo-syscall "clone(namespace)".
                    rules.insert(nr, any_bit(0, CLONE_NAMESPACES));
                }
                Class::Free if record && d.name == "prctl" => {
                    rules.insert(
                        nr,
                        vec![rule(vec![cond32(0, SeccompCmpOp::Eq, PR_SET_SECCOMP)])],
                    );
                }
                // Enforce: the tracer refuses them (record answers EPERM in filter 2), and
                // decides the target of a signal owner set through one.
                Class::Free if !record && d.name == "ioctl" => {
                    let mut r = terminal_injection_rules();
                    r.extend(
                        OWNER_IOCTLS
                            .iter()
                            .map(|req| rule(vec![cond32(1, SeccompCmpOp::Eq, *req)])),
                    );
                    if self.spec.guard.is_some() {
                        r.push(rule(vec![cond32(1, SeccompCmpOp::Eq, USERFAULTFD_IOC_NEW)]));
                    }
                    rules.insert(nr, r);
                }
                // Enforce: the tracer refuses them and says why.
                Class::Free if !record && d.name == "setsockopt" => {
                    rules.insert(nr, routing_sockopt_rules());
                }
                Class::Free | Class::Gated if !record => {
                    let allowed = match &self.spec.mode {
                        FilterMode::Enforce { allowed_gated, .. } => {
                            d.class == Class::Free || allowed_gated.iter().any(|a| a == d.name)
                        }
                        FilterMode::Record => false,
                    };
                    let r = process_target_rules(d.name)
                        .or_else(|| self.spec.guard.and_then(|_| async_memory_rules(d.name)));
                    if allowed && let Some(r) = r {
                        rules.insert(nr, r);
                    }
                }
                _ => {}
            }
        }
        self.compile(
            "trace",
            rules,
            SeccompAction::Allow,
            SeccompAction::Trace(0),
        )
    }

    /// Filter 4 (enforce): gated syscalls the profile does not allow, untraced clones,
    /// namespace clones unless `unshare` is allowed, `prctl(PR_SET_SECCOMP)` unless `seccomp`
    /// is allowed.
    fn refuse(&self, allowed: &[String], on: Refuse) -> Result<BpfProgram, FilterError> {
        let allowed = |n: &str| allowed.iter().any(|a| a == n);
        let mut rules = Rules::new();
        for d in self.table {
            let nr = i64::from(d.nr);
            match d.class {
                Class::Gated if !allowed(d.name) => {
                    rules.insert(nr, vec![]);
                }
                Class::Gated if d.name == "seccomp" => {
                    // Even when allowed: a filter with a user-notification listener could
                    // answer SECCOMP_RET_USER_NOTIF, which pre-empts sbx's TRACE stops, and
                    // then let the call continue unchecked.
                    rules.insert(
                        nr,
                        vec![rule(vec![
                            cond32(0, SeccompCmpOp::Eq, SECCOMP_SET_MODE_FILTER),
                            cond32(
                                1,
                                SeccompCmpOp::MaskedEq(SECCOMP_FILTER_FLAG_NEW_LISTENER),
                                SECCOMP_FILTER_FLAG_NEW_LISTENER,
                            ),
                        ])],
                    );
                }
                Class::Spawn if d.name == "clone" => {
                    let mut r = any_bit(0, CLONE_UNTRACED);
                    if !allowed("unshare") {
                        r.extend(any_bit(0, CLONE_NAMESPACES));
                    }
                    rules.insert(nr, r);
                }
                Class::Free if d.name == "prctl" && !allowed("seccomp") => {
                    rules.insert(
                        nr,
                        vec![rule(vec![cond32(0, SeccompCmpOp::Eq, PR_SET_SECCOMP)])],
                    );
                }
                _ => {}
            }
        }
        self.compile("refuse", rules, SeccompAction::Allow, refuse_action(on))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: u64 = 0x7000_0000_0000;

    fn spec(mode: FilterMode, metadata: bool, guard: bool) -> FilterSpec {
        FilterSpec {
            arch: Arch::X86_64,
            queries: mode != FilterMode::Record,
            mode,
            metadata,
            cwd_changes: false,
            guard: guard.then_some(GuardWindow { base: WINDOW }),
            dns: true,
        }
    }

    fn enforce(allowed: &[&str], on: Refuse) -> FilterMode {
        FilterMode::Enforce {
            allowed_gated: allowed.iter().map(|s| s.to_string()).collect(),
            on_gated: on,
        }
    }

    #[test]
    fn builds_every_mode_within_kernel_limits() {
        for (mode, n) in [
            (FilterMode::Record, 4),
            (enforce(&[], Refuse::Kill), 4),
            (enforce(&["ptrace", "unshare"], Refuse::Errno(1)), 4),
        ] {
            for metadata in [false, true] {
                for guard in [false, true] {
                    let progs = build(&spec(mode.clone(), metadata, guard)).expect("build");
                    assert_eq!(progs.len(), n);
                    for p in &progs {
                        // BPF_MAXINSNS
                        assert!(!p.is_empty() && p.len() <= 4096, "{} instructions", p.len());
                    }
                }
            }
        }
    }

    #[test]
    fn metadata_and_guard_change_the_trace_filter() {
        let plain = build(&spec(FilterMode::Record, false, false)).expect("build");
        let meta = build(&spec(FilterMode::Record, true, false)).expect("build");
        let guard = build(&spec(FilterMode::Record, false, true)).expect("build");
        assert!(meta[3].len() > plain[3].len());
        assert!(guard[3].len() > plain[3].len());
        assert_eq!(plain[0], meta[0]);
    }

    #[test]
    fn rejects_bad_inputs() {
        let mut s = spec(FilterMode::Record, false, false);
        s.guard = Some(GuardWindow {
            base: WINDOW + 4096,
        });
        assert!(matches!(build(&s), Err(FilterError::GuardBase { .. })));
        s.guard = Some(GuardWindow { base: 0 });
        assert!(matches!(build(&s), Err(FilterError::GuardBase { .. })));
        s.guard = Some(GuardWindow { base: 1 << 56 });
        assert!(matches!(build(&s), Err(FilterError::GuardBase { .. })));
    }

    /// The aarch64 table builds the same programs (the BPF differs only in AUDIT_ARCH and
    /// numbers); live probes run on x86_64 only (qemu-user has no seccomp).
    #[test]
    fn builds_for_aarch64() {
        for mode in [FilterMode::Record, enforce(&["ptrace"], Refuse::Kill)] {
            let mut s = spec(mode, true, true);
            s.arch = Arch::Aarch64;
            let progs = build(&s).expect("build");
            let x86 = build(&FilterSpec {
                arch: Arch::X86_64,
                ..s.clone()
            })
            .expect("build");
            assert_eq!(progs.len(), x86.len());
            assert_ne!(progs, x86);
            assert!(progs.iter().all(|p| !p.is_empty() && p.len() <= 4096));
            // Every program first compares seccomp_data.arch with AUDIT_ARCH_AARCH64 and kills
            // on any other value: how the compat arm32 ABI (AUDIT_ARCH_ARM) is refused.
            for p in &progs {
                assert_eq!(p[1].k, crate::arch::AUDIT_ARCH_AARCH64);
                assert_eq!((p[1].jt, p[1].jf), (1, 0));
                assert_eq!(p[2].k, 0x8000_0000); // SECCOMP_RET_KILL_PROCESS
            }
        }
        assert_eq!(class_of(Arch::Aarch64, 56), Some(Class::Checked)); // openat
        assert_eq!(class_of(Arch::Aarch64, 257), None); // x86_64's openat: a hole here
    }

    /// A cBPF interpreter for the instructions seccompiler and `known_ranges_program` emit.
    fn run_bpf(prog: &[seccompiler::sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = &prog[pc];
            let jump = |cond: bool| usize::from(if cond { i.jt } else { i.jf });
            match i.code {
                0x20 => {
                    let o = i.k as usize;
                    acc = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap());
                }
                0x54 => acc &= i.k,
                0x05 => pc += i.k as usize,
                0x15 => pc += jump(acc == i.k),
                0x25 => pc += jump(acc > i.k),
                0x35 => pc += jump(acc >= i.k),
                0x45 => pc += jump(acc & i.k != 0),
                0x06 => return i.k,
                c => panic!("instruction {c:#x} at {pc}"),
            }
            pc += 1;
        }
    }

    /// Filter 1 as seccompiler builds it: one comparison per known number.
    fn linear_unknown(arch: Arch, unknown: SeccompAction) -> BpfProgram {
        let rules: Rules = arch
            .table()
            .iter()
            .map(|d| (i64::from(d.nr), vec![]))
            .collect();
        let f = SeccompFilter::new(rules, unknown, SeccompAction::Allow, arch.seccomp_target())
            .expect("filter");
        BpfProgram::try_from(f).expect("program")
    }

    /// The range program answers exactly like seccompiler's linear one, for every number a
    /// 32-bit `nr` can usefully hold (the tables, the gaps, far above, x32's bit 30, -1), on
    /// both architectures and in every mode, and kills any other AUDIT_ARCH.
    #[test]
    fn unknown_filter_answers_like_the_linear_one() {
        let modes = [
            (FilterMode::Record, SeccompAction::Trace(0)),
            (enforce(&[], Refuse::Kill), SeccompAction::KillProcess),
            (enforce(&[], Refuse::Errno(1)), SeccompAction::Errno(ENOSYS)),
        ];
        for arch in [Arch::X86_64, Arch::Aarch64] {
            for (mode, action) in &modes {
                let mut sp = spec(mode.clone(), false, false);
                sp.arch = arch;
                let ranges = &build(&sp).expect("build")[0];
                let linear = linear_unknown(arch, action.clone());
                assert!(ranges.len() < 64, "{} instructions", ranges.len());
                let mut nrs: Vec<u32> = (0..4096).collect();
                nrs.extend((0..1024).map(|n| n | 0x4000_0000));
                nrs.extend([0x7fff_ffff, 0x8000_0000, u32::MAX, u32::MAX - 1]);
                for nr in nrs {
                    let want = if arch.by_nr(u64::from(nr)).is_some() {
                        u32::from(SeccompAction::Allow)
                    } else {
                        u32::from(action.clone())
                    };
                    let a = arch.audit_arch();
                    assert_eq!(run_bpf(ranges, nr, a, [0; 6]), want, "{arch:?} nr {nr:#x}");
                    assert_eq!(run_bpf(&linear, nr, a, [0; 6]), want, "{arch:?} nr {nr:#x}");
                }
                for other in [0x4000_0003, crate::arch::AUDIT_ARCH_AARCH64 ^ 1, 0] {
                    assert_eq!(run_bpf(ranges, 0, other, [0; 6]), 0x8000_0000);
                }
            }
        }
    }

    #[test]
    fn runs_and_their_limit() {
        assert_eq!(runs(&[]), vec![]);
        assert_eq!(runs(&[0, 1, 2, 5, 7, 8]), vec![(0, 2), (5, 5), (7, 8)]);
        assert_eq!(
            runs(&[u32::MAX - 1, u32::MAX]),
            vec![(u32::MAX - 1, u32::MAX)]
        );
        // 127 runs fit BPF's 8-bit jumps, 128 do not (the build then fails, never weaker).
        let spread = |k: u32| (0..k).map(|i| (3 * i, 3 * i + 1)).collect::<Vec<_>>();
        let p = known_ranges_program(7, &spread(127), 0x7ff0_0000).expect("fits");
        for nr in 0..400 {
            let want = if nr < 381 && nr % 3 != 2 {
                0x7fff_0000
            } else {
                0x7ff0_0000
            };
            assert_eq!(run_bpf(&p, nr, 7, [0; 6]), want, "nr {nr}");
        }
        assert!(known_ranges_program(7, &spread(128), 0).is_none());
        assert!(known_ranges_program(7, &[], 0).is_none());
    }

    #[test]
    fn argument_refusals_read_int_arguments_as_the_kernel_does() {
        assert_eq!(
            TERMINAL_INJECTION
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>(),
            vec![libc::TIOCSTI, libc::TIOCLINUX]
        );
        let none = |_: &str| false;
        let all = |_: &str| true;
        let hi = 1u64 << 32;
        let a = |x: [u64; 2]| [x[0], x[1], 0, 0, 0, 0];
        // ioctl: refused whatever the profile says, the high bits ignored.
        for cmd in [0x5412, 0x5412 | hi, 0x541C] {
            let (what, _, allowable) =
                refused_by_args("ioctl", &a([1, cmd]), all).expect("refused");
            assert!(what.starts_with("ioctl(TIOC"), "{what}");
            assert!(!allowable);
        }
        assert_eq!(
            refused_by_args("ioctl", &a([1, 0x5413]), none),
            None,
            "TIOCGWINSZ"
        );
        // prctl(PR_SET_SECCOMP): refused unless seccomp is allowed.
        let (what, why, allowable) =
            refused_by_args("prctl", &a([PR_SET_SECCOMP | hi, 2]), none).expect("refused");
        assert_eq!(what, "prctl(PR_SET_SECCOMP)");
        assert!(why.contains("syscall seccomp") && allowable);
        assert_eq!(refused_by_args("prctl", &a([PR_SET_SECCOMP, 2]), all), None);
        assert_eq!(
            refused_by_args("prctl", &a([hi, 0]), none),
            None,
            "option 0"
        );
        // seccomp: a listener never, whatever the profile; plain filters are the profile's.
        for args in [[1, 8], [1 | hi, 8], [1, 8 | hi], [1, 9]] {
            let r = refused_by_args("seccomp", &a(args), all);
            assert!(r.is_some_and(|(_, _, allowable)| !allowable), "{args:?}");
        }
        assert_eq!(refused_by_args("seccomp", &a([1, 0]), all), None);
        assert_eq!(
            refused_by_args("seccomp", &a([2, 8]), all),
            None,
            "another operation"
        );
    }

    /// The trace filter stops exactly the route-changing socket options in enforce (their
    /// level and name compared on the low 32 bits), and none in record; ordinary options
    /// (TCP_NODELAY, SO_REUSEADDR, IPV6_V6ONLY) run without a stop.
    #[test]
    fn routing_socket_options_stop_in_enforce() {
        let trace = u32::from(SeccompAction::Trace(0));
        let allow = u32::from(SeccompAction::Allow);
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let nr = arch.by_name("setsockopt").expect("setsockopt").nr;
            let mut sp = spec(enforce(&[], Refuse::Kill), false, false);
            sp.arch = arch;
            let progs = build(&sp).expect("build");
            let t = &progs[2];
            let at =
                |level: u64, opt: u64| run_bpf(t, nr, arch.audit_arch(), [3, level, opt, 0, 0, 0]);
            let hi = 1u64 << 32;
            for (level, opt, name) in ROUTING_SOCKOPTS {
                assert_eq!(at(*level, *opt), trace, "{name}");
                assert_eq!(at(*level | hi, *opt | hi), trace, "{name}, high bits");
                assert_eq!(routing_sockopt(*level | hi, *opt), Some(*name));
                let (what, _, allowable) =
                    refused_by_args("setsockopt", &[3, *level, *opt, 0, 0, 0], |_| true)
                        .expect("refused");
                assert!(what.contains(name) && !allowable);
            }
            for (level, opt) in [(6, 1), (1, 2), (41, 26), (0, 1), (1, 25)] {
                assert_eq!(at(level, opt), allow, "({level}, {opt})");
                assert_eq!(
                    refused_by_args("setsockopt", &[3, level, opt, 0, 0, 0], |_| true),
                    None
                );
            }
            let mut rec = spec(FilterMode::Record, false, false);
            rec.arch = arch;
            let r = build(&rec).expect("build");
            assert_eq!(
                run_bpf(&r[3], nr, arch.audit_arch(), [3, 41, 57, 0, 0, 0]),
                allow
            );
        }
    }

    /// Calls that act on other processes stop in enforce only when they can reach one.
    #[test]
    fn process_target_calls_stop_only_when_they_can_reach_another_process() {
        let trace = u32::from(SeccompAction::Trace(0));
        let allow = u32::from(SeccompAction::Allow);
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let mut sp = spec(enforce(&["kcmp"], Refuse::Kill), false, false);
            sp.arch = arch;
            let progs = build(&sp).expect("build");
            let at = |name: &str, args: [u64; 6]| {
                let nr = arch.by_name(name).unwrap_or_else(|| panic!("{name}")).nr;
                run_bpf(&progs[2], nr, arch.audit_arch(), args)
            };
            let hi = 1u64 << 32;
            assert_eq!(at("kill", [123, 0, 0, 0, 0, 0]), allow, "signal 0");
            assert_eq!(
                at("kill", [123, hi, 0, 0, 0, 0]),
                allow,
                "signal 0, high bits"
            );
            assert_eq!(at("kill", [123, 15, 0, 0, 0, 0]), trace);
            assert_eq!(at("kill", [0, 15, 0, 0, 0, 0]), trace, "own group");
            assert_eq!(at("tgkill", [1, 1, 0, 0, 0, 0]), allow);
            assert_eq!(at("tgkill", [1, 1, 6, 0, 0, 0]), trace);
            assert_eq!(at("prlimit64", [0, 7, 0, 0, 0, 0]), allow, "itself");
            assert_eq!(
                at("prlimit64", [hi, 7, 0, 0, 0, 0]),
                allow,
                "itself, high bits"
            );
            assert_eq!(at("prlimit64", [99, 7, 0, 0, 0, 0]), trace);
            assert_eq!(at("setpriority", [0, 0, 5, 0, 0, 0]), allow);
            assert_eq!(at("setpriority", [0, 99, 5, 0, 0, 0]), trace);
            assert_eq!(at("setpriority", [2, 0, 5, 0, 0, 0]), trace, "PRIO_USER");
            assert_eq!(at("ioprio_set", [1, 0, 0, 0, 0, 0]), allow);
            assert_eq!(at("ioprio_set", [2, 0, 0, 0, 0, 0]), trace);
            assert_eq!(at("fcntl", [3, 3, 0, 0, 0, 0]), allow, "F_GETFL");
            assert_eq!(at("fcntl", [3, 8, 99, 0, 0, 0]), trace, "F_SETOWN");
            assert_eq!(at("fcntl", [3, 15, 0, 0, 0, 0]), trace, "F_SETOWN_EX");
            assert_eq!(at("ioctl", [3, 0x8901, 0, 0, 0, 0]), trace, "FIOSETOWN");
            assert_eq!(at("ioctl", [3, 0x5413, 0, 0, 0, 0]), allow, "TIOCGWINSZ");
            assert_eq!(at("pidfd_open", [5, 0, 0, 0, 0, 0]), trace);
            assert_eq!(at("kcmp", [5, 6, 0, 0, 0, 0]), trace, "allowed gated");
            assert_eq!(
                at("process_madvise", [5, 0, 0, 0, 0, 0]),
                allow,
                "refused by filter 4"
            );
            let mut rec = spec(FilterMode::Record, false, false);
            rec.arch = arch;
            let r = build(&rec).expect("build");
            let nr = arch.by_name("kill").expect("kill").nr;
            assert_eq!(
                run_bpf(&r[3], nr, arch.audit_arch(), [5, 15, 0, 0, 0, 0]),
                allow
            );
        }
    }

    #[test]
    fn class_lookup() {
        assert_eq!(class_of(Arch::X86_64, 257), Some(Class::Checked));
        assert_eq!(class_of(Arch::X86_64, 1000), None);
        assert_eq!(class_of(Arch::X86_64, 257 | 0x4000_0000), None);
    }

    /// Installs programs in a forked child and runs probes there; every probe is a raw syscall
    /// and its expected result. Nothing in the child allocates (the parent may be multi-threaded).
    #[cfg(target_arch = "x86_64")]
    mod live {
        use super::*;

        /// What a probe must return.
        #[derive(Clone, Copy)]
        enum Want {
            /// Success (any non-negative value).
            Ok,
            /// Failure with this errno.
            Err(i32),
            /// Anything, as long as the process survives.
            Any,
        }

        struct Probe {
            nr: i64,
            args: [u64; 6],
            want: Want,
        }

        fn p(nr: i64, args: [u64; 6], want: Want) -> Probe {
            Probe { nr, args, want }
        }

        /// Fork, install `progs`, run `probes` (or the i386 getpid when `int80`), and return the
        /// child's wait status. Exit code 0 = all probes passed, k = probe k-1 failed,
        /// 200 = install failed.
        fn run_child(progs: &[BpfProgram], probes: &[Probe], int80: bool) -> i32 {
            let fprogs: Vec<libc::sock_fprog> = progs
                .iter()
                .map(|p| libc::sock_fprog {
                    len: u16::try_from(p.len()).expect("program length fits u16"),
                    filter: p.as_ptr().cast::<libc::sock_filter>().cast_mut(),
                })
                .collect();
            // SAFETY: fork has no memory-safety preconditions; the child below only makes raw
            // syscalls on data prepared before the fork and leaves with _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                // SAFETY: PR_SET_NO_NEW_PRIVS takes integer arguments only.
                if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                    // SAFETY: _exit never returns and touches no Rust state.
                    unsafe { libc::_exit(200) };
                }
                for f in &fprogs {
                    // SAFETY: `f` points to a live sock_fprog whose `filter` points to `len`
                    // sock_filter instructions owned by `progs`, alive until _exit; seccompiler's
                    // sock_filter has libc's layout (code u16, jt u8, jf u8, k u32).
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_seccomp,
                            libc::SECCOMP_SET_MODE_FILTER,
                            0,
                            std::ptr::from_ref(f),
                        )
                    };
                    if r != 0 {
                        // SAFETY: as above.
                        unsafe { libc::_exit(200) };
                    }
                }
                if int80 {
                    let mut eax: u32 = 20; // i386 getpid
                    // SAFETY: int 0x80 with eax=20 is the i386 getpid syscall: it reads no
                    // memory and clobbers only eax (the filter should kill us first).
                    unsafe { std::arch::asm!("int 0x80", inout("eax") eax) };
                    let _ = eax;
                    // SAFETY: as above.
                    unsafe { libc::_exit(0) };
                }
                for (i, probe) in probes.iter().enumerate() {
                    let a = probe.args;
                    // SAFETY: every probe's pointer arguments are 0 or point to static,
                    // NUL-terminated strings or to memory the probe does not dereference.
                    let r = unsafe { libc::syscall(probe.nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
                    // SAFETY: __errno_location returns this thread's errno slot.
                    let errno = unsafe { *libc::__errno_location() };
                    if r == 0 && probe.nr == libc::SYS_clone {
                        // SAFETY: a clone that should have been refused succeeded: leave the
                        // new child at once.
                        unsafe { libc::_exit(0) };
                    }
                    let ok = match probe.want {
                        Want::Ok => r >= 0,
                        Want::Err(e) => r == -1 && errno == e,
                        Want::Any => true,
                    };
                    if !ok {
                        let code = i32::try_from(i + 1).unwrap_or(199);
                        // SAFETY: as above.
                        unsafe { libc::_exit(code) };
                    }
                }
                // SAFETY: as above.
                unsafe { libc::_exit(0) };
            }
            let mut status = 0;
            // SAFETY: `status` is a live i32 the kernel writes; `pid` is our child.
            let r = unsafe { libc::waitpid(pid, &mut status, 0) };
            assert_eq!(r, pid);
            status
        }

        fn exit_code(status: i32) -> Option<i32> {
            libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
        }

        const DEV_NULL: &[u8] = b"/dev/null\0";
        const ROOT: &[u8] = b"/\0";

        fn ptr(s: &'static [u8]) -> u64 {
            s.as_ptr() as u64
        }

        const ENOSYS: i32 = libc::ENOSYS;
        const MARK: i32 = libc::EADDRNOTAVAIL; // a refusal errno no probe returns by itself
        const SIGCHLD: u64 = 17;
        /// A bit the kernel drops from `int` arguments.
        const HIGH: u64 = 1 << 32;
        const TIOCSTI: u64 = libc::TIOCSTI;
        const TIOCLINUX: u64 = libc::TIOCLINUX;
        const TIOCGWINSZ: u64 = libc::TIOCGWINSZ;

        fn common_probes() -> Vec<Probe> {
            vec![
                p(libc::SYS_getpid, [0; 6], Want::Ok),
                // clone3 always answers ENOSYS.
                p(libc::SYS_clone3, [0; 6], Want::Err(ENOSYS)),
                // Checked: TRACE with no tracer answers ENOSYS.
                p(
                    libc::SYS_openat,
                    [u64::MAX - 99, ptr(DEV_NULL), 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_prctl,
                    [libc::PR_GET_NO_NEW_PRIVS as u64, 0, 0, 0, 0, 0],
                    Want::Ok,
                ),
                // A free syscall near the end of the table (Landlock ABI version query).
                p(
                    libc::SYS_landlock_create_ruleset,
                    [0, 0, 1, 0, 0, 0],
                    Want::Ok,
                ),
                // Free: fd I/O, even on a bad fd.
                p(
                    libc::SYS_read,
                    [1 << 30, 0, 0, 0, 0, 0],
                    Want::Err(libc::EBADF),
                ),
            ]
        }

        #[test]
        fn record_traces_and_refuses_as_specified() {
            let progs = build(&spec(FilterMode::Record, true, false)).expect("build");
            let mut probes = common_probes();
            probes.extend([
                // Metadata traced with --metadata.
                p(
                    libc::SYS_newfstatat,
                    [u64::MAX - 99, ptr(ROOT), 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // Unknown and gated: traced.
                p(1000, [0; 6], Want::Err(ENOSYS)),
                p(
                    libc::SYS_personality,
                    [0xffff_ffff, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // Untraced clones: EPERM; namespace clones: traced.
                p(
                    libc::SYS_clone,
                    [CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0, 0],
                    Want::Err(libc::EPERM),
                ),
                p(
                    libc::SYS_clone,
                    [0x1000_0000 | SIGCHLD, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_prctl,
                    [PR_SET_SECCOMP, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // The kernel reads prctl's option as an int: high bits cannot hide it.
                p(
                    libc::SYS_prctl,
                    [PR_SET_SECCOMP | HIGH, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // Terminal input injection: EPERM in-kernel, also with high bits set; other
                // ioctls are free (EBADF on a bad fd).
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCSTI, 0, 0, 0, 0],
                    Want::Err(libc::EPERM),
                ),
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCSTI | HIGH, 0, 0, 0, 0],
                    Want::Err(libc::EPERM),
                ),
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCLINUX, 0, 0, 0, 0],
                    Want::Err(libc::EPERM),
                ),
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCGWINSZ, 0, 0, 0, 0],
                    Want::Err(libc::EBADF),
                ),
                // No guard: memory syscalls are free (munmap of an unmapped range succeeds).
                p(libc::SYS_munmap, [WINDOW, 4096, 0, 0, 0, 0], Want::Ok),
                // Record: sendto runs in-kernel without an address (EBADF on fd -1), stops
                // (ENOSYS without a tracer) with one.
                p(
                    libc::SYS_sendto,
                    [u64::MAX, 0, 0, 0, 0, 0],
                    Want::Err(libc::EBADF),
                ),
                p(
                    libc::SYS_sendto,
                    [u64::MAX, 0, 0, 0, ptr(ROOT), 16],
                    Want::Err(ENOSYS),
                ),
            ]);
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
        }

        #[test]
        fn enforce_errno_refuses_in_kernel() {
            let progs = build(&spec(
                enforce(&["personality"], Refuse::Errno(MARK)),
                false,
                true,
            ))
            .expect("build");
            let mut probes = common_probes();
            let fixed = (libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS) as u64;
            probes.extend([
                // Metadata free without --metadata.
                p(
                    libc::SYS_newfstatat,
                    [u64::MAX - 99, ptr(ROOT), 0, 0, 0, 0],
                    Want::Err(libc::EFAULT),
                ),
                // Enforce stops every sendto (DNS query names on connected sockets).
                p(
                    libc::SYS_sendto,
                    [u64::MAX, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // Unknown: ENOSYS in errno mode.
                p(1000, [0; 6], Want::Err(ENOSYS)),
                p(1000 | 0x4000_0000, [0; 6], Want::Err(ENOSYS)),
                // Allowed gated runs; others are refused with the chosen errno.
                p(
                    libc::SYS_personality,
                    [0xffff_ffff, 0, 0, 0, 0, 0],
                    Want::Ok,
                ),
                p(libc::SYS_syslog, [10, 0, 0, 0, 0, 0], Want::Err(MARK)),
                p(libc::SYS_io_uring_setup, [0; 6], Want::Err(MARK)),
                p(libc::SYS_seccomp, [0; 6], Want::Err(MARK)),
                p(
                    libc::SYS_prctl,
                    [PR_SET_SECCOMP, 0, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                p(
                    libc::SYS_prctl,
                    [PR_SET_SECCOMP | HIGH, 0, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                // Terminal input injection: traced (the tracer refuses it and says why).
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCSTI | HIGH, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCLINUX, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_ioctl,
                    [u64::MAX, TIOCGWINSZ, 0, 0, 0, 0],
                    Want::Err(libc::EBADF),
                ),
                p(
                    libc::SYS_clone,
                    [CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                p(
                    libc::SYS_clone,
                    [0x4000_0000 | SIGCHLD, 0, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                // Guard window: traced inside, free outside.
                p(
                    libc::SYS_mprotect,
                    [WINDOW + 4096, 4096, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_mprotect,
                    [WINDOW - 4096, 4096, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // A tagged pointer (aarch64 TBI, x86_64 LAM): the kernel ignores the top bits.
                p(
                    libc::SYS_mprotect,
                    [(WINDOW + 4096) | (0x5a << 56), 4096, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_munmap,
                    [0x1000_0000, 1 << 33, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(libc::SYS_munmap, [0x1000_0000, 4096, 0, 0, 0, 0], Want::Ok),
                p(
                    libc::SYS_mmap,
                    [WINDOW, 4096, 3, fixed, u64::MAX, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_mmap,
                    [0, 4096, 3, fixed & !0x10, u64::MAX, 0],
                    Want::Ok,
                ),
                // Every shared mapping and every shmat: traced (the lazy guard's tracking).
                p(
                    libc::SYS_mmap,
                    [0, 4096, 3, 0x21, u64::MAX, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_mmap,
                    [0, 4096, 3, 0x23, u64::MAX, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_mmap,
                    [0, 4096, 3, 0x28, u64::MAX, 0],
                    Want::Err(ENOSYS),
                ),
                // mremap(MREMAP_FIXED) onto the window: traced.
                p(
                    libc::SYS_mremap,
                    [0x1000_0000, 4096, 4096, 3, WINDOW, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_mremap,
                    [0x1000_0000, 4096, 4096, 0, WINDOW, 0],
                    Want::Err(libc::EFAULT),
                ),
                p(
                    libc::SYS_shmat,
                    [u64::MAX, 0, 0x4000, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_shmat,
                    [u64::MAX, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
            ]);
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
        }

        #[test]
        fn cwd_changes_stop_chdir_and_fchdir_alone() {
            let mut s = spec(enforce(&[], Refuse::Errno(MARK)), false, true);
            s.cwd_changes = true;
            let progs = build(&s).expect("build");
            let mut probes = common_probes();
            probes.extend([
                // Traced (ENOSYS without a tracer), before the kernel reads the bad pointer.
                p(
                    libc::SYS_chdir,
                    [u64::MAX - 99, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                p(
                    libc::SYS_fchdir,
                    [u64::MAX, 0, 0, 0, 0, 0],
                    Want::Err(ENOSYS),
                ),
                // The other metadata calls stay free.
                p(
                    libc::SYS_newfstatat,
                    [u64::MAX - 99, ptr(ROOT), 0, 0, 0, 0],
                    Want::Err(libc::EFAULT),
                ),
            ]);
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
            // Without it, chdir runs in-kernel (EFAULT on the bad pointer, EBADF on the fd).
            let progs =
                build(&spec(enforce(&[], Refuse::Errno(MARK)), false, true)).expect("build");
            let mut probes = common_probes();
            probes.extend([
                p(
                    libc::SYS_chdir,
                    [u64::MAX - 99, 0, 0, 0, 0, 0],
                    Want::Err(libc::EFAULT),
                ),
                p(
                    libc::SYS_fchdir,
                    [u64::MAX, 0, 0, 0, 0, 0],
                    Want::Err(libc::EBADF),
                ),
            ]);
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
        }

        #[test]
        fn enforce_kill_kills_unknown_and_allows_namespace_clone_when_unshare_allowed() {
            let progs =
                build(&spec(enforce(&["unshare"], Refuse::Kill), false, false)).expect("build");
            let mut probes = common_probes();
            // A namespace clone passes the filter; the kernel then decides (EPERM without
            // privileges, a child as root), but never a seccomp kill.
            probes.push(p(
                libc::SYS_clone,
                [0x4000_0000 | SIGCHLD, 0, 0, 0, 0, 0],
                Want::Any,
            ));
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
            probes.push(p(1000, [0; 6], Want::Any));
            let status = run_child(&progs, &probes, false);
            assert!(libc::WIFSIGNALED(status), "status {status:#x}");
            assert_eq!(libc::WTERMSIG(status), libc::SIGSYS);
        }

        #[test]
        fn allowed_seccomp_still_refuses_listeners() {
            let progs = build(&spec(
                enforce(&["seccomp"], Refuse::Errno(MARK)),
                false,
                false,
            ))
            .expect("build");
            let probes = [
                // Allowed: reaches the kernel, which rejects the NULL program with EFAULT.
                p(
                    libc::SYS_seccomp,
                    [1, 0, 0, 0, 0, 0],
                    Want::Err(libc::EFAULT),
                ),
                p(libc::SYS_seccomp, [1, 8, 0, 0, 0, 0], Want::Err(MARK)),
                // The kernel reads the operation and the flags as unsigned ints.
                p(
                    libc::SYS_seccomp,
                    [1 | HIGH, 8, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                p(
                    libc::SYS_seccomp,
                    [1, 8 | HIGH, 0, 0, 0, 0],
                    Want::Err(MARK),
                ),
                p(
                    libc::SYS_prctl,
                    [PR_SET_SECCOMP, 2, 0, 0, 0, 0],
                    Want::Err(libc::EFAULT),
                ),
            ];
            let status = run_child(&progs, &probes, false);
            assert_eq!(exit_code(status), Some(0), "status {status:#x}");
        }

        #[test]
        fn i386_abi_is_killed() {
            let progs = build(&spec(FilterMode::Record, false, false)).expect("build");
            let status = run_child(&progs, &[], true);
            assert!(libc::WIFSIGNALED(status), "status {status:#x}");
            assert_eq!(libc::WTERMSIG(status), libc::SIGSYS);
        }
    }
}
