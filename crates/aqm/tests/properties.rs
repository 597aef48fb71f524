//! Properties every discipline must keep, whatever the traffic: no packet
//! is lost or duplicated (each one offered is dequeued or reported dropped,
//! exactly once), the byte and packet counts agree with what is inside, and
//! bounded queues respect their limits.

use aqm::{build_queue, Outcome};
use emu_core::packet::build::ipv4_udp;
use emu_core::Packet;
use proptest::prelude::*;
use std::collections::HashMap;

const SPECS: &[(&str, Option<usize>)] = &[
    ("infinite", None),
    ("droptail packets 20", Some(20)),
    ("drophead packets 20", Some(20)),
    ("droptail bytes 20000", None),
    ("codel limit 50 target 1ms interval 5ms ecn", Some(50)),
    (
        "codel limit 50 target 1ms interval 5ms variant rfc",
        Some(50),
    ),
    (
        "fq_codel limit 40 flows 8 quantum 300 target 1ms interval 5ms",
        Some(40),
    ),
    (
        "fq_codel limit 40 flows 8 noecn ce_threshold 500us",
        Some(40),
    ),
    (
        "pie limit 30 target 2ms tupdate 2ms max_burst 5ms ecn",
        Some(30),
    ),
    ("pie limit 30 target 2ms dq_rate_estimator", Some(30)),
    (
        "fq_pie limit 30 flows 4 target 2ms tupdate 2ms ecn",
        Some(30),
    ),
    ("red limit 30 min 5 max 15 packets ecn gentle", Some(30)),
    ("red limit 30000 min 5000 max 15000 adaptive bytemode", None),
    ("cake memlimit 20000 sce-thresh 4 target 1ms", None),
    (
        "cake bandwidth 10mbit memlimit 20000 ingress diffserv4 flows atm",
        None,
    ),
    (
        "cake bandwidth 50mbit besteffort flowblind memlimit 20000 sce",
        None,
    ),
    ("dualpi2 limit 30 target 1ms tupdate 1ms", Some(30)),
    (
        "dualpi2 limit 30 drop_enqueue overflow any_ect step_thresh 2p",
        Some(30),
    ),
    ("dualpi2 limit 30 tshift 2ms uncoupled", Some(30)),
];

#[derive(Debug, Clone)]
enum Op {
    Offer { size: usize, flow: u16, ecn: u8 },
    Serve,
    Wait(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (40usize..1500, 0u16..6, 0u8..4).prop_map(|(size, flow, ecn)| Op::Offer { size, flow, ecn }),
        3 => Just(Op::Serve),
        1 => (1u64..20_000_000).prop_map(Op::Wait),
    ]
}

/// The packet's id lives in its IP identification field.
fn packet(id: u16, size: usize, flow: u16, ecn: u8, now: u64) -> Packet {
    let mut data = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000 + flow, 80, ecn, size);
    data[4..6].copy_from_slice(&id.to_be_bytes());
    Packet::new(data, now)
}

fn id(p: &Packet) -> u16 {
    u16::from_be_bytes([p.data[4], p.data[5]])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn no_discipline_loses_or_duplicates_and_limits_hold(ops in proptest::collection::vec(op(), 1..2000)) {
        for (spec, packet_limit) in SPECS {
            let mut queue = build_queue(spec).unwrap();
            let mut outcome = Outcome::default();
            let mut seen: HashMap<u16, u32> = HashMap::new();
            let mut offered = 0u16;
            let mut inside_bytes: i64 = 0;
            let mut now = 0u64;
            let settle = |outcome: &mut Outcome, seen: &mut HashMap<u16, u32>, inside_bytes: &mut i64| {
                for d in outcome.drops.drain(..) {
                    *seen.entry(id(&d.packet)).or_default() += 1;
                    *inside_bytes -= d.packet.len() as i64;
                }
                outcome.marks.clear();
            };
            for op in &ops {
                match op {
                    Op::Offer { size, flow, ecn } => {
                        let p = packet(offered, *size, *flow, *ecn, now);
                        inside_bytes += p.len() as i64;
                        offered += 1;
                        queue.enqueue(p, now, &mut outcome);
                    }
                    Op::Serve => {
                        if let Some(p) = queue.dequeue(now, &mut outcome) {
                            *seen.entry(id(&p)).or_default() += 1;
                            inside_bytes -= p.len() as i64;
                        }
                    }
                    Op::Wait(ns) => now += ns,
                }
                settle(&mut outcome, &mut seen, &mut inside_bytes);
                prop_assert_eq!(queue.bytes() as i64, inside_bytes, "{}: byte count", spec);
                if let Some(limit) = packet_limit {
                    prop_assert!(queue.packets() <= *limit, "{}: {} packets over the limit", spec, queue.packets());
                }
                if spec.contains("bytes 20000") || spec.contains("memlimit 20000") {
                    prop_assert!(queue.bytes() <= 20_000, "{}: byte limit", spec);
                }
            }
            // Drain whatever is left.
            for _ in 0..100_000 {
                now += 1_000_000;
                match queue.dequeue(now, &mut outcome) {
                    Some(p) => *seen.entry(id(&p)).or_default() += 1,
                    None if queue.is_empty() => break,
                    None => {}
                }
                settle(&mut outcome, &mut seen, &mut inside_bytes);
            }
            settle(&mut outcome, &mut seen, &mut inside_bytes);
            prop_assert_eq!(queue.packets(), 0, "{}: empty at the end", spec);
            for i in 0..offered {
                prop_assert_eq!(seen.get(&i).copied().unwrap_or(0), 1, "{}: packet {} came out {} times", spec, i, seen.get(&i).copied().unwrap_or(0));
            }
        }
    }
}
