//! Reports of synthetic logs whose every figure is computed by hand.

use emu_core::log::{write_header, Direction, DropReason, Event, LogHeader, Record, RECORD_SIZE};
use emu_core::Nanos;
use report::analysis::summary::DirectionSummary;
use report::{FlowSelection, Options};
use std::path::{Path, PathBuf};

const MS: Nanos = 1_000_000;
/// Shells start at this monotonic time; reports count from it.
const ORIGIN: Nanos = 5_000 * MS;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emu-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn header(shell: u8, description: &str, rate_bps: Option<u64>) -> LogHeader {
    LogHeader {
        shell,
        description: description.into(),
        monotonic_origin_ns: ORIGIN,
        realtime_origin_ns: 1_800_000_000 * 1_000_000_000,
        rate_bps: Some([rate_bps, rate_bps]),
        command_line: "emu synthetic".into(),
        traces: None,
        ..LogHeader::default()
    }
}

/// A record at `t` (from the origin) in the uplink direction.
fn rec(shell: u8, t: Nanos, event: Event, fingerprint: u32, flow: u32, bytes: u32) -> Record {
    Record {
        time: ORIGIN + t,
        sojourn: 0,
        flow,
        fingerprint,
        bytes,
        queue_bytes: 0,
        queue_packets: 0,
        shell,
        direction: Direction::Uplink,
        event,
        detail: 0,
        ecn: 0,
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

fn report(path: &Path, options: Options) -> report::Run {
    let mut runs = report::load(path, &options).unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

fn uplink(run: &report::Run) -> &DirectionSummary {
    run.summary
        .directions
        .iter()
        .find(|d| d.direction == "uplink")
        .expect("an uplink")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// One link shell: 1000 packets of 1250 bytes, one every ms from 0.5 ms,
/// packet k delayed (k mod 100) + 1 ms. Flow 1 sends 3 packets of every
/// 4, flow 2 the fourth.
fn constant_rate_records() -> Vec<Record> {
    let mut events = Vec::new();
    for k in 0..1000u64 {
        let sent = k * MS + MS / 2;
        let delay = (k % 100 + 1) * MS;
        let flow = if k % 4 == 3 { 2 } else { 1 };
        let fp = k as u32;
        events.push(rec(1, sent, Event::Arrive, fp, flow, 1250));
        events.push(rec(1, sent, Event::Enqueue, fp, flow, 1250));
        let mut depart = rec(1, sent + delay, Event::Depart, fp, flow, 1250);
        depart.sojourn = delay;
        events.push(depart);
    }
    events.sort_by_key(|r| r.time);
    events
}

#[test]
fn a_constant_rate_gives_exactly_that_throughput_and_known_percentiles() {
    let dir = scratch("constant");
    write_log(
        &dir.join("1-link.emulog"),
        &header(1, "link 12mbit", Some(12_000_000)),
        &constant_rate_records(),
    );
    let run = report(&dir, Options::default());
    let d = uplink(&run);
    assert_eq!(
        (d.path.arrivals, d.path.delivered, d.path.dropped),
        (1000, 1000, 0)
    );
    // Deliveries from 1.5 ms (packet 0) to 999.5 + 100 ms (packet 999):
    // 10 Mbit/s of bits over a 1098 ms span.
    let first = 1.5e-3;
    let last = 0.9995 + 0.100;
    let expected = 1000.0 * 1250.0 * 8.0 / (last - first) / 1e6;
    assert!(close(d.path.throughput_mbps.unwrap(), expected));
    assert_eq!(d.pantheon.throughput_mbps, d.path.throughput_mbps);
    // The window ends with the last record (1099.5 ms).
    let window = 1.0995;
    assert!(close(d.to_s, window));
    assert!(close(d.path.window_throughput_mbps.unwrap(), 10.0 / window));
    assert!(close(d.path.capacity_mbps.unwrap(), 12.0));
    assert!(close(
        d.path.window_utilization.unwrap(),
        10.0 / window / 12.0
    ));
    // The flows deliver from the first bin to the last: active all along.
    assert_eq!(d.path.utilization, d.path.window_utilization);
    assert_eq!(
        (d.path.active_from_s, d.path.active_to_s),
        (Some(0.0), Some(window))
    );
    // Delays 1..=100 ms, each 10 times.
    let delay = d.path.one_way_delay.as_ref().unwrap();
    assert_eq!(delay.count, 1000);
    assert!(close(delay.mean_ms, 50.5));
    assert_eq!((delay.min_ms, delay.max_ms), (1.0, 100.0));
    // Nearest rank: the 500th, 950th and 990th smallest.
    assert_eq!(
        (delay.p50_ms, delay.p95_ms, delay.p99_ms),
        (50.0, 95.0, 99.0)
    );
    // numpy 'nearest': index round(0.95 · 999) = 949 → 95 ms.
    assert_eq!(d.pantheon.delay_p95_ms, Some(95.0));
    assert_eq!(d.pantheon.loss, Some(0.0));
    // Mahimahi's figures of the link: delays sorted, index ⌊0.95·1000⌋ = 950 → 96 ms.
    let m = d.shells[0].mahimahi.as_ref().unwrap();
    assert_eq!(m.queueing_delay_p95_ms, 96);

    // Throughput per 100 ms bin: deliveries in bin b are the packets sent
    // in [b·100 − (delay), ...); with delays cycling through 1..=100 ms
    // every 100 packets, each full bin from 100 ms on delivers 100 packets.
    let series = &run.series[0];
    assert_eq!(series.time_s.len(), 11);
    for b in 1..10 {
        assert!(
            close(series.throughput_mbps[b], 10.0),
            "bin {b}: {}",
            series.throughput_mbps[b]
        );
        assert!(close(series.ingress_mbps[b], 10.0));
        assert!(close(series.capacity_mbps.as_ref().unwrap()[b], 12.0));
    }
    // Jain's index of 3:1 throughputs: (3 + 1)² / (2 · (9 + 1)) = 0.8,
    // overall and in every bin.
    assert_eq!(d.fairness.flows, 2);
    let flow_tput: Vec<f64> = d.flows.iter().map(|f| f.delivered_bytes as f64).collect();
    assert_eq!(flow_tput, vec![750.0 * 1250.0, 250.0 * 1250.0]);
    let jain = d.fairness.jain.unwrap();
    // The flows' spans differ by a ms or two, so their averages are not
    // exactly 3:1; the bins are.
    assert!((jain - 0.8).abs() < 0.002, "{jain}");
    for b in 1..10 {
        assert!(close(series.jain[b].unwrap(), 0.8), "bin {b}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_packet_is_followed_across_shells_and_drops_are_counted_by_reason() {
    // Uplink crosses shell 1 (link, innermost) then shell 0 (delay 20 ms).
    let dir = scratch("nested");
    let mut inner = Vec::new();
    let mut outer = Vec::new();
    for k in 0..10u64 {
        let fp = 100 + k as u32;
        let t = k * 10 * MS;
        inner.push(rec(1, t, Event::Arrive, fp, 7, 1000));
        inner.push(rec(1, t, Event::Enqueue, fp, 7, 1000));
        // The link holds it 3 ms; NAT changes the flow hash outside.
        inner.push(rec(1, t + 3 * MS, Event::Depart, fp, 7, 1000));
        outer.push(rec(0, t + 3 * MS, Event::Arrive, fp, 99, 1000));
        if k == 4 {
            let mut drop = rec(0, t + 3 * MS, Event::Drop, fp, 99, 1000);
            drop.detail = DropReason::Loss as u8;
            outer.push(drop);
            continue;
        }
        outer.push(rec(0, t + 3 * MS, Event::Enqueue, fp, 99, 1000));
        outer.push(rec(0, t + 23 * MS, Event::Depart, fp, 99, 1000));
    }
    // A packet sent from the namespace between the shells.
    outer.push(rec(0, 95 * MS, Event::Arrive, 7777, 55, 80));
    outer.push(rec(0, 95 * MS, Event::Enqueue, 7777, 55, 80));
    outer.push(rec(0, 115 * MS, Event::Depart, 7777, 55, 80));
    outer.sort_by_key(|r| r.time);
    write_log(
        &dir.join("0-delay.emulog"),
        &header(0, "delay 20 ms", None),
        &outer,
    );
    write_log(
        &dir.join("1-link.emulog"),
        &header(1, "link 10mbit", Some(10_000_000)),
        &inner,
    );
    let run = report(&dir, Options::default());
    let d = uplink(&run);
    assert_eq!((d.path.entry_shell, d.path.exit_shell), (1, 0));
    assert_eq!(
        (d.path.arrivals, d.path.delivered, d.path.dropped),
        (10, 9, 1)
    );
    assert_eq!(d.path.drops.get("loss"), Some(&1));
    assert_eq!(d.path.entered_mid_path, 1);
    assert!(close(d.path.loss.unwrap(), 0.1));
    // 3 ms in the link plus 20 ms of delay, for every packet.
    let delay = d.path.one_way_delay.as_ref().unwrap();
    assert_eq!((delay.min_ms, delay.max_ms, delay.count), (23.0, 23.0, 9));
    // Flows keep the id the first shell saw, whatever NAT did.
    assert_eq!(d.flows.len(), 1);
    assert_eq!(d.flows[0].flow, "00000007");
    // Per shell: the link's transit is 3 ms, the delay shell's 20 ms.
    let shell = |n: u8| d.shells.iter().find(|s| s.shell == n).unwrap();
    assert_eq!(shell(1).transit.as_ref().unwrap().max_ms, 3.0);
    assert_eq!(shell(0).transit.as_ref().unwrap().max_ms, 20.0);
    assert_eq!(shell(0).arrivals, 11);
    assert_eq!(d.bottleneck_shell, Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn queue_marks_and_the_window_are_reported() {
    let dir = scratch("queue");
    let mut records = Vec::new();
    // Queue: 3000 bytes from 0 to 50 ms, then 1000 until the end at 100 ms.
    let mut r = rec(0, 0, Event::Arrive, 1, 1, 1500);
    r.queue_bytes = 0;
    records.push(r);
    let mut r = rec(0, 0, Event::Enqueue, 1, 1, 1500);
    r.queue_bytes = 3000;
    r.queue_packets = 2;
    records.push(r);
    let mut mark = rec(0, 10 * MS, Event::Mark, 1, 1, 1500);
    mark.detail = 16;
    mark.queue_bytes = 3000;
    mark.queue_packets = 2;
    records.push(mark);
    let mut sce = mark;
    sce.detail = 17;
    records.push(sce);
    let mut r = rec(0, 50 * MS, Event::Depart, 1, 1, 1500);
    r.queue_bytes = 1000;
    r.queue_packets = 1;
    records.push(r);
    let mut r = rec(0, 100 * MS, Event::Arrive, 2, 1, 100);
    r.queue_bytes = 1000;
    r.queue_packets = 1;
    records.push(r);
    write_log(
        &dir.join("0-link.emulog"),
        &header(0, "link", None),
        &records,
    );
    let options = Options {
        bin: 50 * MS,
        ..Options::default()
    };
    let run = report(&dir, options);
    let d = uplink(&run);
    let q = &d.shells[0].queue;
    assert!(close(q.mean_bytes, 2000.0), "{}", q.mean_bytes);
    assert_eq!((q.max_bytes, q.max_packets), (3000, 2));
    assert_eq!((d.path.marks.ce, d.path.marks.ect1), (1, 1));
    assert_eq!(d.path.marks.ce_per_delivered, Some(1.0));
    let s = &run.series[0];
    assert_eq!(s.queue_bytes_mean, vec![3000.0, 1000.0]);
    assert_eq!(s.ce_marks, vec![1, 0]);

    // A window from 20 ms leaves out the arrival and the marks.
    let options = Options {
        from: 20 * MS,
        bin: 50 * MS,
        flows: FlowSelection::All,
        to: None,
    };
    let d = report(&dir, options).summary.directions.remove(0);
    assert_eq!((d.path.arrivals, d.path.delivered), (1, 1));
    assert_eq!(d.path.marks.ce, 0);
    // Its delay is still measured from the arrival before the window.
    assert_eq!(d.path.one_way_delay.unwrap().max_ms, 50.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_log_is_reported_up_to_the_damage_with_its_offset() {
    let dir = scratch("truncated");
    let path = dir.join("1-link.emulog");
    let header = header(1, "link 12mbit", Some(12_000_000));
    write_log(&path, &header, &constant_rate_records());
    let mut bytes = std::fs::read(&path).unwrap();
    let header_len = bytes.len() - 3000 * RECORD_SIZE;
    // Keep 600 whole records and 20 bytes of the next.
    bytes.truncate(header_len + 600 * RECORD_SIZE + 20);
    std::fs::write(&path, &bytes).unwrap();
    let run = report(&dir, Options::default());
    assert_eq!(run.summary.errors.len(), 1, "{:?}", run.summary.errors);
    let error = &run.summary.errors[0];
    let offset = (header_len + 600 * RECORD_SIZE).to_string();
    assert!(error.contains(&format!("at byte {offset}")), "{error}");
    assert!(error.contains("truncated record"), "{error}");
    // 600 records: 200 packets' arrive, enqueue and (for the early ones)
    // depart, in time order.
    let d = uplink(&run);
    assert!(
        d.path.arrivals > 150 && d.path.arrivals < 300,
        "{}",
        d.path.arrivals
    );
    assert!(d.path.delivered > 0);
    // Damage in the magic is an error: nothing to report.
    std::fs::write(&path, b"EMULOX\0\x01").unwrap();
    let e = report::load(&dir, &Options::default()).unwrap_err();
    assert!(e.contains("not an emu log"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_mahimahi_log_gets_pantheon_and_mahimahi_figures() {
    let dir = scratch("mahimahi");
    let path = dir.join("up.log");
    // 4 arrivals of 1504; one tail drop; opportunities every ms 0..=10;
    // departures at 2, 4, 6 ms with delays 2, 3, 4 ms.
    let mut text = String::from(
        "# mahimahi mm-link (Uplink) [12mbps.trace] > up.log\n\
         # command line: mm-link 12mbps.trace 12mbps.trace\n\
         # queue: droptail [packets=2]\n\
         # init timestamp: 1700000000000\n\
         # base timestamp: 0\n\
         0 + 1504\n1 + 1504\n2 + 1504\n2 + 1504\n2 d 1 1504\n",
    );
    for t in 0..=10 {
        text += &format!("{t} # 1504\n");
        match t {
            2 => text += "2 - 1504 2\n",
            4 => text += "4 - 1504 3\n",
            6 => text += "6 - 1504 4\n",
            _ => {}
        }
    }
    std::fs::write(&path, &text).unwrap();
    let run = report(&path, Options::default());
    assert_eq!(run.summary.format, "mahimahi");
    assert!(run.summary.errors.is_empty());
    let d = uplink(&run);
    assert_eq!((d.path.arrivals, d.path.delivered), (4, 3));
    assert_eq!(d.path.drops.get("tail"), Some(&1));
    // Pantheon: 3 · 1500 bytes over 2..6 ms; p95 of [2,3,4]: index
    // round(0.95 · 2) = 2 → 4 ms; loss 1 − 4500/6000.
    assert!(close(
        d.pantheon.throughput_mbps.unwrap(),
        3.0 * 1500.0 * 8.0 / 0.004 / 1e6
    ));
    assert_eq!(d.pantheon.delay_p95_ms, Some(4.0));
    assert!(close(d.pantheon.loss.unwrap(), 0.25));
    // Mahimahi: 10 ms from the first event to the last; 11 opportunities.
    let m = d.shells[0].mahimahi.as_ref().unwrap();
    assert!(close(
        m.average_capacity_mbps,
        11.0 * 1504.0 * 8.0 / 0.010 / 1e6
    ));
    assert!(close(
        m.average_throughput_mbps,
        3.0 * 1504.0 * 8.0 / 0.010 / 1e6
    ));
    assert_eq!(m.queueing_delay_p95_ms, 4);
    // Signal delay: sent at 0 → 2, 1 → 3, 2 → 4 (measured); none filled.
    // Sorted [2, 3, 4]: index ⌊2.85⌋ = 2 → 4.
    assert_eq!(m.signal_delay_p95_ms, 4);
    // Counted from the lines: four arrivals come before the drop.
    assert_eq!(d.shells[0].queue.max_packets, 4);

    // A damaged line stops the reading there, with its line and offset.
    let cut = text.find("4 - 1504 3").unwrap();
    let damaged = format!("{}4 - 15x4 3\n5 # 1504\n", &text[..cut]);
    std::fs::write(&path, &damaged).unwrap();
    let run = report(&path, Options::default());
    let line = damaged[..cut].lines().count() + 1;
    assert_eq!(run.summary.errors.len(), 1, "{:?}", run.summary.errors);
    assert!(
        run.summary.errors[0].contains(&format!("line {line} (byte {cut})")),
        "{}",
        run.summary.errors[0]
    );
    assert_eq!(uplink(&run).path.delivered, 1);
    // A log cut inside its last line says so.
    std::fs::write(&path, &text[..text.len() - 3]).unwrap();
    let run = report(&path, Options::default());
    assert!(
        run.summary.errors[0].contains("cut short"),
        "{:?}",
        run.summary.errors
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn jain_index_of_known_shares() {
    use report::analysis::summary::jain;
    assert_eq!(jain([1.0, 1.0, 1.0, 1.0]), Some(1.0));
    assert_eq!(jain([1.0, 0.0, 0.0, 0.0]), Some(0.25));
    assert_eq!(jain([3.0, 1.0]), Some(0.8));
    assert_eq!(jain([0.0, 0.0]), None);
    assert_eq!(jain(std::iter::empty()), None);
}

/// A link whose rate follows a schedule and which goes down once, and a
/// delay that steps: the report's capacity is what the change records say
/// the link had (12 Mbit/s for 0.5 s, 6 Mbit/s after, 0 from 0.8 s to
/// 0.9 s), and the delay plot's base delay steps at the logged instants.
#[test]
fn the_report_draws_the_rate_and_delay_the_change_records_give() {
    use emu_core::log::Change;
    let dir = scratch("changes");
    let mut records = constant_rate_records();
    let change = |t: Nanos, kind: Change, value: u64| {
        Record::change(ORIGIN + t, 1, Direction::Uplink, kind, value)
    };
    records.extend([
        change(0, Change::Rate, 12_000_000),
        change(0, Change::Delay, 10 * MS),
        change(500 * MS, Change::Rate, 6_000_000),
        change(600 * MS, Change::Delay, 40 * MS),
        change(800 * MS, Change::OutageStart, 100 * MS),
        change(900 * MS, Change::OutageEnd, 0),
    ]);
    records.sort_by_key(|r| r.time);
    // A rate schedule logs no constant rate in the header.
    write_log(
        &dir.join("1-link.emulog"),
        &header(1, "link", None),
        &records,
    );
    let run = report(
        &dir,
        Options {
            to: Some(1000 * MS),
            ..Options::default()
        },
    );
    let d = uplink(&run);
    // 0.5 s at 12 + 0.3 s at 6 + 0.1 s at 6 = 8.4 Mbit over 1 s.
    let capacity = d.path.capacity_mbps.unwrap();
    assert!(close(capacity, 8.4), "capacity {capacity}");
    assert_eq!(d.path.capacity_source, Some("link rate schedule"));
    let series = &run.series[0];
    let per_bin = series.capacity_mbps.as_ref().unwrap();
    assert!(
        close(per_bin[0], 12.0) && close(per_bin[5], 6.0) && per_bin[8] == 0.0,
        "{per_bin:?}"
    );
    let (shell, steps) = &series.base_delay_ms[0];
    assert_eq!(*shell, 1);
    assert_eq!(
        steps,
        &vec![(0.0, 10.0), (0.6, 10.0), (0.6, 40.0), (1.0, 40.0)]
    );
    // The delay plot carries the step line.
    let figures = report::pages::figures::direction_figures("changes", series);
    let delay = figures.iter().find(|f| f.stem.ends_with("-delay")).unwrap();
    assert!(delay
        .chart
        .svg()
        .contains("base delay of shell 1 (as logged)"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A window past the log's end leaves every figure empty; the report says
/// why, where the empty figures alone would read as an idle path. A
/// window with packets in it says nothing of the kind.
#[test]
fn a_window_outside_the_log_is_said() {
    let dir = scratch("empty-window");
    write_log(
        &dir.join("1-link.emulog"),
        &header(1, "link 12mbit", Some(12_000_000)),
        &constant_rate_records(),
    );
    let said = |run: &report::Run| {
        run.summary
            .warnings
            .iter()
            .any(|w| w.contains("no packet arrived"))
    };
    let past = report(
        &dir,
        Options {
            from: 999 * 1_000_000_000,
            ..Options::default()
        },
    );
    assert!(said(&past), "{:?}", past.summary.warnings);
    let inside = report(
        &dir,
        Options {
            from: 100 * MS,
            ..Options::default()
        },
    );
    assert!(!said(&inside), "{:?}", inside.summary.warnings);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A directory reused for a run with fewer shells keeps the earlier run's
/// deeper logs: they began before this run's outermost shell, and are
/// left out and named, not read as one path with it. A log that began
/// later (an emu nested in the command) is this run's.
#[test]
fn logs_of_an_earlier_run_in_the_directory_are_left_out() {
    let dir = scratch("stale");
    let outer = header(0, "delay 1 ms", None);
    write_log(&dir.join("0-delay.emulog"), &outer, &[]);
    let earlier = LogHeader {
        realtime_origin_ns: outer.realtime_origin_ns - 60 * 1_000_000_000,
        ..header(1, "link 12mbit", Some(12_000_000))
    };
    write_log(
        &dir.join("1-link.emulog"),
        &earlier,
        &constant_rate_records(),
    );
    let run = report(&dir, Options::default());
    assert_eq!(run.summary.shells, ["0: delay 1 ms"]);
    assert!(
        run.summary
            .errors
            .iter()
            .any(|e| e.contains("1-link.emulog") && e.contains("earlier run")),
        "{:?}",
        run.summary.errors
    );
    let nested = LogHeader {
        realtime_origin_ns: outer.realtime_origin_ns + 1_000_000_000,
        ..earlier
    };
    write_log(
        &dir.join("1-link.emulog"),
        &nested,
        &constant_rate_records(),
    );
    let run = report(&dir, Options::default());
    assert_eq!(run.summary.shells.len(), 2, "{:?}", run.summary.errors);
    std::fs::remove_dir_all(&dir).unwrap();
}
