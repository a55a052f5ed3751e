//! The debuggee as gdb sees it: the `gdbstub` target, and the per-thread "stopped for gdb"
//! state the tracer loop consults before it resumes a thread.
//!
//! gdb sees the workload's first program and, as gdb's `follow-fork-mode` and
//! `detach-on-fork` decide, the processes it forks: each fork, vfork and exec of a process gdb
//! sees is a stop reported to gdb ([`Reason`]), and gdb detaches what it does not follow
//! ([`Debuggee::detach_process`]). gdbstub itself serves one process; [`super::wire`] gives
//! each thread its real process on the wire (tids are unique on the machine, so a thread id is
//! enough to name one). A thread is
//! [`Run::Running`], [`Run::Stepping`], [`Run::Stopping`] (asked to stop with
//! `PTRACE_INTERRUPT`) or [`Run::Stopped`] (left in a ptrace stop, not resumed until gdb
//! resumes it). All-stop: when one thread has something to report ([`Reason`]), every other
//! running thread is interrupted, and the report goes out once all are stopped. Stops sbx
//! makes for the sandbox are not reported: the tracer handles them and resumes the thread
//! through [`Debuggee::hold`], which leaves a thread that gdb wants stopped where it is.
//!
//! Never waits for a tracee: the tracer loop owns every wait.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use gdbstub::common::{Signal as GdbSignal, Tid};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::auxv::{Auxv, AuxvOps};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, SwBreakpoint, SwBreakpointOps,
};
use gdbstub::target::ext::exec_file::{ExecFile, ExecFileOps};
use gdbstub::target::ext::extended_mode::{
    Args, AttachKind, CurrentActivePid, CurrentActivePidOps, ExtendedMode, ExtendedModeOps,
    ShouldTerminate,
};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use nix::sys::signal::Signal;

use super::regs;
use super::wire::Note;
use crate::event::ExitStatus;
use crate::tracer::ptrace;

/// Where a gdb-visible thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    Running,
    /// Resumed with `PTRACE_SINGLESTEP` for gdb: sandbox stops on the way resume it the same.
    Stepping,
    /// `PTRACE_INTERRUPT` sent; its next stop leaves it stopped.
    Stopping,
    /// In a ptrace stop, left there for gdb.
    Stopped,
}

/// Why a thread stopped for gdb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A signal on its way to the thread (host number).
    Signal(i32),
    /// A breakpoint gdb set (the PC is back at its address).
    Break,
    /// A single step is done.
    Step,
    /// gdb's Ctrl-C.
    Interrupt,
    /// A sandbox violation: the call was skipped; `kill`: the tree dies when gdb resumes.
    Violation { line: String, kill: bool },
    /// The thread forked (or vforked) process `child`, stopped too.
    Fork { child: i32, vfork: bool },
    /// The vfork child of the thread exec'd or exited: their memory is no longer shared.
    VforkDone,
    /// The thread's process runs program `path` now.
    Exec(Vec<u8>),
    /// Process `pid` (the thread was its last) ended.
    Exited { pid: i32, status: ExitStatus },
}

/// A stop waiting to be reported to gdb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub tid: i32,
    pub reason: Reason,
}

/// What was reported to gdb of a thread's last stop, to resume it as gdb asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Reported {
    /// The signal number gdb was given.
    gdb: u8,
    /// The signal that stopped the thread, to deliver if gdb passes `gdb` on.
    host: Option<i32>,
    /// sbx's own stop (breakpoint, step, Ctrl-C, violation): never delivered.
    synthetic: bool,
    /// A violation in kill mode: resuming it kills the tree.
    kill: bool,
}

/// How a thread gdb sees came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Born {
    /// A thread of its creator's process.
    Thread,
    /// A process with a copy of its parent's memory.
    Fork,
    /// A process borrowing its parent's memory until it execs or exits.
    Vfork,
}

#[derive(Debug)]
struct View {
    /// The process whose memory the thread runs in: its own, or a vfork parent's.
    pid: i32,
    /// Its own process.
    tgid: i32,
    run: Run,
    /// A signal the thread was stopped with while gdb was stopping everything, delivered when
    /// it is resumed.
    pending: Option<i32>,
    reported: Option<Reported>,
}

/// How gdb wants a thread resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Continue(Option<u8>),
    Step(Option<u8>),
}

/// How the tracer must resume a thread it would have continued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// As without gdb: `PTRACE_CONT`.
    Cont,
    /// gdb is stepping it: `PTRACE_SINGLESTEP`.
    Step,
    /// Leave it stopped.
    Keep,
}

/// The gdbstub target.
#[derive(Debug, Default)]
pub struct Debuggee {
    tasks: BTreeMap<i32, View>,
    /// Per memory (the `pid` of [`View`]): breakpoint address -> the bytes the breakpoint
    /// instruction replaced. gdb sets breakpoints per process, as in gdbserver.
    inserted: BTreeMap<i32, BTreeMap<u64, Vec<u8>>>,
    /// The process gdb's memory, breakpoint and auxv requests are for (its last `Hg`).
    current: i32,
    events: VecDeque<Event>,
    /// gdb wants every thread stopped (a stop is being reported, or gdb is looking).
    halted: bool,
    plan: BTreeMap<i32, Plan>,
    locked: bool,
    /// A violation stop in kill mode was resumed: the tracer kills the tree.
    pub kill: bool,
    /// The process gdb attached to.
    root: i32,
    /// vfork children gdb sees, with the thread that waits for them: the kernel lets that
    /// thread stop only once its child execs or exits, so until then it counts as stopped.
    vfork_waits: BTreeMap<i32, i32>,
    /// Threads gdb left stopped at its last resume (scheduler locking, `schedule-multiple
    /// off`, a step over a breakpoint): their queued stops wait until gdb resumes them.
    held_back: BTreeSet<i32>,
    /// The threads gdb named at its last resume when it resumed only those (None: all).
    /// A process's end waits, as gdbserver's does, until gdb resumes that process.
    resumed_only: Option<BTreeSet<i32>>,
}

fn tid_of(t: Tid) -> i32 {
    i32::try_from(t.get()).unwrap_or(0)
}

fn gdb_tid(tid: i32) -> Option<Tid> {
    usize::try_from(tid).ok().and_then(Tid::new)
}

