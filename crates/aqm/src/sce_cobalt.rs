//! The COBALT of the SCE project's lightweight queues (twin_codel_af and
//! lfq_cobalt in the SCE reference kernel): cake's COBALT with a second
//! CoDel schedule that sets SCE marks, so both signals follow CoDel's
//! control law.
//!
//! - SCE: once sojourn has exceeded `sce_target` (and two MTU times), ECT(0)
//!   packets are re-marked ECT(1) on a CoDel schedule of `sce_interval`/√n.
//!   Leaving and re-entering the marking state reflects the schedule about
//!   `now` rather than restarting it, so a queue hovering at the threshold
//!   keeps marking at the rate it had reached. `sce_interval` 0 turns SCE off.
//! - CE: cake's CoDel with `ce_target`/`ce_interval` (and four MTU times):
//!   CE on ECN-capable packets, a drop for the rest.
//! - BLUE: sojourn beyond `blue_thresh` raises a random-drop probability
//!   by `p_inc` and forces both schedules due; each empty service lowers it
//!   by `p_dec`, at most once per `ce_target`.
//!
//! Comparisons may be weighted ([`Weight`]): twin_codel_af compares
//! sojourn × (flow's packets) × (active flows) against target × (packets
//! queued), which penalises a flow holding more than its share of the
//! queue. Unweighted ([`Weight::NONE`]) they are the plain CoDel tests.
//!
//! The 1/√count arithmetic is cake's ([`crate::cake::cobalt`]): Q0.32,
//! cached below 16, one Newton step above. Cost: O(1) per packet, except
//! the decrement loops, which run at most `count` steps.

use crate::cake::cobalt::{control, inv_sqrt};
use crate::ecn::set_ce;
use crate::Outcome;
use emu_core::log::{DropReason, Mark};
use emu_core::{Ecn, Nanos, Packet};
use serde::{Deserialize, Serialize};

/// One signalling class's constants (struct cobalt_params).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SceCobaltParams {
    pub ce_interval: Nanos,
    pub ce_target: Nanos,
    /// 0: SCE marking off.
    pub sce_interval: Nanos,
    pub sce_target: Nanos,
    pub blue_thresh: Nanos,
    /// Serialisation time of one MTU; the references leave it 0.
    pub mtu_time: Nanos,
    /// BLUE steps in 1/2^32.
    pub p_inc: u32,
    pub p_dec: u32,
}

impl SceCobaltParams {
    /// The references' defaults scaled down by `divisor` (1 for the normal
    /// class: interval 100 ms, target 5 ms, SCE target 2.5 ms, BLUE at
    /// 400 ms; steps 1/256 up and 1/4096 down), with SCE on a schedule of
    /// `sce_interval` (before the division).
    pub fn defaults(divisor: u64, sce_interval: Nanos) -> SceCobaltParams {
        const MS: Nanos = 1_000_000;
        SceCobaltParams {
            ce_interval: 100 * MS / divisor,
            ce_target: 5 * MS / divisor,
            sce_interval: sce_interval / divisor,
            sce_target: 2_500_000 / divisor,
            blue_thresh: 400 * MS / divisor,
            mtu_time: 0,
            p_inc: 1 << 24,
            p_dec: 1 << 20,
        }
    }

    /// `rtt` as tc sets it: the CE interval (at least 1 ns) and BLUE's
    /// threshold at four of them.
    pub fn set_rtt(&mut self, rtt: Nanos) {
        self.ce_interval = rtt.max(1);
        self.blue_thresh = self.ce_interval * 4;
    }

    /// `target` as tc sets it: the CE target (at least 1 ns), and the SCE
    /// target at half of it, rounded up.
    pub fn set_target(&mut self, target: Nanos) {
        self.ce_target = target.max(1);
        self.sce_target = self.ce_target.div_ceil(2);
    }

    /// `sce-thresh N` as tc sets it: the SCE interval is the CE interval
    /// over N (at least 1 ns); N = 0 turns SCE off.
    pub fn set_sce(&mut self, divisor: u32) {
        self.sce_interval = match divisor {
            0 => 0,
            d => (self.ce_interval / d as u64).max(1),
        };
    }
}

/// How sojourn is weighted against the targets: the test is sojourn ×
/// `flow_backlog` × `active_flows` > target × `total_backlog`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weight {
    pub flow_backlog: u32,
    pub active_flows: u32,
    pub total_backlog: u32,
}

