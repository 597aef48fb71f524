//! Virtual-time drivers shared by the tests of the SCE project's queues.

use crate::{build_queue, Outcome, Queue};
use emu_core::log::{DropReason, Mark};
use emu_core::packet::build::ipv4_udp;
use emu_core::{Nanos, Packet};

/// A 1000-byte UDP packet of the flow from `port`.
pub fn packet(port: u16, tos: u8) -> Packet {
    Packet::new(
        ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], port, 80, tos, 1000),
        0,
    )
}

pub fn queue(spec: &str) -> Box<dyn Queue> {
    build_queue(spec).unwrap()
}

/// What a standing queue did: the queue, the packets sent, the outcome.
pub struct Run {
    pub queue: Box<dyn Queue>,
    pub sent: Vec<Packet>,
    pub outcome: Outcome,
}

impl Run {
    /// Every drop was the AQM's, and every packet offered (`depth` +
    /// one per 0.2 ms after the first) was sent, dropped or is queued.
    pub fn assert_aqm_drops_accounted(&self, depth: u64, duration_ms: u64) {
        assert!(self
            .outcome
            .drops
            .iter()
            .all(|d| d.reason == DropReason::Aqm));
        let offered = depth as usize + (duration_ms * 5 - 1) as usize;
        let held = self.queue.packets();
        assert_eq!(self.sent.len() + self.outcome.drops.len() + held, offered);
    }
}

/// One flow (port 1000) keeps `depth` packets queued in a queue built from
/// `spec`: an arrival and a departure every 0.2 ms, so each packet waits
/// depth × 0.2 ms, for `duration_ms`.
pub fn standing(spec: &str, tos: u8, depth: u64, duration_ms: u64) -> Run {
    const GAP: Nanos = 200_000;
    let mut run = Run {
        queue: queue(spec),
        sent: Vec::new(),
        outcome: Outcome::default(),
    };
    for _ in 0..depth {
        assert!(run.queue.enqueue(packet(1000, tos), 0, &mut run.outcome));
    }
    let mut t = GAP;
    while t < duration_ms * 1_000_000 {
        run.queue.enqueue(packet(1000, tos), t, &mut run.outcome);
        if let Some(p) = run.queue.dequeue(t, &mut run.outcome) {
            run.sent.push(p);
        }
        t += GAP;
    }
    run
}

pub fn marks(outcome: &Outcome, mark: Mark) -> Vec<Nanos> {
    outcome
        .marks
        .iter()
        .filter(|m| m.mark == mark)
        .map(|m| m.at)
        .collect()
}

/// Asserts that the first `gaps` gaps between signal times follow CoDel's
/// control law: interval/√n for n = 2, 3, ... (the first signal of a
/// fresh state raises the count to 2), within a 0.25 ms dequeue grain.
pub fn assert_codel_spacing(times: &[Nanos], interval_ms: f64, gaps: usize) {
    assert!(times.len() > gaps, "only {} signals", times.len());
    for (w, count) in times.windows(2).take(gaps).zip(2..) {
        let gap = (w[1] - w[0]) as f64 / 1e6;
        let want = interval_ms / (count as f64).sqrt();
        assert!(
            (gap - want).abs() <= 0.25,
            "gap {gap} ms at count {count}, want {want}"
        );
    }
}