/// Host signal numbers and gdb's (`include/gdb/signals.def`): equal up to 6, then apart.
const SIGNALS: &[(Signal, u8)] = &[
    (Signal::SIGHUP, 1),
    (Signal::SIGINT, 2),
    (Signal::SIGQUIT, 3),
    (Signal::SIGILL, 4),
    (Signal::SIGTRAP, 5),
    (Signal::SIGABRT, 6),
    (Signal::SIGFPE, 8),
    (Signal::SIGKILL, 9),
    (Signal::SIGBUS, 10),
    (Signal::SIGSEGV, 11),
    (Signal::SIGSYS, 12),
    (Signal::SIGPIPE, 13),
    (Signal::SIGALRM, 14),
    (Signal::SIGTERM, 15),
    (Signal::SIGURG, 16),
    (Signal::SIGSTOP, 17),
    (Signal::SIGTSTP, 18),
    (Signal::SIGCONT, 19),
    (Signal::SIGCHLD, 20),
    (Signal::SIGTTIN, 21),
    (Signal::SIGTTOU, 22),
    (Signal::SIGIO, 23),
    (Signal::SIGXCPU, 24),
    (Signal::SIGXFSZ, 25),
    (Signal::SIGVTALRM, 26),
    (Signal::SIGPROF, 27),
    (Signal::SIGWINCH, 28),
    (Signal::SIGUSR1, 30),
    (Signal::SIGUSR2, 31),
    (Signal::SIGPWR, 32),
];

/// gdb's number for host signal `sig` (0 for one gdb has no name for here).
pub fn to_gdb_signal(sig: i32) -> u8 {
    SIGNALS
        .iter()
        .find(|(s, _)| *s as i32 == sig)
        .map_or(0, |&(_, g)| g)
}

/// The host signal for gdb's number `g`.
pub fn from_gdb_signal(g: u8) -> Option<i32> {
    SIGNALS
        .iter()
        .find(|&&(_, n)| n == g)
        .map(|&(s, _)| s as i32)
}

/// What is reported to gdb for one stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub reason: MultiThreadStopReason<u64>,
    /// A console line to print first.
    pub console: Option<String>,
    /// A field gdbstub cannot write (see [`super::wire`]).
    pub note: Option<Note>,
}

/// The stop reply for `reason` in thread `tid`, what gdb was told (to resume the thread as
/// gdb then asks), and the console line to print before it.
fn stop_reply(tid: Tid, reason: Reason) -> (MultiThreadStopReason<u64>, Reported, Option<String>) {
    let ours = |gdb: u8, kill: bool| Reported {
        gdb,
        host: None,
        synthetic: true,
        kill,
    };
    let signal = |g: u8| MultiThreadStopReason::SignalWithThread {
        tid,
        signal: GdbSignal(g),
    };
    match reason {
        Reason::Signal(s) => {
            let g = to_gdb_signal(s);
            let told = Reported {
                gdb: g,
                host: Some(s),
                synthetic: false,
                kill: false,
            };
            (signal(g), told, None)
        }
        Reason::Break => (MultiThreadStopReason::SwBreak(tid), ours(5, false), None),
        Reason::Step => (signal(5), ours(5, false), None),
        Reason::Interrupt => (signal(2), ours(2, false), None),
        Reason::Violation { line, kill } => (signal(12), ours(12, kill), Some(line)),
        Reason::Fork { child, vfork } => {
            let new_tid = usize::try_from(child)
                .ok()
                .and_then(std::num::NonZeroUsize::new)
                .unwrap_or(std::num::NonZeroUsize::MIN);
            let r = if vfork {
                MultiThreadStopReason::VFork {
                    cur_tid: tid,
                    new_tid,
                }
            } else {
                MultiThreadStopReason::Fork {
                    cur_tid: tid,
                    new_tid,
                }
            };
            (r, ours(5, false), None)
        }
        Reason::VforkDone => (MultiThreadStopReason::VForkDone(tid), ours(5, false), None),
        // The exec field is added on the wire (`Note::Exec`).
        Reason::Exec(_) => (signal(5), ours(5, false), None),
        // Never a thread's (see `Debuggee::next_report`).
        Reason::Exited { .. } => (signal(5), ours(5, false), None),
    }
}

/// An exit reply for `status`.
pub fn exit_reply(status: ExitStatus) -> MultiThreadStopReason<u64> {
    match status {
        ExitStatus::Code(c) => MultiThreadStopReason::Exited(u8::try_from(c & 0xff).unwrap_or(0)),
        ExitStatus::Signal(s) => MultiThreadStopReason::Terminated(GdbSignal(to_gdb_signal(s))),
    }
}

/// The host signal to deliver to a thread resumed with gdb's signal `asked`, given what gdb
/// was told of its stop: sbx's own stops' signals are never delivered, a reported signal
/// passed on is the original one.
fn delivery(told: Option<Reported>, asked: Option<u8>) -> Option<i32> {
    match (told, asked) {
        (Some(r), Some(g)) if g == r.gdb && r.synthetic => None,
        (Some(r), Some(g)) if g == r.gdb => r.host,
        (_, Some(g)) => from_gdb_signal(g),
        (_, None) => None,
    }
}

fn mem_err<T>(_: std::io::Error) -> TargetResult<T, Debuggee> {
    Err(TargetError::NonFatal)
}

impl Debuggee {
    /// Is `tid` a thread gdb sees?
    pub fn sees(&self, tid: i32) -> bool {
        self.tasks.contains_key(&tid)
    }

    /// The workload's first program starts (thread `tid` in its exec stop): gdb's first
    /// thread, stopped.
    pub fn start(&mut self, tid: i32) {
        self.root = tid;
        self.current = tid;
        self.tasks.insert(
            tid,
            View {
                pid: tid,
                tgid: tid,
                run: Run::Stopped,
                pending: None,
                reported: None,
            },
        );
        self.halted = true;
    }

