//! Scheme comparisons: an experiment whose flow's `scheme` is a list
//! (`scheme = ["wrappers/copa.py", "cubic"]`) runs one cell per scheme;
//! after its runs, each scheme's flow is shown as Pantheon shows it — the
//! table of its throughput, p95 one-way delay and loss (mean ± std across
//! runs) and the summary plot (a point per run, an ellipse per scheme),
//! named by scheme (a wrapper by its file's stem, a kernel congestion
//! control by its name), in `OUT/NAME/schemes.{html,svg,json}`.

use crate::file::sweep::Cell;
use crate::file::{Experiment, Plan};
use crate::results::measured::RunResult;
use report::experiments::results_dir;
use report::pages::schemes::{Scheme, SchemeRun};
use std::path::Path;

/// A cell of a comparison: the scheme it runs and its flows' names.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemeCell {
    pub cell: usize,
    /// The scheme's name, with the cell's other swept values after it.
    pub name: String,
    /// The same, with the scheme as the file gives it: cells of one
    /// scheme share it (a wrapper `cubic.py` and kernel `cubic` do not).
    pub key: String,
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
    let with_others = |scheme: String| match others.is_empty() {
        true => scheme,
        false => format!("{scheme} ({})", others.join(" ")),
    };
    Some(SchemeCell {
        cell: cell.index,
        name: with_others(scheme_name(value)),
        key: with_others(value.trim().trim_matches('"').to_string()),
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
/// A run whose flow delivered nothing is a failure, kept with how the
/// flow ended.
pub fn gather(root: &Path, cells: &[SchemeCell]) -> Vec<Scheme> {
    // By key; two schemes of one name are shown as the file gives them.
    let mut schemes: Vec<(String, Scheme)> = Vec::new();
    for cell in cells {
        let dir = results_dir::cell_dir(root, cell.cell);
        let mut results: Vec<RunResult> = results_dir::cell_results(&dir)
            .into_iter()
            .filter_map(|file| {
                let text = std::fs::read_to_string(file).ok()?;
                serde_json::from_str(&text).ok()
            })
            .collect();
        results.sort_by_key(|result| result.run);
        let (mut runs, mut failed) = (Vec::new(), Vec::new());
        for result in &results {
            match point(result, &cell.flows) {
                Some(run) => runs.push(run),
                None => failed.push(format!(
                    "run {}: {}",
                    result.run,
                    ended(result, &cell.flows)
                )),
            }
        }
        match schemes.iter_mut().find(|(key, _)| *key == cell.key) {
            Some((_, scheme)) => {
                scheme.runs.extend(runs);
                scheme.failed.extend(failed);
            }
            None => schemes.push((
                cell.key.clone(),
                Scheme {
                    name: cell.name.clone(),
                    runs,
                    failed,
                },
            )),
        }
    }
    let names: Vec<String> = schemes.iter().map(|(_, s)| s.name.clone()).collect();
    schemes
        .into_iter()
        .map(|(key, mut scheme)| {
            if names.iter().filter(|n| **n == scheme.name).count() > 1 {
                scheme.name = key;
            }
            scheme
        })
        .collect()
}

/// How the scheme's flows of `result` ended.
fn ended(result: &RunResult, flows: &[String]) -> String {
    let ends: Vec<&str> = result
        .flows
        .iter()
        .filter(|f| flows.contains(&f.name))
        .map(|f| f.ended.as_str())
        .collect();
    ends.join("; ")
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
/// text (with where the page is) and its runs that moved no data.
pub fn write(
    root: &Path,
    title: &str,
    cells: &[SchemeCell],
) -> Result<(String, Vec<String>), String> {
    let schemes = gather(root, cells);
    let title = format!("{title}: schemes compared");
    let files = [
        (
            results_dir::SCHEMES_PAGE,
            report::pages::schemes::page(&title, &schemes),
        ),
        (
            results_dir::SCHEMES_FIGURE,
            report::pages::schemes::summary_svg(&title, &schemes),
        ),
        (
            results_dir::SCHEMES,
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
    let text = format!(
        "{title}\n{}table and summary plot in {}\n",
        report::pages::schemes::table_text(&schemes),
        root.join(results_dir::SCHEMES_PAGE).display()
    );
    Ok((text, report::pages::schemes::failures(&schemes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::sweep::Grid;
    use crate::file::{self, CongestionControls, FlowKind, PantheonSide, Source};

    const FILE: &str = r#"
[hosts.a]
side = "left"
[hosts.b]
side = "right"
[bottleneck]
rate = "10mbit"
[[flows]]
name = "scheme"
scheme = ["w/copa.py", "cubic"]
from = "a"
to = "b"
setup_time = "1s"
[[flows]]
from = "a"
to = "b"
"#;

    fn planned(text: &str, index: usize) -> Result<(Cell, Experiment, Plan), String> {
        let grid = Grid::new("x.toml", text, &[]).map_err(|e| e.0)?;
        let cell = grid.cell(index);
        let source = Source {
            file: "x.toml",
            text: &cell.text,
        };
        let experiment = file::parse(&source).map_err(|e| e.0)?;
        let controls = CongestionControls {
            available: vec!["cubic".into(), "reno".into()],
            allowed: vec!["cubic".into(), "reno".into()],
        };
        let plan = file::plan(
            &experiment,
            &source,
            "x",
            Path::new("/e"),
            &controls,
            &|_| Ok(PantheonSide::Receiver),
        )
        .map_err(|e| e.0)?;
        Ok((cell, experiment, plan))
    }

    /// A wrapper's cell runs a Pantheon flow, a congestion control's a
    /// TCP flow without the wrapper's setup time; both are named.
    #[test]
    fn a_swept_scheme_is_a_comparison_of_named_cells() {
        let (cell, experiment, plan) = planned(FILE, 0).unwrap();
        assert_eq!(plan.flows[0].kind, FlowKind::Pantheon);
        let wrapper = &plan.flows[0].pantheon.as_ref().unwrap().wrapper;
        assert_eq!(wrapper, Path::new("/e/w/copa.py"));
        let copa = scheme_cell(&cell, &experiment, &plan).unwrap();
        assert_eq!(
            (copa.name.as_str(), copa.flows.as_slice()),
            ("copa", &["scheme".to_string()][..])
        );
        let (cell, experiment, plan) = planned(FILE, 1).unwrap();
        assert_eq!(plan.flows[0].kind, FlowKind::Tcp);
        assert_eq!(plan.flows[0].cc.as_deref(), Some("cubic"));
        assert_eq!(
            scheme_cell(&cell, &experiment, &plan).unwrap().name,
            "cubic"
        );
        let both = FILE.replace("setup_time", "cc = \"reno\"\nsetup_time");
        let error = planned(&both, 0).unwrap_err();
        assert!(error.contains("flows.0.scheme"), "{error}");
    }

    #[test]
    fn schemes_are_named_by_wrapper_stem_or_congestion_control() {
        assert_eq!(scheme_name("\"pantheon/src/wrappers/copa.py\""), "copa");
        assert_eq!(scheme_name("wrappers/reno_stream.py"), "reno_stream");
        assert_eq!(scheme_name("cubic"), "cubic");
    }
}
