//! DualPI2, the coupled dual-queue AQM of RFC 9332, with the arithmetic of
//! Linux net/sched/sch_dualpi2.c.
//!
//! - Classification (RFC 9332 §2.5.1.1, §4.2.1): packets whose ECN field has
//!   the bit of `ecn_mask` set (ECT(1) and CE by default, `l4s_ect`; any ECT
//!   with `any_ect`) go to the L queue, the rest to the C queue.
//! - One PI controller (App. A.2) updates a base probability p' every
//!   `tupdate` from the larger of the two queues' head sojourn times:
//!   p' += α·(qdelay − target) + β·(qdelay − qdelay_old), with Linux's
//!   units: p' in 1/2^32, α and β in 1/2^32 per 64 ns.
//! - Coupling (§2.4): classic packets are dropped or CE-marked with
//!   p_C = p'² (two random draws both under p'), L4S packets marked with
//!   p_L = min(k·p', 1); an L queue native step AQM marks every L4S packet
//!   whose sojourn (or the L queue length) exceeds `step_thresh`.
//! - Overload (§4.2.3): once k·p' exceeds 1, L4S packets are subject to the
//!   classic drop too (`drop_on_overload`), or marked regardless and left to
//!   overflow (`overflow`, which also caps p' at 1/k).
//! - Scheduling (§4.2.2): a WRR credit that gives the C queue its
//!   `classic_protection` share (10%) under saturation; or, for older
//!   studies, the time-shifted FIFO of the original DualQ papers (`tshift`).
//! - Nothing is marked or dropped while the backlog is under two MTUs.
//!
//! `uncoupled` is a dual queue without coupling: the L queue has only its
//! step AQM and the PI² controller sees only the C queue.

