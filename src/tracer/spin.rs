//! Polling for the next tracee stop before sleeping for it, when that is faster.
//!
//! Every stop costs the tracer a round trip: the tracee stops and wakes the tracer, the
//! tracer resumes it. How long that takes depends on where the scheduler put the two:
//! - on one CPU, each side hands the CPU to the other directly (a few microseconds);
//! - on two CPUs, each wakeup of an idle CPU is an interrupt to it, which on a virtual
//!   machine is a trip through the hypervisor (tens of microseconds, more than all of
//!   sbx's own work at a stop).
//!
//! When the tracer polls (`waitpid(WNOHANG)`) instead of sleeping, a stop needs no wakeup of
//! the tracer. On a metadata-heavy single-threaded workload (`find` over a kernel tree)
//! polling makes sbx record 2.2 times faster; on a parallel build it would take a CPU the
//! compilers want. So [`SpinPolicy`] polls unless the machine is crowded: it samples the
//! runnable tasks (`/proc/loadavg`) every [`LOAD_EVERY`] waits, and sleeps for the next
//! [`EPOCH`] waits when there were more of them than CPUs (a single CPU is always crowded).
//! While polling, the window is bounded and adaptive ([`SpinWindow`], as the kernel's
//! haltpoll governor does): it doubles when a stop came shortly after polling gave up and
//! halves when the tracer then slept much longer, so a workload computing between its
//! checked syscalls costs little polling. The tracer yields the CPU at each turn of the poll.
//!
//! Until session 21 the policy also slept while the workload churned processes (8 forks or
//! execs in an epoch): on session 6's host polling cost a fork+exec loop 8-11% (every new
//! program and every resume landed on the other, idle, CPU, where sleeping kept tracer and
//! tracee on one). On the host of sessions 19-21 it is the other way round: sleeping puts
//! them on one CPU, where the workload evicts sbx's data between stops, and a fork+exec loop
//! runs 12% faster polling (18 points above the null tracer sleeping, 1 polling; a
//! configure script, a parallel build and an npm install the same either way;
//! docs/performance.md). `SBX_SPIN_US=0` is the knob for a host like session 6's.
//!
//! An earlier policy measured instead: it tried each mode for an epoch and polled only where
//! polling made the epochs 1.5 times shorter. That measurement was poisoned: once a polling
//! epoch has put the tracer and the tracee on two CPUs, they stay there (the scheduler wakes
//! each on its own, now idle, CPU), so the sleeping epochs after it measured the slow state,
//! and the policy went on sleeping in it, the worst of both modes: 2000 fork+exec took
//! 2560 ms with it, 2070-2566 ms never polling and 2231 ms always polling (docs/performance.md).

use std::time::Duration;

/// The adaptive polling window.
#[derive(Debug, Clone)]
pub struct SpinWindow {
    cur_ns: u64,
    max_ns: u64,
}

/// The window a growing window starts from.
const GROW_FROM_NS: u64 = 10_000;

impl SpinWindow {
    /// A window of at most `max` (zero: never poll).
    pub fn new(max: Duration) -> SpinWindow {
        let max_ns = u64::try_from(max.as_nanos()).unwrap_or(u64::MAX);
        SpinWindow {
            // Start wide: a window too long for the workload halves after each long sleep,
            // one too short would miss the stops it is meant to catch while it grows.
            cur_ns: max_ns,
            max_ns,
        }
    }

    /// How long to poll before sleeping.
    pub fn window(&self) -> Duration {
        Duration::from_nanos(self.cur_ns)
    }

    /// A wait ended: `caught` when the stop came while polling, else `waited` is the whole
    /// wait, polling and sleep.
    pub fn update(&mut self, caught: bool, waited: Duration) {
        if caught || self.max_ns == 0 {
            return;
        }
        let waited = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        if waited <= self.max_ns {
            self.cur_ns = (self.cur_ns * 2).clamp(GROW_FROM_NS.min(self.max_ns), self.max_ns);
        } else {
            self.cur_ns /= 2;
            if self.cur_ns < GROW_FROM_NS {
                self.cur_ns = 0;
            }
        }
    }
}

