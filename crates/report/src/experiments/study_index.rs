//! The index page of a study (`emu run DIR`: several experiments): the
//! experiments grouped by scenario, and within a scenario one row per
//! cell of the grid, the variants side by side (one column each: the SCE
//! and the L4S variant of a scenario cell next to each other), each
//! linking to its section of that experiment's page with its headline
//! numbers and its first run's delivery chart. Cells pair on the swept
//! keys the variants share (see [`pairing_keys`]); experiments without a
//! scenario are listed alone.

use crate::draw::plot::escape;
use crate::experiments::merge::Merged;
use crate::experiments::page::{cell_anchor, cell_title};
use crate::experiments::results_dir::{CellDir, ExperimentDir};
use crate::pages::output::STYLE;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One experiment on the index: its results, its merged table and where
/// its page is, relative to the index.
pub struct Entry<'a> {
    pub experiment: &'a ExperimentDir,
    pub table: &'a Merged,
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
         (cells pair where they agree on the swept keys the variants share).</p>\n",
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
    let keys = pairing_keys(entries);
    // Rows: the cells' values of those keys, in the order first seen.
    let mut rows: Vec<String> = Vec::new();
    for e in entries {
        for c in &e.experiment.cells {
            let row = row_of(c, &keys);
            if !rows.contains(&row) {
                rows.push(row);
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
    for row in &rows {
        let mut cells = String::new();
        for v in &variants {
            // A variant may have several cells in a row (a key only it
            // sweeps): one under the other.
            let found: Vec<String> = entries
                .iter()
                .filter(|e| variant(e) == *v)
                .flat_map(|e| {
                    e.experiment
                        .cells
                        .iter()
                        .filter(|c| row_of(c, &keys) == *row)
                        .map(move |c| pair_cell(e, c))
                })
                .collect();
            if found.is_empty() {
                cells += "<td>–</td>";
            } else {
                cells += &format!("<td class=\"pair\">{}</td>", found.join("<hr>"));
            }
        }
        let _ = writeln!(html, "<tr><td>{}</td>{cells}</tr>", escape(row));
    }
    html + "</table>\n"
}

/// The swept keys a scenario's cells pair on: those every variant sweeps
/// and that take a value common to all of them (the RTT, the rate). A key
/// one variant alone sweeps (the SCE flow's TOS), or whose values differ
/// between the variants (their own queues), does not split a row. Without
/// any such key, cells pair on all their assignments.
fn pairing_keys(entries: &[&Entry]) -> Option<Vec<String>> {
    let variants: Vec<Vec<(String, String)>> = entries
        .iter()
        .map(|e| e.experiment.cells.iter().flat_map(CellDir::axes).collect())
        .collect();
    shared_keys(&variants)
}

/// [`pairing_keys`] over each variant's assignments (all its cells').
fn shared_keys(variants: &[Vec<(String, String)>]) -> Option<Vec<String>> {
    let has = |axes: &[(String, String)], key: &str, value: &str| {
        axes.iter().any(|(k, v)| k == key && v == value)
    };
    let mut keys: Vec<String> = Vec::new();
    for (key, value) in variants.first()? {
        if !keys.contains(key) && variants.iter().all(|axes| has(axes, key, value)) {
            keys.push(key.clone());
        }
    }
    (!keys.is_empty()).then_some(keys)
}

/// A cell's row: its values of the pairing keys (`key = value · ...`), or
/// its whole title without them.
fn row_of(cell: &CellDir, keys: &Option<Vec<String>>) -> String {
    let Some(keys) = keys else {
        return cell_title(cell);
    };
    cell.axes()
        .into_iter()
        .filter(|(k, _)| keys.contains(k))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(" · ")
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
    if let Some(s) = e.table.cells.iter().find(|s| s.cell == c.cell) {
        let goodputs: Vec<String> = s
            .flows
            .iter()
            .filter_map(|f| {
                let mbps = f.goodput_bps?.mean / 1e6;
                Some(format!("{} {mbps:.2}", escape(&f.name)))
            })
            .collect();
        if !goodputs.is_empty() {
            let _ = write!(html, "goodput (Mbit/s): {}", goodputs.join(", "));
        }
        if let Some(j) = s.jain_index {
            let _ = write!(html, "; Jain {:.3}", j.mean);
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

#[cfg(test)]
mod tests {
    use super::shared_keys;

    fn axes(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The bakeoff's pairs: the RTT and rate both sweep pair; the SCE
    /// flow's TOS (SCE's alone) and the queues each variant has its own
    /// of do not; a queue both have (pie) makes the queue a pairing key.
    #[test]
    fn cells_pair_on_the_keys_the_variants_share() {
        let sce = axes(&[
            ("bottleneck.delay", "10ms"),
            ("bottleneck.rate", "5mbit"),
            ("bottleneck.queue", "twin_codel_af bandwidth 5Mbit"),
            ("flows.0.tos", "16"),
            ("bottleneck.delay", "40ms"),
        ]);
        let l4s = axes(&[
            ("bottleneck.delay", "40ms"),
            ("bottleneck.rate", "5mbit"),
            ("bottleneck.queue", "dualpi2"),
        ]);
        let mut keys = shared_keys(&[sce.clone(), l4s.clone()]).unwrap();
        keys.sort();
        assert_eq!(keys, ["bottleneck.delay", "bottleneck.rate"]);
        let mut l4s_pie = l4s;
        l4s_pie.push(("bottleneck.queue".into(), "pie ecn".into()));
        let mut sce_pie = sce;
        sce_pie.push(("bottleneck.queue".into(), "pie ecn".into()));
        assert_eq!(
            shared_keys(&[sce_pie, l4s_pie]).unwrap().len(),
            3,
            "a queue both variants run pairs"
        );
        assert_eq!(
            shared_keys(&[axes(&[("a.b", "1")]), axes(&[("a.c", "1")])]),
            None
        );
    }
}
