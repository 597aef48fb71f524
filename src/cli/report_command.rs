//! `emu report RUN... [--out DIR] [--json] [--bin D] [--from T] [--to T]
//! [--flows SEL]`: numbers and pictures from the packet logs of one or
//! more runs.

use super::UsageError;
use clap::Parser;
use emu_core::time::parse_duration;
use report::{FlowMatch, FlowSelection, Options};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "emu report",
    about = "Numbers and pictures from packet logs: summary.json, series.json, SVG plots and index.html",
    long_about = "Numbers and pictures from packet logs.\n\n\
        Each RUN is a directory that `emu --log DIR` wrote (all its shells \
        together, packets followed across them), a single .emulog file, a \
        Mahimahi link log (--uplink-log), or a directory of Mahimahi logs \
        (one run each). Several runs are compared side by side.\n\n\
        Times take a unit (ns, us, ms, s; a bare number is ms) and count \
        from when the whole path was up (the innermost shell's start)."
)]
struct ReportCli {
    /// Run directories or log files.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// Where to write the report [default: report].
    #[arg(long)]
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

pub fn run(args: &[String]) -> Result<i32, UsageError> {
    let Some(cli) = super::parse_tool_args::<ReportCli>("emu report", args)? else {
        return Ok(0);
    };
    if cli.bin == 0 {
        return Err(UsageError("--bin must be longer than 0".into()));
    }
    if cli.to.is_some_and(|to| to <= cli.from) {
        return Err(UsageError("--to must be later than --from".into()));
    }
    let options = Options {
        bin: cli.bin,
        from: cli.from,
        to: cli.to,
        flows: cli.flows,
    };
    let mut runs = Vec::new();
    for path in &cli.runs {
        match report::load(path, &options) {
            Ok(loaded) => runs.extend(loaded),
            Err(e) => {
                eprintln!("emu report: {e}");
                return Ok(1);
            }
        }
    }
    // Two runs with one name (run1/log, run2/log) would overwrite each
    // other's plots.
    let mut seen = std::collections::HashMap::new();
    for run in &mut runs {
        let n = seen.entry(run.summary.name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            run.summary.name = format!("{} ({})", run.summary.name, n);
        }
    }
    let damaged = runs.iter().any(|r| !r.summary.errors.is_empty());
    for run in &runs {
        for e in &run.summary.errors {
            eprintln!("emu report: {e}");
        }
        for w in &run.summary.warnings {
            eprintln!("emu report: warning: {w}");
        }
    }
    if cli.json {
        let text = serde_json::to_string_pretty(&report::output::summary_json(&runs))
            .map_err(|e| UsageError(e.to_string()))?;
        println!("{text}");
    }
    // --json alone prints and writes nothing; --out (or no --json) writes.
    if !cli.json || cli.out.is_some() {
        let out = cli.out.unwrap_or_else(|| PathBuf::from("report"));
        if let Err(e) = report::output::write(&runs, &out) {
            eprintln!("emu report: writing the report into {}: {e}", out.display());
            return Ok(1);
        }
        if !cli.json {
            print_brief(&runs);
        }
        eprintln!("emu report: wrote {}", out.join("index.html").display());
    }
    Ok(if damaged { 1 } else { 0 })
}

/// One line per run and direction, the figures most people look at first.
fn print_brief(runs: &[report::Run]) {
    let show = |v: Option<f64>, unit: &str| v.map_or("–".into(), |v| format!("{v:.2}{unit}"));
    for run in runs {
        for d in &run.summary.directions {
            println!(
                "{} {}: throughput {}, one-way delay p95 {}, loss {}, utilization {}, Jain {}",
                run.summary.name,
                d.direction,
                show(d.pantheon.throughput_mbps, " Mbit/s"),
                show(d.path.one_way_delay.as_ref().map(|s| s.p95_ms), " ms"),
                show(d.path.loss.map(|l| l * 100.0), " %"),
                show(d.path.utilization.map(|u| u * 100.0), " %"),
                show(d.fairness.jain, ""),
            );
        }
    }
}