impl Weight {
    /// Plain comparisons: sojourn > target.
    pub const NONE: Weight = Weight {
        flow_backlog: 1,
        active_flows: 1,
        total_backlog: 1,
    };

    fn weigh(self, sojourn: Nanos) -> u128 {
        sojourn as u128 * self.flow_backlog as u128 * self.active_flows as u128
    }

    fn scale(self, threshold: Nanos) -> u128 {
        threshold as u128 * self.total_backlog as u128
    }
}

/// One flow's signalling state (struct cobalt_vars). Times are signed, as
/// the kernel's ktime, since a reflected schedule may fall before 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SceCobaltVars {
    pub ce_count: u32,
    pub ce_isqrt: u32,
    pub ce_next: i64,
    pub ce_dropping: bool,
    pub sce_count: u32,
    pub sce_isqrt: u32,
    pub sce_next: i64,
    pub sce_dropping: bool,
    pub blue_timer: i64,
    /// BLUE's drop probability in 1/2^32.
    pub p_drop: u32,
}

/// What COBALT did to a dequeued packet.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub drop: bool,
    pub ce_marked: bool,
    pub sce_marked: bool,
}

/// t + interval/√count.
fn next_after(t: i64, interval: Nanos, isqrt: u32) -> i64 {
    control(0, interval, isqrt) as i64 + t
}

/// The schedule mirrored about `now` (2·now − t), then one step on.
fn reflect(now: i64, t: i64, interval: Nanos, isqrt: u32) -> i64 {
    next_after(2 * now - t, interval, isqrt)
}

/// ECT(0) becomes ECT(1); nothing else is marked (INET_ECN_set_sce).
fn set_sce(packet: &mut Packet) -> bool {
    packet.ecn() == Some(Ecn::Ect0) && packet.set_ecn(Ecn::Ect1)
}

impl SceCobaltVars {
    /// Both 1/√count values after a count changed (cobalt_invsqrt).
    fn invsqrt(&mut self) {
        self.ce_isqrt = inv_sqrt(self.ce_count, self.ce_isqrt);
        self.sce_isqrt = inv_sqrt(self.sce_count, self.sce_isqrt);
    }

    fn blue_due(&self, p: &SceCobaltParams, now: i64) -> bool {
        now - self.blue_timer > p.ce_target as i64
    }

    /// Overload (cobalt_queue_full): raise BLUE at most once per target and
    /// make both schedules due now. True if BLUE was off before.
    pub fn queue_full(&mut self, p: &SceCobaltParams, now: Nanos) -> bool {
        let now = now as i64;
        let mut up = false;
        if self.blue_due(p, now) {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.saturating_add(p.p_inc);
            self.blue_timer = now;
        }
        self.ce_dropping = true;
        self.ce_next = now;
        self.ce_count = self.ce_count.max(1);
        if p.sce_interval != 0 {
            self.sce_dropping = true;
            self.sce_next = now;
            self.sce_count = self.sce_count.max(1);
        }
        up
    }

    /// The flow was found empty (cobalt_queue_empty): lower BLUE at most
    /// once per target, wind both counts down by the time elapsed, and
    /// leave the marking states. True if BLUE went off.
    pub fn queue_empty(&mut self, p: &SceCobaltParams, now: Nanos) -> bool {
        let now = now as i64;
        let mut down = false;
        if self.p_drop != 0 && self.blue_due(p, now) {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        while self.ce_count != 0 && now >= self.ce_next {
            self.ce_count -= 1;
            self.invsqrt();
            self.ce_next = next_after(self.ce_next, p.ce_interval, self.ce_isqrt);
        }
        if self.ce_dropping {
            self.ce_next = next_after(now, p.ce_interval, self.ce_isqrt);
            self.ce_dropping = false;
        }
        while self.sce_count != 0 && now >= self.sce_next {
            self.sce_count -= 1;
            self.invsqrt();
            self.sce_next = next_after(self.sce_next, p.sce_interval, self.sce_isqrt);
        }
        if self.sce_dropping {
            self.sce_next = reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt);
            self.sce_dropping = false;
        }
        down
    }

