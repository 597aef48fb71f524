//! PIE, Proportional Integral controller Enhanced (RFC 8033), with the
//! arithmetic of Linux net/sched/sch_pie.c: probability in Q56 (MAX_PROB =
//! 2^56 − 1), time in 64 ns scheduler ticks, the update timer every
//! `tupdate`, queue delay from packet timestamps (Linux's default) or from
//! the departure rate (`dq_rate_estimator`), and Linux's derandomized drop
//! decision. The update timer is driven by the `now` of each call: missed
//! updates are run when the next packet comes, in order, so an idle queue
//! decays exactly as under a kernel timer.

use crate::ecn::set_ce;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::{Fifo, Limits, Outcome, Queue};
use emu_core::log::{DropReason, Mark};
use emu_core::size::{parse_count, parse_size};
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Probability 1.0 in Q56, as Linux's MAX_PROB.
pub const MAX_PROB: u64 = u64::MAX >> 8;
const PSCHED_SHIFT: u32 = 6;
const TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
const QUEUE_THRESHOLD: u64 = 16_384;
const PIE_SCALE: u32 = 8;

pub(crate) fn ticks(ns: Nanos) -> u64 {
    ns >> PSCHED_SHIFT
}

/// PIE's parameters (RFC 8033 §5, tc-pie). `alpha` and `beta` are in
/// sixteenths, as tc takes them (2 = 0.125, 20 = 1.25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PieParams {
    pub target: Nanos,
    pub tupdate: Nanos,
    pub limit: u64,
    /// Most bytes held, if limited (Mahimahi's `bytes=` queue argument).
    pub byte_limit: Option<u64>,
    pub alpha: u32,
    pub beta: u32,
    pub ecn: bool,
    pub bytemode: bool,
    pub dq_rate_estimator: bool,
    pub max_burst: Nanos,
    pub mtu: u32,
    pub seed: u64,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: 15_000_000,
            tupdate: 15_000_000,
            limit: 1000,
            byte_limit: None,
            alpha: 2,
            beta: 20,
            ecn: false,
            bytemode: false,
            dq_rate_estimator: false,
            max_burst: 150_000_000,
            mtu: 1500,
            seed: 1,
        }
    }
}

/// PIE's state (struct pie_vars), times in ticks.
#[derive(Debug, Clone)]
pub struct PieVars {
    pub qdelay: u64,
    pub qdelay_old: u64,
    pub burst_time: u64,
    dq_tstamp: Option<u64>,
    /// Drop probability in Q56.
    pub prob: u64,
    pub accu_prob: u64,
    dq_count: Option<u64>,
    avg_dq_rate: u64,
}

impl PieVars {
    pub(crate) fn new(params: &PieParams) -> PieVars {
        PieVars {
            qdelay: 0,
            qdelay_old: 0,
            burst_time: ticks(params.max_burst),
            dq_tstamp: None,
            prob: 0,
            accu_prob: 0,
            dq_count: None,
            avg_dq_rate: 0,
        }
    }

    /// pie_vars_init: restart measurement, keeping delays and probability.
    fn restart(&mut self, params: &PieParams) {
        self.burst_time = ticks(params.max_burst);
        self.dq_tstamp = None;
        self.accu_prob = 0;
        self.dq_count = None;
        self.avg_dq_rate = 0;
    }

