//! Per-packet cost of the link model in virtual time: arrival, queueing,
//! serialization and departure, with no device or clock involved. The
//! figure is what the pump spends on the model for each packet.

use aqm::build_queue;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use emu_core::log::{Direction, LogSink};
use emu_core::packet::build::ipv4_udp;
use emu_core::trace::Trace;
use emu_core::{Packet, Rate};
use link::{Link, LinkConfig, Loss, Server};
use std::sync::Arc;

const PACKETS: usize = 10_000;

/// Builds a fresh model for one benchmark case.
type MakeLink = Box<dyn Fn() -> Link>;

fn packets() -> Vec<Packet> {
    (0..PACKETS)
        .map(|i| {
            let data = ipv4_udp(
                [10, 0, 0, 1],
                [10, 0, 0, 2],
                1000 + (i % 16) as u16,
                80,
                0,
                1500,
            );
            // 1500-byte packets every 1.2 µs: a saturated 10 Gbit/s link.
            Packet::new(data, i as u64 * 1_200)
        })
        .collect()
}

fn link(server: Server, queue: &str, loss: Option<Loss>) -> Link {
    Link::new(
        LinkConfig {
            shell: 0,
            direction: Direction::Uplink,
            delay: 20_000_000,
            server,
            queue: build_queue(queue).unwrap(),
            loss,
            max_packet: 1500,
            overhead: 0,
        },
        0,
        LogSink::disabled(),
    )
}

/// Feeds every packet through and drains the model, as a pump would.
fn drive(mut link: Link, packets: Vec<Packet>) -> u64 {
    let mut delivered = 0;
    for packet in packets {
        let now = packet.arrival;
        link.arrive(packet);
        while link.pop_due(now).is_some() {
            delivered += 1;
        }
    }
    while let Some(t) = link.next_event() {
        link.advance(t);
        while link.pop_due(t).is_some() {
            delivered += 1;
        }
    }
    delivered
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("link_model");
    group.throughput(Throughput::Elements(PACKETS as u64));
    let rate = || Server::Rate(Rate::parse("10gbit").unwrap());
    let trace = Arc::new(Trace::parse("#emu-trace ns\n1200\n").unwrap());
    let cases: Vec<(&str, MakeLink)> = vec![
        (
            "delay_only",
            Box::new(|| link(Server::Unlimited, "infinite", None)),
        ),
        (
            "rate_droptail",
            Box::new(move || link(rate(), "droptail packets 1000", None)),
        ),
        (
            "rate_droptail_loss",
            Box::new(move || link(rate(), "droptail packets 1000", Some(Loss::new(0.01, 1, 0)))),
        ),
        (
            "trace_droptail",
            Box::new(move || {
                link(
                    Server::Trace {
                        trace: trace.clone(),
                        repeat: true,
                    },
                    "droptail packets 1000",
                    None,
                )
            }),
        ),
    ];
    for (name, make) in cases {
        group.bench_function(name, |b| {
            b.iter_batched(
                || (make(), packets()),
                |(l, p)| drive(l, p),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
