//! The DualQ Coupled AQM with PI², as draft-ietf-tsvwg-aqm-dualq-coupled-01
//! (July 2017) gives it in pseudo-code and the AQM evaluation thesis ran it
//! (`l4s-pi2`).
//!
//! - Every `tupdate` the PI controller updates a base probability p' from
//!   the classic head's sojourn (the L head's when C is empty, 0 when both
//!   are): p' += α·tupdate·(qd − target) + β·tupdate·(qd − qd_old), delays
//!   in seconds, with the draft's α = 10 and β = 100 (0.16 and 1.6 per
//!   second of delay per update at 16 ms). p' is held in [0, min(√0.25,
//!   1/K)], so p_C = p'² stays at most 25% and p_L = K·p' at most 1.
//! - Dequeue is a time-shifted FIFO: the C head goes first only when it
//!   arrived more than `tshift` (2·target) before the L head.
//! - A leaving L packet is CE-marked if it waited over `step` (1 ms) and
//!   more than `step_packets` (2) packets stay behind it in L, otherwise
//!   with p_L = K·p'. A leaving C packet is signalled with p_C = p'²:
//!   CE on ECT(0), a drop on Not-ECT, after which the next packet is
//!   chosen afresh.
//!
//! Against `dualpi2` (RFC 9332 as Linux has it): β is half the RFC's
//! 3.2 Hz; the PI reads the classic head's delay rather than the older
//! head of the two; a time-shifted FIFO replaces the WRR; the step needs
//! both delay and length; only ECT(1) goes to L; there is no 2-MTU floor
//! and no overload rule (p' is clamped instead); arithmetic is in floating
//! point, not Linux's fixed point.

use super::{head_sojourn, packet_count, time, Class, Pair, LIMIT_OPTION, SEED_OPTION};
use crate::dualpi2::time_shift_serves_l;
use crate::ecn::mark;
use crate::grammar::{probability, tc_time, Opt, SpecError, Words};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pi2Params {
    /// Most packets held in both queues.
    pub limit: u64,
    pub target: Nanos,
    pub tupdate: Nanos,
    /// Integral gain, per second per second: α·tupdate is the step per
    /// second of delay error.
    pub alpha: f64,
    /// Proportional gain, as α.
    pub beta: f64,
    pub coupling: f64,
    /// The highest classic probability p_C.
    pub max_classic: f64,
    pub tshift: Nanos,
    pub step: Nanos,
    pub step_packets: u32,
    pub seed: u64,
}

impl Default for Pi2Params {
    /// The draft's recommended values, as the thesis ran them.
    fn default() -> Self {
        Pi2Params {
            limit: 1000,
            target: 15_000_000,
            tupdate: 16_000_000,
            alpha: 10.0,
            beta: 100.0,
            coupling: 2.0,
            max_classic: 0.25,
            tshift: 30_000_000,
            step: 1_000_000,
            step_packets: 2,
            seed: 1,
        }
    }
}

impl Pi2Params {
    /// The most p' may reach: p_C = p'² and p_L = K·p' both within bounds.
    pub fn max_base(&self) -> f64 {
        self.max_classic.sqrt().min(1.0 / self.coupling)
    }
}

/// The PI controller: p' and the delay it last saw.
#[derive(Debug, Clone, Default)]
pub struct Pi {
    pub base: f64,
    pub qdelay_old: f64,
}

impl Pi {
    /// One update, for queue delay `qdelay` in seconds.
    pub fn update(&mut self, params: &Pi2Params, qdelay: f64) {
        let period = params.tupdate as f64 / 1e9;
        let target = params.target as f64 / 1e9;
        self.base += params.alpha * period * (qdelay - target)
            + params.beta * period * (qdelay - self.qdelay_old);
        self.base = self.base.clamp(0.0, params.max_base());
        self.qdelay_old = qdelay;
    }

    pub fn classic(&self) -> f64 {
        self.base * self.base
    }

    pub fn l4s(&self, params: &Pi2Params) -> f64 {
        (params.coupling * self.base).min(1.0)
    }
}

/// The `dualq_pi2` discipline.
pub struct DualqPi2 {
    pub params: Pi2Params,
    pub pi: Pi,
    pair: Pair,
    next_update: Option<Nanos>,
    rng: ChaCha8Rng,
}

impl DualqPi2 {
    pub fn new(params: Pi2Params) -> DualqPi2 {
        DualqPi2 {
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            pi: Pi::default(),
            pair: Pair::default(),
            next_update: None,
        }
    }

    pub fn l_packets(&self) -> usize {
        self.pair.l.len()
    }

    /// The delay the PI reads at `now`: the C head's, or the L head's when
    /// C is empty.
    fn qdelay(&self, now: Nanos) -> Nanos {
        if self.pair.c.is_empty() {
            head_sojourn(&self.pair.l, now)
        } else {
            head_sojourn(&self.pair.c, now)
        }
    }

