//! One HTML page per experiment `emu run` ran: the table across runs
//! (mean ± standard deviation), then one section per cell of the grid
//! headed by its assignments, and in it per run the flows' charts (by the
//! names the experiment file gave them) and the bottlenecks' queues. The
//! figures are also written as files (SVG, and PNG or PDF on request).
//!
//! Only the bottleneck links' logs are read (`links/bottleneck-B/`), once
//! each: the side links' are left alone, which keeps a page of a long run
//! quick to build.

use crate::draw::plot::escape;
use crate::draw::render::{FigureFormat, Renderer};
use crate::experiments::bottleneck_series::{self, BottleneckSeries};
use crate::experiments::figures::{flow_figures, queue_figures};
use crate::experiments::grid_tables::{self, TableSpec};
use crate::experiments::merge::Merged;
use crate::experiments::results_dir::{
    CellDir, ExperimentDir, RunDir, BOTTLENECK_PREFIX, CLOCK, LINKS_DIR, LOG_EXTENSION, SCHEMES,
};
use crate::experiments::results_schema::{Clock, JainMeasure, Spread};
use crate::experiments::run_flows;
use crate::experiments::table_formats;
use crate::pages::figures::Figure;
use crate::pages::output::{figures_html, write_figure, STYLE};
use emu_core::Nanos;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// How the pages are drawn.
#[derive(Debug, Clone)]
pub struct PageOptions {
    /// The interval of the per-interval series, in ns.
    pub bin: Nanos,
    /// Formats of the figure files besides the SVG the page inlines.
    pub formats: Vec<FigureFormat>,
    /// Tables of one swept axis by another, shown first and written into
    /// `tables/` (an experiment that lacks the axes gets none).
    pub tables: Option<TableSpec>,
}

/// What writing a page gave: its path and what could not be drawn.
#[derive(Debug, Default)]
pub struct Written {
    pub page: PathBuf,
    pub warnings: Vec<String>,
}

/// Writes the page of `experiment` and its figures into `dir`. `table` is
/// the experiment's merged results (each cell with each flow's spread),
/// as `emu report` prints them.
pub fn write(
    experiment: &ExperimentDir,
    table: &Merged,
    dir: &Path,
    options: &PageOptions,
) -> io::Result<Written> {
    std::fs::create_dir_all(dir)?;
    let renderer = options
        .formats
        .iter()
        .any(|f| *f != FigureFormat::Svg)
        .then(Renderer::new);
    let mut warnings = Vec::new();
    let mut html = header(experiment);
    if let Some(tables) = options
        .tables
        .as_ref()
        .and_then(|spec| grid_tables::build(experiment, spec).ok())
    {
        table_formats::write(&tables, dir)?;
        html += &table_formats::html(&tables);
    }
    if let Some(schemes) = compared_schemes(experiment) {
        let figure = crate::pages::figures::Figure {
            stem: "schemes".into(),
            chart: crate::pages::schemes::summary_chart(
                &format!("{}: schemes", experiment.name),
                &schemes,
            ),
        };
        let mut put = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes);
        let svg = write_figure(&figure, renderer.as_ref(), &options.formats, &mut put)?;
        html += "<h2 id=\"schemes\">schemes compared</h2>\n";
        html += &crate::pages::schemes::table_html(&schemes);
        let _ = writeln!(html, "<div class=\"figure\">{svg}</div>");
    }
    for cell in &experiment.cells {
        html += &cell_heading(cell);
        html += &spread_table(table, cell.cell);
        for run in &cell.runs {
            let (figures, links) = run_figures(cell, run, options.bin, &mut warnings);
            let mut svgs = HashMap::new();
            let mut put = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes);
            for f in &figures {
                let svg = write_figure(f, renderer.as_ref(), &options.formats, &mut put)?;
                svgs.insert(f.stem.clone(), svg);
            }
            let _ = writeln!(
                html,
                "<h3 id=\"{}\">run {}</h3>",
                run_anchor(cell.cell, run.run),
                run.run
            );
            html += &timing_warnings(run);
            html += &utilization(cell, &links);
            html += &figures_html(&figures, &svgs);
        }
    }
    for w in &warnings {
        let _ = writeln!(html, "<p class=\"warning\">Warning: {}</p>", escape(w));
    }
    html += "</body></html>\n";
    let page = dir.join("index.html");
    std::fs::write(&page, html)?;
    Ok(Written { page, warnings })
}

/// What the page reads of `schemes.json`.
#[derive(serde::Deserialize)]
struct Compared {
    schemes: Vec<crate::pages::schemes::Scheme>,
}

