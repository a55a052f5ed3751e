//! The tracer core shared by record and enforce (design.md section 2).
//!
//! [`Tracer::run`] spawns the workload with the seccomp programs it is given, then runs the
//! `waitpid(-1, __WALL)` loop (each wait collects every stop pending, all handled before the
//! next wait; the wait polls first unless the machine is crowded, see
//! [`spin`]): seccomp stops go to the [`Sink`], which answers with a
//! [`Verdict`]; fork/vfork/clone/exec events and exits keep the process table current
//! and are reported to the sink; signals pass through unchanged; group-stops are honoured with
//! `PTRACE_LISTEN`. The loop ends when no tracee is left (`ECHILD`), like `strace -f`.
//! This module knows nothing of profiles or traces: record and enforce differ only in the sink.

pub mod caps;
pub mod dac;
pub mod facilities;
pub mod gdb;
pub mod guard;
pub mod landlock;
pub mod memory;
pub mod procfs;
pub mod programs;
pub mod ptrace;
pub mod regs;
pub mod spawn;
pub mod spin;

use std::ffi::OsString;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

use nix::errno::Errno;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::Pid;

use crate::arch::Arch;
use crate::event::{ExitStatus, ProcInfo, SpawnVia};

pub use spawn::Program;

/// Tracer errors. `TraceeDied` is expected (a tracee was killed between two requests) and is
/// handled inside the loop; the others end the run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("tracee {tid} died")]
    TraceeDied { tid: i32 },
    #[error("{operation} on {tid} failed: {errno}")]
    Tracee {
        tid: i32,
        operation: &'static str,
        errno: Errno,
    },
    /// The workload could not be attached to: sbx itself is traced, or ptrace is restricted.
    #[error(
        "cannot trace the workload (PTRACE_SEIZE: {0}); is sbx itself running under a tracer (strace, gdb), or is ptrace restricted (kernel.yama.ptrace_scope = 3, an LSM policy, or a container's seccomp profile: Docker's and podman's default allow ptrace on Linux >= 4.8, a custom one needs ptrace allowed or --cap-add SYS_PTRACE)?"
    )]
    Attach(Errno),
    #[error("{cmd}: command not found")]
    CommandNotFound { cmd: String },
    #[error("{cmd}: cannot execute: {why}")]
    NotExecutable { cmd: String, why: &'static str },
    #[error("cannot set up the workload: {0}")]
    Setup(Errno),
    /// The kernel refused a feature sbx sets up in the workload before its exec.
    #[error("{}", refused_text(*.stage, *.errno))]
    Refused { stage: spawn::Stage, errno: Errno },
    #[error("waitpid failed: {0}")]
    Wait(Errno),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{0}")]
    Sink(String),
}

/// The one-line error of [`Error::Refused`]: what was refused, and what allows it.
fn refused_text(stage: spawn::Stage, errno: Errno) -> String {
    use spawn::Stage;
    match stage {
        Stage::SeccompFilter if errno == Errno::EACCES => format!(
            "the kernel refused sbx's seccomp filter ({errno}): without CAP_SYS_ADMIN it needs \
             no_new_privs on the workload"
        ),
        Stage::SeccompFilter => format!(
            "the kernel refused sbx's seccomp filter ({errno}): the seccomp profile sbx runs \
             under forbids installing another filter; allow seccomp(2) and \
             prctl(PR_SET_SECCOMP) in it (docker/podman run --security-opt seccomp=PROFILE)"
        ),
        Stage::NoNewPrivs => format!("the kernel refused no_new_privs for the workload ({errno})"),
        Stage::NoCore => format!("cannot set the workload's core file limit to 0 ({errno})"),
        Stage::Capabilities => format!(
            "cannot drop the workload's network capabilities ({errno}): capset or \
             PR_CAPBSET_DROP was refused"
        ),
        Stage::Exec => format!("the workload's exec failed ({errno})"),
    }
}

/// What the sink wants done with a stopped syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let it run; no exit stop.
    Allow,
    /// Let it run and stop at its exit ([`Sink::on_syscall_exit`]).
    AllowWatchExit,
    /// Skip it; it returns `-errno`.
    Deny(i32),
    /// Kill the whole tree before it runs.
    Kill,
    /// Leave the thread in its seccomp stop, undecided (ask mode: the user has not answered
    /// yet). The tracer goes on with every other thread and hands the same stop to
    /// [`Sink::on_syscall`] again once [`Sink::poll_held`] names the thread.
    Hold,
}

/// What [`Sink::poll_held`] has for the tracer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// Decide these held threads again (none: no decision yet).
    Threads(Vec<i32>),
    /// Kill the whole tree now (ask mode, answered "kill").
    KillTree,
    /// The sink waits for no decision: decide every held thread again.
    All,
}

/// A seccomp stop, as the sink sees it.
#[derive(Debug)]
pub struct SyscallStop<'a> {
    pub time_ns: u64,
    pub pid: i32,
    pub tid: i32,
    /// The ABI of the call (`AUDIT_ARCH_*`).
    pub audit_arch: u32,
    pub nr: u64,
    pub args: [u64; 6],
    pub proc: &'a ProcInfo,
    /// The thread's root directory as last read, kept across stops (see
    /// [`procfs::RootCache`] for when a sink may use it).
    pub root: &'a procfs::RootCache,
    /// The traced tree as the tracer knows it at this stop.
    pub tree: TreeView<'a>,
    /// The thread's stack pointer (0 at an exit stop).
    pub sp: u64,
    /// At an execve's stop: no other task of the tree can run until the exec is over (see
    /// `Tracer::others_stopped`), so the file the kernel execs is the one a path resolved
    /// now leads to. Always false at other stops.
    pub others_stopped: bool,
}

/// Which processes and threads are in the traced tree, as the tracer knows them: from their
/// first stop (or their creator's fork event) to the report of their death.
#[derive(Debug, Clone, Copy)]
pub struct TreeView<'a> {
    tasks: &'a crate::tid::TidMap<Task>,
    procs: &'a crate::tid::TidMap<Process>,
}

impl TreeView<'_> {
    /// Is `pid` a live process of the tree?
    pub fn has_process(&self, pid: i32) -> bool {
        self.procs.contains_key(&pid)
    }

    /// The process of live thread `tid`, if it is one of the tree's.
    pub fn process_of(&self, tid: i32) -> Option<i32> {
        self.tasks.get(&tid).map(|t| t.pid)
    }

    /// The number of live threads of process `pid` the tracer knows (0: not in the tree).
    pub fn threads(&self, pid: i32) -> usize {
        self.procs.get(&pid).map_or(0, |p| p.threads)
    }
}

impl SyscallStop<'_> {
    /// Whether the thread is still in its ptrace stop. A thread killed meanwhile (exit_group
    /// from a sibling, a SIGKILL) leaves the stop at once and never runs the syscall; what
    /// sbx then reads of it (`/proc/PID/cwd`, fds, memory) is gone, which must not be taken
    /// for a violation. Costs one ptrace request: ask only when about to report one.
    pub fn still_stopped(&self) -> bool {
        !matches!(
            ptrace::syscall_info(self.tid),
            Err(Error::TraceeDied { .. })
        )
    }
}

