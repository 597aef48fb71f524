//! The path model in virtual time: delay, serialization, Mahimahi trace
//! semantics, queue limits, seeded loss, and the accounting invariant.

mod support;

use aqm::build_queue;
use emu_core::log::{Direction, DropCounts, DropReason, Event, LogSink};
use emu_core::time::{NS_PER_MS, NS_PER_US};
use emu_core::trace::Trace;
use emu_core::{Nanos, Packet, Rate};
use link::{Link, LinkConfig, Loss, Server};
use proptest::prelude::*;
use std::sync::Arc;
use support::{id, packet, TestLink};

fn link(server: Server, delay: Nanos, queue: &str) -> Link {
    link_with(server, delay, queue, None, 1500)
}

fn link_with(
    server: Server,
    delay: Nanos,
    queue: &str,
    loss: Option<Loss>,
    max_packet: usize,
) -> Link {
    TestLink {
        server,
        delay,
        queue,
        loss,
        max_packet,
        dynamics: Default::default(),
        log: LogSink::disabled(),
    }
    .build()
}

/// Runs the model like a pump that wakes exactly on time: returns
/// (departure time, id) of every packet that leaves before `until`.
fn run(link: &mut Link, arrivals: Vec<Packet>, until: Nanos) -> Vec<(Nanos, u16)> {
    let mut out = Vec::new();
    let mut arrivals = arrivals.into_iter().peekable();
    loop {
        let next_arrival = arrivals.peek().map(|p| p.arrival);
        let next_event = link.next_event();
        let now = match (next_arrival, next_event) {
            (Some(a), Some(e)) => a.min(e),
            (a, e) => match a.or(e) {
                Some(t) => t,
                None => break,
            },
        };
        if now > until {
            break;
        }
        link.advance(now);
        while let Some((p, _)) = link.pop_due(now) {
            out.push((now, id(&p)));
        }
        while arrivals.peek().is_some_and(|p| p.arrival == now) {
            link.arrive(arrivals.next().unwrap());
        }
        while let Some((p, _)) = link.pop_due(now) {
            out.push((now, id(&p)));
        }
    }
    out
}

fn trace(text: &str, repeat: bool) -> Server {
    Server::Trace {
        trace: Arc::new(Trace::parse(text).unwrap()),
        repeat,
    }
}

#[test]
fn delay_is_exact_to_the_nanosecond() {
    let mut l = link(Server::Unlimited, 40 * NS_PER_MS, "infinite");
    let arrivals = vec![
        packet(100, 7, 1),
        packet(1500, 1_234_567, 2),
        packet(60, 1_234_568, 3),
    ];
    let out = run(&mut l, arrivals, u64::MAX);
    assert_eq!(
        out,
        vec![
            (40 * NS_PER_MS + 7, 1),
            (40 * NS_PER_MS + 1_234_567, 2),
            (40 * NS_PER_MS + 1_234_568, 3)
        ]
    );
}

#[test]
fn a_full_packet_at_10mbit_leaves_1_2_ms_after_the_previous() {
    let mut l = link(Server::Rate(Rate::parse("10mbit").unwrap()), 0, "infinite");
    let arrivals = (0..4).map(|i| packet(1500, 0, i)).collect();
    let out = run(&mut l, arrivals, u64::MAX);
    let times: Vec<Nanos> = out.iter().map(|o| o.0).collect();
    assert_eq!(times, vec![1_200_000, 2_400_000, 3_600_000, 4_800_000]);
}

#[test]
fn an_idle_link_starts_at_the_arrival_then_adds_delay() {
    let mut l = link(
        Server::Rate(Rate::parse("10mbit").unwrap()),
        5 * NS_PER_MS,
        "infinite",
    );
    let arrivals = vec![packet(1500, 0, 1), packet(1500, 10 * NS_PER_MS, 2)];
    let out = run(&mut l, arrivals, u64::MAX);
    assert_eq!(out, vec![(6_200_000, 1), (16_200_000, 2)]);
}

#[test]
fn trace_opportunities_with_repeated_timestamps_and_looping() {
    // Opportunities at 1, 1, 3 ms; period 3 ms, so then 4, 4, 6 ms.
    let mut l = link(trace("1\n1\n3\n", true), 0, "infinite");
    let arrivals = (0..5).map(|i| packet(1500, 0, i)).collect();
    let out = run(&mut l, arrivals, u64::MAX);
    let times: Vec<Nanos> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    assert_eq!(times, vec![1, 1, 3, 4, 4]);
}

