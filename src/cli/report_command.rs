//! `emu report RUN... [--out DIR] [--json] [--bin D] [--from T] [--to T]
//! [--flows SEL]`: numbers and pictures from the packet logs of one or
//! more runs.

use super::output::UsageError;
use clap::{Args, ValueEnum};
use emu_core::time::parse_duration;
use report::draw::render::FigureFormat;
use report::experiments::grid_tables::{Difference, Metric, TableSpec};
use report::{FlowMatch, FlowSelection, Options};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Args)]
#[command(long_about = "Numbers and pictures from packet logs.\n\n\
        Each RUN is a directory that `emu --log DIR` wrote (all its shells \
        together, packets followed across them), a single .emulog file, a \
        Mahimahi link log (--uplink-log), or a directory of Mahimahi logs \
        (one run each). Several runs are compared side by side.\n\n\
        Directories `emu run` wrote (runs/NAME/, or a parent of several) \
        are merged instead: every run's result.json under them, one table \
        per sweep cell with mean and standard deviation across all the \
        repetitions found, and the cells of the grid that are missing \
        (cells run on different machines with --cell K come together). \
        They get a page (DIR/report/index.html unless --out): per cell and \
        run, each flow by its name (delivery rate with its RTT, cwnd, marks) \
        and the bottleneck's queues (L and C apart for a dual queue). A \
        study (several experiments, `emu run DIR`) gets one page per \
        experiment and an index pairing each scenario's variants cell by \
        cell.\n\n\
        Times take a unit (ns, us, ms, s; a bare number is ms) and count \
        from when the whole path was up (the innermost shell's start).")]
pub struct ReportArgs {
    /// Run directories or log files.
    #[arg(required = true, value_hint = clap::ValueHint::AnyPath)]
    runs: Vec<PathBuf>,
    /// Where to write the report [default: report; for a directory of
    /// `emu run`, DIR/report].
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    out: Option<PathBuf>,
    /// Print summary.json to stdout (and write no files unless --out is given).
    #[arg(long)]
    json: bool,
    /// Width of the time bins of throughput, queue and fairness series.
    #[arg(long, default_value = "100ms", value_parser = duration)]
    bin: u64,
    /// Leave out what happened before this time.
    #[arg(long, default_value = "0", value_parser = duration)]
    from: u64,
    /// Leave out what happened from this time on.
    #[arg(long, value_parser = duration)]
    to: Option<u64>,
    /// Flows given their own rows, plots and place in Jain's index:
    /// `significant` (≥ 1% of the bytes), `all`, `top:N`, or a
    /// comma-separated list of `port:N` (either port, as the flow entered
    /// or left the path), `addr:IP` (either address) and flow ids in hex.
    #[arg(long, default_value = "significant", value_parser = flows)]
    flows: FlowSelection,
    /// File formats of the figures, separated by commas: svg (always
    /// written, the page shows them), png (twice the SVG's size) and pdf
    /// (vector), each next to its SVG.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "svg")]
    format: Vec<Format>,
    /// For directories of `emu run`: tables of one swept axis (--rows) by
    /// another (--cols), one per value of the other axes and per flow, of
    /// each METRIC: throughput (Mbit/s, each flow's mean over its whole
    /// life), utilization (that over the bottleneck's rate), rtt (mean TCP
    /// RTT over the flow's life, ms), jain (Jain's index). Printed, shown
    /// on the page and written into tables/ as Markdown and CSV.
    #[arg(long, value_name = "METRIC", value_delimiter = ',', value_parser = metric, requires_all = ["rows", "cols"])]
    table: Vec<Metric>,
    /// The axis of the tables' rows: a swept key, or its last part where
    /// one key ends so (`rate` for `bottleneck.rate`).
    #[arg(long, value_name = "AXIS", requires = "table")]
    rows: Option<String>,
    /// The axis of the tables' columns.
    #[arg(long, value_name = "AXIS", requires = "table")]
    cols: Option<String>,
    /// With --table: also the tables of A minus B, two values of AXIS
    /// (e.g. `--diff cc=reno-sce,reno`); may be given again.
    #[arg(long, value_name = "AXIS=A,B", value_parser = difference, requires = "table")]
    diff: Vec<Difference>,
    /// For directories of `emu run`: exit 0 though cells of the grid are
    /// missing or have fewer runs than planned (without it: status 3,
    /// after writing the report of what is there).
    #[arg(long)]
    partial: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Svg,
    Png,
    Pdf,
}