/// The seam between the tracer and record/enforce.
pub trait Sink {
    /// A seccomp stop: decide.
    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<Verdict, Error>;
    /// The exit of a syscall for which [`Verdict::AllowWatchExit`] was returned.
    /// Returning [`Verdict::Kill`] kills the tree before the workload runs on.
    fn on_syscall_exit(&mut self, stop: &SyscallStop<'_>, rval: i64) -> Result<Verdict, Error>;
    /// A new thread or process (`child`) created by `parent_tid`.
    fn on_spawn(
        &mut self,
        time_ns: u64,
        parent: &TaskRef<'_>,
        child: i32,
        thread: bool,
        via: SpawnVia,
    );
    /// The name the kernel gives the program thread `tid` is exec'ing (its new `comm`, see
    /// [`crate::decode::exec_comm`]), if the sink decoded that execve; called at the exec
    /// event, before [`Sink::on_exec`]. `None` makes the tracer read `/proc/PID/comm`.
    fn exec_comm(&self, _tid: i32) -> Option<Vec<u8>> {
        None
    }
    /// The file thread `tid`'s execve runs, if the sink decoded that execve and may report
    /// a program named by its path (see [`programs`]): called at the exec event, before
    /// [`Sink::on_exec`]. The tracer takes it for the new exe when the thread's root is `/`
    /// and the kernel runs that file itself (a native ELF program); otherwise, and on `None`,
    /// it reads `/proc/PID/exe`. A sink that decides on the exe (enforce) must answer `None`
    /// unless the file the kernel ran cannot differ from the one it checked: the path was read
    /// before the exec ran, so only when no other task could run between the check and the
    /// kernel's walk ([`SyscallStop::others_stopped`]) and the path was resolved afresh.
    fn exec_file(&self, _tid: i32) -> Option<ExecFile> {
        None
    }
    /// A successful exec; `proc` is already updated (new comm/exe/creds). [`Verdict::Kill`]:
    /// the program that started must not run (the whole tree is killed).
    fn on_exec(&mut self, time_ns: u64, task: &TaskRef<'_>, former_tid: Option<i32>) -> Verdict;
    /// What to do with the threads held by [`Verdict::Hold`]. Called from the wait loop only
    /// while some thread is held, between stops (`timeout` zero) and, when no stop is
    /// pending, with a `timeout` to wait in (a tracee stop may end the wait early: SIGCHLD is
    /// unblocked during a `ppoll`, see `sigchld_wakeups`).
    fn poll_held(&mut self, _timeout: std::time::Duration) -> Released {
        Released::All
    }
    /// The line of the violation the last [`Sink::on_syscall`] reported, if it reported one
    /// (taken: asked only while gdb is attached, to show gdb why its thread stopped).
    fn take_violation(&mut self) -> Option<String> {
        None
    }
    /// Called now and then from the wait loop (after every 256 stops) with the number of
    /// live processes, for a status line.
    fn tick(&mut self, _time_ns: u64, _processes: usize) {}

    /// The thread of the last [`Sink::on_syscall`] was resumed (or held, or killed, or the
    /// decision failed): work its decision did not need, done off the thread's way. Always
    /// called right after `on_syscall`, before the next stop is waited for.
    fn after_resume(&mut self) {}

    /// A thread (or, with `process`, the last thread of a process) is gone.
    /// Returning [`Verdict::Kill`] kills the rest of the tree (e.g. the process was killed
    /// in-kernel by the seccomp filter).
    fn on_exit(
        &mut self,
        time_ns: u64,
        task: &TaskRef<'_>,
        status: ExitStatus,
        process: bool,
    ) -> Verdict;
}

/// The file an execve runs, as a sink decoded it (see [`Sink::exec_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecFile {
    /// Absolute in the caller's root, every symlink resolved.
    pub path: Vec<u8>,
    /// The path as the execve gave it.
    pub named: Vec<u8>,
}

/// Identity of a task for sink callbacks.
#[derive(Debug)]
pub struct TaskRef<'a> {
    pub pid: i32,
    pub tid: i32,
    pub proc: &'a ProcInfo,
}

/// How the workload ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadExit {
    /// The root process's status.
    pub status: ExitStatus,
    /// True when sbx killed the tree (a kill verdict).
    pub killed_by_sbx: bool,
    /// Signal sbx itself received and forwarded, if any.
    pub forwarded: Option<i32>,
    /// sbx killed the tree because it was interrupted twice (a second Ctrl-C, a second
    /// SIGINT or SIGTERM) while the workload went on.
    pub interrupted: bool,
    /// sbx killed the tree when `--timeout` passed.
    pub timed_out: bool,
}

