//! When a packet that has left the server comes out of the path: after
//! aggregation (a MAC that releases what it has served in bursts), a base
//! delay that may follow a schedule, and jitter.
//!
//! A packet gets the delay in force at the instant it leaves the server,
//! exact to the nanosecond. When the delay drops, packets already in flight
//! keep the delay they were given and, by default, later packets never
//! overtake them: a packet leaves no earlier than the one before it, as on a
//! real serial path, so a drop in delay empties the line in a burst. Jitter
//! keeps the same order unless `reorder` lets delays cross, as netem does.

use crate::jitter::{Jitter, JitterSpec};
use crate::schedule::{Cursor, Schedule};
use crate::slot::SlotSpec;
use emu_core::Nanos;

/// What the user asked for, beyond a constant delay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DelayDynamics {
    /// Replaces the constant delay.
    pub schedule: Option<Schedule>,
    pub jitter: Option<JitterSpec>,
    /// Let packets overtake each other when their delays cross.
    pub reorder: bool,
    /// Release served packets only at multiples of this interval.
    pub aggregate: Option<Nanos>,
    /// Let packets that have served their delay leave only in netem's
    /// transmission slots (see [`crate::slot`]).
    pub slot: Option<SlotSpec>,
}

impl DelayDynamics {
    pub fn is_none(&self) -> bool {
        self.schedule.is_none()
            && self.jitter.is_none()
            && self.aggregate.is_none()
            && self.slot.is_none()
    }
}

/// The delay line of one direction.
#[derive(Debug, Clone)]
pub struct Propagation {
    base: Nanos,
    schedule: Option<Cursor>,
    jitter: Option<Jitter>,
    reorder: bool,
    aggregate: Option<Nanos>,
    start: Nanos,
    /// Latest due time handed out, which FIFO order never undercuts.
    last_due: Nanos,
}

impl Propagation {
    pub fn new(
        base: Nanos,
        dynamics: &DelayDynamics,
        start: Nanos,
        seed: u64,
        stream: u64,
    ) -> Propagation {
        Propagation {
            base,
            schedule: dynamics
                .schedule
                .as_ref()
                .map(|s| s.cursor(start, seed, stream)),
            jitter: dynamics
                .jitter
                .clone()
                .map(|spec| Jitter::new(spec, seed, stream)),
            reorder: dynamics.reorder,
            aggregate: dynamics.aggregate.filter(|&a| a > 0),
            start,
            last_due: 0,
        }
    }

    /// A line of constant delay `base`, for a link that had none and is
    /// given a delay or jitter while it runs: packets later never leave
    /// before `last_due`, the latest of those already in flight.
    pub(crate) fn constant(base: Nanos, start: Nanos, last_due: Nanos) -> Propagation {
        Propagation {
            last_due,
            ..Propagation::new(base, &DelayDynamics::default(), start, 0, 0)
        }
    }

    /// The base delay from now on; a schedule it followed ends.
    pub(crate) fn set_base(&mut self, base: Nanos) {
        self.base = base;
        self.schedule = None;
    }

    /// The base delay, None while it follows a schedule.
    pub(crate) fn base(&self) -> Option<Nanos> {
        self.schedule.is_none().then_some(self.base)
    }

    /// The jitter from now on (None: none).
    pub(crate) fn set_jitter(&mut self, jitter: Option<Jitter>) {
        self.jitter = jitter;
    }

    pub(crate) fn jitter(&self) -> Option<&Jitter> {
        self.jitter.as_ref()
    }

    /// True if packets may leave in another order than they were served.
    pub fn reorders(&self) -> bool {
        self.reorder
    }

    /// When a packet that left the server at `leave` comes out of the path.
    #[inline]
    pub fn due(&mut self, leave: Nanos) -> Nanos {
        let leave = match self.aggregate {
            Some(interval) => {
                let since = leave.saturating_sub(self.start);
                self.start + since.div_ceil(interval) * interval
            }
            None => leave,
        };
        let base = match &mut self.schedule {
            Some(cursor) => cursor.value_at(leave),
            None => self.base,
        };
        let delay = match &mut self.jitter {
            Some(jitter) => (base as i64 + jitter.sample()).max(0) as Nanos,
            None => base,
        };
        let due = leave + delay;
        if self.reorder {
            due
        } else {
            self.last_due = self.last_due.max(due);
            self.last_due
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::Distribution;

    const MS: Nanos = 1_000_000;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn aggregation_releases_at_interval_boundaries() {
        let mut p = Propagation::new(
            10 * MS,
            &DelayDynamics {
                aggregate: Some(4 * MS),
                ..Default::default()
            },
            1,
            0,
            0,
        );
        assert_eq!(p.due(1), 1 + 10 * MS);
        assert_eq!(p.due(2), 1 + 14 * MS);
        assert_eq!(p.due(1 + 4 * MS), 1 + 14 * MS);
        assert_eq!(p.due(2 + 4 * MS), 1 + 18 * MS);
    }

    #[test]
    fn a_drop_in_delay_never_lets_packets_overtake() {
        let schedule = Schedule::steps(vec![(0, 190 * MS), (S, 40 * MS)], false, false);
        let dynamics = DelayDynamics {
            schedule: Some(schedule),
            ..Default::default()
        };
        let mut p = Propagation::new(0, &dynamics, 0, 0, 0);
        assert_eq!(p.due(S - 1), S - 1 + 190 * MS);
        // Would be due at S + 40 ms, but waits for the packet ahead.
        assert_eq!(p.due(S), S - 1 + 190 * MS);
        assert_eq!(p.due(S + 200 * MS), S + 240 * MS);
        let mut p = Propagation::new(
            0,
            &DelayDynamics {
                reorder: true,
                ..dynamics
            },
            0,
            0,
            0,
        );
        assert_eq!(p.due(S - 1), S - 1 + 190 * MS);
        assert_eq!(p.due(S), S + 40 * MS, "with reorder it overtakes");
    }

    #[test]
    fn jitter_never_reorders_unless_asked() {
        let jitter = JitterSpec {
            sigma: 10 * MS,
            correlation: 0.0,
            distribution: Distribution::Normal,
        };
        for reorder in [false, true] {
            let mut p = Propagation::new(
                40 * MS,
                &DelayDynamics {
                    jitter: Some(jitter.clone()),
                    reorder,
                    ..Default::default()
                },
                0,
                1,
                0,
            );
            // One packet per millisecond: 10 ms of jitter would cross often.
            let dues: Vec<Nanos> = (0..10_000).map(|i| p.due(i * MS)).collect();
            let crossings = dues.windows(2).filter(|w| w[1] < w[0]).count();
            if reorder {
                assert!(crossings > 1000, "{crossings}");
            } else {
                assert_eq!(crossings, 0);
            }
        }
    }
}