impl From<Format> for FigureFormat {
    fn from(f: Format) -> FigureFormat {
        match f {
            Format::Svg => FigureFormat::Svg,
            Format::Png => FigureFormat::Png,
            Format::Pdf => FigureFormat::Pdf,
        }
    }
}

fn metric(text: &str) -> Result<Metric, String> {
    Metric::parse(text.trim())
}

fn difference(text: &str) -> Result<Difference, String> {
    Difference::parse(text)
}

fn duration(text: &str) -> Result<u64, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// `significant`, `all`, `top:N`, or a comma-separated list of
/// `port:N`, `addr:IP` (or `address:IP`) and flow ids in hex.
fn flows(text: &str) -> Result<FlowSelection, String> {
    match text {
        "significant" => return Ok(FlowSelection::Significant),
        "all" => return Ok(FlowSelection::All),
        _ => {}
    }
    if let Some(n) = text.strip_prefix("top:") {
        return n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .map(FlowSelection::Top)
            .ok_or_else(|| format!("'{text}': top:N takes a positive whole number"));
    }
    text.split(',')
        .map(|item| flow_match(item.trim()))
        .collect::<Result<Vec<FlowMatch>, String>>()
        .map(FlowSelection::Matching)
}

fn flow_match(item: &str) -> Result<FlowMatch, String> {
    if let Some(port) = item.strip_prefix("port:") {
        return port.parse().map(FlowMatch::Port).map_err(|_| {
            format!("'{item}': port:N takes a port number from 0 to 65535, e.g. port:5201")
        });
    }
    if let Some(address) = item
        .strip_prefix("addr:")
        .or_else(|| item.strip_prefix("address:"))
    {
        let address = address.trim_start_matches('[').trim_end_matches(']');
        return address.parse().map(FlowMatch::Address).map_err(|_| {
            format!("'{item}': addr:IP takes an IPv4 or IPv6 address, e.g. addr:100.64.0.1")
        });
    }
    u32::from_str_radix(item.trim_start_matches("0x"), 16)
        .map(FlowMatch::Id)
        .map_err(|_| {
            format!(
                "'{item}': expected significant, all, top:N, or a list of port:N, addr:IP \
                 and flow ids in hex (as the report lists them), separated by commas"
            )
        })
}

/// `emu report`: results of `emu run` go to [`experiments`]; logs are
/// loaded, their problems printed, and their pages written.
pub fn run(cli: ReportArgs) -> Result<i32, UsageError> {
    check_window(&cli)?;
    if let Some(k) = dispatch(&cli)? {
        return Ok(k);
    }
    let Some(mut runs) = load_logs(&cli) else {
        return Ok(1);
    };
    name_apart(&mut runs);
    let damaged = print_problems(&runs);
    if !write_outputs(&cli, &runs)? {
        return Ok(1);
    }
    Ok(if damaged { 1 } else { 0 })
}

fn check_window(cli: &ReportArgs) -> Result<(), UsageError> {
    if cli.bin == 0 {
        return Err(UsageError("--bin must be longer than 0".into()));
    }
    if cli.to.is_some_and(|to| to <= cli.from) {
        return Err(UsageError("--to must be later than --from".into()));
    }
    Ok(())
}

/// Results directories of `emu run` are reported by [`experiments`] (its
/// exit code returned); a mix of them and logs, or `--table` on logs, is
/// a misuse; `None` leaves the logs to [`run`].
fn dispatch(cli: &ReportArgs) -> Result<Option<i32>, UsageError> {
    let results: Vec<bool> = cli
        .runs
        .iter()
        .map(|p| report::experiments::results_dir::is_result_dir(p))
        .collect();
    if results.iter().any(|r| *r) {
        if let Some(k) = results.iter().position(|r| !r) {
            return Err(UsageError(format!(
                "{}: not a result directory of emu run, given with some that are: report them separately",
                cli.runs[k].display()
            )));
        }
        return experiments(cli).map(Some);
    }
    // Missing directories are reported as such when loaded, not as a misuse.
    if !cli.table.is_empty() && cli.runs.iter().all(|p| p.exists()) {
        return Err(UsageError(
            "--table lays out the cells of a sweep: give the directories emu run wrote (runs/NAME/)".into(),
        ));
    }
    Ok(None)
}