#[test]
fn an_opportunity_at_the_arrival_instant_is_already_gone() {
    let mut l = link(trace("1\n2\n", true), 0, "infinite");
    let out = run(&mut l, vec![packet(1500, NS_PER_MS, 1)], u64::MAX);
    assert_eq!(out, vec![(2 * NS_PER_MS, 1)]);
}

#[test]
fn one_opportunity_carries_several_small_packets() {
    let mut l = link(trace("1\n2\n", true), 0, "infinite");
    let arrivals = (0..4).map(|i| packet(500, 0, i)).collect();
    let out = run(&mut l, arrivals, u64::MAX);
    // 3 × 500 bytes fill the first 1500-byte opportunity; the 4th waits.
    let times: Vec<Nanos> = out.iter().map(|o| o.0 / NS_PER_MS).collect();
    assert_eq!(times, vec![1, 1, 1, 2]);
}

#[test]
fn a_packet_larger_than_an_opportunity_spans_several_and_leftovers_carry() {
    // 2000 bytes need opportunities 1 and 2; 1000 bytes are left in the
    // second, enough for the following 1000-byte packet.
    let mut l = link_with(trace("1\n2\n3\n", true), 0, "infinite", None, 9000);
    let arrivals = vec![packet(2000, 0, 1), packet(1000, 0, 2), packet(1000, 0, 3)];
    let out = run(&mut l, arrivals, u64::MAX);
    assert_eq!(
        out,
        vec![(2 * NS_PER_MS, 1), (2 * NS_PER_MS, 2), (3 * NS_PER_MS, 3)]
    );
}

#[test]
fn unused_bytes_of_an_opportunity_are_lost() {
    let mut l = link(trace("1\n2\n", true), 0, "infinite");
    // 100 bytes use opportunity 1 ms; a packet arriving at 1.5 ms cannot use
    // the 1400 bytes left there.
    let arrivals = vec![packet(100, 0, 1), packet(100, 1_500_000, 2)];
    let out = run(&mut l, arrivals, u64::MAX);
    assert_eq!(out, vec![(NS_PER_MS, 1), (2 * NS_PER_MS, 2)]);
}

#[test]
fn idle_periods_skip_whole_trace_cycles() {
    let mut l = link(trace("5\n", true), 0, "infinite");
    // After 1 s idle the next opportunity is at 1005 ms.
    let out = run(&mut l, vec![packet(1500, 1000 * NS_PER_MS, 1)], u64::MAX);
    assert_eq!(out, vec![(1005 * NS_PER_MS, 1)]);
    let mut l = link(trace("5\n", true), 0, "infinite");
    let out = run(&mut l, vec![packet(1500, 1001 * NS_PER_MS, 1)], u64::MAX);
    assert_eq!(out, vec![(1005 * NS_PER_MS, 1)]);
}

#[test]
fn once_stops_at_the_end_of_the_trace() {
    let mut l = link(trace("1\n2\n", false), 0, "infinite");
    let arrivals = (0..3).map(|i| packet(1500, 0, i)).collect();
    let out = run(&mut l, arrivals, u64::MAX);
    assert_eq!(out, vec![(NS_PER_MS, 0)]);
    assert!(l.trace_ended());
    assert_eq!(l.packets_inside(), 2);
}

#[test]
fn the_end_of_a_trace_run_once_is_an_event_even_when_idle() {
    let mut l = link(trace("1\n7\n", false), 0, "infinite");
    assert_eq!(l.next_event(), Some(7 * NS_PER_MS));
    l.advance(7 * NS_PER_MS - 1);
    assert!(!l.trace_ended());
    l.advance(7 * NS_PER_MS);
    assert!(l.trace_ended());
    assert_eq!(l.next_event(), None);
    let repeating = link(trace("1\n7\n", true), 0, "infinite");
    assert_eq!(repeating.next_event(), None);
}

#[test]
fn the_trace_rate_matches_its_mean() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces/cellular/TMobile-LTE-short.down");
    let t = Arc::new(Trace::load(&path).unwrap());
    let mut l = link(
        Server::Trace {
            trace: t.clone(),
            repeat: true,
        },
        0,
        "infinite",
    );
    let period = t.period();
    // Saturate for two periods with full packets; the bytes delivered
    // must equal the trace's opportunities exactly.
    let count = 2 * t.len() + 1000;
    let arrivals = (0..count).map(|i| packet(1500, 0, i as u16)).collect();
    let out = run(&mut l, arrivals, 2 * period);
    assert_eq!(out.len(), 2 * t.len());
}