    /// A new thread or process `tid` (of process `tgid`), made by thread `creator` gdb sees,
    /// not yet stopped anywhere. A new process is a fork event of its creator for gdb, both
    /// stopped until gdb resumes them (or detaches the one it does not follow). A vfork child
    /// runs in its parent's memory (breakpoints are written there once).
    pub fn added(&mut self, creator: i32, tid: i32, tgid: i32, born: Born) {
        let Some(parent) = self.tasks.get(&creator).map(|v| v.pid) else {
            return;
        };
        if born == Born::Vfork {
            self.vfork_waits.insert(tgid, creator);
        }
        let pid = match born {
            Born::Thread | Born::Vfork => parent,
            Born::Fork => {
                // The child's memory is a copy of its parent's: same breakpoints, same bytes
                // (gdb removes them from a child it does not follow).
                if let Some(bps) = self.inserted.get(&parent).cloned() {
                    self.inserted.insert(tgid, bps);
                }
                tgid
            }
        };
        // A process starts in a stop it stays in; a thread only while gdb stops everything.
        let run = if self.halted || born != Born::Thread {
            Run::Stopping
        } else {
            Run::Running
        };
        self.tasks.insert(
            tid,
            View {
                pid,
                tgid,
                run,
                pending: None,
                reported: None,
            },
        );
        if born != Born::Thread {
            self.stopped_for(
                creator,
                Reason::Fork {
                    child: tgid,
                    vfork: born == Born::Vfork,
                },
            );
        }
    }

    /// Thread `tid`, in a ptrace stop, stops for gdb with `reason`.
    fn stopped_for(&mut self, tid: i32, reason: Reason) {
        let Some(v) = self.tasks.get_mut(&tid) else {
            return;
        };
        v.run = Run::Stopped;
        self.events.push_back(Event { tid, reason });
        self.halt_all();
    }

    /// Process `pid` exec'd another program (thread `tid`, in its exec stop, is its only
    /// thread now): an exec event for gdb, which loads the new program's symbols.
    pub fn exec(&mut self, pid: i32, tid: i32) {
        self.vfork_done(pid);
        if !self.tasks.values().any(|v| v.tgid == pid) {
            return;
        }
        let gone = self.threads_of(pid);
        let mut pending = None;
        for t in &gone {
            if let Some(v) = self.tasks.remove(t) {
                pending = pending.or(v.pending);
            }
        }
        // What they had to report is moot: the program it was about is gone.
        self.drop_events(&gone, None);
        // Its memory is new (a vfork child's borrowed one stays its parent's): whatever was
        // inserted in the old one went with it.
        if !self.tasks.values().any(|v| v.pid == pid) {
            self.inserted.remove(&pid);
        }
        self.tasks.insert(
            tid,
            View {
                pid,
                tgid: pid,
                run: Run::Stopped,
                pending,
                reported: None,
            },
        );
        let path = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        use std::os::unix::ffi::OsStrExt;
        self.stopped_for(tid, Reason::Exec(path.as_os_str().as_bytes().to_vec()));
    }

    /// The vfork child of thread `tid` is done with their shared memory (`tid` is in its
    /// `PTRACE_EVENT_VFORK_DONE` stop): true when gdb takes the stop.
    pub fn vfork_done_stop(&mut self, tid: i32) -> bool {
        if !self.tasks.contains_key(&tid) {
            return false;
        }
        self.stopped_for(tid, Reason::VforkDone);
        true
    }

    /// Breakpoints in memory `pid` that no thread gdb sees runs in any more are taken out.
    fn forget_memory(&mut self, pid: i32) {
        if self.tasks.values().any(|v| v.pid == pid) {
            return;
        }
        if let Some(bps) = self.inserted.remove(&pid) {
            for (addr, orig) in bps {
                let _ = write_mem(pid, addr, &orig);
            }
        }
    }

    /// Thread `tid` is gone (`status`); the last thread of a process gdb sees ends it, an exit
    /// gdb is told of.
    pub fn gone(&mut self, tid: i32, status: ExitStatus) {
        self.vfork_done(tid);
        let Some(v) = self.tasks.remove(&tid) else {
            return;
        };
        self.held_back.remove(&tid);
        self.drop_events(&[tid], None);
        if !self.tasks.values().any(|o| o.pid == v.pid) {
            self.inserted.remove(&v.pid);
        }
        if !self.tasks.values().any(|o| o.tgid == v.tgid) {
            self.events.push_back(Event {
                tid,
                reason: Reason::Exited {
                    pid: v.tgid,
                    status,
                },
            });
            self.halt_all();
        }
    }

    /// gdb detached process `pid` (`D;PID`): it runs on under the sandbox alone, without
    /// gdb's breakpoints (unless a process gdb still sees shares its memory: a vfork parent
    /// or child).
    pub fn detach_process(&mut self, pid: i32) {
        let threads = self.threads_of(pid);
        self.drop_events(&threads, Some(pid));
        for t in threads {
            let Some(v) = self.tasks.remove(&t) else {
                continue;
            };
            self.plan.remove(&t);
            self.held_back.remove(&t);
            self.forget_memory(v.pid);
            if v.run == Run::Stopped {
                let sig = v.pending.and_then(|s| Signal::try_from(s).ok());
                let _ = ptrace::cont(t, sig);
            }
            // A thread still on its way to a stop is resumed there by the tracer (a stop
            // of a thread gdb does not see).
        }
        if self.current == pid {
            self.current = self.tasks.values().next().map_or(0, |v| v.tgid);
        }
    }

    /// Drop what threads `tids` had to report, and the end of process `ended`. A fork not
    /// reported yet leaves its child unknown to gdb: that child is detached. An interrupt of
    /// gdb's Ctrl-C still waits for an answer: it goes to another thread.
    fn drop_events(&mut self, tids: &[i32], ended: Option<i32>) {
        let mut unknown = Vec::new();
        let mut interrupt = false;
        self.events.retain(|e| {
            let ends = matches!(e.reason, Reason::Exited { pid, .. } if Some(pid) == ended);
            let mine = tids.contains(&e.tid) && !matches!(e.reason, Reason::Exited { .. });
            match (mine, &e.reason) {
                (true, Reason::Fork { child, .. }) => unknown.push(*child),
                (true, Reason::Interrupt) => interrupt = true,
                _ => {}
            }
            !(ends || mine)
        });
        for child in unknown {
            self.detach_process(child);
        }
        if interrupt && self.tasks.keys().any(|t| !tids.contains(t)) {
            self.ctrl_c();
        }
    }

    /// The threads gdb sees of process `pid`.
    fn threads_of(&self, pid: i32) -> Vec<i32> {
        self.tasks
            .iter()
            .filter(|(_, v)| v.tgid == pid)
            .map(|(&t, _)| t)
            .collect()
    }

    /// Every thread gdb sees, with its process (for [`super::wire`]).
    pub fn tgids(&self) -> BTreeMap<i32, i32> {
        self.tasks.iter().map(|(&t, v)| (t, v.tgid)).collect()
    }