use crate::ecn::mark;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::{parse_count, parse_size};
use emu_core::{Ecn, Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Probability 1.0 in Linux's 32-bit fixed point.
pub const MAX_PROB: u32 = u32::MAX;

/// α and β as tc gives them (Hz, in 1/256) become 1/2^32 per 64 ns
/// (dualpi2_scale_alpha_beta).
pub fn scale_gain(tc_units: u32) -> u32 {
    (((tc_units as u64 * MAX_PROB as u64) >> 2) / 1_000_000_000) as u32
}

/// tc's conversion of a gain in Hz to its 1/256 units (truncating).
pub fn gain_from_hz(hz: f64) -> u32 {
    (hz * 256.0) as u32
}

/// What the step threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Step {
    Time(Nanos),
    Packets(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scheduler {
    /// Weighted round robin by bytes (Linux).
    Wrr,
    /// Time-shifted FIFO: serve the head that has waited longest, counting
    /// L packets as having waited `tshift` longer.
    TimeShifted(Nanos),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DualPi2Params {
    pub limit: u64,
    pub memory_limit: u64,
    pub target: Nanos,
    pub tupdate: Nanos,
    /// In tc's 1/256 Hz (41 = 0.16 Hz).
    pub alpha: u32,
    /// In tc's 1/256 Hz (819 = 3.2 Hz).
    pub beta: u32,
    pub coupling: u8,
    pub step: Step,
    pub min_qlen_step: u32,
    pub drop_overload: bool,
    pub drop_early: bool,
    /// The C queue's WRR weight in percent.
    pub classic_protection: u8,
    /// ECN bits that select the L queue: 1 (ECT(1), CE) or 3 (any ECT).
    pub ecn_mask: u8,
    pub scheduler: Scheduler,
    pub uncoupled: bool,
    pub mtu: u32,
    pub seed: u64,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            limit: 10_000,
            memory_limit: 10_000 * 2 * 1500,
            target: 15_000_000,
            tupdate: 16_000_000,
            alpha: 41,
            beta: 819,
            coupling: 2,
            step: Step::Time(1_000_000),
            min_qlen_step: 0,
            drop_overload: true,
            drop_early: false,
            classic_protection: 10,
            ecn_mask: 1,
            scheduler: Scheduler::Wrr,
            uncoupled: false,
            mtu: 1500,
            seed: 1,
        }
    }
}

impl DualPi2Params {
    /// tc's `max_rtt`/`typical_rtt` helper: target = typical RTT, tupdate
    /// = min(typical, max/3), α = 0.1·tupdate/max², β = 0.3/max. Either RTT
    /// may be left out: the other is 6 times larger or smaller.
    pub fn tune_for_rtt(
        &mut self,
        max_rtt: Option<Nanos>,
        typical_rtt: Option<Nanos>,
    ) -> Result<(), String> {
        let us = |ns: Nanos| (ns / 1000) as f64;
        let (max, typical) = match (max_rtt.map(us), typical_rtt.map(us)) {
            (Some(max), Some(typical)) if typical > max => {
                return Err("typical_rtt must be at most max_rtt".into())
            }
            (Some(max), Some(typical)) => (max, typical),
            (Some(max), None) => (max, (max / 6.0).floor().max(1.0)),
            (None, Some(typical)) => (typical * 6.0, typical),
            (None, None) => return Ok(()),
        };
        let tupdate = typical.min(max / 3.0).floor().max(1.0);
        let alpha = tupdate / max / max * 1e6 * 0.1;
        let beta = 0.3 / max * 1e6;
        if alpha < 1.0 / 256.0 || beta < 1.0 / 256.0 {
            return Err(format!(
                "max_rtt {max} us is so large that alpha or beta rounds to zero"
            ));
        }
        self.target = typical as Nanos * 1000;
        self.tupdate = tupdate as Nanos * 1000;
        self.alpha = gain_from_hz(alpha);
        self.beta = gain_from_hz(beta);
        Ok(())
    }
}

/// The PI controller's state (pi2_prob, last_qdelay).
#[derive(Debug, Clone, Default)]
pub struct Pi {
    pub prob: u32,
    pub last_qdelay: Nanos,
}

impl Pi {
    /// One update (calculate_probability) for queue delay `qdelay`.
    pub fn update(&mut self, params: &DualPi2Params, qdelay: Nanos) {
        let (alpha, beta) = (
            scale_gain(params.alpha) as i64,
            scale_gain(params.beta) as i64,
        );
        let mut delta = (qdelay as i64 - params.target as i64) * alpha;
        delta += (qdelay as i64 - self.last_qdelay as i64) * beta;
        self.last_qdelay = qdelay;
        let step = (delta.unsigned_abs() >> 6) as u32;
        let mut prob = if delta > 0 {
            self.prob.saturating_add(step)
        } else {
            self.prob.saturating_sub(step)
        };
        if !params.drop_overload {
            prob = prob.min(MAX_PROB / params.coupling.max(1) as u32);
        }
        self.prob = prob;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Classic,
    L4s,
}

struct Queued {
    packet: Packet,
    apply_step: bool,
}

pub struct DualPi2 {
    pub params: DualPi2Params,
    pub pi: Pi,
    l: VecDeque<Queued>,
    c: VecDeque<Queued>,
    bytes: u64,
    credit: i64,
    credit_init: i64,
    next_update: Option<Nanos>,
    rng: ChaCha8Rng,
}

impl DualPi2 {
    pub fn new(params: DualPi2Params) -> DualPi2 {
        let wc = params.classic_protection.min(100) as i64;
        let credit_init = params.mtu as i64 * (wc - (100 - wc));
        DualPi2 {
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            pi: Pi::default(),
            l: VecDeque::new(),
            c: VecDeque::new(),
            bytes: 0,
            credit: credit_init,
            credit_init,
            next_update: None,
        }
    }

    pub fn l_packets(&self) -> usize {
        self.l.len()
    }

    fn classify(&self, packet: &Packet) -> Class {
        let ecn = packet.ecn().map_or(0, |e| e as u8);
        if ecn & self.params.ecn_mask != 0 {
            Class::L4s
        } else {
            Class::Classic
        }
    }

    /// The queueing delay the PI controller sees at `now`: the older head.
    fn qdelay(&self, now: Nanos) -> Nanos {
        let age = |q: &VecDeque<Queued>| {
            q.front()
                .map_or(0, |h| now.saturating_sub(h.packet.enqueued))
        };
        if self.params.uncoupled {
            age(&self.c)
        } else {
            age(&self.l).max(age(&self.c))
        }
    }

    /// Runs every PI update due by `now`, each at its own tick time. The
    /// first tick is `tupdate` after the first packet, as the kernel timer
    /// is armed `tupdate` after the qdisc is created.
    fn run_timer(&mut self, now: Nanos) {
        let tupdate = self.params.tupdate.max(1);
        let mut next = *self.next_update.get_or_insert(now + tupdate);
        let mut ticks = 0;
        while next <= now && ticks < 1_000_000 {
            let qdelay = self.qdelay(next);
            self.pi.update(&self.params, qdelay);
            next += tupdate;
            ticks += 1;
        }
        if next <= now {
            next = now + tupdate; // absurdly long idle: resynchronise
        }
        self.next_update = Some(next);
    }

    fn roll(&mut self, prob: u32) -> bool {
        self.rng.gen::<u32>() <= prob
    }

    /// must_drop: marks the packet or says to drop it (and why).
    fn signal(
        &mut self,
        queued: &mut Queued,
        class: Class,
        now: Nanos,
        outcome: &mut Outcome,
    ) -> Option<DropReason> {
        if self.bytes < 2 * self.params.mtu as u64 {
            return None;
        }
        let prob = self.pi.prob;
        let local_l_prob = prob as u64 * self.params.coupling as u64;
        let overload = local_l_prob > MAX_PROB as u64;
        let not_ect = queued.packet.ecn().is_none_or(|e| e == Ecn::NotEct);
        match class {
            Class::Classic => {
                if self.roll(prob) && self.roll(prob) {
                    if overload || not_ect {
                        return Some(if overload {
                            DropReason::Overload
                        } else {
                            DropReason::Aqm
                        });
                    }
                    mark(&mut queued.packet, now, outcome);
                }
            }
            Class::L4s if self.params.uncoupled => {}
            Class::L4s if overload => {
                if self.params.drop_overload && self.roll(prob) && self.roll(prob) {
                    return Some(DropReason::Overload);
                }
                mark(&mut queued.packet, now, outcome);
            }
            Class::L4s => {
                if self.roll(local_l_prob as u32) {
                    if not_ect {
                        return Some(DropReason::Aqm);
                    }
                    mark(&mut queued.packet, now, outcome);
                }
            }
        }
        None
    }

    /// dequeue_packet: the WRR (or time-shifted FIFO) choice of queue.
    fn pick(&mut self) -> Option<(Queued, Class, i64)> {
        let (has_l, has_c) = (!self.l.is_empty(), !self.c.is_empty());
        let take_l = match self.params.scheduler {
            Scheduler::Wrr => has_l && (!has_c || self.credit <= 0),
            Scheduler::TimeShifted(shift) => time_shift_serves_l(
                self.l.front().map(|q| q.packet.enqueued),
                self.c.front().map(|q| q.packet.enqueued),
                shift,
            ),
        };
        let wc = self.params.classic_protection.min(100) as i64;
        let (queued, class, change) = if take_l {
            let q = self.l.pop_front()?;
            let change = if has_c { wc } else { 0 };
            (q, Class::L4s, change)
        } else if has_c {
            let q = self.c.pop_front()?;
            let change = if has_l { -(100 - wc) } else { 0 };
            (q, Class::Classic, change)
        } else {
            self.credit = self.credit_init;
            return None;
        };
        self.bytes -= queued.packet.frame_len() as u64;
        let change = change * queued.packet.frame_len() as i64;
        Some((queued, class, change))
    }
}

/// The time-shifted FIFO's choice between two heads that arrived at
/// `l_head` and `c_head`: the L head, unless L is empty or the C head
/// arrived more than `shift` before it. L packets thus wait up to `shift`
/// less than classic ones, and neither queue starves.
pub(crate) fn time_shift_serves_l(
    l_head: Option<Nanos>,
    c_head: Option<Nanos>,
    shift: Nanos,
) -> bool {
    match (l_head, c_head) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(l), Some(c)) => l.saturating_sub(shift) <= c,
    }
}

