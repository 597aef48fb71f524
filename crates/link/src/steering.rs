//! Changes asked of a running link from outside (emu's control socket):
//! what may be set, the changes waiting for their instant, and the
//! sojourn figures a subscriber reads.
//!
//! A change is taken the way a queue step is: the model runs up to its
//! instant, then the settings apply, each logged as a change record at
//! that instant. A link nobody steers pays one look at an empty queue of
//! changes per run of the model and one branch per departure.

use aqm::QueueSpec;
use emu_core::{Nanos, Rate};
use std::collections::VecDeque;

/// One parameter a controller sets.
#[derive(Debug, Clone, PartialEq)]
pub enum Setting {
    /// The bottleneck's rate (a rate schedule it followed ends).
    Rate(Rate),
    /// The base propagation delay (a delay schedule it followed ends).
    Delay(Nanos),
    /// The probability of independent random loss.
    Loss(f64),
    /// The jitter's deviation (0: none), keeping the distribution and
    /// correlation the link was given, normal by default.
    Jitter(Nanos),
    /// The queue's parameters, in place (`tc qdisc change`).
    QueueParameters(QueueSpec),
    /// A new queue (`tc qdisc replace`): what the old one holds is dropped
    /// with reason `replaced`.
    QueueReplaced(QueueSpec),
}

impl Setting {
    /// The name a controller gives the setting (`rate`, `queue`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Setting::Rate(_) => "rate",
            Setting::Delay(_) => "delay",
            Setting::Loss(_) => "loss",
            Setting::Jitter(_) => "jitter",
            Setting::QueueParameters(_) => "queue",
            Setting::QueueReplaced(_) => "queue_replace",
        }
    }
}

/// Changes waiting for their instant, earliest first.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    changes: VecDeque<(Nanos, Vec<Setting>)>,
}

impl Pending {
    /// Adds settings for `at`, after any already waiting for the same
    /// instant.
    pub(crate) fn add(&mut self, at: Nanos, settings: Vec<Setting>) {
        let position = self.changes.partition_point(|(t, _)| *t <= at);
        self.changes.insert(position, (at, settings));
    }

    #[inline]
    pub(crate) fn next_at(&self) -> Option<Nanos> {
        self.changes.front().map(|c| c.0)
    }

    /// The last queue replacement waiting for an instant at or before `at`.
    pub(crate) fn last_queue_before(&self, at: Nanos) -> Option<&QueueSpec> {
        self.changes
            .iter()
            .take_while(|(t, _)| *t <= at)
            .flat_map(|(_, settings)| settings)
            .filter_map(|s| match s {
                Setting::QueueReplaced(spec) => Some(spec),
                _ => None,
            })
            .last()
    }

    pub(crate) fn pop(&mut self) -> Option<(Nanos, Vec<Setting>)> {
        self.changes.pop_front()
    }
}

/// Sojourn times of the packets that left since the window was last read,
/// in buckets an eighth of an octave wide from 1 µs: a quantile read back
/// is the upper bound of its bucket, within 9 % above the true value.
#[derive(Debug, Clone)]
pub struct SojournWindow {
    counts: Vec<u32>,
    total: u64,
}

const BUCKETS_PER_OCTAVE: f64 = 8.0;
/// 1 µs up to 2^24 µs (about 17 s); longer sojourns count in the last.
const BUCKETS: usize = 24 * 8 + 1;
const FIRST: f64 = 1_000.0;

impl Default for SojournWindow {
    fn default() -> SojournWindow {
        SojournWindow {
            counts: vec![0; BUCKETS],
            total: 0,
        }
    }
}

impl SojournWindow {
    #[inline]
    pub fn add(&mut self, sojourn: Nanos) {
        let bucket = if (sojourn as f64) <= FIRST {
            0
        } else {
            let octaves = (sojourn as f64 / FIRST).log2();
            ((octaves * BUCKETS_PER_OCTAVE).ceil() as usize).min(BUCKETS - 1)
        };
        self.counts[bucket] += 1;
        self.total += 1;
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The `q` quantile (0 to 1) of the sojourns added, None if none were.
    pub fn quantile(&self, q: f64) -> Option<Nanos> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0u64;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count as u64;
            if seen >= rank {
                return Some((FIRST * 2f64.powf(bucket as f64 / BUCKETS_PER_OCTAVE)) as Nanos);
            }
        }
        None
    }
}

/// A running link's settings as a controller reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// bit/s; None for a link without a rate (unlimited, or a trace), or
    /// one whose rate follows a schedule.
    pub rate_bps: Option<u64>,
    /// The base delay in ns; None while it follows a schedule.
    pub delay_ns: Option<Nanos>,
    /// Probability of independent loss; None for a loss pattern.
    pub loss: Option<f64>,
    pub jitter_ns: Nanos,
    /// The queue as `tc qdisc` would show it.
    pub queue: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_wait_in_order_of_instant_and_ties_keep_their_order() {
        let mut pending = Pending::default();
        let rate = |r: &str| Setting::Rate(Rate::parse(r).unwrap());
        pending.add(20, vec![rate("1mbit")]);
        pending.add(10, vec![rate("2mbit")]);
        pending.add(20, vec![rate("3mbit")]);
        assert_eq!(pending.next_at(), Some(10));
        let order: Vec<_> = std::iter::from_fn(|| pending.pop()).collect();
        assert_eq!(
            order,
            [
                (10, vec![rate("2mbit")]),
                (20, vec![rate("1mbit")]),
                (20, vec![rate("3mbit")])
            ]
        );
    }

    #[test]
    fn sojourn_quantiles_are_within_a_bucket_above_the_truth() {
        let mut window = SojournWindow::default();
        assert_eq!(window.quantile(0.5), None);
        // 1 ms to 100 ms in 1 ms steps.
        for k in 1..=100u64 {
            window.add(k * 1_000_000);
        }
        let p50 = window.quantile(0.5).unwrap() as f64;
        let p99 = window.quantile(0.99).unwrap() as f64;
        assert!((50e6..=50e6 * 1.091).contains(&p50), "{p50}");
        assert!((99e6..=99e6 * 1.091).contains(&p99), "{p99}");
        assert_eq!(window.count(), 100);
        window.add(0);
        assert_eq!(window.quantile(0.0), Some(1_000));
    }
}
