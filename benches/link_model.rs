//! Per-packet cost of the link model in virtual time: arrival, queueing,
//! serialization and departure, with no device or clock involved. The
//! figure is what the pump spends on the model for each packet.

use aqm::build_queue;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use emu_core::log::{Direction, LogSink};
use emu_core::packet::build::ipv4_udp;
use emu_core::trace::Trace;
use emu_core::{Packet, Rate};
use link::{
    DelayDynamics, Distribution, Dynamics, JitterSpec, Link, LinkConfig, Loss, Outages, Schedule,
    Server,
};
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
    link_with(server, queue, loss, Dynamics::default())
}

fn link_with(server: Server, queue: &str, loss: Option<Loss>, dynamics: Dynamics) -> Link {
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
            dynamics,
        },
        0,
        LogSink::disabled(),
    )
}

/// How often a subscribed controller reads the link's telemetry (of the
/// packets' time).
const READING_EVERY: u64 = 10_000_000;

/// Feeds every packet through and drains the model, as a pump would;
/// `watched`, with a controller subscribed to the link's telemetry: the
/// model keeps each departure's sojourn, and the reading a control thread
/// takes every [`READING_EVERY`] is taken here.
fn drive(mut link: Link, packets: Vec<Packet>, watched: bool) -> u64 {
    link.watch_sojourns(watched);
    let mut delivered = 0;
    let mut next_reading = READING_EVERY;
    for packet in packets {
        let now = packet.arrival;
        link.arrive(packet);
        while link.pop_due(now).is_some() {
            delivered += 1;
        }
        if watched && now >= next_reading {
            let window = link.take_sojourns().expect("watched");
            std::hint::black_box((window.quantile(0.5), window.quantile(0.99)));
            next_reading += READING_EVERY;
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
        (
            // Path dynamics: a square-wave delay with correlated jitter in
            // FIFO order, behind a rate that steps, with outages.
            "rate_steps_outage_square_jitter",
            Box::new(move || {
                let steps = Schedule::steps(
                    vec![
                        (0, 10_000_000_000),
                        (5_000_000, 5_000_000_000),
                        (10_000_000, 10_000_000_000),
                    ],
                    true,
                    false,
                );
                link_with(
                    Server::Schedule(steps),
                    "droptail packets 1000",
                    None,
                    Dynamics {
                        delay: DelayDynamics {
                            schedule: Some(Schedule::square(
                                20_000_000, 40_000_000, 4_000_000, 0.5,
                            )),
                            jitter: Some(JitterSpec {
                                sigma: 1_000_000,
                                correlation: 0.25,
                                distribution: Distribution::Normal,
                            }),
                            ..Default::default()
                        },
                        outages: Some(Outages::Periodic {
                            up: 3_000_000,
                            down: 100_000,
                        }),
                        ..Default::default()
                    },
                )
            }),
        ),
    ];
    // `rate_droptail` again with a controller subscribed to its
    // telemetry: the A/B of a watched link.
    let watched: Vec<(&str, MakeLink)> = vec![(
        "rate_droptail_watched",
        Box::new(move || link(rate(), "droptail packets 1000", None)),
    )];
    let cases = cases.into_iter().map(|(n, m)| (n, m, false));
    for (name, make, watched) in cases.chain(watched.into_iter().map(|(n, m)| (n, m, true))) {
        group.bench_function(name, |b| {
            b.iter_batched(
                || (make(), packets()),
                |(l, p)| drive(l, p, watched),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