impl Queue for DualPi2 {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.run_timer(now);
        let len = packet.frame_len() as u64;
        if (self.l.len() + self.c.len()) as u64 >= self.params.limit
            || self.bytes + len > self.params.memory_limit
        {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let class = self.classify(&packet);
        packet.enqueued = now;
        let mut queued = Queued {
            apply_step: class == Class::L4s && self.l.len() as u32 >= self.params.min_qlen_step,
            packet,
        };
        if self.params.drop_early {
            if let Some(reason) = self.signal(&mut queued, class, now, outcome) {
                outcome.drop(queued.packet, reason, now);
                return false;
            }
        }
        self.bytes += len;
        match class {
            Class::L4s => self.l.push_back(queued),
            Class::Classic => self.c.push_back(queued),
        }
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        self.run_timer(now);
        while let Some((mut queued, class, change)) = self.pick() {
            if !self.params.drop_early {
                if let Some(reason) = self.signal(&mut queued, class, now, outcome) {
                    outcome.drop(queued.packet, reason, now);
                    continue;
                }
            }
            if class == Class::L4s && queued.apply_step {
                let over = match self.params.step {
                    Step::Packets(n) => self.l.len() as u64 > n as u64,
                    Step::Time(t) => now.saturating_sub(queued.packet.enqueued) > t,
                };
                if over && !mark(&mut queued.packet, now, outcome) {
                    outcome.drop(queued.packet, DropReason::Aqm, now);
                    continue;
                }
            }
            self.credit += change;
            return Some(queued.packet);
        }
        None
    }