    /// gdb's requests are for process `pid` from now on (`Hg`).
    pub fn set_current(&mut self, pid: i32) {
        self.current = pid;
    }

    /// The process gdb attached to.
    pub fn root(&self) -> i32 {
        self.root
    }

    /// Whether a stop waits to be reported.
    pub fn has_events(&self) -> bool {
        self.due().is_some()
    }

    /// Whether any thread is left in gdb's view.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The tracer would resume `tid` with `sig`: how, if gdb has a say.
    pub fn hold(&mut self, tid: i32, sig: Option<Signal>) -> Hold {
        let Some(v) = self.tasks.get_mut(&tid) else {
            return Hold::Cont;
        };
        match v.run {
            Run::Running => Hold::Cont,
            Run::Stepping => Hold::Step,
            Run::Stopping | Run::Stopped => {
                v.run = Run::Stopped;
                if let Some(s) = sig {
                    v.pending = Some(s as i32);
                }
                Hold::Keep
            }
        }
    }

    /// A `PTRACE_EVENT_STOP` of `tid` with SIGTRAP: true when it is the stop gdb asked for
    /// (the thread stays stopped); false for a stale one (resume it).
    pub fn interrupted(&mut self, tid: i32) -> bool {
        match self.tasks.get_mut(&tid) {
            Some(v) if matches!(v.run, Run::Stopping | Run::Stopped) => {
                v.run = Run::Stopped;
                true
            }
            _ => false,
        }
    }

    /// A signal-delivery stop of `tid`: true when gdb takes it (the thread stays stopped).
    pub fn signal(&mut self, tid: i32, sig: Signal) -> bool {
        let Some(v) = self.tasks.get(&tid) else {
            return false;
        };
        let (pid, run) = (v.pid, v.run);
        let reason = if sig != Signal::SIGTRAP {
            Reason::Signal(sig as i32)
        } else if run == Run::Stepping {
            Reason::Step
        } else if self.back_at_breakpoint(tid, pid) {
            Reason::Break
        } else {
            Reason::Signal(sig as i32)
        };
        if let Some(v) = self.tasks.get_mut(&tid) {
            v.run = Run::Stopped;
        }
        // Another thread's stop is being reported: a breakpoint is hit again once resumed.
        if !(self.halted && reason == Reason::Break) {
            self.events.push_back(Event { tid, reason });
        }
        self.halt_all();
        true
    }

    /// A violation at `tid`'s seccomp stop (the call already skipped): report it, the thread
    /// stays stopped.
    pub fn violation(&mut self, tid: i32, line: String, kill: bool) {
        let Some(v) = self.tasks.get_mut(&tid) else {
            return;
        };
        v.run = Run::Stopped;
        self.events.push_back(Event {
            tid,
            reason: Reason::Violation { line, kill },
        });
        self.halt_all();
    }

    /// gdb's Ctrl-C: stop everything, report it on the first thread.
    /// The stop is reported on a thread gdb resumed, one that can stop (not a vfork parent
    /// waiting in the kernel for its child) if there is one, as gdbserver does.
    pub fn ctrl_c(&mut self) {
        let resumed = |t: &&i32| !self.held_back.contains(*t);
        let free = |t: &&i32| !self.vfork_waiting(**t);
        let tid = (self.tasks.keys().find(|t| resumed(t) && free(t)))
            .or_else(|| self.tasks.keys().find(resumed))
            .or_else(|| self.tasks.keys().next())
            .copied();
        if let Some(tid) = tid {
            self.held_back.remove(&tid);
            self.events.push_back(Event {
                tid,
                reason: Reason::Interrupt,
            });
        }
        self.halt_all();
    }

    /// vfork child `pid` exec'd or exited: its parent can stop again, and must if gdb is
    /// stopping everything.
    fn vfork_done(&mut self, pid: i32) {
        if self.vfork_waits.remove(&pid).is_some() && self.halted {
            self.halt_all();
        }
    }

    /// Whether `tid` waits for a vfork child (and cannot stop before it is done).
    fn vfork_waiting(&self, tid: i32) -> bool {
        self.vfork_waits.values().any(|&p| p == tid)
    }

    /// Every thread gdb sees is stopped (or cannot be: a vfork parent).
    fn all_stopped(&self) -> bool {
        self.tasks
            .iter()
            .all(|(&tid, v)| v.run == Run::Stopped || self.vfork_waiting(tid))
    }

    /// Ask every running thread to stop.
    fn halt_all(&mut self) {
        self.halted = true;
        let waiting: BTreeSet<i32> = self.vfork_waits.values().copied().collect();
        for (&tid, v) in self.tasks.iter_mut() {
            if v.run == Run::Running && !waiting.contains(&tid) {
                v.run = match ptrace::interrupt(tid) {
                    Ok(()) => Run::Stopping,
                    // Dying: its exit comes through the wait loop.
                    Err(_) => Run::Running,
                };
            }
        }
    }

    /// The index of the next stop gdb may be told of: the end of a process gdb resumed last,
    /// or a stop of a thread it resumed last (a thread it held back keeps its stop until gdb
    /// resumes it).
    /// Ends go first: gdb must not act on a process that is gone.
    fn due(&self) -> Option<usize> {
        let due = |e: &Event| match e.reason {
            Reason::Exited { pid, .. } => self
                .resumed_only
                .as_ref()
                .is_none_or(|s| s.contains(&e.tid) || s.contains(&pid)),
            _ => !self.held_back.contains(&e.tid),
        };
        let exits = self
            .events
            .iter()
            .position(|e| matches!(e.reason, Reason::Exited { .. }) && due(e));
        exits.or_else(|| self.events.iter().position(due))
    }

    /// The next stop to report, once every thread is stopped.
    pub fn next_report(&mut self) -> Option<Report> {
        if !self.halted || !self.all_stopped() {
            return None;
        }
        loop {
            let i = self.due()?;
            if let Reason::Exited { pid, status } = self.events[i].reason {
                self.events.remove(i);
                return Some(Report {
                    reason: exit_reply(status),
                    console: None,
                    note: Some(Note::Process(pid)),
                });
            }
            match self.tasks.get(&self.events[i].tid).map(|v| v.run) {
                // Gone with its thread (`gone` drops these): skip it.
                None => {
                    self.events.remove(i);
                    continue;
                }
                // A vfork parent's interrupt: reported once it can stop.
                Some(r) if r != Run::Stopped => return None,
                Some(_) => {}
            }
            let ev = self.events.remove(i)?;
            let (tid, v) = (gdb_tid(ev.tid)?, self.tasks.get_mut(&ev.tid)?);
            let note = match &ev.reason {
                Reason::Exec(path) => Some(Note::Exec(path.clone())),
                _ => None,
            };
            // gdb takes the stopped thread as its current one (as gdbstub does for memory
            // requests): breakpoints and auxv are for its process from now on.
            self.current = v.tgid;
            let (reason, reported, console) = stop_reply(tid, ev.reason);
            v.reported = Some(reported);
            return Some(Report {
                reason,
                console,
                note,
            });
        }
    }

