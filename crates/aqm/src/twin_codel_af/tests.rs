//! twin_codel_af in virtual time against the reference's classification,
//! constants and state machine.

use super::*;
use crate::sce_test_support::{assert_codel_spacing, marks, packet, queue, standing};
use crate::QueueSpec;
use emu_core::log::Mark;
use emu_core::time::{NS_PER_MS, NS_PER_US};
use emu_core::Ecn;

/// A flow's first packet is sparse and leaves before the bulk; a new
/// flow's first packet overtakes an older flow's backlog.
#[test]
fn sparse_packets_have_strict_priority() {
    let mut q = queue("twin_codel_af");
    let mut outcome = Outcome::default();
    for (i, port) in [1, 1, 1, 2].into_iter().enumerate() {
        let mut p = packet(port, 0);
        p.data[999] = i as u8; // the last payload byte tells them apart
        q.enqueue(p, 0, &mut outcome);
    }
    let order: Vec<u8> = std::iter::from_fn(|| q.dequeue(0, &mut outcome))
        .map(|p| p.data[999])
        .collect();
    assert_eq!(order, [0, 3, 1, 2], "A1 and B1 sparse, then A's bulk");
    assert!(outcome.is_empty());
}

/// The class served gains the other's flow count as credit and the one
/// with less is served: two flows of the normal class against one of the
/// low-latency class share 2:1, one flow each.
#[test]
fn classes_share_flow_fairly() {
    let mut q = queue("twin_codel_af");
    let mut outcome = Outcome::default();
    for _ in 0..200 {
        for (port, tos) in [(1, 0), (2, 0), (3, 0x10)] {
            q.enqueue(packet(port, tos), 0, &mut outcome);
        }
    }
    let mut low_latency = 0;
    for _ in 0..300 {
        let p = q.dequeue(0, &mut outcome).unwrap();
        low_latency += (p.dscp() == Some(LL_DSCP)) as usize;
    }
    assert!(
        (95..=105).contains(&low_latency),
        "low-latency share {low_latency}/300"
    );
    assert!(outcome.is_empty(), "no sojourn, no signals");
}

/// Normal class, one flow at 4 ms of sojourn: over the SCE target
/// (2.5 ms), under the CE target (5 ms). SCE marks come on the default
/// 25 ms CoDel schedule; no CE.
#[test]
fn sce_is_on_by_default_on_a_codel_schedule() {
    let run = standing("twin_codel_af", 0b10, 20, 1000);
    assert!(marks(&run.outcome, Mark::Ce).is_empty());
    let sce = marks(&run.outcome, Mark::Ect1);
    // 25 ms/√n spacing: 1 s holds about 2·√(n)·25 ms ⇒ n ≈ 400 at most;
    // far more than one per 25 ms, far fewer than every packet.
    assert!(
        sce.len() > 40 && sce.len() < 1000,
        "{} SCE marks",
        sce.len()
    );
    let ect1 = run
        .sent
        .iter()
        .filter(|p| p.ecn() == Some(Ecn::Ect1))
        .count();
    assert_eq!(ect1, sce.len(), "each mark is on a packet sent");
    assert_codel_spacing(&sce, 25.0, 4);
}

/// `no-sce` turns SCE off; sojourn over 5 ms brings CE on CoDel's 100 ms
/// schedule; ECN-capable packets are never dropped for it.
#[test]
fn ce_follows_codel_over_the_target() {
    let run = standing("twin_codel_af no-sce", 0b10, 50, 1000);
    assert!(marks(&run.outcome, Mark::Ect1).is_empty());
    let ce = marks(&run.outcome, Mark::Ce);
    assert!(ce.len() >= 5, "{} CE marks", ce.len());
    assert_codel_spacing(&ce, 100.0, 3);
    assert!(run.outcome.drops.is_empty());
}

/// Not-ECT packets take drops instead, each in the outcome with its reason,
/// and every packet is accounted for.
#[test]
fn not_ect_is_dropped_and_accounted() {
    let run = standing("twin_codel_af", 0, 50, 1000);
    assert!(run.outcome.marks.is_empty());
    assert!(run.outcome.drops.len() >= 5);
    run.assert_aqm_drops_accounted(50, 1000);
}