    /// The probability update run every `tupdate` (RFC 8033 §4.2;
    /// pie_calculate_probability).
    pub fn calculate_probability(&mut self, params: &PieParams, backlog: u64) {
        let (qdelay, qdelay_old) = if params.dq_rate_estimator {
            let old = self.qdelay;
            self.qdelay_old = self.qdelay;
            // Little's law; no estimate yet means no delay.
            let qdelay = (backlog << PIE_SCALE)
                .checked_div(self.avg_dq_rate)
                .unwrap_or(0);
            (qdelay, old)
        } else {
            (self.qdelay, self.qdelay_old)
        };
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let mut alpha = (params.alpha as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        let mut beta = (params.beta as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        // RFC 8033 §4.2 / Linux: scale the update down while p is small.
        if self.prob < MAX_PROB / 10 {
            alpha >>= 1;
            beta >>= 1;
            let mut power = 100u64;
            while self.prob < MAX_PROB / power && power <= 1_000_000 {
                alpha >>= 2;
                beta >>= 2;
                power *= 10;
            }
        }
        let target = ticks(params.target) as i64;
        let mut delta: i64 = (alpha as i64).wrapping_mul(qdelay as i64 - target);
        delta = delta.wrapping_add((beta as i64).wrapping_mul(qdelay as i64 - qdelay_old as i64));
        let old = self.prob;
        // Increase by at most 2% a step once p is 10% or more.
        if delta > (MAX_PROB / 50) as i64 && self.prob >= MAX_PROB / 10 {
            delta = (MAX_PROB / 100 * 2) as i64;
        }
        // Delays beyond 250 ms raise p quickly.
        if qdelay > ticks(250_000_000) {
            delta += (MAX_PROB / 50) as i64;
        }
        self.prob = self.prob.wrapping_add(delta as u64);
        if delta > 0 {
            if self.prob < old || self.prob > MAX_PROB {
                self.prob = MAX_PROB;
                update_prob = false;
            }
        } else if self.prob > old {
            self.prob = 0;
        }
        // Two updates in a row with no delay: decay p by 1/64.
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64;
        }
        self.qdelay = qdelay;
        let half = ticks(params.target) / 2;
        if self.qdelay < half
            && self.qdelay_old < half
            && self.prob == 0
            && (!params.dq_rate_estimator || self.avg_dq_rate > 0)
        {
            self.restart(params);
        }
        if !params.dq_rate_estimator {
            self.qdelay_old = qdelay;
        }
    }

    /// pie_process_dequeue: measure queue delay and spend the burst allowance.
    pub(crate) fn process_dequeue(
        &mut self,
        params: &PieParams,
        packet: &Packet,
        now: u64,
        backlog: u64,
    ) {
        let mut dtime = 0;
        if !params.dq_rate_estimator {
            self.qdelay = now.saturating_sub(ticks(packet.enqueued));
            if let Some(previous) = self.dq_tstamp {
                dtime = now - previous;
            }
            self.dq_tstamp = Some(now);
            if backlog == 0 {
                self.qdelay = 0;
            }
            if dtime == 0 {
                return;
            }
        } else {
            if backlog >= QUEUE_THRESHOLD && self.dq_count.is_none() {
                self.dq_tstamp = Some(now);
                self.dq_count = Some(0);
            }
            let Some(count) = self.dq_count.as_mut() else {
                return;
            };
            *count += packet.frame_len() as u64;
            if *count < QUEUE_THRESHOLD {
                return;
            }
            let scaled = *count << PIE_SCALE;
            dtime = now - self.dq_tstamp.unwrap_or(now);
            if dtime == 0 {
                return;
            }
            let rate = scaled / dtime;
            self.avg_dq_rate = if self.avg_dq_rate == 0 {
                rate
            } else {
                self.avg_dq_rate - (self.avg_dq_rate >> 3) + (rate >> 3)
            };
            if backlog < QUEUE_THRESHOLD {
                self.dq_count = None;
            } else {
                self.dq_count = Some(0);
                self.dq_tstamp = Some(now);
            }
        }
        self.burst_time = self.burst_time.saturating_sub(dtime);
    }

    /// pie_drop_early: whether to drop (or mark) an arriving packet, with
    /// Linux's derandomization (RFC 8033 §5.1 as Linux does it): drops are
    /// never closer than 0.85/p packets and never further than 8.5/p.
    pub(crate) fn drop_early(
        &mut self,
        params: &PieParams,
        backlog: u64,
        size: u32,
        draw: u64,
    ) -> bool {
        if self.burst_time > 0 {
            return false;
        }
        if self.qdelay < ticks(params.target) / 2 && self.prob < MAX_PROB / 5 {
            return false;
        }
        if backlog < 2 * params.mtu as u64 {
            return false;
        }
        let local = if params.bytemode && size <= params.mtu {
            size as u64 * (self.prob / params.mtu as u64)
        } else {
            self.prob
        };
        if local == 0 {
            self.accu_prob = 0;
        } else {
            self.accu_prob = self.accu_prob.saturating_add(local);
        }
        if self.accu_prob < (MAX_PROB / 100) * 85 {
            return false;
        }
        if self.accu_prob >= (MAX_PROB / 2) * 17 {
            return true;
        }
        if (draw >> 8) < local {
            self.accu_prob = 0;
            return true;
        }
        false
    }
}

impl PieVars {
    /// PIE's decision on an arrival (`draw` uniform over u64) at a queue
    /// holding `backlog` bytes: true to keep it, marked if PIE chose it and
    /// it is ECN-capable while p ≤ 10% (RFC 8033 §5.1); false to drop it.
    pub(crate) fn admit(
        &mut self,
        params: &PieParams,
        packet: &mut Packet,
        backlog: u64,
        draw: u64,
        now: Nanos,
        outcome: &mut Outcome,
    ) -> bool {
        if !self.drop_early(params, backlog, packet.frame_len() as u32, draw) {
            return true;
        }
        if params.ecn && self.prob <= MAX_PROB / 10 && set_ce(packet) {
            outcome.mark(packet, Mark::Ce, now);
            return true;
        }
        self.accu_prob = 0;
        false
    }
}

/// PIE's `tupdate` timer, driven by the `now` of each call: it says how
/// many updates fell due since the last call, so missed updates run in
/// order when the next packet comes and an idle queue decays exactly as
/// under a kernel timer.
#[derive(Debug, Default)]
pub(crate) struct UpdateTimer {
    next: Option<Nanos>,
}

impl UpdateTimer {
    /// Linux arms the first timer half a second after the qdisc is
    /// created; here the clock of the first call stands for that moment.
    pub(crate) fn due(&mut self, now: Nanos, tupdate: Nanos) -> u64 {
        let next = *self.next.get_or_insert(now + 500_000_000);
        if tupdate == 0 || now < next {
            return 0;
        }
        let due = (now - next) / tupdate + 1;
        self.next = Some(next + due * tupdate);
        due.min(1_000_000)
    }
}

/// The `pie` discipline.
pub struct Pie {
    pub params: PieParams,
    pub vars: PieVars,
    fifo: Fifo,
    timer: UpdateTimer,
    rng: ChaCha8Rng,
}

impl Pie {
    pub fn new(params: PieParams) -> Pie {
        Pie {
            vars: PieVars::new(&params),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            fifo: Fifo::default(),
            timer: UpdateTimer::default(),
        }
    }

