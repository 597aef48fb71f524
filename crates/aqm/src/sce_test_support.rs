//! Virtual-time drivers shared by the tests of the SCE project's queues.

use crate::{build_queue, Outcome, Queue};
use emu_core::log::Mark;
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

/// What a standing queue did: packets sent, and the outcome.
pub struct Run {
    pub sent: Vec<Packet>,
    pub outcome: Outcome,
}

/// One flow (port 1000) keeps `depth` packets queued: an arrival and a
/// departure every `gap`, so each packet waits depth·gap, for `duration`.
pub fn standing(q: &mut dyn Queue, tos: u8, depth: u64, gap: Nanos, duration: Nanos) -> Run {
    let mut run = Run {
        sent: Vec::new(),
        outcome: Outcome::default(),
    };
    for _ in 0..depth {
        assert!(q.enqueue(packet(1000, tos), 0, &mut run.outcome));
    }
    let mut t = gap;
    while t < duration {
        q.enqueue(packet(1000, tos), t, &mut run.outcome);
        if let Some(p) = q.dequeue(t, &mut run.outcome) {
            run.sent.push(p);
        }
        t += gap;
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