/// The schemes of a scheme comparison (`emu run` wrote `schemes.json`
/// beside the cells), for the page's first section; None for any other
/// experiment.
fn compared_schemes(experiment: &ExperimentDir) -> Option<Vec<crate::pages::schemes::Scheme>> {
    experiment.dirs.iter().find_map(|dir| {
        let text = std::fs::read_to_string(dir.join(SCHEMES)).ok()?;
        let compared: Compared = serde_json::from_str(&text).ok()?;
        Some(compared.schemes)
    })
}

/// The anchor of a cell's section: `cell-K`.
pub fn cell_anchor(cell: usize) -> String {
    format!("cell-{cell}")
}

fn run_anchor(cell: usize, run: u64) -> String {
    format!("cell-{cell}-run-{run}")
}

fn header(e: &ExperimentDir) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>{0}</title>\n{STYLE}</head><body>\n<h1>{0}</h1>\n",
        escape(&e.name)
    );
    if let Some(s) = &e.scenario {
        let _ = writeln!(
            html,
            "<p>Scenario <b>{}</b>{}</p>",
            escape(s),
            e.variant
                .as_ref()
                .map_or(String::new(), |v| format!(", variant <b>{}</b>", escape(v)))
        );
    }
    html += "<p>Results in ";
    html += &e
        .dirs
        .iter()
        .map(|d| format!("<code>{}</code>", escape(&d.display().to_string())))
        .collect::<Vec<_>>()
        .join(", ");
    html += ". Times count from when the flows started; per-interval series are \
             taken at the first bottleneck.</p>\n";
    if e.cells.len() > 1 {
        html += "<ul>";
        for c in &e.cells {
            let _ = write!(
                html,
                "<li><a href=\"#{}\">{}</a></li>",
                cell_anchor(c.cell),
                escape(&cell_title(c))
            );
        }
        html += "</ul>\n";
    }
    html
}

/// `bottleneck.queue = pie · hosts.a.delay = 10ms`, or the label as is.
pub fn cell_title(cell: &CellDir) -> String {
    let axes = cell.axes();
    if axes.is_empty() {
        return cell.label.clone();
    }
    axes.iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

fn cell_heading(cell: &CellDir) -> String {
    format!(
        "<h2 id=\"{}\">cell {}: {}</h2>\n<p>{} run{}; bottleneck queue{} {}</p>\n",
        cell_anchor(cell.cell),
        cell.cell,
        escape(&cell_title(cell)),
        cell.runs.len(),
        if cell.runs.len() == 1 { "" } else { "s" },
        if cell.queues.len() == 1 { "" } else { "s" },
        if cell.queues.is_empty() {
            "–".to_string()
        } else {
            escape(&cell.queues.join(", "))
        }
    )
}

/// `12.34 ± 0.56` of a spread times `scale`.
fn spread(value: Option<Spread>, scale: f64, decimals: usize) -> String {
    match value {
        Some(s) => format!(
            "{:.decimals$} ± {:.decimals$}",
            s.mean * scale,
            s.stddev * scale
        ),
        None => "–".into(),
    }
}

/// The cell's flows across its runs, mean ± standard deviation.
fn spread_table(table: &Merged, cell: usize) -> String {
    let Some(c) = table.cells.iter().find(|c| c.cell == cell) else {
        return String::new();
    };
    let mut html = format!(
        "<p>Across {} run{} (mean ± standard deviation); Jain's index {}</p>\n\
         <table><tr><th>flow</th><th>congestion control</th><th>goodput (Mbit/s)</th>\
         <th>srtt mean (ms)</th><th>srtt p95 (ms)</th><th>retransmits</th><th>CE marks</th>\
         <th>ping RTT (ms)</th></tr>\n",
        c.runs,
        if c.runs == 1 { "" } else { "s" },
        spread(c.jain_index, 1.0, 3)
            + match c.jain_measure {
                JainMeasure::PathThroughput => " (over the links' throughputs)",
                JainMeasure::Goodput => "",
            }
    );
    for f in &c.flows {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.name),
            escape(f.congestion_control.as_deref().unwrap_or("–")),
            spread(f.goodput_bps, 1e-6, 2),
            spread(f.srtt_mean_ms, 1.0, 1),
            spread(f.srtt_p95_ms, 1.0, 1),
            spread(f.retransmits, 1.0, 0),
            spread(f.ce_marks, 1.0, 0),
            spread(f.ping_rtt_mean_ms, 1.0, 1),
        );
    }
    html + "</table>\n"
}