    /// Every thread stopped, nothing to report (the thread that stopped died): gdb's last
    /// resume stands.
    pub fn stuck(&self) -> bool {
        self.halted && self.due().is_none() && self.all_stopped()
    }

    /// After [`Debuggee::stuck`]: resume what gdb resumed last (every stopped thread but those
    /// it held back).
    pub fn resume_again(&mut self) {
        let plan: BTreeMap<i32, Plan> = self
            .tasks
            .iter()
            .filter(|(t, v)| v.run == Run::Stopped && !self.held_back.contains(*t))
            .map(|(&t, _)| (t, Plan::Continue(None)))
            .collect();
        self.resume_planned(plan, true);
    }

    /// Resume every stopped thread as `plan` says (a thread it does not name: continue,
    /// unless `locked`).
    fn resume_planned(&mut self, plan: BTreeMap<i32, Plan>, locked: bool) {
        self.halted = false;
        self.held_back.clear();
        for (&tid, v) in self.tasks.iter_mut() {
            if v.run != Run::Stopped {
                continue;
            }
            let p = match plan.get(&tid) {
                Some(&p) => p,
                None if locked => {
                    self.held_back.insert(tid);
                    continue;
                }
                None => Plan::Continue(None),
            };
            let (step, asked) = match p {
                Plan::Continue(s) => (false, s),
                Plan::Step(s) => (true, s),
            };
            let rep = v.reported.take();
            if rep.is_some_and(|r| r.kill) {
                self.kill = true;
                continue;
            }
            let deliver = delivery(rep, asked)
                .or(v.pending.take())
                .and_then(|s| Signal::try_from(s).ok());
            let r = if step {
                ptrace::step(tid, deliver)
            } else {
                ptrace::cont(tid, deliver)
            };
            v.run = match (r, step) {
                (Ok(()), true) => Run::Stepping,
                _ => Run::Running,
            };
        }
    }

    /// gdb left: every thread it held runs on.
    pub fn release_all(&mut self) {
        self.plan.clear();
        self.locked = false;
        self.events.clear();
        self.held_back.clear();
        self.resumed_only = None;
        for v in self.tasks.values_mut() {
            v.reported = None;
        }
        for (pid, bps) in std::mem::take(&mut self.inserted) {
            for (addr, orig) in bps {
                let _ = write_mem(pid, addr, &orig);
            }
        }
        self.resume_planned(BTreeMap::new(), false);
    }

    /// Whether the stopped thread's trap came from one of gdb's breakpoints; if so, its PC
    /// is put back on the breakpoint's address (x86_64 reports the PC after `int3`).
    fn back_at_breakpoint(&self, tid: i32, pid: i32) -> bool {
        let Some(bps) = self.inserted.get(&pid) else {
            return false;
        };
        let Ok(mut w) = regs::get(tid) else {
            return false;
        };
        let at = regs::pc(&w).wrapping_sub(regs::PC_AFTER_TRAP);
        if !bps.contains_key(&at) {
            return false;
        }
        if regs::PC_AFTER_TRAP != 0 {
            regs::set_pc(&mut w, at);
            if regs::set(tid, &w).is_err() {
                return false;
            }
        }
        true
    }

    /// The memory gdb's requests are for: the current process's (a vfork child's is its
    /// parent's).
    fn current_memory(&self) -> i32 {
        self.tasks
            .values()
            .find(|v| v.tgid == self.current)
            .map_or(self.current, |v| v.pid)
    }

    /// A breakpoint at `addr` in the current process.
    fn insert_breakpoint(&mut self, addr: u64) -> bool {
        let pid = self.current_memory();
        let bps = self.inserted.entry(pid).or_default();
        if bps.contains_key(&addr) {
            return true;
        }
        let mut orig = vec![0u8; regs::BREAKPOINT.len()];
        if read_mem(pid, addr, &mut orig).ok() != Some(orig.len()) {
            return false;
        }
        if write_mem(pid, addr, regs::BREAKPOINT).is_err() {
            return false;
        }
        bps.insert(addr, orig);
        true
    }

    /// The breakpoint at `addr` out of the current process.
    fn remove_breakpoint(&mut self, addr: u64) -> bool {
        let pid = self.current_memory();
        match self.inserted.get_mut(&pid).and_then(|b| b.remove(&addr)) {
            Some(orig) => write_mem(pid, addr, &orig).is_ok(),
            None => false,
        }
    }

    fn pid_of(&self, tid: Tid) -> i32 {
        let t = tid_of(tid);
        self.tasks.get(&t).map_or(t, |v| v.pid)
    }
}

/// Read `buf.len()` bytes of process `pid` at `addr` (`/proc/PID/mem`).
fn read_mem(pid: i32, addr: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let f = OpenOptions::new()
        .read(true)
        .open(format!("/proc/{pid}/mem"))?;
    f.read_at(buf, addr)
}

/// Write `bytes` into process `pid` at `addr` (`/proc/PID/mem` ignores page protections, so
/// breakpoints go into read-only text; private mappings get a copy).
fn write_mem(pid: i32, addr: u64, bytes: &[u8]) -> std::io::Result<()> {
    let f = OpenOptions::new()
        .write(true)
        .open(format!("/proc/{pid}/mem"))?;
    f.write_all_at(bytes, addr)
}

impl Target for Debuggee {
    type Arch = regs::GdbArch;
    type Error = String;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_extended_mode(&mut self) -> Option<ExtendedModeOps<'_, Self>> {
        Some(self)
    }

    fn support_auxv(&mut self) -> Option<AuxvOps<'_, Self>> {
        Some(self)
    }

    fn support_exec_file(&mut self) -> Option<ExecFileOps<'_, Self>> {
        Some(self)
    }
}