    fn packets(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn bytes(&self) -> usize {
        self.bytes as usize
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
        let step = match p.step {
            Step::Time(t) => ms(t),
            Step::Packets(n) => format!("{n}packets"),
        };
        let mut text = format!(
            "dualpi2 limit {} memlimit {} target {} tupdate {} alpha {} beta {} coupling_factor {} step_thresh {} min_qlen_step {} {} {} classic_protection {} {}",
            p.limit,
            p.memory_limit,
            ms(p.target),
            ms(p.tupdate),
            p.alpha as f64 / 256.0,
            p.beta as f64 / 256.0,
            p.coupling,
            step,
            p.min_qlen_step,
            if p.drop_overload { "drop_on_overload" } else { "overflow" },
            if p.drop_early { "drop_enqueue" } else { "drop_dequeue" },
            p.classic_protection,
            if p.ecn_mask == 1 { "l4s_ect" } else { "any_ect" },
        );
        if let Scheduler::TimeShifted(shift) = p.scheduler {
            text += &format!(" tshift {}", ms(shift));
        }
        if p.uncoupled {
            text += " uncoupled";
        }
        text
    }
}

/// sch_dualpi2's options.
pub(crate) const OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "10000",
        "most packets held in both queues",
    ),
    (
        "memlimit",
        "SIZE",
        "limit*2*mtu",
        "most bytes held in both queues",
    ),
    ("target", "TIME", "15ms", "PI target queue delay"),
    ("tupdate", "TIME", "16ms", "interval between PI updates"),
    ("alpha", "HZ", "0.16", "integral gain"),
    ("beta", "HZ", "3.2", "proportional gain"),
    (
        "max_rtt",
        "TIME",
        "",
        "set target, tupdate, alpha, beta for this RTT",
    ),
    (
        "typical_rtt",
        "TIME",
        "",
        "with max_rtt: the RTT the target is set to",
    ),
    ("coupling_factor", "K", "2", "p_L = K * p'"),
    (
        "step_thresh",
        "TIME|Np",
        "1ms",
        "L queue step marking threshold (time, or packets with 'p')",
    ),
    (
        "min_qlen_step",
        "PACKETS",
        "0",
        "no step marking below this L queue length",
    ),
    (
        "drop_on_overload | overflow",
        "",
        "drop_on_overload",
        "overload: classic drop for L4S too, or mark and overflow",
    ),
    (
        "drop_enqueue | drop_dequeue",
        "",
        "drop_dequeue",
        "where the PI signal is applied",
    ),
    (
        "classic_protection",
        "PERCENT",
        "10",
        "the C queue's WRR weight",
    ),
    (
        "l4s_ect | any_ect",
        "",
        "l4s_ect",
        "what goes to the L queue: ECT(1)/CE, or any ECT",
    ),
    (
        "split_gso | no_split_gso",
        "",
        "split_gso",
        "accepted; emu's packets are already segmented",
    ),
    (
        "tshift",
        "TIME",
        "off",
        "time-shifted FIFO scheduler instead of WRR",
    ),
    (
        "uncoupled",
        "",
        "off",
        "no coupling: L queue step AQM only, PI sees the C queue",
    ),
    (
        "mtu",
        "BYTES",
        "1500",
        "MTU for the 2-MTU floor and the WRR credit",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

/// Reads dualpi2's options, applying `max_rtt`/`typical_rtt` as tc does.
pub(crate) fn parse(words: &mut Words) -> Result<DualPi2Params, SpecError> {
    let mut p = DualPi2Params::default();
    let (mut max_rtt, mut typical_rtt, mut memlimit) = (None, None, None);
    let gain = |v: &str| match v.parse::<f64>() {
        Ok(hz) if hz > 0.0 && hz < 8_388_608.0 => Ok(gain_from_hz(hz)),
        _ => Err(format!(
            "'{v}' is not a gain: expected a positive number of Hz"
        )),
    };
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "memlimit" => memlimit = Some(words.value(keyword, parse_size)?),
            "target" => p.target = words.value(keyword, tc_time)?,
            "tupdate" => p.tupdate = words.value(keyword, tc_time)?.max(1000),
            "alpha" => p.alpha = words.value(keyword, gain)?,
            "beta" => p.beta = words.value(keyword, gain)?,
            "max_rtt" => max_rtt = Some(words.value(keyword, tc_time)?),
            "typical_rtt" => typical_rtt = Some(words.value(keyword, tc_time)?),
            "coupling_factor" => {
                p.coupling = words.value(keyword, |v| match v.parse::<u8>() {
                    Ok(k) if k >= 1 => Ok(k),
                    _ => Err(format!("'{v}' is not a coupling factor: expected 1 to 255")),
                })?
            }
            "step_thresh" => {
                p.step = words.value(keyword, |v| {
                    let packets = ["p", "pkt", "pkts", "packet", "packets"]
                        .iter()
                        .find_map(|suffix| v.strip_suffix(suffix))
                        .and_then(|n| n.parse::<u32>().ok());
                    match packets {
                        Some(n) => Ok(Step::Packets(n)),
                        None => tc_time(v).map(Step::Time).map_err(|e| e.to_string()),
                    }
                })?
            }
            "min_qlen_step" => {
                p.min_qlen_step = words.value(keyword, parse_count)?.min(u32::MAX as u64) as u32
            }
            "drop_on_overload" => p.drop_overload = true,
            "overflow" => p.drop_overload = false,
            "drop_enqueue" => p.drop_early = true,
            "drop_dequeue" => p.drop_early = false,
            "classic_protection" => {
                p.classic_protection =
                    words.value(keyword, |v| match v.trim_end_matches('%').parse::<u8>() {
                        Ok(n) if n <= 100 => Ok(n),
                        _ => Err(format!("'{v}' is not a percentage: expected 0 to 100")),
                    })?
            }
            "l4s_ect" => p.ecn_mask = 1,
            "any_ect" => p.ecn_mask = 3,
            "split_gso" | "no_split_gso" => {}
            "tshift" => p.scheduler = Scheduler::TimeShifted(words.value(keyword, tc_time)?),
            "uncoupled" => p.uncoupled = true,
            "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    p.tune_for_rtt(max_rtt, typical_rtt)
        .map_err(|e| SpecError(format!("dualpi2: {e}")))?;
    p.memory_limit = memlimit.unwrap_or(p.limit * 2 * p.mtu as u64);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::NS_PER_MS;

    fn packet(tos: u8, sport: u16) -> Packet {
        Packet::new(
            ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], sport, 2, tos, 1500),
            0,
        )
    }

    /// REFERENCES.md: the Linux integer PI with qdelay held at 20 ms.
    #[test]
    fn pi_steps_at_a_constant_20ms_match_linux() {
        let params = DualPi2Params::default();
        let mut pi = Pi::default();
        let expected = [0.064756, 0.065556, 0.066357, 0.067157, 0.067957];
        for (tick, want) in expected.iter().enumerate() {
            pi.update(&params, 20 * NS_PER_MS);
            let p = pi.prob as f64 / MAX_PROB as f64;
            assert!((p - want).abs() < 5e-7, "tick {}: {p} vs {want}", tick + 1);
        }
        // p_C and p_L after the first tick.
        let mut pi = Pi::default();
        pi.update(&params, 20 * NS_PER_MS);
        let p = pi.prob as f64 / MAX_PROB as f64;
        assert!((p * p - 0.0041933).abs() < 5e-7);
        assert!((2.0 * p - 0.129512).abs() < 1e-6);
    }

    #[test]
    fn the_rtt_helper_matches_tc() {
        let mut p = DualPi2Params::default();
        p.tune_for_rtt(Some(100 * NS_PER_MS), Some(15 * NS_PER_MS))
            .unwrap();
        // tupdate 15 ms; α = 0.1·0.015/0.1² = 0.15 Hz, β = 0.3/0.1 = 3 Hz.
        assert_eq!((p.target, p.tupdate), (15 * NS_PER_MS, 15 * NS_PER_MS));
        assert_eq!((p.alpha, p.beta), (38, 768));
        let mut only_max = DualPi2Params::default();
        only_max.tune_for_rtt(Some(60 * NS_PER_MS), None).unwrap();
        assert_eq!(only_max.target, 10 * NS_PER_MS);
        assert!(p
            .tune_for_rtt(Some(NS_PER_MS), Some(2 * NS_PER_MS))
            .is_err());
    }

    #[test]
    fn ecn_codepoints_choose_the_queue() {
        let mut q = DualPi2::new(DualPi2Params::default());
        let mut out = Outcome::default();
        for tos in [0b00, 0b10, 0b01, 0b11] {
            q.enqueue(packet(tos, 1), 0, &mut out);
        }
        assert_eq!(q.l_packets(), 2, "ECT(1) and CE");
        let mut any = DualPi2::new(DualPi2Params {
            ecn_mask: 3,
            ..DualPi2Params::default()
        });
        for tos in [0b00, 0b10, 0b01, 0b11] {
            any.enqueue(packet(tos, 1), 0, &mut out);
        }
        assert_eq!(any.l_packets(), 3, "any_ect: all but Not-ECT");
    }

    #[test]
    fn the_step_marks_l4s_packets_that_waited_over_the_threshold() {
        let mut q = DualPi2::new(DualPi2Params::default());
        let mut out = Outcome::default();
        for i in 0..4 {
            q.enqueue(packet(0b01, 1), i * NS_PER_MS / 2, &mut out);
        }
        // At 1.6 ms the packets have waited 1.6, 1.1, 0.6 and 0.1 ms.
        let ecn: Vec<_> = (0..4)
            .map(|_| {
                q.dequeue(16 * NS_PER_MS / 10, &mut out)
                    .unwrap()
                    .ecn()
                    .unwrap()
            })
            .collect();
        assert_eq!(ecn, vec![Ecn::Ce, Ecn::Ce, Ecn::Ect1, Ecn::Ect1]);
        assert_eq!(out.marks.len(), 2);
        let mut by_packets = DualPi2::new(DualPi2Params {
            step: Step::Packets(2),
            ..DualPi2Params::default()
        });
        for _ in 0..5 {
            by_packets.enqueue(packet(0b01, 1), 0, &mut out);
        }
        let marked: Vec<bool> = (0..5)
            .map(|_| by_packets.dequeue(0, &mut out).unwrap().ecn() == Some(Ecn::Ce))
            .collect();
        // The L queue holds 4, 3, 2, 1, 0 after each dequeue: over 2 twice.
        assert_eq!(marked, vec![true, true, false, false, false]);
    }

    /// RFC 9332 §4.2.2: under saturation of both queues the WRR gives the
    /// classic queue its 10% of the bytes.
    #[test]
    fn wrr_gives_classic_its_protected_share() {
        let mut q = DualPi2::new(DualPi2Params {
            step: Step::Time(Nanos::MAX),
            ..DualPi2Params::default()
        });
        let mut out = Outcome::default();
        for _ in 0..2000 {
            q.enqueue(packet(0b01, 1), 0, &mut out);
            q.enqueue(packet(0b00, 2), 0, &mut out);
        }
        let classic = (0..1000)
            .filter(|_| q.dequeue(0, &mut out).unwrap().ecn() == Some(Ecn::NotEct))
            .count();
        assert_eq!(classic, 100);
    }

    #[test]
    fn time_shifted_fifo_serves_l_unless_classic_waited_tshift_longer() {
        let mut q = DualPi2::new(DualPi2Params {
            scheduler: Scheduler::TimeShifted(10 * NS_PER_MS),
            step: Step::Time(Nanos::MAX),
            ..DualPi2Params::default()
        });
        let mut out = Outcome::default();
        q.enqueue(packet(0b00, 2), 0, &mut out);
        q.enqueue(packet(0b01, 1), 5 * NS_PER_MS, &mut out);
        q.enqueue(packet(0b01, 1), 12 * NS_PER_MS, &mut out);
        let order: Vec<_> = (0..3)
            .map(|_| q.dequeue(12 * NS_PER_MS, &mut out).unwrap().ecn().unwrap())
            .collect();
        assert_eq!(order, vec![Ecn::Ect1, Ecn::NotEct, Ecn::Ect1]);
    }

    /// With p' held at 0.3, classic packets are signalled with p'² = 9%
    /// and L4S packets with 2·p' = 60%; Not-ECT classic ones are dropped.
    #[test]
    fn coupling_squares_for_classic_and_scales_for_l4s() {
        let mut q = DualPi2::new(DualPi2Params {
            step: Step::Time(Nanos::MAX),
            ..DualPi2Params::default()
        });
        let mut out = Outcome::default();
        let n = 10_000; // the default limit
        for i in 0..n {
            q.enqueue(packet(if i % 2 == 0 { 0b00 } else { 0b01 }, 1), 0, &mut out);
        }
        q.next_update = Some(u64::MAX);
        q.pi.prob = (0.3 * MAX_PROB as f64) as u32;
        let mut l_marked = 0;
        while let Some(p) = q.dequeue(0, &mut out) {
            l_marked += (p.ecn() == Some(Ecn::Ce)) as usize;
        }
        let classic_drops = out
            .drops
            .iter()
            .filter(|d| d.reason == DropReason::Aqm)
            .count();
        let classic_rate = classic_drops as f64 / (n / 2) as f64;
        let l_rate = l_marked as f64 / (n / 2) as f64;
        assert!((classic_rate - 0.09).abs() < 0.01, "p_C {classic_rate}");
        assert!((l_rate - 0.6).abs() < 0.02, "p_L {l_rate}");
    }

    #[test]
    fn overload_subjects_l4s_to_the_classic_drop_or_overflows() {
        for drop_overload in [true, false] {
            let mut q = DualPi2::new(DualPi2Params {
                step: Step::Time(Nanos::MAX),
                drop_overload,
                ..DualPi2Params::default()
            });
            let mut out = Outcome::default();
            for _ in 0..10_000 {
                q.enqueue(packet(0b01, 1), 0, &mut out);
            }
            q.next_update = Some(u64::MAX);
            q.pi.prob = (0.7 * MAX_PROB as f64) as u32; // k·p' = 1.4
            let (mut delivered, mut unmarked) = (0, 0);
            while let Some(p) = q.dequeue(0, &mut out) {
                unmarked += (p.ecn() != Some(Ecn::Ce)) as usize;
                delivered += 1;
            }
            // Every L4S packet is marked but the last two, sent with under
            // two MTUs of backlog left.
            assert_eq!(unmarked, 2);
            let overload = out
                .drops
                .iter()
                .filter(|d| d.reason == DropReason::Overload)
                .count();
            if drop_overload {
                let rate = overload as f64 / 10_000.0;
                assert!((rate - 0.49).abs() < 0.02, "p'² = 0.49, got {rate}");
            } else {
                assert_eq!((overload, delivered), (0, 10_000));
            }
        }
    }

    #[test]
    fn nothing_is_signalled_below_two_mtus() {
        let mut q = DualPi2::new(DualPi2Params::default());
        let mut out = Outcome::default();
        q.next_update = Some(u64::MAX);
        q.pi.prob = MAX_PROB;
        for _ in 0..100 {
            q.enqueue(packet(0b00, 1), 0, &mut out);
            q.enqueue(packet(0b00, 1), 0, &mut out);
            q.dequeue(0, &mut out).unwrap();
            q.dequeue(0, &mut out).unwrap();
        }
        assert!(out.is_empty());
    }

    #[test]
    fn the_timer_tracks_the_older_head() {
        let mut q = DualPi2::new(DualPi2Params::default());
        let mut out = Outcome::default();
        q.enqueue(packet(0b00, 1), 0, &mut out);
        q.enqueue(packet(0b00, 1), 0, &mut out);
        q.enqueue(packet(0b00, 1), 0, &mut out);
        // Ticks at 16, 32 and 48 ms see head ages of 16, 32 and 48 ms.
        q.dequeue(48 * NS_PER_MS, &mut out);
        let mut pi = Pi::default();
        let params = DualPi2Params::default();
        for age in [16, 32, 48] {
            pi.update(&params, age * NS_PER_MS);
        }
        assert_eq!(q.pi.prob, pi.prob);
    }
}