impl WorkloadExit {
    /// The shell convention: the exit code, or 128+N for death by signal N.
    pub fn code(&self) -> i32 {
        match self.status {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

#[derive(Debug)]
struct Task {
    pid: i32,
    /// Stopped at seccomp and resumed with PTRACE_SYSCALL: the next syscall stop is the exit.
    awaiting_exit: Option<(u32, u64, [u64; 6])>,
    root: procfs::RootCache,
}

impl Task {
    fn new(pid: i32) -> Task {
        Task {
            pid,
            awaiting_exit: None,
            root: procfs::RootCache::default(),
        }
    }
}

/// Whether a stopped call may change a root directory (chroot, pivot_root, setns, unshare,
/// namespace clones are gated or spawn; unknown numbers and foreign ABIs are not known not to).
fn may_change_root(audit_arch: u32, nr: u64) -> bool {
    let arch = Arch::native();
    audit_arch != arch.audit_arch()
        || arch.by_nr(nr).is_none_or(|d| {
            !matches!(
                d.class,
                crate::arch::Class::Free
                    | crate::arch::Class::Checked
                    | crate::arch::Class::Metadata
                    | crate::arch::Class::Creds
                    | crate::arch::Class::Memory
            )
        })
}

#[derive(Debug)]
struct Process {
    info: ProcInfo,
    threads: usize,
    /// Before its first exec, the root process is still sbx's child code.
    exec_seen: bool,
}

static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// SIGINTs and SIGTERMs sbx received, from the terminal or not: the second one kills the
/// tree (a workload that ignores the first must not hang the job).
static INTERRUPTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // A signal from the terminal (SI_KERNEL) reached the whole foreground process group,
    // workload included: forwarding it would deliver it twice.
    let code = if info.is_null() {
        0
    } else {
        // SAFETY: `info` is non-null and the kernel passes a valid siginfo_t to SA_SIGINFO
        // handlers for the duration of the call; reading si_code is a plain load from it.
        unsafe { (*info).si_code }
    };
    if code != libc::SI_KERNEL {
        PENDING_SIGNAL.store(sig, Ordering::SeqCst);
    }
    if sig == libc::SIGINT || sig == libc::SIGTERM {
        INTERRUPTS.fetch_add(1, Ordering::SeqCst);
    }
}

extern "C" fn on_sigchld(_: libc::c_int) {}

/// While a thread is held (ask mode), the wait loop sleeps in the sink's `poll_held` instead
/// of `waitpid`; a tracee stop must wake it. On: SIGCHLD gets a no-op handler (no
/// SA_RESTART, so it interrupts a `ppoll` that unblocks it) and is blocked everywhere else,
/// so one that comes between `waitpid(WNOHANG)` and the `ppoll` stays pending and ends the
/// `ppoll` at once. Off: back to the disposition and mask sbx had (by default: SIGCHLD
/// ignored, so a pending one is discarded and the blocking `waitpid` is not interrupted by
/// every stop).
fn sigchld_wakeups(saved: &mut Option<(SigAction, bool)>, on: bool) {
    let mut set = SigSet::empty();
    set.add(Signal::SIGCHLD);
    match (on, saved.take()) {
        (true, None) => {
            let act = SigAction::new(
                SigHandler::Handler(on_sigchld),
                SaFlags::empty(),
                SigSet::empty(),
            );
            // SAFETY: the handler does nothing (async-signal-safe); it exists only so that
            // SIGCHLD interrupts ppoll.
            let Ok(old) = (unsafe { signal::sigaction(Signal::SIGCHLD, &act) }) else {
                return;
            };
            let blocked = SigSet::thread_get_mask().is_ok_and(|m| m.contains(Signal::SIGCHLD));
            let _ = set.thread_block();
            *saved = Some((old, blocked));
        }
        (false, Some((old, blocked))) => {
            // SAFETY: puts back the disposition sbx had (default, or whatever it inherited).
            let _ = unsafe { signal::sigaction(Signal::SIGCHLD, &old) };
            if !blocked {
                let _ = set.thread_unblock();
            }
        }
        (_, state) => *saved = state,
    }
}

/// Set once `--timeout` has passed (SIGALRM from the interval timer).
static TIMED_OUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_alarm(_: libc::c_int) {
    TIMED_OUT.store(true, Ordering::SeqCst);
}

/// SIGALRM after `d` (ITIMER_REAL): it interrupts the wait (no SA_RESTART) and the loop kills
/// the tree. A fork child does not inherit the timer, and exec resets the handler.
fn arm_timeout(d: std::time::Duration) -> Result<(), Error> {
    let act = SigAction::new(
        SigHandler::Handler(on_alarm),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: `on_alarm` only stores to an atomic: async-signal-safe.
    unsafe { signal::sigaction(Signal::SIGALRM, &act) }.map_err(Error::Setup)?;
    let usec = |d: std::time::Duration| libc::timeval {
        // (Not naming time_t: musl's libc crate marks it deprecated, on 64-bit it is i64.)
        tv_sec: d.as_secs().try_into().unwrap_or(i64::MAX),
        tv_usec: d.subsec_micros().into(),
    };
    let it = libc::itimerval {
        it_interval: usec(std::time::Duration::ZERO),
        // A zero value would disarm it: the shortest timeout is one microsecond.
        it_value: usec(d.max(std::time::Duration::from_micros(1))),
    };
    // SAFETY: `it` is a live, initialized itimerval; the old value is not asked for.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } != 0 {
        return Err(Error::Setup(nix::errno::Errno::last()));
    }
    Ok(())
}

fn install_forwarding() -> Result<(), Error> {
    let act = SigAction::new(
        SigHandler::SigAction(on_signal),
        SaFlags::SA_SIGINFO,
        SigSet::empty(),
    );
    for s in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        // SAFETY: `on_signal` is async-signal-safe: it only reads the siginfo and stores to an
        // atomic. No SA_RESTART, so waitpid returns EINTR and the loop forwards promptly.
        unsafe { signal::sigaction(s, &act) }.map_err(Error::Setup)?;
    }
    Ok(())
}

/// Send signal `sig` (any number, realtime ones included) to process `pid`, on behalf of a
/// workload call sbx answered itself; errors are the call's business and ignored.
pub fn signal(pid: i32, sig: i32) {
    // SAFETY: kill takes a pid and a signal number, no pointers.
    unsafe { libc::kill(pid, sig) };
}

/// The tracer: one run of one workload.
#[derive(Debug)]
pub struct Tracer {
    start: Instant,
    tasks: crate::tid::TidMap<Task>,
    procs: crate::tid::TidMap<Process>,
    root: i32,
    root_status: Option<ExitStatus>,
    killing: bool,
    /// Threads left in their seccomp stop by [`Verdict::Hold`], with the call they stopped
    /// at.
    held: crate::tid::TidMap<(u32, u64, [u64; 6])>,
    /// New threads and processes whose first stop came before their creator's fork, vfork or
    /// clone event: left in that stop until the event names them (see `park`).
    parked: crate::tid::TidSet,
    /// vfork parents left in their vfork event stop, by the child they wait for (see
    /// `hold_vfork_parent`).
    vfork_parents: crate::tid::TidMap<i32>,
    /// Whether and how long to poll for the next stop before sleeping (see [`spin`]).
    spin: spin::SpinPolicy,
    /// Which files the kernel runs itself (see [`programs`]).
    programs: programs::Programs,
    /// The tree was killed on a second interrupt.
    interrupted: bool,
    /// The tree was killed when `--timeout` passed.
    timed_out: bool,
    /// `--gdb`: the gdb session (see [`gdb`]); `None` leaves every path as without it.
    gdb: Option<Box<gdb::Session>>,
}

impl Tracer {
    /// Run `argv` under the tracer with `programs` installed, reporting to `sink`.
    pub fn run(
        argv: &[OsString],
        programs: &[Program],
        sink: &mut dyn Sink,
    ) -> Result<WorkloadExit, Error> {
        Self::run_dropping(argv, programs, &[], sink)
    }

    /// [`Tracer::run`], the workload (when run as root) without the capabilities `drop_caps`
    /// ([`spawn::spawn`]).
    pub fn run_dropping(
        argv: &[OsString],
        programs: &[Program],
        drop_caps: &[u32],
        sink: &mut dyn Sink,
    ) -> Result<WorkloadExit, Error> {
        Self::run_with(argv, programs, drop_caps, None, None, sink)
    }

