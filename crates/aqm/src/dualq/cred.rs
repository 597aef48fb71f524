//! The DualQ Coupled AQM with Curvy RED, after the pseudo-code of
//! draft-ietf-tsvwg-aqm-dualq-coupled-01 with the AQM evaluation thesis's
//! changes (`l4s-cred`).
//!
//! - Dequeue gives strict priority to L.
//! - A leaving L packet is CE-marked for certain when more than
//!   `step_packets` (5) packets stay behind it in L, otherwise with
//!   p_L = qd_C / 2^S_L: a straight line ([`curvy`], U = 1) in the classic
//!   head's sojourn qd_C at that moment (0 when C is empty).
//! - A leaving C packet first updates the smoothed classic delay,
//!   Q_C ← Q_C + 2^−5·(sojourn − Q_C), and is then signalled with
//!   p_C = (Q_C / 2^S_C)² ([`curvy`], U = 2): CE on ECT(0), a drop on
//!   Not-ECT, after which the next C packet is judged, until one is sent
//!   or C is empty.
//! - S_C = −1 and S_L = S_C − log2 K, the thesis's correction of the
//!   draft's "+": only with "−" is p_C = (p_L / K)² when Q_C = qd_C. The
//!   delays are counted in `unit` (1 s), so p_C reaches 1 at 500 ms and
//!   p_L at 250 ms.
//!
//! The thesis's other changes are here too: classic ECT packets are marked
//! rather than dropped, and delays come from timestamps.

use super::pi2::positive;
use super::{head_sojourn, packet_count, time, Pair, LIMIT_OPTION, SEED_OPTION};
use crate::curvy_red::curvy;
use crate::ecn::mark;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CredParams {
    /// Most packets held in both queues.
    pub limit: u64,
    pub coupling: f64,
    /// The classic range exponent S_C: p_C reaches 1 at 2^S_C units.
    pub s_c: i32,
    /// The unit of delay the exponents count in.
    pub unit: Nanos,
    /// The EWMA of the classic delay moves by 2^−smoothing per packet.
    pub smoothing: u32,
    pub step_packets: u32,
    pub seed: u64,
}

impl Default for CredParams {
    fn default() -> Self {
        CredParams {
            limit: 1000,
            coupling: 2.0,
            s_c: -1,
            unit: 1_000_000_000,
            smoothing: 5,
            step_packets: 5,
            seed: 1,
        }
    }
}

impl CredParams {
    /// The classic delay, in ns, at which p_C reaches 1: 2^S_C units.
    pub fn classic_range(&self) -> f64 {
        2f64.powi(self.s_c) * self.unit as f64
    }

    /// The classic delay at which p_L reaches 1: 2^S_L units with
    /// S_L = S_C − log2 K.
    pub fn l4s_range(&self) -> f64 {
        2f64.powf(self.s_c as f64 - self.coupling.log2()) * self.unit as f64
    }

    /// p_C for a smoothed classic delay of `q_c` ns.
    pub fn classic(&self, q_c: f64) -> f64 {
        curvy(q_c, self.classic_range(), 2.0)
    }

    /// p_L for a classic head sojourn of `qd_c` ns.
    pub fn l4s(&self, qd_c: f64) -> f64 {
        curvy(qd_c, self.l4s_range(), 1.0)
    }
}

/// The `dualq_cred` discipline.
pub struct DualqCred {
    pub params: CredParams,
    /// Q_C, the smoothed classic delay, in ns.
    pub classic_delay: f64,
    pair: Pair,
    rng: ChaCha8Rng,
}

impl DualqCred {
    pub fn new(params: CredParams) -> DualqCred {
        DualqCred {
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            classic_delay: 0.0,
            pair: Pair::default(),
        }
    }

    /// Whether the L packet leaving at `now` is marked.
    fn l4s_signalled(&mut self, now: Nanos) -> bool {
        if self.pair.l.len() as u64 > self.params.step_packets as u64 {
            return true;
        }
        let qd_c = head_sojourn(&self.pair.c, now) as f64;
        self.rng.gen::<f64>() < self.params.l4s(qd_c)
    }

    /// Whether the C packet leaving after `sojourn` is signalled, having
    /// moved Q_C towards it.
    fn classic_signalled(&mut self, sojourn: Nanos) -> bool {
        let gain = 2f64.powi(-(self.params.smoothing as i32));
        self.classic_delay += gain * (sojourn as f64 - self.classic_delay);
        self.rng.gen::<f64>() < self.params.classic(self.classic_delay)
    }
}

impl Queue for DualqCred {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.pair.admit(packet, self.params.limit, now, outcome)
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        loop {
            let (mut packet, signalled) = if let Some(packet) = self.pair.l.pop() {
                (packet, self.l4s_signalled(now))
            } else {
                let packet = self.pair.c.pop()?;
                let sojourn = now.saturating_sub(packet.enqueued);
                (packet, self.classic_signalled(sojourn))
            };
            if signalled && !mark(&mut packet, now, outcome) {
                outcome.drop(packet, DropReason::Aqm, now);
                continue;
            }
            return Some(packet);
        }
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
            "dualq_cred limit {} coupling {} s_c {} unit {} smoothing {} step_packets {}",
            p.limit,
            p.coupling,
            p.s_c,
            time(p.unit),
            p.smoothing,
            p.step_packets
        )
    }
}