/// `target extended-remote`: the program is the one sbx started; gdb cannot start or attach
/// to another (`run`, `attach` fail), and a kill kills the whole tree.
impl ExtendedMode for Debuggee {
    fn run(
        &mut self,
        _: Option<&[u8]>,
        _: Args<'_, '_>,
    ) -> TargetResult<gdbstub::common::Pid, Self> {
        Err(TargetError::NonFatal)
    }

    fn attach(&mut self, _: gdbstub::common::Pid) -> TargetResult<(), Self> {
        Err(TargetError::NonFatal)
    }

    fn query_if_attached(&mut self, _: gdbstub::common::Pid) -> TargetResult<AttachKind, Self> {
        // Started for gdb: quitting gdb kills it, as for a program gdb runs itself.
        Ok(AttachKind::Run)
    }

    /// `vKill;PID` while gdb sees another process (`kill inferiors N`): that process alone is
    /// killed. The last one gdb sees (quitting gdb, `kill`): the whole tree, as for a program
    /// gdb started itself.
    fn kill(&mut self, pid: Option<gdbstub::common::Pid>) -> TargetResult<ShouldTerminate, Self> {
        let pid = pid.and_then(|p| i32::try_from(p.get()).ok());
        if let Some(p) = pid
            && self.tasks.values().any(|v| v.tgid != p)
        {
            let threads = self.threads_of(p);
            self.drop_events(&threads, Some(p));
            let mut memory = None;
            for t in &threads {
                if let Some(v) = self.tasks.remove(t) {
                    memory = Some(v.pid);
                }
                self.plan.remove(t);
                self.held_back.remove(t);
            }
            // Its memory dies with it, unless a process gdb still sees shares it.
            if let Some(m) = memory
                && !self.tasks.values().any(|v| v.pid == m)
            {
                self.inserted.remove(&m);
            }
            // A thread sbx has not reaped yet (still in the view): never a reused pid.
            if let Some(&t) = threads.first() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(t), Signal::SIGKILL);
            }
            return Ok(ShouldTerminate::No);
        }
        self.kill = true;
        Ok(ShouldTerminate::Yes)
    }

    fn restart(&mut self) -> Result<(), Self::Error> {
        Err("sbx cannot restart the workload".into())
    }

    fn support_current_active_pid(&mut self) -> Option<CurrentActivePidOps<'_, Self>> {
        Some(self)
    }
}

/// The process gdb sees is the workload's first (its real pid, so gdb's own look at
/// `/proc/PID` finds it).
impl CurrentActivePid for Debuggee {
    fn current_active_pid(&mut self) -> Result<gdbstub::common::Pid, Self::Error> {
        usize::try_from(self.root)
            .ok()
            .and_then(gdbstub::common::Pid::new)
            .ok_or_else(|| "no process".to_string())
    }
}

/// Bytes `offset..offset+length` of `data` into `buf`.
fn window(data: &[u8], offset: u64, length: usize, buf: &mut [u8]) -> usize {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let n = length.min(buf.len()).min(data.len() - start);
    buf[..n].copy_from_slice(&data[start..start + n]);
    n
}

/// The auxiliary vector (gdb finds where a PIE program was loaded from `AT_ENTRY`).
impl Auxv for Debuggee {
    fn get_auxv(&self, offset: u64, length: usize, buf: &mut [u8]) -> TargetResult<usize, Self> {
        let data = std::fs::read(format!("/proc/{}/auxv", self.current))
            .map_err(|_| TargetError::NonFatal)?;
        Ok(window(&data, offset, length, buf))
    }
}

/// The program's path, for a gdb started without one.
impl ExecFile for Debuggee {
    fn get_exec_file(
        &self,
        pid: Option<gdbstub::common::Pid>,
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        let pid = pid.map_or(self.current, |p| i32::try_from(p.get()).unwrap_or(0));
        let exe =
            std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|_| TargetError::NonFatal)?;
        use std::os::unix::ffi::OsStrExt;
        Ok(window(exe.as_os_str().as_bytes(), offset, length, buf))
    }
}

impl MultiThreadBase for Debuggee {
    fn read_registers(
        &mut self,
        out: &mut <Self::Arch as gdbstub::arch::Arch>::Registers,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        *out = regs::read_gdb(tid_of(tid)).map_err(|_| TargetError::NonFatal)?;
        Ok(())
    }

    fn write_registers(
        &mut self,
        new: &<Self::Arch as gdbstub::arch::Arch>::Registers,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        regs::write_gdb(tid_of(tid), new).map_err(|_| TargetError::NonFatal)
    }

    fn read_addrs(&mut self, start: u64, data: &mut [u8], tid: Tid) -> TargetResult<usize, Self> {
        let pid = self.pid_of(tid);
        let n = match read_mem(pid, start, data) {
            Ok(n) => n,
            Err(e) => return mem_err(e),
        };
        // gdb sees the program's own bytes, not its breakpoints.
        if let Some(bps) = self.inserted.get(&pid) {
            let end = start.saturating_add(n as u64);
            for (&addr, orig) in bps.range(start.saturating_sub(8)..end) {
                for (i, &b) in orig.iter().enumerate() {
                    let a = addr + i as u64;
                    if a >= start && a < end {
                        data[usize::try_from(a - start).unwrap_or(0)] = b;
                    }
                }
            }
        }
        Ok(n)
    }

    fn write_addrs(&mut self, start: u64, data: &[u8], tid: Tid) -> TargetResult<(), Self> {
        write_mem(self.pid_of(tid), start, data).or_else(mem_err)
    }

