//! One run: finds its logs (emu's binary logs, or Mahimahi text logs),
//! reads every direction and gathers the summaries and series.

use crate::analysis::direction::{DirectionAnalysis, MAX_BINS};
use crate::analysis::events::{Options, Unmatched};
use crate::analysis::summary::{DirectionSeries, DirectionSummary};
use crate::logs::emu_reader::EmuRun;
use crate::logs::mahimahi_reader;
use crate::logs::tcp::{TcpSocket, TcpSummary};
use emu_core::log::{Direction, LogError, MAGIC};
use emu_core::progress::Counted;
use emu_core::Nanos;
use serde::Serialize;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunSummary {
    pub name: String,
    pub source: String,
    /// `emu` or `mahimahi`.
    pub format: &'static str,
    pub command_line: String,
    pub shells: Vec<String>,
    /// Things left out of the report, with why.
    pub warnings: Vec<String>,
    /// Damage in the logs: the report covers what came before it.
    pub errors: Vec<String>,
    pub directions: Vec<DirectionSummary>,
    /// TCP's own view (TCP_INFO samples), one entry per sampled socket;
    /// empty when the run was not sampled.
    pub tcp: Vec<TcpSummary>,
}

#[derive(Debug, Clone)]
pub struct Run {
    pub summary: RunSummary,
    pub series: Vec<DirectionSeries>,
    /// The sampled sockets behind `summary.tcp`, for the srtt and cwnd plots.
    pub tcp: Vec<TcpSocket>,
}

impl Run {
    /// Adds TCP samples to the run: each socket is summarized, matched to
    /// the log's named flows by 5-tuple (either direction of the
    /// connection, as the flow entered or left the path), and set beside
    /// their one-way delays. `emu report` calls it for the `tcp/` samples
    /// next to the logs; a caller with samples of its own (an experiment
    /// runner) may call it too.
    ///
    /// A connection none of whose packets are among the flows shown (the
    /// control connection beside an iperf3 test, under the default
    /// `--flows significant`) is left out, as its packets are; where the
    /// log names no flows (older logs), every connection stays.
    pub fn attach_tcp(&mut self, sockets: Vec<TcpSocket>) {
        let named = self
            .summary
            .directions
            .iter()
            .any(|d| d.flows.iter().any(|f| f.tuple.is_some()));
        for socket in sockets {
            let mut summary = TcpSummary::of(&socket);
            let mut medians = Vec::new();
            for d in &self.summary.directions {
                for f in &d.flows {
                    let matches = f
                        .tuple
                        .iter()
                        .chain(f.left_as.iter())
                        .any(|t| socket.is_flow(t));
                    if matches {
                        summary.flows.push(format!(
                            "{}: {} ({})",
                            d.direction,
                            f.name.as_deref().unwrap_or("unnamed"),
                            f.flow
                        ));
                        if let Some(delay) = &f.one_way_delay {
                            medians.push(delay.p50_ms);
                        }
                    }
                }
            }
            if named && summary.flows.is_empty() {
                continue;
            }
            // Both directions' packets matched: their medians add up to the
            // round trip the path alone gave the connection.
            summary.path_rtt_p50_ms = (medians.len() == 2).then(|| medians.iter().sum());
            self.summary.tcp.push(summary);
            self.tcp.push(socket);
        }
    }
}

fn named(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The runs at `path`: a directory `emu --log` wrote (one run), a
/// directory of Mahimahi logs (one run each), or one log file of either
/// kind.
pub fn load(path: &Path, options: &Options) -> Result<Vec<Run>, String> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| format!("{}: cannot list the directory: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        entries.sort();
        let emu: Vec<PathBuf> = entries
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "emulog"))
            .cloned()
            .collect();
        if !emu.is_empty() {
            return Ok(vec![emu_run(named(path), path, &emu, options)?]);
        }
        let mahimahi: Vec<&PathBuf> = entries.iter().filter(|p| is_mahimahi(p)).collect();
        if mahimahi.is_empty() {
            return Err(format!(
                "{}: no emu logs (*.emulog) and no Mahimahi logs in this directory; \
                 give the directory that `emu --log DIR` wrote, or a log file",
                path.display()
            ));
        }
        return mahimahi
            .into_iter()
            .map(|p| mahimahi_run(named(p), p, options))
            .collect();
    }
    let mut magic = [0u8; 7];
    let mut file =
        std::fs::File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    let is_emu = file.read_exact(&mut magic).is_ok() && magic == MAGIC[..7];
    // A file is named with its directory too: runs often differ only there
    // (cubic/up.log, bbr/up.log).
    let name = match path.parent().and_then(Path::file_name) {
        Some(parent) => format!("{}/{}", parent.to_string_lossy(), named(path)),
        None => named(path),
    };
    if is_emu {
        Ok(vec![emu_run(name, path, &[path.to_path_buf()], options)?])
    } else {
        Ok(vec![mahimahi_run(name, path, options)?])
    }
}

fn is_mahimahi(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = String::new();
    BufReader::new(file.take(4096))
        .read_line(&mut first)
        .is_ok()
        && mahimahi_reader::looks_like_mahimahi(&first)
}

fn describe(e: &LogError) -> String {
    format!(
        "{}: at byte {}: {}; the report covers what came before",
        e.path.display(),
        e.offset,
        e.message
    )
}