pub(crate) const OPTIONS: &[Opt] = &[
    LIMIT_OPTION,
    (
        "coupling",
        "K",
        "2",
        "p_C = (p_L/K)^2: S_L = S_C - log2 K (the thesis's sign; draft-01 has +)",
    ),
    (
        "s_c",
        "EXP",
        "-1",
        "p_C = (Q_C / 2^s_c)^2 with Q_C the classic delay's EWMA, in units",
    ),
    ("unit", "TIME", "1s", "the delay unit of s_c and S_L"),
    (
        "smoothing",
        "N",
        "5",
        "the classic delay's EWMA gain is 2^-N per C packet",
    ),
    (
        "step_packets",
        "PACKETS",
        "5",
        "L packets are marked for certain while more stay in L",
    ),
    SEED_OPTION,
];

/// Reads dualq_cred's options.
pub(crate) fn parse(words: &mut Words) -> Result<CredParams, SpecError> {
    let mut p = CredParams::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "coupling" => p.coupling = words.value(keyword, positive)?,
            "s_c" => {
                p.s_c = words.value(keyword, |v| match v.parse::<i32>() {
                    Ok(s) if (-30..=30).contains(&s) => Ok(s),
                    _ => Err(format!("'{v}' is not an exponent: expected -30 to 30")),
                })?
            }
            "unit" => p.unit = words.value(keyword, tc_time)?.max(1),
            "smoothing" => p.smoothing = words.value(keyword, parse_count)?.min(30) as u32,
            "step_packets" => p.step_packets = words.value(keyword, packet_count)?,
            "seed" => p.seed = words.value(keyword, parse_count)?,
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

    /// The thesis's corrected exponent keeps the coupling law p_C =
    /// (p_L/K)² wherever the smoothed and the instantaneous delays agree.
    #[test]
    fn the_corrected_exponent_keeps_p_c_the_square_of_p_l_over_k() {
        for k in [1.0, 2.0, 4.0] {
            let p = CredParams {
                coupling: k,
                ..CredParams::default()
            };
            for ms in [1.0, 10.0, 40.0, 100.0] {
                let d = ms * 1e6;
                let (p_c, p_l) = (p.classic(d), p.l4s(d));
                assert!(
                    (p_c - (p_l / k).powi(2)).abs() < 1e-12,
                    "K {k}, {ms} ms: p_C {p_c}, p_L {p_l}"
                );
            }
        }
        // S_C = −1 s: p_C = (2·Q_C)², p_L = 4·qd_C.
        let p = CredParams::default();
        assert!((p.classic(100e6) - 0.04).abs() < 1e-12);
        assert!((p.l4s(100e6) - 0.4).abs() < 1e-12);
    }

    /// L goes first whenever it holds a packet.
    #[test]
    fn l_has_strict_priority() {
        let mut q = DualqCred::new(CredParams::default());
        let mut out = Outcome::default();
        q.enqueue(packet(0b00), 0, &mut out);
        q.enqueue(packet(0b01), 50 * NS_PER_MS, &mut out);
        q.enqueue(packet(0b01), 60 * NS_PER_MS, &mut out);
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue(60 * NS_PER_MS, &mut out))
            .map(|p| p.ecn() == Some(Ecn::NotEct))
            .collect();
        assert_eq!(order, [false, false, true], "L, L (marked or not), then C");
    }

    /// More than 5 L packets behind a leaving one: it is marked for sure.
    #[test]
    fn l_packets_are_marked_while_more_than_5_stay() {
        let mut q = DualqCred::new(CredParams::default());
        let mut out = Outcome::default();
        for _ in 0..8 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        let marked: Vec<bool> = std::iter::from_fn(|| q.dequeue(0, &mut out))
            .map(|p| p.ecn() == Some(Ecn::Ce))
            .collect();
        assert_eq!(
            marked,
            [true, true, false, false, false, false, false, false]
        );
    }

    /// L's probability reads the classic head's sojourn now: with a
    /// classic packet 100 ms old, p_L = 0.4.
    #[test]
    fn l_marks_follow_the_instantaneous_classic_delay() {
        let mut q = DualqCred::new(CredParams {
            limit: 100_000,
            ..CredParams::default()
        });
        let mut out = Outcome::default();
        q.enqueue(packet(0b00), 0, &mut out);
        let mut marked = 0;
        for _ in 0..10_000 {
            q.enqueue(packet(0b01), 100 * NS_PER_MS, &mut out);
            let p = q.dequeue(100 * NS_PER_MS, &mut out).unwrap();
            marked += (p.ecn() == Some(Ecn::Ce)) as usize;
        }
        let rate = marked as f64 / 10_000.0;
        assert!((rate - 0.4).abs() < 0.015, "{rate}");
    }

    /// Q_C moves 1/32 of the way to each C packet's sojourn; once it is
    /// past 500 ms every C packet is signalled, a Not-ECT one dropped and
    /// the next judged in its place.
    #[test]
    fn the_classic_delay_is_smoothed_and_drops_go_on_to_the_next() {
        let mut q = DualqCred::new(CredParams::default());
        let mut out = Outcome::default();
        let mut want = 0.0;
        for _ in 0..2 {
            q.enqueue(packet(0b10), 0, &mut out);
            q.dequeue(320 * NS_PER_MS, &mut out).unwrap();
            want += (320e6 - want) / 32.0;
        }
        assert!(
            (q.classic_delay - want).abs() < 1e-3,
            "{} vs {want}",
            q.classic_delay
        );
        q.classic_delay = 600e6;
        for tos in [0b00, 0b00, 0b00, 0b10] {
            q.enqueue(packet(tos), 0, &mut out);
        }
        let sent = q.dequeue(1000 * NS_PER_MS, &mut out).unwrap();
        assert_eq!(sent.ecn(), Some(Ecn::Ce));
        assert_eq!(out.drops.len(), 3);
        assert!(q.is_empty());
    }
}
