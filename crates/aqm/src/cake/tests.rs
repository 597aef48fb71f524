use super::*;
use emu_core::packet::build::ipv4_udp;
use emu_core::time::NS_PER_MS;

fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, tos: u8, len: usize) -> Packet {
    Packet::new(ipv4_udp(src, dst, sport, 9, tos, len), 0)
}

/// Sends everything queued, each packet at the moment the shaper lets it
/// go, and returns the departure times.
fn drain_shaped(cake: &mut Cake, out: &mut Outcome) -> Vec<Nanos> {
    let mut times = Vec::new();
    while let Some(ready) = cake.next_ready() {
        if cake.dequeue(ready, out).is_some() {
            times.push(ready);
        }
    }
    times
}

/// The shaper charges each packet its size after compensation: 100-byte
/// packets on ATM cost 159 bytes, at 1 Mbit/s 1.272 ms apiece.
#[test]
fn the_shaper_rate_includes_overhead_and_atm_cells() {
    for (framing, overhead, cost) in [
        (Framing::None, 0, 100.0),
        (Framing::Atm, 0, 159.0),
        (Framing::None, 38, 138.0),
    ] {
        let mut cake = Cake::new(CakeParams {
            bandwidth: 125_000,
            overhead: Overhead {
                overhead,
                mpu: 0,
                framing,
            },
            ..CakeParams::default()
        });
        let mut out = Outcome::default();
        for _ in 0..50 {
            cake.enqueue(udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 0b10, 100), 0, &mut out);
        }
        let times = drain_shaped(&mut cake, &mut out);
        assert_eq!(times.len(), 50, "ECT packets are marked, never dropped");
        let spacing = (times[49] - times[1]) as f64 / 48.0;
        let want = cost / 125_000.0 * 1e9;
        assert!(
            (spacing - want).abs() < 2.0,
            "{framing:?}: {spacing} ns per packet, want {want}"
        );
    }
}

/// triple-isolate: a host with one flow and a host with four get the
/// same share; in `flows` mode the four-flow host gets four fifths.
#[test]
fn triple_isolate_shares_by_host_then_by_flow() {
    for (mode, want_share) in [(flow_mode::TRIPLE, 0.5), (flow_mode::FLOWS, 0.2)] {
        let mut cake = Cake::new(CakeParams {
            flow_mode: mode,
            tin_mode: TinMode::Besteffort,
            ..CakeParams::default()
        });
        let mut out = Outcome::default();
        for _ in 0..500 {
            cake.enqueue(
                udp([10, 0, 0, 1], [10, 0, 1, 1], 1000, 0, 1000),
                0,
                &mut out,
            );
            for port in 2000..2004 {
                cake.enqueue(
                    udp([10, 0, 0, 2], [10, 0, 1, 2], port, 0, 1000),
                    0,
                    &mut out,
                );
            }
        }
        let mut single = 0;
        for _ in 0..1000 {
            let p = cake.dequeue(0, &mut out).unwrap();
            single += (p.data[15] == 1) as usize;
        }
        let share = single as f64 / 1000.0;
        assert!(
            (share - want_share).abs() < 0.03,
            "mode {mode}: one-flow host got {share}"
        );
        assert!(out.drops.is_empty());
    }
}

#[test]
fn tins_follow_dscp_and_shaped_priority_serves_voice_first() {
    let mut cake = Cake::new(CakeParams {
        bandwidth: 1_250_000,
        ..CakeParams::default()
    });
    let ef = udp([10, 0, 0, 1], [10, 0, 0, 2], 5, 46 << 2, 200);
    let cs1 = udp([10, 0, 0, 1], [10, 0, 0, 2], 6, 8 << 2, 200);
    let df = udp([10, 0, 0, 1], [10, 0, 0, 2], 7, 0, 200);
    assert_eq!(
        (
            cake.queue_of(&ef).0,
            cake.queue_of(&cs1).0,
            cake.queue_of(&df).0
        ),
        (2, 1, 0)
    );
    let mut out = Outcome::default();
    for _ in 0..10 {
        cake.enqueue(df.clone(), 0, &mut out);
    }
    cake.enqueue(ef.clone(), 0, &mut out);
    let first = cake.dequeue(0, &mut out).unwrap();
    assert_eq!(first.dscp(), Some(46));
}