    fn run_timer(&mut self, now: Nanos) {
        for _ in 0..self.timer.due(now, self.params.tupdate) {
            self.vars
                .calculate_probability(&self.params, self.fifo.bytes as u64);
        }
    }
}

impl Queue for Pie {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.run_timer(now);
        let limits = Limits {
            packets: Some(self.params.limit),
            bytes: self.params.byte_limit,
        };
        if !limits.admits(self.fifo.len(), self.fifo.bytes, packet.frame_len()) {
            self.vars.accu_prob = 0;
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let draw: u64 = self.rng.gen();
        let backlog = self.fifo.bytes as u64;
        if !self
            .vars
            .admit(&self.params, &mut packet, backlog, draw, now, outcome)
        {
            outcome.drop(packet, DropReason::Aqm, now);
            return false;
        }
        self.fifo.push(packet, now);
        true
    }

    fn dequeue(&mut self, now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.run_timer(now);
        let packet = self.fifo.pop()?;
        let backlog = self.fifo.bytes as u64;
        self.vars
            .process_dequeue(&self.params, &packet, ticks(now), backlog);
        Some(packet)
    }

    fn packets(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> usize {
        self.fifo.bytes
    }

    fn accepts_change(&self, spec: &crate::QueueSpec) -> Result<(), String> {
        match spec {
            crate::QueueSpec::Pie(_) => Ok(()),
            _ => Err(format!(
                "'{}' changes in place only to pie's own parameters; replace the queue instead",
                self.describe()
            )),
        }
    }

    /// New parameters with PIE's probability and its timer kept; packets
    /// beyond a lowered limit are dropped from the head, as sch_pie's
    /// change does.
    fn change(&mut self, spec: &crate::QueueSpec, now: Nanos, outcome: &mut Outcome) {
        if let crate::QueueSpec::Pie(p) = spec {
            self.params = p.clone();
            while self.fifo.len() as u64 > p.limit {
                if let Some(packet) = self.fifo.pop() {
                    outcome.drop(packet, DropReason::Head, now);
                }
            }
        }
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
        format!(
            "pie limit {}{} target {} tupdate {} alpha {} beta {} max_burst {}{}{}{}",
            p.limit,
            p.byte_limit
                .map_or(String::new(), |b| format!(" bytes {b}")),
            ms(p.target),
            ms(p.tupdate),
            p.alpha,
            p.beta,
            ms(p.max_burst),
            if p.ecn { " ecn" } else { " noecn" },
            if p.bytemode { " bytemode" } else { "" },
            if p.dq_rate_estimator {
                " dq_rate_estimator"
            } else {
                ""
            },
        )
    }
}

/// pie's limits (the whole queue's; fq_pie's limit is a flow-queue option).
pub(crate) const LIMIT_OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "1000",
        "most packets held (tail drop beyond)",
    ),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (tail drop beyond)",
    ),
];

