//! The report's charts, made from the runs' series: per run and
//! direction, and across runs when several are compared.

use crate::analysis::summary::DirectionSeries;
use crate::draw::plot::{color, Chart, Series, Style};
use crate::logs::run::Run;

/// A chart and the file stem it is written under.
pub struct Figure {
    pub stem: String,
    pub chart: Chart,
}

/// A file-name-safe version of a run or flow name.
pub fn slug(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    s.trim_matches('_').to_string()
}

fn xy(times: &[f64], values: impl IntoIterator<Item = f64>) -> Vec<(f64, f64)> {
    times.iter().copied().zip(values).collect()
}

/// Every chart of one direction of one run, in the order the page shows
/// them; the drops-and-marks, per-flow and Jain's index charts only where
/// they have something to show.
pub fn direction_figures(run: &str, s: &DirectionSeries) -> Vec<Figure> {
    let title = |what: &str| format!("{run}, {}: {what}", s.direction);
    let stem = |what: &str| format!("{}-{}-{what}", slug(run), s.direction);
    let charts = [
        ("throughput", Some(throughput_chart(s, &title))),
        ("delay", Some(delay_chart(s, &title))),
        ("queue", Some(queue_chart(s, &title))),
        ("signals", signals_chart(s, &title)),
        ("flows", flows_chart(s, &title)),
        ("jain", jain_chart(s, &title)),
        ("cdf", Some(cdf_chart(s, &title))),
    ];
    charts
        .into_iter()
        .filter_map(|(what, chart)| {
            chart.map(|chart| Figure {
                stem: stem(what),
                chart,
            })
        })
        .collect()
}

/// Throughput over time, with what entered the path and the capacity.
fn throughput_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Chart {
    let t = &s.time_s;
    let mut chart = Chart::new(&title("throughput"), "time (s)", "throughput (Mbit/s)");
    if let Some(capacity) = &s.capacity_mbps {
        chart.series.push(Series {
            name: "capacity".into(),
            color: "#7f7f7f".into(),
            points: xy(t, capacity.iter().copied()),
            style: Style::Area,
        });
    }
    chart.series.push(Series {
        name: "ingress (entering the path)".into(),
        color: color(0).into(),
        points: xy(t, s.ingress_mbps.iter().copied()),
        style: Style::Line {
            width: 1.2,
            dashed: true,
        },
    });
    chart.series.push(Series::line(
        "throughput (leaving the path)",
        color(1),
        xy(t, s.throughput_mbps.iter().copied()),
    ));
    chart
}

/// One-way delay over time: sampled packets, percentile bands, the median
/// and the base delay each shell logged.
fn delay_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Chart {
    let t = &s.time_s;
    let mut chart = Chart::new(&title("one-way delay"), "time (s)", "one-way delay (ms)");
    let band = |i: usize| {
        s.delay_bands_ms
            .iter()
            .map(move |b| b.map_or(f64::NAN, |b| b[i]))
    };
    chart.series.push(Series {
        name: "packets (sample)".into(),
        color: color(0).into(),
        points: s.delay_points.clone(),
        style: Style::Points { radius: 1.2 },
    });
    // Bands between percentiles (indices into 5, 25, 50, 75, 95).
    for (name, low, high, c) in [
        ("5th–95th percentile per bin", 0, 4, 3),
        ("25th–75th percentile", 1, 3, 1),
    ] {
        chart.series.push(Series {
            name: name.into(),
            color: color(c).into(),
            points: xy(t, band(low)),
            style: Style::Band {
                upper: band(high).collect(),
            },
        });
    }
    chart
        .series
        .push(Series::line("median", color(1), xy(t, band(2))));
    // The base delay the links had (their change records), under the
    // measured delays.
    for (i, (shell, steps)) in s.base_delay_ms.iter().enumerate() {
        chart.series.push(Series {
            name: format!("base delay of shell {shell} (as logged)"),
            color: color(5 + i).into(),
            points: steps.clone(),
            style: Style::Line {
                width: 1.5,
                dashed: true,
            },
        });
    }
    chart
}