/// The longest poll: `SBX_SPIN_US` microseconds if set (0 turns polling off), else
/// [`DEFAULT_MAX_US`]. A tuning knob for benchmarks and machines where polling never pays
/// (docs/performance.md); unparsable values mean the default.
pub fn max_from_env() -> Duration {
    let us = std::env::var("SBX_SPIN_US")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_US);
    Duration::from_micros(us)
}

/// The default longest poll, in microseconds.
pub const DEFAULT_MAX_US: u64 = 200;

/// Waits per epoch: a crowded machine stops polling for this many waits.
pub const EPOCH: u32 = 128;
/// Waits between two samples of the machine's runnable tasks.
pub const LOAD_EVERY: u32 = 32;

/// Whether to poll before sleeping (see the module documentation).
#[derive(Debug, Clone)]
pub struct SpinPolicy {
    window: SpinWindow,
    /// The last epoch found more runnable tasks than CPUs.
    crowded: bool,
    /// Waits counted in the current epoch.
    n: u32,
    /// Runnable tasks on the machine (sbx included) sampled in this epoch: their sum and
    /// count, and the CPUs sbx may use.
    load_sum: u32,
    load_n: u32,
    cpus: u32,
}

impl SpinPolicy {
    /// A policy that polls for at most `max` (zero: never polls). `cpus`: how many CPUs the
    /// tracer and the workload share (with one, it never polls: the tracee needs that CPU).
    pub fn new(max: Duration, cpus: u32) -> SpinPolicy {
        SpinPolicy {
            window: SpinWindow::new(max),
            crowded: cpus <= 1,
            n: 0,
            load_sum: 0,
            load_n: 0,
            cpus: cpus.max(1),
        }
    }

    /// Whether the caller should now sample the runnable tasks (`note_load`): every
    /// [`LOAD_EVERY`] waits.
    pub fn wants_load(&self) -> bool {
        self.window.max_ns > 0 && self.cpus > 1 && self.n % LOAD_EVERY == LOAD_EVERY - 1
    }

    /// A sample of the runnable tasks on the machine, sbx included (`/proc/loadavg`). More of
    /// them than CPUs means a poll takes a CPU the workload wants: a shorter wait for the
    /// tracer is then no gain for the workload.
    pub fn note_load(&mut self, runnable: u32) {
        self.load_sum = self.load_sum.saturating_add(runnable);
        self.load_n += 1;
    }

    /// How long to poll before the next sleep (zero while the machine is crowded).
    pub fn window(&self) -> Duration {
        if self.crowded {
            Duration::ZERO
        } else {
            self.window.window()
        }
    }

    /// Whether the policy polls now.
    pub fn spinning(&self) -> bool {
        !self.window().is_zero()
    }

    /// Whether [`Self::update`] uses how long a wait took: not while the policy sleeps
    /// (crowded), so the caller need not read the clock around every wait.
    pub fn times_waits(&self) -> bool {
        !self.crowded && self.window.max_ns > 0
    }

