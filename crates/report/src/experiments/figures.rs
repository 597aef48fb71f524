//! The charts of one run of an experiment: per flow, by its name, the
//! delivery rate with its round trip on a second axis, the congestion
//! window and the marks per interval; per bottleneck queue, the queue
//! delay and the drops and marks per interval. The moments the path
//! changed (a rate step, a queue replaced) are marked on each chart's
//! time axis.

use crate::draw::plot::{color, Chart, Marker, RightAxis, Series, Style};
use crate::experiments::bottleneck_series::{BottleneckSeries, PathChange};
use crate::experiments::run_flows::RunFlows;
use crate::pages::figures::Figure;

const TIME: &str = "time since the flows started (s)";

fn dashed(name: String, color: &str, points: Vec<(f64, f64)>, width: f64) -> Series {
    Series {
        name,
        color: color.into(),
        points,
        style: Style::Line {
            width,
            dashed: true,
        },
    }
}

/// A chart over the run's time, titled `TITLE: WHAT`, with the path's
/// `changes` marked.
fn chart(title: &str, what: &str, y_label: &str, changes: &[PathChange]) -> Chart {
    let mut chart = Chart::new(&format!("{title}: {what}"), TIME, y_label);
    chart.markers = changes
        .iter()
        .map(|c| Marker {
            x: c.time_s,
            label: c.what.clone(),
        })
        .collect();
    chart
}

fn xy(times: &[f64], values: Vec<f64>) -> Vec<(f64, f64)> {
    times.iter().copied().zip(values).collect()
}

/// The flows' charts, drawn from TCP's samples and the first bottleneck's
/// log (`series`, None without one), with the path's `changes` (every
/// bottleneck's) marked; `title` prefixes each title, `stem` each file
/// name.
pub fn flow_figures(
    flows: &RunFlows,
    series: Option<&BottleneckSeries>,
    changes: &[PathChange],
    title: &str,
    stem: &str,
) -> Vec<Figure> {
    let times = series.map(BottleneckSeries::times).unwrap_or_default();
    let mut delivery = chart(
        title,
        "delivery rate with RTT",
        "delivery rate (Mbit/s)",
        changes,
    );
    let mut rtt = Vec::new();
    let mut cwnd = chart(title, "congestion window", "cwnd (packets)", changes);
    let mut marks = chart(
        title,
        "marks per interval",
        "marks per interval (packets)",
        changes,
    );
    for (i, flow) in flows.flows.iter().enumerate() {
        let c = color(i);
        let bins = series.and_then(|s| s.flows.get(i).map(|f| (s, f)));
        let tcp = &flow.samples;
        if tcp.iter().any(|p| p.delivery_mbps.is_finite()) {
            let points = tcp.iter().map(|p| (p.time_s, p.delivery_mbps)).collect();
            delivery.series.push(Series::line(
                format!("{} delivery rate", flow.name),
                c,
                points,
            ));
        } else if let Some((s, f)) = bins {
            let points = xy(&times, s.rate_mbps(&f.departed_bytes));
            delivery.series.push(Series::line(
                format!("{} through the bottleneck", flow.name),
                c,
                points,
            ));
        }
        if !tcp.is_empty() {
            let points = tcp.iter().map(|p| (p.time_s, p.srtt_ms)).collect();
            rtt.push(dashed(format!("{} srtt", flow.name), c, points, 1.5));
            let points = tcp.iter().map(|p| (p.time_s, p.cwnd)).collect();
            cwnd.series.push(Series::line(flow.name.clone(), c, points));
        }
        if let Some((s, f)) = bins {
            if f.transits.0.iter().any(|&n| n > 0.0) {
                let points = xy(&times, s.mean(&f.transit_ms, &f.transits));
                rtt.push(dashed(
                    format!("{} one-way through the bottleneck", flow.name),
                    c,
                    points,
                    0.8,
                ));
            }
            let ce = xy(&times, s.dense(&f.ce));
            let ect1 = xy(&times, s.dense(&f.ect1));
            marks
                .series
                .push(Series::line(format!("{} CE", flow.name), c, ce));
            marks
                .series
                .push(dashed(format!("{} ECT(1)", flow.name), c, ect1, 1.5));
        }
    }
    if !rtt.is_empty() {
        delivery.right = Some(RightAxis {
            label: "RTT and one-way delay (ms)".into(),
            series: rtt,
        });
    }
    drawn(
        stem,
        [("delivery", delivery), ("cwnd", cwnd), ("marks", marks)],
    )
}

/// The charts with something to draw, each under `STEM-WHAT`.
fn drawn<const N: usize>(stem: &str, charts: [(&str, Chart); N]) -> Vec<Figure> {
    charts
        .into_iter()
        .filter(|(_, chart)| chart.has_data())
        .map(|(what, chart)| Figure {
            stem: format!("{stem}-{what}"),
            chart,
        })
        .collect()
}

/// A bottleneck's queue charts: the delay in each queue (mean and most
/// per interval) and its drops and marks per interval.
pub fn queue_figures(series: &BottleneckSeries, title: &str, stem: &str) -> Vec<Figure> {
    let times = series.times();
    let changes = &series.changes;
    let mut delay = chart(title, "queue delay", "queue delay (ms)", changes);
    let mut signals = chart(
        title,
        "drops and marks per interval",
        "packets per interval",
        changes,
    );
    for (i, q) in series.queues.iter().enumerate() {
        let c = color(i);
        delay.series.push(Series::line(
            format!("{} mean", q.name),
            c,
            xy(&times, series.mean(&q.sojourn_ms, &q.departures)),
        ));
        delay.series.push(dashed(
            format!("{} max", q.name),
            c,
            xy(&times, series.dense(&q.sojourn_max_ms)),
            0.8,
        ));
        let mut add =
            |what: &str, values: &crate::experiments::bottleneck_series::Bins, style: Style| {
                if values.0.iter().any(|&n| n > 0.0) {
                    signals.series.push(Series {
                        name: format!("{} {what}", q.name),
                        color: c.into(),
                        points: xy(&times, series.dense(values)),
                        style,
                    });
                }
            };
        add(
            "drops",
            &q.drops,
            Style::Line {
                width: 2.0,
                dashed: false,
            },
        );
        add(
            "CE",
            &q.ce,
            Style::Line {
                width: 1.0,
                dashed: false,
            },
        );
        add(
            "ECT(1)",
            &q.ect1,
            Style::Line {
                width: 1.0,
                dashed: true,
            },
        );
    }
    if signals.series.is_empty() {
        // Drawn anyway, so the page says there were none.
        signals.title += " (none)";
        signals.series.push(Series::line(
            "drops and marks",
            color(0),
            xy(&times, vec![0.0; times.len()]),
        ));
    }
    drawn(stem, [("queue-delay", delay), ("queue-signals", signals)])
}
