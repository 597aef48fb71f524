//! Writes a report: `summary.json` (every figure), `series.json` (the
//! per-bin series behind the plots), one SVG per chart, and `index.html`,
//! one self-contained page (tables and the SVGs inline) that reads offline.

use crate::analysis::summary::{DelayStats, DirectionSummary};
use crate::draw::plot::escape;
use crate::draw::render::{FigureFormat, Renderer};
use crate::logs::run::Run;
use crate::pages::figures::{comparison_figures, direction_figures, tcp_figures, Figure};
use serde_json::json;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Everything numeric about the runs, as `summary.json` holds it.
pub fn summary_json(runs: &[Run]) -> serde_json::Value {
    json!({ "runs": runs.iter().map(|r| &r.summary).collect::<Vec<_>>() })
}

fn series_json(runs: &[Run]) -> serde_json::Value {
    json!({ "runs": runs.iter().map(|r| json!({
        "name": r.summary.name,
        "directions": r.series,
    })).collect::<Vec<_>>() })
}

/// Writes the report into `dir` (created if needed); returns the files.
pub fn write(runs: &[Run], dir: &Path) -> io::Result<Vec<PathBuf>> {
    write_figures_as(runs, dir, &[FigureFormat::Svg])
}

/// Writes the report with every figure also in each of `formats` (next to
/// its SVG: `throughput.svg`, `throughput.png`, `throughput.pdf`). The SVGs
/// are always written: the page shows them.
pub fn write_figures_as(
    runs: &[Run],
    dir: &Path,
    formats: &[FigureFormat],
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let renderer = formats
        .iter()
        .any(|f| *f != FigureFormat::Svg)
        .then(Renderer::new);
    let mut written = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| -> io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, bytes)?;
        written.push(path);
        Ok(())
    };
    let to_text = |v: serde_json::Value| serde_json::to_string_pretty(&v).map_err(io::Error::other);
    put(
        "summary.json",
        (to_text(summary_json(runs))? + "\n").as_bytes(),
    )?;
    put(
        "series.json",
        (to_text(series_json(runs))? + "\n").as_bytes(),
    )?;
    let compared = comparison_figures(runs);
    let per_run: Vec<Vec<Figure>> = runs
        .iter()
        .map(|run| {
            run.series
                .iter()
                .flat_map(|s| direction_figures(&run.summary.name, s))
                .chain(tcp_figures(run))
                .collect()
        })
        .collect();
    let mut svgs = std::collections::HashMap::new();
    for figure in compared.iter().chain(per_run.iter().flatten()) {
        let svg = write_figure(figure, renderer.as_ref(), formats, &mut put)?;
        svgs.insert(figure.stem.clone(), svg);
    }
    put(
        "index.html",
        page(runs, &compared, &per_run, &svgs).as_bytes(),
    )?;
    Ok(written)
}

/// Writes `figure` as `STEM.svg` and in each other of `formats` through
/// `put` (file name, bytes); returns the SVG, for the page to inline.
pub(crate) fn write_figure(
    figure: &Figure,
    renderer: Option<&Renderer>,
    formats: &[FigureFormat],
    put: &mut dyn FnMut(&str, &[u8]) -> io::Result<()>,
) -> io::Result<String> {
    let svg = figure.chart.svg();
    put(&format!("{}.svg", figure.stem), svg.as_bytes())?;
    if let Some(renderer) = renderer {
        for format in formats.iter().filter(|f| **f != FigureFormat::Svg) {
            let bytes = renderer.render(&svg, *format).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("{}.{}: {e}", figure.stem, format.extension()),
                )
            })?;
            put(&format!("{}.{}", figure.stem, format.extension()), &bytes)?;
        }
    }
    Ok(svg)
}

/// The pages' shared style sheet.
pub(crate) const STYLE: &str = "<style>\n\
         body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1600px}\n\
         table{border-collapse:collapse;margin:.5em 0 1em}\n\
         td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;font-size:13px}\n\
         td:first-child,th:first-child{text-align:left}\n\
         th{background:#f2f2f2}\n\
         .figures{display:flex;flex-wrap:wrap;gap:8px}\n\
         figure{margin:0;border:1px solid #eee}\n\
         .error{color:#a00}.warning{color:#a60}\n\
         code{background:#f6f6f6;padding:1px 4px}\n\
         td.pair,table.pairs th{text-align:left;vertical-align:top}\n\
         </style>";

fn num(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "–".into(),
    }
}

fn percent(value: Option<f64>) -> String {
    num(value.map(|v| v * 100.0), 2) + if value.is_some() { " %" } else { "" }
}

