//! The AQM evaluation thesis's own coupled dual queue on PIE (`l4s-pie`):
//! PIE's controller, unchanged, turns the classic queue's delay into p_C,
//! and every decision is taken at enqueue.
//!
//! - An arrival finding the buffer (`limit` packets over both queues) full
//!   is dropped.
//! - A classic arrival goes through PIE as the `pie` discipline does
//!   (Linux's arithmetic, burst allowance, safeguards and derandomization,
//!   the classic backlog as PIE's queue): CE on ECT(0) while p_C ≤ 10%,
//!   otherwise a drop.
//! - An L arrival is CE-marked with p_L = √(K·p_C), the thesis's Eq. 3.4
//!   as printed (`l4s_form printed`), or with p_L = K·√p_C, the inverse of
//!   the coupling law p_C = (p_L/K)² (`l4s_form inverse`). It is marked
//!   for certain when the L head has waited over `step` (1 ms) and L holds
//!   more than `step_packets` (2) packets, PI²'s step. PIE's burst
//!   allowance and safeguards do not apply to L.
//! - Dequeue gives strict priority to L; only classic departures feed
//!   PIE's delay measurement.
//!
//! Target and tupdate default to RFC 8033's 15 ms, which the thesis's
//! "unchanged" suggests.

use super::pi2::positive;
use super::{classify, head_sojourn, packet_count, time, Class, Pair, LIMIT_OPTION, SEED_OPTION};
use crate::ecn::mark;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::pie::{ticks, PieParams, PieVars, UpdateTimer, MAX_PROB};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How p_L is drawn from p_C.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum L4sForm {
    /// √(K·p_C): the thesis's Eq. 3.4 as printed.
    Printed,
    /// K·√p_C: the inverse of p_C = (p_L/K)².
    Inverse,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoupledPieParams {
    /// PIE's parameters; its `limit` is the buffer over both queues.
    pub pie: PieParams,
    pub coupling: f64,
    pub l4s_form: L4sForm,
    pub step: Nanos,
    pub step_packets: u32,
}

impl Default for CoupledPieParams {
    fn default() -> Self {
        CoupledPieParams {
            pie: PieParams {
                ecn: true,
                ..PieParams::default()
            },
            coupling: 2.0,
            l4s_form: L4sForm::Printed,
            step: 1_000_000,
            step_packets: 2,
        }
    }
}

impl CoupledPieParams {
    /// p_L for a classic probability `p_c`, at most 1.
    pub fn l4s(&self, p_c: f64) -> f64 {
        let p_l = match self.l4s_form {
            L4sForm::Printed => (self.coupling * p_c).sqrt(),
            L4sForm::Inverse => self.coupling * p_c.sqrt(),
        };
        p_l.min(1.0)
    }
}

/// The `dualq_pie` discipline.
pub struct DualqPie {
    pub params: CoupledPieParams,
    pub vars: PieVars,
    pair: Pair,
    timer: UpdateTimer,
    rng: ChaCha8Rng,
}

impl DualqPie {
    pub fn new(params: CoupledPieParams) -> DualqPie {
        DualqPie {
            vars: PieVars::new(&params.pie),
            rng: ChaCha8Rng::seed_from_u64(params.pie.seed),
            params,
            pair: Pair::default(),
            timer: UpdateTimer::default(),
        }
    }

    /// p_C, PIE's probability.
    pub fn classic(&self) -> f64 {
        self.vars.prob as f64 / MAX_PROB as f64
    }

    fn run_timer(&mut self, now: Nanos) {
        for _ in 0..self.timer.due(now, self.params.pie.tupdate) {
            self.vars
                .calculate_probability(&self.params.pie, self.pair.c.bytes as u64);
        }
    }

    /// Whether an L arrival at `now` is marked.
    fn l4s_signalled(&mut self, now: Nanos) -> bool {
        let step = head_sojourn(&self.pair.l, now) > self.params.step
            && self.pair.l.len() as u64 > self.params.step_packets as u64;
        step || self.rng.gen::<f64>() < self.params.l4s(self.classic())
    }
}

impl Queue for DualqPie {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.run_timer(now);
        if self.pair.full(self.params.pie.limit) {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let class = classify(&packet);
        let keep = match class {
            Class::C => {
                let draw: u64 = self.rng.gen();
                let backlog = self.pair.c.bytes as u64;
                self.vars
                    .admit(&self.params.pie, &mut packet, backlog, draw, now, outcome)
            }
            Class::L => !self.l4s_signalled(now) || mark(&mut packet, now, outcome),
        };
        if !keep {
            outcome.drop(packet, DropReason::Aqm, now);
            return false;
        }
        self.pair.fifo(class).push(packet, now);
        true
    }

    fn dequeue(&mut self, now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.run_timer(now);
        if let Some(packet) = self.pair.l.pop() {
            return Some(packet);
        }
        let packet = self.pair.c.pop()?;
        let backlog = self.pair.c.bytes as u64;
        self.vars
            .process_dequeue(&self.params.pie, &packet, ticks(now), backlog);
        Some(packet)
    }

    fn packets(&self) -> usize {
        self.pair.packets()
    }

    fn bytes(&self) -> usize {
        self.pair.bytes()
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "dualq_pie limit {} target {} tupdate {} alpha {} beta {} max_burst {} coupling {} l4s_form {} step {} step_packets {}",
            p.pie.limit,
            time(p.pie.target),
            time(p.pie.tupdate),
            p.pie.alpha,
            p.pie.beta,
            time(p.pie.max_burst),
            p.coupling,
            match p.l4s_form {
                L4sForm::Printed => "printed",
                L4sForm::Inverse => "inverse",
            },
            time(p.step),
            p.step_packets
        )
    }
}

