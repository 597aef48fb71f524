//! A sweep's results laid out as the tables papers print: one swept axis
//! in rows, another in columns, one table per value of the other axes
//! (and per flow, for a flow's figure), each cell the mean over the
//! cell's runs; and difference tables between two values of one axis
//! (`reno-sce` minus `reno`). Rendered by
//! [`crate::experiments::table_formats`].
//!
//! The figures are read from each run's `result.json`: a TCP flow's
//! `whole_flow` (its mean throughput and mean smoothed RTT from start to
//! end, start-up included, as the SCE one- and two-flow tests report
//! them) and the run's `jain_index`. A table costs one pass over the
//! results already loaded.

use crate::experiments::results_dir::{CellDir, ExperimentDir};
use crate::experiments::results_schema::{FlowResult, RunResult};
use std::collections::BTreeMap;

/// A figure a table can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A flow's mean throughput over its whole life, in Mbit/s.
    Throughput,
    /// The same over the first bottleneck's rate left to right (the
    /// lower of its link's rate and its queue's shaper, cake's
    /// `bandwidth`).
    Utilization,
    /// A flow's mean smoothed RTT over its whole life, in ms.
    Rtt,
    /// The run's Jain's index over its competing flows.
    Jain,
}

/// Every metric by its name on the command line.
pub const METRICS: [(&str, Metric); 4] = [
    ("throughput", Metric::Throughput),
    ("utilization", Metric::Utilization),
    ("rtt", Metric::Rtt),
    ("jain", Metric::Jain),
];

impl Metric {
    pub fn parse(name: &str) -> Result<Metric, String> {
        METRICS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
            .ok_or_else(|| {
                let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
                format!(
                    "'{name}' is not a table's metric; give one of {}",
                    names.join(", ")
                )
            })
    }

    pub fn name(self) -> &'static str {
        METRICS.iter().find(|(_, m)| *m == self).expect("listed").0
    }

    /// What the table's cells hold, with the unit.
    pub fn heading(self) -> &'static str {
        match self {
            Metric::Throughput => "mean throughput (Mbit/s)",
            Metric::Utilization => "mean throughput / bottleneck rate",
            Metric::Rtt => "mean TCP RTT (ms)",
            Metric::Jain => "Jain's index",
        }
    }

    /// Decimals a cell is shown with.
    pub fn decimals(self) -> usize {
        match self {
            Metric::Throughput => 2,
            Metric::Rtt => 1,
            Metric::Utilization | Metric::Jain => 3,
        }
    }

    fn per_flow(self) -> bool {
        self != Metric::Jain
    }

    /// The figure of one flow of one run (`flow` is None for a run's own
    /// figure).
    fn of(self, run: &RunResult, flow: Option<&FlowResult>, rate: Option<f64>) -> Option<f64> {
        let whole = || flow?.whole_flow;
        match self {
            Metric::Throughput => Some(whole()?.throughput_bps? / 1e6),
            Metric::Utilization => Some(whole()?.throughput_bps? / rate.filter(|r| *r > 0.0)?),
            Metric::Rtt => Some(whole()?.srtt_mean_ms),
            Metric::Jain => run.jain_index,
        }
    }
}

/// Two values of one axis, a table of the first minus the second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    pub axis: String,
    pub minuend: String,
    pub subtrahend: String,
}

impl Difference {
    /// `AXIS=A,B`: A minus B.
    pub fn parse(text: &str) -> Result<Difference, String> {
        let usage =
            || format!("'{text}': give AXIS=A,B for a table of A minus B, e.g. cc=reno-sce,reno");
        let (axis, values) = text.split_once('=').ok_or_else(usage)?;
        let (minuend, subtrahend) = values.split_once(',').ok_or_else(usage)?;
        let [axis, minuend, subtrahend] = [axis, minuend, subtrahend].map(|s| s.trim().to_string());
        if axis.is_empty()
            || minuend.is_empty()
            || subtrahend.is_empty()
            || subtrahend.contains(',')
        {
            return Err(usage());
        }
        Ok(Difference {
            axis,
            minuend,
            subtrahend,
        })
    }
}

/// What to lay out: the metrics, the axes of rows and columns (a swept
/// key, or its last part where one key ends so: `rate` for
/// `bottleneck.rate`), and the differences to take.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub metrics: Vec<Metric>,
    pub rows: String,
    pub cols: String,
    pub differences: Vec<Difference>,
}

