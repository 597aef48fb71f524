//! Enqueue + dequeue cost per packet of each queue discipline, in virtual
//! time, with a standing queue of 100 packets: one flow, 100 flows, and
//! ECN-capable traffic (so AQMs mark rather than drop).

use aqm::{build_queue, Outcome, Queue};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use emu_core::packet::build::ipv4_udp;
use emu_core::Packet;

const PACKETS: usize = 10_000;

fn traffic(flows: u16, tos: u8) -> Vec<Packet> {
    (0..PACKETS)
        .map(|i| {
            Packet::new(
                ipv4_udp(
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    1000 + (i as u16 % flows),
                    80,
                    tos,
                    1500,
                ),
                0,
            )
        })
        .collect()
}

/// Keeps 100 packets queued: each new arrival is followed by one departure,
/// 1.2 µs apart (a 10 Gbit/s link), so AQMs see a standing queue.
fn drive(mut queue: Box<dyn Queue>, packets: Vec<Packet>) -> usize {
    let mut outcome = Outcome::default();
    let mut sent = 0;
    for (i, mut p) in packets.into_iter().enumerate() {
        let now = i as u64 * 1_200;
        p.arrival = now;
        queue.enqueue(p, now, &mut outcome);
        if i >= 100 && queue.dequeue(now, &mut outcome).is_some() {
            sent += 1;
        }
        outcome.drops.clear();
        outcome.marks.clear();
    }
    sent
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("aqm");
    group.throughput(Throughput::Elements(PACKETS as u64));
    let specs = [
        ("droptail", "droptail packets 1000"),
        ("codel", "codel target 50us interval 1ms ecn"),
        ("fq_codel", "fq_codel target 50us interval 1ms"),
        ("pie", "pie target 50us tupdate 1ms max_burst 1ms ecn"),
        ("fq_pie", "fq_pie target 50us tupdate 1ms max_burst 1ms ecn"),
        ("red", "red limit 1000 min 20 max 60 packets ecn"),
        // triple-isolate (the default) with every flow between one pair
        // of hosts divides each flow's quantum by the host's 100 bulk
        // flows, so DRR++ takes ~100 rounds per packet, as in the kernel;
        // `flows` isolation shows the cost without that.
        ("cake", "cake target 50us rtt 1ms"),
        ("cake_flows", "cake flows target 50us rtt 1ms"),
        (
            "cake_shaped_sce",
            "cake bandwidth 10gbit target 50us rtt 1ms sce",
        ),
        ("dualpi2", "dualpi2 target 50us tupdate 1ms"),
        // The SCE project's queues: SCE on (twin_codel_af's default) and
        // lfq_cobalt's bulk scan with SCE turned on as the scenarios run it.
        ("twin_codel_af", "twin_codel_af target 50us rtt 1ms"),
        ("lfq_cobalt", "lfq_cobalt target 50us rtt 1ms sce-thresh 8"),
    ];
    for (name, spec) in specs {
        for (label, flows, tos) in [
            ("1flow", 1, 0),
            ("100flows", 100, 0),
            ("ecn", 100, 0b10),
            ("l4s", 100, 0b01),
        ] {
            group.bench_function(format!("{name}/{label}"), |b| {
                // The queue is built outside the timing: cake's 1024
                // queues per tin are set up once, not per packet.
                b.iter_batched(
                    || (build_queue(spec).unwrap(), traffic(flows, tos)),
                    |(queue, p)| drive(queue, p),
                    BatchSize::LargeInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
