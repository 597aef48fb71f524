//! Pantheon's schemes through `emu run`: wrappers laid out as a Pantheon
//! checkout has them (tests/pantheon-checkout, whose `arg_parser` is
//! Python 2), every flow's figures from the links' logs, and a scheme
//! comparison in one command.

mod support;

use emu_core::flow::{FlowTable, FlowTuple};
use emu_core::log::{Direction, Event, LogReader};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::experiment::{emu_run_plain, flow, run_experiment_in};
use support::{start, temp_dir, text};

fn wrapper(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/pantheon-checkout/src/wrappers")
        .join(name)
}

/// Two hosts a side, a bottleneck of `rate`, and `flows`.
fn experiment(rate: &str, duration: &str, flows: &str) -> String {
    format!(
        "[run]\nduration = \"{duration}\"\nruns = 1\n\n\
         [hosts.a]\nside = \"left\"\ndelay = \"5ms\"\n\
         [hosts.c]\nside = \"left\"\ndelay = \"5ms\"\n\
         [hosts.b]\nside = \"right\"\ndelay = \"5ms\"\n\
         [hosts.d]\nside = \"right\"\ndelay = \"5ms\"\n\n\
         [bottleneck]\nrate = \"{rate}\"\nqueue = \"droptail packets 30\"\n\n{flows}"
    )
}

/// What a recount of one flow's packets from the two side links' logs
/// gives: (sent packets, sent bytes, delivered packets, delivered bytes,
/// throughput bit/s, p95 one-way delay ms).
fn recount(run: &Path, from: &str, to: &str, owns: &dyn Fn(&FlowTuple) -> bool) -> [f64; 6] {
    let log = |host: &str| run.join(format!("links/side-{host}/0-link.emulog"));
    let mut names = FlowTable::default();
    let mut sent: HashMap<(u32, u32), VecDeque<u64>> = HashMap::new();
    let (mut sent_packets, mut sent_bytes) = (0u64, 0u64);
    for record in LogReader::open(&log(from)).unwrap() {
        let r = record.unwrap();
        names.add(&r);
        let ours = names.get(r.shell, r.direction, r.flow).is_some_and(owns);
        if r.direction == Direction::Uplink && r.event == Event::Arrive && ours {
            sent_packets += 1;
            sent_bytes += r.bytes as u64;
            sent.entry((r.flow, r.fingerprint))
                .or_default()
                .push_back(r.time);
        }
    }
    let mut delays = Vec::new();
    let (mut delivered_bytes, mut first, mut last) = (0u64, u64::MAX, 0u64);
    for record in LogReader::open(&log(to)).unwrap() {
        let r = record.unwrap();
        if r.direction != Direction::Downlink || r.event != Event::Depart {
            continue;
        }
        let Some(at) = sent
            .get_mut(&(r.flow, r.fingerprint))
            .and_then(|q| q.pop_front())
        else {
            continue;
        };
        delays.push(r.time - at);
        delivered_bytes += r.bytes as u64;
        first = first.min(r.time);
        last = last.max(r.time);
    }
    delays.sort_unstable();
    // numpy's `nearest`: index 0.95·(n−1), half to even.
    let x = 0.95 * (delays.len() - 1) as f64;
    let index = if x.fract() == 0.5 {
        let f = x.floor() as usize;
        f + f % 2
    } else {
        x.round() as usize
    };
    [
        sent_packets as f64,
        sent_bytes as f64,
        delays.len() as f64,
        delivered_bytes as f64,
        delivered_bytes as f64 * 8.0 / ((last - first) as f64 / 1e9),
        (delays[index] / 1000) as f64 / 1e3,
    ]
}