/// One table.
#[derive(Debug, Clone, PartialEq)]
pub struct GridTable {
    pub metric: Metric,
    /// What the table is of: the other axes' values, the flow, or the
    /// difference taken (`flows.0.cc = reno-sce minus reno`).
    pub context: Vec<String>,
    pub row_axis: String,
    pub col_axis: String,
    /// The axes' values as shown (the words all of an axis's values share
    /// left out: `0.5mbit` for `cake bandwidth 0.5mbit sce`).
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// `values[row][col]`; None where the grid has no such cell or no run
    /// gave the figure.
    pub values: Vec<Vec<Option<f64>>>,
    pub difference: bool,
}

impl GridTable {
    /// `mean TCP RTT (ms), flows.0.cc = reno, flow a`.
    pub fn title(&self) -> String {
        std::iter::once(self.metric.heading().to_string())
            .chain(self.context.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The swept keys of an experiment, in the order of its first cell.
pub fn axes(experiment: &ExperimentDir) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for cell in &experiment.cells {
        for (key, _) in cell.axes() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// The swept key `name` stands for: itself, or the one key ending in
/// `.name`.
fn resolve(name: &str, keys: &[String]) -> Result<String, String> {
    if keys.iter().any(|k| k == name) {
        return Ok(name.to_string());
    }
    let suffix = format!(".{name}");
    let matching: Vec<&String> = keys.iter().filter(|k| k.ends_with(&suffix)).collect();
    match matching[..] {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no swept axis '{name}' (the sweep's axes: {})",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        )),
        _ => Err(format!(
            "'{name}' could be any of {}; give the whole key",
            matching
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// One cell's place: its row and column values and the rest of its
/// assignments.
struct Placed<'a> {
    cell: &'a CellDir,
    row: String,
    col: String,
    rest: Vec<(String, String)>,
}

/// The tables of `experiment` by `spec`, or why it has none (an axis it
/// does not sweep).
pub fn build(experiment: &ExperimentDir, spec: &TableSpec) -> Result<Vec<GridTable>, String> {
    let keys = axes(experiment);
    let row_axis = resolve(&spec.rows, &keys)?;
    let col_axis = resolve(&spec.cols, &keys)?;
    if row_axis == col_axis {
        return Err(format!(
            "rows and columns are both {row_axis}; give two different axes"
        ));
    }
    let differences = spec
        .differences
        .iter()
        .map(|d| {
            let axis = resolve(&d.axis, &keys)?;
            if axis == row_axis || axis == col_axis {
                return Err(format!(
                    "the difference's axis {axis} is the rows' or the columns'; take it over another axis"
                ));
            }
            Ok(Difference { axis, ..d.clone() })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let placed: Vec<Placed> = experiment
        .cells
        .iter()
        .map(|cell| {
            let mut row = String::new();
            let mut col = String::new();
            let mut rest = Vec::new();
            for (key, value) in cell.axes() {
                match key {
                    k if k == row_axis => row = value,
                    k if k == col_axis => col = value,
                    _ => rest.push((key, value)),
                }
            }
            Placed {
                cell,
                row,
                col,
                rest,
            }
        })
        .collect();
    let rows = in_order(placed.iter().map(|p| &p.row));
    let cols = in_order(placed.iter().map(|p| &p.col));
    let mut tables = Vec::new();
    for &metric in &spec.metrics {
        let plain = layout(metric, &placed, &rows, &cols);
        let table = |context: Vec<String>, values, difference| GridTable {
            metric,
            context,
            row_axis: row_axis.clone(),
            col_axis: col_axis.clone(),
            rows: shown(&rows),
            cols: shown(&cols),
            values,
            difference,
        };
        for d in &differences {
            for (context, values) in subtract(&plain, d) {
                tables.push(table(context, values, true));
            }
        }
        for (group, values) in plain {
            tables.push(table(group.context(), values, false));
        }
    }
    // Plain tables first, then the differences, each in its metric's order.
    tables.sort_by_key(|t| t.difference);
    Ok(tables)
}

/// What one table is of: the other axes' values and, for a flow's figure,
/// the flow.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Group {
    rest: Vec<(String, String)>,
    flow: Option<String>,
}

impl Group {
    fn context(&self) -> Vec<String> {
        self.rest
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .chain(self.flow.iter().map(|f| format!("flow {f}")))
            .collect()
    }
}

/// Every value once, in the order met.
fn in_order<'a>(values: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for v in values {
        if !found.contains(v) {
            found.push(v.clone());
        }
    }
    found
}

/// The values as shown: where every value has as many words, the words
/// all of them share are left out (`cake bandwidth 5mbit sce` and `cake
/// bandwidth 50mbit sce` show as `5mbit` and `50mbit`).
pub fn shown(values: &[String]) -> Vec<String> {
    let words: Vec<Vec<&str>> = values
        .iter()
        .map(|v| v.split_whitespace().collect())
        .collect();
    let n = words.first().map_or(0, Vec::len);
    if values.len() < 2 || words.iter().any(|w| w.len() != n) {
        return values.to_vec();
    }
    let differs: Vec<bool> = (0..n)
        .map(|i| words.iter().any(|w| w[i] != words[0][i]))
        .collect();
    words
        .iter()
        .map(|w| {
            w.iter()
                .zip(&differs)
                .filter(|(_, d)| **d)
                .map(|(word, _)| *word)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A table's cells, `[row][col]`.
type Cells = Vec<Vec<Option<f64>>>;

type Laid = Vec<(Group, Cells)>;

/// Each group's table of `metric`, groups in the order met.
fn layout(metric: Metric, placed: &[Placed], rows: &[String], cols: &[String]) -> Laid {
    let mut tables: Laid = Vec::new();
    for p in placed {
        let rate = p.cell.rates.first().and_then(|r| r[0]);
        // Per group, the figures of the cell's runs.
        let mut figures: BTreeMap<Group, Vec<f64>> = BTreeMap::new();
        let mut order: Vec<Group> = Vec::new();
        for run in &p.cell.runs {
            let flows: Vec<Option<&FlowResult>> = match metric.per_flow() {
                true => run.result.flows.iter().map(Some).collect(),
                false => vec![None],
            };
            for flow in flows {
                let group = Group {
                    rest: p.rest.clone(),
                    flow: flow.map(|f| f.name.clone()),
                };
                let value = metric.of(&run.result, flow, rate);
                if !order.contains(&group) {
                    order.push(group.clone());
                }
                figures.entry(group).or_default().extend(value);
            }
        }
        let (r, c) = (
            rows.iter().position(|v| *v == p.row).expect("listed"),
            cols.iter().position(|v| *v == p.col).expect("listed"),
        );
        for group in order {
            let values = &figures[&group];
            let mean =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            let at = match tables.iter().position(|(g, _)| *g == group) {
                Some(at) => at,
                None => {
                    tables.push((group, vec![vec![None; cols.len()]; rows.len()]));
                    tables.len() - 1
                }
            };
            tables[at].1[r][c] = mean;
        }
    }
    tables
}

/// The tables of `d.minuend` minus those of `d.subtrahend`, group by group
/// (the same other axes and flow), each with what it is of.
fn subtract(plain: &Laid, d: &Difference) -> Vec<(Vec<String>, Cells)> {
    let value_of = |g: &Group| {
        g.rest
            .iter()
            .find(|(k, _)| *k == d.axis)
            .map(|(_, v)| v.clone())
    };
    let without = |g: &Group| Group {
        rest: g
            .rest
            .iter()
            .filter(|(k, _)| *k != d.axis)
            .cloned()
            .collect(),
        flow: g.flow.clone(),
    };
    let mut tables = Vec::new();
    for (group, minuend) in plain
        .iter()
        .filter(|(g, _)| value_of(g).as_ref() == Some(&d.minuend))
    {
        let Some((_, subtrahend)) = plain.iter().find(|(g, _)| {
            value_of(g).as_ref() == Some(&d.subtrahend) && without(g) == without(group)
        }) else {
            continue;
        };
        let values = minuend
            .iter()
            .zip(subtrahend)
            .map(|(a, b)| a.iter().zip(b).map(|(a, b)| Some((*a)? - (*b)?)).collect())
            .collect();
        let mut context = vec![format!("{} = {} minus {}", d.axis, d.minuend, d.subtrahend)];
        context.extend(without(group).context());
        tables.push((context, values));
    }
    tables
}
