//! AQMs mark real ECN TCP flows through real shells: CoDel's CE marks and
//! cake's SCE ramp, as the per-packet log records them.
//!
//! They need root; see [`support`] for how they run.

mod support;

use emu_core::log::{Direction, Event, LogReader};
use std::path::Path;
use support::*;

/// Three seconds of an ECN-enabled TCP flow from inside `link 20mbit`
/// with `queue` on the uplink, logged to `dir`.
fn ecn_flow_through(dir: &Path, port: &str, queue: &str) {
    let mut server = iperf3_server(port);
    let out = run(&[
        "--log",
        &dir.display().to_string(),
        "link",
        "20mbit",
        "--uplink-queue",
        queue,
        "--",
        "sh",
        "-c",
        &format!("sysctl -qw net.ipv4.tcp_ecn=1 && iperf3 -c $EMU_BASE -p {port} -t 3 >/dev/null"),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// A TCP flow with ECN through `link --queue "codel … ecn"`: CoDel marks
/// its packets CE instead of dropping them, and the per-packet log shows it.
#[test]
fn codel_ce_marks_an_ecn_tcp_flow_and_the_log_records_it() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("ecn");
    ecn_flow_through(&dir, "5931", "codel target 1ms interval 10ms ecn");
    let (mut ce_marks, mut aqm_drops, mut ect_departures) = (0, 0, 0);
    for record in LogReader::open(&dir.join("0-link.emulog")).unwrap() {
        let r = record.unwrap();
        if r.direction != Direction::Uplink {
            continue;
        }
        match r.event {
            Event::Mark if r.detail == emu_core::log::Mark::Ce as u8 => ce_marks += 1,
            // Not-ECT packets (pure ACKs, SYNs) are still dropped, as they must be.
            Event::Drop
                if r.drop_reason() == Some(emu_core::log::DropReason::Aqm) && r.ecn != 0 =>
            {
                eprintln!("ECN-capable packet dropped by the AQM: {r:?}");
                aqm_drops += 1
            }
            Event::Depart if r.ecn != 0 => ect_departures += 1,
            _ => {}
        }
    }
    eprintln!("codel ecn: {ce_marks} CE marks, {aqm_drops} AQM drops of ECN-capable packets, {ect_departures} ECN-capable departures");
    assert!(ect_departures > 1000, "the flow negotiated ECN");
    assert!(ce_marks > 0, "CoDel marked the flow");
    assert_eq!(aqm_drops, 0, "ECN-capable packets are marked, not dropped");
    let summary = std::fs::read_to_string(dir.join("summary-0.json")).unwrap();
    assert!(
        summary.contains(&format!("\"marked_ce\":{ce_marks}")),
        "{summary}"
    );
}

/// A TCP flow with ECN through cake with SCE marking: the ramp turns
/// ECT(0) packets into ECT(1) (never touching Not-ECT or CE), and the log
/// and summary record each such mark.
#[test]
fn cake_sce_ramp_marks_an_ecn_tcp_flow_ect1_in_the_log() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("sce");
    ecn_flow_through(&dir, "5932", "cake besteffort sce");
    let (mut ect1_marks, mut ect1_departures, mut ect0_departures) = (0, 0, 0);
    for record in LogReader::open(&dir.join("0-link.emulog")).unwrap() {
        let r = record.unwrap();
        if r.direction != Direction::Uplink {
            continue;
        }
        match r.event {
            Event::Mark if r.detail == emu_core::log::Mark::Ect1 as u8 => {
                assert_eq!(r.ecn, 0b01, "a mark leaves the packet ECT(1): {r:?}");
                ect1_marks += 1
            }
            Event::Depart if r.ecn == 0b01 => ect1_departures += 1,
            Event::Depart if r.ecn == 0b10 => ect0_departures += 1,
            _ => {}
        }
    }
    eprintln!("cake sce: {ect1_marks} ECT(1) marks, {ect1_departures} ECT(1) and {ect0_departures} ECT(0) departures");
    assert!(ect0_departures > 100, "the flow negotiated ECN");
    assert!(ect1_marks > 0, "the SCE ramp marked the flow");
    // The sender only sends ECT(0), so every ECT(1) packet that left was
    // one the ramp marked (in flight at exit is the only difference).
    assert!(ect1_departures <= ect1_marks && ect1_marks - ect1_departures < 200);
    let summary = std::fs::read_to_string(dir.join("summary-0.json")).unwrap();
    assert!(
        summary.contains(&format!("\"marked_ect1\":{ect1_marks}")),
        "{summary}"
    );
}
