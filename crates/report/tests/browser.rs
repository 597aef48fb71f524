//! The report page in a real browser: headless Chromium parses index.html
//! with every chart inline, and its screenshot shows the charts' lines.
//! Needs `chromium` (scripts/install-deps installs it) and python3.

use emu_core::flow::FlowTuple;
use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/browser.rs"]
mod browser;

const MS: u64 = 1_000_000;

/// The name the report gives flow 1 or 2 (iperf3 ports 5201 and 5202).
fn flow_name(flow: u32) -> FlowTuple {
    FlowTuple {
        protocol: 6,
        source: "10.0.0.2".parse().unwrap(),
        destination: "100.64.0.1".parse().unwrap(),
        source_port: 40000 + flow as u16,
        destination_port: 5200 + flow as u16,
    }
}

/// A one-shell run: two flows, 10 Mbit/s together, whose delay ramps from
/// 1 to 50 ms.
fn write_run(dir: &Path, rate: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let header = LogHeader {
        shell: 0,
        description: "link 12mbit".into(),
        monotonic_origin_ns: 0,
        realtime_origin_ns: 0,
        rate_bps: Some([Some(12_000_000), Some(12_000_000)]),
        command_line: "emu --log run link 12mbit -- sender".into(),
        traces: None,
        ..LogHeader::default()
    };
    let mut records = Vec::new();
    for flow in [1, 2] {
        let (named, n) = flow_name(flow).records(0, flow, 0, Direction::Uplink);
        records.extend_from_slice(&named[..n]);
    }
    let gap = 1250 * 8 * 1_000_000_000 / rate;
    for k in 0..3000u64 {
        let t = k * gap;
        let delay = (1 + k * 50 / 3000) * MS;
        let record = |time, event| Record {
            time,
            sojourn: delay,
            flow: 1 + (k % 2) as u32,
            fingerprint: k as u32,
            bytes: 1250,
            queue_bytes: (delay / MS) as u32 * 1250,
            queue_packets: (delay / MS) as u32,
            shell: 0,
            direction: Direction::Uplink,
            event,
            detail: 0,
            ecn: 0,
        };
        records.push(record(t, Event::Arrive));
        records.push(record(t, Event::Enqueue));
        records.push(record(t + delay, Event::Depart));
    }
    records.sort_by_key(|r| r.time);
    let mut out = Vec::new();
    write_header(&mut out, &header).unwrap();
    for r in &records {
        let mut bytes = [0u8; RECORD_SIZE];
        r.encode(&mut bytes);
        out.extend_from_slice(&bytes);
    }
    std::fs::write(dir.join("0-link.emulog"), out).unwrap();
}

#[test]
fn the_page_renders_every_chart_in_a_headless_browser() {
    let root = std::env::temp_dir().join(format!("emu-report-browser-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    write_run(&root.join("ten"), 10_000_000);
    write_run(&root.join("six"), 6_000_000);
    let options = report::Options::default();
    let mut runs = report::load(&root.join("ten"), &options).unwrap();
    runs.extend(report::load(&root.join("six"), &options).unwrap());
    let out = root.join("report");
    let written = report::pages::output::write(&runs, &out).unwrap();
    let svgs = written
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .count();
    assert!(svgs >= 12, "{written:?}");

    let page = out.join("index.html");
    let browser = |extra: &[&str]| {
        let profile = root.join(format!("profile-{}", extra.len()));
        browser::run(&page, &profile, extra)
    };
    // The DOM the browser built holds every chart, inline.
    let dom = String::from_utf8(browser(&["--dump-dom"]).stdout).unwrap();
    assert!(
        dom.contains("<h1>emu report</h1>"),
        "{}",
        &dom[..dom.len().min(500)]
    );
    assert_eq!(dom.matches("<svg").count(), svgs, "charts in the DOM");
    assert!(dom.contains("Runs compared"));
    // Flows are named by their 5-tuples, in the tables and in the legends
    // (an SVG <text> each), with the hash kept as the id.
    for flow in [1, 2] {
        let name = flow_name(flow).to_string();
        assert!(
            dom.contains(&format!("<td>{name}</td><td>{flow:08x}</td>")),
            "flow {flow} is not named in a table as {name}"
        );
        assert!(
            dom.matches(&format!(">{name}</text>")).count() >= 2,
            "flow {flow} is not named in the legends of both runs as {name}"
        );
    }
    assert!(
        !dom.contains("flow 00000001"),
        "a legend names a flow by its hash"
    );

    // The screenshot shows the throughput lines (red) and the flows'
    // lines (blue) drawn.
    let shot: PathBuf = root.join("page.png");
    browser(&[
        "--window-size=1000,1500",
        "--hide-scrollbars",
        &format!("--screenshot={}", shot.display()),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/png_colors.py");
    let counted = Command::new("python3")
        .arg(script)
        .arg(&shot)
        .args(["d62728", "1f77b4", "ffffff"])
        .output()
        .expect("python3 runs");
    assert!(
        counted.status.success(),
        "{}",
        String::from_utf8_lossy(&counted.stderr)
    );
    let numbers: Vec<u64> = String::from_utf8(counted.stdout)
        .unwrap()
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page.png");
    std::fs::copy(&shot, &keep).unwrap();
    let [width, height, red, blue, white] = numbers[..] else {
        panic!("{numbers:?}")
    };
    eprintln!("screenshot {width}x{height}: {red} red, {blue} blue, {white} white pixels");
    assert_eq!((width, height), (1000, 1500));
    assert!(
        red > 500,
        "the throughput lines are missing: {red} red pixels"
    );
    assert!(
        blue > 200,
        "the blue lines and points are missing: {blue} pixels"
    );
    assert!(white < width * height, "a blank page");
    // Kept for a human to look at.
    eprintln!("screenshot kept at {}", keep.display());
    std::fs::remove_dir_all(&root).unwrap();
}