/// Every log given, or `None` once one fails to load (the error printed).
fn load_logs(cli: &ReportArgs) -> Option<Vec<report::Run>> {
    let options = Options {
        bin: cli.bin,
        from: cli.from,
        to: cli.to,
        flows: cli.flows.clone(),
    };
    let mut progress = Progress::start(&cli.runs);
    let mut runs = Vec::new();
    for path in &cli.runs {
        match report::load(path, &options) {
            Ok(loaded) => runs.extend(loaded),
            Err(e) => {
                progress.finish();
                eprintln!("emu report: {e}");
                return None;
            }
        }
    }
    progress.finish();
    Some(runs)
}

/// Two runs with one name (run1/log, run2/log) would overwrite each
/// other's plots: the second and later get " (N)".
fn name_apart(runs: &mut [report::Run]) {
    let mut seen = std::collections::HashMap::new();
    for run in runs {
        let n = seen.entry(run.summary.name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            run.summary.name = format!("{} ({})", run.summary.name, n);
        }
    }
}

/// Prints each run's errors and warnings; true when a run had an error.
fn print_problems(runs: &[report::Run]) -> bool {
    for run in runs {
        for e in &run.summary.errors {
            eprintln!("emu report: {e}");
        }
        for w in &run.summary.warnings {
            eprintln!("emu report: warning: {w}");
        }
    }
    runs.iter().any(|r| !r.summary.errors.is_empty())
}

/// `--json` prints the summary; `--out` (or no `--json`) writes the
/// pages. False when the pages could not be written (the error printed).
fn write_outputs(cli: &ReportArgs, runs: &[report::Run]) -> Result<bool, UsageError> {
    if cli.json {
        let text = serde_json::to_string_pretty(&report::pages::output::summary_json(runs))
            .map_err(|e| UsageError(e.to_string()))?;
        super::output::print_out(format_args!("{text}\n"));
    }
    if !cli.json || cli.out.is_some() {
        let out = cli.out.clone().unwrap_or_else(|| PathBuf::from("report"));
        let formats: Vec<FigureFormat> = cli.format.iter().map(|f| (*f).into()).collect();
        if let Err(e) = report::pages::output::write_figures_as(runs, &out, &formats) {
            eprintln!("emu report: writing the report into {}: {e}", out.display());
            return Ok(false);
        }
        if !cli.json {
            print_brief(runs);
        }
        eprintln!("emu report: wrote {}", out.join("index.html").display());
    }
    Ok(true)
}