fn delay_text(d: &Option<DelayStats>, pick: fn(&DelayStats) -> f64) -> String {
    num(d.as_ref().map(pick), 3)
}

fn drops_text(drops: &std::collections::BTreeMap<&'static str, u64>) -> String {
    if drops.is_empty() {
        return "0".into();
    }
    drops
        .iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One table row per metric, one column per direction.
// Long: one row per metric, the table as data.
fn path_table(directions: &[DirectionSummary]) -> String {
    type Cell = fn(&DirectionSummary) -> String;
    let rows: Vec<(&str, Cell)> = vec![
        ("packets entering the path", |d| d.path.arrivals.to_string()),
        ("delivered", |d| d.path.delivered.to_string()),
        ("dropped", |d| {
            format!("{} ({})", d.path.dropped, drops_text(&d.path.drops))
        }),
        ("in flight at the end", |d| {
            d.path.in_flight_at_end.to_string()
        }),
        ("sent from between shells (not counted)", |d| {
            d.path.entered_mid_path.to_string()
        }),
        ("loss (packets)", |d| percent(d.path.loss)),
        ("throughput, first to last delivery (Mbit/s)", |d| {
            num(d.path.throughput_mbps, 3)
        }),
        ("time the flows were active (s)", |d| {
            match (d.path.active_from_s, d.path.active_to_s) {
                (Some(a), Some(b)) => format!("{a:.3} – {b:.3}"),
                _ => "–".into(),
            }
        }),
        ("throughput while the flows were active (Mbit/s)", |d| {
            num(d.path.active_throughput_mbps, 3)
        }),
        ("throughput over the window (Mbit/s)", |d| {
            num(d.path.window_throughput_mbps, 3)
        }),
        ("bottleneck capacity (Mbit/s), set by", |d| {
            with_source(num(d.path.capacity_mbps, 3), d.path.capacity_source)
        }),
        ("utilization while the flows were active", |d| {
            percent(d.path.utilization)
        }),
        ("utilization over the window", |d| {
            percent(d.path.window_utilization)
        }),
        ("one-way delay mean (ms)", |d| {
            delay_text(&d.path.one_way_delay, |s| s.mean_ms)
        }),
        ("one-way delay median (ms)", |d| {
            delay_text(&d.path.one_way_delay, |s| s.p50_ms)
        }),
        ("one-way delay p95 (ms)", |d| {
            delay_text(&d.path.one_way_delay, |s| s.p95_ms)
        }),
        ("one-way delay p99 (ms)", |d| {
            delay_text(&d.path.one_way_delay, |s| s.p99_ms)
        }),
        ("one-way delay max (ms)", |d| {
            delay_text(&d.path.one_way_delay, |s| s.max_ms)
        }),
        ("CE marks (per delivered packet)", |d| {
            format!(
                "{} ({})",
                d.path.marks.ce,
                percent(d.path.marks.ce_per_delivered)
            )
        }),
        ("ECT(1) marks (per delivered packet)", |d| {
            format!(
                "{} ({})",
                d.path.marks.ect1,
                percent(d.path.marks.ect1_per_delivered)
            )
        }),
        ("common window of the flows (s)", |d| {
            match (d.fairness.common_from_s, d.fairness.common_to_s) {
                (Some(a), Some(b)) => format!("{a:.3} – {b:.3}"),
                _ => "– (the flows never all ran at once)".into(),
            }
        }),
        ("Jain's index over the common window (flows)", |d| {
            format!("{} ({})", num(d.fairness.jain, 4), d.fairness.flows)
        }),
        ("Jain's index of own-span throughputs", |d| {
            num(d.fairness.jain_over_own_spans, 4)
        }),
        (
            "Jain's index per bin, mean over bins where ≥ 2 flows are active",
            |d| num(d.fairness.jain_mean_over_bins, 4),
        ),
        ("Pantheon: throughput (Mbit/s)", |d| {
            num(d.pantheon.throughput_mbps, 2)
        }),
        ("Pantheon: p95 one-way delay (ms)", |d| {
            num(d.pantheon.delay_p95_ms, 3)
        }),
        ("Pantheon: loss (bytes)", |d| percent(d.pantheon.loss)),
    ];
    let mut html = String::from("<table><tr><th></th>");
    for d in directions {
        let _ = write!(html, "<th>{}</th>", d.direction);
    }
    html += "</tr>\n";
    for (name, cell) in rows {
        let _ = write!(html, "<tr><td>{name}</td>");
        for d in directions {
            let _ = write!(html, "<td>{}</td>", escape(&cell(d)));
        }
        html += "</tr>\n";
    }
    html + "</table>\n"
}

fn shells_table(d: &DirectionSummary) -> String {
    let mut html = String::from(
        "<table><tr><th>shell</th><th>arrivals</th><th>departures</th><th>drops</th>\
         <th>sojourn p95 (ms)</th><th>transit p95 (ms)</th><th>queue mean / max (KB)</th>\
         <th>capacity (Mbit/s)</th><th>utilization</th><th>Mahimahi: capacity, throughput, \
         p95 queueing delay, p95 signal delay</th></tr>\n",
    );
    for s in &d.shells {
        let mahimahi = s.mahimahi.as_ref().map_or("–".to_string(), |m| {
            format!(
                "{:.2} Mbit/s, {:.2} Mbit/s ({:.1} %), {} ms, {} ms",
                m.average_capacity_mbps,
                m.average_throughput_mbps,
                m.utilization * 100.0,
                m.queueing_delay_p95_ms,
                m.signal_delay_p95_ms
            )
        });
        let _ = writeln!(
            html,
            "<tr><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{:.1} / {:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.shell,
            escape(&s.description),
            s.arrivals,
            s.departures,
            escape(&drops_text(&s.drops)),
            delay_text(&s.sojourn, |x| x.p95_ms),
            delay_text(&s.transit, |x| x.p95_ms),
            s.queue.mean_bytes / 1000.0,
            s.queue.max_bytes as f64 / 1000.0,
            escape(&with_source(num(s.capacity_mbps, 3), s.capacity_source)),
            percent(s.utilization),
            mahimahi
        );
    }
    html + "</table>\n"
}

/// A capacity with what set it: `10.000 (queue shaper)`.
fn with_source(value: String, source: Option<&str>) -> String {
    match source {
        Some(source) => format!("{value} ({source})"),
        None => value,
    }
}

fn flows_table(d: &DirectionSummary) -> String {
    let mut html = String::from(
        "<table><tr><th>flow</th><th>id</th><th>delivered</th><th>first – last delivery (s)</th>\
         <th>throughput over its own span (Mbit/s)</th>\
         <th>throughput over the report window (Mbit/s)</th>\
         <th>throughput over the common window (Mbit/s), share</th><th>loss</th><th>delay p50 / p95 / p99 (ms)</th>\
         <th>drops</th><th>CE</th><th>ECT(1)</th></tr>\n",
    );
    for f in &d.flows {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{} packets, {} bytes</td><td>{} – {}</td><td>{}</td>\
             <td>{}</td><td>{}, {}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&format!(
                "{}{}",
                f.name.as_deref().unwrap_or("(not named in the log)"),
                if f.in_fairness { "" } else { " (not in Jain's index)" }
            )),
            f.flow,
            f.delivered,
            f.delivered_bytes,
            num(f.first_delivery_s, 3),
            num(f.last_delivery_s, 3),
            num(f.throughput_mbps, 3),
            num(f.window_throughput_mbps, 3),
            num(f.common_window_throughput_mbps, 3),
            percent(f.common_window_share),
            percent(f.loss),
            delay_text(&f.one_way_delay, |x| x.p50_ms),
            delay_text(&f.one_way_delay, |x| x.p95_ms),
            delay_text(&f.one_way_delay, |x| x.p99_ms),
            escape(&drops_text(&f.drops)),
            f.marks.ce,
            f.marks.ect1
        );
    }
    if d.other_flows.count > 0 {
        let _ = writeln!(
            html,
            "<tr><td colspan=\"12\">and {} smaller flows ({} bytes), left out of the rows, \
             the plots and Jain's index (see --flows)</td></tr>",
            d.other_flows.count, d.other_flows.delivered_bytes
        );
    }
    html + "</table>\n"
}

