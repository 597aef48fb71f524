//! Scheme comparisons: an experiment whose flow's `scheme` is a list
//! (`scheme = ["wrappers/copa.py", "cubic"]`) runs one cell per scheme;
//! after its runs, each scheme's flow is shown as Pantheon shows it — the
//! table of its throughput, p95 one-way delay and loss (mean ± std across
//! runs) and the summary plot (a point per run, an ellipse per scheme),
//! named by scheme (a wrapper by its file's stem, a kernel congestion
//! control by its name), in `OUT/NAME/schemes.{html,svg,json}`.

use crate::config::{Experiment, Plan};
use crate::results::RunResult;
use crate::sweep::Cell;
use report::schemes::{Scheme, SchemeRun};
use std::path::Path;

/// A cell of a comparison: the scheme it runs and its flows' names.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeCell {
    pub cell: usize,
    /// The scheme's name, with the cell's other swept values after it.
    pub name: String,
    pub flows: Vec<String>,
}

/// The comparison cell `cell` is, if one of its swept keys is a flow's
/// `scheme`.
pub fn scheme_cell(cell: &Cell, experiment: &Experiment, plan: &Plan) -> Option<SchemeCell> {
    let (section, value) = cell.assignments.iter().find_map(|(key, value)| {
        let index = key.strip_prefix("flows.")?.strip_suffix(".scheme")?;
        Some((index.parse::<usize>().ok()?, value))
    })?;
    let first: usize = experiment.flows[..section]
        .iter()
        .map(|f| f.count as usize)
        .sum();
    let count = experiment.flows.get(section)?.count as usize;
    let flows = plan
        .flows
        .get(first..first + count)?
        .iter()
        .map(|f| f.name.clone())
        .collect();
    let others: Vec<String> = cell
        .assignments
        .iter()
        .filter(|(key, _)| !key.ends_with(".scheme"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let mut name = scheme_name(value);
    if !others.is_empty() {
        name = format!("{name} ({})", others.join(" "));
    }
    Some(SchemeCell {
        cell: cell.index,
        name,
        flows,
    })
}

/// A scheme's name: a wrapper's file stem, or the congestion control.
pub fn scheme_name(value: &str) -> String {
    let value = value.trim().trim_matches('"');
    if value.contains('/') || value.ends_with(".py") {
        if let Some(stem) = Path::new(value).file_stem() {
            return stem.to_string_lossy().into_owned();
        }
    }
    value.to_string()
}

/// Each scheme's runs found under `root` (`cell-K/run-R/result.json`):
/// a run's point is its scheme flows' mean figures from the links' logs.
/// Runs without them (cut short, or their flow never delivered) are left
/// out.
pub fn gather(root: &Path, cells: &[SchemeCell]) -> Vec<Scheme> {
    let mut schemes: Vec<Scheme> = Vec::new();
    for cell in cells {
        let dir = root.join(format!("cell-{}", cell.cell));
        let mut runs: Vec<(u32, SchemeRun)> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let text = std::fs::read_to_string(entry.path().join("result.json")).ok()?;
                let result: RunResult = serde_json::from_str(&text).ok()?;
                Some((result.run, point(&result, &cell.flows)?))
            })
            .collect();
        runs.sort_by_key(|(run, _)| *run);
        let runs = runs.into_iter().map(|(_, r)| r);
        match schemes.iter_mut().find(|s| s.name == cell.name) {
            Some(scheme) => scheme.runs.extend(runs),
            None => schemes.push(Scheme {
                name: cell.name.clone(),
                runs: runs.collect(),
            }),
        }
    }
    schemes
}

fn point(result: &RunResult, flows: &[String]) -> Option<SchemeRun> {
    let figures: Vec<_> = result
        .flows
        .iter()
        .filter(|f| flows.contains(&f.name))
        .filter_map(|f| f.path.as_ref())
        .collect();
    let mean = |values: Vec<f64>| {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    };
    Some(SchemeRun {
        throughput_mbps: mean(figures.iter().filter_map(|f| f.throughput_bps).collect())? / 1e6,
        delay_p95_ms: mean(figures.iter().filter_map(|f| f.delay_p95_ms).collect())?,
        loss_percent: mean(figures.iter().filter_map(|f| f.loss_percent).collect()),
    })
}

/// Writes the comparison of `cells` under `root` and returns its table as
/// text (with where the page is).
pub fn write(root: &Path, title: &str, cells: &[SchemeCell]) -> Result<String, String> {
    let schemes = gather(root, cells);
    let title = format!("{title}: schemes compared");
    let files = [
        ("schemes.html", report::schemes::page(&title, &schemes)),
        (
            "schemes.svg",
            report::schemes::summary_svg(&title, &schemes),
        ),
        (
            "schemes.json",
            format!(
                "{:#}\n",
                serde_json::json!({ "title": title, "schemes": schemes })
            ),
        ),
    ];
    for (name, text) in files {
        let path = root.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(format!(
        "{title}\n{}table and summary plot in {}\n",
        report::schemes::table_text(&schemes),
        root.join("schemes.html").display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_named_by_wrapper_stem_or_congestion_control() {
        assert_eq!(scheme_name("\"pantheon/src/wrappers/copa.py\""), "copa");
        assert_eq!(scheme_name("wrappers/reno_stream.py"), "reno_stream");
        assert_eq!(scheme_name("cubic"), "cubic");
    }
}