/// BLUE steps up by 1/256 on each overflow, at most once per target.
#[test]
fn overflow_drops_from_the_longest_queue_and_raises_blue() {
    let mut cake = Cake::new(CakeParams {
        memlimit: Some(15_000),
        tin_mode: TinMode::Besteffort,
        ..CakeParams::default()
    });
    let mut out = Outcome::default();
    let fat = || udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 0, 1000);
    let thin = udp([10, 0, 0, 3], [10, 0, 0, 4], 2, 0, 1000);
    cake.enqueue(thin.clone(), 0, &mut out);
    for i in 0..30u64 {
        cake.enqueue(fat(), i * NS_PER_MS, &mut out);
    }
    assert_eq!(out.drops.len(), 16);
    assert!(out
        .drops
        .iter()
        .all(|d| d.reason == DropReason::Head && d.packet.flow == fat().flow));
    let (tin, queue) = cake.queue_of(&fat());
    // Overflows from 15 ms to 29 ms: steps at 15 ms and 21 ms and 27 ms
    // (each more than the 5 ms target after the last).
    assert_eq!(cake.blue_probability(tin, queue), 3 << 24);
    assert_eq!(cake.bytes(), 15_000);
}

/// `sce-thresh 4`: at 3.75 ms of sojourn 12.5% of ECT(0) packets leave
/// as ECT(1); Not-ECT packets are never touched.
#[test]
fn the_sce_ramp_marks_ect0_at_its_rate() {
    let mut cake = Cake::new(CakeParams {
        sce: 4,
        ..CakeParams::default()
    });
    let mut out = Outcome::default();
    let (mut ect1, mut not_ect_changed) = (0, 0);
    let n = 20_000u64;
    for i in 0..n {
        let t = i * 10 * NS_PER_MS;
        let tos = if i % 2 == 0 { 0b10 } else { 0b00 };
        cake.enqueue(udp([10, 0, 0, 1], [10, 0, 0, 2], 1, tos, 500), t, &mut out);
        let p = cake.dequeue(t + 3_750_000, &mut out).unwrap();
        if tos == 0b10 {
            ect1 += (p.ecn() == Some(Ecn::Ect1)) as u64;
        } else {
            not_ect_changed += (p.ecn() != Some(Ecn::NotEct)) as u64;
        }
        let checksum = emu_core::packet::ipv4_header_checksum(&p.data[..20]);
        assert_eq!(checksum, u16::from_be_bytes([p.data[10], p.data[11]]));
    }
    let rate = ect1 as f64 / (n / 2) as f64;
    assert!((rate - 0.125).abs() < 0.012, "ECT(1) rate {rate}");
    assert_eq!(not_ect_changed, 0);
    assert_eq!(out.marks.len() as u64, ect1);
    assert!(out.marks.iter().all(|m| m.mark == Mark::Ect1));
}

#[test]
fn the_ack_filter_drops_redundant_acks() {
    let mut cake = Cake::new(CakeParams {
        ack_filter: AckFilter::On,
        ..CakeParams::default()
    });
    let mut out = Outcome::default();
    for ack in [100, 200, 300] {
        let data = ack_filter::tests::tcp(1, 0x10, ack, 0, &[]);
        cake.enqueue(Packet::new(data, 0), 0, &mut out);
    }
    assert_eq!(out.drops.len(), 1);
    assert_eq!(out.drops[0].reason, DropReason::AckFilter);
    assert_eq!(cake.packets(), 2);
}

/// Eight flows hashing into one set get eight queues; a ninth shares.
#[test]
fn set_associative_hashing_gives_colliding_flows_their_own_ways() {
    let mut cake = Cake::new(CakeParams {
        flow_mode: flow_mode::FLOWS,
        tin_mode: TinMode::Besteffort,
        ..CakeParams::default()
    });
    let set_of = |p: &Packet| (p.flow as usize % QUEUES) / WAYS;
    let first = udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 0, 100);
    let packets: Vec<Packet> = (1..u16::MAX)
        .map(|port| udp([10, 0, 0, 1], [10, 0, 0, 2], port, 0, 100))
        .filter(|p| set_of(p) == set_of(&first))
        .take(9)
        .collect();
    assert_eq!(packets.len(), 9);
    let mut out = Outcome::default();
    let mut queues = Vec::new();
    for p in &packets {
        queues.push(cake.queue_of(p).1);
        cake.enqueue(p.clone(), 0, &mut out);
    }
    let distinct: std::collections::HashSet<_> = queues[..8].iter().collect();
    assert_eq!(distinct.len(), 8);
    assert!(queues.iter().all(|&q| q / WAYS == set_of(&first)));
    assert!(queues[..8].contains(&queues[8]), "the ninth shares a way");
}
