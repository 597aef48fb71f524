//! How long before a departure the pump stops sleeping and spins: as long
//! as this machine's timed wake-ups are late, and no longer.
//!
//! A thread asked to wake at `t` runs at `t + e`, where `e` (timer slack,
//! the hypervisor, the scheduler) is a few microseconds on bare metal and
//! tens on a virtual machine. Sleeping until `departure - s` and spinning
//! the rest makes the write exact whenever `e < s`; every microsecond of
//! `s` beyond `e` is a microsecond of a core burnt per packet. So `s`
//! follows a high quantile of the wake-up lateness measured on the pump's
//! own sleeps: a stochastic-approximation quantile estimator (each sample
//! above the estimate raises it by `q` steps, each below lowers it by
//! `1 - q`; it settles where a fraction `q` of samples fall below).
//!
//! Fixed steps alone follow too slowly where it matters most: at a few
//! packets a second (a ping, a latency probe) the pump sleeps long, wakes
//! from deep idle later than the short calibration sleeps measured, and a
//! fixed 1 µs step would need hundreds of late packets to cover a 200 µs
//! wake-up. So a late wake-up also closes a quarter of the gap at once,
//! and an early one gives back a small share of the surplus: the estimate
//! reaches new lateness within a few packets and sheds an outlier within
//! about two thousand.

use emu_core::time::Nanos;

/// The quantile of the wake-up lateness the spin covers.
const QUANTILE: f64 = 0.98;
/// Step of the estimator, in ns: large enough to follow a change within a
/// second of packets, small against the lateness it tracks.
const STEP_NS: f64 = 1000.0;
/// Bounds of the adaptive spin.
const MIN_SPIN: Nanos = 2_000;
const MAX_SPIN: Nanos = 500_000;
/// Added to the estimate: the time from waking to the first packet write.
const MARGIN: Nanos = 3_000;
/// Share of the gap a late wake-up closes at once.
const ATTACK: f64 = 0.25;
/// Share of the surplus an early wake-up gives back.
const DECAY: f64 = 1.0 / 512.0;

/// The spin to use before each departure.
#[derive(Debug, Clone)]
pub struct Spin {
    /// `Some` when the user fixed it with `--spin`.
    fixed: Option<Nanos>,
    estimate: f64,
}

impl Spin {
    /// A fixed spin, or (None) one that adapts. It starts at the longest
    /// spin and learns its way down: a sparse flow (a ping) gives the
    /// estimator few samples, and wake-ups from a long idle sleep are later
    /// than any short calibration sleep measures, so a spin that starts low
    /// makes the first packets of every shell late. Starting high costs a
    /// spin of up to MAX_SPIN per packet for the first thousand or so
    /// sleeps: exact first, cheap once learnt.
    pub fn new(fixed: Option<Nanos>) -> Spin {
        let estimate = match fixed {
            Some(_) => 0.0,
            None => MAX_SPIN as f64,
        };
        Spin { fixed, estimate }
    }

    /// How long before a departure to start spinning.
    pub fn current(&self) -> Nanos {
        match self.fixed {
            Some(spin) => spin,
            None => ((self.estimate as Nanos) + MARGIN).clamp(MIN_SPIN, MAX_SPIN),
        }
    }

    /// Learns from one timed sleep that ended by its timeout: it was meant
    /// to end at `target` and the thread ran again at `woke`.
    pub fn observe(&mut self, target: Nanos, woke: Nanos) {
        if self.fixed.is_some() {
            return;
        }
        let late = woke.saturating_sub(target) as f64;
        if late > self.estimate {
            self.estimate += STEP_NS * QUANTILE + (late - self.estimate) * ATTACK;
        } else {
            self.estimate -= STEP_NS * (1.0 - QUANTILE) + (self.estimate - late) * DECAY;
        }
        self.estimate = self.estimate.clamp(0.0, MAX_SPIN as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_settles_on_the_high_quantile_of_the_lateness() {
        let mut spin = Spin {
            fixed: None,
            estimate: 0.0,
        };
        // Lateness uniform over 0..100 µs: the 98th percentile is 98 µs.
        for i in 0..200_000u64 {
            let late = (i * 7919) % 100_000;
            spin.observe(1_000_000, 1_000_000 + late);
        }
        let estimate = spin.estimate;
        assert!((93_000.0..=100_000.0).contains(&estimate), "{estimate}");
        assert_eq!(spin.current(), estimate as Nanos + MARGIN);
        // A quieter machine brings it down again.
        for _ in 0..200_000 {
            spin.observe(1_000_000, 1_005_000);
        }
        assert!(spin.current() < 10_000, "{}", spin.current());
    }

    /// A sparse flow (a ping) whose sleeps wake 200 µs late is covered
    /// within a handful of packets, and one 5 ms hiccup is forgotten
    /// within two thousand.
    #[test]
    fn new_lateness_is_covered_within_a_few_packets() {
        let mut spin = Spin {
            fixed: None,
            estimate: 10_000.0,
        };
        for _ in 0..12 {
            spin.observe(1_000_000, 1_200_000);
        }
        assert!(spin.current() >= 180_000, "{}", spin.current());
        let mut spin = Spin {
            fixed: None,
            estimate: 20_000.0,
        };
        spin.observe(1_000_000, 6_000_000);
        assert_eq!(spin.current(), MAX_SPIN);
        for _ in 0..2000 {
            spin.observe(1_000_000, 1_020_000);
        }
        assert!(spin.current() < 40_000, "{}", spin.current());
    }

    #[test]
    fn an_adaptive_spin_starts_at_the_longest_and_learns_down() {
        let mut spin = Spin::new(None);
        assert_eq!(spin.current(), MAX_SPIN);
        for _ in 0..4000 {
            spin.observe(1_000_000, 1_010_000);
        }
        assert!(spin.current() < 30_000, "{}", spin.current());
    }

    #[test]
    fn a_fixed_spin_does_not_move() {
        let mut spin = Spin::new(Some(123_000));
        spin.observe(0, 1_000_000);
        assert_eq!(spin.current(), 123_000);
    }
}
