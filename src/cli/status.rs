//! A live status for long record/enforce runs (processes alive, events, elapsed), only when
//! stderr is a terminal and not with `-q`; wraps any sink.
//!
//! It goes into the terminal's title (OSC 2), never into the text: the workload shares the
//! terminal, and a status line redrawn with `\r` and an erase would wipe out whatever
//! partial line the workload had printed (a progress bar, a prompt). The title in use is
//! saved first and put back at the end (xterm's title stack, `CSI 22;2 t` / `CSI 23;2 t`);
//! terminals without titles ignore both.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::event::{ExitStatus, SpawnVia};
use crate::tracer::{Error, ExecFile, Sink, SyscallStop, TaskRef, Verdict};

/// Forwards everything to `inner` and redraws the status line at most 5 times a second.
#[derive(Debug)]
pub struct StatusSink<'a, S: Sink> {
    pub inner: &'a mut S,
    enabled: bool,
    events: u64,
    /// Processes seen: the root and every fork/vfork/clone that was not a thread.
    processes: u64,
    started: Instant,
    last: Instant,
    drawn: bool,
}

impl<'a, S: Sink> StatusSink<'a, S> {
    pub fn new(inner: &'a mut S) -> Self {
        let enabled = std::io::stderr().is_terminal() && super::chatty();
        StatusSink {
            inner,
            enabled,
            events: 0,
            processes: 1,
            started: Instant::now(),
            last: Instant::now(),
            drawn: false,
        }
    }

    /// The `-v` summary of the run: events seen, processes, wall time.
    pub fn summary(&self) -> String {
        format!(
            "sbx: {} events (syscall stops, spawns, execs, exits) from {} processes in {:.2} s",
            self.events,
            self.processes,
            self.started.elapsed().as_secs_f64()
        )
    }

    /// Put the terminal's title back (before sbx prints its summary, or asks a question).
    pub fn clear(&mut self) {
        if self.drawn {
            let _ = std::io::stderr().write_all(b"\x1b[23;2t");
            self.drawn = false;
        }
    }
}

impl<S: Sink> Sink for StatusSink<'_, S> {
    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<Verdict, Error> {
        self.events += 1;
        self.inner.on_syscall(stop)
    }
    fn on_syscall_exit(&mut self, stop: &SyscallStop<'_>, rval: i64) -> Result<Verdict, Error> {
        self.inner.on_syscall_exit(stop, rval)
    }
    fn on_spawn(&mut self, t: u64, parent: &TaskRef<'_>, child: i32, thread: bool, via: SpawnVia) {
        self.events += 1;
        if !thread {
            self.processes += 1;
        }
        self.inner.on_spawn(t, parent, child, thread, via);
    }
    fn exec_comm(&self, tid: i32) -> Option<Vec<u8>> {
        self.inner.exec_comm(tid)
    }
    fn exec_file(&self, tid: i32) -> Option<ExecFile> {
        self.inner.exec_file(tid)
    }
    fn on_exec(&mut self, t: u64, task: &TaskRef<'_>, former_tid: Option<i32>) -> Verdict {
        self.events += 1;
        self.inner.on_exec(t, task, former_tid)
    }
    fn on_exit(
        &mut self,
        t: u64,
        task: &TaskRef<'_>,
        status: ExitStatus,
        process: bool,
    ) -> Verdict {
        self.events += 1;
        self.inner.on_exit(t, task, status, process)
    }
    fn poll_held(&mut self, timeout: Duration) -> crate::tracer::Released {
        self.clear();
        self.inner.poll_held(timeout)
    }
    fn after_resume(&mut self) {
        self.inner.after_resume();
    }
    fn tick(&mut self, time_ns: u64, processes: usize) {
        self.inner.tick(time_ns, processes);
        if !self.enabled || self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let secs = Duration::from_nanos(time_ns).as_secs_f64();
        // Save the title once, then set it: no visible character, nothing erased.
        let save: &str = if self.drawn { "" } else { "\x1b[22;2t" };
        let line = format!(
            "{save}\x1b]2;sbx: {processes} processes, {} events, {secs:.1} s\x07",
            self.events
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
        self.drawn = true;
    }
}