    /// The decision for a dequeued packet (cobalt_should_drop): SCE on its
    /// schedule, then CE or a drop on CoDel's, then BLUE's random drop.
    /// `draw` gives uniform u32s for BLUE.
    // Long: the reference's three stages in its order (SCE, CE, BLUE), to be read beside it.
    pub fn should_drop(
        &mut self,
        p: &SceCobaltParams,
        now: Nanos,
        packet: &mut Packet,
        weight: Weight,
        draw: impl FnOnce() -> u32,
    ) -> Verdict {
        let mut verdict = Verdict::default();
        let sojourn = now.saturating_sub(packet.enqueued);
        let weighted = weight.weigh(sojourn);
        let now = now as i64;

        // SCE, if enabled.
        let over_target = p.sce_interval != 0
            && weighted > weight.scale(p.sce_target)
            && sojourn > p.mtu_time * 2;
        let mut next_due = self.sce_count != 0 && now >= self.sce_next;
        if over_target {
            if !self.sce_dropping {
                self.sce_dropping = true;
                self.sce_next = if next_due {
                    next_after(now, p.sce_interval, self.sce_isqrt)
                } else {
                    reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt)
                };
                next_due = false;
            }
            self.sce_count = self.sce_count.max(1);
        } else if self.sce_dropping {
            self.sce_next = if next_due {
                next_after(now, p.sce_interval, self.sce_isqrt)
            } else {
                reflect(now, self.sce_next, p.sce_interval, self.sce_isqrt)
            };
            self.sce_dropping = false;
        }
        if next_due && self.sce_dropping {
            verdict.sce_marked = set_sce(packet);
            if verdict.sce_marked {
                self.sce_count = self.sce_count.saturating_add(1);
                self.invsqrt();
                self.sce_next = next_after(self.sce_next, p.sce_interval, self.sce_isqrt);
            }
        } else {
            while next_due {
                self.sce_count -= 1;
                self.invsqrt();
                self.sce_next = next_after(self.sce_next, p.sce_interval, self.sce_isqrt);
                next_due = self.sce_count != 0 && now >= self.sce_next;
            }
        }

        // CE, or a drop for packets that cannot carry it.
        let mut schedule = now - self.ce_next;
        let over_target = weighted > weight.scale(p.ce_target) && sojourn > p.mtu_time * 4;
        let mut next_due = self.ce_count != 0 && schedule >= 0;
        if over_target {
            if !self.ce_dropping {
                self.ce_dropping = true;
                self.ce_next = next_after(now, p.ce_interval, self.ce_isqrt);
                next_due = false;
            }
            self.ce_count = self.ce_count.max(1);
        } else if self.ce_dropping {
            self.ce_next = next_after(now, p.ce_interval, self.ce_isqrt);
            self.ce_dropping = false;
        }
        if next_due && self.ce_dropping {
            verdict.ce_marked = set_ce(packet);
            verdict.drop = !verdict.ce_marked;
            self.ce_count = self.ce_count.saturating_add(1);
            self.invsqrt();
            self.ce_next = next_after(self.ce_next, p.ce_interval, self.ce_isqrt);
            schedule = now - self.ce_next;
        } else {
            while next_due {
                self.ce_count -= 1;
                self.invsqrt();
                self.ce_next = next_after(self.ce_next, p.ce_interval, self.ce_isqrt);
                schedule = now - self.ce_next;
                next_due = self.ce_count != 0 && schedule >= 0;
            }
        }

        // BLUE: random drops, deliberately without ECN.
        if weighted > weight.scale(p.blue_thresh) {
            self.queue_full(p, now as Nanos);
        }
        if self.p_drop != 0 {
            verdict.drop |= draw() < self.p_drop;
        }

        // ce_next doubles as an activity timeout.
        if self.ce_count == 0 {
            self.ce_next = now + p.ce_interval as i64;
        } else if schedule > 0 && !verdict.drop {
            self.ce_next = now;
        }
        verdict
    }
}

/// The circumstances of one bulk dequeue, for [`judge`].
#[derive(Debug, Clone, Copy)]
pub struct Service {
    pub now: Nanos,
    pub weight: Weight,
    /// The flow still has packets queued (its last one is never dropped).
    pub flow_has_more: bool,
}

