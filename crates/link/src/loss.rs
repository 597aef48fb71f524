//! Packet loss patterns, each seeded so a run with the same seed loses
//! exactly the same packets:
//! - independent (Bernoulli) loss with a probability;
//! - a link that switches on and off with exponentially distributed on and
//!   off times (Mahimahi's mm-onoff), dropping everything while off;
//! - the same with fixed on and off times (mm-intermittent).
//!
//! ChaCha8 is used because its output for a given seed and stream is fixed
//! by its specification, across platforms and crate versions.

use emu_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What loses packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    /// Each packet independently with this probability.
    Bernoulli(f64),
    /// On for an exponential time of mean `mean_on`, then off for one of
    /// mean `mean_off`, and so on; packets are dropped while off.
    OnOff { mean_on: Nanos, mean_off: Nanos },
    /// On for `on`, off for `off`, repeating.
    Periodic { on: Nanos, off: Nanos },
}

impl Pattern {
    /// True if this pattern never loses anything.
    pub fn is_none(&self) -> bool {
        match *self {
            Pattern::Bernoulli(p) => p <= 0.0,
            Pattern::OnOff { mean_off, .. } => mean_off == 0,
            Pattern::Periodic { off, .. } => off == 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Loss {
    pattern: Pattern,
    rng: ChaCha8Rng,
    /// For switching patterns: whether the link is on, and when it next
    /// switches. As in Mahimahi, a switching link starts off and switches
    /// on at once, at the time the shell starts.
    on: bool,
    next_switch: Option<Nanos>,
}

impl Loss {
    /// `stream` separates the two directions of one shell (and shells of one
    /// run) so they draw independent sequences from one user-given seed.
    pub fn new(probability: f64, seed: u64, stream: u64) -> Loss {
        Loss::with_pattern(Pattern::Bernoulli(probability), seed, stream)
    }

    pub fn with_pattern(pattern: Pattern, seed: u64, stream: u64) -> Loss {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Loss {
            pattern,
            rng,
            on: false,
            next_switch: None,
        }
    }

    pub fn pattern(&self) -> Pattern {
        self.pattern
    }

    /// Sets the time switching patterns start from.
    pub fn start(&mut self, at: Nanos) {
        self.next_switch = Some(at);
    }

    fn duration(&mut self, mean: Nanos, exponential: bool) -> Nanos {
        if !exponential {
            return mean;
        }
        let u: f64 = self.rng.gen::<f64>();
        // Inverse transform; bounded as Mahimahi bounds it (2^30 ms).
        ((-(1.0 - u).ln()) * mean as f64).min((1u64 << 30) as f64 * 1e6) as Nanos
    }

    /// Draws for one packet at `now`: true means drop it.
    #[inline]
    pub fn lose(&mut self, now: Nanos) -> bool {
        let (on_time, off_time, exponential) = match self.pattern {
            Pattern::Bernoulli(p) => return p > 0.0 && self.rng.gen::<f64>() < p,
            Pattern::OnOff { mean_on, mean_off } => (mean_on, mean_off, true),
            Pattern::Periodic { on, off } => (on, off, false),
        };
        if on_time == 0 && off_time == 0 {
            return false; // no phase has any length (refused at parse time)
        }
        let mut next = *self.next_switch.get_or_insert(now);
        while next <= now {
            self.on = !self.on;
            next += self.duration(if self.on { on_time } else { off_time }, exponential);
        }
        self.next_switch = Some(next);
        !self.on
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn periodic_is_on_then_off_on_schedule() {
        let mut loss = Loss::with_pattern(Pattern::Periodic { on: 2 * S, off: S }, 1, 0);
        loss.start(0);
        let dropped: Vec<bool> = [0, S, 2 * S, 2 * S + S / 2, 3 * S, 5 * S + 1]
            .iter()
            .map(|&t| loss.lose(t))
            .collect();
        assert_eq!(dropped, vec![false, false, true, true, false, true]);
    }

    #[test]
    fn on_off_times_are_exponential_with_their_means() {
        let mut loss = Loss::with_pattern(
            Pattern::OnOff {
                mean_on: S,
                mean_off: S / 4,
            },
            7,
            0,
        );
        loss.start(0);
        // Sample every millisecond for 2000 s: the fraction of time off is
        // mean_off / (mean_on + mean_off) = 20%.
        let ms = 1_000_000;
        let off = (0..2_000_000u64).filter(|i| loss.lose(i * ms)).count();
        let fraction = off as f64 / 2_000_000.0;
        assert!((fraction - 0.2).abs() < 0.02, "off {fraction}");
    }

    #[test]
    fn bernoulli_with_a_seed_repeats() {
        let draw = |seed| {
            let mut l = Loss::new(0.3, seed, 1);
            (0..100).map(|_| l.lose(0)).collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }
}