    /// A wait ended after `waited` (`caught` when a poll found the stop).
    pub fn update(&mut self, caught: bool, waited: Duration) {
        if !self.crowded {
            self.window.update(caught, waited);
        }
        self.n += 1;
        if self.n >= EPOCH {
            self.n = 0;
            if self.cpus > 1 {
                self.crowded = self.load_n > 0 && self.load_sum > self.cpus * self.load_n;
            }
            self.load_sum = 0;
            self.load_n = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn grows_when_a_stop_came_just_after_polling_gave_up() {
        let mut w = SpinWindow::new(200 * US);
        assert_eq!(w.window(), 200 * US, "starts wide");
        w.update(false, 5000 * US);
        w.update(false, 5000 * US);
        assert_eq!(w.window(), 50 * US, "halved twice");
        w.update(false, 60 * US);
        assert_eq!(w.window(), 100 * US, "a stop just missed: doubled");
        for _ in 0..10 {
            w.update(false, 150 * US);
        }
        assert_eq!(w.window(), 200 * US, "capped at the maximum");
    }

    #[test]
    fn shrinks_to_zero_over_long_sleeps_and_comes_back() {
        let mut w = SpinWindow::new(200 * US);
        for _ in 0..10 {
            w.update(false, 50 * US);
        }
        assert_eq!(w.window(), 200 * US);
        let mut n = 0;
        while w.window() > Duration::ZERO {
            w.update(false, 5000 * US);
            n += 1;
        }
        assert_eq!(n, 5, "200 -> 100 -> 50 -> 25 -> 12.5 -> 0");
        w.update(false, 5000 * US);
        assert_eq!(
            w.window(),
            Duration::ZERO,
            "stays off while sleeps stay long"
        );
        w.update(false, 40 * US);
        assert_eq!(w.window(), 10 * US, "a short sleep turns it on again");
    }

    #[test]
    fn a_caught_stop_keeps_the_window() {
        let mut w = SpinWindow::new(200 * US);
        w.update(false, 100 * US);
        let before = w.window();
        w.update(true, 5 * US);
        assert_eq!(w.window(), before);
    }

    /// One epoch of waits of `us` each (caught by the poll), sampling `runnable` tasks when
    /// asked.
    fn epoch(p: &mut SpinPolicy, us: u64, runnable: u32) {
        for _ in 0..EPOCH {
            if p.wants_load() {
                p.note_load(runnable);
            }
            p.update(true, Duration::from_micros(us));
        }
    }

    #[test]
    fn policy_polls_unless_the_machine_is_crowded() {
        let mut p = SpinPolicy::new(200 * US, 2);
        assert!(p.spinning(), "starts polling");
        epoch(&mut p, 20, 2);
        assert!(
            p.spinning(),
            "2 runnable (sbx and the tracee) on 2 CPUs: polls"
        );
        epoch(&mut p, 20, 3);
        assert!(!p.spinning(), "3 runnable tasks on 2 CPUs: sleeps");
        epoch(&mut p, 20, 3);
        assert!(!p.spinning(), "still crowded");
        epoch(&mut p, 20, 1);
        assert!(p.spinning(), "the machine calmed down: polls again");
        let mut p = SpinPolicy::new(200 * US, 4);
        epoch(&mut p, 20, 4);
        assert!(p.spinning(), "4 on 4 CPUs is not crowded");
    }

    #[test]
    fn policy_never_polls_on_one_cpu() {
        let mut p = SpinPolicy::new(200 * US, 1);
        assert!(!p.spinning());
        assert!(!p.wants_load(), "no samples needed");
        epoch(&mut p, 20, 1);
        assert!(!p.spinning());
    }

    #[test]
    fn long_waits_close_the_window_while_polling() {
        let mut p = SpinPolicy::new(200 * US, 2);
        for _ in 0..10 {
            p.update(false, Duration::from_millis(5));
        }
        assert!(
            !p.spinning(),
            "a workload computing between its stops: no polling"
        );
        p.update(false, 40 * US);
        assert!(p.spinning(), "a short sleep opens the window again");
    }

    #[test]
    fn zero_maximum_never_polls() {
        let mut w = SpinWindow::new(Duration::ZERO);
        assert_eq!(w.window(), Duration::ZERO);
        w.update(false, 10 * US);
        assert_eq!(w.window(), Duration::ZERO);
        let mut p = SpinPolicy::new(Duration::ZERO, 2);
        assert!(!p.wants_load());
        epoch(&mut p, 60, 1);
        assert!(!p.spinning());
    }
}