fn emu_run(
    name: String,
    source: &Path,
    files: &[PathBuf],
    options: &Options,
) -> Result<Run, String> {
    // A file whose header cannot be read is left out, and said so.
    let (run, unreadable) = EmuRun::open(files);
    let mut errors: Vec<String> = unreadable
        .iter()
        .map(|e| format!("{e}; this file is left out"))
        .collect();
    if run.files.is_empty() {
        return Err(errors.join("\n"));
    }
    let mut warnings = Vec::new();
    let mut analyses = Vec::new();
    let mut end = 0;
    for direction in Direction::BOTH {
        let (shells, trace_warnings) = run.shells(direction);
        warnings.extend(trace_warnings);
        let (entry, exit) = run.ends(direction);
        let mut analysis = DirectionAnalysis::new(direction, options.clone(), shells, entry, exit);
        let (unmatched, last, read_errors) = run.feed(direction, &mut analysis);
        warnings.extend(horizon_warning(&analysis, options));
        end = end.max(last);
        for e in read_errors {
            let text = describe(&e);
            if !errors.contains(&text) {
                errors.push(text);
            }
        }
        analyses.push((analysis, unmatched));
    }
    let (directions, series) = finish_all(analyses, end);
    warnings.extend(empty_window_warning(&directions, options));
    let first = &run.files[0].1;
    let log_dir = if source.is_dir() {
        source
    } else {
        source.parent().unwrap_or(Path::new("."))
    };
    let sockets = tcp_samples(log_dir, run.origin, &mut warnings);
    let mut result = Run {
        summary: RunSummary {
            name,
            source: source.display().to_string(),
            format: "emu",
            command_line: first.command_line.clone(),
            shells: run
                .files
                .iter()
                .map(|(_, h)| format!("{}: {}", h.shell, h.description))
                .collect(),
            warnings,
            errors,
            directions,
            tcp: Vec::new(),
        },
        series,
        tcp: Vec::new(),
    };
    result.attach_tcp(sockets);
    // One link of an experiment: the hosts' side links (and their delays)
    // are in logs of their own, so the round trip beside srtt is this
    // link's, not the connection's whole path.
    if !result.summary.tcp.is_empty() && !log_dir.join("tcp").is_dir() {
        result.summary.warnings.push(format!(
            "{} is one link of an experiment: its \"path round trip\" beside srtt is this \
             link's alone, without the other links' delays (the hosts' side links), which \
             srtt includes",
            log_dir.display()
        ));
    }
    Ok(result)
}

/// The TCP samples beside the logs in `log_dir`, if any; a warning where
/// they cannot be read.
fn tcp_samples(
    log_dir: &Path,
    origin: Nanos,
    warnings: &mut Vec<String>,
) -> Vec<crate::logs::tcp::TcpSocket> {
    match crate::logs::tcp::samples_dir(log_dir) {
        Some(dir) => crate::logs::tcp::load(&dir, origin).unwrap_or_else(|e| {
            warnings.push(format!("TCP samples left out: {e}"));
            Vec::new()
        }),
        None => Vec::new(),
    }
}

fn finish_all(
    analyses: Vec<(DirectionAnalysis, Unmatched)>,
    end: u64,
) -> (Vec<DirectionSummary>, Vec<DirectionSeries>) {
    analyses
        .into_iter()
        .filter(|(a, _)| !a.is_empty())
        .map(|(a, unmatched)| a.finish(end, unmatched))
        .unzip()
}

/// Says how many events lay beyond the report's last bin, if any did.
fn horizon_warning(analysis: &DirectionAnalysis, options: &Options) -> Option<String> {
    let beyond = analysis.beyond_horizon();
    (beyond > 0).then(|| {
        format!(
            "{beyond} events lie more than {MAX_BINS} bins of {} ms after the start and are \
             left out; a wider --bin or --from/--to covers them",
            options.bin as f64 / 1e6
        )
    })
}

/// Says so when --from/--to leave no packet in the report: its figures
/// are then all empty, which alone reads like a path that carried nothing.
fn empty_window_warning(directions: &[DirectionSummary], options: &Options) -> Option<String> {
    let windowed = options.from > 0 || options.to.is_some();
    let empty = directions.iter().all(|d| d.path.arrivals == 0);
    (windowed && empty).then(|| {
        let time = |t| emu_core::time::format_duration(t).replace(' ', "");
        let window = match options.to {
            Some(to) => format!(
                "between --from {} and --to {}",
                time(options.from),
                time(to)
            ),
            None => format!("after --from {}", time(options.from)),
        };
        format!("no packet arrived {window}: the window lies outside the log")
    })
}

fn mahimahi_run(name: String, path: &Path, options: &Options) -> Result<Run, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("{}: cannot open: {e}", path.display()))?;
    let (header, analysis, in_flight, end, error) =
        mahimahi_reader::analyze(BufReader::new(Counted(file)), options.clone());
    let error = error.map(|e| {
        format!(
            "{}: line {} (byte {}): {}; the report covers what came before",
            path.display(),
            e.line,
            e.offset,
            e.message
        )
    });
    if analysis.is_empty() {
        return Err(error.unwrap_or_else(|| {
            format!(
                "{}: not an emu log and no Mahimahi log events in it",
                path.display()
            )
        }));
    }
    let unmatched = Unmatched {
        in_flight,
        entered_mid_path: 0,
    };
    let mut warnings: Vec<String> = horizon_warning(&analysis, options).into_iter().collect();
    let (directions, series) = finish_all(vec![(analysis, unmatched)], end);
    warnings.extend(empty_window_warning(&directions, options));
    Ok(Run {
        summary: RunSummary {
            name,
            source: path.display().to_string(),
            format: "mahimahi",
            command_line: header.command_line,
            shells: vec![format!("0: {} queue {}", header.description, header.queue)],
            warnings,
            errors: error.into_iter().collect(),
            directions,
            tcp: Vec::new(),
        },
        series,
        tcp: Vec::new(),
    })
}
