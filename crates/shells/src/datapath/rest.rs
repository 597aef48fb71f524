//! The rests a real-time thread that may never run out of work takes, so
//! the kernel never throttles it.
//!
//! The kernel gives the real-time class 95% of each second on a CPU
//! (`/proc/sys/kernel/sched_rt_runtime_us`) and then holds every real-time
//! thread there until the second ends: a stall of about 50 ms, once a
//! second, for as long as the thread stays busy. The experiments' fabric
//! thread, alone in carrying every host's packets, stays busy at
//! 1 Gbit/s (its departures 12 µs apart are closer than any sleep is
//! worth) and at its throughput ceiling. So over each [`WINDOW`] the
//! thread makes sure it has slept [`SHARE`] of it, more than the 5% the
//! kernel keeps back, resting for what its own sleeps left short: at most
//! 60 µs every millisecond in place of 50 ms every second.
//!
//! Cost: a rest delays what falls due during it, by up to its length,
//! and only while the thread had no sleep of its own to speak of; a
//! thread that sleeps between packets never rests.
//!
//! A lane whose work alone exceeds the budget is still held once a
//! second; rests only defer that. `emu run` says when a lane was held
//! (`crate::sys::schedstat`, the experiment's `timing_warnings`); the
//! measurements are in docs/performance-history.md, "Rests".

use emu_core::time::Nanos;

/// The span over which the thread's sleeps are counted.
pub const WINDOW: Nanos = 1_000_000;
/// The least share of each window spent asleep: above the 5% the kernel
/// keeps from the real-time class by default, with a margin for the
/// window's edges.
pub const SHARE: f64 = 0.06;

/// The sleeps of the current window, and when it began.
#[derive(Debug, Clone)]
pub struct Rests {
    window_start: Nanos,
    slept: Nanos,
}

impl Rests {
    /// A window beginning at `now`.
    pub fn new(now: Nanos) -> Rests {
        Rests {
            window_start: now,
            slept: 0,
        }
    }

    /// The thread slept (or rested) for `span`.
    pub fn slept(&mut self, span: Nanos) {
        self.slept = self.slept.saturating_add(span);
    }

    /// At `now`: once a window is over, how long to rest for what its
    /// sleeps fell short of [`SHARE`] of it (None: they did not), and a
    /// new window begins.
    pub fn due(&mut self, now: Nanos) -> Option<Nanos> {
        let span = now.saturating_sub(self.window_start);
        if span < WINDOW {
            return None;
        }
        let wanted = (span as f64 * SHARE) as Nanos;
        let short = wanted.saturating_sub(self.slept);
        *self = Rests::new(now);
        (short > 0).then_some(short)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_without_sleep_ends_in_a_rest_of_its_share() {
        let mut rests = Rests::new(1_000);
        assert_eq!(rests.due(1_000 + WINDOW - 1), None);
        assert_eq!(rests.due(1_000 + WINDOW), Some(60_000));
        // A new window began: nothing is due until it ends.
        assert_eq!(rests.due(1_000 + WINDOW + 5), None);
    }

    #[test]
    fn sleeps_of_its_own_count_towards_the_share() {
        let mut rests = Rests::new(0);
        rests.slept(40_000);
        assert_eq!(rests.due(WINDOW), Some(20_000));
        rests.slept(70_000);
        assert_eq!(rests.due(2 * WINDOW), None);
        // A longer window (the thread was held elsewhere) wants more.
        assert_eq!(rests.due(4 * WINDOW), Some(120_000));
    }
}
