//! A comparison of congestion-control schemes as Pantheon shows one: per
//! scheme, every run's mean throughput against its 95th-percentile
//! one-way delay (the delay axis reversed, so better is up and right)
//! with the one-standard-deviation ellipse of the scheme's runs, and a
//! table of each figure's mean ± standard deviation across runs.
//!
//! Plain data in, SVG and HTML fragments out, so any page can embed them.

use crate::draw::plot::{color, escape, Chart, Series, Style};
use crate::measures::statistics::Spread;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// One run of one scheme: its flow's figures from the links' logs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemeRun {
    pub throughput_mbps: f64,
    pub delay_p95_ms: f64,
    pub loss_percent: Option<f64>,
}

/// A scheme by its name (a wrapper's or a congestion control's), and its
/// runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scheme {
    pub name: String,
    pub runs: Vec<SchemeRun>,
    /// Runs whose flow moved no data, each as `run R: how it ended`: a
    /// failure, shown in the table's runs column, not left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// The table's rows: scheme, runs, then throughput (Mbit/s), p95 one-way
/// delay (ms) and loss (%), each `mean ± std`.
pub fn rows(schemes: &[Scheme]) -> Vec<[String; 5]> {
    schemes
        .iter()
        .map(|s| {
            let none = if s.runs.is_empty() && !s.failed.is_empty() {
                "no data"
            } else {
                "-"
            };
            let show = |values: Vec<f64>, digits: usize| match Spread::of(&values) {
                Some(Spread {
                    mean: m, stddev: s, ..
                }) => format!("{m:.digits$} ± {s:.digits$}"),
                None => none.to_string(),
            };
            [
                s.name.clone(),
                match s.failed.len() {
                    0 => s.runs.len().to_string(),
                    n => format!("{} + {n} failed", s.runs.len()),
                },
                show(s.runs.iter().map(|r| r.throughput_mbps).collect(), 2),
                show(s.runs.iter().map(|r| r.delay_p95_ms).collect(), 1),
                show(s.runs.iter().filter_map(|r| r.loss_percent).collect(), 2),
            ]
        })
        .collect()
}

const HEADER: [&str; 5] = [
    "scheme",
    "runs",
    "throughput Mbit/s",
    "owd p95 ms",
    "loss %",
];

/// The table as aligned text.
pub fn table_text(schemes: &[Scheme]) -> String {
    let rows = rows(schemes);
    let header = HEADER.map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| match i {
                0 => format!("{c:<w$}"),
                _ => format!("{c:>w$}"),
            })
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    for failure in failures(schemes) {
        let _ = writeln!(out, "  {failure}");
    }
    out
}

/// Each run that moved no data: `NAME run R: how it ended`.
pub fn failures(schemes: &[Scheme]) -> Vec<String> {
    schemes
        .iter()
        .flat_map(|s| {
            s.failed
                .iter()
                .map(move |f| format!("{} {f}: moved no data", s.name))
        })
        .collect()
}

/// The table as an HTML `<table>`.
pub fn table_html(schemes: &[Scheme]) -> String {
    let mut html = String::from("<table class=\"schemes\">\n<tr>");
    for h in HEADER {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>\n");
    for row in rows(schemes) {
        html.push_str("<tr>");
        for cell in row {
            let _ = write!(html, "<td>{}</td>", escape(&cell));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    for failure in failures(schemes) {
        let _ = writeln!(html, "<p class=\"failed\">{}</p>", escape(&failure));
    }
    html
}

/// Pantheon's summary plot: a point per run, an ellipse per scheme.
pub fn summary_chart(title: &str, schemes: &[Scheme]) -> Chart {
    let mut chart = Chart::new(
        title,
        "95th percentile one-way delay (ms)",
        "mean throughput (Mbit/s)",
    );
    chart.x_reversed = true;
    for (i, scheme) in schemes.iter().enumerate() {
        let points: Vec<(f64, f64)> = scheme
            .runs
            .iter()
            .map(|r| (r.delay_p95_ms, r.throughput_mbps))
            .collect();
        if let Some(outline) = ellipse(&points) {
            chart.series.push(Series {
                name: format!("{} (1 σ)", scheme.name),
                color: color(i).into(),
                points: outline,
                style: Style::Line {
                    width: 1.2,
                    dashed: true,
                },
            });
        }
        chart.series.push(Series {
            name: scheme.name.clone(),
            color: color(i).into(),
            points,
            style: Style::Points { radius: 4.0 },
        });
    }
    chart
}

/// The summary plot as an SVG document.
pub fn summary_svg(title: &str, schemes: &[Scheme]) -> String {
    summary_chart(title, schemes).svg()
}

/// A page of its own: the table and the plot.
pub fn page(title: &str, schemes: &[Scheme]) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\n\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left}}</style></head><body>\n\
         <h1>{t}</h1>\n<p>Each scheme's flow as the links saw it: throughput over its \
         first to last delivery, 95th-percentile one-way delay, loss; mean ± standard \
         deviation across runs.</p>\n{}\n{}</body></html>\n",
        table_html(schemes),
        summary_svg(title, schemes),
        t = escape(title)
    )
}

