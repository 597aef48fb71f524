//! CoDel, the Controlled Delay AQM (RFC 8289), as one routine that any
//! queue can run at dequeue time (the `codel` discipline here, each flow of
//! `fq_codel`).
//!
//! Two variants of the arithmetic:
//! - `linux` (default) follows include/net/codel_impl.h: time in units of
//!   1024 ns, 1/sqrt(count) kept as a Q0.16 number updated by one Newton
//!   step per drop, at most 256 drops per dequeue. Its first steps are
//!   coarse (the second drop comes 50 ms after the first, not 70.7 ms).
//! - `rfc` follows the pseudocode of RFC 8289 §5 with exact square roots
//!   and nanosecond time.

use crate::ecn::set_ce;
use crate::grammar::{tc_time, Opt, SpecError, Words};
use crate::{Fifo, Limits, Outcome};
use emu_core::log::{DropReason, Mark};
use emu_core::size::{parse_count, parse_size};
use emu_core::{Nanos, Packet};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Variant {
    Linux,
    Rfc,
}

/// CoDel's parameters (RFC 8289 §4.2–4.4; ce_threshold from Linux).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodelParams {
    pub target: Nanos,
    pub interval: Nanos,
    /// Mark ECT packets CE whenever their sojourn exceeds this (Linux).
    pub ce_threshold: Option<Nanos>,
    /// Mark ECT packets instead of dropping them.
    pub ecn: bool,
    /// Backlog in bytes at or below which CoDel never drops (RFC 8289
    /// §4.2: one MTU, so a link is never starved of its last packet).
    pub mtu: u32,
    pub variant: Variant,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: 5_000_000,
            interval: 100_000_000,
            ce_threshold: None,
            ecn: false,
            mtu: 1500,
            variant: Variant::Linux,
        }
    }
}

/// The `codel` discipline's parameters: CoDel's own and the limits of its
/// FIFO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodelQueueParams {
    pub codel: CodelParams,
    /// Most packets held (tail drop beyond).
    pub limit: u64,
    /// Most bytes held, if limited (Mahimahi's `bytes=`).
    pub byte_limit: Option<u64>,
}

/// What CoDel needs from the queue it controls.
pub trait FlowQueue {
    /// Takes the head packet.
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still queued after the last pop (for fq_codel: the whole qdisc).
    fn backlog(&self) -> u64;
}

/// Linux's cap on drops within one dequeue.
const MAX_DROPS_PER_DEQUEUE: u32 = 256;
/// Bits below the Q0.16 reciprocal square root in a Q0.32 number.
const REC_INV_SQRT_SHIFT: u32 = 16;

/// CoDel's state for one queue (RFC 8289 §5, `codel_vars`).
#[derive(Debug, Clone, Default)]
pub struct CodelVars {
    pub count: u32,
    lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count) in Q0.16 (Linux variant only).
    rec_inv_sqrt: u16,
    /// When the sojourn went (or will have gone) above target for an interval.
    first_above_time: Option<u64>,
    drop_next: u64,
    /// Sojourn of the last packet looked at, in the variant's units.
    ldelay: u64,
}

impl CodelParams {
    /// Time in the variant's units.
    fn units(&self, ns: Nanos) -> u64 {
        match self.variant {
            Variant::Linux => ns >> 10,
            Variant::Rfc => ns,
        }
    }
}

impl CodelVars {
    /// Sojourn time of the last packet CoDel looked at, in ns.
    pub fn last_sojourn(&self, params: &CodelParams) -> Nanos {
        match params.variant {
            Variant::Linux => self.ldelay << 10,
            Variant::Rfc => self.ldelay,
        }
    }