#[test]
fn droptail_limit_holds_in_the_link() {
    let mut l = link(
        Server::Rate(Rate::parse("1mbit").unwrap()),
        0,
        "droptail packets 3",
    );
    for i in 0..10 {
        l.arrive(packet(1500, 0, i));
    }
    // One packet went straight onto the wire; three wait; six dropped.
    assert_eq!(l.counters().dropped_by(DropReason::Tail), 6);
    assert_eq!(l.packets_inside(), 4);
}

#[test]
fn oversize_packets_are_dropped_with_a_reason() {
    let mut l = link(Server::Unlimited, 0, "infinite");
    l.arrive(packet(1600, 0, 1));
    assert_eq!(l.counters().dropped_by(DropReason::Oversize), 1);
    assert_eq!(l.packets_inside(), 0);
}

fn lost_ids(seed: u64) -> Vec<u16> {
    let mut l = link_with(
        Server::Unlimited,
        0,
        "infinite",
        Some(Loss::new(0.1, seed, 0)),
        1500,
    );
    let arrivals: Vec<Packet> = (0..2000)
        .map(|i| packet(100, i as u64 * NS_PER_US, i))
        .collect();
    let delivered: std::collections::HashSet<u16> = run(&mut l, arrivals, u64::MAX)
        .into_iter()
        .map(|o| o.1)
        .collect();
    (0..2000).filter(|i| !delivered.contains(i)).collect()
}

#[test]
fn loss_with_a_seed_reproduces_exactly() {
    let a = lost_ids(42);
    assert_eq!(a, lost_ids(42));
    assert_ne!(a, lost_ids(43));
    // 10% of 2000, within four standard deviations (σ ≈ 13.4).
    assert!((200usize.abs_diff(a.len())) < 54, "{}", a.len());
}

/// The flow id of the packets [`packet`] makes.
fn out_flow() -> u32 {
    packet(100, 0, 0).flow
}

#[test]
fn the_log_agrees_with_the_counters() {
    let (sink, mut records) = LogSink::in_memory(1 << 16);
    let mut l = Link::new(
        LinkConfig {
            shell: 2,
            direction: Direction::Downlink,
            delay: NS_PER_MS,
            server: Server::Rate(Rate::parse("5mbit").unwrap()),
            queue: build_queue("droptail packets 5").unwrap(),
            loss: Some(Loss::new(0.2, 7, 1)),
            max_packet: 1500,
            overhead: 0,
            dynamics: Default::default(),
        },
        0,
        sink,
    );
    let arrivals = (0..300)
        .map(|i| packet(1000 + (i as usize % 600), i as u64 * 500 * NS_PER_US, i))
        .collect();
    let out = run(&mut l, arrivals, 60 * NS_PER_MS);
    let mut by_event = std::collections::HashMap::new();
    let mut drops = DropCounts::default();
    let mut names = emu_core::flow::FlowTable::default();
    let mut first_event = None;
    while let Ok(r) = records.pop() {
        assert_eq!((r.shell, r.direction), (2, Direction::Downlink));
        first_event.get_or_insert(r.event);
        names.add(&r);
        *by_event.entry(r.event).or_insert(0u64) += 1;
        if let Some(reason) = r.drop_reason() {
            drops.add(reason);
        }
    }
    // One flow, named once, before its first packet.
    assert_eq!(by_event[&Event::Flow], 1);
    assert_eq!(first_event, Some(Event::Flow));
    let flow = out_flow();
    assert_eq!(
        names
            .get(2, Direction::Downlink, flow)
            .map(|t| t.to_string()),
        Some("udp 10.0.0.1:1000 → 10.0.0.2:2000".to_string())
    );
    let c = l.counters();
    assert_eq!(by_event[&Event::Arrive], c.arrived);
    assert_eq!(by_event[&Event::Depart], c.delivered);
    assert_eq!(c.delivered, out.len() as u64);
    assert_eq!(drops, c.dropped);
    assert!(c.dropped_by(DropReason::Loss) > 0 && c.dropped_by(DropReason::Tail) > 0);
    assert_eq!(
        c.arrived,
        c.delivered + c.dropped_total() + l.packets_inside()
    );
}

