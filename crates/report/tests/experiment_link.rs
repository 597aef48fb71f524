//! A link's log in an experiment's run (`RUN/links/NAME/`) takes the run's
//! TCP samples, and the report says the round trip set beside srtt is that
//! link's alone; a shell run's own samples cover its whole path. Either
//! way, a connection none of whose packets the log shows (iperf3's control
//! connection) is left out.

use emu_core::flow::FlowTuple;
use emu_core::log::{write_log_file, Direction, Event, LogHeader, Record};
use emu_core::Nanos;
use report::Options;
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
const ORIGIN: Nanos = 5_000 * MS;
const CSV_HEADER: &str = "time_s,inode,src,sport,dst,dport,state,congestion_control,srtt_us,rttvar_us,min_rtt_us,cwnd,ssthresh,mss,unacked,lost,total_retrans,pacing_rate_Bps,delivery_rate_Bps,bytes_acked,bytes_received,bytes_sent,bytes_retrans,delivered,delivered_ce,ecn,ecn_seen";

/// `run` gets the samples (`clock.json`, `tcp/`), `logs` one log.
fn write(run: &Path, logs: &Path) {
    std::fs::create_dir_all(run.join("tcp")).unwrap();
    std::fs::create_dir_all(logs).unwrap();
    let clock = format!("{{\"flows_started_monotonic_ns\": {ORIGIN}}}");
    std::fs::write(run.join("clock.json"), clock).unwrap();
    // The test's connection (port 40000), and its control connection
    // (40001), none of whose packets are in the log.
    let row = |t: f64, port: u16| {
        format!("{t},7,10.0.0.1,{port},10.0.0.2,5201,1,cubic,41000,0,40000,10,0,1448,0,0,0,0,0,1000,0,0,0,0,0,0,0")
    };
    let csv = [
        CSV_HEADER.to_string(),
        row(0.1, 40000),
        row(0.1, 40001),
        row(0.2, 40000),
    ]
    .join("\n");
    std::fs::write(run.join("tcp/flow.csv"), csv).unwrap();
    let record = |time: Nanos, event: Event| Record {
        time: ORIGIN + time,
        flow: 1,
        fingerprint: 1,
        bytes: 1500,
        event,
        ..Record::default()
    };
    let tuple = FlowTuple {
        protocol: 6,
        source: "10.0.0.1".parse().unwrap(),
        destination: "10.0.0.2".parse().unwrap(),
        source_port: 40000,
        destination_port: 5201,
    };
    let (named, n) = tuple.records(ORIGIN, 1, 0, Direction::Uplink);
    let mut records = named[..n].to_vec();
    records.extend([
        record(0, Event::Arrive),
        record(0, Event::Enqueue),
        record(MS, Event::Depart),
    ]);
    let header = LogHeader {
        description: "link 20mbit".into(),
        monotonic_origin_ns: ORIGIN,
        ..LogHeader::default()
    };
    write_log_file(&logs.join("0-link.emulog"), &header, &records).unwrap();
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("emu-experiment-link-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn partial_path_warnings(dir: &Path) -> (usize, usize) {
    let run = report::load(dir, &Options::default()).unwrap().remove(0);
    let warned = run
        .summary
        .warnings
        .iter()
        .filter(|w| w.contains("is one link of an experiment"))
        .count();
    (run.summary.tcp.len(), warned)
}

#[test]
fn an_experiments_link_says_its_round_trip_is_the_links_alone() {
    let run = scratch("run");
    let link = run.join("links/bottleneck-0");
    write(&run, &link);
    assert_eq!(partial_path_warnings(&link), (1, 1));
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_shell_runs_own_samples_cover_its_path() {
    let dir = scratch("shell");
    write(&dir, &dir);
    assert_eq!(partial_path_warnings(&dir), (1, 0));
    std::fs::remove_dir_all(&dir).unwrap();
}
