//! RED, Random Early Detection (Floyd & Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", 1993), with the options of Linux
//! net/sched/sch_red.c and tc-red: ECN marking, harddrop, gentle RED and
//! Adaptive RED (Floyd, Gummadi & Shenker 2001, as red_adaptative_algo).
//!
//! The average queue is an EWMA over the backlog seen by each arrival
//! (§4: avg ← (1 − w)·avg + w·q), decayed over idle periods as if `m`
//! average-sized packets had been sent (§11: avg ← (1 − w)^m · avg). Between
//! the thresholds the marking probability grows linearly to `max_p`, and
//! is spread evenly over arrivals by counting (§7: pa = pb / (1 − count·pb)).
//! The queue can be measured in bytes (tc's default) or in packets.

use crate::ecn::set_ce;
use crate::grammar::{probability, Opt, SpecError, Words};
use crate::{Fifo, Limits, Outcome, Queue};
use emu_core::log::{DropReason, Mark};
use emu_core::rate::Rate;
use emu_core::size::{parse_count, parse_size};
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// What the thresholds and the average count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    Bytes,
    Packets,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedParams {
    /// Hard limit on the backlog, in `unit`.
    pub limit: u64,
    pub min: u64,
    pub max: u64,
    pub unit: Unit,
    /// Average packet size in bytes: sets the idle decay and, with
    /// `bytemode`, the size scaling of the probability.
    pub avpkt: u32,
    /// Marking probability at the upper threshold.
    pub max_p: f64,
    /// EWMA weight of the average queue.
    pub weight: f64,
    /// Link rate in bits/s, for the idle-time decay.
    pub bandwidth: u64,
    pub ecn: bool,
    /// Drop rather than mark above the upper threshold, even ECT packets.
    pub harddrop: bool,
    /// Ramp from max_p to 1 between max and 2·max instead of jumping to 1.
    pub gentle: bool,
    /// Adjust max_p every 500 ms to keep the average mid-way (ARED).
    pub adaptive: bool,
    /// Scale the probability by packet size / avpkt (byte-mode RED).
    pub bytemode: bool,
    pub seed: u64,
}

impl RedParams {
    /// Parameters as tc-red builds them: `max` defaults to 3·min, or to
    /// limit/4 when neither is given, `min` to max/3, and the weight comes
    /// from `burst` (see [`ewma_log`]), whose default is (2·min + max) /
    /// (3·avpkt), all in tc's whole-number division.
    pub fn new(
        limit: u64,
        min: Option<u64>,
        max: Option<u64>,
        burst: Option<u64>,
        unit: Unit,
        avpkt: u32,
    ) -> Result<RedParams, String> {
        let (min, max) = match (min, max) {
            (Some(min), Some(max)) => (min, max),
            (Some(min), None) => (min, 3 * min),
            (None, Some(max)) => (max / 3, max),
            (None, None) => (limit / 4 / 3, limit / 4),
        };
        if min >= max {
            return Err(format!("min ({min}) must be below max ({max})"));
        }
        if max > limit {
            return Err(format!("max ({max}) must not exceed limit ({limit})"));
        }
        let size = |n: u64| match unit {
            Unit::Bytes => n as f64 / avpkt.max(1) as f64,
            Unit::Packets => n as f64,
        };
        let per_packet = match unit {
            Unit::Bytes => avpkt.max(1) as u64,
            Unit::Packets => 1,
        };
        let burst = burst.unwrap_or((2 * min + max) / (3 * per_packet));
        let wlog = ewma_log(size(min), burst)?;
        Ok(RedParams {
            limit,
            min,
            max,
            unit,
            avpkt,
            max_p: 0.02,
            weight: 1.0 / (1u64 << wlog) as f64,
            bandwidth: 10_000_000,
            ecn: false,
            harddrop: false,
            gentle: false,
            adaptive: false,
            bytemode: false,
            seed: 1,
        })
    }
}

/// tc-red's choice of EWMA weight 2^-Wlog: the largest weight for which a
/// burst of `burst` average packets arriving at an idle queue does not
/// push the average past `min` (`min` in average packets): the first Wlog
/// with burst + 1 − min ≤ (1 − (1 − W)^burst) / W.
pub fn ewma_log(min_packets: f64, burst: u64) -> Result<u32, String> {
    let a = burst as f64 + 1.0 - min_packets;
    if a < 1.0 {
        return Err(format!(
            "burst {burst} is too small for min: it must exceed min/avpkt ({min_packets:.1})"
        ));
    }
    let mut w: f64 = 0.5;
    for wlog in 1..32 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Ok(wlog);
        }
        w /= 2.0;
    }
    Err(format!("burst {burst} is too large"))
}

