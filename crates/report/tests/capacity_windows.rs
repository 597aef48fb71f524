//! Capacity is the real bottleneck (the lower of a link and its queue's
//! shaper, said which), and per-flow figures over windows that add up.

use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
use emu_core::Nanos;
use report::{FlowSelection, Options};
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const ORIGIN: Nanos = 3_000 * MS;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-capacity-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn rec(t: Nanos, event: Event, fingerprint: u32, flow: u32, bytes: u32) -> Record {
    Record {
        time: ORIGIN + t,
        sojourn: 0,
        flow,
        fingerprint,
        bytes,
        queue_bytes: 0,
        queue_packets: 0,
        shell: 0,
        direction: Direction::Uplink,
        event,
        detail: 0,
        ecn: 0,
    }
}

fn write_log(path: &Path, header: &LogHeader, records: &mut [Record]) {
    records.sort_by_key(|r| r.time);
    let mut out = Vec::new();
    write_header(&mut out, header).unwrap();
    for r in records.iter() {
        let mut bytes = [0u8; RECORD_SIZE];
        r.encode(&mut bytes);
        out.extend_from_slice(&bytes);
    }
    std::fs::write(path, out).unwrap();
}

fn header(rate_bps: Option<u64>, shaper_bps: Option<u64>) -> LogHeader {
    LogHeader {
        shell: 0,
        description: "link".into(),
        monotonic_origin_ns: ORIGIN,
        rate_bps: Some([rate_bps, rate_bps]),
        shaper_bps: Some([shaper_bps, shaper_bps]),
        ..LogHeader::default()
    }
}

/// One flow of 500-byte packets, one every `gap_ms` from `start_ms` to
/// `stop_ms`, each delivered 1 ms after it arrived.
fn flow(records: &mut Vec<Record>, id: u32, start_ms: u64, stop_ms: u64, gap_ms: u64) {
    let mut t = start_ms;
    while t < stop_ms {
        let fingerprint = id << 20 | t as u32;
        records.push(rec(t * MS, Event::Arrive, fingerprint, id, 500));
        records.push(rec(t * MS, Event::Enqueue, fingerprint, id, 500));
        records.push(rec((t + 1) * MS, Event::Depart, fingerprint, id, 500));
        t += gap_ms;
    }
}

/// Equal to 1e-4 (capacity is counted in whole bytes per bin).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * b.abs()
}

fn uplink(
    dir: &Path,
) -> (
    report::analysis::summary::DirectionSummary,
    report::analysis::summary::DirectionSeries,
) {
    let options = Options {
        flows: FlowSelection::All,
        ..Options::default()
    };
    let mut run = report::load(dir, &options).unwrap().remove(0);
    (run.summary.directions.remove(0), run.series.remove(0))
}

