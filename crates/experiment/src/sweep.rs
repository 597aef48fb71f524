//! Sweeps: any scalar of an experiment may be a list, and the experiment
//! is then the grid of all combinations. `--set key=value` overrides a key
//! first (a list given there sweeps too).
//!
//! A cell is made as text: each list in the file is replaced, where it
//! stands, by the one value the cell takes, padded with the newlines the
//! list spanned. Every cell is then read by the same strict parser as a
//! file without lists, and any error it has points at the line and key of
//! the user's own file.

use crate::config::ExperimentError;
use std::ops::Range;
use toml_edit::{DocumentMut, Item, Table, Value};

/// One swept key and the values it takes, in the file's order.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Dotted path, array-of-tables entries by index: `flows.0.cc`.
    pub key: String,
    /// Each value as the user wrote it (TOML text) and as shown.
    values: Vec<(String, String)>,
    span: Range<usize>,
}

/// The experiment text (after `--set`) and its lists.
#[derive(Debug, Clone)]
pub struct Grid {
    text: String,
    axes: Vec<Axis>,
}

/// One combination of swept values.
#[derive(Debug, Clone)]
pub struct Cell {
    pub index: usize,
    /// `(key, value)` per axis, for names and tables.
    pub assignments: Vec<(String, String)>,
    /// The experiment with this cell's values in place of the lists.
    pub text: String,
}

