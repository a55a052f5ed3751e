//! Polling for the next tracee stop before sleeping for it, when that is faster.
//!
//! Every stop costs the tracer a round trip: the tracee stops and wakes the tracer, the
//! tracer resumes it. How long that takes depends on where the scheduler put the two:
//! - on one CPU, each side hands the CPU to the other directly (a few microseconds);
//! - on two CPUs, each wakeup of an idle CPU is an interrupt to it, which on a virtual
//!   machine is a trip through the hypervisor (tens of microseconds, more than all of
//!   sbx's own work at a stop).
//!
//! The scheduler flips between the two on its own (it moves a woken task to an idle CPU when
//! it sees one). When the tracer polls (`waitpid(WNOHANG)`) instead of sleeping, the
//! tracee's stop needs no wakeup of the tracer; but a polling tracer never leaves its CPU, so
//! the tracee is never put on it, and the one-CPU case is lost. On a metadata-heavy
//! single-threaded workload (`find` over a kernel tree) polling made sbx record 2.5 times
//! faster; on a fork+exec loop, 6% slower (docs/performance.md).
//!
//! So [`SpinPolicy`] measures instead of guessing. It counts the exit stops of resumed
//! syscalls, and scores each mode by the wall time an epoch of [`EPOCH`] of them takes
//! (everything in between included: the tracer's work, the other waits, the workload's own
//! progress). It polls only while that makes the epochs clearly shorter ([`SPIN_GAIN`]), and
//! not while more tasks are runnable than there are CPUs: a poll on a crowded machine takes a
//! CPU the workload wants. It tries the other mode for one epoch in [`EXPLORE_EVERY`], and
//! stops polling as soon as an epoch of polling no longer pays, so it follows the workload
//! through its phases. While polling, the window is bounded and adaptive
//! ([`SpinWindow`], as the kernel's haltpoll governor does): it doubles when a stop came
//! shortly after polling gave up and halves when the tracer then slept much longer, so a
//! workload computing between its checked syscalls costs little polling. The
//! tracer yields the CPU at each turn of the poll.

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
            // one too short would spoil the first epoch of polling that SpinPolicy measures.
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

/// Exit waits per measuring epoch.
pub const EPOCH: u32 = 128;
/// Epochs in the chosen mode between two trials of the other.
pub const EXPLORE_EVERY: u32 = 16;
/// How much shorter polling must make the mean exit wait to be chosen.
pub const SPIN_GAIN: f64 = 1.5;

/// Whether to poll before sleeping, chosen by measurement (see the module documentation).
#[derive(Debug, Clone)]
pub struct SpinPolicy {
    window: SpinWindow,
    spin: bool,
    /// Exit waits counted in the current epoch, and when (ns) the epoch began.
    n: u32,
    start_ns: u64,
    /// The mean exit wait (ns) last measured sleeping (0) and polling (1).
    mean: [Option<u64>; 2],
    /// Epochs since the other mode was last tried.
    epochs: u32,
    exploring: bool,
    /// Runnable tasks on the machine (sbx included) sampled in this epoch: their sum and
    /// count, and the CPUs sbx may use.
    load_sum: u32,
    load_n: u32,
    cpus: u32,
    /// The unit tests' clock.
    #[cfg(test)]
    clock_ns: u64,
}

/// Exit waits between two samples of the machine's runnable tasks.
pub const LOAD_EVERY: u32 = 32;

impl SpinPolicy {
    /// A policy that polls for at most `max` (zero: never polls). It starts sleeping.
    /// `cpus`: how many CPUs the tracer and the workload share.
    pub fn new(max: Duration, cpus: u32) -> SpinPolicy {
        SpinPolicy {
            window: SpinWindow::new(max),
            spin: false,
            n: 0,
            start_ns: 0,
            mean: [None, None],
            epochs: 0,
            exploring: false,
            load_sum: 0,
            load_n: 0,
            cpus: cpus.max(1),
            #[cfg(test)]
            clock_ns: 0,
        }
    }

    /// Whether the caller should now sample the runnable tasks (`note_load`): every
    /// [`LOAD_EVERY`] measured waits while polling.
    pub fn wants_load(&self) -> bool {
        self.spin && self.n % LOAD_EVERY == LOAD_EVERY - 1
    }

    /// A sample of the runnable tasks on the machine, sbx included (`/proc/loadavg`). While
    /// polling, more of them than CPUs means the poll takes a CPU the workload wants: a
    /// shorter wait for the tracer is then no gain for the workload (a parallel build got
    /// 4% slower with polling chosen on wait times alone).
    pub fn note_load(&mut self, runnable: u32) {
        self.load_sum = self.load_sum.saturating_add(runnable);
        self.load_n += 1;
    }

    /// How long to poll before the next sleep (zero while sleeping is the better mode).
    pub fn window(&self) -> Duration {
        if self.spin {
            self.window.window()
        } else {
            Duration::ZERO
        }
    }

    /// Whether the policy polls now.
    pub fn spinning(&self) -> bool {
        self.spin
    }

