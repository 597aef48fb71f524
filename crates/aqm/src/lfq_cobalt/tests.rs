//! lfq_cobalt in virtual time against the reference's queues, scan,
//! constants and state machine.

use super::*;
use crate::sce_test_support::{assert_codel_spacing, marks, packet, queue, standing};
use crate::QueueSpec;
use emu_core::log::Mark;
use emu_core::time::NS_PER_MS;

/// A packet of flow `port` tagged with `id` in its last byte.
fn tagged(port: u16, id: u8) -> Packet {
    let mut p = packet(port, 0);
    p.data[999] = id;
    p
}

/// A new flow's first packet is sparse and overtakes the bulk queue.
#[test]
fn sparse_packets_have_strict_priority() {
    let mut q = queue("lfq_cobalt");
    let mut outcome = Outcome::default();
    for (id, port) in [(0, 1), (1, 1), (2, 1), (3, 2)] {
        q.enqueue(tagged(port, id), 0, &mut outcome);
    }
    let order: Vec<u8> = std::iter::from_fn(|| q.dequeue(0, &mut outcome))
        .map(|p| p.data[999])
        .collect();
    assert_eq!(order, [0, 3, 1, 2]);
}

/// The scan skips a flow that went into debt until it wraps, so two bulk
/// flows share the link although one queued all its packets first.
#[test]
fn the_scan_shares_the_bulk_queue_between_flows() {
    let mut q = queue("lfq_cobalt");
    let mut outcome = Outcome::default();
    for i in 0..20 {
        q.enqueue(tagged(1, i), 0, &mut outcome);
    }
    for i in 0..20 {
        q.enqueue(tagged(2, 100 + i), 0, &mut outcome);
    }
    let sent: Vec<Packet> = (0..22).filter_map(|_| q.dequeue(0, &mut outcome)).collect();
    // The two sparse packets, then 20 from the bulk queue.
    assert_eq!((sent[0].data[999], sent[1].data[999]), (0, 100));
    let second = sent[2..].iter().filter(|p| p.data[999] >= 100).count();
    assert!((9..=11).contains(&second), "second flow got {second} of 20");
    // Within a flow, order is kept.
    let firsts: Vec<u8> = sent[2..]
        .iter()
        .map(|p| p.data[999])
        .filter(|&i| i < 100)
        .collect();
    assert!(firsts.windows(2).all(|w| w[0] < w[1]), "{firsts:?}");
}

/// The reference turns SCE off by default: at 4 ms only silence; with
/// `sce-thresh 8` SCE marks come on a 12.5 ms CoDel schedule.
#[test]
fn sce_is_off_by_default_and_sce_thresh_schedules_it() {
    let run = standing("lfq_cobalt", 0b10, 20, 500);
    assert!(run.outcome.marks.is_empty());
    let run = standing("lfq_cobalt sce-thresh 8", 0b10, 20, 1000);
    assert!(marks(&run.outcome, Mark::Ce).is_empty());
    let sce = marks(&run.outcome, Mark::Ect1);
    assert!(sce.len() > 40, "{} SCE marks", sce.len());
    assert_codel_spacing(&sce, 12.5, 4);
}

/// Over 5 ms: CE for ECT packets on CoDel's schedule, drops (reason Aqm)
/// for Not-ECT, every packet accounted for.
#[test]
fn ce_and_drops_over_the_target() {
    let run = standing("lfq_cobalt", 0b10, 50, 1000);
    let ce = marks(&run.outcome, Mark::Ce);
    assert!(
        ce.len() >= 5 && run.outcome.drops.is_empty(),
        "{} CE marks",
        ce.len()
    );
    assert_codel_spacing(&ce, 100.0, 3);
    let run = standing("lfq_cobalt", 0, 50, 1000);
    assert!(run.outcome.marks.is_empty() && run.outcome.drops.len() >= 5);
    run.assert_aqm_drops_accounted(50, 1000);
}

