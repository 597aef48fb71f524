//! The thesis's uncoupled dual queue (`dq-red`, `dq-pie`): ECT(1) into
//! the L FIFO, everything else into the C FIFO, each FIFO under its own
//! instance of the same AQM with its own parameters and state, and the two
//! served by a work-conserving round robin in packets weighted by the flow
//! counts of the run (`l_flows : c_flows`; the queue does not measure
//! them).
//!
//! - `aqm red`: each FIFO is an [`InstantRed`], the thesis's stateless
//!   RED. C has min 100 and max 300 packets (high on purpose, so C never
//!   empties); L's thresholds come from a base max (34 packets for Reno or
//!   Cubic L flows, 5 for DCTCP or Relentless) scaled by the thesis's
//!   Eq. 3.1 ([`scaled_l_thresholds`]), unrounded.
//! - `aqm pie`: each FIFO is emu's [`Pie`] (Linux's arithmetic) with ECN:
//!   L at target 5 ms and tupdate 5 ms, C at 500 ms and 15 ms, unscaled.
//!   Linux's PIE differs from the thesis's Algorithm 1 in three ways:
//!   increases are capped at 2% once p ≥ 10% and delays over 250 ms add
//!   2%, ECT packets are dropped rather than marked once p > 10%, and p
//!   decays by 1/64 (not 2%) per idle update.

use super::{classify, time, Class, Wrr, LIMIT_OPTION};
use crate::grammar::{probability, tc_time, Opt, SpecError, Words};
use crate::instant_red::{packets, InstantRed, InstantRedParams};
use crate::pie::{Pie, PieParams};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use serde::{Deserialize, Serialize};

/// The thesis's Eq. 3.1: the L queue's RED thresholds for `l_flows` L
/// and `c_flows` C flows, from the base max found for one flow alone:
/// max = max(share · base, 1) with share = nL / (nL + nC), and
/// min = min(max / 3, max − 1).
pub fn scaled_l_thresholds(base_max: f64, l_flows: u32, c_flows: u32) -> (f64, f64) {
    let share = l_flows as f64 / (l_flows + c_flows).max(1) as f64;
    let max = (share * base_max).max(1.0);
    ((max / 3.0).min(max - 1.0), max)
}

/// One FIFO's AQM, resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Aqm {
    Red(InstantRedParams),
    Pie(PieParams),
}

impl Aqm {
    fn build(&self) -> Box<dyn Queue> {
        match self {
            Aqm::Red(p) => Box::new(InstantRed::new(p.clone())),
            Aqm::Pie(p) => Box::new(Pie::new(p.clone())),
        }
    }

    fn describe(&self) -> String {
        match self {
            Aqm::Red(r) => format!(
                "red min {:.2} max {:.2} probability {}",
                r.min, r.max, r.max_p
            ),
            Aqm::Pie(r) => format!("pie target {} tupdate {}", time(r.target), time(r.tupdate)),
        }
    }
}

