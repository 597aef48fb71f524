//! The index page of a study (`emu run DIR`: several experiments): the
//! experiments grouped by scenario, and within a scenario one row per
//! cell of the grid, the variants side by side (one column each: the SCE
//! and the L4S variant of a scenario cell next to each other), each
//! linking to its section of that experiment's page with its headline
//! numbers and its first run's delivery chart. Cells pair when their
//! sweep assignments are equal; experiments without a scenario are
//! listed alone.

use crate::draw::plot::escape;
use crate::experiments::page::{cell_anchor, cell_title};
use crate::experiments::results_dir::{CellDir, ExperimentDir};
use crate::pages::output::STYLE;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One experiment on the index: its results, its merged table and where
/// its page is, relative to the index.
pub struct Entry<'a> {
    pub experiment: &'a ExperimentDir,
    pub table: &'a serde_json::Value,
    /// `NAME/` (the page is `NAME/index.html`).
    pub page_dir: String,
    /// The same directory on disk, to see which figures it holds.
    pub page_path: std::path::PathBuf,
}

/// The index page's HTML.
pub fn page(title: &str, entries: &[Entry]) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <title>{0}</title>\n{STYLE}</head><body>\n<h1>{0}</h1>\n\
         <p>{1} experiments. Each scenario's variants side by side, cell by cell \
         (cells pair where their sweep assignments are equal).</p>\n",
        escape(title),
        entries.len()
    );
    let mut scenarios: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    let mut alone = Vec::new();
    for e in entries {
        match e.experiment.scenario.as_deref() {
            Some(s) => scenarios.entry(s).or_default().push(e),
            None => alone.push(e),
        }
    }
    for (scenario, entries) in &scenarios {
        html += &scenario_table(scenario, entries);
    }
    if !alone.is_empty() {
        html += "<h2>Other experiments</h2>\n<ul>\n";
        for e in alone {
            let _ = writeln!(
                html,
                "<li><a href=\"{}index.html\">{}</a> ({} cell{})</li>",
                escape(&e.page_dir),
                escape(&e.experiment.name),
                e.experiment.cells.len(),
                if e.experiment.cells.len() == 1 {
                    ""
                } else {
                    "s"
                }
            );
        }
        html += "</ul>\n";
    }
    html + "</body></html>\n"
}

/// A variant's column heading: its name, else the experiment's.
fn variant(e: &Entry) -> String {
    e.experiment
        .variant
        .clone()
        .unwrap_or_else(|| e.experiment.name.clone())
}

fn scenario_table(scenario: &str, entries: &[&Entry]) -> String {
    let mut variants: Vec<String> = entries.iter().map(|e| variant(e)).collect();
    variants.sort();
    variants.dedup();
    // Rows: the cells' assignments, in the order first seen.
    let mut rows: Vec<String> = Vec::new();
    for e in entries {
        for c in &e.experiment.cells {
            if !rows.contains(&c.label) {
                rows.push(c.label.clone());
            }
        }
    }
    let mut html = format!(
        "<h2 id=\"scenario-{}\">{}</h2>\n<table class=\"pairs\"><tr><th>cell</th>",
        escape(&crate::pages::figures::slug(scenario)),
        escape(scenario)
    );
    for v in &variants {
        let _ = write!(html, "<th>{}</th>", escape(v));
    }
    html += "</tr>\n";
    for label in &rows {
        let mut title = None;
        let mut cells = String::new();
        for v in &variants {
            let found = entries.iter().filter(|e| variant(e) == *v).find_map(|e| {
                let c = e.experiment.cells.iter().find(|c| c.label == *label)?;
                Some((e, c))
            });
            match found {
                Some((e, c)) => {
                    title.get_or_insert_with(|| cell_title(c));
                    cells += &format!("<td class=\"pair\">{}</td>", pair_cell(e, c));
                }
                None => cells += "<td>–</td>",
            }
        }
        let _ = writeln!(
            html,
            "<tr><td>{}</td>{cells}</tr>",
            escape(title.as_deref().unwrap_or(label))
        );
    }
    html + "</table>\n"
}

/// One variant's cell: a link to its section, its flows' goodputs and
/// Jain's index, and its first run's delivery chart.
fn pair_cell(e: &Entry, c: &CellDir) -> String {
    let href = format!("{}index.html#{}", e.page_dir, cell_anchor(c.cell));
    let mut html = format!(
        "<a href=\"{}\">{}, cell {}</a><br>",
        escape(&href),
        escape(&e.experiment.name),
        c.cell
    );
    let summary = e.table["cells"].as_array().and_then(|cells| {
        cells
            .iter()
            .find(|s| s["cell"].as_u64() == Some(c.cell as u64))
    });
    if let Some(s) = summary {
        let goodputs: Vec<String> = s["flows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let mbps = f["goodput_bps"]["mean"].as_f64()? / 1e6;
                Some(format!(
                    "{} {mbps:.2}",
                    escape(f["name"].as_str().unwrap_or(""))
                ))
            })
            .collect();
        if !goodputs.is_empty() {
            let _ = write!(html, "goodput (Mbit/s): {}", goodputs.join(", "));
        }
        if let Some(j) = s["jain_index"]["mean"].as_f64() {
            let _ = write!(html, "; Jain {j:.3}");
        }
    }
    let chart = c
        .runs
        .first()
        .map(|run| format!("cell-{}-run-{}-delivery.svg", c.cell, run.run))
        .filter(|file| e.page_path.join(file).is_file());
    if let Some(file) = chart {
        let _ = write!(
            html,
            "<br><a href=\"{0}\"><img src=\"{1}{2}\" width=\"380\" \
             alt=\"{3}: delivery rate with RTT\"></a>",
            escape(&href),
            escape(&e.page_dir),
            file,
            escape(&e.experiment.name)
        );
    }
    html
}