/// DSCP 4 uses the low-latency constants (1 ms target, no SCE even when
/// the normal class has it): at 2 ms it is CE-marked, a normal flow not.
#[test]
fn dscp_4_uses_the_low_latency_constants() {
    let run = standing("lfq_cobalt sce-thresh 8", 0x10 | 0b10, 10, 500);
    assert!(!marks(&run.outcome, Mark::Ce).is_empty());
    assert!(marks(&run.outcome, Mark::Ect1).is_empty());
    let run = standing("lfq_cobalt", 0b10, 10, 500);
    assert!(run.outcome.marks.is_empty());
}

/// A flow's last queued packet is never dropped, even deep in BLUE.
#[test]
fn the_last_packet_of_a_flow_is_not_dropped() {
    let mut q = queue("lfq_cobalt");
    let mut outcome = Outcome::default();
    for i in 0..100u8 {
        q.enqueue(tagged(1, i), 0, &mut outcome);
    }
    let t = 1000 * NS_PER_MS;
    let sent: Vec<Packet> = std::iter::from_fn(|| q.dequeue(t, &mut outcome)).collect();
    assert_eq!(sent.len() + outcome.drops.len(), 100);
    assert!(outcome.drops.len() >= 90, "{} drops", outcome.drops.len());
    assert_eq!(sent.last().map(|p| p.data[999]), Some(99));
}

#[test]
fn memlimit_drops_the_oldest_bulk_packet() {
    let mut q = queue("lfq_cobalt memlimit 3000");
    let mut outcome = Outcome::default();
    for i in 0..4 {
        assert!(q.enqueue(tagged(1, i), 0, &mut outcome));
    }
    assert_eq!(outcome.drops.len(), 1);
    assert_eq!(outcome.drops[0].reason, DropReason::Head);
    assert_eq!(
        outcome.drops[0].packet.data[999], 1,
        "the oldest bulk packet"
    );
    assert_eq!((q.packets(), q.bytes()), (3, 3000));
    let order: Vec<u8> = std::iter::from_fn(|| q.dequeue(0, &mut outcome))
        .map(|p| p.data[999])
        .collect();
    assert_eq!(order, [0, 2, 3]);
}

#[test]
fn the_shaper_paces_and_the_limit_holds() {
    let mut q = queue("lfq_cobalt bandwidth 8mbit limit 2");
    let mut outcome = Outcome::default();
    for i in 0..3 {
        q.enqueue(tagged(1, i), 0, &mut outcome);
    }
    assert_eq!(outcome.drops.len(), 1);
    assert_eq!(outcome.drops[0].reason, DropReason::Tail);
    assert!(q.dequeue(0, &mut outcome).is_some());
    assert_eq!(q.next_ready(), Some(NS_PER_MS));
    assert!(q.dequeue(NS_PER_MS - 1, &mut outcome).is_none());
    assert!(q.dequeue(NS_PER_MS, &mut outcome).is_some());
}

/// Options change only the normal constants (lfq_change), SCE as
/// interval/N; the low-latency ones stay the defaults over 5.
#[test]
fn options_derive_the_constants() {
    let params = |s: &str| match QueueSpec::parse(s).unwrap() {
        QueueSpec::LfqCobalt(p) => LfqCobalt::class_params(&p),
        other => panic!("{other:?}"),
    };
    let (normal, ll) = params("lfq_cobalt bandwidth 50Mbit sce-thresh 8");
    assert_eq!(normal.sce_interval, 12_500_000);
    assert_eq!(
        (ll.ce_interval, ll.ce_target, ll.sce_interval),
        (20 * NS_PER_MS, NS_PER_MS, 0)
    );
    let (normal, _) = params("lfq_cobalt rtt 40ms");
    assert_eq!(
        (normal.ce_interval, normal.ce_target, normal.sce_interval),
        (40 * NS_PER_MS, 2 * NS_PER_MS, 0)
    );
    assert_eq!(
        queue("lfq_cobalt bandwidth 50Mbit sce-thresh 8").describe(),
        "lfq_cobalt bandwidth 50mbit rtt 100ms target 5ms raw overhead 0 mpu 0 sce-thresh 8 limit 10240"
    );
    assert!(
        QueueSpec::parse("twin_codel_af memlimit 1mb").is_err(),
        "lfq_cobalt's alone"
    );
}