/// Which AQM both FIFOs run, with the parameters as written; the L
/// thresholds are derived from them by Eq. 3.1 when the queue is built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AqmKind {
    Red {
        /// L's base max for one flow, before Eq. 3.1.
        l_max: f64,
        c_min: f64,
        c_max: f64,
        max_p: f64,
    },
    Pie {
        l_target: Nanos,
        l_tupdate: Nanos,
        c_target: Nanos,
        c_tupdate: Nanos,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UncoupledParams {
    /// Most packets held in both FIFOs.
    pub limit: u64,
    pub l_flows: u32,
    pub c_flows: u32,
    pub aqm: AqmKind,
    /// The L FIFO's seed; C's is one more.
    pub seed: u64,
}

impl UncoupledParams {
    /// The L and the C FIFO's AQMs.
    pub fn aqms(&self) -> (Aqm, Aqm) {
        let (limit, seed) = (self.limit, self.seed);
        match self.aqm {
            AqmKind::Red {
                l_max,
                c_min,
                c_max,
                max_p,
            } => {
                let red = |(min, max), seed| {
                    Aqm::Red(InstantRedParams {
                        limit,
                        min,
                        max,
                        max_p,
                        ecn: true,
                        seed,
                    })
                };
                let l = scaled_l_thresholds(l_max, self.l_flows, self.c_flows);
                (red(l, seed), red((c_min, c_max), seed + 1))
            }
            AqmKind::Pie {
                l_target,
                l_tupdate,
                c_target,
                c_tupdate,
            } => {
                let pie = |target, tupdate, seed| {
                    Aqm::Pie(PieParams {
                        target,
                        tupdate,
                        limit,
                        ecn: true,
                        seed,
                        ..PieParams::default()
                    })
                };
                (
                    pie(l_target, l_tupdate, seed),
                    pie(c_target, c_tupdate, seed + 1),
                )
            }
        }
    }
}

/// The `dualq_uncoupled` discipline.
pub struct Uncoupled {
    pub params: UncoupledParams,
    aqms: (Aqm, Aqm),
    l: Box<dyn Queue>,
    c: Box<dyn Queue>,
    wrr: Wrr,
}

impl Uncoupled {
    pub fn new(params: UncoupledParams) -> Uncoupled {
        let aqms = params.aqms();
        Uncoupled {
            l: aqms.0.build(),
            c: aqms.1.build(),
            aqms,
            wrr: Wrr::new(params.l_flows, params.c_flows),
            params,
        }
    }

    pub fn l_packets(&self) -> usize {
        self.l.packets()
    }
}

impl Queue for Uncoupled {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.packets() as u64 >= self.params.limit {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        match classify(&packet) {
            Class::L => self.l.enqueue(packet, now, outcome),
            Class::C => self.c.enqueue(packet, now, outcome),
        }
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        match self.wrr.next(!self.l.is_empty(), !self.c.is_empty())? {
            Class::L => self.l.dequeue(now, outcome),
            Class::C => self.c.dequeue(now, outcome),
        }
    }

    fn packets(&self) -> usize {
        self.l.packets() + self.c.packets()
    }

    fn bytes(&self) -> usize {
        self.l.bytes() + self.c.bytes()
    }

    fn on_idle(&mut self, now: Nanos) {
        self.l.on_idle(now);
        self.c.on_idle(now);
    }

    fn describe(&self) -> String {
        let p = &self.params;
        format!(
            "dualq_uncoupled limit {} l_flows {} c_flows {} l: {} c: {}",
            p.limit,
            p.l_flows,
            p.c_flows,
            self.aqms.0.describe(),
            self.aqms.1.describe()
        )
    }
}

pub(crate) const OPTIONS: &[Opt] = &[
    (
        "aqm",
        "red|pie",
        "red",
        "the AQM of each FIFO: the thesis's stateless RED, or PIE",
    ),
    (
        "l_flows",
        "N",
        "1",
        "L flows in the run: the L weight of the round robin and Eq. 3.1's nL",
    ),
    (
        "c_flows",
        "N",
        "1",
        "C flows in the run: the C weight and Eq. 3.1's nC",
    ),
    LIMIT_OPTION,
    (
        "l_max",
        "PACKETS",
        "5",
        "red: L's base max for one flow (34 for Reno/Cubic L, 5 for DCTCP/Relentless), scaled by Eq. 3.1",
    ),
    ("c_min", "PACKETS", "100", "red: C's min"),
    ("c_max", "PACKETS", "300", "red: C's max"),
    ("probability", "P", "0.02", "red: max_p of both FIFOs"),
    ("l_target", "TIME", "5ms", "pie: L's target delay"),
    ("l_tupdate", "TIME", "5ms", "pie: L's update interval"),
    ("c_target", "TIME", "500ms", "pie: C's target delay"),
    ("c_tupdate", "TIME", "15ms", "pie: C's update interval"),
    (
        "seed",
        "N",
        "1",
        "seed of the random decisions (C uses seed + 1)",
    ),
];

/// A flow count, at least 1.
fn flows(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=100_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{text}' is not a flow count: expected 1 to 100000"
        )),
    }
}