/// RED's ramp below the upper threshold: nothing below `min`, then a
/// straight line from 0 at `min` to `max_p` at `max`.
pub fn ramp(min: f64, max: f64, max_p: f64, queue: f64) -> f64 {
    if queue < min {
        0.0
    } else {
        max_p * (queue - min) / (max - min)
    }
}

/// What RED decides for one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Enqueue,
    /// Mark (or drop if it cannot be marked) with probability.
    Early,
    /// Above the upper threshold (or 2·max when gentle).
    Forced,
}

/// RED's state.
#[derive(Debug, Clone)]
pub struct RedVars {
    pub avg: f64,
    /// Arrivals since the last mark; −1 while below `min` (§7).
    pub count: i64,
    idle_since: Option<Nanos>,
    pub max_p: f64,
    next_adapt: Option<Nanos>,
}

impl RedVars {
    pub fn new(params: &RedParams) -> RedVars {
        RedVars {
            avg: 0.0,
            count: -1,
            idle_since: None,
            max_p: params.max_p,
            next_adapt: None,
        }
    }

    /// Updates the average with the backlog an arrival sees at `now`.
    pub fn update_average(&mut self, params: &RedParams, backlog: f64, now: Nanos) {
        if let Some(idle_since) = self.idle_since.take() {
            // §11: as if m packets of avpkt bytes had gone by on an empty queue.
            let per_packet = params.avpkt as f64 * 8.0 * 1e9 / params.bandwidth.max(1) as f64;
            let m = now.saturating_sub(idle_since) as f64 / per_packet;
            self.avg *= (1.0 - params.weight).powf(m);
        }
        self.avg += params.weight * (backlog - self.avg);
    }

    /// The probability before spreading (§7's pb), for an average `avg`.
    pub fn base_probability(&self, params: &RedParams, avg: f64) -> f64 {
        let (min, max) = (params.min as f64, params.max as f64);
        if avg < max {
            ramp(min, max, self.max_p, avg)
        } else if params.gentle && avg < 2.0 * max {
            self.max_p + (1.0 - self.max_p) * (avg - max) / max
        } else {
            1.0
        }
    }

    /// The decision for an arrival of `size` bytes, with `draw` uniform in
    /// [0, 1): below min nothing, above max (or 2·max if gentle) always,
    /// between them with pa = pb / (1 − count·pb) so that marks are spaced
    /// evenly between 1 and 1/pb arrivals apart.
    pub fn decide(&mut self, params: &RedParams, size: u32, draw: f64) -> Verdict {
        let (min, max) = (params.min as f64, params.max as f64);
        if self.avg < min {
            self.count = -1;
            return Verdict::Enqueue;
        }
        let forced_above = if params.gentle { 2.0 * max } else { max };
        if self.avg >= forced_above {
            self.count = 0;
            return Verdict::Forced;
        }
        self.count += 1;
        let mut pb = self.base_probability(params, self.avg);
        if params.bytemode {
            pb = (pb * size as f64 / params.avpkt.max(1) as f64).min(1.0);
        }
        let spread = 1.0 - self.count as f64 * pb;
        let pa = if spread <= 0.0 { 1.0 } else { pb / spread };
        if draw < pa {
            self.count = 0;
            Verdict::Early
        } else {
            Verdict::Enqueue
        }
    }

    /// Adaptive RED every 500 ms (red_adaptative_algo): keep the average
    /// between min + 0.4·(max − min) and min + 0.6·(max − min) by raising
    /// max_p additively (by at most 0.01, to 0.5) and lowering it by 0.9.
    fn adapt(&mut self, params: &RedParams, now: Nanos) {
        const PERIOD: Nanos = 500_000_000;
        let next = *self.next_adapt.get_or_insert(now + PERIOD);
        if now < next {
            return;
        }
        let span = (params.max - params.min) as f64;
        let (low, high) = (
            params.min as f64 + 0.4 * span,
            params.min as f64 + 0.6 * span,
        );
        let rounds = (now - next) / PERIOD + 1;
        for _ in 0..rounds.min(1000) {
            if self.avg > high && self.max_p <= 0.5 {
                self.max_p += (self.max_p / 4.0).min(0.01);
            } else if self.avg < low && self.max_p >= 0.01 {
                self.max_p *= 0.9;
            }
        }
        self.next_adapt = Some(next + rounds * PERIOD);
    }
}