proptest! {
    /// Whatever the traffic and the path, every packet is delivered, dropped
    /// with a reason, or still held, and packets never overtake each other.
    #[test]
    fn every_packet_is_accounted_for_and_order_is_kept(
        gaps in proptest::collection::vec(0u64..3_000_000, 1..300),
        sizes in proptest::collection::vec(40usize..1700, 300),
        rate_kbit in 100u64..100_000,
        delay_us in 0u64..50_000,
        limit in 1u64..50,
        use_trace in any::<bool>(),
        loss in 0.0f64..0.3,
        stop_ms in 1u64..2_000,
    ) {
        let server = if use_trace {
            trace("1\n1\n4\n7\n7\n7\n9\n", true)
        } else {
            Server::Rate(Rate::from_bits_per_sec(rate_kbit * 1000).unwrap())
        };
        let mut l = link_with(server, delay_us * NS_PER_US, &format!("droptail packets {limit}"), Some(Loss::new(loss, 1, 0)), 1500);
        let mut t = 0;
        let arrivals: Vec<Packet> = gaps.iter().enumerate().map(|(i, g)| { t += g; packet(sizes[i], t, i as u16) }).collect();
        let out = run(&mut l, arrivals, stop_ms * NS_PER_MS);
        let c = l.counters().clone();
        prop_assert_eq!(c.arrived, c.delivered + c.dropped_total() + l.packets_inside());
        prop_assert!(out.windows(2).all(|w| w[0].1 < w[1].1 && w[0].0 <= w[1].0));
    }
}

#[test]
fn overhead_is_charged_per_packet_on_the_wire() {
    let mut l = Link::new(
        LinkConfig {
            shell: 0,
            direction: Direction::Uplink,
            delay: 0,
            server: Server::Rate(Rate::parse("10mbit").unwrap()),
            queue: build_queue("infinite").unwrap(),
            loss: None,
            max_packet: 1500,
            overhead: 38,
            dynamics: Default::default(),
        },
        0,
        LogSink::disabled(),
    );
    let out = run(
        &mut l,
        vec![packet(1500, 0, 1), packet(1500, 0, 2)],
        u64::MAX,
    );
    // (1500 + 38) bytes at 10 Mbit/s = 1.2304 ms each.
    assert_eq!(out, vec![(1_230_400, 1), (2_460_800, 2)]);
}

/// A queue with its own shaper (cake `bandwidth`) paces the link: with an
/// unlimited link the packets leave at cake's rate; behind a slower link
/// rate the link's rate governs.
#[test]
fn a_shaping_queue_paces_the_link() {
    let arrivals = |n: u16| (0..n).map(|i| packet(1000, 0, i)).collect::<Vec<_>>();
    // 1 Mbit/s: a 1000-byte packet every 8 ms. Six packets wait at most
    // 40 ms, under COBALT's floor of four MTU times (48 ms), so none drops.
    let mut shaped = link(Server::Unlimited, 0, "cake bandwidth 1mbit besteffort");
    let out = run(&mut shaped, arrivals(6), 1_000 * NS_PER_MS);
    assert_eq!(out.len(), 6);
    for (i, (t, _)) in out.iter().enumerate() {
        let want = i as u64 * 8 * NS_PER_MS;
        assert!(
            t.abs_diff(want) < NS_PER_US,
            "packet {i} at {t}, want {want}"
        );
    }
    let mut slower = link(
        Server::Rate(Rate::parse("500kbit").unwrap()),
        0,
        "cake bandwidth 1mbit besteffort",
    );
    let out = run(&mut slower, arrivals(6), 1_000 * NS_PER_MS);
    let gaps: Vec<Nanos> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert!(gaps.iter().all(|&g| g == 16 * NS_PER_MS), "{gaps:?}");
}