#[test]
fn a_cake_shaped_link_has_the_shapers_capacity() {
    // `link 1gbit --queue "cake bandwidth 500kbit"`: 400 kbit/s of traffic
    // (500 bytes every 10 ms) for 1 s.
    let dir = scratch("shaped");
    let mut records = Vec::new();
    flow(&mut records, 1, 0, 1000, 10);
    write_log(
        &dir.join("0-link.emulog"),
        &header(Some(1_000_000_000), Some(500_000)),
        &mut records,
    );
    let (d, series) = uplink(&dir);
    // The window runs to the last record, 991 ms.
    let window_s = 0.991;
    assert!(
        close(d.path.capacity_mbps.unwrap(), 0.5),
        "{:?}",
        d.path.capacity_mbps
    );
    assert_eq!(d.path.capacity_source, Some("queue shaper"));
    assert_eq!(d.shells[0].capacity_source, Some("queue shaper"));
    let delivered_mbit = 100.0 * 500.0 * 8.0 / 1e6;
    assert!(close(
        d.path.utilization.unwrap(),
        delivered_mbit / window_s / 0.5
    ));
    // The flow runs from the start: its active time is the window.
    assert!(close(
        d.path.utilization.unwrap(),
        d.path.window_utilization.unwrap()
    ));
    // The plots' capacity shading is the shaper's too.
    let capacity = series.capacity_mbps.unwrap();
    assert!(capacity[..9].iter().all(|&c| close(c, 0.5)), "{capacity:?}");
    std::fs::remove_dir_all(&dir).unwrap();

    // A shaper faster than the link leaves the link as the bottleneck.
    let dir = scratch("link-lower");
    let mut records = Vec::new();
    flow(&mut records, 1, 0, 1000, 10);
    write_log(
        &dir.join("0-link.emulog"),
        &header(Some(300_000), Some(500_000)),
        &mut records,
    );
    let (d, _) = uplink(&dir);
    assert!(close(d.path.capacity_mbps.unwrap(), 0.3));
    assert_eq!(d.path.capacity_source, Some("link rate"));
    std::fs::remove_dir_all(&dir).unwrap();

    // A shaper alone (`link --queue "cake bandwidth 500kbit"`, no rate).
    let dir = scratch("shaper-alone");
    let mut records = Vec::new();
    flow(&mut records, 1, 0, 1000, 10);
    write_log(
        &dir.join("0-link.emulog"),
        &header(None, Some(500_000)),
        &mut records,
    );
    let (d, _) = uplink(&dir);
    assert!(close(d.path.capacity_mbps.unwrap(), 0.5));
    assert_eq!(d.path.capacity_source, Some("queue shaper"));
    assert_eq!(d.bottleneck_shell, Some(0));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Packets of 1250 bytes (10 000 bits) of flow `id` at each of `times` (ms),
/// each delivered 1 ms later.
fn packets(records: &mut Vec<Record>, id: u32, times: impl Iterator<Item = u64>) {
    for t in times {
        let fingerprint = id << 20 | t as u32;
        records.push(rec(t * MS, Event::Arrive, fingerprint, id, 1250));
        records.push(rec(t * MS, Event::Enqueue, fingerprint, id, 1250));
        records.push(rec((t + 1) * MS, Event::Depart, fingerprint, id, 1250));
    }
}

#[test]
fn partly_overlapping_flows_have_common_window_shares_that_fit_the_capacity() {
    // A 10 Mbit/s link: flow 1 alone from 0 to 400 ms (a packet every ms),
    // both from 400 to 600 ms (a packet every 2 ms each), flow 2 alone from
    // 600 to 1000 ms.
    let dir = scratch("overlap");
    let mut records = Vec::new();
    packets(&mut records, 1, (0..400).chain((400..600).step_by(2)));
    packets(&mut records, 2, (401..600).step_by(2).chain(600..1000));
    write_log(
        &dir.join("0-link.emulog"),
        &header(Some(10_000_000), None),
        &mut records,
    );
    let (d, series) = uplink(&dir);
    assert_eq!(d.flows.len(), 2);
    let capacity = d.path.capacity_mbps.unwrap();
    assert!(close(capacity, 10.0), "{capacity}");

    // Over their own spans (598 ms each, 500 packets each) the flows seem
    // to get 8.36 Mbit/s each: together more than the link carries.
    let own: f64 = d.flows.iter().map(|f| f.throughput_mbps.unwrap()).sum();
    assert!(close(own, 2.0 * 5.0 / 0.598), "{own}");
    assert!(own > capacity);

    // The common window is the bins both are active in: 400 to 600 ms.
    assert_eq!(
        (d.fairness.common_from_s, d.fairness.common_to_s),
        (Some(0.4), Some(0.6))
    );
    // Delivered in it: flow 1's packet of 399 ms and its 100 shared ones,
    // flow 2's shared ones but the last (delivered at 600 ms): 101 and 99.
    let common: Vec<f64> = d
        .flows
        .iter()
        .map(|f| f.common_window_throughput_mbps.unwrap())
        .collect();
    assert!(close(common[0], 101.0 * 0.01 / 0.2), "{common:?}");
    assert!(close(common[1], 99.0 * 0.01 / 0.2), "{common:?}");
    assert!(common.iter().sum::<f64>() <= capacity * (1.0 + 1e-9));
    let shares: Vec<f64> = d
        .flows
        .iter()
        .map(|f| f.common_window_share.unwrap())
        .collect();
    assert!(close(shares[0], 101.0 / 200.0) && close(shares[1], 99.0 / 200.0));
    // Over the report window, the flows add up to the direction's figure.
    let window: f64 = d
        .flows
        .iter()
        .map(|f| f.window_throughput_mbps.unwrap())
        .sum();
    assert!(close(window, d.path.window_throughput_mbps.unwrap()));

    // Jain's index over the common window, and per bin only where both
    // flows are active (bins 4 and 5).
    let expected = jain(&common);
    assert!(close(d.fairness.jain.unwrap(), expected));
    let defined: Vec<usize> = (0..series.jain.len())
        .filter(|&b| series.jain[b].is_some())
        .collect();
    assert_eq!(defined, vec![4, 5]);
    // Own-span averages are equal, so that index says 1.
    assert!(close(d.fairness.jain_over_own_spans.unwrap(), 1.0));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn jain(values: &[f64]) -> f64 {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|x| x * x).sum();
    sum * sum / (values.len() as f64 * squares)
}

/// A link idle but for a probe's small packets for 2 s (a run setting up,
/// a ping before the transfer), then saturated by one flow: the headline
/// utilization covers the flow's active time (full), the whole window's
/// (half) stands beside it.
#[test]
fn utilization_covers_the_time_the_flows_were_active() {
    let dir = scratch("active");
    let mut records = Vec::new();
    // 60-byte packets every 100 ms until 2 s: not a competing flow.
    for k in 0..20u64 {
        let fingerprint = 9 << 20 | k as u32;
        records.push(rec(k * 100 * MS, Event::Arrive, fingerprint, 9, 60));
        records.push(rec(k * 100 * MS, Event::Enqueue, fingerprint, 9, 60));
        records.push(rec(k * 100 * MS + MS, Event::Depart, fingerprint, 9, 60));
    }
    // 500 bytes every 4 ms from 2 s: 1 Mbit/s, the link's rate.
    flow(&mut records, 1, 2000, 4000, 4);
    write_log(
        &dir.join("0-link.emulog"),
        &header(Some(1_000_000), None),
        &mut records,
    );
    let (d, _) = uplink(&dir);
    // Deliveries from 2001 ms to 3997 ms (the window's end): bins 20 to 39,
    // the last one 97 ms long.
    let active_s = 1.997;
    assert_eq!(d.path.active_from_s, Some(2.0));
    assert!(close(d.path.active_to_s.unwrap(), 3.997));
    let mbit = 500.0 * 500.0 * 8.0 / 1e6;
    assert!(close(
        d.path.active_throughput_mbps.unwrap(),
        mbit / active_s
    ));
    assert!(close(d.path.active_capacity_mbps.unwrap(), 1.0));
    assert!(close(d.path.utilization.unwrap(), mbit / active_s));
    let whole = (mbit + 20.0 * 60.0 * 8.0 / 1e6) / 3.997;
    assert!(close(d.path.window_utilization.unwrap(), whole));
    assert!(d.path.window_utilization.unwrap() < 0.51);
    std::fs::remove_dir_all(&dir).unwrap();
}