/// A UDP scheme of two sockets, whose checkout's `arg_parser` is Python
/// 2, against an iperf3 UDP flow through a bottleneck it overfills: both
/// are in result.json with their tuples, and their figures are what a
/// recount of the side links' logs gives.
#[test]
fn a_udp_flows_figures_equal_a_recount_from_the_link_logs() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon-udp");
    let flows = format!(
        "[[flows]]\nname = \"pair\"\nkind = \"pantheon\"\nwrapper = \"{}\"\n\
         from = \"a\"\nto = \"b\"\nsetup_time = \"1s\"\n\n\
         [[flows]]\nname = \"iperf\"\nkind = \"udp\"\nrate = \"1mbit\"\nfrom = \"c\"\nto = \"d\"\n",
        wrapper("udp_pair.py").display()
    );
    let ran = run_experiment_in(&dir, "udp", &experiment("3mbit", "5s", &flows));
    let pair = flow(&ran.result, "pair");
    assert_eq!(pair["ended"], "stopped at its end", "{pair:#}");
    let tuples = pair["tuples"].as_array().unwrap();
    let ports: Vec<u64> = tuples
        .iter()
        .map(|t| t["destination_port"].as_u64().unwrap())
        .collect();
    assert_eq!(tuples.len(), 2, "{tuples:?}");
    assert!(tuples.iter().all(|t| t["protocol"] == 17), "{tuples:?}");
    assert_eq!(ports[1].abs_diff(ports[0]), 100, "{tuples:?}");
    let a = ran.result["flows"].as_array().unwrap();
    let iperf = a.iter().find(|f| f["name"] == "iperf").unwrap();
    assert!(
        iperf["tuples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["protocol"] == 17),
        "{iperf:#}"
    );
    for (name, from, to) in [("pair", "a", "b"), ("iperf", "c", "d")] {
        let result = flow(&ran.result, name);
        let ours: Vec<(u64, u64)> = result["tuples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["source_port"].as_u64().unwrap(),
                    t["destination_port"].as_u64().unwrap(),
                )
            })
            .collect();
        let owns = |t: &FlowTuple| {
            ours.contains(&(t.source_port as u64, t.destination_port as u64))
                && t.source.to_string() == result["tuples"][0]["source"]
        };
        let counted = recount(&ran.dir, from, to, &owns);
        let path = &result["path"];
        let figures = [
            path["sent_packets"].as_f64().unwrap(),
            path["sent_bytes"].as_f64().unwrap(),
            path["delivered_packets"].as_f64().unwrap(),
            path["delivered_bytes"].as_f64().unwrap(),
            path["throughput_bps"].as_f64().unwrap(),
            path["delay_p95_ms"].as_f64().unwrap(),
        ];
        eprintln!("{name}: figures {figures:?}, recount {counted:?}");
        for (mine, again) in figures.iter().zip(counted) {
            assert!(
                (mine - again).abs() <= 1e-9 * again.abs(),
                "{name}: {path:#}"
            );
        }
        let loss = 100.0 * (1.0 - counted[3] / counted[1]);
        assert!((path["loss_percent"].as_f64().unwrap() - loss).abs() < 1e-9);
    }
    // 5 Mbit/s into 3: the scheme lost, and the two together got about 3.
    let pair = &flow(&ran.result, "pair")["path"];
    assert!(pair["loss_percent"].as_f64().unwrap() > 5.0, "{pair:#}");
    let got: f64 = ["pair", "iperf"]
        .map(|name| {
            flow(&ran.result, name)["path"]["throughput_bps"]
                .as_f64()
                .unwrap()
        })
        .iter()
        .sum();
    assert!(got > 2.7e6 && got < 3.3e6, "{got}");
    // The scheme competes: Jain's index takes both flows by the links'
    // throughput (the scheme's receiver reports no goodput).
    let result = &ran.result;
    assert_eq!(result["jain_measure"], "path-throughput", "{result:#}");
    assert_eq!(result["jain_flows"], serde_json::json!(["pair", "iperf"]));
    let [x, y] = ["pair", "iperf"].map(|name| {
        flow(result, name)["path"]["throughput_bps"]
            .as_f64()
            .unwrap()
    });
    let index = (x + y).powi(2) / (2.0 * (x * x + y * y));
    let jain = result["jain_index"].as_f64().unwrap();
    assert!((jain - index).abs() < 1e-12, "{jain} against {index}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A wrapper that imports its checkout's Python 2 `arg_parser` starts,
/// runs (here the sender first, listening) and is stopped at its end; the
/// checkout is left as it was.
#[test]
fn a_wrapper_whose_arg_parser_is_python_2_starts_and_runs() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon-py2");
    let checkout = wrapper("");
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(&checkout)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    let flows = format!(
        "[[flows]]\nname = \"paced\"\nkind = \"pantheon\"\nwrapper = \"{}\"\n\
         from = \"a\"\nto = \"b\"\nsetup_time = \"1s\"\n",
        wrapper("tcp_pacer.py").display()
    );
    let ran = run_experiment_in(&dir, "py2", &experiment("24mbit", "4s", &flows));
    let paced = flow(&ran.result, "paced");
    assert_eq!(paced["ended"], "stopped at its end", "{paced:#}");
    let got = paced["path"]["throughput_bps"].as_f64().unwrap();
    assert!(got > 3e6 && got < 7e6, "{paced:#}");
    // The sender listened on the flow's port: its packets come from it.
    let port = paced["tuples"][0]["source_port"].as_u64().unwrap();
    assert!((5201..5300).contains(&port), "{paced:#}");
    assert!(paced["goodput_bps"].as_f64().is_some(), "{paced:#}");
    assert_eq!(before, listing(), "the run wrote into the checkout");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two wrappers of the checkout and kernel cubic, two runs each, in one
/// `emu run`: the table and the summary plot name the schemes.
#[test]
fn a_scheme_comparison_is_one_command() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon-schemes");
    let flows = format!(
        "[[flows]]\nname = \"scheme\"\nscheme = [\"{}\", \"{}\", \"cubic\"]\n\
         from = \"a\"\nto = \"b\"\nsetup_time = \"1s\"\n",
        wrapper("udp_pair.py").display(),
        wrapper("tcp_pacer.py").display()
    );
    let text_of_file = experiment("12mbit", "4s", &flows).replace("runs = 1", "runs = 2");
    let file = dir.join("compare.toml");
    std::fs::write(&file, text_of_file).unwrap();
    let out = dir.join("out");
    let output = emu_run_plain(&file, &out);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        text(&output.stderr)
    );
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.contains("schemes compared"))
        .collect();
    for name in ["udp_pair", "tcp_pacer", "cubic"] {
        let row = table
            .iter()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row for {name}: {stdout}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], "2", "{row}");
        assert!(row.matches('±').count() == 3, "{row}");
    }
    let root = out.join("compare");
    let page = std::fs::read_to_string(root.join("schemes.html")).unwrap();
    let svg = std::fs::read_to_string(root.join("schemes.svg")).unwrap();
    for name in ["udp_pair", "tcp_pacer", "cubic"] {
        assert!(
            page.contains(&format!(">{name}<")),
            "{name} not on the page"
        );
        assert!(svg.contains(&format!(">{name}<")), "{name} not in the plot");
    }
    assert_eq!(svg.matches("<circle").count(), 6, "a point per run");
    assert!(!page.contains("10.0.0."), "the page names tuples");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("schemes.json")).unwrap()).unwrap();
    for scheme in json["schemes"].as_array().unwrap() {
        assert_eq!(scheme["runs"].as_array().unwrap().len(), 2, "{scheme:#}");
    }
    // emu report's page of the experiment opens with the comparison.
    let report = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("report")
        .arg(&root)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report.stderr));
    let page = std::fs::read_to_string(root.join("report/index.html")).unwrap();
    let section = &page[page.find("schemes compared").expect("a schemes section")..];
    for name in ["udp_pair", "tcp_pacer", "cubic"] {
        assert!(
            section.contains(&format!(">{name}<")),
            "{name} not in the page's comparison"
        );
    }
    assert!(root.join("report/schemes.svg").is_file());
    assert!(!page.contains("10.0.0."), "the page names tuples");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `emu wrapper` runs a wrapper as `emu run` does: with emu's `arg_parser`
