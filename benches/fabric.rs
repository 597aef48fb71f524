//! Per-packet cost of an experiment's fabric in virtual time, and of what
//! a carrier does to each packet besides: cutting a super-packet into the
//! segments the links see, checksumming them, and merging a run of them
//! back for one write. No device or clock is involved.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use emu_core::log::LogSink;
use emu_core::offload::{
    fixtures::{tcp_v4, tso_read},
    internet_checksum, merge_run, merged_headers, segment,
};
use emu_core::packet::build::ipv4_udp;
use emu_core::{Nanos, Packet};
use fabric::testing::link;
use fabric::{Delivery, Fabric, Side, Topology};
use std::net::Ipv4Addr;

const PACKETS: usize = 10_000;
const PAIRS: usize = 4;

/// Four senders on the left, four receivers on the right, 5 ms side
/// links and a 10 Gbit/s drop-tail bottleneck each way.
fn dumbbell() -> Fabric {
    let hosts = (0..2 * PAIRS)
        .map(|h| {
            let side = if h < PAIRS { Side::Left } else { Side::Right };
            (side, Ipv4Addr::new(10, 0, 0, h as u8 + 1))
        })
        .collect();
    let topology = Topology::new(hosts, 1).unwrap();
    let links = (0..topology.link_count())
        .map(|id| match id >= 4 * PAIRS {
            true => link(
                id,
                0,
                Some(10_000_000_000),
                "droptail packets 1000",
                LogSink::disabled(),
            ),
            false => link(id, 5_000_000, None, "infinite", LogSink::disabled()),
        })
        .collect();
    Fabric::new(topology, links).unwrap()
}

/// Data from each sender to its receiver, 1500 bytes every 1.2 µs in all
/// (the bottleneck's rate), and an acknowledgement back for every second.
fn traffic() -> Vec<(usize, Packet)> {
    let mut out = Vec::with_capacity(PACKETS * 3 / 2);
    for i in 0..PACKETS {
        let pair = i % PAIRS;
        let at = i as Nanos * 1_200;
        let (sender, receiver) = (
            [10, 0, 0, pair as u8 + 1],
            [10, 0, 0, (pair + PAIRS) as u8 + 1],
        );
        out.push((
            pair,
            Packet::new(ipv4_udp(sender, receiver, 5000, 5201, 0, 1472), at),
        ));
        if i % 2 == 1 {
            let ack = ipv4_udp(receiver, sender, 5201, 5000, 0, 32);
            out.push((pair + PAIRS, Packet::new(ack, at)));
        }
    }
    out
}

/// Sends and runs as a carrier does: each packet in, the fabric run to its
/// arrival every 16 packets. Returns how many reached their hosts.
fn carry(mut fabric: Fabric, traffic: Vec<(usize, Packet)>) -> usize {
    let mut out: Vec<Delivery> = Vec::with_capacity(256);
    let mut delivered = 0;
    let mut last = 0;
    for (k, (host, packet)) in traffic.into_iter().enumerate() {
        last = packet.arrival;
        fabric.send(host, packet, &mut out);
        if k % 16 == 15 {
            fabric.run_until(last, &mut out);
            delivered += out.len();
            out.clear();
        }
    }
    fabric.run_until(last + 1_000_000_000, &mut out);
    delivered + out.len()
}

/// The checksum as it was summed before, for the ratio: each 8-byte word
/// as its four 16-bit halves.
fn checksum_by_halves(data: &[u8]) -> u16 {
    let mut sum = 0u64;
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_be_bytes(chunk.try_into().unwrap());
        sum += (word >> 48) + ((word >> 32) & 0xffff) + ((word >> 16) & 0xffff) + (word & 0xffff);
    }
    for pair in chunks.remainder().chunks(2) {
        sum += (u64::from(pair[0]) << 8) | u64::from(*pair.get(1).unwrap_or(&0));
    }
    while sum > 0xffff {
        sum = (sum >> 16) + (sum & 0xffff);
    }
    !(sum as u16)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("fabric");
    let traffic = traffic();
    group.throughput(Throughput::Elements(traffic.len() as u64));
    group.bench_function("dumbbell of 8 hosts, 10 Gbit/s", |b| {
        b.iter_batched(
            || (dumbbell(), traffic.clone()),
            |(fabric, traffic)| carry(fabric, traffic),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("dumbbell of 8 hosts, 10 Gbit/s, two lanes", |b| {
        b.iter_batched(
            || (dumbbell(), traffic.clone()),
            |(fabric, traffic)| {
                let [left, right] = fabric.split_by_side();
                let (from_left, from_right): (Vec<_>, Vec<_>) =
                    traffic.into_iter().partition(|(host, _)| *host < PAIRS);
                carry(left, from_left) + carry(right, from_right)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();

    let read = tso_read(1448, &tcp_v4(1448 * 44, 0x10));
    let mut segments = Vec::new();
    segment(&read, &mut segments).unwrap();
    let mut group = c.benchmark_group("offload");
    group.throughput(Throughput::Elements(segments.len() as u64));
    group.bench_function("cut a 64 KB super-packet", |b| {
        let mut out = Vec::with_capacity(64);
        b.iter(|| {
            out.clear();
            segment(&read, &mut out).unwrap();
            out.len()
        })
    });
    group.bench_function("merge 44 segments, copied", |b| {
        let mut merged = Vec::with_capacity(70_000);
        b.iter(|| {
            merge_run(segments.iter().map(Vec::as_slice), &mut merged);
            merged.len()
        })
    });
    group.bench_function("merge 44 segments, headers for a gathered write", |b| {
        let mut headers = Vec::with_capacity(128);
        let bytes = segments.iter().map(Vec::len).sum();
        let last = &segments[segments.len() - 1];
        b.iter(|| merged_headers(&segments[0], last, segments.len(), bytes, &mut headers))
    });
    group.finish();

    let mut group = c.benchmark_group("checksum");
    let segment = &segments[1][20..];
    group.throughput(Throughput::Bytes(segment.len() as u64));
    group.bench_function("a segment, a word at a time", |b| {
        b.iter(|| internet_checksum(std::hint::black_box(segment)))
    });
    group.bench_function("a segment, as four 16-bit halves a word", |b| {
        b.iter(|| checksum_by_halves(std::hint::black_box(segment)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