    /// [`Tracer::run_dropping`], and the whole tree killed once `timeout` has passed (sbx
    /// waits for every descendant, background ones included, as `strace -f` does: a build
    /// that leaves a daemon behind would otherwise keep it waiting).
    pub fn run_with(
        argv: &[OsString],
        programs: &[Program],
        drop_caps: &[u32],
        timeout: Option<std::time::Duration>,
        gdb: Option<gdb::Listener>,
        sink: &mut dyn Sink,
    ) -> Result<WorkloadExit, Error> {
        let Some(cmd) = argv.first() else {
            return Err(Error::Internal("empty command".into()));
        };
        let path = spawn::resolve_command(cmd)?;
        install_forwarding()?;
        if let Some(d) = timeout {
            arm_timeout(d)?;
        }
        // Orphans of the workload are re-parented to sbx, so none is left as a zombie.
        // SAFETY: PR_SET_CHILD_SUBREAPER takes an integer argument, no pointers.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let start = Instant::now();
        let spawned = spawn::spawn(&path, argv, programs, drop_caps)?;
        let root = spawned.pid;
        let info = ProcInfo {
            ppid: 0,
            comm: procfs::comm(root).into(),
            exe: procfs::exe(root).into(),
            creds: procfs::creds(root).unwrap_or_default(),
        };
        let mut t = Tracer {
            start,
            tasks: crate::tid::TidMap::from_iter([(root, Task::new(root))]),
            procs: crate::tid::TidMap::from_iter([(
                root,
                Process {
                    info,
                    threads: 1,
                    exec_seen: false,
                },
            )]),
            root,
            root_status: None,
            killing: false,
            held: Default::default(),
            parked: Default::default(),
            vfork_parents: Default::default(),
            spin: spin::SpinPolicy::new(
                spin::max_from_env(),
                std::thread::available_parallelism()
                    .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
            ),
            programs: programs::Programs::new(
                Arch::native().elf_machine(),
                programs::binfmt_handlers(),
            ),
            interrupted: false,
            timed_out: false,
            gdb: gdb.map(|l| Box::new(gdb::Session::new(l))),
        };
        let forwarded = t.wait_loop(sink)?;
        if let Some((stage, errno)) = spawn::exec_failure(&spawned.status_pipe) {
            let cmd = cmd.to_string_lossy().into_owned();
            if stage != spawn::Stage::Exec {
                return Err(Error::Refused {
                    stage,
                    errno: Errno::from_raw(errno),
                });
            }
            return Err(if errno == libc::ENOENT {
                Error::CommandNotFound { cmd }
            } else {
                Error::NotExecutable {
                    cmd,
                    why: errno_text(errno),
                }
            });
        }
        Ok(WorkloadExit {
            status: t.root_status.unwrap_or(ExitStatus::Signal(libc::SIGKILL)),
            killed_by_sbx: t.killing,
            forwarded,
            interrupted: t.interrupted,
            timed_out: t.timed_out,
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// How many stops the tracer may take one by one before it takes every pending stop at
    /// once (see `wait_loop_with`): a stopped tracee waits behind at most this many stops of
    /// others before it is in a batch, which is handled in order before the next wait.
    const DRAIN_EVERY: u32 = 16;

    fn wait_loop(&mut self, sink: &mut dyn Sink) -> Result<Option<i32>, Error> {
        let mut wakeups = None;
        let r = self.wait_loop_with(sink, &mut wakeups);
        sigchld_wakeups(&mut wakeups, false);
        r
    }

    fn wait_loop_with(
        &mut self,
        sink: &mut dyn Sink,
        wakeups: &mut Option<(SigAction, bool)>,
    ) -> Result<Option<i32>, Error> {
        let mut forwarded = None;
        let mut stops: u32 = 0;
        let mut idle = false;
        // Stops collected but not yet handled, in the order waitpid gave them.
        let mut batch = std::collections::VecDeque::new();
        // Stops taken one at a time since the last look for every pending one.
        let mut single: u32 = 0;
        loop {
            stops = stops.wrapping_add(1);
            // No status line while a question is on the terminal.
            if stops.is_multiple_of(256) && self.held.is_empty() {
                let now = self.now();
                sink.tick(now, self.procs.len());
            }
            let sig = PENDING_SIGNAL.swap(0, Ordering::SeqCst);
            if sig != 0 {
                forwarded = Some(sig);
                self.forward(sig);
            }
            if !self.killing && INTERRUPTS.load(Ordering::SeqCst) >= 2 {
                self.interrupted = true;
                self.kill_tree();
            }
            if !self.killing && TIMED_OUT.load(Ordering::SeqCst) {
                self.timed_out = true;
                self.kill_tree();
            }
            let st = match batch.pop_front() {
                Some(st) => st,
                None => {
                    let st = match self.wait_any(sink, wakeups, idle)? {
                        Ok(WaitStatus::StillAlive) => {
                            idle = true;
                            continue;
                        }
                        Ok(st) => st,
                        Err(Errno::EINTR) => continue,
                        Err(Errno::ECHILD) => {
                            if let Some(g) = self.gdb.as_mut() {
                                g.finish(self.root_status.unwrap_or(ExitStatus::Signal(9)));
                            }
                            return Ok(forwarded);
                        }
                        Err(e) => return Err(Error::Wait(e)),
                    };
                    idle = false;
                    // Every DRAIN_EVERY stops, take every other stop already pending too, and
                    // handle them all before looking again. waitpid(-1) picks among stopped
                    // tracees in a fixed order (the newest tracee first), so without this a
                    // tracee could wait forever behind others that keep stopping (a fork
                    // storm), as in tests/record.rs::parent_killed_while_forking_leaves_no_hang.
                    // Not at every stop: mostly nothing else is pending, and the look that
                    // finds so is one more system call per stop.
                    single += 1;
                    if single >= Self::DRAIN_EVERY {
                        single = 0;
                        while let Ok(more) = waitpid(
                            Pid::from_raw(-1),
                            Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
                        ) {
                            if more == WaitStatus::StillAlive {
                                break;
                            }
                            batch.push_back(more);
                        }
                    }
                    st
                }
            };
            let r = self.handle(st, sink);
            self.check(r)?;
            if self.gdb.is_some() {
                self.gdb_pump(None);
            }
        }
    }

    /// The next stop of any tracee: a blocking waitpid, or while a thread is held (ask mode)
    /// a look without blocking after giving the sink `poll_held` (with a timeout if the
    /// last look found nothing, `idle`).
    fn wait_any(
        &mut self,
        sink: &mut dyn Sink,
        wakeups: &mut Option<(SigAction, bool)>,
        idle: bool,
    ) -> Result<nix::Result<WaitStatus>, Error> {
        let gdb = self.gdb.as_ref().is_some_and(|g| g.connected());
        sigchld_wakeups(wakeups, !self.held.is_empty() || gdb);
        if gdb && self.held.is_empty() {
            return Ok(self.gdb_wait());
        }
        if self.held.is_empty() {
            return Ok(self.next_stop());
        }
        // Some thread waits for a decision (ask mode): the others keep running, so look for
        // their stops without blocking, and when none is pending wait for the decision until
        // a tracee stops (SIGCHLD ends the wait, see `sigchld_wakeups`).
        let timeout = if idle {
            std::time::Duration::from_millis(500)
        } else {
            std::time::Duration::ZERO
        };
        let tids: Vec<i32> = match sink.poll_held(timeout) {
            Released::Threads(t) => t,
            Released::All => self.held.keys().copied().collect(),
            Released::KillTree => {
                self.kill_tree();
                Vec::new()
            }
        };
        for tid in tids {
            let r = self.decide_held(tid, sink);
            self.check(r)?;
        }
        Ok(waitpid(
            Pid::from_raw(-1),
            Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
        ))
    }

    /// The next stop of any tracee: polled for during the adaptive window, then waited for.
    fn next_stop(&mut self) -> nix::Result<WaitStatus> {
        if self.spin.wants_load()
            && let Some(n) = procfs::runnable_tasks()
        {
            self.spin.note_load(n);
        }
        let window = self.spin.window();
        if !self.spin.times_waits() {
            // Sleeping mode: no poll, and no clock reads around the wait.
            let r = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL));
            self.spin.update(false, std::time::Duration::ZERO);
            return r;
        }
        let t0 = Instant::now();
        if !window.is_zero() {
            loop {
                match waitpid(
                    Pid::from_raw(-1),
                    Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
                ) {
                    Ok(WaitStatus::StillAlive) => {}
                    r => {
                        self.spin.update(true, t0.elapsed());
                        return r;
                    }
                }
                if t0.elapsed() >= window {
                    break;
                }
                // A runnable task on this CPU (perhaps the tracee) goes first.
                let _ = nix::sched::sched_yield();
            }
        }
        let r = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL));
        self.spin.update(false, t0.elapsed());
        r
    }