/// The monotonic instant the run's flows started (`clock.json`).
fn flows_started(run: &Path) -> Option<Nanos> {
    let text = std::fs::read_to_string(run.join(CLOCK)).ok()?;
    let clock: Clock = serde_json::from_str(&text).ok()?;
    clock.flows_started_monotonic_ns
}

/// Each bottleneck's log in a run: `links/bottleneck-B/*.emulog`, by B.
fn bottleneck_logs(run: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(run.join(LINKS_DIR)) else {
        return Vec::new();
    };
    let mut links: Vec<(u64, String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let b = name.strip_prefix(BOTTLENECK_PREFIX)?.parse().ok()?;
            let log = std::fs::read_dir(e.path())
                .ok()?
                .flatten()
                .map(|f| f.path())
                .filter(|p| p.extension().is_some_and(|x| x == LOG_EXTENSION))
                .min()?;
            Some((b, name, log))
        })
        .collect();
    links.sort();
    links.into_iter().map(|(_, n, p)| (n, p)).collect()
}

/// What the run said of its own timing (`timing_warnings` in its
/// result.json): its figures are those of a path slower or burstier than
/// the one configured.
fn timing_warnings(run: &RunDir) -> String {
    run.result
        .timing_warnings
        .iter()
        .map(|w| {
            format!(
                "<p class=\"warning\">This run did not keep time: {}</p>\n",
                escape(w)
            )
        })
        .collect()
}

/// Each bottleneck's throughput and utilization in each direction its
/// flows took: over the time they were active, and over the whole run.
fn utilization(cell: &CellDir, links: &[(String, BottleneckSeries)]) -> String {
    let mut html = String::new();
    for (b, (link, s)) in links.iter().enumerate() {
        for (d, direction) in ["uplink", "downlink"].into_iter().enumerate() {
            let Some((active, whole)) = s.throughput_mbps(direction) else {
                continue;
            };
            let rate = cell.rates.get(b).and_then(|r| r[d]).map(|r| r / 1e6);
            let share = |mbps: f64| {
                rate.filter(|&r| r > 0.0)
                    .map_or(String::new(), |r| format!(" ({:.1} %)", mbps / r * 100.0))
            };
            let _ = writeln!(
                html,
                "<p>{} {direction}: {active:.2} Mbit/s while the flows were active{}, {whole:.2} Mbit/s{} from their start to the end of the log{}</p>",
                escape(link),
                share(active),
                share(whole),
                rate.map_or(String::new(), |r| format!(", of {r:.2} Mbit/s"))
            );
        }
    }
    html
}

/// The charts of one run: its flows' (from the first bottleneck), then
/// each bottleneck's queues; and the bottlenecks' series.
fn run_figures(
    cell: &CellDir,
    run: &RunDir,
    bin: Nanos,
    warnings: &mut Vec<String>,
) -> (Vec<Figure>, Vec<(String, BottleneckSeries)>) {
    let flows = run_flows::load(&run.dir, &run.result, &cell.dir);
    let origin = flows_started(&run.dir);
    if origin.is_none() {
        warnings.push(format!(
            "{}: no clock.json with flows_started_monotonic_ns, so the logs cannot be \
             placed in time; only TCP's samples are drawn",
            run.dir.display()
        ));
    }
    let mut series: Vec<(String, BottleneckSeries)> = Vec::new();
    for (b, (link, log)) in bottleneck_logs(&run.dir).into_iter().enumerate() {
        let Some(origin) = origin else { break };
        let dual = cell
            .queues
            .get(b)
            .is_some_and(|q| bottleneck_series::is_dual(q));
        match bottleneck_series::read(&log, &flows, origin, bin, dual) {
            Ok(s) => series.push((link, s)),
            Err(e) => warnings.push(format!("{e}; that bottleneck is left out")),
        }
    }
    let stem = format!("cell-{}-run-{}", cell.cell, run.run);
    let title = format!("cell {}, run {}", cell.cell, run.run);
    // Every bottleneck's changes, once each, in time order.
    let mut changes: Vec<bottleneck_series::PathChange> = Vec::new();
    for change in series.iter().flat_map(|(_, s)| &s.changes) {
        if !changes.contains(change) {
            changes.push(change.clone());
        }
    }
    changes.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    let first = series.first().map(|(_, s)| s);
    let mut figures = flow_figures(&flows, first, &changes, &title, &stem);
    for (link, s) in &series {
        figures.extend(queue_figures(
            s,
            &format!("{title}, {link}"),
            &format!("{stem}-{link}"),
        ));
    }
    (figures, series)
}
