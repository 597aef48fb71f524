//! Stateless RED, as the AQM evaluation thesis (2017) ran it: the
//! probability comes from the instantaneous queue, in packets, that an
//! arrival finds (the arrival not counted). It is 0 below `min`, rises on
//! RED's straight line ([`crate::red::ramp`]) to `probability` at `max`
//! (both included), and is 1 above `max`. There is no average and no count
//! since the last mark: each arrival is decided alone, so a queue that has
//! just shrunk is judged by its new length at once.
//!
//! A chosen ECT packet is CE-marked and kept, above `max` too, so every
//! ECT packet is marked there and every Not-ECT one dropped; only the
//! buffer limit drops ECT packets. Against emu's `red`: no EWMA, no idle
//! decay, no spreading of marks by count, thresholds in (fractional)
//! packets, and ECN on by default.

use crate::ecn::mark;
use crate::grammar::{probability, Opt, SpecError, Words};
use crate::red::ramp;
use crate::{Fifo, Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstantRedParams {
    /// Most packets held (tail drop beyond).
    pub limit: u64,
    /// Queue length, in packets, where the ramp starts.
    pub min: f64,
    /// Queue length, in packets, where the ramp reaches `max_p`; above it
    /// every packet is signalled.
    pub max: f64,
    pub max_p: f64,
    /// Mark ECT packets rather than drop them.
    pub ecn: bool,
    pub seed: u64,
}

impl Default for InstantRedParams {
    /// The thesis's single-queue RED: max 34 packets, min max/3, 2%.
    fn default() -> Self {
        InstantRedParams {
            limit: 1000,
            min: 34.0 / 3.0,
            max: 34.0,
            max_p: 0.02,
            ecn: true,
            seed: 1,
        }
    }
}

impl InstantRedParams {
    /// The signalling probability for an arrival that finds `queue` packets.
    pub fn probability(&self, queue: usize) -> f64 {
        let queue = queue as f64;
        if queue > self.max {
            1.0
        } else {
            ramp(self.min, self.max, self.max_p, queue)
        }
    }

    pub(crate) fn describe(&self, name: &str) -> String {
        format!(
            "{name} limit {} min {} max {} probability {}{}",
            self.limit,
            self.min,
            self.max,
            self.max_p,
            if self.ecn { " ecn" } else { " noecn" }
        )
    }
}

/// The `instant_red` discipline.
pub struct InstantRed {
    pub params: InstantRedParams,
    fifo: Fifo,
    rng: ChaCha8Rng,
}

impl InstantRed {
    pub fn new(params: InstantRedParams) -> InstantRed {
        InstantRed {
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            fifo: Fifo::default(),
        }
    }
}

impl Queue for InstantRed {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.fifo.len() as u64 >= self.params.limit {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let p = self.params.probability(self.fifo.len());
        if self.rng.gen::<f64>() < p && !(self.params.ecn && mark(&mut packet, now, outcome)) {
            outcome.drop(packet, DropReason::Aqm, now);
            return false;
        }
        self.fifo.push(packet, now);
        true
    }

    fn dequeue(&mut self, _now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.fifo.pop()
    }

    fn packets(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> usize {
        self.fifo.bytes
    }

    fn describe(&self) -> String {
        self.params.describe("instant_red")
    }
}

/// A queue length in packets, fractions allowed (the thesis's scaled
/// thresholds are not whole).
pub(crate) fn packets(text: &str) -> Result<f64, String> {
    match text.trim_end_matches('p').parse::<f64>() {
        Ok(n) if n >= 0.0 && n.is_finite() => Ok(n),
        _ => Err(format!(
            "'{text}' is not a queue length: expected a number of packets, e.g. 34 or 5.67"
        )),
    }
}

pub(crate) const OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "1000",
        "most packets held (tail drop beyond)",
    ),
    (
        "min",
        "PACKETS",
        "max/3",
        "queue length where the ramp starts",
    ),
    (
        "max",
        "PACKETS",
        "34",
        "queue length where the ramp reaches 'probability'; above it p = 1",
    ),
    ("probability", "P", "0.02", "signalling probability at max"),
    (
        "ecn | noecn",
        "",
        "ecn",
        "mark ECT packets (above max too) instead of dropping them",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

/// Reads instant_red's options.
pub(crate) fn parse(words: &mut Words) -> Result<InstantRedParams, SpecError> {
    let mut p = InstantRedParams::default();
    let mut min = None;
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "min" => min = Some(words.value(keyword, packets)?),
            "max" => p.max = words.value(keyword, packets)?,
            "probability" => p.max_p = words.value(keyword, probability)?,
            "ecn" => p.ecn = true,
            "noecn" => p.ecn = false,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    p.min = min.unwrap_or(p.max / 3.0);
    if p.min >= p.max {
        return Err(SpecError(format!(
            "instant_red: min ({}) must be below max ({})",
            p.min, p.max
        )));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dualq::test_packet as packet;
    use emu_core::Ecn;

    fn params(min: f64, max: f64) -> InstantRedParams {
        InstantRedParams {
            min,
            max,
            ..InstantRedParams::default()
        }
    }

    /// The thesis's curve: 0 below min, linear to max_p at max, 1 above.
    #[test]
    fn the_probability_ramps_to_max_p_at_max_and_is_1_above() {
        let p = params(10.0, 30.0);
        assert_eq!(p.probability(9), 0.0);
        assert_eq!(p.probability(10), 0.0);
        assert!((p.probability(20) - 0.01).abs() < 1e-12);
        assert!((p.probability(30) - 0.02).abs() < 1e-12, "max included");
        assert_eq!(p.probability(31), 1.0);
    }

    /// The decision reads the queue the arrival finds, not an average: a
    /// queue grown past max and drained back under it signals nothing.
    /// (No ramp here, max_p = 0, so only the step above max signals.)
    #[test]
    fn each_arrival_is_judged_by_the_queue_it_finds() {
        let mut q = InstantRed::new(InstantRedParams {
            max_p: 0.0,
            ..params(2.0, 4.0)
        });
        let mut out = Outcome::default();
        for _ in 0..5 {
            assert!(q.enqueue(packet(0b10), 0, &mut out));
        }
        assert!(out.marks.is_empty(), "arrivals found 0 to 4 packets");
        for _ in 0..100 {
            assert!(q.enqueue(packet(0b10), 0, &mut out));
        }
        assert_eq!(out.marks.len(), 100, "every arrival above max is marked");
        while q.packets() > 4 {
            q.dequeue(0, &mut out);
        }
        for _ in 0..50 {
            q.enqueue(packet(0b10), 0, &mut out);
            q.dequeue(0, &mut out);
        }
        assert_eq!(out.marks.len(), 100, "4 packets found: no signal");
    }

    /// Between the thresholds the rate is p itself: no count spreads the
    /// marks, so gaps longer than 1/p occur (RED's count forbids them).
    #[test]
    fn with_the_queue_held_marks_come_at_rate_p_with_no_spreading() {
        let mut q = InstantRed::new(params(0.0, 20.0));
        let mut out = Outcome::default();
        for _ in 0..10 {
            q.enqueue(packet(0b10), 0, &mut out);
        }
        out.marks.clear(); // p = 0.01 with 10 packets held
        let (mut since, mut longest, n) = (0, 0, 100_000);
        for _ in 0..n {
            let before = out.marks.len();
            q.enqueue(packet(0b10), 0, &mut out);
            q.dequeue(0, &mut out);
            since += 1;
            if out.marks.len() > before {
                longest = longest.max(since);
                since = 0;
            }
        }
        let rate = out.marks.len() as f64 / n as f64;
        assert!((rate - 0.01).abs() < 0.001, "rate {rate}");
        assert!(longest > 100, "longest gap {longest}");
    }

    /// Above max every ECT packet is marked and kept, every Not-ECT one
    /// dropped; with `noecn` both are dropped.
    #[test]
    fn above_max_ect_is_marked_and_not_ect_dropped() {
        let flat = InstantRedParams {
            max_p: 0.0,
            ..params(1.0, 3.0)
        };
        let mut q = InstantRed::new(flat.clone());
        let mut out = Outcome::default();
        for _ in 0..4 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert!(out.marks.is_empty());
        assert!(q.enqueue(packet(0b01), 0, &mut out));
        assert!(q.enqueue(packet(0b10), 0, &mut out));
        assert_eq!(out.marks.len(), 2);
        assert!(!q.enqueue(packet(0b00), 0, &mut out));
        assert_eq!(out.drops.last().unwrap().reason, DropReason::Aqm);
        let ecn: Vec<_> = std::iter::from_fn(|| q.dequeue(0, &mut out))
            .map(|p| p.ecn().unwrap())
            .collect();
        assert_eq!(ecn[4..], [Ecn::Ce, Ecn::Ce]);
        let mut q = InstantRed::new(InstantRedParams { ecn: false, ..flat });
        for _ in 0..5 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert_eq!(
            q.packets(),
            4,
            "without ecn the fifth ECT packet is dropped"
        );
    }

    #[test]
    fn the_limit_tail_drops_even_ect() {
        let mut q = InstantRed::new(InstantRedParams {
            limit: 3,
            ..params(100.0, 200.0)
        });
        let mut out = Outcome::default();
        for _ in 0..4 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert_eq!(q.packets(), 3);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
