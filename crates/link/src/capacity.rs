//! Serialization when the bottleneck's rate changes over time or the link
//! goes down: a packet's transmission time is the integral of the rate over
//! its service, so a packet begun at 100 Mbit/s and finished after a step to
//! 20 Mbit/s pays each rate for the bits sent under it, and one caught by an
//! outage resumes where it stopped when the link comes back.
//!
//! The arithmetic is exact: bits are counted in bit·nanoseconds (a rate in
//! bit/s times a time in ns), and a finish time is rounded up to the next
//! nanosecond only once.

use crate::outage::OutageCursor;
use crate::schedule::Cursor;
use emu_core::time::NS_PER_SEC;
use emu_core::{Nanos, Rate};

/// The rate in force over time.
#[derive(Debug, Clone)]
pub enum RateCurve {
    /// bit/s, for ever.
    Constant(u64),
    /// bit/s from a schedule.
    Scheduled(Box<Cursor>),
}

impl RateCurve {
    /// The rate at `t` and when it may next change.
    #[inline]
    fn at(&mut self, t: Nanos) -> (u64, Option<Nanos>) {
        match self {
            RateCurve::Constant(rate) => (*rate, None),
            RateCurve::Scheduled(cursor) => {
                let rate = cursor.value_at(t);
                (rate, cursor.next_change())
            }
        }
    }
}

/// Starts and finishes of packets' service, for a [`RateCurve`] with
/// optional outages.
#[derive(Debug, Clone)]
pub struct ServiceCurve {
    pub rate: RateCurve,
}

impl ServiceCurve {
    /// The rate in force at `t` (times must not go backwards).
    pub fn rate_at(&mut self, t: Nanos) -> Rate {
        Rate::from_bits_per_sec(self.rate.at(t).0.max(1)).expect("above 0")
    }

    /// The start and finish of sending `bytes`, once the server is free at
    /// `free` (times must not go backwards between calls).
    pub fn serve(
        &mut self,
        free: Nanos,
        bytes: u64,
        mut outage: Option<&mut OutageCursor>,
    ) -> (Nanos, Nanos) {
        let mut t = free;
        if let Some(o) = outage.as_deref_mut() {
            t = o.up_at(t);
        }
        let begin = t;
        // Work left, in bit·ns.
        let mut left = bytes as u128 * 8 * NS_PER_SEC as u128;
        loop {
            let (rate, change) = self.rate.at(t);
            let down = match outage.as_deref_mut() {
                Some(o) => o.down_from(t),
                None => None,
            };
            if let Some((from, until)) = down {
                if from <= t {
                    t = until;
                    continue;
                }
            }
            let segment_end = match (change, down.map(|d| d.0)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let need = left.div_ceil(rate as u128);
            match segment_end {
                Some(end) if (t as u128 + need) > end as u128 => {
                    left -= (end - t) as u128 * rate as u128;
                    t = end;
                }
                _ => return (begin, t + need as Nanos),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outage::Outages;
    use crate::schedule::Schedule;

    const US: Nanos = 1_000;
    const S: Nanos = 1_000_000_000;

    fn curve(points: Vec<(Nanos, u64)>) -> ServiceCurve {
        ServiceCurve {
            rate: RateCurve::Scheduled(Box::new(
                Schedule::steps(points, false, false).cursor(0, 0, 0),
            )),
        }
    }

    #[test]
    fn a_packet_pays_each_rate_for_the_bits_sent_under_it() {
        // 1500 bytes = 12000 bits: 120 µs at 100 Mbit/s, 600 µs at 20 Mbit/s.
        let mut c = curve(vec![(0, 100_000_000), (S, 20_000_000)]);
        assert_eq!(c.serve(0, 1500, None), (0, 120 * US));
        assert_eq!(c.serve(S - 120 * US, 1500, None), (S - 120 * US, S));
        // Half sent before the step (60 µs = 6000 bits), half after (300 µs).
        assert_eq!(c.serve(S + 10 * S, 1500, None).1 - 11 * S, 600 * US);
        let mut c = curve(vec![(0, 100_000_000), (S, 20_000_000)]);
        assert_eq!(
            c.serve(S - 60 * US, 1500, None),
            (S - 60 * US, S + 300 * US)
        );
    }

    #[test]
    fn an_outage_pauses_service_and_a_packet_resumes_after_it() {
        let mut c = ServiceCurve {
            rate: RateCurve::Constant(100_000_000),
        };
        let mut outage = Outages::list(vec![(S, S)]).unwrap().cursor(0, 0, 0);
        // Starts 60 µs before the outage: the rest is sent after it.
        assert_eq!(
            c.serve(S - 60 * US, 1500, Some(&mut outage)),
            (S - 60 * US, 2 * S + 60 * US)
        );
        // Ready during the outage: starts when it ends.
        let mut outage = Outages::list(vec![(S, S)]).unwrap().cursor(0, 0, 0);
        assert_eq!(
            c.serve(S + 5, 1500, Some(&mut outage)),
            (2 * S, 2 * S + 120 * US)
        );
    }
}
