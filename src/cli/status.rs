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

use crate::arch::Arch;
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
    /// Syscall stops by (audit arch, number), for the `-v` summary.
    stops: std::collections::HashMap<(u32, u64), u64>,
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
            stops: Default::default(),
        }
    }

    /// The `-v` summary of the run: events seen, processes, wall time; then the syscall
    /// stops by call and sbx's own CPU time (what the sandbox cost the run).
    pub fn summary(&self) -> String {
        let native = Arch::native();
        let mut by_name: Vec<(&str, u64)> = Vec::new();
        for (&(arch, nr), &n) in &self.stops {
            let name = if arch == native.audit_arch() {
                native.by_nr(nr).map_or("unknown", |d| d.name)
            } else {
                "foreign ABI"
            };
            match by_name.iter_mut().find(|(m, _)| *m == name) {
                Some((_, c)) => *c += n,
                None => by_name.push((name, n)),
            }
        }
        format!(
            "sbx: {} events (syscall stops, spawns, execs, exits) from {} processes in {:.2} s\n{}",
            self.events,
            self.processes,
            self.started.elapsed().as_secs_f64(),
            stops_line(&mut by_name, own_cpu())
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
        *self.stops.entry((stop.audit_arch, stop.nr)).or_default() += 1;
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
    fn take_violation(&mut self) -> Option<String> {
        self.inner.take_violation()
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

/// sbx's own CPU time so far (user and system, all its threads), if the kernel says.
fn own_cpu() -> Option<Duration> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    Some(d(u.user_time()) + d(u.system_time()))
}

/// `sbx: N syscall stops (openat 4652, mkdir 3948, ... , others 12); sbx's own CPU 221 ms,
/// 22 us per stop`: the five most stopped calls (ties by name), the rest summed.
pub fn stops_line(by_name: &mut [(&str, u64)], cpu: Option<Duration>) -> String {
    by_name.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: u64 = by_name.iter().map(|(_, n)| n).sum();
    let mut parts: Vec<String> = by_name
        .iter()
        .take(5)
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    let rest: u64 = by_name.iter().skip(5).map(|(_, n)| n).sum();
    if rest > 0 {
        parts.push(format!("others {rest}"));
    }
    let calls = if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    };
    let cpu = match cpu {
        Some(c) if total > 0 => format!(
            "; sbx's own CPU {} ms, {:.1} us per stop",
            c.as_millis(),
            c.as_secs_f64() * 1e6 / total as f64
        ),
        Some(c) => format!("; sbx's own CPU {} ms", c.as_millis()),
        None => String::new(),
    };
    format!("sbx: {total} syscall stops{calls}{cpu}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stops_line_names_the_most_stopped_calls_and_sums_the_rest() {
        let mut v = vec![
            ("mkdir", 30),
            ("openat", 50),
            ("rename", 5),
            ("unlink", 5),
            ("execve", 2),
            ("chmod", 1),
            ("bind", 1),
        ];
        assert_eq!(
            stops_line(&mut v, Some(Duration::from_micros(4700))),
            "sbx: 94 syscall stops (openat 50, mkdir 30, rename 5, unlink 5, execve 2, others 2); \
             sbx's own CPU 4 ms, 50.0 us per stop"
        );
        assert_eq!(
            stops_line(&mut [], Some(Duration::from_millis(3))),
            "sbx: 0 syscall stops; sbx's own CPU 3 ms"
        );
        assert_eq!(
            stops_line(&mut [("openat", 1)], None),
            "sbx: 1 syscall stops (openat 1)"
        );
    }

    #[test]
    fn own_cpu_grows_with_work() {
        let a = own_cpu().expect("getrusage");
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::hint::black_box(x);
        let b = own_cpu().expect("getrusage");
        assert!(b > a, "{a:?} -> {b:?}");
    }
}