    /// Decide a held thread's stop again, if it is still the stop it was held in. A leader
    /// whose process exec'd from another thread now stands for the new program (the exec
    /// event comes through waitpid): it is left alone.
    fn decide_held(&mut self, tid: i32, sink: &mut dyn Sink) -> Result<(), Error> {
        let Some(call) = self.held.remove(&tid) else {
            return Ok(());
        };
        match ptrace::syscall_info(tid)? {
            ptrace::SyscallInfo::Seccomp { arch, nr, args, .. } if (arch, nr, args) == call => {
                self.seccomp_stop(tid, sink)
            }
            _ => Ok(()),
        }
    }

    /// A tracee that died between two requests is expected; any other failure ends the run,
    /// and must not leave a half-traced workload running.
    fn check(&mut self, r: Result<(), Error>) -> Result<(), Error> {
        match r {
            Ok(()) | Err(Error::TraceeDied { .. }) => Ok(()),
            Err(e) => {
                self.kill_tree();
                Err(e)
            }
        }
    }

    /// Forward a signal sbx received to every process of the tree.
    fn forward(&self, sig: i32) {
        let Ok(s) = Signal::try_from(sig) else { return };
        for &pid in self.procs.keys() {
            let _ = signal::kill(Pid::from_raw(pid), s);
        }
    }