/// Applies COBALT to a dequeued bulk packet and reports what it did: the
/// packet back if it goes on, None if it was dropped (into `outcome`,
/// reason Aqm).
pub fn judge(
    vars: &mut SceCobaltVars,
    p: &SceCobaltParams,
    service: Service,
    mut packet: Packet,
    draw: impl FnOnce() -> u32,
    outcome: &mut Outcome,
) -> Option<Packet> {
    let Service {
        now,
        weight,
        flow_has_more,
    } = service;
    let was_ce = packet.ecn() == Some(Ecn::Ce);
    let verdict = vars.should_drop(p, now, &mut packet, weight, draw);
    if verdict.drop && flow_has_more {
        outcome.drop(packet, DropReason::Aqm, now);
        return None;
    }
    if verdict.ce_marked && !was_ce {
        outcome.mark(&packet, Mark::Ce, now);
    }
    if verdict.sce_marked {
        outcome.mark(&packet, Mark::Ect1, now);
    }
    Some(packet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sce_test_support::assert_codel_spacing;
    use emu_core::packet::build::ipv4_udp;
    use emu_core::time::NS_PER_MS;

    fn packet(tos: u8, enqueued: Nanos) -> Packet {
        let mut p = Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, tos, 100), 0);
        p.enqueued = enqueued;
        p
    }

    /// Dequeues a packet every `step` whose sojourn is `sojourn`, from
    /// `start` to `end`; returns the times of SCE and of CE marks.
    fn run(
        p: &SceCobaltParams,
        v: &mut SceCobaltVars,
        (start, end, step): (Nanos, Nanos, Nanos),
        sojourn: Nanos,
    ) -> (Vec<Nanos>, Vec<Nanos>) {
        let (mut sce, mut ce) = (Vec::new(), Vec::new());
        let mut t = start;
        while t < end {
            let mut pk = packet(0b10, t - sojourn);
            let verdict = v.should_drop(p, t, &mut pk, Weight::NONE, || u32::MAX);
            if verdict.sce_marked {
                assert_eq!(pk.ecn(), Some(Ecn::Ect1));
                sce.push(t);
            }
            if verdict.ce_marked {
                assert_eq!(pk.ecn(), Some(Ecn::Ce));
                ce.push(t);
            }
            assert!(!verdict.drop, "ECN-capable packets are marked, not dropped");
            t += step;
        }
        (sce, ce)
    }

    /// Between the SCE target (2.5 ms) and the CE target (5 ms) only SCE
    /// marks come, and on CoDel's schedule: gaps of 25 ms/√n once the
    /// cache's 1/√n takes over from the fresh state's 0.
    #[test]
    fn sce_marks_follow_their_own_codel_schedule() {
        let p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        let mut v = SceCobaltVars::default();
        let (sce, ce) = run(
            &p,
            &mut v,
            (20 * NS_PER_MS, 400 * NS_PER_MS, 100_000),
            4 * NS_PER_MS,
        );
        assert!(ce.is_empty(), "4 ms is under the CE target");
        assert!(sce.len() > 10, "SCE marks: {}", sce.len());
        // The first mark raises the count to 2; every later gap is
        // 25 ms/√count for the count before that mark.
        assert_codel_spacing(&sce, 25.0, sce.len() - 1);
    }

    /// Above the CE target both schedules run: CE spaced by 100 ms/√n.
    #[test]
    fn ce_marks_follow_the_control_law_beside_sce() {
        let p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        let mut v = SceCobaltVars::default();
        let (sce, ce) = run(
            &p,
            &mut v,
            (20 * NS_PER_MS, 600 * NS_PER_MS, 100_000),
            10 * NS_PER_MS,
        );
        assert!(
            sce.len() > ce.len() && ce.len() >= 4,
            "sce {} ce {}",
            sce.len(),
            ce.len()
        );
        assert_codel_spacing(&ce, 100.0, ce.len() - 1);
    }

    #[test]
    fn sce_off_marks_nothing_but_ce() {
        let p = SceCobaltParams::defaults(1, 0);
        let mut v = SceCobaltVars::default();
        let (sce, ce) = run(
            &p,
            &mut v,
            (20 * NS_PER_MS, 300 * NS_PER_MS, 100_000),
            10 * NS_PER_MS,
        );
        assert!(sce.is_empty());
        assert!(!ce.is_empty());
    }

    /// Only ECT(0) takes an SCE mark; ECT(1) and CE keep or take CE; Not-ECT
    /// is dropped on the CE schedule.
    #[test]
    fn sce_marks_only_ect0_and_not_ect_is_dropped() {
        let p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        for (tos, before) in [(0b01, Ecn::Ect1), (0b11, Ecn::Ce), (0b00, Ecn::NotEct)] {
            let mut v = SceCobaltVars::default();
            let mut dropped = 0;
            for i in 0..2000u64 {
                let t = 20 * NS_PER_MS + i * 100_000;
                let mut pk = packet(tos, t - 10 * NS_PER_MS);
                let verdict = v.should_drop(&p, t, &mut pk, Weight::NONE, || u32::MAX);
                assert!(!verdict.sce_marked, "tos {tos:#b}");
                let after = if verdict.ce_marked { Ecn::Ce } else { before };
                assert_eq!(pk.ecn(), Some(after), "tos {tos:#b}");
                dropped += verdict.drop as usize;
            }
            assert_eq!(dropped > 0, tos == 0, "tos {tos:#b}: {dropped} drops");
        }
    }

    /// A flow with twice its share of the queue is over target at half
    /// the sojourn.
    #[test]
    fn weighting_penalises_more_than_a_fair_share() {
        let p = SceCobaltParams::defaults(1, 0);
        let fair = Weight {
            flow_backlog: 5,
            active_flows: 2,
            total_backlog: 10,
        };
        let fat = Weight {
            flow_backlog: 10,
            active_flows: 2,
            total_backlog: 10,
        };
        for (weight, sojourn, over) in [
            (fair, 4 * NS_PER_MS, false),
            (fair, 6 * NS_PER_MS, true),
            (fat, 3 * NS_PER_MS, true),
        ] {
            let mut v = SceCobaltVars::default();
            let mut pk = packet(0b10, 0);
            v.should_drop(&p, sojourn, &mut pk, weight, || u32::MAX);
            assert_eq!(v.ce_dropping, over, "{weight:?} at {sojourn}");
        }
    }

    /// BLUE: beyond blue_thresh the probability rises 1/256 per target and
    /// drops even ECN-capable packets; empty services lower it by 1/4096.
    #[test]
    fn blue_steps_at_most_once_per_target() {
        let p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        let mut v = SceCobaltVars::default();
        let mut t = 500 * NS_PER_MS;
        let mut pk = packet(0b10, 0);
        let verdict = v.should_drop(&p, t, &mut pk, Weight::NONE, || 0);
        assert_eq!(v.p_drop, 1 << 24);
        assert!(verdict.drop, "a draw under p_drop drops");
        t += NS_PER_MS;
        v.should_drop(&p, t, &mut packet(0b10, 0), Weight::NONE, || u32::MAX);
        assert_eq!(v.p_drop, 1 << 24, "no second step within 5 ms");
        t += 5 * NS_PER_MS;
        v.should_drop(&p, t, &mut packet(0b10, 0), Weight::NONE, || u32::MAX);
        assert_eq!(v.p_drop, 2 << 24);
        t += 6 * NS_PER_MS;
        v.queue_empty(&p, t);
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
        v.queue_empty(&p, t + NS_PER_MS);
        assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
    }

    /// An empty service winds the counts down by the time since the last
    /// signal and leaves both marking states.
    #[test]
    fn queue_empty_decays_counts_and_leaves_the_marking_states() {
        let p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        let mut v = SceCobaltVars::default();
        run(
            &p,
            &mut v,
            (20 * NS_PER_MS, 600 * NS_PER_MS, 100_000),
            10 * NS_PER_MS,
        );
        let (ce, sce) = (v.ce_count, v.sce_count);
        assert!(ce > 2 && sce > 2 && v.ce_dropping && v.sce_dropping);
        v.queue_empty(&p, 700 * NS_PER_MS);
        assert!(!v.ce_dropping && !v.sce_dropping);
        assert!(
            v.ce_count < ce && v.sce_count < sce,
            "{} {}",
            v.ce_count,
            v.sce_count
        );
        v.queue_empty(&p, 60_000 * NS_PER_MS);
        assert_eq!(
            (v.ce_count, v.sce_count),
            (0, 0),
            "a minute idle forgets all"
        );
    }

    #[test]
    fn tc_options_derive_as_the_reference() {
        let mut p = SceCobaltParams::defaults(1, 25 * NS_PER_MS);
        p.set_rtt(40 * NS_PER_MS);
        p.set_target(3 * NS_PER_MS);
        p.set_sce(8);
        assert_eq!(p.blue_thresh, 160 * NS_PER_MS);
        assert_eq!(p.sce_target, 1_500_000);
        assert_eq!(p.sce_interval, 5 * NS_PER_MS);
        p.set_sce(0);
        assert_eq!(p.sce_interval, 0);
        let ll = SceCobaltParams::defaults(5, 25 * NS_PER_MS);
        assert_eq!(
            (ll.ce_interval, ll.ce_target, ll.sce_interval),
            (20 * NS_PER_MS, NS_PER_MS, 5 * NS_PER_MS)
        );
        assert_eq!((ll.sce_target, ll.blue_thresh), (500_000, 80 * NS_PER_MS));
    }
}
