//! The tables of [`crate::experiments::grid_tables`] written out: as
//! Markdown (printed by `emu report`, and `tables/tables.md`), as CSV (one
//! file per table) and as HTML (a section of the experiment's page).

use crate::draw::plot::escape;
use crate::experiments::grid_tables::{self, GridTable, TableSpec};
use crate::experiments::results_dir::ExperimentDir;
use crate::pages::figures::slug;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// A cell as shown: `12.34`, `+0.50` in a difference, `-` where empty.
fn number(table: &GridTable, value: Option<f64>) -> String {
    let decimals = table.metric.decimals();
    match value {
        None => "-".into(),
        Some(v) if table.difference => format!("{v:+.decimals$}"),
        Some(v) => format!("{v:.decimals$}"),
    }
}

/// The corner cell: which axis runs down and which across.
fn corner(table: &GridTable) -> String {
    format!("{} \\ {}", table.row_axis, table.col_axis)
}

/// The table's rows of text, the header first.
fn grid(table: &GridTable) -> Vec<Vec<String>> {
    let header = std::iter::once(corner(table)).chain(table.cols.iter().cloned());
    let mut lines = vec![header.collect::<Vec<_>>()];
    for (label, values) in table.rows.iter().zip(&table.values) {
        let cells = values.iter().map(|v| number(table, *v));
        lines.push(std::iter::once(label.clone()).chain(cells).collect());
    }
    lines
}

/// A Markdown table under its title, columns aligned so it reads as text
/// too.
pub fn markdown(table: &GridTable) -> String {
    let lines = grid(table);
    let mut widths = vec![3; lines[0].len()];
    for line in &lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let row = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| match i {
                0 => format!("{c:<w$}"),
                _ => format!("{c:>w$}"),
            })
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let rule: Vec<String> = widths
        .iter()
        .enumerate()
        .map(|(i, w)| match i {
            0 => format!(":{}", "-".repeat(w - 1)),
            _ => format!("{}:", "-".repeat(w - 1)),
        })
        .collect();
    let mut out = format!("### {}\n\n", table.title());
    let mut lines = lines.into_iter();
    out += &row(lines.next().expect("a header"));
    out += &format!("| {} |\n", rule.join(" | "));
    for line in lines {
        out += &row(line);
    }
    out
}

/// One CSV field, quoted where it must be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Every experiment's tables in Markdown, each under its name (a study's
/// experiments one after another), and the experiments passed over for
/// lacking the axes, each with its reason. If none has them, the first
/// reason is the error.
pub fn markdown_of_experiments(
    found: &[ExperimentDir],
    spec: &TableSpec,
) -> Result<(String, Vec<String>), String> {
    let mut text = String::new();
    let mut passed_over = Vec::new();
    for experiment in found {
        match grid_tables::build(experiment, spec) {
            Ok(tables) => {
                text += &format!("\n## {}\n\n", experiment.name);
                for table in &tables {
                    text += &markdown(table);
                    text += "\n";
                }
            }
            Err(why) => passed_over.push(format!("{}: {why}", experiment.name)),
        }
    }
    if text.is_empty() {
        return Err(passed_over.into_iter().next().unwrap_or_default());
    }
    Ok((text, passed_over))
}

/// The table as CSV: the header (the corner names both axes), then one
/// line per row; empty cells are empty.
pub fn csv(table: &GridTable) -> String {
    let mut out = String::new();
    for (i, line) in grid(table).into_iter().enumerate() {
        let fields: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(j, cell)| match (i > 0 && j > 0, cell.as_str()) {
                (true, "-") => String::new(),
                _ => field(cell),
            })
            .collect();
        out += &fields.join(",");
        out += "\n";
    }
    out
}

/// The tables as a section of the experiment's page.
pub fn html(tables: &[GridTable]) -> String {
    let mut html = String::from("<h2 id=\"tables\">tables</h2>\n");
    for table in tables {
        let _ = write!(
            html,
            "<table><caption>{}</caption>\n<tr>",
            escape(&table.title())
        );
        for (i, line) in grid(table).into_iter().enumerate() {
            if i > 0 {
                html += "<tr>";
            }
            for (j, cell) in line.iter().enumerate() {
                let tag = if i == 0 || j == 0 { "th" } else { "td" };
                let _ = write!(html, "<{tag}>{}</{tag}>", escape(cell));
            }
            html += "</tr>\n";
        }
        html += "</table>\n";
    }
    html
}

/// Writes `dir/tables/tables.md` (every table) and one CSV per table,
/// named by its title, numbered in order.
pub fn write(tables: &[GridTable], dir: &Path) -> io::Result<()> {
    let dir = dir.join("tables");
    std::fs::create_dir_all(&dir)?;
    let mut all = String::new();
    for (i, table) in tables.iter().enumerate() {
        all += &markdown(table);
        all += "\n";
        let name = format!("{:02}-{}.csv", i + 1, slug(&table.title()));
        std::fs::write(dir.join(name), csv(table))?;
    }
    std::fs::write(dir.join("tables.md"), all)
}