    /// One Newton–Raphson step for 1/sqrt(count) in Q0.16, exactly as
    /// codel_Newton_step: new = (old / 2) · (3 − count · old²).
    fn newton_step(&mut self) {
        let invsqrt = (self.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
        let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
        let mut value = (3u64 << 32).wrapping_sub(self.count as u64 * invsqrt2 as u64);
        value >>= 2;
        value = (value * invsqrt as u64) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (value >> REC_INV_SQRT_SHIFT) as u16;
    }

    /// t + interval / sqrt(count) (RFC 8289 §5.4).
    fn control_law(&self, t: u64, params: &CodelParams) -> u64 {
        let interval = params.units(params.interval);
        match params.variant {
            Variant::Linux => {
                let scale = (self.rec_inv_sqrt as u64) << REC_INV_SQRT_SHIFT;
                t + ((interval * scale) >> 32)
            }
            Variant::Rfc => {
                t + (interval as f64 / (self.count.max(1) as f64).sqrt()).round() as u64
            }
        }
    }

    /// Whether the packet just taken may be dropped (RFC 8289 §5.3
    /// dodequeue / codel_should_drop).
    fn should_drop(
        &mut self,
        packet: Option<&Packet>,
        params: &CodelParams,
        now: u64,
        backlog: u64,
    ) -> bool {
        let Some(packet) = packet else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now.saturating_sub(params.units(packet.enqueued));
        if self.ldelay < params.units(params.target) || backlog <= params.mtu as u64 {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + params.units(params.interval));
                false
            }
            Some(first_above) => {
                now > first_above || (params.variant == Variant::Rfc && now >= first_above)
            }
        }
    }

    fn reset_count(&mut self, params: &CodelParams) {
        self.count = 1;
        if params.variant == Variant::Linux {
            self.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        }
    }

    /// CoDel's dequeue (RFC 8289 §5.5, codel_dequeue): takes packets from
    /// `queue`, dropping (or CE-marking) them as the control law says, and
    /// returns the one to send. Drops and marks go to `outcome`.
    pub fn dequeue(
        &mut self,
        params: &CodelParams,
        now_ns: Nanos,
        queue: &mut impl FlowQueue,
        outcome: &mut Outcome,
    ) -> Option<Packet> {
        let Some(mut packet) = queue.pop() else {
            self.dropping = false;
            return None;
        };
        let now = params.units(now_ns);
        let drop = self.should_drop(Some(&packet), params, now, queue.backlog());
        let mut current = Some(packet);
        if self.dropping {
            if !drop {
                self.dropping = false; // sojourn below target: leave dropping state
            } else if now >= self.drop_next {
                let mut drops = 0;
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.wrapping_add(1);
                    if params.variant == Variant::Linux {
                        self.newton_step();
                    }
                    let mut victim = current.take().expect("a packet is in hand while dropping");
                    if params.ecn && set_ce(&mut victim) {
                        outcome.mark(&victim, Mark::Ce, now_ns);
                        self.drop_next = self.control_law(self.drop_next, params);
                        return self.finish(Some(victim), params, now_ns, outcome);
                    }
                    outcome.drop(victim, DropReason::Aqm, now_ns);
                    drops += 1;
                    current = queue.pop();
                    if !self.should_drop(current.as_ref(), params, now, queue.backlog()) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, params);
                    }
                    if params.variant == Variant::Linux && drops >= MAX_DROPS_PER_DEQUEUE {
                        // Resynchronise rather than loop without bound.
                        self.drop_next = now;
                        break;
                    }
                }
            }
        } else if drop {
            packet = current.take().expect("a packet is in hand");
            if params.ecn && set_ce(&mut packet) {
                outcome.mark(&packet, Mark::Ce, now_ns);
                current = Some(packet);
            } else {
                outcome.drop(packet, DropReason::Aqm, now_ns);
                current = queue.pop();
                // Evaluated for its effect on first_above_time and ldelay,
                // as Linux does; the dropping state starts regardless.
                self.should_drop(current.as_ref(), params, now, queue.backlog());
            }
            self.dropping = true;
            // If we were dropping recently, resume near the old drop rate
            // (RFC 8289 §5.5, "delta > 1 && now - drop_next < 16 * interval").
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = now.wrapping_sub(self.drop_next) < 16 * params.units(params.interval);
            if delta > 1 && recent {
                self.count = delta;
                if params.variant == Variant::Linux {
                    self.newton_step();
                }
            } else {
                self.reset_count(params);
            }
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, params);
        }
        self.finish(current, params, now_ns, outcome)
    }

    /// Linux's ce_threshold marking of the packet about to be sent.
    fn finish(
        &self,
        packet: Option<Packet>,
        params: &CodelParams,
        now_ns: Nanos,
        outcome: &mut Outcome,
    ) -> Option<Packet> {
        let mut packet = packet?;
        if let Some(threshold) = params.ce_threshold {
            if self.ldelay > params.units(threshold)
                && packet.ecn() != Some(emu_core::Ecn::Ce)
                && set_ce(&mut packet)
            {
                outcome.mark(&packet, Mark::Ce, now_ns);
            }
        }
        Some(packet)
    }
}

/// The `codel` discipline: a FIFO of at most `limit` packets (tail drop
/// beyond it, as sch_codel; optionally a byte limit too, for Mahimahi's
/// `bytes=`) controlled by CoDel at dequeue.
pub struct Codel {
    fifo: Fifo,
    limits: Limits,
    pub params: CodelParams,
    vars: CodelVars,
}

impl Codel {
    pub fn new(params: CodelParams, limit: u64) -> Codel {
        Codel {
            fifo: Fifo::default(),
            limits: Limits {
                packets: Some(limit),
                bytes: None,
            },
            params,
            vars: CodelVars::default(),
        }
    }

    /// Also tail-drops arrivals that would hold more than `bytes`.
    pub fn with_byte_limit(mut self, bytes: Option<u64>) -> Codel {
        self.limits.bytes = bytes;
        self
    }
}