/// TCP's view of each sampled connection beside the packets' own delays.
fn tcp_table(tcp: &[crate::logs::tcp::TcpSummary]) -> String {
    let mut html = String::from(
        "<p>srtt is the sender's smoothed round-trip estimate (TCP_INFO, as <code>ss</code> \
         shows it): it covers both directions of the path and also the time the receiver \
         holds its delayed ACKs and the time data and ACKs spend in the two hosts' stacks, \
         so it sits above the round trip the packets had on the path (the two directions' \
         median one-way delays added up).</p>\n\
         <table><tr><th>connection</th><th>flows in the log</th><th>congestion control</th>\
         <th>samples</th><th>srtt mean / p50 / p95 / p99 (ms)</th><th>min RTT (ms)</th>\
         <th>path round trip, p50 one-way delays added (ms)</th><th>cwnd mean / max (packets)</th>\
         <th>bytes acked</th></tr>\n",
    );
    for t in tcp {
        let srtt = |pick: fn(&DelayStats) -> f64| delay_text(&t.srtt, pick);
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {} / {}</td><td>{}</td>             <td>{}</td><td>{} / {}</td><td>{}</td></tr>",
            escape(&t.socket),
            if t.flows.is_empty() {
                "(none matched)".to_string()
            } else {
                t.flows.iter().map(|f| escape(f)).collect::<Vec<_>>().join("<br>")
            },
            escape(&t.congestion_control),
            t.samples,
            srtt(|s| s.mean_ms),
            srtt(|s| s.p50_ms),
            srtt(|s| s.p95_ms),
            srtt(|s| s.p99_ms),
            num(t.min_rtt_ms, 3),
            num(t.path_rtt_p50_ms, 3),
            num(t.cwnd_mean, 1),
            t.cwnd_max.map_or("–".to_string(), |c| c.to_string()),
            t.bytes_acked
        );
    }
    html + "</table>
