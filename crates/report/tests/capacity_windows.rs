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
    report::analysis::DirectionSummary,
    report::analysis::DirectionSeries,
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