/// `emu report` on directories `emu run` wrote: each experiment's cells
/// merged into the table (printed, and `summary.json`), and its page; the
/// status says whether the grid was whole (see
/// `report::experiments::summary::INCOMPLETE`).
// Long: print, write and page, each step reporting its own failure to the
// user.
fn experiments(cli: &ReportArgs) -> Result<i32, UsageError> {
    let found = match report::experiments::results_dir::find(&cli.runs) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("emu report: {e}");
            return Ok(1);
        }
    };
    let mut summary = report::experiments::summary::summarize(&found).map_err(UsageError)?;
    for w in &summary.warnings {
        eprintln!("emu report: warning: {w}");
    }
    let spec = table_spec(cli);
    if let Some(spec) = &spec {
        match summary.add_grid_tables(&found, spec) {
            Ok(passed_over) => {
                for why in passed_over {
                    eprintln!("emu report: no tables for {why}");
                }
            }
            Err(e) => {
                eprintln!("emu report: --table: {e}");
                return Ok(1);
            }
        }
    }
    // Whole, or accepted as it is: 0; else what is missing, said last.
    let (code, incomplete) = summary.status(cli.partial);
    let status = || {
        if let Some(why) = &incomplete {
            eprintln!("emu report: {why}");
        }
        code
    };
    if cli.json {
        super::output::print_out(format_args!("{}\n", summary.json));
        if cli.out.is_none() {
            return Ok(status());
        }
    } else {
        super::output::print_out(&summary.text);
    }
    let out = cli.out.clone().unwrap_or_else(|| match &cli.runs[..] {
        [one] => one.join("report"),
        _ => PathBuf::from("report"),
    });
    let path = out.join("summary.json");
    let json = format!("{}\n", summary.json);
    if let Err(e) = std::fs::create_dir_all(&out).and_then(|_| std::fs::write(&path, json)) {
        eprintln!("emu report: writing {}: {e}", path.display());
        return Ok(1);
    }
    let options = report::experiments::page::PageOptions {
        bin: cli.bin,
        formats: cli.format.iter().map(|f| (*f).into()).collect(),
        tables: spec,
    };
    let title = cli.runs[0]
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "study".into());
    match report::experiments::report::write(&found, &summary.tables, &out, &title, &options) {
        Ok(written) => {
            for w in &written.warnings {
                eprintln!("emu report: warning: {w}");
            }
            eprintln!("emu report: wrote {}", path.display());
            if written.pages.len() > 1 {
                eprintln!(
                    "emu report: wrote {} pages, one per experiment, under {}",
                    written.pages.len(),
                    out.display()
                );
            }
            eprintln!("emu report: wrote {}", written.index.display());
            Ok(status())
        }
        Err(e) => {
            eprintln!("emu report: writing the pages into {}: {e}", out.display());
            Ok(1)
        }
    }
}

/// What --table, --rows, --cols and --diff ask for, if anything.
fn table_spec(cli: &ReportArgs) -> Option<TableSpec> {
    Some(TableSpec {
        metrics: (!cli.table.is_empty()).then(|| cli.table.clone())?,
        rows: cli.rows.clone()?,
        cols: cli.cols.clone()?,
        differences: cli.diff.clone(),
    })
}

/// One line per run and direction, the figures most people look at first:
/// throughput and utilization while the flows were active, with the whole
/// log's beside them.
fn print_brief(runs: &[report::Run]) {
    let show = |v: Option<f64>, unit: &str| v.map_or("–".into(), |v| format!("{v:.2}{unit}"));
    let pct = |v: Option<f64>| show(v.map(|u| u * 100.0), " %");
    for run in runs {
        for d in &run.summary.directions {
            super::output::print_out(format_args!(
                "{} {}: throughput {} (whole log {}), one-way delay p95 {}, loss {}, \
                 utilization {} (whole log {}), Jain {}\n",
                run.summary.name,
                d.direction,
                show(d.path.active_throughput_mbps, " Mbit/s"),
                show(d.path.window_throughput_mbps, " Mbit/s"),
                show(d.path.one_way_delay.as_ref().map(|s| s.p95_ms), " ms"),
                show(d.path.loss.map(|l| l * 100.0), " %"),
                pct(d.path.utilization),
                pct(d.path.window_utilization),
                show(d.fairness.jain, ""),
            ));
        }
    }
}

/// Inputs larger than this get a progress line while they are read.
const PROGRESS_FROM_BYTES: u64 = 256 << 20;