impl FlowQueue for Fifo {
    fn pop(&mut self) -> Option<Packet> {
        Fifo::pop(self)
    }
    fn backlog(&self) -> u64 {
        self.bytes as u64
    }
}

impl crate::Queue for Codel {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if !self
            .limits
            .admits(self.fifo.len(), self.fifo.bytes, packet.frame_len())
        {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        self.fifo.push(packet, now);
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        self.vars
            .dequeue(&self.params, now, &mut self.fifo, outcome)
    }

    fn packets(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> usize {
        self.fifo.bytes
    }

    fn accepts_change(&self, spec: &crate::QueueSpec) -> Result<(), String> {
        match spec {
            crate::QueueSpec::Codel(_) => Ok(()),
            _ => Err(format!(
                "'{}' changes in place only to codel's own parameters; replace the queue instead",
                self.describe()
            )),
        }
    }

    /// New parameters with CoDel's state kept; packets beyond a lowered
    /// limit are dropped from the head, as sch_codel's change does.
    fn change(&mut self, spec: &crate::QueueSpec, now: Nanos, outcome: &mut Outcome) {
        if let crate::QueueSpec::Codel(p) = spec {
            self.params = p.codel.clone();
            self.limits = Limits {
                packets: Some(p.limit),
                bytes: p.byte_limit,
            };
            while self.fifo.len() as u64 > p.limit {
                if let Some(packet) = self.fifo.pop() {
                    outcome.drop(packet, DropReason::Head, now);
                }
            }
        }
    }

    fn describe(&self) -> String {
        let mut limits = format!("limit {}", self.limits.packets.unwrap_or(0));
        if let Some(bytes) = self.limits.bytes {
            limits += &format!(" bytes {bytes}");
        }
        describe_codel("codel", &self.params, &limits)
    }
}

/// `NAME limit … target … interval … [ce_threshold …] [ecn|noecn] [variant …]`
pub fn describe_codel(name: &str, p: &CodelParams, limits: &str) -> String {
    let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
    let mut text = format!(
        "{name} {limits} target {} interval {}",
        ms(p.target),
        ms(p.interval)
    );
    if let Some(threshold) = p.ce_threshold {
        text += &format!(" ce_threshold {}", ms(threshold));
    }
    text += if p.ecn { " ecn" } else { " noecn" };
    if p.variant == Variant::Rfc {
        text += " variant rfc";
    }
    text
}

/// The CoDel options `codel` and `fq_codel` share.
pub(crate) const SHARED_OPTIONS: &[Opt] = &[
    ("target", "TIME", "5ms", "acceptable standing queue delay"),
    (
        "interval",
        "TIME",
        "100ms",
        "window over which delay must stay above target",
    ),
    (
        "ce_threshold",
        "TIME",
        "off",
        "CE-mark ECT packets whose sojourn exceeds this",
    ),
    (
        "variant",
        "linux|rfc",
        "linux",
        "fixed-point Newton steps (Linux) or exact sqrt (RFC 8289)",
    ),
    (
        "mtu",
        "BYTES",
        "1500",
        "no drop while the backlog is at most this",
    ),
];

/// The options only the `codel` discipline has.
pub(crate) const OWN_OPTIONS: &[Opt] = &[
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
    (
        "ecn | noecn",
        "",
        "noecn",
        "mark ECT packets instead of dropping them",
    ),
];

/// Handles a CoDel keyword; false if it is not one.
pub(crate) fn option(
    words: &mut Words,
    keyword: &str,
    p: &mut CodelParams,
) -> Result<bool, SpecError> {
    match keyword {
        "target" => p.target = words.value(keyword, tc_time)?,
        "interval" => p.interval = words.value(keyword, tc_time)?,
        "ce_threshold" => p.ce_threshold = Some(words.value(keyword, tc_time)?),
        "ecn" => p.ecn = true,
        "noecn" => p.ecn = false,
        "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
        "variant" => {
            p.variant = words.value(keyword, |v| match v {
                "linux" => Ok(Variant::Linux),
                "rfc" => Ok(Variant::Rfc),
                _ => Err(format!("'{v}' is not a variant: expected linux or rfc")),
            })?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Reads the `codel` discipline's options.
pub(crate) fn parse(words: &mut Words) -> Result<CodelQueueParams, SpecError> {
    let mut codel = CodelParams::default();
    let (mut limit, mut bytes) = (1000, None);
    while let Some(keyword) = words.next_keyword() {
        if keyword == "limit" {
            limit = words.value(keyword, parse_count)?;
        } else if keyword == "bytes" {
            bytes = Some(words.value(keyword, parse_size)?);
        } else if !option(words, keyword, &mut codel)? {
            return Err(words.unknown(keyword));
        }
    }
    Ok(CodelQueueParams {
        codel,
        limit,
        byte_limit: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Queue;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::{NS_PER_MS, NS_PER_US};

    fn packet(tos: u8, size: usize) -> Packet {
        Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, tos, size), 0)
    }

    /// Holds the sojourn at 10 ms (twice the target) with a standing queue
    /// far above one MTU, dequeuing every microsecond, and returns the drop
    /// times in ms after the first.
    fn drop_schedule(variant: Variant, drops: usize) -> Vec<f64> {
        let params = CodelParams {
            variant,
            ..CodelParams::default()
        };
        let mut q = Codel::new(params, 1_000_000);
        let mut out = Outcome::default();
        let mut times = Vec::new();
        let mut t = 0;
        while times.len() < drops {
            q.enqueue(packet(0, 100), t, &mut out);
            if t >= 10 * NS_PER_MS {
                q.dequeue(t, &mut out);
                times.extend(out.drops.drain(..).map(|d| d.at));
            }
            t += NS_PER_US;
        }
        let first = times[0];
        times.iter().map(|&x| (x - first) as f64 / 1e6).collect()
    }

    fn assert_close(actual: &[f64], expected: &[f64], tolerance_ms: f64) {
        for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!(
                (a - e).abs() <= tolerance_ms,
                "drop {i}: {a:.4} ms, expected {e} ms (all: {actual:?})"
            );
        }
    }

    #[test]
    fn rfc_drop_schedule_follows_interval_over_sqrt_count() {
        let expected = [
            0.0, 100.0, 170.711, 228.446, 278.446, 323.167, 363.992, 401.788, 437.144, 470.477,
        ];
        assert_close(&drop_schedule(Variant::Rfc, 10), &expected, 0.002);
    }

    #[test]
    fn linux_drop_schedule_follows_its_fixed_point_newton_steps() {
        let expected = [0.0, 99.998, 149.999, 206.248, 255.026, 299.177];
        // Time steps of 1.024 µs and 1 µs dequeues: within 2 µs.
        assert_close(&drop_schedule(Variant::Linux, 6), &expected, 0.003);
    }

    #[test]
    fn no_drop_at_or_below_one_mtu_of_backlog() {
        let mut q = Codel::new(CodelParams::default(), 1000);
        let mut out = Outcome::default();
        // One 1500-byte packet at a time, each waiting a full second.
        for i in 0..50u64 {
            q.enqueue(packet(0, 1500), i * 1_000 * NS_PER_MS, &mut out);
            assert!(q
                .dequeue((i + 1) * 1_000 * NS_PER_MS - 1, &mut out)
                .is_some());
        }
        assert!(out.drops.is_empty());
    }

    #[test]
    fn ecn_marks_instead_of_dropping_ect_packets() {
        let params = CodelParams {
            ecn: true,
            ..CodelParams::default()
        };
        let mut q = Codel::new(params, 1_000_000);
        let mut out = Outcome::default();
        let mut delivered_ce = 0;
        for k in 0..400_000u64 {
            let t = k * NS_PER_US;
            q.enqueue(packet(0b10, 100), t, &mut out);
            if t >= 10 * NS_PER_MS {
                if let Some(p) = q.dequeue(t, &mut out) {
                    delivered_ce += (p.ecn() == Some(emu_core::Ecn::Ce)) as usize;
                }
            }
        }
        assert!(out.drops.is_empty(), "ECT packets are marked, not dropped");
        assert!(out.marks.len() >= 5 && out.marks.iter().all(|m| m.mark == Mark::Ce));
        assert_eq!(delivered_ce, out.marks.len());
    }

    #[test]
    fn ce_threshold_marks_every_ect_packet_above_it() {
        let params = CodelParams {
            ce_threshold: Some(NS_PER_MS),
            target: 100 * NS_PER_MS,
            ..CodelParams::default()
        };
        let mut q = Codel::new(params, 1000);
        let mut out = Outcome::default();
        q.enqueue(packet(0b01, 1500), 0, &mut out);
        q.enqueue(packet(0b00, 1500), 0, &mut out);
        q.enqueue(packet(0b10, 1500), 0, &mut out);
        let sent: Vec<_> = (0..3)
            .filter_map(|_| q.dequeue(2 * NS_PER_MS, &mut out))
            .map(|p| p.ecn().unwrap())
            .collect();
        assert_eq!(
            sent,
            vec![emu_core::Ecn::Ce, emu_core::Ecn::NotEct, emu_core::Ecn::Ce]
        );
        assert_eq!(out.marks.len(), 2);
    }

    #[test]
    fn the_limit_tail_drops() {
        let mut q = Codel::new(CodelParams::default(), 2);
        let mut out = Outcome::default();
        for _ in 0..3 {
            q.enqueue(packet(0, 100), 0, &mut out);
        }
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