pub struct Red {
    pub params: RedParams,
    pub vars: RedVars,
    fifo: Fifo,
    rng: ChaCha8Rng,
}

impl Red {
    pub fn new(params: RedParams) -> Red {
        Red {
            vars: RedVars::new(&params),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            fifo: Fifo::default(),
        }
    }

    fn backlog(&self) -> u64 {
        match self.params.unit {
            Unit::Bytes => self.fifo.bytes as u64,
            Unit::Packets => self.fifo.len() as u64,
        }
    }

    /// The hard limit, in the unit the queue is measured in.
    fn limits(&self) -> Limits {
        let limit = Some(self.params.limit);
        match self.params.unit {
            Unit::Bytes => Limits {
                packets: None,
                bytes: limit,
            },
            Unit::Packets => Limits {
                packets: limit,
                bytes: None,
            },
        }
    }
}

impl Queue for Red {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.params.adaptive {
            self.vars.adapt(&self.params, now);
        }
        let backlog = self.backlog() as f64;
        self.vars.update_average(&self.params, backlog, now);
        let draw: f64 = self.rng.gen();
        let verdict = self
            .vars
            .decide(&self.params, packet.frame_len() as u32, draw);
        let may_mark = self.params.ecn && !(verdict == Verdict::Forced && self.params.harddrop);
        if verdict != Verdict::Enqueue {
            if may_mark && set_ce(&mut packet) {
                outcome.mark(&packet, Mark::Ce, now);
            } else {
                outcome.drop(packet, DropReason::Aqm, now);
                return false;
            }
        }
        if !self
            .limits()
            .admits(self.fifo.len(), self.fifo.bytes, packet.frame_len())
        {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        self.fifo.push(packet, now);
        true
    }

    fn dequeue(&mut self, now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        let packet = self.fifo.pop()?;
        if self.fifo.is_empty() {
            self.vars.idle_since = Some(now);
        }
        Some(packet)
    }