/// A line on stderr, refreshed every second, saying how much of the logs
/// has been read: rewritten in place on a terminal, one line every ten
/// seconds otherwise. Shown only for inputs over [`PROGRESS_FROM_BYTES`]
/// (`EMU_REPORT_PROGRESS_BYTES` sets another threshold).
struct Progress {
    stop: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl Progress {
    fn start(inputs: &[PathBuf]) -> Progress {
        let threshold = std::env::var("EMU_REPORT_PROGRESS_BYTES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(PROGRESS_FROM_BYTES);
        let total = expected_reading(inputs);
        if total < threshold || total == 0 {
            return Progress { stop: None };
        }
        let stop = Arc::new(AtomicBool::new(false));
        let terminal = std::io::stderr().is_terminal();
        let thread = {
            let stop = stop.clone();
            let start = emu_core::progress::bytes_read();
            let began = std::time::Instant::now();
            std::thread::spawn(move || {
                let mut ticks = 0u64;
                while !stop.load(Ordering::Acquire) {
                    std::thread::park_timeout(std::time::Duration::from_secs(1));
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    ticks += 1;
                    let line = progress_text(emu_core::progress::bytes_read() - start, total);
                    if terminal {
                        eprint!("\r\x1b[2K{line}");
                    } else if ticks.is_multiple_of(10) {
                        eprintln!("{line}");
                    }
                }
                if terminal {
                    eprint!("\r\x1b[2K");
                }
                eprintln!(
                    "emu report: read {:.1} MB of logs in {:.1} s",
                    (emu_core::progress::bytes_read() - start) as f64 / 1e6,
                    began.elapsed().as_secs_f64()
                );
            })
        };
        Progress {
            stop: Some((stop, thread)),
        }
    }

    /// Stops and clears the line; later calls do nothing.
    fn finish(&mut self) {
        if let Some((stop, thread)) = self.stop.take() {
            stop.store(true, Ordering::Release);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// `emu report: reading logs: 42% (540 MB of 1.3 GB)`. The total is an
/// estimate, so the share stops at 99% until reading is done.
fn progress_text(read: u64, total: u64) -> String {
    let share = (read as f64 / total as f64 * 100.0).min(99.0);
    format!(
        "emu report: reading logs: {share:.0}% ({:.0} MB of {:.1} GB)",
        read as f64 / 1e6,
        total as f64 / 1e9
    )
}

/// Bytes the report will read: each emu log twice (once per direction),
/// any other file (a Mahimahi log) once.
fn expected_reading(inputs: &[PathBuf]) -> u64 {
    let weight = |path: &std::path::Path| -> u64 {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        match path.extension().and_then(|e| e.to_str()) {
            Some("emulog") => 2 * size,
            Some("json" | "trace" | "html" | "svg") => 0,
            _ => size,
        }
    };
    inputs
        .iter()
        .map(|input| match std::fs::read_dir(input) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .map(|p| weight(&p))
                .sum(),
            Err(_) => weight(input),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        report: ReportArgs,
    }

    /// `emu report RESULTDIR` writes the table's summary.json and the page
    /// into RESULTDIR/report; a run without logs still gets its page.
    #[test]
    fn a_result_directory_gets_its_page_in_its_report_directory() {
        let dir = std::env::temp_dir().join(format!("emu-report-page-{}", std::process::id()));
        let run = dir.join("exp/cell-0/run-0");
        std::fs::create_dir_all(run.join("links")).unwrap();
        let result = r#"{"cell": 0, "cell_label": "(no sweep)", "run": 0, "seed": 1,
            "flows": [{"name": "bulk", "kind": "tcp", "from": "a", "to": "b",
                       "goodput_bps": 1e7, "ended": "exit 0"}],
            "jain_index": null, "accounting_ok": true}"#;
        std::fs::write(run.join("result.json"), result).unwrap();
        let cli = Cli::try_parse_from(["report", dir.join("exp").to_str().unwrap()]).unwrap();
        assert_eq!(run_report(cli.report), 0);
        let out = dir.join("exp/report");
        let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
        assert!(summary.contains("\"bulk\""), "{summary}");
        let page = std::fs::read_to_string(out.join("index.html")).unwrap();
        assert!(page.contains("<td>bulk</td>"), "{page}");
        // The report directory is not taken for results the next time.
        let cli = Cli::try_parse_from(["report", dir.join("exp").to_str().unwrap()]).unwrap();
        assert_eq!(run_report(cli.report), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--table` on a sweep of two axes: the tables printed, on the page
    /// and in tables/; an axis the sweep lacks fails with its name; on
    /// logs (not a sweep) it is refused.
    #[test]
    fn tables_go_to_the_page_and_files() {
        let dir = std::env::temp_dir().join(format!("emu-report-tables-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (cell, (rate, delay)) in [("5mbit", "0ms"), ("5mbit", "10ms"), ("50mbit", "0ms")]
            .into_iter()
            .enumerate()
        {
            let run = dir.join(format!("exp/cell-{cell}/run-0"));
            std::fs::create_dir_all(run.join("links")).unwrap();
            let result = serde_json::json!({"cell": cell, "run": 0, "seed": 1,
                "cell_label": format!("bottleneck.rate={rate} bottleneck.delay={delay}"),
                "flows": [{"name": "bulk", "kind": "tcp", "from": "a", "to": "b", "ended": "exit 0",
                           "whole_flow": {"throughput_bps": 4.0e6 + cell as f64 * 1e6,
                                          "srtt_mean_ms": 20.0 + cell as f64, "samples": 3}}],
                "jain_index": null, "accounting_ok": true});
            std::fs::write(run.join("result.json"), result.to_string()).unwrap();
        }
        let exp = dir.join("exp");
        let args = |extra: &[&str]| {
            let mut argv = vec!["report", exp.to_str().unwrap()];
            argv.extend(extra);
            Cli::try_parse_from(argv).unwrap().report
        };
        let table = [
            "--table",
            "throughput,rtt",
            "--rows",
            "rate",
            "--cols",
            "delay",
        ];
        assert_eq!(run_report(args(&table)), 0);
        let md = std::fs::read_to_string(exp.join("report/tables/tables.md")).unwrap();
        assert!(md.contains("### mean TCP RTT (ms), flow bulk\n"), "{md}");
        assert!(md.contains("| 50mbit "), "{md}");
        let csv =
            std::fs::read_to_string(exp.join("report/tables/02-mean_TCP_RTT__ms___flow_bulk.csv"))
                .unwrap();
        assert_eq!(
            csv,
            "bottleneck.rate \\ bottleneck.delay,0ms,10ms\n5mbit,20.0,21.0\n50mbit,22.0,\n"
        );
        let page = std::fs::read_to_string(exp.join("report/index.html")).unwrap();
        assert!(page.contains("<h2 id=\"tables\">"), "{page}");
        assert!(page.contains("<td>6.00</td>"), "{page}");
        // An axis the sweep lacks: status 1, nothing more written.
        std::fs::remove_dir_all(exp.join("report")).unwrap();
        assert_eq!(
            run_report(args(&[
                "--table", "rtt", "--rows", "queue", "--cols", "delay"
            ])),
            1
        );
        assert!(!exp.join("report").exists());
        // --rows without --table, and a bad metric, are usage errors.
        assert!(Cli::try_parse_from(["report", "x", "--rows", "rate"]).is_err());
        assert!(Cli::try_parse_from([
            "report", "x", "--table", "goodput", "--rows", "a", "--cols", "b"
        ])
        .is_err());
        let not_sweep = dir.join("logs");
        std::fs::create_dir_all(&not_sweep).unwrap();
        let argv = [
            "report",
            not_sweep.to_str().unwrap(),
            "--table",
            "rtt",
            "--rows",
            "a",
            "--cols",
            "b",
        ];
        let error = run(Cli::try_parse_from(argv).unwrap().report)
            .err()
            .unwrap();
        assert!(
            error.0.contains("--table lays out the cells of a sweep"),
            "{}",
            error.0
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn run_report(args: ReportArgs) -> i32 {
        run(args).unwrap_or_else(|e| panic!("{}", e.0))
    }

    #[test]
    fn progress_counts_emu_logs_twice_and_stops_short_of_done() {
        let dir = std::env::temp_dir().join(format!("emu-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("0-link.emulog"), vec![0u8; 1000]).unwrap();
        std::fs::write(dir.join("summary-0.json"), vec![0u8; 500]).unwrap();
        std::fs::write(dir.join("up.log"), vec![0u8; 300]).unwrap();
        assert_eq!(expected_reading(std::slice::from_ref(&dir)), 2300);
        assert_eq!(expected_reading(&[dir.join("0-link.emulog")]), 2000);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            progress_text(540_000_000, 1_300_000_000),
            "emu report: reading logs: 42% (540 MB of 1.3 GB)"
        );
        assert!(progress_text(2_000, 1_000).contains(" 99% "));
    }
}