/// Reads dualq_uncoupled's options.
pub(crate) fn parse(words: &mut Words) -> Result<UncoupledParams, SpecError> {
    let ms = 1_000_000;
    let mut p = UncoupledParams {
        limit: 1000,
        l_flows: 1,
        c_flows: 1,
        aqm: AqmKind::Red {
            l_max: 5.0,
            c_min: 100.0,
            c_max: 300.0,
            max_p: 0.02,
        },
        seed: 1,
    };
    let (mut red, mut pie) = (
        (5.0, 100.0, 300.0, 0.02),
        (5 * ms, 5 * ms, 500 * ms, 15 * ms),
    );
    let mut use_pie = false;
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "aqm" => {
                use_pie = words.value(keyword, |v| match v {
                    "red" => Ok(false),
                    "pie" => Ok(true),
                    _ => Err(format!("'{v}' is not an AQM here: expected red or pie")),
                })?
            }
            "l_flows" => p.l_flows = words.value(keyword, flows)?,
            "c_flows" => p.c_flows = words.value(keyword, flows)?,
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "l_max" => red.0 = words.value(keyword, packets)?,
            "c_min" => red.1 = words.value(keyword, packets)?,
            "c_max" => red.2 = words.value(keyword, packets)?,
            "probability" => red.3 = words.value(keyword, probability)?,
            "l_target" => pie.0 = words.value(keyword, tc_time)?,
            "l_tupdate" => pie.1 = words.value(keyword, tc_time)?.max(1000),
            "c_target" => pie.2 = words.value(keyword, tc_time)?,
            "c_tupdate" => pie.3 = words.value(keyword, tc_time)?.max(1000),
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    if red.1 >= red.2 {
        return Err(SpecError(format!(
            "dualq_uncoupled: c_min ({}) must be below c_max ({})",
            red.1, red.2
        )));
    }
    p.aqm = if use_pie {
        AqmKind::Pie {
            l_target: pie.0,
            l_tupdate: pie.1,
            c_target: pie.2,
            c_tupdate: pie.3,
        }
    } else {
        AqmKind::Red {
            l_max: red.0,
            c_min: red.1,
            c_max: red.2,
            max_p: red.3,
        }
    };
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::super::test_packet as packet;
    use super::*;
    use crate::QueueSpec;
    use emu_core::time::NS_PER_MS;

    fn queue(spec: &str) -> Uncoupled {
        match QueueSpec::parse(spec).unwrap() {
            QueueSpec::DualqUncoupled(p) => Uncoupled::new(p),
            other => panic!("{other:?}"),
        }
    }

    /// Rows of the thesis's table of Eq. 3.1 (unrounded).
    #[test]
    fn eq_3_1_scales_the_l_thresholds_by_the_l_share() {
        for (base, nl, nc, min, max) in [
            (34.0, 1, 1, 5.67, 17.0),
            (34.0, 1, 5, 1.89, 5.67),
            (34.0, 1, 10, 1.03, 3.09),
            (34.0, 10, 1, 10.30, 30.91),
            (5.0, 5, 5, 0.83, 2.5),
            (5.0, 1, 5, 0.0, 1.0),
            (5.0, 1, 10, 0.0, 1.0),
            (5.0, 5, 1, 1.39, 4.17),
            (5.0, 5, 10, 0.56, 1.67),
        ] {
            let (got_min, got_max) = scaled_l_thresholds(base, nl, nc);
            assert!(
                (got_min - min).abs() < 0.006 && (got_max - max).abs() < 0.006,
                "{base} {nl}:{nc}: {got_min:.2} / {got_max:.2}"
            );
        }
    }

    /// Each FIFO has its own RED (ramps made negligible, max_p 1e-6, so
    /// only the steps above max signal): 200 classic packets, under C's
    /// max of 300, leave L's arrivals alone while L is short, and every L
    /// arrival finding 3 packets or more, over L's scaled max of 2.5, is
    /// marked.
    #[test]
    fn each_fifo_is_judged_by_its_own_red() {
        let mut q =
            queue("dualq_uncoupled aqm red l_flows 1 c_flows 1 l_max 5 probability 0.000001");
        let mut out = Outcome::default();
        for _ in 0..200 {
            q.enqueue(packet(0b10), 0, &mut out);
        }
        for _ in 0..3 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert!(out.marks.is_empty());
        for _ in 0..21 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert_eq!(out.marks.len(), 21, "L arrivals finding 3 to 23 packets");
        assert_eq!(q.l_packets(), 24);
    }

    /// Both FIFOs backlogged with 1 L and 4 C flows: one L packet in five.
    #[test]
    fn the_round_robin_is_weighted_by_the_flow_counts() {
        let mut q =
            queue("dualq_uncoupled l_flows 1 c_flows 4 l_max 1000 c_min 900 c_max 1000 limit 5000");
        let mut out = Outcome::default();
        for _ in 0..500 {
            q.enqueue(packet(0b01), 0, &mut out);
            q.enqueue(packet(0b00), 0, &mut out);
        }
        let l = (0..500)
            .filter(|_| q.dequeue(0, &mut out).unwrap().ecn() != Some(emu_core::Ecn::NotEct))
            .count();
        assert_eq!(l, 100);
    }

    /// With PIE, L's 5 ms target signals a 20 ms standing queue that C's
    /// 500 ms target leaves alone.
    #[test]
    fn under_pie_each_fifo_has_its_own_target() {
        for (tos, signalled) in [(0b01, true), (0b10, false)] {
            let mut q = queue("dualq_uncoupled aqm pie");
            let mut out = Outcome::default();
            for _ in 0..20 {
                q.enqueue(packet(tos), 0, &mut out);
            }
            // One in, one out every ms: a 20-packet queue, 20 ms of delay.
            for k in 1..3000 {
                let t = k * NS_PER_MS;
                q.enqueue(packet(tos), t, &mut out);
                q.dequeue(t, &mut out);
            }
            assert_eq!(!out.marks.is_empty(), signalled, "tos {tos:#b}");
        }
    }

    #[test]
    fn the_buffer_limit_covers_both_fifos() {
        let mut q = queue("dualq_uncoupled limit 4 l_max 100 c_min 100 c_max 200");
        let mut out = Outcome::default();
        for tos in [0b01, 0b00, 0b01, 0b00, 0b01] {
            q.enqueue(packet(tos), 0, &mut out);
        }
        assert_eq!(q.packets(), 4);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