/// What the capture sees agrees with the log: one capture per departure
/// and drop, at the same times, with the same sojourns, cut at the snap
/// length, and the CE marks this queue made named on the packets.
#[test]
fn captures_agree_with_the_log_and_name_the_marks_made_here() {
    use emu_core::capture::{CaptureOptions, Fate};
    use emu_core::log::CaptureSink;
    let (sink, mut records) = LogSink::in_memory(1 << 12);
    let options = CaptureOptions {
        snaplen: 40,
        drops: true,
    };
    let (capture, mut captured) = CaptureSink::in_memory(1 << 12, options);
    let mut l = Link::new(
        LinkConfig {
            shell: 0,
            direction: Direction::Uplink,
            delay: NS_PER_MS,
            server: Server::Rate(Rate::parse("5mbit").unwrap()),
            queue: build_queue("codel ecn ce_threshold 1ms limit 10").unwrap(),
            loss: None,
            max_packet: 1500,
            overhead: 0,
            dynamics: Default::default(),
        },
        0,
        sink.with_capture(capture),
    );
    // A burst of ECT(0) packets: the queue overflows and its standing
    // packets pass the CE threshold.
    let arrivals = (0..20)
        .map(|i| {
            let mut p = packet(1000, i as u64 * 10 * NS_PER_US, i);
            p.set_ecn(emu_core::Ecn::Ect0);
            p
        })
        .collect();
    run(&mut l, arrivals, 100 * NS_PER_MS);
    let mut departures = Vec::new();
    let mut drops = Vec::new();
    while let Ok(r) = records.pop() {
        match r.event {
            Event::Depart => departures.push(r),
            Event::Drop => drops.push(r),
            _ => {}
        }
    }
    let mut shots = Vec::new();
    while let Ok(c) = captured.pop() {
        shots.push(c);
    }
    let c = l.counters();
    assert!(c.marked_ce > 0 && c.dropped_total() > 0, "{c:?}");
    let departed: Vec<_> = shots
        .iter()
        .filter(|s| matches!(s.fate, Fate::Departed { .. }))
        .collect();
    assert_eq!(departed.len(), departures.len());
    let mut marked = 0;
    for (shot, record) in departed.iter().zip(&departures) {
        assert_eq!(shot.time, record.time);
        assert_eq!((shot.original_len, shot.data.len()), (record.bytes, 40));
        let Fate::Departed { sojourn, mark } = shot.fate else {
            unreachable!()
        };
        assert_eq!(sojourn, record.sojourn);
        if mark.is_some() {
            assert_eq!(emu_core::packet::ecn(&shot.data), Some(emu_core::Ecn::Ce));
            marked += 1;
        }
    }
    assert_eq!(marked, c.marked_ce);
    let dropped: Vec<_> = shots
        .iter()
        .filter_map(|s| match s.fate {
            Fate::Dropped { reason, .. } => Some((s.time, reason)),
            _ => None,
        })
        .collect();
    let logged: Vec<_> = drops
        .iter()
        .map(|r| (r.time, r.drop_reason().unwrap()))
        .collect();
    assert_eq!(dropped, logged);
}

/// A pump on the real clock logs a departure when it writes the packet:
/// one written a second after it was due shows as a second late in the
/// log, while the virtual-time driver's `pop_due` logs the due time.
#[test]
fn a_late_write_is_logged_late_and_never_early() {
    for real_clock in [false, true] {
        let (sink, mut records) = LogSink::in_memory(64);
        let mut link = Link::new(
            LinkConfig {
                shell: 0,
                direction: Direction::Uplink,
                delay: 10 * NS_PER_MS,
                server: Server::Unlimited,
                queue: build_queue("infinite").unwrap(),
                loss: None,
                max_packet: 1500,
                overhead: 0,
                dynamics: Default::default(),
            },
            0,
            sink,
        );
        link.arrive(packet(100, 0, 1));
        let late = 1_000 * NS_PER_MS;
        link.advance(late);
        let (_, due) = if real_clock {
            link.pop_due_written_at(late).unwrap()
        } else {
            link.pop_due(late).unwrap()
        };
        assert_eq!(
            due,
            10 * NS_PER_MS,
            "the due time is the model's either way"
        );
        let mut departed = None;
        while let Ok(record) = records.pop() {
            if record.event == Event::Depart {
                departed = Some(record.time);
            }
        }
        let expected = if real_clock { late } else { due };
        assert_eq!(departed, Some(expected));
    }
}

/// `--l2 ethernet`: the link and its queue count each packet as the frame
/// the kernel's qdisc would see (IP + 14). At 12 Mbit/s a 1486-byte IP
/// packet is a 1500-byte frame, 1 ms on the wire (0.99067 ms without the
/// header); a `droptail bytes 4480` queue holds three such IP packets
/// (4458 bytes) but only two frames (3000; a third would make 4500).
#[test]
fn an_ethernet_link_layer_counts_frames_on_the_wire_and_in_the_queue() {
    use emu_core::size::LinkLayer;
    for (link_layer, spacing, kept) in [
        (LinkLayer::Ethernet, 1_000_000, 2 + 1),
        (LinkLayer::None, 990_666, 3 + 1),
    ] {
        let mut model = link(
            Server::Rate(Rate::parse("12mbit").unwrap()),
            0,
            "droptail bytes 4480",
        )
        .with_link_layer(link_layer);
        // One packet goes on the wire at once; the next ones queue.
        let arrivals = (0..6).map(|i| packet(1486, 0, i)).collect();
        let out = run(&mut model, arrivals, 100 * NS_PER_MS);
        assert_eq!(out.len(), kept, "{link_layer:?}: {out:?}");
        let near = |got: Nanos| (got as i64 - spacing as i64).abs() <= 1;
        assert!(near(out[0].0), "{link_layer:?}: {out:?}");
        assert!(near(out[1].0 - out[0].0), "{link_layer:?}: {out:?}");
        // The log still counts IP bytes.
        assert_eq!(model.counters().delivered_bytes, 1486 * kept as u64);
    }
}
