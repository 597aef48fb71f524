//! Who Jain's index takes, and what loss counts: two equal bulk flows
//! share a link with a reverse flow's acknowledgements and a ping; one
//! bulk flow loses a packet, the other ends with one still in flight.

use emu_core::flow::FlowTuple;
use emu_core::log::{write_log_file, Direction, Event, LogHeader, Record};
use emu_core::Nanos;
use report::{FlowMatch, FlowSelection, Options};
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const ORIGIN: Nanos = 3_000 * MS;

struct Flow {
    id: u32,
    tuple: FlowTuple,
    bytes: u32,
}

fn flow(id: u32, protocol: u8, sport: u16, dport: u16, bytes: u32) -> Flow {
    Flow {
        id,
        tuple: FlowTuple {
            protocol,
            source: "10.0.0.2".parse().unwrap(),
            destination: "100.64.0.1".parse().unwrap(),
            source_port: sport,
            destination_port: dport,
        },
        bytes,
    }
}

fn rec(t: Nanos, event: Event, fingerprint: u32, f: &Flow, detail: u8) -> Record {
    Record {
        time: ORIGIN + t,
        flow: f.id,
        fingerprint,
        bytes: f.bytes,
        event,
        detail,
        ..Record::default()
    }
}

/// Flows 1 and 2 (bulk, 1000-byte packets, one every 10 ms for a second),
/// 3 (a reverse flow's acknowledgements, 52 bytes), 4 (ping, 84 bytes,
/// ICMP). Flow 1's last packet is dropped; flow 2 has one more packet,
/// read at the end and never delivered.
fn write_run(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let flows = [
        flow(1, 6, 40001, 5201, 1000),
        flow(2, 6, 40002, 5202, 1000),
        flow(3, 6, 5203, 40003, 52),
        flow(4, 1, 0, 0, 84),
    ];
    let mut records = Vec::new();
    for f in &flows {
        let (r, n) = f.tuple.records(ORIGIN, f.id, 0, Direction::Uplink);
        records.extend_from_slice(&r[..n]);
    }
    let mut fingerprint = 0;
    for step in 0..100u64 {
        for f in &flows {
            fingerprint += 1;
            let t = step * 10 * MS;
            records.push(rec(t, Event::Arrive, fingerprint, f, 0));
            if f.id == 1 && step == 99 {
                records.push(rec(t, Event::Drop, fingerprint, f, 1));
                continue;
            }
            records.push(rec(t, Event::Enqueue, fingerprint, f, 0));
            records.push(rec(t + MS, Event::Depart, fingerprint, f, 0));
        }
    }
    records.push(rec(995 * MS, Event::Arrive, fingerprint + 1, &flows[1], 0));
    records.sort_by_key(|r| r.time);
    let header = LogHeader {
        description: "link 10mbit".into(),
        monotonic_origin_ns: ORIGIN,
        rate_bps: Some([Some(10_000_000), Some(10_000_000)]),
        ..LogHeader::default()
    };
    write_log_file(&dir.join("0-link.emulog"), &header, &records).unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-fairness-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn uplink(dir: &Path, flows: FlowSelection) -> report::analysis::summary::DirectionSummary {
    let options = Options {
        flows,
        ..Options::default()
    };
    let mut run = report::load(dir, &options).unwrap().remove(0);
    run.summary.directions.remove(0)
}

#[test]
fn acknowledgements_and_pings_are_shown_but_not_in_jains_index() {
    let dir = scratch("who");
    write_run(&dir);
    let d = uplink(&dir, FlowSelection::All);
    assert_eq!(d.flows.len(), 4);
    let in_index = |id: &str| d.flows.iter().find(|f| f.flow == id).unwrap().in_fairness;
    assert!(in_index("00000001") && in_index("00000002"));
    assert!(!in_index("00000003"), "acknowledgements");
    assert!(!in_index("00000004"), "ping");
    assert_eq!(d.fairness.flows, 2);
    // 99 packets against 100 over the common window.
    let jain = d.fairness.jain.unwrap();
    assert!(jain > 0.9999, "{jain}");
    // Counted with them, the index would be far lower.
    let all_four =
        report::analysis::summary::jain(d.flows.iter().map(|f| f.delivered_bytes as f64));
    assert!(all_four.unwrap() < 0.6);
    // Flows the user names are theirs to compare.
    let named = uplink(
        &dir,
        FlowSelection::Matching(vec![FlowMatch::Port(5201), FlowMatch::Port(5203)]),
    );
    assert_eq!(named.fairness.flows, 2);
    assert!(named.flows.iter().all(|f| f.in_fairness));
    assert!(named.fairness.jain.unwrap() < 0.6);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_packet_in_flight_at_the_end_is_not_lost() {
    let dir = scratch("loss");
    write_run(&dir);
    let d = uplink(&dir, FlowSelection::All);
    let loss = |id: &str| d.flows.iter().find(|f| f.flow == id).unwrap().loss.unwrap();
    assert_eq!(loss("00000002"), 0.0);
    assert!((loss("00000001") - 0.01).abs() < 1e-12);
    assert_eq!(d.path.in_flight_at_end, 1);
    assert_eq!(d.path.dropped, 1);
    // One drop of the 400 packets done with (399 delivered); the one in
    // flight is neither.
    assert_eq!(d.path.delivered, 399);
    assert!((d.path.loss.unwrap() - 1.0 / 400.0).abs() < 1e-12);
    std::fs::remove_dir_all(&dir).unwrap();
}
