//! COBALT, cake's AQM: CoDel and BLUE run side by side on each flow queue
//! (sch_cake.c, "COBALT"; Piece of CAKE §4.2), plus the SCE ramp of the SCE
//! fork of cake (chromi/sce), which marks ECT(0) packets ECT(1) with a
//! probability that rises with sojourn time.
//!
//! CoDel here is cake's: 1/sqrt(count) is kept in Q0.32, looked up in a
//! table of four Newton steps for count < 16 and stepped once above; the
//! count also decays while the queue is empty, so a flow that returns soon
//! resumes near its old signalling rate. BLUE raises its drop probability
//! by 1/256 on every overflow and lowers it by 1/4096 whenever the queue is
//! found empty, each at most once per `target`.

use crate::ecn::set_ce;
use emu_core::{Ecn, Nanos, Packet};

/// Per-tin parameters (struct cobalt_params).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CobaltParams {
    pub interval: Nanos,
    pub target: Nanos,
    /// Serialisation time of one MTU at the tin's rate.
    pub mtu_time: Nanos,
    /// BLUE steps in 1/2^32.
    pub p_inc: u32,
    pub p_dec: u32,
    /// SCE ramp in 1/2^32 per ns below and above the knee, and the marking
    /// fraction at the knee (the CoDel target).
    pub sce_ramp_lo: u32,
    pub sce_ramp_hi: u32,
    pub sce_ramp_knee: u32,
}

impl CobaltParams {
    /// The SCE ramp for divisor `d` (cake_set_rate): 0 disables it; d above
    /// 1024 is `sce-single` (nothing below target, then 0→100% over one
    /// more target); otherwise the ramp reaches 1/d at target, starting at
    /// target/2, and 100% at twice the target.
    pub fn set_sce_ramp(&mut self, divisor: u32) {
        let full = u32::MAX as u64;
        let (knee, lo, hi) = if divisor > 1024 {
            (0, 0, full / self.target.max(1))
        } else if divisor > 0 {
            let knee = full / divisor as u64;
            (
                knee,
                knee / (self.target / 2).max(1),
                (full - knee) / self.target.max(1),
            )
        } else {
            (0, 0, 0)
        };
        self.sce_ramp_knee = knee as u32;
        self.sce_ramp_lo = lo.min(full) as u32;
        self.sce_ramp_hi = hi.min(full) as u32;
    }

    /// The SCE marking probability (in 1/2^32, may exceed 2^32) at a
    /// sojourn time; `over_target` as COBALT judged it.
    pub fn sce_probability(&self, sojourn: Nanos, over_target: bool) -> i64 {
        if sojourn <= self.target / 2 {
            return 0;
        }
        if over_target {
            (sojourn as i64 - self.target as i64) * self.sce_ramp_hi as i64
                + self.sce_ramp_knee as i64
        } else {
            (sojourn as i64 - (self.target / 2) as i64) * self.sce_ramp_lo as i64
        }
    }
}

/// Per-flow state (struct cobalt_vars).
#[derive(Debug, Clone, Default)]
pub struct CobaltVars {
    pub count: u32,
    pub rec_inv_sqrt: u32,
    pub drop_next: Nanos,
    pub blue_timer: Nanos,
    /// BLUE's drop probability in 1/2^32.
    pub p_drop: u32,
    pub dropping: bool,
}

/// What COBALT did to a dequeued packet.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub drop: bool,
    pub ce_marked: bool,
    pub sce_marked: bool,
}

/// One Newton step for 1/sqrt(count) in Q0.32 (cobalt_newton_step).
fn newton_step(count: u32, rec_inv_sqrt: u32) -> u32 {
    let invsqrt = rec_inv_sqrt as u64;
    let invsqrt2 = (invsqrt * invsqrt) >> 32;
    let mut val = (3u64 << 32).wrapping_sub(count as u64 * invsqrt2);
    val >>= 2;
    val = (val.wrapping_mul(invsqrt)) >> (32 - 2 + 1);
    val as u32
}

/// 1/sqrt(count) for count < 16: four Newton steps from the previous
/// entry (cobalt_cache_init); entry 0 (and so 1) is 0xFFFFFFFF.
fn inv_sqrt_cache() -> &'static [u32; 16] {
    static CACHE: std::sync::OnceLock<[u32; 16]> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| {
        let mut cache = [0u32; 16];
        let mut value = u32::MAX;
        cache[0] = value;
        for (count, slot) in cache.iter_mut().enumerate().skip(1) {
            for _ in 0..4 {
                value = newton_step(count as u32, value);
            }
            *slot = value;
        }
        cache
    })
}