/// The low-latency class's constants are a fifth: at 2 ms of sojourn a
/// DSCP-4 flow is over its 1 ms CE target, a normal flow is under even
/// its 2.5 ms SCE target.
#[test]
fn the_low_latency_class_has_a_fifth_of_the_targets() {
    let run = standing("twin_codel_af", 0x10 | 0b10, 10, 500);
    assert!(!marks(&run.outcome, Mark::Ce).is_empty());
    let run = standing("twin_codel_af", 0b10, 10, 500);
    assert!(run.outcome.marks.is_empty());
}

/// A flow's last queued packet is never dropped: 100 Not-ECT packets
/// served after 1 s, far past BLUE's 400 ms, lose all but the last.
#[test]
fn the_last_packet_of_a_flow_is_not_dropped() {
    let mut q = queue("twin_codel_af");
    let mut outcome = Outcome::default();
    for i in 0..100u8 {
        let mut p = packet(1, 0);
        p.data[999] = i;
        q.enqueue(p, 0, &mut outcome);
    }
    let t = 1000 * NS_PER_MS;
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(t, &mut outcome)).collect();
    assert!(outcome.drops.iter().all(|d| d.reason == DropReason::Aqm));
    assert_eq!(sent.len() + outcome.drops.len(), 100);
    assert!(outcome.drops.len() >= 90, "{} drops", outcome.drops.len());
    assert_eq!(
        sent.last().map(|p| p.data[999]),
        Some(99),
        "the last one goes out"
    );
}

#[test]
fn the_shaper_paces_at_the_bandwidth() {
    // 8 Mbit/s: 1000 bytes per ms.
    let mut q = queue("twin_codel_af bandwidth 8mbit");
    let mut outcome = Outcome::default();
    for _ in 0..3 {
        q.enqueue(packet(1, 0), 0, &mut outcome);
    }
    assert!(q.dequeue(0, &mut outcome).is_some());
    assert_eq!(q.next_ready(), Some(NS_PER_MS));
    assert!(q.dequeue(NS_PER_MS - 1, &mut outcome).is_none());
    assert!(q.dequeue(NS_PER_MS, &mut outcome).is_some());
}

#[test]
fn arrivals_beyond_the_limit_are_dropped() {
    let mut q = queue("twin_codel_af limit 2");
    let mut outcome = Outcome::default();
    assert!(q.enqueue(packet(1, 0), 0, &mut outcome));
    assert!(q.enqueue(packet(1, 0), 0, &mut outcome));
    assert!(!q.enqueue(packet(1, 0), 0, &mut outcome));
    assert_eq!(outcome.drops[0].reason, DropReason::Tail);
}

/// tc's options land as cnq_change puts them: rtt and target scaled by 5
/// for the low-latency class, `sce-thresh N` as interval/N in both.
#[test]
fn options_derive_both_classes() {
    let spec = |s: &str| match QueueSpec::parse(s).unwrap() {
        QueueSpec::TwinCodelAf(p) => TwinCodelAf::class_params(&p),
        other => panic!("{other:?}"),
    };
    let [normal, ll] = spec("twin_codel_af");
    assert_eq!(
        (normal.sce_interval, ll.sce_interval),
        (25 * NS_PER_MS, 5 * NS_PER_MS)
    );
    let [normal, ll] = spec("twin_codel_af rtt 50ms target 2ms sce-thresh 10");
    assert_eq!(
        (normal.ce_interval, ll.ce_interval),
        (50 * NS_PER_MS, 10 * NS_PER_MS)
    );
    assert_eq!(
        (normal.ce_target, ll.ce_target),
        (2 * NS_PER_MS, 400 * NS_PER_US)
    );
    assert_eq!(
        (normal.sce_target, ll.sce_target),
        (NS_PER_MS, 200 * NS_PER_US)
    );
    assert_eq!(
        (normal.sce_interval, ll.sce_interval),
        (5 * NS_PER_MS, NS_PER_MS)
    );
    assert_eq!(
        (normal.blue_thresh, ll.blue_thresh),
        (200 * NS_PER_MS, 40 * NS_PER_MS)
    );
    assert_eq!(
        queue("twin_codel_af bandwidth 50Mbit sce-thresh 4").describe(),
        "twin_codel_af bandwidth 50mbit rtt 100ms target 5ms raw overhead 0 mpu 0 sce-thresh 4 limit 10240"
    );
}