    /// Runs the updates due by `now`, each at its own time, the first
    /// `tupdate` after the first packet.
    fn run_timer(&mut self, now: Nanos) {
        let tupdate = self.params.tupdate.max(1);
        let mut next = *self.next_update.get_or_insert(now + tupdate);
        let mut ticks = 0;
        while next <= now && ticks < 1_000_000 {
            let qdelay = self.qdelay(next) as f64 / 1e9;
            self.pi.update(&self.params, qdelay);
            next += tupdate;
            ticks += 1;
        }
        if next <= now {
            next = now + tupdate; // absurdly long idle: resynchronise
        }
        self.next_update = Some(next);
    }

    /// Whether a leaving packet of `class` that waited `sojourn` is
    /// signalled.
    fn signalled(&mut self, class: Class, sojourn: Nanos) -> bool {
        match class {
            Class::L => {
                let step = sojourn > self.params.step
                    && self.pair.l.len() as u64 > self.params.step_packets as u64;
                step || self.rng.gen::<f64>() < self.pi.l4s(&self.params)
            }
            Class::C => self.rng.gen::<f64>() < self.pi.classic(),
        }
    }
}

impl Queue for DualqPi2 {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.run_timer(now);
        self.pair.admit(packet, self.params.limit, now, outcome)
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        self.run_timer(now);
        loop {
            let head = |fifo: &crate::Fifo| fifo.packets.front().map(|p| p.enqueued);
            let class = if time_shift_serves_l(
                head(&self.pair.l),
                head(&self.pair.c),
                self.params.tshift,
            ) {
                Class::L
            } else {
                Class::C
            };
            let mut packet = self.pair.fifo(class).pop()?;
            let sojourn = now.saturating_sub(packet.enqueued);
            if self.signalled(class, sojourn) && !mark(&mut packet, now, outcome) {
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
            "dualq_pi2 limit {} target {} tupdate {} alpha {} beta {} coupling {} max_classic {} tshift {} step {} step_packets {}",
            p.limit,
            time(p.target),
            time(p.tupdate),
            p.alpha,
            p.beta,
            p.coupling,
            p.max_classic,
            time(p.tshift),
            time(p.step),
            p.step_packets
        )
    }
}

pub(crate) const OPTIONS: &[Opt] = &[
    LIMIT_OPTION,
    ("target", "TIME", "15ms", "PI target queue delay"),
    ("tupdate", "TIME", "16ms", "interval between PI updates"),
    (
        "alpha",
        "GAIN",
        "10",
        "integral gain; alpha*tupdate per second of delay per update",
    ),
    (
        "beta",
        "GAIN",
        "100",
        "proportional gain; beta*tupdate per second of delay change",
    ),
    ("coupling", "K", "2", "p_L = K*p', p_C = p'^2"),
    (
        "max_classic",
        "P",
        "0.25",
        "the highest p_C; p' is clamped to min(sqrt of it, 1/K)",
    ),
    (
        "tshift",
        "TIME",
        "30ms",
        "time shift of the FIFO scheduler: C goes first only when its head is older by more",
    ),
    (
        "step",
        "TIME",
        "1ms",
        "L packets that waited longer are marked (with step_packets)",
    ),
    (
        "step_packets",
        "PACKETS",
        "2",
        "... if more than this many stay in L",
    ),
    SEED_OPTION,
];

/// A positive gain or factor.
pub(crate) fn positive(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("'{text}' is not a positive number")),
    }
}