    /// A wait ended at `now_ns` (any monotonic clock) after `waited` (`caught` when a poll
    /// found the stop). `exit` when the tracer had just resumed a thread to its syscall's
    /// exit stop. An epoch is [`EPOCH`] such waits; its score is the wall time it took per
    /// exit wait, everything between them included (the tracer's work, the other waits, the
    /// workload's progress), so a mode that shortens the exit waits by taking CPU from the
    /// workload does not score better.
    pub fn update(&mut self, caught: bool, waited: Duration, exit: bool, now_ns: u64) {
        if self.spin {
            self.window.update(caught, waited);
        }
        if !exit || self.window.max_ns == 0 {
            return;
        }
        if self.n == 0 {
            self.start_ns = now_ns.saturating_sub(u64::try_from(waited.as_nanos()).unwrap_or(0));
        }
        self.n += 1;
        if self.n >= EPOCH {
            let mean = now_ns.saturating_sub(self.start_ns) / u64::from(self.n);
            self.n = 0;
            self.end_epoch(mean);
        }
    }

    /// Whether polling measured clearly better than sleeping.
    fn polling_pays(&self) -> bool {
        match self.mean {
            #[allow(clippy::cast_precision_loss)]
            [Some(sleep), Some(spin)] => {
                spin != u64::MAX && (spin as f64) * SPIN_GAIN < sleep as f64
            }
            _ => false,
        }
    }

    fn end_epoch(&mut self, mean: u64) {
        let crowded = self.spin && self.load_n > 0 && self.load_sum > self.cpus * self.load_n;
        self.load_sum = 0;
        self.load_n = 0;
        // Polling on a crowded machine counts as no gain (see `note_load`).
        let mean = if crowded { u64::MAX } else { mean };
        self.mean[usize::from(self.spin)] = Some(mean);
        if self.exploring {
            self.exploring = false;
            self.spin = self.polling_pays();
            self.epochs = 0;
            return;
        }
        if self.spin && !self.polling_pays() {
            // Polling stopped paying (the workload changed phase): sleep again.
            self.spin = false;
            self.epochs = 0;
            return;
        }
        self.epochs += 1;
        if self.epochs >= EXPLORE_EVERY || self.mean[usize::from(!self.spin)].is_none() {
            self.epochs = 0;
            self.exploring = true;
            self.spin = !self.spin;
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

    /// Feed one epoch of exit waits of `us` each, back to back (a fake clock per policy).
    fn epoch(p: &mut SpinPolicy, us: u64) {
        loaded_epoch(p, us, 1);
    }

    #[test]
    fn policy_polls_only_where_it_measured_clearly_shorter_waits() {
        let mut p = SpinPolicy::new(200 * US, 2);
        assert!(!p.spinning(), "starts sleeping");
        epoch(&mut p, 60);
        assert!(p.spinning(), "then tries polling");
        epoch(&mut p, 20);
        assert!(p.spinning(), "3x shorter: keeps polling");
        for _ in 0..EXPLORE_EVERY - 1 {
            epoch(&mut p, 20);
            assert!(p.spinning());
        }
        epoch(&mut p, 20);
        assert!(
            !p.spinning(),
            "tries sleeping again after EXPLORE_EVERY epochs"
        );
        epoch(&mut p, 5);
        assert!(
            !p.spinning(),
            "sleeping became better (one CPU): stays sleeping"
        );
    }

    #[test]
    fn policy_keeps_sleeping_when_polling_gains_too_little() {
        let mut p = SpinPolicy::new(200 * US, 2);
        epoch(&mut p, 30);
        assert!(p.spinning());
        epoch(&mut p, 25);
        assert!(!p.spinning(), "25 vs 30 us is under SPIN_GAIN");
    }

    /// One epoch of exit waits of `us` each, sampling `runnable` tasks when asked.
    fn loaded_epoch(p: &mut SpinPolicy, us: u64, runnable: u32) {
        for _ in 0..EPOCH {
            if p.wants_load() {
                p.note_load(runnable);
            }
            p.clock_ns += us * 1000;
            let now = p.clock_ns;
            p.update(true, Duration::from_micros(us), true, now);
        }
    }

    #[test]
    fn policy_does_not_poll_on_a_crowded_machine() {
        let mut p = SpinPolicy::new(200 * US, 2);
        loaded_epoch(&mut p, 60, 3);
        assert!(p.spinning(), "tries polling");
        loaded_epoch(&mut p, 10, 3);
        assert!(
            !p.spinning(),
            "3 runnable tasks on 2 CPUs while polling: sleeps"
        );
        let mut p = SpinPolicy::new(200 * US, 2);
        loaded_epoch(&mut p, 60, 2);
        loaded_epoch(&mut p, 10, 2);
        assert!(
            p.spinning(),
            "2 runnable (sbx and the tracee) on 2 CPUs: polls"
        );
        loaded_epoch(&mut p, 10, 4);
        assert!(
            !p.spinning(),
            "the machine got crowded while polling: stops at once"
        );
    }

    #[test]
    fn only_exit_waits_are_measured() {
        let mut p = SpinPolicy::new(200 * US, 2);
        for _ in 0..10 * EPOCH {
            p.update(false, Duration::from_micros(900), false, 0);
        }
        assert!(!p.spinning(), "no epoch ended");
    }

    #[test]
    fn zero_maximum_never_polls() {
        let mut w = SpinWindow::new(Duration::ZERO);
        assert_eq!(w.window(), Duration::ZERO);
        w.update(false, 10 * US);
        assert_eq!(w.window(), Duration::ZERO);
        let mut p = SpinPolicy::new(Duration::ZERO, 2);
        epoch(&mut p, 60);
        assert!(!p.spinning());
    }
}