/// The one-standard-deviation ellipse of `points` (x, y), as a closed
/// outline in data coordinates (so a reversed axis draws it right); None
/// for fewer than two points.
pub fn ellipse(points: &[(f64, f64)]) -> Option<Vec<(f64, f64)>> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
    for (x, y) in points {
        a += (x - mx).powi(2) / (n - 1.0);
        b += (x - mx) * (y - my) / (n - 1.0);
        c += (y - my).powi(2) / (n - 1.0);
    }
    let half = (a - c) / 2.0;
    let root = (half * half + b * b).sqrt();
    let (l1, l2) = ((a + c) / 2.0 + root, ((a + c) / 2.0 - root).max(0.0));
    let (vx, vy) = if b != 0.0 {
        let (x, y) = (l1 - c, b);
        let norm = (x * x + y * y).sqrt();
        (x / norm, y / norm)
    } else if a >= c {
        (1.0, 0.0)
    } else {
        (0.0, 1.0)
    };
    let (r1, r2) = (l1.sqrt(), l2.sqrt());
    Some(
        (0..=72)
            .map(|k| {
                let t = k as f64 / 72.0 * std::f64::consts::TAU;
                let (u, v) = (r1 * t.cos(), r2 * t.sin());
                (mx + u * vx - v * vy, my + u * vy + v * vx)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(throughput_mbps: f64, delay_p95_ms: f64) -> SchemeRun {
        SchemeRun {
            throughput_mbps,
            delay_p95_ms,
            loss_percent: Some(1.0),
        }
    }

    /// Points on the axes' directions: the ellipse spans one standard
    /// deviation each way along each.
    #[test]
    fn the_ellipse_spans_one_deviation() {
        let points = [(10.0, 5.0), (14.0, 5.0), (12.0, 4.0), (12.0, 6.0)];
        let outline = ellipse(&points).unwrap();
        let (sx, sy) = (
            Spread::of(&points.map(|p| p.0)).unwrap().stddev,
            Spread::of(&points.map(|p| p.1)).unwrap().stddev,
        );
        let max_x = outline.iter().map(|p| p.0).fold(f64::MIN, f64::max);
        let max_y = outline.iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert!((max_x - (12.0 + sx)).abs() < 1e-9, "{max_x} {sx}");
        assert!((max_y - (5.0 + sy)).abs() < 1e-9, "{max_y} {sy}");
        assert!(ellipse(&[(1.0, 1.0)]).is_none());
    }

    #[test]
    fn the_table_and_plot_name_the_schemes() {
        let schemes = [
            Scheme {
                name: "copa".into(),
                runs: vec![run(10.0, 40.0), run(14.0, 50.0)],
                failed: Vec::new(),
            },
            Scheme {
                name: "cubic".into(),
                runs: vec![run(20.0, 80.0)],
                failed: Vec::new(),
            },
            Scheme {
                name: "ledbat".into(),
                runs: Vec::new(),
                failed: vec!["run 0: the receiver ended (exit 0)".into()],
            },
        ];
        let text = table_text(&schemes);
        assert!(text.contains("copa"), "{text}");
        assert!(text.contains("12.00 ± 2.83"), "{text}");
        assert!(text.contains("45.0 ± 7.1"), "{text}");
        let ledbat = text.lines().find(|l| l.contains("ledbat")).unwrap();
        assert!(
            ledbat.contains("0 + 1 failed") && ledbat.contains("no data"),
            "{text}"
        );
        let svg = summary_svg("t", &schemes);
        assert!(svg.contains(">copa<") && svg.contains(">cubic<"), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 3);
        assert!(page("t", &schemes).contains("<table class=\"schemes\">"));
    }
}
