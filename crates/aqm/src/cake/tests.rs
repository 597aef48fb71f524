use super::overhead::Framing;
use super::*;
use crate::QueueSpec;
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
                compensated: overhead != 0,
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

/// A tc line charges what the kernel's cake charges (sch_cake.c,
/// cake_calc_overhead): on an Ethernet device the qdisc is given IP + 14
/// bytes; without `overhead` (and with `raw`) that is charged as it is,
/// `overhead N` and the named link types first take the 14 bytes off, then
/// mpu pads and ATM/PTM frame. The figures are worked out by hand from
/// that function for a 1500-byte and a 40-byte IP packet.
#[test]
fn tc_lines_charge_what_the_kernel_charges() {
    let cases: [(&str, [u32; 2], [u32; 2]); 14] = [
        // (line, [1500, 40] on Ethernet, [1500, 40] on an IP device)
        ("cake", [1514, 54], [1500, 40]),
        ("cake raw", [1514, 54], [1500, 40]),
        ("cake overhead 0", [1500, 40], [1500, 40]),
        ("cake overhead 18", [1518, 58], [1518, 58]),
        ("cake overhead -4", [1496, 36], [1496, 36]),
        ("cake ethernet", [1538, 84], [1538, 84]),
        ("cake mpu 64", [1514, 64], [1500, 64]),
        // ceil(1514/48) = 32 cells, ceil(54/48) = 2; IP: ceil(1500/48) = 32, 1.
        ("cake atm", [32 * 53, 2 * 53], [32 * 53, 53]),
        // 1514 + ceil(1514/64) = 1514 + 24; 54 + 1. IP: 1500 + 24; 40 + 1.
        ("cake ptm", [1538, 55], [1524, 41]),
        // 1500 + 32 = 1532: 32 cells; 40 + 32 = 72: 2 cells.
        ("cake pppoe-vcmux", [32 * 53, 2 * 53], [32 * 53, 2 * 53]),
        // 1522 + 24; 62 + 1.
        ("cake bridged-ptm", [1546, 63], [1546, 63]),
        // 1548: 33 cells; 88: 2 cells.
        ("cake conservative", [33 * 53, 2 * 53], [33 * 53, 2 * 53]),
        ("cake docsis", [1518, 64], [1518, 64]),
        // tc sends both: the overhead is added, the header is not taken off.
        ("cake raw overhead 10", [1524, 64], [1510, 50]),
    ];
    for (line, ethernet, ip) in cases {
        let QueueSpec::Cake(p) = QueueSpec::parse(line).unwrap() else {
            unreachable!()
        };
        for (ip_len, (on_ethernet, on_ip)) in
            [1500u32, 40].into_iter().zip(ethernet.into_iter().zip(ip))
        {
            assert_eq!(
                p.overhead.adjusted(ip_len + 14, 14),
                on_ethernet,
                "{line}, {ip_len} IP bytes on Ethernet"
            );
            assert_eq!(
                p.overhead.adjusted(ip_len, 0),
                on_ip,
                "{line}, {ip_len} IP bytes on an IP device"
            );
        }
    }
}

/// The same through a running cake: `cake bandwidth 1mbit` on Ethernet
/// (`link --l2 ethernet`) charges 1514 bytes for a 1500-byte IP packet
/// (12.112 ms at 1 Mbit/s, not 12 ms), and its MTU time is that of 1514
/// bytes, so the target floor of 1.5 MTU times is 18.168 ms, not 18 ms.
#[test]
fn on_ethernet_cake_paces_frames_and_its_mtu_time_is_1514_bytes() {
    use emu_core::size::LinkLayer;
    for (link_layer, per_packet, target) in [
        (LinkLayer::Ethernet, 12_112_000.0, 18_168_000),
        (LinkLayer::None, 12_000_000.0, 18_000_000),
    ] {
        let spec = QueueSpec::parse("cake bandwidth 1mbit besteffort")
            .unwrap()
            .on_link_layer(link_layer);
        let QueueSpec::Cake(params) = spec else {
            unreachable!()
        };
        let mut cake = Cake::new(params);
        let cobalt_target = cake.tins[0].config.cobalt.target as i64;
        assert!(
            (cobalt_target - target).abs() < 100,
            "{link_layer:?}: target {cobalt_target} ns, want {target}"
        );
        let mut out = Outcome::default();
        for _ in 0..10 {
            let mut packet = udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 0b10, 1500);
            packet.link_header = link_layer.header_bytes();
            cake.enqueue(packet, 0, &mut out);
        }
        let times = drain_shaped(&mut cake, &mut out);
        assert_eq!(times.len(), 10);
        let spacing = (times[9] - times[1]) as f64 / 8.0;
        assert!(
            (spacing - per_packet).abs() < 5.0,
            "{link_layer:?}: {spacing} ns per packet, want {per_packet}"
        );
    }
}