    /// SIGKILL every process of the tree. Stopped tracees die without running another
    /// instruction; EXITKILL covers the case where sbx itself dies.
    fn kill_tree(&mut self) {
        self.killing = true;
        for &pid in self.procs.keys().chain(self.parked.iter()) {
            let _ = signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    /// The first stop of a thread sbx does not know yet: its creator's fork/vfork/clone
    /// event is on its way (the creator stops for it right after the clone), and will tell
    /// who the child is without reading `/proc/TID/status` (a third of what a fork costs
    /// sbx). Until then the child stays in its stop, so nothing it does goes unattributed.
    /// The creator skips the event only when it is dying (a fatal signal): its exit then
    /// adopts every parked child from `/proc` (`adopt_parked`). True when parked.
    fn park(&mut self, tid: i32) -> bool {
        if self.tasks.contains_key(&tid) || self.killing {
            return false;
        }
        self.parked.insert(tid);
        true
    }

    /// Take in every parked child as `ensure_task` does, and let it run.
    fn adopt_parked(&mut self) {
        for tid in std::mem::take(&mut self.parked) {
            self.ensure_task(tid);
            let _ = self.resume(tid, None);
        }
    }

    fn ensure_task(&mut self, tid: i32) {
        // A new child's first stop can arrive before its parent's fork event: adopt it with
        // the identity /proc gives (thread group, parent); the fork event confirms it. A child
        // that has not exec'd yet is its parent's copy: take comm, exe and creds from there.
        // See: tests/record.rs::deep_process_tree_with_parent_links
        if let std::collections::hash_map::Entry::Vacant(slot) = self.tasks.entry(tid) {
            let (tgid, ppid) = procfs::status_ids(tid).unwrap_or((tid, 0));
            slot.insert(Task::new(tgid));
            let inherited = self.procs.get(&ppid).map(|p| p.info.clone());
            let p = self.procs.entry(tgid).or_insert_with(|| Process {
                info: match inherited {
                    Some(mut info) => {
                        info.ppid = ppid;
                        info
                    }
                    None => ProcInfo {
                        ppid,
                        comm: procfs::comm(tgid).into(),
                        exe: procfs::exe(tgid).into(),
                        creds: procfs::creds(tgid).unwrap_or_default(),
                    },
                },
                threads: 0,
                exec_seen: true,
            });
            p.threads += 1;
            if self.killing {
                let _ = signal::kill(Pid::from_raw(tid), Signal::SIGKILL);
            }
        }
    }

    fn handle(&mut self, st: WaitStatus, sink: &mut dyn Sink) -> Result<(), Error> {
        match st {
            WaitStatus::Exited(pid, code) => self.gone(pid.as_raw(), ExitStatus::Code(code), sink),
            WaitStatus::Signaled(pid, sig, _) => {
                self.gone(pid.as_raw(), ExitStatus::Signal(sig as i32), sink)
            }
            WaitStatus::PtraceEvent(pid, sig, event) => {
                let tid = pid.as_raw();
                if event == libc::PTRACE_EVENT_STOP && sig == Signal::SIGTRAP && self.park(tid) {
                    return Ok(());
                }
                self.ensure_task(tid);
                self.event(tid, sig, event, sink)
            }
            WaitStatus::PtraceSyscall(pid) => {
                let tid = pid.as_raw();
                self.ensure_task(tid);
                self.syscall_exit(tid, sink)
            }
            WaitStatus::Stopped(pid, sig) => {
                // Signal-delivery-stop: pass the signal on unchanged (or to gdb).
                let tid = pid.as_raw();
                self.ensure_task(tid);
                if let Some(g) = self.gdb.as_mut()
                    && !self.killing
                    && g.target.signal(tid, sig)
                {
                    return Ok(());
                }
                self.resume(tid, Some(sig))
            }
            WaitStatus::Continued(_) | WaitStatus::StillAlive => Ok(()),
        }
    }

    fn event(
        &mut self,
        tid: i32,
        sig: Signal,
        event: i32,
        sink: &mut dyn Sink,
    ) -> Result<(), Error> {
        match event {
            libc::PTRACE_EVENT_SECCOMP => self.seccomp_stop(tid, sink),
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                let child = i32::try_from(ptrace::event_msg(tid)?)
                    .map_err(|_| Error::Internal("child tid out of range".into()))?;
                self.spawned(tid, child, event, sink);
                if self.parked.remove(&child) {
                    // Its first stop came before this event (see `park`).
                    let _ = self.resume(child, None);
                }
                // A parent gdb sees is not held here: gdb may have to stop it (an interrupt
                // is not reported for a thread already in a stop).
                if event == libc::PTRACE_EVENT_VFORK
                    && !self.gdb.as_ref().is_some_and(|g| g.target.sees(tid))
                    && self.hold_vfork_parent(tid, child)
                {
                    return Ok(());
                }
                self.resume(tid, None)
            }
            libc::PTRACE_EVENT_EXEC => {
                // The event message is the tid that called execve; only a process with other
                // threads can have exec'd from one of them. Every thread that can run was seen
                // (each starts in a stop sbx handles), so one known thread is the caller.
                let pid = self.tasks.get(&tid).map_or(tid, |t| t.pid);
                let former = if self.procs.get(&pid).is_some_and(|p| p.threads == 1) {
                    tid
                } else {
                    i32::try_from(ptrace::event_msg(tid)?).unwrap_or(tid)
                };
                let first = self.gdb.is_some()
                    && pid == self.root
                    && self.procs.get(&pid).is_some_and(|p| !p.exec_seen);
                self.exec(tid, former, sink);
                if first && !self.killing {
                    self.gdb_attach(tid);
                }
                // A parent held under the leader's tid is gone if another thread exec'd (that
                // thread has the tid now and is not in a vfork stop): never resume it.
                self.vfork_parents.retain(|_, parent| *parent != tid);
                let r = self.resume(tid, None);
                self.release_vfork_parent(former);
                r
            }
            // Only with gdb (see `gdb_attach`): a vfork parent gdb sees may use its memory
            // alone again, which gdb is told.
            libc::PTRACE_EVENT_VFORK_DONE
                if self
                    .gdb
                    .as_mut()
                    .is_some_and(|g| g.target.vfork_done_stop(tid)) =>
            {
                Ok(())
            }
            libc::PTRACE_EVENT_STOP => {
                // gdb's interrupt, or any stop of a thread gdb wants stopped (a group-stop
                // too): it stays in this stop.
                if let Some(g) = self.gdb.as_mut()
                    && g.target.interrupted(tid)
                {
                    return Ok(());
                }
                match sig {
                    // Group-stop: stay stopped (job control works) but keep reporting.
                    Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU => {
                        ptrace::listen(tid)
                    }
                    // The initial stop of an auto-attached child, or an interrupt.
                    _ => self.resume(tid, None),
                }
            }
            _ => self.resume(tid, None),
        }
    }

    /// Leave a vfork parent in its event stop until its child execs or dies. The kernel
    /// would not let it run before then anyway (it waits for the child to give up the
    /// memory they share), so resuming it at once only costs the parent a wakeup and a sleep
    /// more per vfork. True when held: the child has not exited (`waitid` without reaping),
    /// so its exec or its death, which sbx sees, will release the parent. A child whose exit
    /// sbx already took is no longer sbx's to wait for (ECHILD): the parent runs at once.
    fn hold_vfork_parent(&mut self, parent: i32, child: i32) -> bool {
        // A traced child's stops are reported even without WSTOPPED: its first stop, usually
        // pending by now, means alive too.
        let alive = matches!(
            waitid(
                Id::Pid(Pid::from_raw(child)),
                WaitPidFlag::WEXITED
                    | WaitPidFlag::WNOHANG
                    | WaitPidFlag::WNOWAIT
                    | WaitPidFlag::__WALL,
            ),
            Ok(WaitStatus::StillAlive
                | WaitStatus::Stopped(..)
                | WaitStatus::PtraceEvent(..)
                | WaitStatus::PtraceSyscall(..))
        );
        if self.killing || !alive {
            return false;
        }
        self.vfork_parents.insert(child, parent);
        true
    }

    /// Can no task of the tree but `tid` run before `tid`'s current call is over? True when
    /// every other known task is a vfork parent held in its event stop (sbx releases it only
    /// at its child's exec event or death), no thread is held for a question (ask mode may
    /// resume those while the call runs) and no child is parked (adopting one resumes it).
    /// A child sbx has not seen yet starts in a stop of its own. Every other task counts as
    /// running, even one blocked in a call or whose stop sbx has not collected yet.
    fn others_stopped(&self, tid: i32) -> bool {
        self.held.is_empty()
            && self.parked.is_empty()
            && self.tasks.len() <= 1 + self.vfork_parents.len()
            && self
                .tasks
                .keys()
                .all(|&t| t == tid || self.vfork_parents.values().any(|&p| p == t))
    }

    /// Resume the vfork parent waiting for `child`, if one is held.
    fn release_vfork_parent(&mut self, child: i32) {
        if let Some(parent) = self.vfork_parents.remove(&child) {
            let _ = self.resume(parent, None);
        }
    }

    /// Resume `tid` (`PTRACE_CONT` with `sig`), unless gdb wants it stopped or stepping.
    fn resume(&mut self, tid: i32, sig: Option<Signal>) -> Result<(), Error> {
        if let Some(g) = self.gdb.as_mut() {
            match g.target.hold(tid, sig) {
                gdb::target::Hold::Keep => return Ok(()),
                gdb::target::Hold::Step => return ptrace::step(tid, sig),
                gdb::target::Hold::Cont => {}
            }
        }
        ptrace::cont(tid, sig)
    }

    /// The root's first program is about to run: wait for gdb to connect.
    fn gdb_attach(&mut self, root: i32) {
        let Some(g) = self.gdb.as_mut() else { return };
        let give_up = || INTERRUPTS.load(Ordering::SeqCst) > 0 || TIMED_OUT.load(Ordering::SeqCst);
        if let Err(e) = g.attach(root, &give_up) {
            eprintln!("sbx: gdb: {e}");
            self.gdb = None;
            self.kill_tree();
            return;
        }
        // gdb is told when a vfork parent it sees has its memory to itself again (it keeps
        // breakpoints out of the memory the child borrows until then). Processes made from
        // now on inherit the option.
        if let Err(e) = ptrace::set_options(
            root,
            spawn::options() | nix::sys::ptrace::Options::PTRACE_O_TRACEVFORKDONE,
        ) {
            eprintln!("sbx: gdb: {e}; vfork children will keep gdb's breakpoints out");
        }
    }

    /// With gdb connected: the next stop if one is pending, else what gdb sent (up to half a
    /// second, or until a tracee stops); `StillAlive` when no stop was taken.
    fn gdb_wait(&mut self) -> nix::Result<WaitStatus> {
        match waitpid(
            Pid::from_raw(-1),
            Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
        ) {
            Ok(WaitStatus::StillAlive) => {}
            r => return r,
        }
        let out = self.gdb.as_mut().map_or(gdb::Outcome::Continue, |g| {
            g.poll(std::time::Duration::from_millis(500))
        });
        self.gdb_pump(Some(out));
        Ok(WaitStatus::StillAlive)
    }

    /// Report what is due to gdb, and act on what gdb asked (`out`, from a poll).
    fn gdb_pump(&mut self, out: Option<gdb::Outcome>) {
        let Some(g) = self.gdb.as_mut() else { return };
        let out = match out {
            Some(gdb::Outcome::Continue) | None => g.pump(),
            Some(o) => o,
        };
        let kill = std::mem::take(&mut g.target.kill);
        match out {
            gdb::Outcome::Continue => {}
            gdb::Outcome::Detach => self.gdb = None,
            gdb::Outcome::Kill => {
                self.gdb = None;
                self.kill_tree();
            }
        }
        if kill && !self.killing {
            self.kill_tree();
        }
    }

    fn spawned(&mut self, parent_tid: i32, child: i32, event: i32, sink: &mut dyn Sink) {
        let Some(ppid) = self.tasks.get(&parent_tid).map(|t| t.pid) else {
            return;
        };
        // Fork and vfork events are processes by definition (the kernel reports
        // PTRACE_EVENT_CLONE for everything else, threads included): only then ask /proc.
        let thread = event == libc::PTRACE_EVENT_CLONE && procfs::in_thread_group(ppid, child);
        let via = match event {
            libc::PTRACE_EVENT_FORK => SpawnVia::Fork,
            libc::PTRACE_EVENT_VFORK => SpawnVia::Vfork,
            _ => SpawnVia::Clone,
        };
        let parent_info = self
            .procs
            .get(&ppid)
            .map(|p| p.info.clone())
            .unwrap_or_default();
        // The child may already be known (its first stop came first): fix its identity.
        if let Some(old) = self.tasks.get(&child).map(|t| t.pid)
            && old != (if thread { ppid } else { child })
        {
            self.drop_thread(old, false);
        }
        let child_pid = if thread { ppid } else { child };
        // The child starts in its creator's root. Taking the creator's cached root is as
        // safe as the creator using it: the child's task is in the table from now on, so the
        // next invalidation (a root-changing call's entry or exit) empties it too.
        let mut task = Task::new(child_pid);
        if let Some(creator) = self.tasks.get(&parent_tid) {
            task.root = procfs::RootCache::inherit(&creator.root);
        }
        let newly = self.tasks.insert(child, task).is_none();
        if let Some(g) = self.gdb.as_mut() {
            let kind = match (thread, via) {
                (true, _) => gdb::target::Born::Thread,
                (false, SpawnVia::Vfork) => gdb::target::Born::Vfork,
                (false, _) => gdb::target::Born::Fork,
            };
            g.target.added(parent_tid, child, child_pid, kind);
        }
        if thread {
            if newly && let Some(p) = self.procs.get_mut(&ppid) {
                p.threads += 1;
            }
        } else {
            let mut info = parent_info.clone();
            info.ppid = ppid;
            let p = self.procs.entry(child).or_insert_with(|| Process {
                info: info.clone(),
                threads: 0,
                exec_seen: true,
            });
            p.info = info;
            if newly {
                p.threads += 1;
            }
        }
        let now = self.now();
        sink.on_spawn(
            now,
            &TaskRef {
                pid: ppid,
                tid: parent_tid,
                proc: &parent_info,
            },
            child,
            thread,
            via,
        );
        if self.killing {
            let _ = signal::kill(Pid::from_raw(child), Signal::SIGKILL);
        }
    }

    fn exec(&mut self, tid: i32, former: i32, sink: &mut dyn Sink) {
        let pid = self.tasks.get(&tid).map(|t| t.pid).unwrap_or(tid);
        // The caller's root, while its task is still there: a path it decoded names the file
        // as sbx sees it only if that root is sbx's.
        let root_is_ours = self
            .tasks
            .get(&former)
            .is_some_and(|t| t.root.known() == Some(b"/".as_slice()));
        // After a non-leader exec the execing thread took the leader's tid; all other threads
        // are gone (the kernel reports no exit for the former tid).
        if former != tid
            && self.tasks.remove(&former).is_some()
            && let Some(p) = self.procs.get_mut(&pid)
        {
            p.threads = p.threads.saturating_sub(1);
        }
        if let Some(t) = self.tasks.get_mut(&tid) {
            t.awaiting_exit = None;
        }
        // A leader held in a stop is gone when another thread execs (it takes its tid).
        self.held.remove(&tid);
        self.held.remove(&former);
        // The tree is being killed (a violation, an in-kernel kill, a timeout): the program
        // never runs, and is not judged, as no stop is while killing (`seccomp_stop`). Judging
        // it would report a false "swapped during exec": a dying process's `/proc/PID/exe`
        // reads as nothing (tests/enforce.rs::in_kernel_kill_kills_the_rest_of_the_tree saw it
        // when a sibling's exec event came after the kill).
        if self.killing {
            let _ = signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            return;
        }
        if let Some(g) = self.gdb.as_mut() {
            g.target.exec(pid, tid);
        }
        let Some(p) = self.procs.get_mut(&pid) else {
            return;
        };
        p.exec_seen = true;
        // The name the program was started by, as the kernel derives it, saves opening
        // `/proc/PID/comm` (a third of the work of an exec event).
        p.info.comm = sink
            .exec_comm(former)
            .unwrap_or_else(|| procfs::comm(pid))
            .into();
        // The program: the file the execve named when the kernel runs that file itself, which
        // saves a `/proc/PID/exe` readlink (see `programs`); else the kernel's answer.
        let named = sink
            .exec_file(former)
            .filter(|_| root_is_ours)
            .and_then(|f| Some((self.programs.native_binary(&f.path, &f.named)?, f.path)));
        let (mode, exe) = match named {
            Some((mode, path)) => (Some(mode), path),
            None => {
                let exe = procfs::exe(pid);
                (procfs::mode(&exe), exe)
            }
        };
        p.info.exe = exe.into();
        // Only a set-user-ID or set-group-ID program changes the ids at exec: read them again
        // only then (or when the program cannot be looked at).
        if mode.is_none_or(|m| m & 0o6000 != 0)
            && let Some(c) = procfs::creds(pid)
        {
            p.info.creds = c;
        }
        let info = p.info.clone();
        let now = self.now();
        let former_tid = (former != tid).then_some(former);
        let verdict = sink.on_exec(
            now,
            &TaskRef {
                pid,
                tid,
                proc: &info,
            },
            former_tid,
        );
        if verdict == Verdict::Kill && !self.killing {
            self.kill_tree();
        }
    }

    fn seccomp_stop(&mut self, tid: i32, sink: &mut dyn Sink) -> Result<(), Error> {
        let (audit_arch, nr, args, sp) = match ptrace::syscall_info(tid)? {
            ptrace::SyscallInfo::Seccomp {
                arch, nr, args, sp, ..
            } => (arch, nr, args, sp),
            _ => return self.resume(tid, None),
        };
        let pid = self.tasks.get(&tid).map(|t| t.pid).unwrap_or(tid);
        let Some(p) = self.procs.get(&pid) else {
            return self.resume(tid, None);
        };
        // The root before its first exec is still sbx's own child code (installing filters);
        // only its execve is the workload's.
        let is_exec = Arch::native().by_nr(nr).is_some_and(|d| d.name == "execve");
        if !p.exec_seen && !is_exec && audit_arch == Arch::native().audit_arch() {
            return self.resume(tid, None);
        }
        if self.killing {
            let _ = regs::skip_syscall(tid, -i64::from(libc::EPERM));
            let _ = signal::kill(Pid::from_raw(tid), Signal::SIGKILL);
            return Ok(());
        }
        if may_change_root(audit_arch, nr) {
            self.forget_roots();
        }
        let (Some(p), Some(task)) = (self.procs.get(&pid), self.tasks.get(&tid)) else {
            return self.resume(tid, None);
        };
        let stop = SyscallStop {
            time_ns: self.now(),
            pid,
            tid,
            audit_arch,
            nr,
            args,
            proc: &p.info,
            root: &task.root,
            tree: TreeView {
                tasks: &self.tasks,
                procs: &self.procs,
            },
            sp,
            others_stopped: is_exec && self.others_stopped(tid),
        };
        // What the decision left for later is done now whatever happens: before any other
        // decision (a remembered answer must not outlive a change decided after it).
        let verdict = match sink.on_syscall(&stop) {
            Ok(v) => v,
            Err(e) => {
                sink.after_resume();
                return Err(e);
            }
        };
        if matches!(verdict, Verdict::Kill | Verdict::Deny(_))
            && self.gdb.as_ref().is_some_and(|g| g.target.sees(tid))
            && self.gdb_violation(tid, verdict, sink)
        {
            sink.after_resume();
            return Ok(());
        }
        let applied = self.apply(tid, verdict, (audit_arch, nr, args));
        sink.after_resume();
        applied
    }

    /// A violation at `tid`'s seccomp stop while gdb sees the thread: gdb gets a SIGSYS stop
    /// with the violation line. Kill: the call is skipped and the tree killed only when gdb
    /// resumes the thread (true: done here). Deny goes on as without gdb (false), the thread
    /// then held for gdb.
    fn gdb_violation(&mut self, tid: i32, verdict: Verdict, sink: &mut dyn Sink) -> bool {
        let Some(line) = sink.take_violation() else {
            return false;
        };
        let kill = verdict == Verdict::Kill;
        if kill && regs::skip_syscall(tid, -i64::from(libc::EPERM)).is_err() {
            return false;
        }
        if let Some(g) = self.gdb.as_mut() {
            g.target.violation(tid, line, kill);
        }
        kill
    }

    fn apply(
        &mut self,
        tid: i32,
        verdict: Verdict,
        call: (u32, u64, [u64; 6]),
    ) -> Result<(), Error> {
        match verdict {
            Verdict::Allow => self.resume(tid, None),
            Verdict::AllowWatchExit => {
                if let Some(t) = self.tasks.get_mut(&tid) {
                    t.awaiting_exit = Some(call);
                }
                ptrace::syscall(tid)
            }
            Verdict::Deny(errno) => {
                regs::skip_syscall(tid, -i64::from(errno))?;
                self.resume(tid, None)
            }
            Verdict::Hold => {
                self.held.insert(tid, call);
                Ok(())
            }
            Verdict::Kill => {
                // The syscall must never run: skip it first, then kill everything.
                let _ = regs::skip_syscall(tid, -i64::from(libc::EPERM));
                self.kill_tree();
                Ok(())
            }
        }
    }

    fn syscall_exit(&mut self, tid: i32, sink: &mut dyn Sink) -> Result<(), Error> {
        let call = self
            .tasks
            .get_mut(&tid)
            .and_then(|t| t.awaiting_exit.take());
        let Some((audit_arch, nr, args)) = call else {
            return self.resume(tid, None);
        };
        let rval = match ptrace::syscall_info(tid)? {
            ptrace::SyscallInfo::Exit { rval, .. } => rval,
            _ => return self.resume(tid, None),
        };
        let pid = self.tasks.get(&tid).map(|t| t.pid).unwrap_or(tid);
        let Some(p) = self.procs.get_mut(&pid) else {
            return self.resume(tid, None);
        };
        if Arch::native()
            .by_nr(nr)
            .is_some_and(|d| d.class == crate::arch::Class::Creds)
            && let Some(c) = procfs::creds(pid)
        {
            p.info.creds = c;
        }
        // The call ran: a root it changed is visible only now.
        if may_change_root(audit_arch, nr) {
            self.forget_roots();
        }
        let (Some(p), Some(task)) = (self.procs.get(&pid), self.tasks.get(&tid)) else {
            return self.resume(tid, None);
        };
        let stop = SyscallStop {
            time_ns: self.now(),
            pid,
            tid,
            audit_arch,
            nr,
            args,
            proc: &p.info,
            root: &task.root,
            tree: TreeView {
                tasks: &self.tasks,
                procs: &self.procs,
            },
            sp: 0,
            others_stopped: false,
        };
        match sink.on_syscall_exit(&stop, rval)? {
            Verdict::Kill => {
                self.kill_tree();
                Ok(())
            }
            _ => self.resume(tid, None),
        }
    }

    fn gone(&mut self, tid: i32, status: ExitStatus, sink: &mut dyn Sink) -> Result<(), Error> {
        self.held.remove(&tid);
        if !self.vfork_parents.is_empty() {
            // A held parent that died (SIGKILL ends a ptrace stop) is not resumed.
            self.vfork_parents.retain(|_, parent| *parent != tid);
            self.release_vfork_parent(tid);
        }
        // A parked child killed before its creator's event: nothing to report.
        if self.parked.remove(&tid) {
            return Ok(());
        }
        // A creator that died between its clone and its event leaves its child parked.
        if !self.parked.is_empty() {
            self.adopt_parked();
        }
        if let Some(g) = self.gdb.as_mut() {
            g.target.gone(tid, status);
        }
        let Some(task) = self.tasks.remove(&tid) else {
            // Not a tracee (e.g. an orphan reparented to sbx that was never traced): reaped.
            return Ok(());
        };
        let pid = task.pid;
        let last = self.procs.get(&pid).is_none_or(|p| p.threads <= 1);
        let info = self
            .procs
            .get(&pid)
            .map(|p| p.info.clone())
            .unwrap_or_default();
        let now = self.now();
        let verdict = sink.on_exit(
            now,
            &TaskRef {
                pid,
                tid,
                proc: &info,
            },
            status,
            last && tid == pid,
        );
        // The sink judged this death a violation (a process killed in-kernel by the seccomp
        // filter): the rest of the tree must not run on.
        if verdict == Verdict::Kill && !self.killing {
            self.kill_tree();
        }
        if tid == pid && pid == self.root {
            self.root_status = Some(status);
        }
        self.drop_thread(pid, true);
        Ok(())
    }

    /// Every thread's cached root may be stale (see [`procfs::RootCache`]).
    fn forget_roots(&mut self) {
        for t in self.tasks.values_mut() {
            t.root.clear();
        }
    }

    fn drop_thread(&mut self, pid: i32, _exited: bool) {
        if let Some(p) = self.procs.get_mut(&pid) {
            p.threads = p.threads.saturating_sub(1);
            if p.threads == 0 {
                self.procs.remove(&pid);
            }
        }
    }
}

fn errno_text(errno: i32) -> &'static str {
    match errno {
        libc::EACCES => "permission denied",
        libc::ENOEXEC => "exec format error",
        libc::EISDIR => "is a directory",
        libc::ENOTDIR => "not a directory",
        _ => "exec failed",
    }
}