/// The queue over time: its time-weighted mean and maximum per bin.
fn queue_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Chart {
    let t = &s.time_s;
    let queue_title = match s.queue_shell {
        Some(shell) => title(&format!("queue of shell {shell}")),
        None => title("queue"),
    };
    let mut chart = Chart::new(&queue_title, "time (s)", "queue (KB)");
    chart.series.push(Series::line(
        "time-weighted mean",
        color(0),
        xy(t, s.queue_bytes_mean.iter().map(|b| b / 1000.0)),
    ));
    chart.series.push(Series {
        name: "maximum".into(),
        color: color(0).into(),
        points: xy(t, s.queue_bytes_max.iter().map(|&b| b as f64 / 1000.0)),
        style: Style::Line {
            width: 1.0,
            dashed: true,
        },
    });
    chart
}

/// Drops and marks per bin; None where nothing was dropped or marked
/// (the tables say so; no empty chart).
fn signals_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Option<Chart> {
    let t = &s.time_s;
    let mut chart = Chart::new(&title("drops and marks"), "time (s)", "packets per bin");
    for (name, values, i) in [
        ("drops", &s.drops, 1),
        ("CE marks", &s.ce_marks, 3),
        ("ECT(1) marks", &s.ect1_marks, 2),
    ] {
        if values.iter().any(|&v| v > 0) {
            chart.series.push(Series::line(
                name,
                color(i),
                xy(t, values.iter().map(|&v| v as f64)),
            ));
        }
    }
    (!chart.series.is_empty()).then_some(chart)
}

/// Throughput per flow shown; None without flows.
fn flows_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Option<Chart> {
    if s.flows.is_empty() {
        return None;
    }
    let mut chart = Chart::new(
        &title("throughput per flow"),
        "time (s)",
        "throughput (Mbit/s)",
    );
    for (i, (flow, values)) in s.flows.iter().enumerate() {
        chart.series.push(Series::line(
            flow.clone(),
            color(i),
            xy(&s.time_s, values.iter().copied()),
        ));
    }
    Some(chart)
}

/// Jain's index per bin; None with fewer than two flows.
fn jain_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Option<Chart> {
    if s.flows.len() <= 1 {
        return None;
    }
    let mut chart = Chart::new(&title("Jain's index per bin"), "time (s)", "Jain's index");
    chart.y_range = Some((0.0, 1.0));
    chart.series.push(Series::line(
        "over the flows active in the bin (≥ 2)",
        color(4),
        xy(&s.time_s, s.jain.iter().map(|j| j.unwrap_or(f64::NAN))),
    ));
    Some(chart)
}

/// The one-way delay's distribution.
fn cdf_chart(s: &DirectionSeries, title: &dyn Fn(&str) -> String) -> Chart {
    let mut chart = Chart::new(
        &title("delay distribution"),
        "one-way delay (ms)",
        "fraction of packets",
    );
    chart.y_range = Some((0.0, 1.0));
    chart
        .series
        .push(Series::line("CDF", color(0), s.delay_cdf_ms.clone()));
    chart
}

