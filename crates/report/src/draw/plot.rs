//! Self-contained SVG charts: lines, shaded areas, percentile bands and
//! point clouds on linear axes with round-numbered ticks and a legend.
//! Written out by hand because a report must open offline, anywhere, and
//! the few chart kinds a paper needs do not justify a plotting stack.

use std::fmt::Write;

/// Colours that stay apart in print and for common colour blindness.
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

#[derive(Debug, Clone)]
pub enum Style {
    Line {
        width: f64,
        dashed: bool,
    },
    /// Filled down to y = 0.
    Area,
    /// Filled between the points' y and `upper`.
    Band {
        upper: Vec<f64>,
    },
    Points {
        radius: f64,
    },
}

/// One thing drawn. A NaN y breaks a line or band (no data there).
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
}

impl Series {
    pub fn line(name: impl Into<String>, color: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            color: color.into(),
            points,
            style: Style::Line {
                width: 1.5,
                dashed: false,
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Fixed y range; else from the data, from 0.
    pub y_range: Option<(f64, f64)>,
    /// Fixed x range; else the data's.
    pub x_range: Option<(f64, f64)>,
    /// Larger x to the left (Pantheon's delay axis: better is right).
    pub x_reversed: bool,
    /// Series read against a second y axis on the right, from 0 (a delivery
    /// rate's chart with its round trip).
    pub right: Option<RightAxis>,
    /// Moments marked on the time axis: a dashed vertical line at each x,
    /// labelled (a rate step, a queue replaced).
    pub markers: Vec<Marker>,
}

/// A moment marked on a chart's x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

/// A chart's second y axis: its label and the series drawn against it.
#[derive(Debug, Clone)]
pub struct RightAxis {
    pub label: String,
    pub series: Vec<Series>,
}

const WIDTH: f64 = 760.0;
const PLOT_HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
/// The right margin of a chart with a second y axis: its ticks and label.
const RIGHT_AXIS: f64 = 64.0;
const TOP: f64 = 36.0;

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Round tick positions covering `[low, high]`: steps of 1, 2 or 5 × 10^k.
pub fn ticks(low: f64, high: f64) -> Vec<f64> {
    let span = (high - low).max(f64::MIN_POSITIVE);
    let rough = span / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| span / s <= 6.0)
        .unwrap_or(10.0 * magnitude);
    let first = (low / step).ceil() as i64;
    let last = (high / step + 1e-9).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

fn label(value: f64) -> String {
    if value == 0.0 {
        return "0".into();
    }
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

impl Chart {
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            series: Vec::new(),
            y_range: None,
            x_range: None,
            x_reversed: false,
            right: None,
            markers: Vec::new(),
        }
    }

    /// Every series, the right axis's after the left's.
    fn all_series(&self) -> impl Iterator<Item = &Series> {
        self.series
            .iter()
            .chain(self.right.iter().flat_map(|r| &r.series))
    }

    /// The right axis's range, from 0 to its data's top.
    fn right_range(&self) -> (f64, f64) {
        let top = self
            .right
            .iter()
            .flat_map(|r| &r.series)
            .flat_map(|s| &s.points)
            .map(|p| p.1)
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
        (0.0, if top > 0.0 { top * 1.05 } else { 1.0 })
    }

    fn data_range(&self) -> ((f64, f64), (f64, f64)) {
        let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
        for s in self.all_series() {
            for (i, &(x, y)) in s.points.iter().enumerate() {
                if !x.is_finite() {
                    continue;
                }
                x0 = x0.min(x);
                x1 = x1.max(x);
                if !self.series.iter().any(|l| std::ptr::eq(l, s)) {
                    continue;
                }
                let top = match &s.style {
                    Style::Band { upper } => upper.get(i).copied().unwrap_or(y),
                    _ => y,
                };
                if top.is_finite() {
                    y1 = y1.max(top);
                }
            }
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if let Some(range) = self.x_range {
            (x0, x1) = range;
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        let y = self
            .y_range
            .unwrap_or((0.0, if y1 > 0.0 { y1 * 1.05 } else { 1.0 }));
        ((x0, x1), y)
    }

    pub fn has_data(&self) -> bool {
        self.all_series().any(|s| !s.points.is_empty())
    }

    /// The chart as an SVG document.
    // Long: the SVG in drawing order: frame, axes and grid, each series by its style, the legend.
    pub fn svg(&self) -> String {
        let ((x0, x1), (y0, y1)) = self.data_range();
        let right_margin = if self.right.is_some() {
            RIGHT_AXIS
        } else {
            RIGHT
        };
        let plot_w = WIDTH - LEFT - right_margin;
        let per_row = self.legend_columns();
        let legend_rows = self.all_series().count().div_ceil(per_row);
        let height = TOP + PLOT_HEIGHT + 50.0 + legend_rows as f64 * 18.0;
        let bottom = TOP + PLOT_HEIGHT;
        let reversed = self.x_reversed;
        let sx = |x: f64| {
            let f = (x - x0) / (x1 - x0);
            LEFT + if reversed { 1.0 - f } else { f } * plot_w
        };
        let sy = |y: f64| bottom - (y.clamp(y0, y1) - y0) / (y1 - y0) * PLOT_HEIGHT;
        let mut svg = String::new();
        let _ = write!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
             viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
            WIDTH / 2.0,
            escape(&self.title)
        );
        // Grid and ticks.
        for t in ticks(x0, x1) {
            let x = sx(t);
            let _ = writeln!(
                svg,
                "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#e6e6e6\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                bottom + 16.0,
                label(t)
            );
        }
        for t in ticks(y0, y1) {
            let y = sy(t);
            let _ = writeln!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e6e6e6\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0,
                label(t)
            );
        }
        let _ = writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{PLOT_HEIGHT}\" fill=\"none\" stroke=\"#333\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n\
             <text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1})\">{}</text>",
            LEFT + plot_w / 2.0,
            bottom + 34.0,
            escape(&self.x_label),
            TOP + PLOT_HEIGHT / 2.0,
            TOP + PLOT_HEIGHT / 2.0,
            escape(&self.y_label)
        );
        for s in &self.series {
            draw(&mut svg, s, &sx, &sy, sy(0.0f64.max(y0)));
        }
        if let Some(right) = &self.right {
            let (r0, r1) = self.right_range();
            let ry = |y: f64| bottom - (y.clamp(r0, r1) - r0) / (r1 - r0) * PLOT_HEIGHT;
            let x = LEFT + plot_w;
            for t in ticks(r0, r1) {
                let _ = writeln!(
                    svg,
                    "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#333\"/>\
                     <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"start\">{}</text>",
                    x + 4.0,
                    x + 6.0,
                    ry(t) + 4.0,
                    label(t),
                    y = ry(t)
                );
            }
            let _ = writeln!(
                svg,
                "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\" transform=\"rotate(90 {0:.1} {1:.1})\">{2}</text>",
                WIDTH - 14.0,
                TOP + PLOT_HEIGHT / 2.0,
                escape(&right.label)
            );
            for s in &right.series {
                draw(&mut svg, s, &sx, &ry, ry(r0));
            }
        }
        self.draw_markers(&mut svg, (x0, x1), &sx);
        // Legend under the axis label, up to three to a row: fewer when
        // the names are long (flows named by their 5-tuples).
        for (i, s) in self.all_series().enumerate() {
            let x = LEFT + (i % per_row) as f64 * (plot_w / per_row as f64);
            let y = bottom + 54.0 + (i / per_row) as f64 * 18.0;
            let mark = match s.style {
                // As thin as the line where it is thinner (a second
                // dashed line of one colour stays apart from the first).
                Style::Line { dashed: true, width } => format!(
                    "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{}\" stroke-width=\"{}\" stroke-dasharray=\"4 3\"/>",
                    x + 18.0,
                    s.color,
                    (width * 1.3).min(2.0)
                ),
                Style::Line { .. } => format!(
                    "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{}\" stroke-width=\"2\"/>",
                    x + 18.0,
                    s.color
                ),
                _ => format!(
                    "<rect x=\"{x}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{}\" fill-opacity=\"0.4\"/>",
                    y - 5.0,
                    s.color
                ),
            };
            let _ = writeln!(
                svg,
                "{mark}<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 24.0,
                y + 4.0,
                escape(&s.name)
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

impl Chart {
    /// Each marker within the x range: a dashed grey line across the plot
    /// and its label at the top, left-aligned beside the line.
    fn draw_markers(&self, svg: &mut String, (x0, x1): (f64, f64), sx: &dyn Fn(f64) -> f64) {
        let (low, high) = (x0.min(x1), x0.max(x1));
        for m in self.markers.iter().filter(|m| (low..=high).contains(&m.x)) {
            let x = sx(m.x);
            let _ = writeln!(
                svg,
                "<line class=\"marker\" x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.1}\" \
                 stroke=\"#555\" stroke-width=\"1\" stroke-dasharray=\"2 3\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" fill=\"#555\">{}</text>",
                TOP + PLOT_HEIGHT,
                x + 3.0,
                TOP + 11.0,
                escape(&m.label)
            );
        }
    }

    /// Legend entries per row: three short names, two of up to 36
    /// characters (a 5-tuple), else one.
    fn legend_columns(&self) -> usize {
        match self.all_series().map(|s| s.name.chars().count()).max() {
            Some(n) if n > 36 => 1,
            Some(n) if n > 24 => 2,
            _ => 3,
        }
    }
}

/// Runs of consecutive finite points (a NaN y ends a run).
fn runs<'a>(
    points: &'a [(f64, f64)],
    upper: Option<&'a [f64]>,
) -> impl Iterator<Item = Vec<(f64, f64, f64)>> + 'a {
    let mut i = 0;
    std::iter::from_fn(move || {
        let mut run = Vec::new();
        while i < points.len() {
            let (x, y) = points[i];
            let u = upper.map_or(y, |u| u.get(i).copied().unwrap_or(f64::NAN));
            i += 1;
            if x.is_finite() && y.is_finite() && u.is_finite() {
                run.push((x, y, u));
            } else if !run.is_empty() {
                return Some(run);
            }
        }
        (!run.is_empty()).then_some(run)
    })
}

fn draw(svg: &mut String, s: &Series, sx: &dyn Fn(f64) -> f64, sy: &dyn Fn(f64) -> f64, base: f64) {
    let path = |pts: &mut dyn Iterator<Item = (f64, f64)>| {
        let mut d = String::new();
        for (x, y) in pts {
            let _ = write!(d, "{:.1},{:.1} ", sx(x), sy(y));
        }
        d
    };
    match &s.style {
        Style::Line { width, dashed } => {
            let dash = if *dashed {
                " stroke-dasharray=\"5 3\""
            } else {
                ""
            };
            for run in runs(&s.points, None) {
                let d = path(&mut run.iter().map(|&(x, y, _)| (x, y)));
                let _ = writeln!(
                    svg,
                    "<polyline points=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{width}\"{dash}/>",
                    s.color
                );
            }
        }
        Style::Area => {
            for run in runs(&s.points, None) {
                let (first, last) = (run[0].0, run[run.len() - 1].0);
                let d = path(&mut run.iter().map(|&(x, y, _)| (x, y)));
                let _ = writeln!(
                    svg,
                    "<polygon points=\"{:.1},{base:.1} {d}{:.1},{base:.1}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\"/>",
                    sx(first),
                    sx(last),
                    s.color
                );
            }
        }
        Style::Band { upper } => {
            for run in runs(&s.points, Some(upper)) {
                let top = path(&mut run.iter().map(|&(x, _, u)| (x, u)));
                let bottom = path(&mut run.iter().rev().map(|&(x, y, _)| (x, y)));
                let _ = writeln!(
                    svg,
                    "<polygon points=\"{top}{bottom}\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"none\"/>",
                    s.color
                );
            }
        }
        Style::Points { radius } => {
            let _ = write!(svg, "<g fill=\"{}\" fill-opacity=\"0.6\">", s.color);
            for &(x, y) in &s.points {
                if x.is_finite() && y.is_finite() {
                    let _ = write!(
                        svg,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\"/>",
                        sx(x),
                        sy(y)
                    );
                }
            }
            svg.push_str("</g>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A marker inside the x range is a dashed line with its label; one
    /// outside is left out.
    #[test]
    fn markers_are_drawn_on_the_time_axis() {
        let mut chart = Chart::new("t", "time (s)", "y");
        chart
            .series
            .push(Series::line("a", color(0), vec![(0.0, 1.0), (60.0, 2.0)]));
        chart.markers = vec![
            Marker {
                x: 20.0,
                label: "queue step 1".into(),
            },
            Marker {
                x: 90.0,
                label: "rate 50 Mbit/s".into(),
            },
        ];
        let svg = chart.svg();
        assert_eq!(svg.matches("class=\"marker\"").count(), 1, "{svg}");
        assert!(svg.contains(">queue step 1</text>"), "{svg}");
        assert!(!svg.contains("rate 50 Mbit/s"), "{svg}");
        // At a third of the plot's width: 20 s of 0 to 60 s.
        let x = LEFT + (WIDTH - LEFT - RIGHT) / 3.0;
        assert!(svg.contains(&format!("x1=\"{x:.1}\"")), "{svg}");
    }

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(
            ticks(0.0, 1.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(ticks(0.0, 37.0), vec![0.0, 10.0, 20.0, 30.0]);
        assert_eq!(label(0.6000000000000001), "0.6");
        assert_eq!(label(250.0), "250");
    }

    /// A second axis draws its series against its own scale, with its
    /// label, and its series join the legend.
    #[test]
    fn a_right_axis_has_its_own_scale() {
        let mut chart = Chart::new("rate", "time (s)", "Mbit/s");
        chart
            .series
            .push(Series::line("rate", color(0), vec![(0.0, 1.0), (1.0, 2.0)]));
        assert!(!chart.svg().contains("rotate(90"));
        chart.right = Some(RightAxis {
            label: "RTT (ms)".into(),
            series: vec![Series::line(
                "srtt",
                color(1),
                vec![(0.0, 0.0), (1.0, 400.0)],
            )],
        });
        assert_eq!(chart.right_range(), (0.0, 420.0));
        let svg = chart.svg();
        assert!(svg.contains(">RTT (ms)</text>") && svg.contains(">srtt</text>"));
        assert!(svg.contains(">400</text>"), "the right axis's ticks");
        assert_eq!(svg.matches("<polyline").count(), 2);
        // The left axis keeps its own range: its top tick is 2.
        assert!(svg.contains(">2</text>") && !svg.contains(">300</text><line"));
    }

    #[test]
    fn gaps_split_lines_and_text_is_escaped() {
        let mut chart = Chart::new("a <b> & c", "time (s)", "delay (ms)");
        chart.series.push(Series::line(
            "x",
            color(0),
            vec![
                (0.0, 1.0),
                (1.0, 2.0),
                (2.0, f64::NAN),
                (3.0, 1.0),
                (4.0, 1.0),
            ],
        ));
        let svg = chart.svg();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert!(!svg.contains("NaN"));
    }
}