    fn list_active_threads(&mut self, found: &mut dyn FnMut(Tid)) -> Result<(), Self::Error> {
        for &tid in self.tasks.keys() {
            if let Some(t) = gdb_tid(tid) {
                found(t);
            }
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

/// `info threads` names each thread's program (`comm`).
impl ThreadExtraInfo for Debuggee {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let t = tid_of(tid);
        let comm = std::fs::read_to_string(format!("/proc/{t}/comm")).unwrap_or_default();
        Ok(window(comm.trim_end().as_bytes(), 0, buf.len(), buf))
    }
}

impl MultiThreadResume for Debuggee {
    fn resume(&mut self) -> Result<(), Self::Error> {
        let plan = std::mem::take(&mut self.plan);
        let locked = std::mem::replace(&mut self.locked, false);
        self.held_back = self
            .tasks
            .keys()
            .filter(|t| locked && !plan.contains_key(t))
            .copied()
            .collect();
        self.resumed_only = locked.then(|| plan.keys().copied().collect());
        // A stop taken while the last one was reported, of a thread gdb resumes now (or a
        // process's end), goes out first: nothing is resumed.
        if self.due().is_some() {
            // What gdb passes on with this resume is delivered when the thread really runs.
            for (tid, p) in plan {
                let (Plan::Continue(asked) | Plan::Step(asked)) = p;
                if let Some(v) = self.tasks.get_mut(&tid)
                    && let Some(rep) = v.reported.take()
                {
                    v.pending = delivery(Some(rep), asked).or(v.pending);
                    self.kill |= rep.kill;
                }
            }
            return Ok(());
        }
        self.resume_planned(plan, locked);
        Ok(())
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.plan.clear();
        self.locked = false;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        tid: Tid,
        signal: Option<GdbSignal>,
    ) -> Result<(), Self::Error> {
        // vCont's first action naming a thread is the one that counts.
        self.plan
            .entry(tid_of(tid))
            .or_insert(Plan::Continue(signal.map(|s| s.0)));
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSingleStep for Debuggee {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        signal: Option<GdbSignal>,
    ) -> Result<(), Self::Error> {
        self.plan
            .entry(tid_of(tid))
            .or_insert(Plan::Step(signal.map(|s| s.0)));
        Ok(())
    }
}

impl MultiThreadSchedulerLocking for Debuggee {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        self.locked = true;
        Ok(())
    }
}

impl Breakpoints for Debuggee {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for Debuggee {
    fn add_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.insert_breakpoint(addr))
    }

    fn remove_sw_breakpoint(&mut self, addr: u64, _kind: usize) -> TargetResult<bool, Self> {
        Ok(self.remove_breakpoint(addr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_numbers_round_trip_and_differ_where_gdb_differs() {
        assert_eq!(to_gdb_signal(libc::SIGSEGV), 11);
        assert_eq!(to_gdb_signal(libc::SIGSYS), 12);
        assert_eq!(to_gdb_signal(libc::SIGCHLD), 20);
        assert_eq!(to_gdb_signal(libc::SIGUSR1), 30);
        for &(s, g) in SIGNALS {
            assert_eq!(from_gdb_signal(g), Some(s as i32));
        }
    }

    #[test]
    fn delivered_signals_are_the_programs_never_sbxs() {
        let told = |gdb, host, synthetic| {
            Some(Reported {
                gdb,
                host,
                synthetic,
                kill: false,
            })
        };
        // A violation's SIGSYS passed on by gdb is not delivered.
        assert_eq!(delivery(told(12, None, true), Some(12)), None);
        // A real SIGUSR1 (gdb's 30) passed on is delivered as the host's.
        assert_eq!(
            delivery(told(30, Some(libc::SIGUSR1), false), Some(30)),
            Some(libc::SIGUSR1)
        );
        // `signal 0`: nothing.
        assert_eq!(delivery(told(11, Some(libc::SIGSEGV), false), None), None);
        // `signal SIGUSR2` on a thread gdb had no stop of.
        assert_eq!(delivery(None, Some(31)), Some(libc::SIGUSR2));
    }

    #[test]
    fn held_threads_stay_stopped_until_gdb_resumes() {
        let mut d = Debuggee::default();
        d.start(100);
        assert_eq!(d.hold(100, None), Hold::Keep);
        assert_eq!(
            d.hold(999, None),
            Hold::Cont,
            "a thread gdb does not see runs"
        );
        // While halted, a new thread stops at its first stop.
        d.added(100, 101, 100, Born::Thread);
        assert_eq!(d.hold(101, Some(Signal::SIGUSR1)), Hold::Keep);
        assert!(d.interrupted(101));
        d.gone(101, ExitStatus::Code(0));
        assert!(!d.sees(101));
        assert!(!d.has_events(), "a thread's end is no process's");
    }

    /// Events in the order gdb gets them (threads' ptrace calls fail on these made-up tids:
    /// only the bookkeeping is tested here; tests/gdb.rs runs the real thing).
    fn reasons(d: &mut Debuggee) -> Vec<(i32, Reason)> {
        d.events.drain(..).map(|e| (e.tid, e.reason)).collect()
    }

    #[test]
    fn forks_are_events_and_their_children_processes_of_their_own() {
        let mut d = Debuggee::default();
        d.start(100);
        d.inserted
            .insert(100, BTreeMap::from([(0x1000, vec![0x90])]));
        d.added(100, 103, 103, Born::Fork);
        assert_eq!(
            reasons(&mut d),
            vec![(
                100,
                Reason::Fork {
                    child: 103,
                    vfork: false
                }
            )]
        );
        assert!(
            d.inserted.contains_key(&103),
            "a fork child has the parent's breakpoints"
        );
        assert_eq!(d.tgids(), BTreeMap::from([(100, 100), (103, 103)]));
        // The child stays stopped at its first stop.
        assert!(d.interrupted(103));
        assert_eq!(d.hold(103, None), Hold::Keep);
        // A vfork child borrows its parent's memory: its breakpoints are the parent's.
        d.added(100, 104, 104, Born::Vfork);
        assert_eq!(
            reasons(&mut d),
            vec![(
                100,
                Reason::Fork {
                    child: 104,
                    vfork: true
                }
            )]
        );
        d.set_current(104);
        assert_eq!(d.current_memory(), 100);
        // Its exec: its own memory from then on, the parent's breakpoints stay.
        d.exec(104, 104);
        assert!(matches!(reasons(&mut d)[..], [(104, Reason::Exec(_))]));
        assert_eq!(d.current_memory(), 104);
        assert!(d.inserted.contains_key(&100));
        assert!(!d.inserted.contains_key(&104));
    }

    #[test]
    fn an_exec_keeps_the_process_in_view_with_one_thread() {
        // This test's own process stands for the one that exec'd (its program is read from
        // /proc/PID/exe).
        let me = i32::try_from(std::process::id()).unwrap();
        let mut d = Debuggee::default();
        d.start(me);
        d.added(me, me + 1, me, Born::Thread);
        d.inserted
            .insert(me, BTreeMap::from([(0x1000, vec![0x90])]));
        // Thread me+1 exec'd: it has the leader's tid now, and the old memory is gone.
        d.exec(me, me);
        assert_eq!(d.tgids(), BTreeMap::from([(me, me)]));
        assert!(!d.inserted.contains_key(&me));
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(
            reasons(&mut d),
            vec![(me, Reason::Exec(exe.as_os_str().as_bytes().to_vec()))]
        );
        // An exec of a process gdb does not see is none of gdb's business.
        d.exec(1, 1);
        assert!(reasons(&mut d).is_empty());
    }

    #[test]
    fn a_process_ends_with_its_last_thread_and_detached_ones_are_forgotten() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 103, 103, Born::Fork);
        d.added(103, 104, 103, Born::Thread);
        reasons(&mut d);
        d.gone(104, ExitStatus::Code(0));
        assert!(reasons(&mut d).is_empty());
        d.gone(103, ExitStatus::Code(7));
        assert_eq!(
            reasons(&mut d),
            vec![(
                103,
                Reason::Exited {
                    pid: 103,
                    status: ExitStatus::Code(7)
                }
            )]
        );
        // A detached process is not gdb's: its end is not reported.
        d.added(100, 105, 105, Born::Fork);
        reasons(&mut d);
        d.detach_process(105);
        assert!(!d.sees(105));
        d.gone(105, ExitStatus::Code(0));
        assert!(reasons(&mut d).is_empty());
        assert_eq!(d.tgids(), BTreeMap::from([(100, 100)]));
    }

    /// Every thread gdb sees stopped, as after gdb's all-stop (these made-up tids cannot be
    /// interrupted for real).
    fn all_stop(d: &mut Debuggee) {
        for v in d.tasks.values_mut() {
            v.run = Run::Stopped;
        }
        d.halted = true;
    }

    #[test]
    fn a_stop_makes_its_process_the_one_gdb_speaks_of() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 103, 103, Born::Fork);
        reasons(&mut d);
        d.set_current(103);
        // The parent stops (gdb sends no Hg after a stop: the stopped thread is current).
        d.events.push_back(Event {
            tid: 100,
            reason: Reason::Break,
        });
        all_stop(&mut d);
        assert!(d.next_report().is_some());
        assert_eq!(d.current, 100);
    }

