//! Flows are named by the protocol and 5-tuple the log's flow records
//! carry, as the first shell saw them and as they left the path, and
//! `--flows port:N` / `addr:IP` pick them out.

use emu_core::flow::FlowTuple;
use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
use emu_core::Nanos;
use report::{FlowMatch, FlowSelection, Options};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const ORIGIN: Nanos = 7_000 * MS;

fn header(shell: u8, description: &str) -> LogHeader {
    LogHeader {
        shell,
        description: description.into(),
        monotonic_origin_ns: ORIGIN,
        realtime_origin_ns: 0,
        rate_bps: Some([Some(10_000_000), Some(10_000_000)]),
        command_line: "emu flow names".into(),
        traces: None,
        ..LogHeader::default()
    }
}

fn rec(shell: u8, t: Nanos, event: Event, fingerprint: u32, flow: u32) -> Record {
    Record {
        time: ORIGIN + t,
        sojourn: 0,
        flow,
        fingerprint,
        bytes: 1000,
        queue_bytes: 0,
        queue_packets: 0,
        shell,
        direction: Direction::Uplink,
        event,
        detail: 0,
        ecn: 0,
    }
}

fn tuple(source: &str, sport: u16, destination: &str, dport: u16) -> FlowTuple {
    FlowTuple {
        protocol: 6,
        source: source.parse().unwrap(),
        destination: destination.parse().unwrap(),
        source_port: sport,
        destination_port: dport,
    }
}

fn write_log(path: &Path, header: &LogHeader, records: &[Record]) {
    let mut out = Vec::new();
    write_header(&mut out, header).unwrap();
    for r in records {
        let mut bytes = [0u8; RECORD_SIZE];
        r.encode(&mut bytes);
        out.extend_from_slice(&bytes);
    }
    std::fs::write(path, out).unwrap();
}

/// Two TCP flows to iperf3 ports 5201 and 5202 cross shell 1 (inner) and
/// shell 0 (outer), whose NAT rewrites the source address: the outer shell
/// sees them under other hashes. Flow 5201 sends twice as many packets.
fn write_run(dir: &Path, with_flow_records: bool) {
    std::fs::create_dir_all(dir).unwrap();
    // (inner id, outer id, inner tuple, outer tuple, packets every 10 ms)
    let flows = [
        (
            0x1111_0001u32,
            0x2222_0001u32,
            tuple("10.0.0.2", 40001, "100.64.0.1", 5201),
            tuple("192.168.7.2", 40001, "100.64.0.1", 5201),
            2u32,
        ),
        (
            0x1111_0002,
            0x2222_0002,
            tuple("10.0.0.2", 40002, "100.64.0.1", 5202),
            tuple("192.168.7.2", 40002, "100.64.0.1", 5202),
            1,
        ),
    ];
    let (mut inner, mut outer) = (Vec::new(), Vec::new());
    let mut fingerprint = 0;
    for (inner_id, outer_id, inner_tuple, outer_tuple, per_step) in &flows {
        if with_flow_records {
            let (r, n) = inner_tuple.records(ORIGIN, *inner_id, 1, Direction::Uplink);
            inner.extend_from_slice(&r[..n]);
            let (r, n) = outer_tuple.records(ORIGIN + MS, *outer_id, 0, Direction::Uplink);
            outer.extend_from_slice(&r[..n]);
        }
        for step in 0..100u64 {
            for _ in 0..*per_step {
                fingerprint += 1;
                let t = step * 10 * MS;
                inner.push(rec(1, t, Event::Arrive, fingerprint, *inner_id));
                inner.push(rec(1, t, Event::Enqueue, fingerprint, *inner_id));
                inner.push(rec(1, t + MS, Event::Depart, fingerprint, *inner_id));
                outer.push(rec(0, t + MS, Event::Arrive, fingerprint, *outer_id));
                outer.push(rec(0, t + MS, Event::Enqueue, fingerprint, *outer_id));
                outer.push(rec(0, t + 6 * MS, Event::Depart, fingerprint, *outer_id));
            }
        }
    }
    inner.sort_by_key(|r| r.time);
    outer.sort_by_key(|r| r.time);
    write_log(
        &dir.join("1-link.emulog"),
        &header(1, "link 10mbit"),
        &inner,
    );
    write_log(&dir.join("0-delay.emulog"), &header(0, "delay 5"), &outer);
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-flow-names-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn uplink(dir: &Path, flows: FlowSelection) -> report::Run {
    let options = Options {
        flows,
        ..Options::default()
    };
    report::load(dir, &options).unwrap().remove(0)
}

#[test]
fn two_flows_are_named_by_their_ports_as_they_entered_and_left() {
    let dir = scratch("named");
    write_run(&dir, true);
    let run = uplink(&dir, FlowSelection::All);
    let d = &run.summary.directions[0];
    assert_eq!(d.flows.len(), 2);
    // Biggest first: the 5201 flow, id kept as the hash the first shell saw.
    assert_eq!(d.flows[0].flow, "11110001");
    assert_eq!(
        d.flows[0].name.as_deref(),
        Some("tcp 10.0.0.2:40001 → 100.64.0.1:5201 (left as tcp 192.168.7.2:40001 → 100.64.0.1:5201)")
    );
    assert_eq!(d.flows[0].tuple.as_ref().unwrap().destination_port, 5201);
    assert_eq!(
        d.flows[1].left_as.as_ref().unwrap().source,
        "192.168.7.2".parse::<IpAddr>().unwrap()
    );
    assert_eq!(d.flows[1].tuple.as_ref().unwrap().destination_port, 5202);
    // The plot legends use the names.
    let names: Vec<&str> = run.series[0]
        .flows
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(names[0].starts_with("tcp 10.0.0.2:40001 → 100.64.0.1:5201"));
    assert!(names[1].starts_with("tcp 10.0.0.2:40002 → 100.64.0.1:5202"));
    // summary.json keeps the hash as the id, beside the name.
    let json = serde_json::to_value(&run.summary).unwrap();
    let row = &json["directions"][0]["flows"][1];
    assert_eq!(row["flow"], "11110002");
    assert_eq!(row["tuple"]["destination_port"], 5202);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn flows_are_selected_by_port_address_or_id() {
    let dir = scratch("select");
    write_run(&dir, true);
    let pick = |matches: Vec<FlowMatch>| -> Vec<String> {
        let run = uplink(&dir, FlowSelection::Matching(matches));
        let d = &run.summary.directions[0];
        d.flows.iter().map(|f| f.flow.clone()).collect()
    };
    assert_eq!(pick(vec![FlowMatch::Port(5202)]), vec!["11110002"]);
    assert_eq!(pick(vec![FlowMatch::Port(40001)]), vec!["11110001"]);
    // As it left the path, after NAT: both flows.
    let natted = "192.168.7.2".parse().unwrap();
    assert_eq!(pick(vec![FlowMatch::Address(natted)]).len(), 2);
    assert!(pick(vec![FlowMatch::Port(80)]).is_empty());
    assert_eq!(
        pick(vec![FlowMatch::Id(0x1111_0002), FlowMatch::Port(5201)]),
        vec!["11110001", "11110002"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn logs_without_flow_records_still_report_flows_by_id() {
    let dir = scratch("unnamed");
    write_run(&dir, false);
    let run = uplink(&dir, FlowSelection::All);
    let d = &run.summary.directions[0];
    assert_eq!(d.flows.len(), 2);
    assert_eq!(d.flows[0].name, None);
    assert_eq!(run.series[0].flows[0].0, "flow 11110001");
    std::fs::remove_dir_all(&dir).unwrap();
}