impl Cell {
    /// `rate=50mbit delay=10ms`, or `(no sweep)`.
    pub fn label(&self) -> String {
        if self.assignments.is_empty() {
            return "(no sweep)".to_string();
        }
        self.assignments
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The most cells one experiment file may sweep (ten days of 10 s cells).
pub const MAX_CELLS: usize = 100_000;

impl Grid {
    /// Reads `text` (from `file`), applies `sets` and finds the lists.
    pub fn new(file: &str, text: &str, sets: &[String]) -> Result<Grid, ExperimentError> {
        let syntax = |e: toml_edit::TomlError| {
            ExperimentError(format!("{file}: {}", e.to_string().trim_end()))
        };
        let text = if sets.is_empty() {
            text.to_string()
        } else {
            let mut document: DocumentMut = text.parse().map_err(syntax)?;
            for set in sets {
                apply_set(&mut document, set)?;
            }
            document.to_string()
        };
        let document = toml_edit::Document::parse(text.clone()).map_err(syntax)?;
        let mut axes = Vec::new();
        collect_axes(document.as_table(), &text, "", &mut axes);
        axes.sort_by_key(|a| a.span.start);
        // Every cell is planned before the first runs (so a bad one fails
        // before anything starts): a grid must stay countable and small
        // enough to plan. Lists in many keys multiply quickly.
        let cells = axes.iter().try_fold(1usize, |cells, axis| {
            cells
                .checked_mul(axis.values.len())
                .filter(|&n| n <= MAX_CELLS)
        });
        if cells.is_none() {
            return Err(ExperimentError(format!(
                "{file}: the lists of the sweep ({} keys) make more than {MAX_CELLS} cells; split it into several files or fix some keys with --set KEY=VALUE",
                axes.len()
            )));
        }
        Ok(Grid { text, axes })
    }

    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `index` (0-based; the last list varies fastest).
    pub fn cell(&self, index: usize) -> Cell {
        let mut choice = vec![0; self.axes.len()];
        let mut rest = index;
        for (a, axis) in self.axes.iter().enumerate().rev() {
            choice[a] = rest % axis.values.len();
            rest /= axis.values.len();
        }
        let mut text = self.text.clone();
        // From the end, so earlier spans stay where they are.
        for (a, axis) in self.axes.iter().enumerate().rev() {
            let (value, _) = &axis.values[choice[a]];
            let spanned_lines = self.text[axis.span.clone()].matches('\n').count();
            let padding = "\n".repeat(spanned_lines.saturating_sub(value.matches('\n').count()));
            text.replace_range(axis.span.clone(), &format!("{value}{padding}"));
        }
        Cell {
            index,
            assignments: self
                .axes
                .iter()
                .zip(&choice)
                .map(|(axis, &c)| (axis.key.clone(), axis.values[c].1.clone()))
                .collect(),
            text,
        }
    }
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::InlineTable(_))
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.value().clone(),
        other => other.to_string().trim().to_string(),
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn collect_value(value: &Value, text: &str, key: &str, axes: &mut Vec<Axis>) {
    match value {
        Value::Array(array) if !array.is_empty() && array.iter().all(is_scalar) => {
            let Some(span) = array.span() else { return };
            let values = array
                .iter()
                .filter_map(|v| {
                    let span = v.span()?;
                    Some((text[span].to_string(), shown(v)))
                })
                .collect::<Vec<_>>();
            if values.len() == array.len() {
                axes.push(Axis {
                    key: key.to_string(),
                    values,
                    span,
                });
            }
        }
        Value::Array(array) => {
            for (i, v) in array.iter().enumerate() {
                collect_value(v, text, &join(key, &i.to_string()), axes);
            }
        }
        Value::InlineTable(table) => {
            for (k, v) in table.iter() {
                collect_value(v, text, &join(key, k), axes);
            }
        }
        _ => {}
    }
}

fn collect_axes(table: &Table, text: &str, prefix: &str, axes: &mut Vec<Axis>) {
    for (key, item) in table.iter() {
        let path = join(prefix, key);
        match item {
            Item::Value(value) => collect_value(value, text, &path, axes),
            Item::Table(t) => collect_axes(t, text, &path, axes),
            Item::ArrayOfTables(tables) => {
                for (i, t) in tables.iter().enumerate() {
                    collect_axes(t, text, &join(&path, &i.to_string()), axes);
                }
            }
            Item::None => {}
        }
    }
}

/// `key=value`: the value is read as TOML (`50`, `"x"`, `["a", "b"]`),
/// or as a string if it is not TOML (`--set bottleneck.rate=50mbit`).
fn apply_set(document: &mut DocumentMut, set: &str) -> Result<(), ExperimentError> {
    let bad = |why: String| ExperimentError(format!("--set {set}: {why}"));
    let (key, value) = set
        .split_once('=')
        .ok_or_else(|| bad("give it as KEY=VALUE, e.g. bottleneck.rate=50mbit".into()))?;
    let path: Vec<&str> = key.trim().split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err(bad(format!(
            "'{key}' is not a dotted key such as flows.0.cc"
        )));
    }
    let value: Value = value
        .trim()
        .parse()
        .unwrap_or_else(|_| Value::from(value.trim()));
    set_in_table(document.as_table_mut(), &path, value).map_err(bad)
}

/// Sets `path` under `table`, making missing tables on the way.
fn set_in_table(table: &mut Table, path: &[&str], value: Value) -> Result<(), String> {
    let (first, rest) = path.split_first().expect("a non-empty path");
    if rest.is_empty() {
        table.insert(first, Item::Value(value));
        return Ok(());
    }
    if !table.contains_key(first) {
        table.insert(first, Item::Table(Table::new()));
    }
    match table.get_mut(first).expect("just made sure") {
        Item::Table(inner) => set_in_table(inner, rest, value),
        Item::ArrayOfTables(tables) => {
            let (index, rest) = rest.split_first().expect("checked above");
            let index: usize = index
                .parse()
                .map_err(|_| format!("'{index}' should be the index of an entry of {first}"))?;
            let count = tables.len();
            let inner = tables
                .get_mut(index)
                .ok_or_else(|| format!("{first} has no entry {index} (there are {count})"))?;
            if rest.is_empty() {
                return Err("a whole entry cannot be set; set one of its keys".into());
            }
            set_in_table(inner, rest, value)
        }
        Item::Value(Value::InlineTable(inline)) => {
            let mut owned = inline.clone().into_table();
            set_in_table(&mut owned, rest, value)?;
            table.insert(
                first,
                Item::Value(Value::InlineTable(owned.into_inline_table())),
            );
            Ok(())
        }
        _ => Err(format!("'{first}' is a value, not a table")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"[run]
duration = "5s"

[hosts.a]
side = "left"
delay = ["10ms", "20ms",
         "40ms"]

[bottleneck]
rate = ["10mbit", "50mbit"]

[[flows]]
from = "a"
to = "b"
cc = ["cubic", "bbr"]
"#;

    #[test]
    fn lists_make_a_grid_with_the_last_varying_fastest() {
        let grid = Grid::new("x.toml", FILE, &[]).unwrap();
        let keys: Vec<&str> = grid.axes().iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, vec!["hosts.a.delay", "bottleneck.rate", "flows.0.cc"]);
        assert_eq!(grid.len(), 12);
        let cell = grid.cell(7);
        assert_eq!(
            cell.label(),
            "hosts.a.delay=20ms bottleneck.rate=50mbit flows.0.cc=bbr"
        );
        let value: toml::Table = toml::from_str(&cell.text).unwrap();
        assert_eq!(value["hosts"]["a"]["delay"].as_str(), Some("20ms"));
        assert_eq!(value["flows"][0]["cc"].as_str(), Some("bbr"));
        // Lines below a multi-line list stay where they were.
        assert_eq!(cell.text.lines().count(), FILE.lines().count());
        let line = |t: &str| t.lines().position(|l| l.starts_with("rate")).unwrap();
        assert_eq!(line(&cell.text), line(FILE));
    }

    #[test]
    fn set_overrides_and_may_sweep() {
        let grid = Grid::new(
            "x.toml",
            FILE,
            &[
                "bottleneck.rate=5mbit".into(),
                "run.seed=7".into(),
                "flows.0.cc=[\"reno\"]".into(),
                "hosts.a.up.delay=1ms".into(),
            ],
        )
        .unwrap();
        assert_eq!(grid.len(), 3);
        let value: toml::Table = toml::from_str(&grid.cell(0).text).unwrap();
        assert_eq!(value["bottleneck"]["rate"].as_str(), Some("5mbit"));
        assert_eq!(value["run"]["seed"].as_integer(), Some(7));
        assert_eq!(value["flows"][0]["cc"].as_str(), Some("reno"));
        assert_eq!(value["hosts"]["a"]["up"]["delay"].as_str(), Some("1ms"));
    }

    #[test]
    fn a_bad_set_says_what_is_wrong() {
        let error = Grid::new("x.toml", FILE, &["flows.3.cc=bbr".into()]).unwrap_err();
        assert!(error.0.contains("no entry 3"), "{error}");
        let error = Grid::new("x.toml", FILE, &["rate".into()]).unwrap_err();
        assert!(error.0.contains("KEY=VALUE"), "{error}");
    }

    #[test]
    fn a_file_without_lists_is_one_cell() {
        let grid = Grid::new("x.toml", "[run]\nseed = 3\n", &[]).unwrap();
        assert_eq!(grid.len(), 1);
        assert_eq!(grid.cell(0).label(), "(no sweep)");
        assert_eq!(grid.cell(0).text, "[run]\nseed = 3\n");
    }

    /// Lists in many keys multiply: a grid past MAX_CELLS (or past what a
    /// usize counts, which would wrap) is refused by name, not planned.
    #[test]
    fn a_grid_too_large_to_plan_is_refused() {
        let mut text = String::from("[run]\n");
        for k in 0..6 {
            text += &format!("k{k} = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
        }
        let error = Grid::new("big.toml", &text, &[]).unwrap_err();
        assert!(error.0.starts_with("big.toml:"), "{error}");
        assert!(error.0.contains("more than 100000 cells"), "{error}");
        let mut text = String::from("[run]\n");
        for k in 0..70 {
            text += &format!("k{k} = [1, 2]\n");
        }
        assert!(Grid::new("wide.toml", &text, &[]).is_err());
        // Five lists of ten stay within bounds.
        let mut text = String::from("[run]\n");
        for k in 0..5 {
            text += &format!("k{k} = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n");
        }
        assert_eq!(Grid::new("ok.toml", &text, &[]).unwrap().len(), 100_000);
    }
}
