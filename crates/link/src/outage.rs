//! Times the bottleneck is down: it sends nothing, and what arrives waits in
//! the queue (or is dropped by it when full), as a radio link in a handover
//! or a fade. This differs from the on/off loss patterns (Mahimahi's
//! mm-onoff), which drop every packet that arrives while off.

use emu_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
pub enum Outages {
    /// (start, length) offsets from the start of the shell, sorted, apart.
    List(Arc<[(Nanos, Nanos)]>),
    /// Up for `up`, down for `down`, repeating, starting up.
    Periodic { up: Nanos, down: Nanos },
    /// Up and down for exponentially distributed times of these means,
    /// starting up; drawn from the seed the link gives the cursor.
    Exponential { mean_up: Nanos, mean_down: Nanos },
}

impl Outages {
    /// The outages from `start` on; exponential ones draw from `seed` (the
    /// link's) in `stream`.
    pub fn cursor(&self, start: Nanos, seed: u64, stream: u64) -> OutageCursor {
        let mut rng = ChaCha8Rng::seed_from_u64(match self {
            Outages::Exponential { .. } => seed ^ 0x6f75_7461_6765,
            _ => 0,
        });
        rng.set_stream(stream);
        let mut cursor = OutageCursor {
            outages: self.clone(),
            start,
            index: 0,
            current: None,
            rng,
        };
        cursor.current = cursor.interval(start);
        cursor
    }

    /// Checks a list: each outage has a length and starts after the last ended.
    pub fn list(items: Vec<(Nanos, Nanos)>) -> Result<Outages, String> {
        let mut end = 0;
        for (i, &(start, length)) in items.iter().enumerate() {
            if length == 0 {
                return Err("an outage needs a length above 0 (e.g. 10s:2s)".into());
            }
            if i > 0 && start < end {
                return Err(format!(
                    "outages must be in time order and apart: one starts at {} before the one before ends at {}",
                    emu_core::time::format_duration(start),
                    emu_core::time::format_duration(end)
                ));
            }
            end = start + length;
        }
        Ok(Outages::List(items.into()))
    }
}

/// Down intervals read forward in time.
#[derive(Debug, Clone)]
pub struct OutageCursor {
    outages: Outages,
    start: Nanos,
    index: usize,
    /// The current or next down interval [from, until), absolute.
    current: Option<(Nanos, Nanos)>,
    rng: ChaCha8Rng,
}

impl OutageCursor {
    fn exponential(&mut self, mean: Nanos) -> Nanos {
        let u: f64 = self.rng.gen();
        ((-(1.0 - u).ln()) * mean as f64).max(1.0) as Nanos
    }

    /// The first down interval that begins after `after` (the start of the
    /// shell for the first).
    fn interval(&mut self, after: Nanos) -> Option<(Nanos, Nanos)> {
        match self.outages.clone() {
            Outages::List(items) => {
                let &(from, length) = items.get(self.index)?;
                self.index += 1;
                Some((self.start + from, self.start + from + length))
            }
            Outages::Periodic { up, down } => (down > 0).then_some((after + up, after + up + down)),
            Outages::Exponential {
                mean_up, mean_down, ..
            } => {
                let from = after + self.exponential(mean_up);
                Some((from, from + self.exponential(mean_down)))
            }
        }
    }

    /// The down interval in force at `t` or the next one after it. Times
    /// must not go backwards between calls.
    #[inline]
    pub fn down_from(&mut self, t: Nanos) -> Option<(Nanos, Nanos)> {
        while let Some((_, until)) = self.current {
            if until > t {
                break;
            }
            self.current = self.interval(until);
        }
        self.current
    }

    /// The first time at or after `t` when the link is up.
    #[inline]
    pub fn up_at(&mut self, t: Nanos) -> Nanos {
        match self.down_from(t) {
            Some((from, until)) if from <= t => until,
            _ => t,
        }
    }

    /// True if the link is down at `t`.
    pub fn is_down(&mut self, t: Nanos) -> bool {
        self.up_at(t) != t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn a_listed_outage_is_down_exactly_for_its_length() {
        let outages = Outages::list(vec![(10 * S, 2 * S), (20 * S, S)]).unwrap();
        let mut c = outages.cursor(7, 0, 0);
        assert!(!c.is_down(7 + 10 * S - 1));
        assert!(c.is_down(7 + 10 * S));
        assert_eq!(c.up_at(7 + 11 * S), 7 + 12 * S);
        assert!(!c.is_down(7 + 12 * S));
        assert!(c.is_down(7 + 20 * S));
        assert!(!c.is_down(7 + 30 * S));
        assert!(Outages::list(vec![(10 * S, 5 * S), (12 * S, S)]).is_err());
        assert!(Outages::list(vec![(10 * S, 0)]).is_err());
    }

    #[test]
    fn periodic_and_exponential_outages_have_their_shares() {
        let mut c = Outages::Periodic { up: 3 * S, down: S }.cursor(0, 0, 0);
        assert!(!c.is_down(3 * S - 1) && c.is_down(3 * S) && !c.is_down(4 * S));
        assert!(c.is_down(7 * S + S / 2));
        let mut c = Outages::Exponential {
            mean_up: S,
            mean_down: S / 4,
        }
        .cursor(0, 9, 0);
        let ms = 1_000_000;
        let down = (0..2_000_000u64).filter(|i| c.is_down(i * ms)).count();
        let share = down as f64 / 2_000_000.0;
        assert!((share - 0.2).abs() < 0.02, "down {share}");
    }
}