/// Reads dualq_pi2's options.
pub(crate) fn parse(words: &mut Words) -> Result<Pi2Params, SpecError> {
    let mut p = Pi2Params::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "target" => p.target = words.value(keyword, tc_time)?,
            "tupdate" => p.tupdate = words.value(keyword, tc_time)?.max(1000),
            "alpha" => p.alpha = words.value(keyword, positive)?,
            "beta" => p.beta = words.value(keyword, positive)?,
            "coupling" => p.coupling = words.value(keyword, positive)?,
            "max_classic" => p.max_classic = words.value(keyword, probability)?,
            "tshift" => p.tshift = words.value(keyword, tc_time)?,
            "step" => p.step = words.value(keyword, tc_time)?,
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

    /// At 16 ms per update: Δp' = 0.16·(qd − 15 ms) + 1.6·(qd − qd_old).
    #[test]
    fn the_pi_update_follows_the_drafts_gains() {
        let params = Pi2Params::default();
        let mut pi = Pi::default();
        pi.update(&params, 0.025);
        let first = 0.16 * 0.010 + 1.6 * 0.025;
        assert!((pi.base - first).abs() < 1e-12, "{}", pi.base);
        pi.update(&params, 0.025);
        assert!((pi.base - (first + 0.16 * 0.010)).abs() < 1e-12);
        assert!((pi.classic() - pi.base * pi.base).abs() < 1e-15);
        assert!((pi.l4s(&params) - 2.0 * pi.base).abs() < 1e-15);
    }

    /// p' never leaves [0, 0.5]: p_C at most 25%, p_L at most 1.
    #[test]
    fn p_base_is_clamped_so_p_c_stays_under_a_quarter() {
        let params = Pi2Params::default();
        let mut pi = Pi::default();
        for _ in 0..100 {
            pi.update(&params, 1.0);
        }
        assert_eq!(pi.base, 0.5);
        assert_eq!((pi.classic(), pi.l4s(&params)), (0.25, 1.0));
        for _ in 0..100 {
            pi.update(&params, 0.0);
        }
        assert_eq!(pi.base, 0.0);
    }

    /// The PI reads the classic head, and the L head only when C is empty.
    #[test]
    fn the_pi_reads_the_classic_head_unless_c_is_empty() {
        let mut q = DualqPi2::new(Pi2Params::default());
        let mut out = Outcome::default();
        q.enqueue(packet(0b01), 0, &mut out);
        q.enqueue(packet(0b00), 10 * NS_PER_MS, &mut out);
        q.enqueue(packet(0b01), 10 * NS_PER_MS, &mut out);
        // The tick at 16 ms sees the C head's 6 ms, not L's 16 ms.
        q.run_timer(16 * NS_PER_MS);
        let mut pi = Pi::default();
        pi.update(&q.params, 0.006);
        assert!((q.pi.base - pi.base).abs() < 1e-12, "{}", q.pi.base);
        let mut l_only = DualqPi2::new(Pi2Params::default());
        l_only.enqueue(packet(0b01), 0, &mut out);
        l_only.run_timer(16 * NS_PER_MS);
        let mut pi = Pi::default();
        pi.update(&l_only.params, 0.016);
        assert!((l_only.pi.base - pi.base).abs() < 1e-12);
    }

    /// The C head goes first only when it arrived over 30 ms before L's.
    #[test]
    fn the_fifo_is_time_shifted_by_30ms() {
        let mut q = DualqPi2::new(Pi2Params {
            step: Nanos::MAX,
            ..Pi2Params::default()
        });
        q.next_update = Some(Nanos::MAX);
        let mut out = Outcome::default();
        q.enqueue(packet(0b00), 0, &mut out);
        q.enqueue(packet(0b01), 30 * NS_PER_MS, &mut out);
        q.enqueue(packet(0b01), 31 * NS_PER_MS, &mut out);
        let order: Vec<_> = std::iter::from_fn(|| q.dequeue(40 * NS_PER_MS, &mut out))
            .map(|p| p.ecn().unwrap())
            .collect();
        assert_eq!(order, [Ecn::Ect1, Ecn::NotEct, Ecn::Ect1]);
    }

    /// An L packet is marked for certain only when it waited over 1 ms
    /// and more than 2 packets stay behind it.
    #[test]
    fn the_step_needs_both_the_delay_and_the_length() {
        let mut q = DualqPi2::new(Pi2Params::default());
        q.next_update = Some(Nanos::MAX);
        let mut out = Outcome::default();
        for _ in 0..5 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        // 2 ms old, leaving 4, 3, 2, 1, 0 behind.
        let marked: Vec<bool> = std::iter::from_fn(|| q.dequeue(2 * NS_PER_MS, &mut out))
            .map(|p| p.ecn() == Some(Ecn::Ce))
            .collect();
        assert_eq!(marked, [true, true, false, false, false]);
        for _ in 0..5 {
            q.enqueue(packet(0b01), 0, &mut out);
        }
        assert!(
            std::iter::from_fn(|| q.dequeue(NS_PER_MS, &mut out))
                .all(|p| p.ecn() == Some(Ecn::Ect1)),
            "1 ms is not over 1 ms"
        );
    }

    /// With p' held at 0.3: L packets are marked at 2·0.3 = 60%, ECT(0)
    /// packets at 0.3² = 9%, and Not-ECT packets dropped at 9%.
    #[test]
    fn the_coupling_gives_k_p_to_l_and_p_squared_to_c() {
        for (tos, want_marks, want_drops) in
            [(0b01, 0.6, 0.0), (0b10, 0.09, 0.0), (0b00, 0.0, 0.09)]
        {
            let mut q = DualqPi2::new(Pi2Params {
                step: Nanos::MAX,
                limit: 100_000,
                ..Pi2Params::default()
            });
            q.next_update = Some(Nanos::MAX);
            q.pi.base = 0.3;
            let mut out = Outcome::default();
            let n = 20_000;
            for _ in 0..n {
                q.enqueue(packet(tos), 0, &mut out);
            }
            while q.dequeue(0, &mut out).is_some() {}
            let marks = out.marks.len() as f64 / n as f64;
            let drops = out.drops.len() as f64 / n as f64;
            assert!(
                (marks - want_marks).abs() < 0.01 && (drops - want_drops).abs() < 0.01,
                "tos {tos:#b}: marks {marks}, drops {drops}"
            );
        }
    }

    #[test]
    fn the_buffer_limit_covers_both_queues() {
        let mut q = DualqPi2::new(Pi2Params {
            limit: 2,
            ..Pi2Params::default()
        });
        let mut out = Outcome::default();
        for tos in [0b01, 0b00, 0b01] {
            q.enqueue(packet(tos), 0, &mut out);
        }
        assert_eq!(q.packets(), 2);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