/// t + interval/sqrt(count) (cobalt_control, reciprocal_scale).
pub fn control(t: Nanos, interval: Nanos, rec_inv_sqrt: u32) -> Nanos {
    t + ((interval * rec_inv_sqrt as u64) >> 32)
}

/// 1/sqrt(count) in Q0.32 after `count` changed (cobalt_invsqrt): from
/// the cache below 16, else one Newton step from the `previous` value.
pub fn inv_sqrt(count: u32, previous: u32) -> u32 {
    match inv_sqrt_cache().get(count as usize) {
        Some(&cached) => cached,
        None => newton_step(count, previous),
    }
}

impl CobaltVars {
    fn invsqrt(&mut self) {
        self.rec_inv_sqrt = inv_sqrt(self.count, self.rec_inv_sqrt);
    }

    /// A packet had to be dropped for overflow (cobalt_queue_full). True if
    /// BLUE was quiescent before and active after.
    pub fn queue_full(&mut self, p: &CobaltParams, now: Nanos) -> bool {
        let mut up = false;
        if now.saturating_sub(self.blue_timer) > p.target {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// The queue was serviced but found empty (cobalt_queue_empty). True if
    /// BLUE was active before and quiescent after.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: Nanos) -> bool {
        let mut down = false;
        if self.p_drop != 0 && now.saturating_sub(self.blue_timer) > p.target {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now >= self.drop_next {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// COBALT's decision for a freshly dequeued packet (cobalt_should_drop):
    /// CE-marks or asks for a drop when CoDel's schedule is due, adds BLUE's
    /// random drops, and applies the SCE ramp. `bulk_flows` is the tin's
    /// bulk flow count in ingress mode, else 0. `draws` gives uniform u32s.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: Nanos,
        packet: &mut Packet,
        bulk_flows: u32,
        mut draw: impl FnMut() -> u32,
    ) -> Verdict {
        let mut verdict = Verdict::default();
        let sojourn = now.saturating_sub(packet.enqueued);
        let mut schedule = now as i64 - self.drop_next as i64;
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;

        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }

        if next_due && self.dropping {
            // Mark ECN-capable packets, drop the rest.
            verdict.ce_marked = set_ce(packet);
            verdict.drop = !verdict.ce_marked;
            self.count = self.count.checked_add(1).unwrap_or(self.count);
            self.invsqrt();
            self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now as i64 - self.drop_next as i64;
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now as i64 - self.drop_next as i64;
                next_due = self.count != 0 && schedule >= 0;
            }
        }

        // BLUE: random drops, deliberately without ECN.
        if self.p_drop != 0 {
            verdict.drop |= draw() < self.p_drop;
        }

        // The SCE ramp, with its knee at the target.
        let prob = p.sce_probability(sojourn, over_target);
        if (prob > u32::MAX as i64 || (prob > 0 && (draw() as i64) < prob))
            && packet.ecn() == Some(Ecn::Ect0)
        {
            verdict.sce_marked = packet.set_ecn(Ecn::Ect1);
        }

        // drop_next doubles as an activity timeout.
        if self.count == 0 {
            self.drop_next = now + p.interval;
        } else if schedule > 0 && !verdict.drop {
            self.drop_next = now;
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::NS_PER_MS;

    fn params() -> CobaltParams {
        let mut p = CobaltParams {
            interval: 100 * NS_PER_MS,
            target: 5 * NS_PER_MS,
            mtu_time: 0,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
            ..CobaltParams::default()
        };
        p.set_sce_ramp(0);
        p
    }

    #[test]
    fn the_cache_holds_inverse_square_roots() {
        let cache = inv_sqrt_cache();
        assert_eq!(cache[0], u32::MAX);
        for (count, &value) in cache.iter().enumerate().skip(1) {
            let exact = 1.0 / (count as f64).sqrt();
            let got = value as f64 / 4294967296.0;
            assert!(
                (got - exact).abs() < 0.002,
                "count {count}: {got} vs {exact}"
            );
        }
    }

    /// BLUE: +1/256 per overflow and −1/4096 per empty service, each at
    /// most once per target.
    #[test]
    fn blue_steps_up_on_overflow_and_down_on_empty() {
        let p = params();
        let mut v = CobaltVars::default();
        assert!(v.queue_full(&p, 10 * NS_PER_MS));
        assert_eq!(v.p_drop, 1 << 24);
        v.queue_full(&p, 12 * NS_PER_MS); // within one target: no step
        assert_eq!(v.p_drop, 1 << 24);
        v.queue_full(&p, 16 * NS_PER_MS);
        assert_eq!(v.p_drop, 2 << 24);
        v.queue_empty(&p, 22 * NS_PER_MS);
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
        v.queue_empty(&p, 23 * NS_PER_MS);
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
    }

    fn ramp_at(divisor: u32, sojourn_us: u64) -> f64 {
        let mut p = params();
        p.set_sce_ramp(divisor);
        let over = sojourn_us * 1000 > p.target;
        let prob = p.sce_probability(sojourn_us * 1000, over);
        (prob as f64 / 4294967296.0).min(1.0)
    }

    /// REFERENCES.md: the SCE ramps with target 5 ms.
    #[test]
    fn sce_ramps_match_the_reference_points() {
        // The kernel's slopes are whole units of 2^-32 per ns, so 3.75 ms
        // gives 12.486%, not 12.5%: within 0.2%.
        let close = |a: f64, b: f64| (a - b).abs() < 2e-3;
        for (us, want) in [
            (2500, 0.0),
            (3750, 0.125),
            (5000, 0.25),
            (7500, 0.625),
            (10_000, 1.0),
        ] {
            assert!(
                close(ramp_at(4, us), want),
                "sce-thresh 4 at {us} us: {}",
                ramp_at(4, us)
            );
        }
        for (us, want) in [(5000, 0.0), (7500, 0.5), (10_000, 1.0)] {
            assert!(
                close(ramp_at(65_535, us), want),
                "sce-single at {us} us: {}",
                ramp_at(65_535, us)
            );
        }
        assert!(close(ramp_at(1, 3750), 0.5) && close(ramp_at(1, 5000), 1.0));
        assert_eq!(ramp_at(0, 50_000), 0.0);
    }

    #[test]
    fn sce_marks_only_ect0() {
        let mut p = params();
        p.set_sce_ramp(1);
        for (tos, want) in [
            (0b10, Ecn::Ect1),
            (0b00, Ecn::NotEct),
            (0b01, Ecn::Ect1),
            (0b11, Ecn::Ce),
        ] {
            let mut v = CobaltVars::default();
            let mut packet = Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, tos, 100), 0);
            // 4.9 ms: under target, so only the SCE ramp (at 96%) can act.
            let verdict = v.should_drop(&p, 4_900_000, &mut packet, 0, || 0);
            assert_eq!(packet.ecn(), Some(want), "tos {tos:#b}");
            assert_eq!(verdict.sce_marked, tos == 0b10);
            assert!(!verdict.drop && !verdict.ce_marked);
            let checksum = emu_core::packet::ipv4_header_checksum(&packet.data[..20]);
            assert_eq!(
                checksum,
                u16::from_be_bytes([packet.data[10], packet.data[11]])
            );
        }
    }

    /// Once over target CoDel's schedule spaces signals by interval/√count.
    #[test]
    fn codel_signals_follow_the_control_law() {
        let p = params();
        let mut v = CobaltVars::default();
        let mut signals = Vec::new();
        let mut t = 10 * NS_PER_MS;
        while signals.len() < 5 {
            t += 100_000; // a dequeue every 100 µs, each packet 10 ms old
            let mut packet =
                Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0b10, 100), 0);
            packet.enqueued = t - 10 * NS_PER_MS;
            if v.should_drop(&p, t, &mut packet, 0, || u32::MAX).ce_marked {
                signals.push(t);
            }
        }
        // A fresh flow's 1/sqrt is 0, so its first episode signals at once
        // (the second packet); after that interval/sqrt(count) from the cache.
        let gaps: Vec<f64> = signals
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .collect();
        for (gap, count) in gaps.iter().zip(2..) {
            let want = 100.0 / (count as f64).sqrt();
            assert!(
                (gap - want).abs() < 0.3,
                "gap {gap} ms at count {count}, want {want}"
            );
        }
    }
}