pub(crate) const OPTIONS: &[Opt] = &[
    LIMIT_OPTION,
    ("target", "TIME", "15ms", "PIE's target classic delay"),
    ("tupdate", "TIME", "15ms", "interval between PIE updates"),
    ("alpha", "N", "2", "PIE's integral gain in 1/16 (2 = 0.125)"),
    (
        "beta",
        "N",
        "20",
        "PIE's proportional gain in 1/16 (20 = 1.25)",
    ),
    ("max_burst", "TIME", "150ms", "PIE's burst allowance"),
    ("coupling", "K", "2", "the coupling factor K"),
    (
        "l4s_form",
        "printed|inverse",
        "printed",
        "p_L = sqrt(K*p_C) (Eq. 3.4 as printed) or K*sqrt(p_C) (the coupling law's inverse)",
    ),
    (
        "step",
        "TIME",
        "1ms",
        "L arrivals are marked when the L head waited longer (with step_packets)",
    ),
    (
        "step_packets",
        "PACKETS",
        "2",
        "... and L holds more than this many",
    ),
    SEED_OPTION,
];

/// Reads dualq_pie's options.
pub(crate) fn parse(words: &mut Words) -> Result<CoupledPieParams, SpecError> {
    let mut p = CoupledPieParams::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.pie.limit = words.value(keyword, parse_count)?.max(1),
            "target" => p.pie.target = words.value(keyword, tc_time)?,
            "tupdate" => p.pie.tupdate = words.value(keyword, tc_time)?.max(1000),
            "alpha" => p.pie.alpha = words.value(keyword, parse_count)?.min(32) as u32,
            "beta" => p.pie.beta = words.value(keyword, parse_count)?.min(32) as u32,
            "max_burst" => p.pie.max_burst = words.value(keyword, tc_time)?,
            "coupling" => p.coupling = words.value(keyword, positive)?,
            "l4s_form" => {
                p.l4s_form = words.value(keyword, |v| match v {
                    "printed" => Ok(L4sForm::Printed),
                    "inverse" => Ok(L4sForm::Inverse),
                    _ => Err(format!("'{v}' is not a form: expected printed or inverse")),
                })?
            }
            "step" => p.step = words.value(keyword, tc_time)?,
            "step_packets" => p.step_packets = words.value(keyword, packet_count)?,
            "seed" => p.pie.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::super::test_packet as packet;
    use super::*;
    use emu_core::time::NS_PER_MS;
    use emu_core::Ecn;

    fn held_at(p_c: f64) -> DualqPie {
        let mut q = DualqPie::new(CoupledPieParams {
            pie: PieParams {
                limit: 100_000,
                tupdate: Nanos::MAX / 4,
                ecn: true,
                ..PieParams::default()
            },
            step: Nanos::MAX,
            ..CoupledPieParams::default()
        });
        q.vars.prob = (p_c * MAX_PROB as f64) as u64;
        q.vars.burst_time = 0;
        q
    }

    #[test]
    fn p_l_is_eq_3_4_as_printed_or_the_inverse_of_the_coupling() {
        let mut p = CoupledPieParams::default();
        assert!((p.l4s(0.04) - 0.08f64.sqrt()).abs() < 1e-12);
        assert_eq!(p.l4s(0.6), 1.0);
        p.l4s_form = L4sForm::Inverse;
        assert!((p.l4s(0.04) - 0.4).abs() < 1e-12);
    }

    /// L packets are marked as they arrive, at p_L = √(2·0.04) = 28%.
    #[test]
    fn l_arrivals_are_marked_at_enqueue_with_p_l() {
        let mut q = held_at(0.04);
        let mut out = Outcome::default();
        let n = 20_000;
        for _ in 0..n {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        let rate = out.marks.len() as f64 / n as f64;
        assert!((rate - 0.283).abs() < 0.01, "{rate}");
        let queued_ce = std::iter::from_fn(|| q.dequeue(0, &mut out))
            .filter(|p| p.ecn() == Some(Ecn::Ce))
            .count();
        assert_eq!(
            queued_ce,
            out.marks.len(),
            "the marks were made before the queue"
        );
    }

    /// An L arrival is marked for certain once the L head waited over
    /// 1 ms and L holds more than 2 packets.
    #[test]
    fn l_arrivals_take_pi2s_step() {
        let mut q = held_at(0.0);
        q.params.step = NS_PER_MS;
        let mut out = Outcome::default();
        for _ in 0..3 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        q.enqueue(packet(0b01), NS_PER_MS, &mut out);
        assert!(out.marks.is_empty(), "the head waited 1 ms, not over");
        q.enqueue(packet(0b01), 2 * NS_PER_MS, &mut out);
        assert_eq!(out.marks.len(), 1);
        for _ in 0..3 {
            q.dequeue(2 * NS_PER_MS, &mut out);
        }
        q.enqueue(packet(0b01), 3 * NS_PER_MS, &mut out);
        assert_eq!(out.marks.len(), 1, "2 packets in L is not more than 2");
    }

    /// Classic arrivals go through PIE: above 10%, even ECT(0) is dropped.
    #[test]
    fn classic_arrivals_are_judged_by_pie() {
        let mut q = held_at(0.5);
        let mut out = Outcome::default();
        for _ in 0..1000 {
            q.enqueue(packet(0b10), 0, &mut out);
        }
        assert!(out.marks.is_empty());
        let drops = out.drops.len();
        assert!((300..700).contains(&drops), "{drops}");
        assert!(out.drops.iter().all(|d| d.reason == DropReason::Aqm));
    }

    /// PIE reads the classic queue: a standing 30 ms classic queue raises
    /// p_C, a standing 30 ms L queue alone does not.
    #[test]
    fn pie_is_driven_by_the_classic_delay() {
        for (tos, rises) in [(0b10, true), (0b01, false)] {
            let mut q = DualqPie::new(CoupledPieParams::default());
            let mut out = Outcome::default();
            for _ in 0..30 {
                q.enqueue(packet(tos), 0, &mut out);
            }
            for k in 1..3000 {
                let t = k * NS_PER_MS;
                q.enqueue(packet(tos), t, &mut out);
                q.dequeue(t, &mut out);
            }
            assert_eq!(q.classic() > 0.001, rises, "tos {tos:#b}: {}", q.classic());
        }
    }

    #[test]
    fn l_has_strict_priority() {
        let mut q = held_at(0.0);
        let mut out = Outcome::default();
        q.enqueue(packet(0b00), 0, &mut out);
        q.enqueue(packet(0b01), NS_PER_MS, &mut out);
        let first = q.dequeue(100 * NS_PER_MS, &mut out).unwrap();
        assert_eq!(first.ecn(), Some(Ecn::Ect1));
    }
}
