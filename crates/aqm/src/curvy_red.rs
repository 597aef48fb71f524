//! Curvy RED, as the AQM evaluation thesis (2017) states it: a packet
//! leaving after a sojourn `d` is signalled with p = min(1, (d / Dq)^U),
//! where `Dq` is the delay at which p reaches 1 and `U` the curviness.
//! U = 1 is a straight line from the empty queue; U = 2 squares it, which
//! is how the coupled dual queue's classic curve is the square of its L4S
//! one (the coupled dual queue's CRED builds on [`curvy`]).
//!
//! The thesis ran it only inside the coupled dual queue and gives no
//! values; on its own here it decides at dequeue from the departing
//! packet's sojourn, and the defaults are that dual queue's classic curve
//! (Dq 500 ms, U 2). A signalled ECT packet is CE-marked and sent; a
//! Not-ECT one is dropped and the next packet is judged in its place.

use crate::ecn::mark;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::{Fifo, Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Curvy RED's probability for a delay `delay` against the full-signal
/// delay `dq`: min(1, (delay / dq)^curviness).
pub fn curvy(delay: f64, dq: f64, curviness: f64) -> f64 {
    if dq <= 0.0 {
        return 1.0;
    }
    (delay.max(0.0) / dq).powf(curviness).min(1.0)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvyRedParams {
    pub limit: u64,
    /// The sojourn at which every packet is signalled.
    pub dq: Nanos,
    /// The exponent U.
    pub curviness: f64,
    pub ecn: bool,
    pub seed: u64,
}

impl Default for CurvyRedParams {
    fn default() -> Self {
        CurvyRedParams {
            limit: 1000,
            dq: 500_000_000,
            curviness: 2.0,
            ecn: true,
            seed: 1,
        }
    }
}

/// The `curvy_red` discipline.
pub struct CurvyRed {
    pub params: CurvyRedParams,
    fifo: Fifo,
    rng: ChaCha8Rng,
}

impl CurvyRed {
    pub fn new(params: CurvyRedParams) -> CurvyRed {
        CurvyRed {
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            fifo: Fifo::default(),
        }
    }
}

impl Queue for CurvyRed {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.fifo.len() as u64 >= self.params.limit {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        self.fifo.push(packet, now);
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        while let Some(mut packet) = self.fifo.pop() {
            let sojourn = now.saturating_sub(packet.enqueued) as f64;
            let p = curvy(sojourn, self.params.dq as f64, self.params.curviness);
            if self.rng.gen::<f64>() < p && !(self.params.ecn && mark(&mut packet, now, outcome)) {
                outcome.drop(packet, DropReason::Aqm, now);
                continue;
            }
            return Some(packet);
        }
        None
    }

    fn packets(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> usize {
        self.fifo.bytes
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "curvy_red limit {} dq {} curviness {}{}",
            p.limit,
            emu_core::time::format_duration(p.dq).replace(' ', ""),
            p.curviness,
            if p.ecn { " ecn" } else { " noecn" }
        )
    }
}

/// A positive exponent.
pub(crate) fn exponent(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(u) if u > 0.0 && u <= 64.0 => Ok(u),
        _ => Err(format!(
            "'{text}' is not a curviness: expected a number in (0, 64]"
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
        "dq",
        "TIME",
        "500ms",
        "sojourn at which p reaches 1: p = min(1, (sojourn/dq)^curviness)",
    ),
    ("curviness", "U", "2", "the exponent U"),
    (
        "ecn | noecn",
        "",
        "ecn",
        "mark ECT packets instead of dropping them",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

/// Reads curvy_red's options.
pub(crate) fn parse(words: &mut Words) -> Result<CurvyRedParams, SpecError> {
    let mut p = CurvyRedParams::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "dq" => p.dq = words.value(keyword, tc_time)?.max(1),
            "curviness" => p.curviness = words.value(keyword, exponent)?,
            "ecn" => p.ecn = true,
            "noecn" => p.ecn = false,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dualq::test_packet as packet;
    use emu_core::time::NS_PER_MS;
    use emu_core::Ecn;

    #[test]
    fn p_is_the_delay_over_dq_to_the_curviness_capped_at_1() {
        assert!((curvy(25.0, 100.0, 2.0) - 0.0625).abs() < 1e-12);
        assert!((curvy(25.0, 100.0, 1.0) - 0.25).abs() < 1e-12);
        assert!((curvy(50.0, 100.0, 3.0) - 0.125).abs() < 1e-12);
        assert_eq!(curvy(100.0, 100.0, 2.0), 1.0);
        assert_eq!(curvy(300.0, 100.0, 2.0), 1.0);
        assert_eq!(curvy(0.0, 100.0, 2.0), 0.0);
    }

    /// Packets that waited 50 ms of a 100 ms Dq, with U = 2, are marked
    /// at (0.5)² = 25%; with U = 1 at 50%.
    #[test]
    fn the_mark_rate_follows_the_departing_packets_sojourn() {
        for (u, want) in [(2.0, 0.25), (1.0, 0.5)] {
            let mut q = CurvyRed::new(CurvyRedParams {
                dq: 100 * NS_PER_MS,
                curviness: u,
                limit: 100_000,
                ..CurvyRedParams::default()
            });
            let mut out = Outcome::default();
            let n = 20_000;
            for _ in 0..n {
                q.enqueue(packet(0b10), 0, &mut out);
            }
            let marked = (0..n)
                .filter(|_| q.dequeue(50 * NS_PER_MS, &mut out).unwrap().ecn() == Some(Ecn::Ce))
                .count();
            let rate = marked as f64 / n as f64;
            assert!((rate - want).abs() < 0.01, "U {u}: {rate}");
            assert_eq!(out.marks.len(), marked);
        }
    }

    /// Past Dq every packet is signalled: ECT ones leave marked, Not-ECT
    /// ones are dropped and the queue goes on to the next.
    #[test]
    fn past_dq_ect_leaves_marked_and_not_ect_is_dropped() {
        let mut q = CurvyRed::new(CurvyRedParams {
            dq: 10 * NS_PER_MS,
            ..CurvyRedParams::default()
        });
        let mut out = Outcome::default();
        q.enqueue(packet(0b00), 0, &mut out);
        q.enqueue(packet(0b00), 0, &mut out);
        q.enqueue(packet(0b01), 0, &mut out);
        let sent = q.dequeue(10 * NS_PER_MS, &mut out).unwrap();
        assert_eq!(sent.ecn(), Some(Ecn::Ce));
        assert_eq!(out.drops.len(), 2);
        assert!(out.drops.iter().all(|d| d.reason == DropReason::Aqm));
        assert!(q.is_empty());
    }
}