"
}

pub(crate) fn figures_html(
    figures: &[Figure],
    svgs: &std::collections::HashMap<String, String>,
) -> String {
    let mut html = String::from("<div class=\"figures\">\n");
    for f in figures {
        if let Some(svg) = svgs.get(&f.stem) {
            let _ = writeln!(html, "<figure id=\"{}\">{svg}</figure>", escape(&f.stem));
        }
    }
    html + "</div>\n"
}

// Long: the page's HTML in reading order, one section after another.
fn page(
    runs: &[Run],
    compared: &[Figure],
    per_run: &[Vec<Figure>],
    svgs: &std::collections::HashMap<String, String>,
) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>emu report</title>\n{STYLE}</head><body>\n<h1>emu report</h1>\n"
    );
    if runs.len() > 1 || !compared.is_empty() {
        html += if runs.len() > 1 {
            "<h2>Runs compared</h2>\n"
        } else {
            "<h2>Summary</h2>\n"
        };
        html += "<table><tr><th>run</th><th>direction</th>\
                 <th>throughput (Mbit/s)</th><th>p95 one-way delay (ms)</th><th>loss</th>\
                 <th>utilization (flows active)</th><th>utilization (window)</th>\
                 <th>Jain's index (common window)</th></tr>\n";
        for run in runs {
            for d in &run.summary.directions {
                let _ = writeln!(
                    html,
                    "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&crate::pages::figures::slug(&run.summary.name)),
                    escape(&run.summary.name),
                    d.direction,
                    num(d.pantheon.throughput_mbps, 3),
                    num(d.pantheon.delay_p95_ms, 3),
                    percent(d.pantheon.loss),
                    percent(d.path.utilization),
                    percent(d.path.window_utilization),
                    num(d.fairness.jain, 4)
                );
            }
        }
        html += "</table>\n";
        html += &figures_html(compared, svgs);
    }
    for (run, figures) in runs.iter().zip(per_run) {
        let s = &run.summary;
        let _ = writeln!(
            html,
            "<h2 id=\"{}\">{}</h2>\n<p>{} logs from <code>{}</code></p>",
            escape(&crate::pages::figures::slug(&s.name)),
            escape(&s.name),
            s.format,
            escape(&s.source)
        );
        if !s.command_line.is_empty() {
            let _ = writeln!(
                html,
                "<p>Command: <code>{}</code></p>",
                escape(&s.command_line)
            );
        }
        html += "<p>Shells (0 is the outermost):</p><ul>";
        for shell in &s.shells {
            let _ = write!(html, "<li>{}</li>", escape(shell));
        }
        html += "</ul>\n";
        for e in &s.errors {
            let _ = writeln!(html, "<p class=\"error\">Error: {}</p>", escape(e));
        }
        for w in &s.warnings {
            let _ = writeln!(html, "<p class=\"warning\">Warning: {}</p>", escape(w));
        }
        if let Some(d) = s.directions.first() {
            let _ = writeln!(
                html,
                "<p>Window {:.3} s to {:.3} s, bins of {} ms.</p>",
                d.from_s,
                d.to_s,
                d.bin_s * 1000.0
            );
        }
        html += "<h3>The path</h3>\n";
        html += &path_table(&s.directions);
        for d in &s.directions {
            let _ = writeln!(html, "<h3>{}: shells</h3>", d.direction);
            html += &shells_table(d);
            let _ = writeln!(html, "<h3>{}: flows</h3>", d.direction);
            html += &flows_table(d);
        }
        if !s.tcp.is_empty() {
            html += "<h3>TCP's view (TCP_INFO samples)</h3>\n";
            html += &tcp_table(&s.tcp);
        }
        html += &figures_html(figures, svgs);
    }
    html + "</body></html>\n"
}