/// TCP's view of a run, where it was sampled: each connection's smoothed
/// RTT over time, beside the round trip its packets had on the path (the
/// median one-way delays of the two directions, added up per bin), and
/// each connection's congestion window.
pub fn tcp_figures(run: &Run) -> Vec<Figure> {
    if run.tcp.is_empty() {
        return Vec::new();
    }
    let name = &run.summary.name;
    let mut figures = Vec::new();
    let mut chart = Chart::new(
        &format!("{name}: TCP smoothed RTT (srtt) per connection"),
        "time (s)",
        "RTT (ms)",
    );
    if let [up, down] = run.series.as_slice() {
        if up.time_s == down.time_s {
            let path_rtt = up
                .delay_bands_ms
                .iter()
                .zip(&down.delay_bands_ms)
                .map(|(u, d)| match (u, d) {
                    (Some(u), Some(d)) => u[2] + d[2],
                    _ => f64::NAN,
                });
            chart.series.push(Series {
                name: "path round trip (median one-way delays, both directions)".into(),
                color: "#7f7f7f".into(),
                points: xy(&up.time_s, path_rtt),
                style: Style::Line {
                    width: 1.2,
                    dashed: true,
                },
            });
        }
    }
    for (i, socket) in run.tcp.iter().enumerate() {
        chart.series.push(Series::line(
            format!("srtt {}", socket.label()),
            color(i),
            socket.samples.iter().map(|s| (s.0, s.1)).collect(),
        ));
    }
    figures.push(Figure {
        stem: format!("{}-tcp-srtt", slug(name)),
        chart,
    });
    let mut chart = Chart::new(
        &format!("{name}: TCP congestion window per connection"),
        "time (s)",
        "cwnd (packets)",
    );
    for (i, socket) in run.tcp.iter().enumerate() {
        chart.series.push(Series::line(
            format!("cwnd {}", socket.label()),
            color(i),
            socket.samples.iter().map(|s| (s.0, s.2 as f64)).collect(),
        ));
    }
    figures.push(Figure {
        stem: format!("{}-tcp-cwnd", slug(name)),
        chart,
    });
    figures
}

/// Charts that put several runs side by side, and Pantheon's
/// throughput–delay plot (one point per run and direction).
pub fn comparison_figures(runs: &[Run]) -> Vec<Figure> {
    let mut figures = Vec::new();
    let mut scatter = Chart::new(
        "Pantheon's summary: average throughput against 95th-percentile one-way delay",
        "95th percentile one-way delay (ms), better to the right",
        "average throughput (Mbit/s)",
    );
    scatter.x_reversed = true;
    let mut max_delay: f64 = 1.0;
    let mut index = 0;
    for run in runs {
        for d in &run.summary.directions {
            if let (Some(tput), Some(delay)) = (d.pantheon.throughput_mbps, d.pantheon.delay_p95_ms)
            {
                max_delay = max_delay.max(delay);
                scatter.series.push(Series {
                    name: format!("{} {}", run.summary.name, d.direction),
                    color: color(index).into(),
                    points: vec![(delay, tput)],
                    style: Style::Points { radius: 6.0 },
                });
                index += 1;
            }
        }
    }
    scatter.x_range = Some((0.0, max_delay * 1.1));
    if scatter.has_data() {
        figures.push(Figure {
            stem: "pantheon".into(),
            chart: scatter,
        });
    }
    if runs.len() < 2 {
        return figures;
    }
    for direction in ["uplink", "downlink"] {
        let mut tput = Chart::new(
            &format!("{direction}: throughput of each run"),
            "time (s)",
            "throughput (Mbit/s)",
        );
        let mut cdf = Chart::new(
            &format!("{direction}: one-way delay of each run"),
            "one-way delay (ms)",
            "fraction of packets",
        );
        cdf.y_range = Some((0.0, 1.0));
        for (i, run) in runs.iter().enumerate() {
            let Some(s) = run.series.iter().find(|s| s.direction == direction) else {
                continue;
            };
            let name = &run.summary.name;
            tput.series.push(Series::line(
                name.clone(),
                color(i),
                xy(&s.time_s, s.throughput_mbps.iter().copied()),
            ));
            cdf.series
                .push(Series::line(name.clone(), color(i), s.delay_cdf_ms.clone()));
        }
        if tput.has_data() {
            figures.push(Figure {
                stem: format!("compare-{direction}-throughput"),
                chart: tput,
            });
            figures.push(Figure {
                stem: format!("compare-{direction}-cdf"),
                chart: cdf,
            });
        }
    }
    figures
}