    #[test]
    fn a_killed_or_detached_process_ends_unreported() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 103, 103, Born::Fork);
        d.added(100, 104, 104, Born::Fork);
        reasons(&mut d);
        // 103 ended; gdb kills it before hearing of it: its end is never reported.
        d.gone(103, ExitStatus::Code(1));
        assert_eq!(
            d.kill(gdbstub::common::Pid::new(103))
                .ok()
                .map(ShouldTerminate::into_bool),
            Some(false)
        );
        assert!(!d.has_events());
        // The first process, while gdb sees another: killed alone (not the tree).
        assert_eq!(
            d.kill(gdbstub::common::Pid::new(100))
                .ok()
                .map(ShouldTerminate::into_bool),
            Some(false)
        );
        assert!(!d.kill && !d.sees(100));
        // The last one gdb sees: the tree.
        assert_eq!(
            d.kill(gdbstub::common::Pid::new(104))
                .ok()
                .map(ShouldTerminate::into_bool),
            Some(true)
        );
        assert!(d.kill);
    }

    #[test]
    fn a_fork_never_reported_leaves_its_child_detached() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 101, 100, Born::Thread);
        d.added(101, 103, 103, Born::Fork);
        // The forking thread dies (another thread's exec, a SIGKILL) before gdb is told.
        d.gone(101, ExitStatus::Signal(9));
        assert!(
            !d.sees(103),
            "gdb never heard of the child: it is not gdb's"
        );
        assert!(!d.has_events());
    }

    #[test]
    fn held_back_threads_keep_their_stops_and_ctrl_c_picks_a_resumed_thread() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 103, 103, Born::Fork);
        reasons(&mut d);
        all_stop(&mut d);
        // gdb resumes only the child (schedule-multiple off): the parent is held back.
        d.plan.insert(103, Plan::Continue(None));
        d.locked = true;
        let _ = MultiThreadResume::resume(&mut d);
        assert!(d.held_back.contains(&100) && !d.held_back.contains(&103));
        // A stop of the held-back parent waits; Ctrl-C is reported on the child.
        d.events.push_back(Event {
            tid: 100,
            reason: Reason::Signal(libc::SIGUSR1),
        });
        d.ctrl_c();
        all_stop(&mut d);
        let r = d.next_report().unwrap();
        assert_eq!(
            r.reason,
            MultiThreadStopReason::SignalWithThread {
                tid: Tid::new(103).unwrap(),
                signal: GdbSignal::SIGINT
            }
        );
        assert!(d.next_report().is_none(), "the parent's stop waits for gdb");
        // gdb resumes the parent: its stop goes out, nothing runs.
        d.plan.insert(100, Plan::Continue(None));
        d.locked = true;
        let _ = MultiThreadResume::resume(&mut d);
        assert!(d.next_report().is_some());
    }

    #[test]
    fn a_ctrl_c_whose_thread_dies_is_answered_on_another() {
        let mut d = Debuggee::default();
        d.start(100);
        d.added(100, 103, 103, Born::Fork);
        reasons(&mut d);
        all_stop(&mut d);
        d.held_back.clear();
        d.tasks.get_mut(&100).unwrap().run = Run::Running;
        d.tasks.get_mut(&103).unwrap().run = Run::Running;
        d.halted = false;
        d.ctrl_c();
        assert_eq!(d.events.front().map(|e| e.tid), Some(100));
        // The thread dies before its interrupt stop: gdb still gets its SIGINT, on 103.
        d.gone(100, ExitStatus::Code(0));
        let ev = reasons(&mut d);
        assert!(ev.contains(&(103, Reason::Interrupt)), "{ev:?}");
    }

    #[test]
    fn reports_wait_for_every_thread_and_carry_the_violation() {
        let mut d = Debuggee::default();
        d.start(100);
        d.violation(100, "openat /etc/shadow".into(), true);
        let r = d.next_report().unwrap();
        assert_eq!(
            r.reason,
            MultiThreadStopReason::SignalWithThread {
                tid: Tid::new(100).unwrap(),
                signal: GdbSignal::SIGSYS
            }
        );
        assert_eq!(r.console.as_deref(), Some("openat /etc/shadow"));
        assert!(d.next_report().is_none());
        // An exit names its process; an exec its program.
        d.gone(100, ExitStatus::Signal(libc::SIGKILL));
        let r = d.next_report().unwrap();
        assert_eq!(r.reason, MultiThreadStopReason::Terminated(GdbSignal(9)));
        assert_eq!(r.note, Some(Note::Process(100)));
    }
}