    fn packets(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> usize {
        self.fifo.bytes
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let mut text = format!(
            "red limit {} min {} max {}{} avpkt {} probability {} weight {}",
            p.limit,
            p.min,
            p.max,
            if p.unit == Unit::Packets {
                " packets"
            } else {
                ""
            },
            p.avpkt,
            p.max_p,
            p.weight
        );
        for (on, word) in [
            (p.ecn, "ecn"),
            (p.harddrop, "harddrop"),
            (p.gentle, "gentle"),
            (p.adaptive, "adaptive"),
            (p.bytemode, "bytemode"),
        ] {
            if on {
                text += " ";
                text += word;
            }
        }
        text
    }
}

/// tc-red's options.
pub(crate) const OPTIONS: &[Opt] = &[
    (
        "limit",
        "SIZE",
        "required",
        "hard limit on the backlog (packets with 'packets')",
    ),
    (
        "min",
        "SIZE",
        "max/3",
        "average backlog where marking starts (max defaults to limit/4 if neither is given)",
    ),
    (
        "max",
        "SIZE",
        "3*min",
        "average backlog where marking reaches 'probability'",
    ),
    (
        "avpkt",
        "BYTES",
        "1000",
        "average packet size (idle decay, burst, bytemode)",
    ),
    (
        "burst",
        "PACKETS",
        "(2min+max)/3avpkt",
        "burst that must fit before min: sets the weight as tc does",
    ),
    (
        "weight",
        "W",
        "from burst",
        "EWMA weight of the average, 0 < W <= 1",
    ),
    ("probability", "P", "0.02", "marking probability at max"),
    (
        "bandwidth",
        "RATE",
        "10mbit",
        "link rate, for the idle-time decay",
    ),
    (
        "packets",
        "",
        "bytes",
        "count the queue in packets instead of bytes",
    ),
    (
        "ecn",
        "",
        "off",
        "mark ECT packets instead of dropping them",
    ),
    ("harddrop", "", "off", "drop even ECT packets above max"),
    (
        "gentle",
        "",
        "off",
        "ramp from probability to 1 between max and 2*max",
    ),
    (
        "adaptive",
        "",
        "off",
        "adapt probability every 500 ms (Adaptive RED)",
    ),
    (
        "bytemode",
        "",
        "off",
        "scale the probability by packet size / avpkt",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

/// Reads red's options, resolved as tc-red resolves them.
pub(crate) fn parse(words: &mut Words) -> Result<RedParams, SpecError> {
    let (mut limit, mut min, mut max, mut burst) = (None, None, None, None);
    let (mut avpkt, mut unit) = (1000u32, Unit::Bytes);
    let (mut weight, mut max_p, mut bandwidth, mut seed) = (None, None, None, None);
    let mut flags = [false; 5];
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => limit = Some(words.value(keyword, parse_size)?),
            "min" => min = Some(words.value(keyword, parse_size)?),
            "max" => max = Some(words.value(keyword, parse_size)?),
            "avpkt" => avpkt = words.value(keyword, parse_size)?.clamp(1, 65_535) as u32,
            "burst" => burst = Some(words.value(keyword, parse_count)?),
            "weight" => {
                weight = Some(words.value(keyword, |v| match v.parse::<f64>() {
                    Ok(w) if w > 0.0 && w <= 1.0 => Ok(w),
                    _ => Err(format!(
                        "'{v}' is not a weight: expected a number in (0, 1]"
                    )),
                })?)
            }
            "probability" => max_p = Some(words.value(keyword, probability)?),
            "bandwidth" => bandwidth = Some(words.value(keyword, Rate::parse)?.bits_per_sec()),
            "packets" => unit = Unit::Packets,
            "ecn" => flags[0] = true,
            "harddrop" => flags[1] = true,
            "gentle" => flags[2] = true,
            "adaptive" => flags[3] = true,
            "bytemode" => flags[4] = true,
            "seed" => seed = Some(words.value(keyword, parse_count)?),
            _ => return Err(words.unknown(keyword)),
        }
    }
    let limit = limit.ok_or_else(|| {
        SpecError("red: needs 'limit', e.g. 'red limit 400kb min 30kb max 90kb avpkt 1000'".into())
    })?;
    let mut p = RedParams::new(limit, min, max, burst, unit, avpkt)
        .map_err(|e| SpecError(format!("red: {e}")))?;
    p.weight = weight.unwrap_or(p.weight);
    p.max_p = max_p.unwrap_or(p.max_p);
    p.bandwidth = bandwidth.unwrap_or(p.bandwidth);
    p.seed = seed.unwrap_or(p.seed);
    [p.ecn, p.harddrop, p.gentle, p.adaptive, p.bytemode] = flags;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    fn params() -> RedParams {
        RedParams::new(100_000, Some(10_000), Some(30_000), None, Unit::Bytes, 1000).unwrap()
    }

    fn packet(tos: u8) -> Packet {
        Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, tos, 1000), 0)
    }

    #[test]
    fn tc_derives_the_weight_from_burst() {
        // min 3 packets, burst 5: a = 3; W = 1/2 gives 1.94 < 3, W = 1/4
        // gives (1 − 0.75^5)/0.25 = 3.05 ≥ 3.
        assert_eq!(ewma_log(3.0, 5), Ok(2));
        assert!(ewma_log(30.0, 20).unwrap_err().contains("too small"));
        // Default burst (2·10 + 30)/3 = 16 packets (tc's whole-number
        // division) for min 10: a = 7.
        let p = params();
        let wlog = (1.0 / p.weight).log2() as u32;
        let w = p.weight;
        assert!(7.0 <= (1.0 - (1.0 - w).powi(16)) / w);
        assert!(
            7.0 > (1.0 - (1.0 - 2.0 * w).powi(16)) / (2.0 * w),
            "wlog {wlog}"
        );
    }

    /// `red limit 150000 avpkt 1000 adaptive bandwidth 50Mbit ecn` as tc-red
    /// resolves it: max = limit/4 = 37500, min = max/3 = 12500, burst =
    /// (2·12500 + 37500)/3000 = 20, so a = 20 + 1 − 12.5 = 8.5 and the
    /// first W with (1 − (1 − W)^20)/W ≥ 8.5 is 1/16 (7.45 at 1/8, 11.6).
    #[test]
    fn a_limit_alone_gets_tc_reds_thresholds() {
        let spec = "red limit 150000 avpkt 1000 adaptive bandwidth 50Mbit ecn";
        let p = match crate::QueueSpec::parse(spec).unwrap() {
            crate::QueueSpec::Red(p) => p,
            other => panic!("{other:?}"),
        };
        assert_eq!((p.limit, p.min, p.max), (150_000, 12_500, 37_500));
        assert_eq!(p.weight, 1.0 / 16.0);
        assert_eq!(p.bandwidth, 50_000_000);
        assert!(p.adaptive && p.ecn && !p.gentle);
        let p = RedParams::new(400_000, None, None, None, Unit::Bytes, 1000).unwrap();
        assert_eq!((p.min, p.max), (33_333, 100_000));
    }

    #[test]
    fn the_average_is_an_ewma_of_the_backlog_arrivals_see() {
        let p = params();
        let mut v = RedVars::new(&p);
        for _ in 0..50 {
            v.update_average(&p, 20_000.0, 0);
        }
        let expected = 20_000.0 * (1.0 - (1.0 - p.weight).powi(50));
        assert!((v.avg - expected).abs() < 1e-6, "{} vs {expected}", v.avg);
    }

    #[test]
    fn idle_time_decays_the_average_as_if_packets_had_gone_by() {
        let p = params(); // 10 Mbit/s, 1000-byte packets: 800 µs each
        let mut v = RedVars::new(&p);
        v.avg = 20_000.0;
        v.idle_since = Some(0);
        v.update_average(&p, 0.0, 8_000_000); // 10 packet times
        let expected = 20_000.0 * (1.0 - p.weight).powi(10) * (1.0 - p.weight);
        assert!((v.avg - expected).abs() < 1e-6, "{} vs {expected}", v.avg);
    }

    #[test]
    fn probability_is_linear_between_thresholds_and_gentle_above() {
        let mut p = params();
        let v = RedVars::new(&p);
        assert_eq!(v.base_probability(&p, 9_999.0), 0.0);
        assert!((v.base_probability(&p, 20_000.0) - 0.01).abs() < 1e-12);
        assert_eq!(v.base_probability(&p, 30_000.0), 1.0);
        p.gentle = true;
        assert!((v.base_probability(&p, 45_000.0) - (0.02 + 0.98 * 0.5)).abs() < 1e-12);
    }

    /// §7: with the average held, the gap between marks is uniform on
    /// 1..=1/pb, so its mean is (1/pb + 1)/2 and it never exceeds 1/pb.
    #[test]
    fn marks_are_spread_evenly_by_the_count() {
        let p = params();
        let mut v = RedVars::new(&p);
        v.avg = 20_000.0; // pb = 0.01
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut gaps = Vec::new();
        let mut since = 0;
        for _ in 0..200_000 {
            since += 1;
            if v.decide(&p, 1000, rng.gen()) == Verdict::Early {
                gaps.push(since);
                since = 0;
            }
        }
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((mean - 50.5).abs() < 1.5, "mean gap {mean}");
        assert!(gaps.iter().all(|&g| (1..=100).contains(&g)));
    }

    #[test]
    fn above_max_ect_packets_are_marked_unless_harddrop() {
        let mut p = params();
        p.ecn = true;
        p.weight = 1.0; // the average is the instantaneous backlog
        let mut red = Red::new(p.clone());
        let mut out = Outcome::default();
        for _ in 0..40 {
            red.enqueue(packet(0b10), 0, &mut out);
        }
        assert!(out.drops.is_empty());
        assert!(out.marks.len() >= 10, "{}", out.marks.len());
        red.enqueue(packet(0b00), 0, &mut out);
        assert_eq!(out.drops.last().unwrap().reason, DropReason::Aqm);
        p.harddrop = true;
        let mut red = Red::new(p);
        let mut out = Outcome::default();
        for _ in 0..40 {
            red.enqueue(packet(0b10), 0, &mut out);
        }
        assert_eq!(red.packets(), 30, "ECT packets above max are dropped");
    }

    #[test]
    fn adaptive_red_lowers_max_p_while_the_average_is_low() {
        let mut p = params();
        p.adaptive = true;
        let mut red = Red::new(p);
        let mut out = Outcome::default();
        for i in 0..10u64 {
            red.enqueue(packet(0), i * 500_000_000, &mut out);
            red.dequeue(i * 500_000_000, &mut out);
        }
        // Nine periods below target, but ARED stops lowering max_p once it
        // is under 1%: 0.02 · 0.9^7 = 0.0096.
        assert!((red.vars.max_p - 0.02 * 0.9f64.powi(7)).abs() < 1e-12);
    }

    #[test]
    fn the_limit_tail_drops() {
        let mut p = params();
        p.min = 90_000;
        p.max = 95_000;
        let mut red = Red::new(p);
        let mut out = Outcome::default();
        for _ in 0..101 {
            red.enqueue(packet(0), 0, &mut out);
        }
        assert_eq!(red.packets(), 100);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
