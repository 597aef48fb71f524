//! The command line as a user meets it, without creating any namespace:
//! help at every level, completions, the man page, the Mahimahi commands'
//! usage and version, and one clear line for bad input.

use std::process::{Command, Output};

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"))
}

fn emu(args: &[&str]) -> Output {
    run(env!("CARGO_BIN_EXE_emu"), args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn every_level_has_its_help() {
    for (args, expected) in [
        (vec!["--help"], "Usage: emu [OPTIONS] SHELL ARGS"),
        (vec!["delay", "--help"], "Usage: emu delay"),
        (vec!["link", "--help"], "--uplink-trace <FILE>"),
        (vec!["loss", "--help"], "--seed <SEED>"),
        (
            vec!["delay", "10", "--", "link", "--help"],
            "Usage: emu link",
        ),
        (vec!["report", "--help"], "--flows <FLOWS>"),
        (vec!["log", "--help"], "dump"),
        (vec!["log", "dump", "--help"], "jsonl"),
        (vec!["completions", "--help"], "bash"),
        (vec!["man", "--help"], "--dir <DIR>"),
    ] {
        let out = emu(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(expected),
            "{args:?}: expected '{expected}' in:\n{}",
            stdout(&out)
        );
    }
    let out = emu(&["--version"]);
    assert_eq!(
        stdout(&out).trim(),
        format!("emu {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn the_top_level_help_lists_every_shell_and_tool_and_report_its_options() {
    let help = stdout(&emu(&["--help"]));
    for word in [
        "delay",
        "link",
        "loss",
        "report",
        "log",
        "queues",
        "completions",
        "man",
        "--log",
        "--stats",
        "--mtu",
        "--spin",
        "--slack",
        "--busy-poll",
        "--no-offload",
        "--status",
    ] {
        assert!(help.contains(word), "'{word}' missing from emu --help");
    }
}

#[test]
fn completions_know_the_subcommands_and_options() {
    for shell in ["bash", "zsh", "fish"] {
        let out = emu(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        for word in [
            "delay",
            "link",
            "loss",
            "report",
            "queues",
            "uplink-trace",
            "jsonl",
        ] {
            assert!(script.contains(word), "{shell} completion lacks '{word}'");
        }
    }
    let out = emu(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("'tcsh'"), "{}", stderr(&out));
}

#[test]
fn the_man_page_is_roff_with_name_and_synopsis() {
    let out = emu(&["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.starts_with(".ie") || page.starts_with(".TH"), "{page}");
    for section in [
        ".SH NAME",
        ".SH SYNOPSIS",
        ".SH OPTIONS",
        ".SH \"Shells and tools\"",
    ] {
        assert!(page.contains(section), "no {section} in:\n{page}");
    }
    assert!(page.contains("emu\\-delay") || page.contains("emu-delay"));
    let dir = std::env::temp_dir().join(format!("emu-man-{}", std::process::id()));
    let out = emu(&["man", "--dir", &dir.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for page in [
        "emu.1",
        "emu-delay.1",
        "emu-link.1",
        "emu-report.1",
        "emu-log-dump.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".SH SYNOPSIS"), "{page}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mahimahi_commands_print_their_usage_and_emus_version() {
    for (program, usage) in [
        (
            env!("CARGO_BIN_EXE_mm-delay"),
            "Usage: mm-delay delay-milliseconds",
        ),
        (
            env!("CARGO_BIN_EXE_mm-link"),
            "Usage: mm-link UPLINK-TRACE DOWNLINK-TRACE",
        ),
        (
            env!("CARGO_BIN_EXE_mm-loss"),
            "Usage: mm-loss uplink|downlink rate",
        ),
        (
            env!("CARGO_BIN_EXE_mm-onoff"),
            "Usage: mm-onoff uplink|downlink",
        ),
        (
            env!("CARGO_BIN_EXE_mm-intermittent"),
            "Usage: mm-intermittent uplink|downlink",
        ),
    ] {
        let out = run(program, &["--help"]);
        assert_eq!(out.status.code(), Some(0), "{program}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with(usage),
            "{program}: {}",
            stdout(&out)
        );
        let out = run(program, &["--version"]);
        assert_eq!(out.status.code(), Some(0), "{program}");
        assert!(
            stdout(&out).contains(&format!("emu {}", env!("CARGO_PKG_VERSION"))),
            "{program}: {}",
            stdout(&out)
        );
    }
}

/// Bad input anywhere: exit status 2 and one line that names it and
/// where to read more.
#[test]
fn bad_input_gives_one_line_naming_it() {
    for (args, expected) in [
        (vec!["--frob", "delay", "1"], "unknown option '--frob'"),
        (vec!["--mtu", "9", "delay", "1"], "--mtu '9'"),
        (vec!["--spin"], "--spin needs a value"),
        (vec!["--slack", "soon", "delay", "1"], "--slack 'soon'"),
        (vec!["tunnel"], "'tunnel' is not a shell"),
        (vec![], "nothing to run"),
        (
            vec!["delay", "40", "link", "10mbit"],
            "separate shells with --",
        ),
        (
            vec!["delay", "1", "--", "link", "--frob"],
            "link: unknown option '--frob'",
        ),
        (vec!["report"], "report: missing"),
        (vec!["report", "x", "--bin", "fast"], "report: --bin 'fast'"),
        (vec!["report", "x", "--format", "gif"], "--format 'gif'"),
        (
            vec!["log", "dump", "x", "--format", "xml"],
            "--format 'xml'",
        ),
        (vec!["completions"], "completions: missing"),
        (
            vec!["--cc", "prague burst=1", "delay", "1"],
            "'burst' is not a setting of prague",
        ),
        (
            vec!["--cc", "prague ecn_fallback=3", "delay", "1"],
            "ecn_fallback=3: ecn_fallback takes one of none (0), fallback (1), detect (2)",
        ),
        (
            vec!["--cc", "reno rtt_target=1ms", "delay", "1"],
            "reno is the kernel's, whose parameters are the machine's",
        ),
    ] {
        let out = emu(&args);
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(
            text.contains(expected),
            "{args:?}: expected '{expected}' in {text}"
        );
        assert_eq!(text.trim().lines().count(), 1, "{args:?}: {text}");
        assert!(
            text.contains("--help"),
            "{args:?}: no pointer to help: {text}"
        );
    }
}

/// `emu cc NAME` lists each setting of one of emu's congestion controls
/// with the reference's default and its module parameter's name; a name
/// that is not emu's is refused with the list.
#[test]
fn emu_cc_names_each_setting_and_its_default() {
    let out = emu(&["cc", "prague"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (setting, default, reference) in [
        ("burst_shift", "12", "prague_burst_shift"),
        ("max_tso_segs", "0", "prague_max_tso_segs"),
        ("rtt_scaling", "rate (1)", "prague_rtt_scaling"),
        ("rtt_target", "25000us", "prague_rtt_target"),
        ("rtt_transition", "500", "prague_rtt_transition"),
        ("ecn_fallback", "none (0)", "prague_ecn_fallback"),
        ("tso_floor", "0", "tcp_min_tso_segs"),
        ("version", "0.6 (0)", "MODULE_VERSION"),
    ] {
        assert!(
            text.contains(&format!("  {setting} = {default}\n")),
            "{setting} = {default}: {text}"
        );
        assert!(text.contains(reference), "{reference}: {text}");
    }
    // Each version with the commit it follows.
    for version in [
        "  0.6: L4STeam/linux 02573a21",
        "  0.5: L4STeam/linux e741f5ac",
    ] {
        assert!(text.contains(version), "{version}: {text}");
    }
    let dctcp = stdout(&emu(&["cc", "dctcp"]));
    for line in [
        "shift_g = 4",
        "alpha_on_init = 1024",
        "clamp_alpha_on_loss = 0",
    ] {
        assert!(dctcp.contains(line), "{line}: {dctcp}");
    }
    let reno_sce = stdout(&emu(&["cc", "reno-sce"]));
    assert!(reno_sce.contains("unit = rcv_mss (0)"), "{reno_sce}");
    assert!(reno_sce.contains("chromi/sce 07bbe597"), "{reno_sce}");
    let out = emu(&["cc", "westwood"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'westwood' is not one of emu's congestion controls"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&emu(&["cc"])).contains("emu cc NAME: the settings each takes"));
}

/// A one-shell log of a steady flow whose queue builds and drains, written
/// with emu's own encoder.
fn write_synthetic_log(path: &std::path::Path) {
    use emu_core::log::{write_header, Direction, Event, LogHeader, Record, RECORD_SIZE};
    const MS: u64 = 1_000_000;
    let origin = 10_000 * MS;
    let header = LogHeader {
        shell: 0,
        description: "link 12mbit seed 0".into(),
        monotonic_origin_ns: origin,
        realtime_origin_ns: 1_800_000_000 * 1_000_000_000,
        rate_bps: Some([Some(12_000_000), Some(12_000_000)]),
        command_line: "emu synthetic".into(),
        traces: None,
        ..Default::default()
    };
    let mut out = Vec::new();
    write_header(&mut out, &header).unwrap();
    let mut records = Vec::new();
    for k in 0..2000u64 {
        let sent = origin + k * MS / 2;
        let delay = (k % 200 + 1) * MS / 4;
        let record = |time, event, sojourn| Record {
            time,
            sojourn,
            flow: 1 + (k % 3) as u32,
            fingerprint: k as u32,
            bytes: 1500,
            queue_bytes: (k % 200) as u32 * 1500,
            queue_packets: (k % 200) as u32,
            shell: 0,
            direction: Direction::Uplink,
            event,
            detail: 0,
            ecn: 0,
        };
        records.push(record(sent, Event::Arrive, 0));
        records.push(record(sent, Event::Enqueue, 0));
        records.push(record(sent + delay, Event::Depart, delay));
    }
    records.sort_by_key(|r| r.time);
    for r in records {
        let mut bytes = [0u8; RECORD_SIZE];
        r.encode(&mut bytes);
        out.extend_from_slice(&bytes);
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn report_figures_come_as_png_and_pdf_too() {
    let dir = std::env::temp_dir().join(format!("emu-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("0-link.emulog");
    write_synthetic_log(&log);
    let out_dir = dir.join("report");
    let out = emu(&[
        "report",
        &log.display().to_string(),
        "--out",
        &out_dir.display().to_string(),
        "--format",
        "png,pdf",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svgs: Vec<std::path::PathBuf> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "svg"))
        .collect();
    assert!(svgs.len() >= 4, "{svgs:?}");
    for svg in &svgs {
        let png = std::fs::read(svg.with_extension("png"))
            .unwrap_or_else(|e| panic!("{}: no PNG: {e}", svg.display()));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{}", svg.display());
        assert!(png.len() > 5_000, "{}: {} bytes", svg.display(), png.len());
        let image = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert!(
            image.width() >= 1000,
            "{}: {} px wide",
            svg.display(),
            image.width()
        );
        let first = image.pixels()[0];
        let different = image.pixels().iter().filter(|p| **p != first).count();
        assert!(
            different > image.pixels().len() / 100,
            "{}: almost one colour ({different} pixels differ)",
            svg.display()
        );
        let pdf = std::fs::read(svg.with_extension("pdf"))
            .unwrap_or_else(|e| panic!("{}: no PDF: {e}", svg.display()));
        assert!(pdf.starts_with(b"%PDF-1."), "{}", svg.display());
        assert!(pdf.len() > 1_000, "{}: {} bytes", svg.display(), pdf.len());
        assert!(
            String::from_utf8_lossy(&pdf[pdf.len().saturating_sub(64)..]).contains("%%EOF"),
            "{}: PDF not complete",
            svg.display()
        );
    }
    // The default is SVG alone.
    let svg_only = dir.join("svg-only");
    let out = emu(&[
        "report",
        &log.display().to_string(),
        "--out",
        &svg_only.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_dir(&svg_only).unwrap().all(|e| e
        .unwrap()
        .path()
        .extension()
        .is_none_or(|x| x != "png" && x != "pdf")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn log_dump_writes_json_lines_and_keeps_json_as_an_alias() {
    let dir = std::env::temp_dir().join(format!("emu-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("0-link.emulog");
    write_synthetic_log(&log);
    let path = log.display().to_string();
    let jsonl = emu(&["log", "dump", &path, "--format", "jsonl"]);
    assert!(jsonl.status.success(), "{}", stderr(&jsonl));
    let text = stdout(&jsonl);
    assert_eq!(text.lines().count(), 6000);
    let csv = stdout(&emu(&["log", "dump", &path]));
    let columns: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for (line, row) in text.lines().zip(csv.lines().skip(1)) {
        let object: serde_json::Value = serde_json::from_str(line).unwrap();
        let object = object.as_object().unwrap();
        assert_eq!(object.len(), columns.len());
        for (column, value) in columns.iter().zip(row.split(',')) {
            let json = &object[*column];
            let as_text = json.as_str().map_or_else(|| json.to_string(), String::from);
            assert_eq!(as_text, value, "{column} in {line}");
        }
    }
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert!(first["time_ns"].is_u64() && first["event"].is_string());
    let alias = emu(&["log", "dump", &path, "--format", "json"]);
    assert_eq!(alias.stdout, jsonl.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `emu log header` prints what the log's header says, clock origins
/// included (what aligns dumped record times with wall-clock time).
#[test]
fn log_header_prints_the_header_as_json() {
    let dir = std::env::temp_dir().join(format!("emu-log-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("0-link.emulog");
    write_synthetic_log(&log);
    let output = emu(&["log", "header", &log.display().to_string()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let header: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(header["description"], "link 12mbit seed 0");
    assert_eq!(header["monotonic_origin_ns"], 10_000_000_000u64);
    assert_eq!(header["rate_bps"][1], 12_000_000);
    // Not a log: one line naming the file, and a failure.
    let garbage = dir.join("garbage");
    std::fs::write(&garbage, "not a log").unwrap();
    let output = emu(&["log", "header", &garbage.display().to_string()]);
    assert_eq!(output.status.code(), Some(1));
    let message = stderr(&output);
    assert!(
        message.contains("garbage") && message.contains("not an emu log"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The progress line of `emu report`, with its threshold lowered so a
/// small log shows it (by default it needs logs of 256 MB or more).
#[test]
fn report_shows_progress_on_large_inputs() {
    let dir = std::env::temp_dir().join(format!("emu-progress-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("0-link.emulog");
    write_synthetic_log(&log);
    let out_dir = dir.join("report").display().to_string();
    let report = |threshold: &str| {
        Command::new(env!("CARGO_BIN_EXE_emu"))
            .args(["report", &log.display().to_string(), "--out", &out_dir])
            .env("EMU_REPORT_PROGRESS_BYTES", threshold)
            .output()
            .unwrap()
    };
    // Not a terminal: a line every ten seconds (the line itself is tested
    // in the unit tests), and what was read when done: both passes over
    // the log, one per direction.
    let out = report("1");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    let line = text
        .lines()
        .find(|l| l.starts_with("emu report: read "))
        .unwrap_or_else(|| panic!("no progress summary in {text}"));
    let mb: f64 = line["emu report: read ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let size = std::fs::metadata(&log).unwrap().len() as f64 / 1e6;
    // Twice, plus the header read of up to one buffer (here the whole file).
    assert!(
        mb >= 1.9 * size && mb <= 3.0 * size + 0.1,
        "{line}: log is {size} MB"
    );
    // Below the threshold: nothing.
    let out = report("100000000000");
    assert!(
        !stderr(&out).contains("emu report: read "),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Output into a pipe whose reader has gone (`emu --help | true`,
/// `emu log dump FILE | head`, `emu run DIR --list-cells | head`) ends emu quietly with status 0: no panic, no
/// backtrace, and no failure for a script under `set -o pipefail`.
#[test]
fn a_closed_pipe_on_stdout_ends_emu_quietly_and_well() {
    let dir = std::env::temp_dir().join(format!("emu-closed-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("0-link.emulog");
    write_synthetic_log(&log);
    let log = log.display().to_string();
    let study = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/sce-draft");
    for args in [
        vec!["run", study, "--list-cells"],
        vec!["queues"],
        vec!["--help"],
        vec!["completions", "zsh"],
        vec!["man"],
        vec!["log", "dump", &log],
        vec!["log", "header", &log],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_emu"))
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let message = stderr(&out);
        assert!(!message.contains("panicked"), "{args:?}: {message}");
        assert!(message.is_empty(), "{args:?}: {message}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {message}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An argument that is not UTF-8 gets one line naming it, not a panic.
#[test]
fn an_argument_that_is_not_utf8_is_named() {
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"a\xffb");
    let out = Command::new(env!("CARGO_BIN_EXE_emu"))
        .args(["delay", "10", "--", "echo"])
        .arg(bad)
        .output()
        .unwrap();
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{message}");
    assert!(
        message.contains("argument 5") && message.contains("not valid UTF-8"),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// A study is a directory of experiments: `--list-cells` lists each file's
/// cells (the quick form's too, its lists collapsed by `[quick] set`), an
/// empty directory and `--cell` across files are refused by name, and a
/// bad file is found before anything runs.
#[test]
fn a_study_lists_its_cells_and_refuses_what_it_cannot_run() {
    let dir = std::env::temp_dir().join(format!("emu-study-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let experiment = |rates: &str| {
        format!(
            "[run]\nscenario = \"s\"\nvariant = \"v\"\n\
             [hosts.a]\nside = \"left\"\n[hosts.b]\nside = \"right\"\n\
             [bottleneck]\nrate = {rates}\ndelay = [\"1ms\", \"2ms\"]\n\
             [[flows]]\nfrom = \"a\"\nto = \"b\"\n\
             [run.quick]\n"
        )
    };
    // `[run.quick]` is not a key: the error names it.
    std::fs::write(dir.join("a.toml"), experiment("[\"1mbit\", \"2mbit\"]")).unwrap();
    let out = emu(&["run", dir.to_str().unwrap(), "--list-cells"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("quick"), "{}", stderr(&out));

    let good = |rates: &str| {
        experiment(rates)
            .replace(
                "[run]\n",
                "[run]\ntogether = [[\"bottleneck.rate\", \"bottleneck.delay\"]]\n",
            )
            .replace(
                "[run.quick]\n",
                "[quick]\nset = [\"bottleneck.delay=3ms\"]\n",
            )
    };
    std::fs::write(dir.join("a.toml"), good("[\"1mbit\", \"2mbit\"]")).unwrap();
    std::fs::write(dir.join("b.toml"), good("\"5mbit\"")).unwrap();
    let out = emu(&["run", dir.to_str().unwrap(), "--list-cells"]);
    let listed = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    // Rate and delay advance together in a.toml: two cells, not four.
    assert!(
        listed.contains("1\tbottleneck.rate=2mbit bottleneck.delay=2ms"),
        "{listed}"
    );
    assert!(
        !listed.contains("rate=2mbit bottleneck.delay=1ms"),
        "{listed}"
    );
    assert!(listed.find("a.toml") < listed.find("b.toml"), "{listed}");
    let out = emu(&["run", dir.to_str().unwrap(), "--list-cells", "--quick"]);
    let listed = stdout(&out);
    assert!(
        listed.contains("0\tbottleneck.rate=1mbit\n1\tbottleneck.rate=2mbit"),
        "{listed}"
    );

    let out = emu(&["run", dir.to_str().unwrap(), "--cell", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("run one file with --cell K"),
        "{}",
        stderr(&out)
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = emu(&["run", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no experiment files"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A report over a grid that lacks a cell is written, but exits with
/// status 3 and says what is missing and how to accept it; `--partial`
/// accepts it (status 0). A whole grid exits 0 without it.
#[test]
fn a_report_over_an_incomplete_grid_says_so_in_its_status() {
    let dir = std::env::temp_dir().join(format!("emu-incomplete-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("sweep");
    let run = root.join("cell-0/run-0");
    std::fs::create_dir_all(run.join("links")).unwrap();
    std::fs::write(root.join("meta-cell-0.json"), r#"{"cells_in_grid": 2}"#).unwrap();
    let result = r#"{"cell": 0, "cell_label": "bottleneck.rate=10mbit", "run": 0, "seed": 1,
        "flows": [{"name": "bulk", "kind": "tcp", "from": "a", "to": "b",
                   "congestion_control": "cubic", "goodput_bps": 9.5e6, "srtt_ms": null,
                   "min_rtt_ms": null, "retransmits": 0, "ce_marks": 0, "ece_acked": null,
                   "ping_rtt_ms": null, "lost_percent": null, "ended": "exit 0"}],
        "jain_index": 1.0, "accounting_ok": true,
        "timing_warnings": ["packets were written into host b late: 0.30 ms at the 99th percentile"]}"#;
    std::fs::write(run.join("result.json"), result).unwrap();
    let report = |extra: &[&str]| {
        let out_dir = dir.join("out");
        let _ = std::fs::remove_dir_all(&out_dir);
        let root = root.display().to_string();
        let out_arg = out_dir.display().to_string();
        let mut args = vec!["report", root.as_str(), "--out", out_arg.as_str()];
        args.extend_from_slice(extra);
        let out = emu(&args);
        (out, out_dir.join("summary.json").exists())
    };
    let (out, written) = report(&[]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(written, "the report of what is there is written: {said}");
    assert!(
        stdout(&out).contains("missing cells (1 of 2): 1"),
        "{}",
        stdout(&out)
    );
    let last = said.lines().last().unwrap_or("");
    assert!(
        last.contains("the grid is incomplete (cell 1 missing)") && last.contains("--partial"),
        "{said}"
    );
    // The run's own word on its timing reaches the reader and the page.
    assert!(
        said.contains("cell 0 run 0 did not keep time: packets were written into host b late"),
        "{said}"
    );
    let page = std::fs::read_to_string(dir.join("out/index.html")).unwrap();
    assert!(
        page.contains("This run did not keep time: packets were written into host b late"),
        "the page names it"
    );
    let (out, written) = report(&["--partial"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(written);
    // The cell run: the grid is whole.
    std::fs::write(root.join("meta-cell-1.json"), r#"{"cells_in_grid": 2}"#).unwrap();
    let second = root.join("cell-1/run-0");
    std::fs::create_dir_all(second.join("links")).unwrap();
    std::fs::write(
        second.join("result.json"),
        result.replace(r#""cell": 0"#, r#""cell": 1"#),
    )
    .unwrap();
    let (out, _) = report(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("all 2 cells of the grid are here"),
        "{}",
        stdout(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A results directory in the layout `emu run` wrote at release 0.1 (a
/// sweep of two rates, one run each, its packet logs left out: the tables
/// do not read them) still reports as it did then: the same tables, the
/// same warnings, the same `summary.json` and the same page.
#[test]
fn results_of_the_last_release_report_as_they_did() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/results-0.1");
    let root = fixture.join("sweep");
    let out_dir = std::env::temp_dir().join(format!("emu-results-0.1-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    let out = emu(&[
        "report",
        &root.display().to_string(),
        "--out",
        &out_dir.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected =
        |name: &str| std::fs::read_to_string(fixture.join("expected").join(name)).unwrap();
    assert_eq!(stdout(&out), expected("report.txt"));
    let warnings: String = stderr(&out)
        .lines()
        .filter(|l| l.contains("warning"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(warnings, expected("warnings.txt"));
    let written = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap();
    assert_eq!(written("summary.json"), expected("summary.json"));
    let page = written("index.html").replace(&root.display().to_string(), "RESULTS");
    assert_eq!(page, expected("index.html"));
    std::fs::remove_dir_all(&out_dir).unwrap();
}