/// The PIE options `pie` and `fq_pie` share.
pub(crate) const SHARED_OPTIONS: &[Opt] = &[
    ("target", "TIME", "15ms", "target queue delay"),
    (
        "tupdate",
        "TIME",
        "15ms",
        "interval between probability updates",
    ),
    ("alpha", "N", "2", "integral gain in 1/16 (2 = 0.125)"),
    ("beta", "N", "20", "proportional gain in 1/16 (20 = 1.25)"),
    ("max_burst", "TIME", "150ms", "burst allowance"),
    (
        "ecn | noecn",
        "",
        "noecn",
        "mark ECT packets while p <= 10%",
    ),
    (
        "bytemode | nobytemode",
        "",
        "nobytemode",
        "scale the probability by packet size",
    ),
    (
        "dq_rate_estimator | no_dq_rate_estimator",
        "",
        "off",
        "delay from the departure rate instead of timestamps",
    ),
    ("seed", "N", "1", "seed of the random drop decisions"),
];

/// Handles a PIE keyword; false if it is not one.
pub(crate) fn option(
    words: &mut Words,
    keyword: &str,
    p: &mut PieParams,
) -> Result<bool, SpecError> {
    {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?,
            "target" => p.target = words.value(keyword, tc_time)?,
            "tupdate" => p.tupdate = words.value(keyword, tc_time)?,
            "alpha" => p.alpha = words.value(keyword, parse_count)?.min(32) as u32,
            "beta" => p.beta = words.value(keyword, parse_count)?.min(32) as u32,
            "max_burst" => p.max_burst = words.value(keyword, tc_time)?,
            "ecn" => p.ecn = true,
            "noecn" => p.ecn = false,
            "bytemode" => p.bytemode = true,
            "nobytemode" => p.bytemode = false,
            "dq_rate_estimator" => p.dq_rate_estimator = true,
            "no_dq_rate_estimator" => p.dq_rate_estimator = false,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// Reads pie's options.
pub(crate) fn parse(words: &mut Words) -> Result<PieParams, SpecError> {
    let mut p = PieParams::default();
    while let Some(keyword) = words.next_keyword() {
        if keyword == "bytes" {
            p.byte_limit = Some(words.value(keyword, parse_size)?);
        } else if !option(words, keyword, &mut p)? {
            return Err(words.unknown(keyword));
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::NS_PER_MS;

    fn prob(p: &PieVars) -> f64 {
        p.prob as f64 / MAX_PROB as f64
    }

    fn vars_at(params: &PieParams, qdelay_ms: f64, qdelay_old_ms: f64, prob: f64) -> PieVars {
        let mut v = PieVars::new(params);
        v.qdelay = ticks((qdelay_ms * 1e6) as u64);
        v.qdelay_old = ticks((qdelay_old_ms * 1e6) as u64);
        v.prob = (prob * MAX_PROB as f64) as u64;
        v
    }

    /// REFERENCES.md: one update at p = 0 gives
    /// Δp = [0.125·(qdelay − 15 ms) + 1.25·(qdelay − qdelay_old)] / 2048.
    #[test]
    fn one_update_at_zero_probability_is_scaled_by_1_over_2048() {
        let params = PieParams::default();
        let mut v = vars_at(&params, 40.0, 20.0, 0.0);
        v.calculate_probability(&params, 100_000);
        let expected = (0.125 * (0.040 - 0.015) + 1.25 * (0.040 - 0.020)) / 2048.0;
        assert!(
            (prob(&v) - expected).abs() < expected * 1e-3,
            "{} vs {expected}",
            prob(&v)
        );
    }

    /// The scaling ladder: /2 below 10%, then /4 for each decade down to 1e-6.
    #[test]
    fn the_update_scales_with_the_probability() {
        let params = PieParams::default();
        for (p, divisor) in [
            (0.5, 1.0),
            (0.05, 2.0),
            (0.005, 8.0),
            (0.0005, 32.0),
            (0.00005, 128.0),
            (0.000005, 512.0),
            (0.0000005, 2048.0),
        ] {
            let mut v = vars_at(&params, 16.0, 16.0, p);
            v.calculate_probability(&params, 100_000);
            let expected = 0.125 * 0.001 / divisor;
            let got = prob(&v) - p;
            assert!(
                (got - expected).abs() < expected * 0.01,
                "p={p}: Δp {got} vs {expected}"
            );
        }
    }

    #[test]
    fn increases_above_10_percent_are_capped_at_2_percent_and_250ms_adds_2() {
        let params = PieParams::default();
        let mut v = vars_at(&params, 200.0, 0.0, 0.2);
        v.calculate_probability(&params, 100_000);
        assert!((prob(&v) - 0.22).abs() < 1e-6, "{}", prob(&v));
        let mut v = vars_at(&params, 300.0, 300.0, 0.2);
        v.calculate_probability(&params, 100_000);
        assert!(
            (prob(&v) - 0.24).abs() < 1e-6,
            "cap then +2% beyond 250 ms: {}",
            prob(&v)
        );
    }

    #[test]
    fn two_updates_without_delay_decay_p_by_a_64th() {
        let params = PieParams::default();
        let mut v = vars_at(&params, 0.0, 0.0, 0.3);
        v.calculate_probability(&params, 0);
        // Δp = 0.125·(0 − 0.015) = −0.001875, then −1/64 of the result.
        let expected = (0.3 - 0.001875) * (1.0 - 1.0 / 64.0);
        assert!((prob(&v) - expected).abs() < 1e-6, "{}", prob(&v));
    }

    fn saturate(params: PieParams, tos: u8) -> (Pie, Outcome, u64) {
        // Arrivals at twice the departure rate: the queue and its delay grow.
        let mut q = Pie::new(params);
        let mut out = Outcome::default();
        let mut offered = 0;
        for k in 0..20_000u64 {
            let t = k * NS_PER_MS / 2;
            offered += 1;
            q.enqueue(
                Packet::new(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, tos, 1500), t),
                t,
                &mut out,
            );
            if k % 2 == 0 {
                q.dequeue(t, &mut out);
            }
        }
        (q, out, offered)
    }

    /// With p already high, nothing is dropped until dequeues have spent
    /// the 150 ms burst allowance; then drops begin at once.
    #[test]
    fn the_burst_allowance_holds_off_drops_for_max_burst() {
        let mut q = Pie::new(PieParams {
            limit: 100_000,
            ..PieParams::default()
        });
        q.vars.prob = MAX_PROB / 2;
        let mut out = Outcome::default();
        for k in 0..400u64 {
            let t = k * NS_PER_MS;
            for _ in 0..2 {
                q.enqueue(
                    Packet::new(ipv4_udp([1, 1, 1, 1], [2, 2, 2, 2], 1, 2, 0, 1500), t),
                    t,
                    &mut out,
                );
            }
            q.dequeue(t, &mut out);
        }
        let first = out
            .drops
            .iter()
            .find(|d| d.reason == DropReason::Aqm)
            .expect("PIE drops with p at 50%")
            .at;
        assert!(
            (150 * NS_PER_MS..160 * NS_PER_MS).contains(&first),
            "first AQM drop at {} ms",
            first / NS_PER_MS
        );
    }

    #[test]
    fn ecn_marks_only_while_p_is_at_most_10_percent() {
        let (q, out, _) = saturate(
            PieParams {
                ecn: true,
                limit: 100_000,
                ..PieParams::default()
            },
            0b10,
        );
        assert!(!out.marks.is_empty(), "ECT packets are marked");
        assert!(q.vars.prob > MAX_PROB / 10, "overload drives p past 10%");
        let aqm_drops = out
            .drops
            .iter()
            .filter(|d| d.reason == DropReason::Aqm)
            .count();
        assert!(
            aqm_drops > 0,
            "above 10% ECT packets are dropped, not marked"
        );
    }

    /// Derandomization: with p fixed, drops are never closer than 0.85/p
    /// packets and never more than 8.5/p apart; in between each packet is
    /// dropped with probability p, so the mean gap is 8 + 1/p at p = 0.1.
    #[test]
    fn drops_are_spaced_between_0_85_and_8_5_over_p() {
        let params = PieParams::default();
        let mut v = vars_at(&params, 30.0, 30.0, 0.1);
        v.burst_time = 0;
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..100_000 {
            since += 1;
            if v.drop_early(&params, 1_000_000, 1500, rng.gen()) {
                v.accu_prob = 0; // as the enqueue path does on every drop
                gaps.push(since);
                since = 0;
            }
        }
        let (shortest, longest) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        // 0.85/p = 8.5 packets (so 9), 8.5/p = 85 (86 as p is a hair under 0.1 in Q56).
        assert!(
            shortest >= 9 && longest <= 86,
            "gaps from {shortest} to {longest}"
        );
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean - 18.0).abs() < 1.5, "mean gap {mean}");
    }
}