/// and `context` (the checkout's are Python 2) and the checkout's own
/// Python 2 helpers, writing nothing into the checkout.
#[test]
fn emu_wrapper_runs_a_wrappers_setup_against_its_checkout() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pantheon-checkout");
    let output = Command::new(env!("CARGO_BIN_EXE_emu"))
        .arg("wrapper")
        .arg(wrapper("udp_pair.py"))
        .arg("setup")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    let third_party = checkout.join("third_party");
    assert_eq!(
        said.trim(),
        format!("third_party is {}", third_party.display())
    );
    let first = Command::new(env!("CARGO_BIN_EXE_emu"))
        .args([
            "wrapper".as_ref(),
            wrapper("tcp_pacer.py").as_os_str(),
            "run_first".as_ref(),
        ])
        .output()
        .unwrap();
    assert_eq!(text(&first.stdout).trim(), "sender");
    for dir in ["src/wrappers", "src/helpers"] {
        assert!(!checkout.join(dir).join("__pycache__").exists(), "{dir}");
    }
}

/// A scheme that moves no data is a failure of the comparison: its row
/// says so, the page lists it, and `emu run` exits non-zero.
#[test]
fn a_scheme_that_moves_no_data_fails_the_comparison() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("pantheon-silent");
    let flows = format!(
        "[[flows]]\nname = \"scheme\"\nscheme = [\"{}\", \"{}\"]\n\
         from = \"a\"\nto = \"b\"\nsetup_time = \"1s\"\n",
        wrapper("udp_pair.py").display(),
        wrapper("silent.py").display()
    );
    let file = dir.join("silent.toml");
    std::fs::write(&file, experiment("12mbit", "3s", &flows)).unwrap();
    let out = dir.join("out");
    let output = emu_run_plain(&file, &out);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(!output.status.success(), "{stdout}");
    assert!(stderr.contains("moved no data"), "{stderr}");
    let row = stdout
        .lines()
        .skip_while(|l| !l.contains("schemes compared"))
        .find(|l| l.split_whitespace().next() == Some("silent"))
        .unwrap_or_else(|| panic!("no row for silent: {stdout}"));
    assert!(
        row.contains("0 + 1 failed") && row.contains("no data"),
        "{row}"
    );
    let page = std::fs::read_to_string(out.join("silent/schemes.html")).unwrap();
    assert!(page.contains("silent run 0:") && page.contains("moved no data"));
    let _ = std::fs::remove_dir_all(&dir);
}
