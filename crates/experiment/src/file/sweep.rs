//! Sweeps: any scalar of an experiment may be a list, and the experiment
//! is then the grid of all combinations. `--set key=value` overrides a key
//! first (a list given there sweeps too).
//!
//! Lists named together in `run.together` advance in step instead of
//! multiplying: `together = [["hosts.a.delay", "hosts.a.jitter"]]` with
//! three values each makes three cells, not nine (a study's pairs such as
//! rate with delay, or delay with its jitter).
//!
//! A cell is made as text: each list in the file is replaced, where it
//! stands, by the one value the cell takes, padded with the newlines the
//! list spanned. Every cell is then read by the same strict parser as a
//! file without lists, and any error it has points at the line and key of
//! the user's own file.

use crate::file::ExperimentError;
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
    /// Indices into `axes` that advance together, one group per dimension
    /// of the grid, ordered by where their first list stands.
    dimensions: Vec<Vec<usize>>,
}

/// Keys that hold lists without being swept: the groups themselves and
/// the quick form's overrides.
const NOT_SWEPT: [&str; 2] = ["run.together", "quick"];

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
        let written = toml_edit::Document::parse(text.to_string()).map_err(syntax)?;
        let mut written_lists = Vec::new();
        collect_axes(written.as_table(), text, "", &mut written_lists);
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
        let written_lists: Vec<String> = written_lists.into_iter().map(|a| a.key).collect();
        let dimensions = dimensions(file, &document, &axes, &written_lists)?;
        // Every cell is planned before the first runs (so a bad one fails
        // before anything starts): a grid must stay countable and small
        // enough to plan. Lists in many keys multiply quickly.
        let cells = dimensions.iter().try_fold(1usize, |cells, group| {
            cells
                .checked_mul(axes[group[0]].values.len())
                .filter(|&n| n <= MAX_CELLS)
        });
        if cells.is_none() {
            return Err(ExperimentError(format!(
                "{file}: the lists of the sweep ({} keys) make more than {MAX_CELLS} cells; split it into several files, fix some keys with --set KEY=VALUE, or make lists advance together (run.together)",
                axes.len()
            )));
        }
        Ok(Grid {
            text,
            axes,
            dimensions,
        })
    }

    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    pub fn len(&self) -> usize {
        self.dimensions
            .iter()
            .map(|group| self.axes[group[0]].values.len())
            .product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cell `index` (0-based; the last list varies fastest).
    pub fn cell(&self, index: usize) -> Cell {
        let mut choice = vec![0; self.axes.len()];
        let mut rest = index;
        for group in self.dimensions.iter().rev() {
            let values = self.axes[group[0]].values.len();
            for &a in group {
                choice[a] = rest % values;
            }
            rest /= values;
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
        if NOT_SWEPT.contains(&path.as_str()) {
            continue;
        }
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

/// The grid's dimensions: each group of `run.together` whose keys are
/// still lists, then every other list alone, ordered by where their first
/// list stands in the file. A key of a group that `--set` fixes to one
/// value leaves its group's lists but keeps the group's place (the scalar
/// holds for every cell of the group), so the cells keep the numbers the
/// file's own listing gives them and a `--cell K` chosen from it runs the
/// same pairing. A key the file does not have, or lists of different
/// lengths in one group, are errors.
fn dimensions(
    file: &str,
    document: &toml_edit::Document<String>,
    axes: &[Axis],
    written_lists: &[String],
) -> Result<Vec<Vec<usize>>, ExperimentError> {
    let bad = |why: String| ExperimentError(format!("{file}: run.together: {why}"));
    let mut grouped = vec![false; axes.len()];
    // Each dimension with the place it takes: where its first list stands.
    let mut placed: Vec<(usize, Vec<usize>)> = Vec::new();
    for keys in &together_groups(document).map_err(bad)? {
        let mut group = Vec::new();
        let mut place = usize::MAX;
        for key in keys {
            if let Some(a) = axes.iter().position(|axis| &axis.key == key) {
                if grouped[a] {
                    return Err(bad(format!("'{key}' is in more than one group")));
                }
                grouped[a] = true;
                group.push(a);
                place = place.min(axes[a].span.start);
            } else if let Some(node) = node_at(document.as_table(), key) {
                if written_lists.contains(key) {
                    place = place.min(node.start().unwrap_or(usize::MAX));
                }
            } else {
                return Err(bad(format!(
                    "'{key}' is not a key of the experiment (keys are dotted, entries of [[flows]] and [[bottleneck]] by index: flows.0.cc)"
                )));
            }
        }
        if let Some(&first) = group.first() {
            let n = axes[first].values.len();
            if let Some(&other) = group.iter().find(|&&a| axes[a].values.len() != n) {
                return Err(bad(format!(
                    "'{}' has {n} values and '{}' has {}: lists that advance together need as many values each",
                    axes[first].key,
                    axes[other].key,
                    axes[other].values.len()
                )));
            }
            group.sort_by_key(|&a| axes[a].span.start);
            placed.push((place, group));
        }
    }
    placed.extend(
        (0..axes.len())
            .filter(|&a| !grouped[a])
            .map(|a| (axes[a].span.start, vec![a])),
    );
    placed.sort_by_key(|(place, _)| *place);
    Ok(placed.into_iter().map(|(_, group)| group).collect())
}

/// The keys of each group of `run.together`, or what to write instead.
fn together_groups(document: &toml_edit::Document<String>) -> Result<Vec<Vec<String>>, String> {
    let Some(item) = document.get("run").and_then(|r| r.get("together")) else {
        return Ok(Vec::new());
    };
    item.as_array()
        .and_then(|groups| {
            groups
                .iter()
                .map(|g| {
                    g.as_array()?
                        .iter()
                        .map(|k| k.as_str().map(str::to_string))
                        .collect::<Option<Vec<String>>>()
                })
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| {
            "give lists of keys, e.g. together = [[\"bottleneck.rate\", \"bottleneck.delay\"]]"
                .into()
        })
}

/// What a dotted key names in a document: a table, an entry of an array
/// of tables, or a value.
#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a Table),
    Item(&'a Item),
    Value(&'a Value),
}

impl<'a> Node<'a> {
    fn child(self, part: &str) -> Option<Node<'a>> {
        let index = || part.parse::<usize>().ok();
        match self {
            Node::Table(t) | Node::Item(Item::Table(t)) => t.get(part).map(Node::Item),
            Node::Item(Item::ArrayOfTables(a)) => a.get(index()?).map(Node::Table),
            Node::Item(Item::Value(v)) | Node::Value(v) => match v {
                Value::InlineTable(t) => t.get(part).map(Node::Value),
                Value::Array(a) => a.get(index()?).map(Node::Value),
                _ => None,
            },
            Node::Item(Item::None) => None,
        }
    }

    /// Where a value stands in the text it was read from.
    fn start(self) -> Option<usize> {
        match self {
            Node::Item(Item::Value(v)) | Node::Value(v) => v.span().map(|s| s.start),
            _ => None,
        }
    }
}

/// What the dotted `key` names under `table`, if anything.
fn node_at<'a>(table: &'a Table, key: &str) -> Option<Node<'a>> {
    key.split('.')
        .try_fold(Node::Table(table), |node, part| node.child(part))
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

    #[test]
    fn lists_named_together_advance_in_step() {
        let text = r#"[run]
together = [["bottleneck.delay", "bottleneck.jitter"]]

[bottleneck]
delay = ["2ms", "4ms", "10ms"]
jitter = ["1ms", "2ms", "5ms"]
rate = ["10mbit", "50mbit"]
"#;
        let grid = Grid::new("x.toml", text, &[]).unwrap();
        assert_eq!(grid.len(), 6);
        assert_eq!(
            grid.cell(5).label(),
            "bottleneck.delay=10ms bottleneck.jitter=5ms bottleneck.rate=50mbit"
        );
        assert_eq!(
            grid.cell(2).label(),
            "bottleneck.delay=4ms bottleneck.jitter=2ms bottleneck.rate=10mbit"
        );
        // A key fixed by --set leaves its group; the rest still sweeps.
        let grid = Grid::new("x.toml", text, &["bottleneck.delay=3ms".into()]).unwrap();
        assert_eq!(grid.len(), 6);
        assert_eq!(
            grid.cell(0).label(),
            "bottleneck.jitter=1ms bottleneck.rate=10mbit"
        );
    }

    /// A scalar `--set` on a key paired in `run.together` holds for every
    /// cell and leaves the other lists paired where the file put them:
    /// each cell keeps the values the file's own listing gives it.
    #[test]
    fn a_set_on_a_paired_key_keeps_the_cells_numbers() {
        let text = include_str!("../../../../experiments/sce-l4s/1-one-flow-l4s.toml");
        let listed = Grid::new("1-one-flow-l4s.toml", text, &[]).unwrap();
        let set = Grid::new("1-one-flow-l4s.toml", text, &["run.duration=30s".into()]).unwrap();
        assert_eq!(set.len(), listed.len());
        assert_eq!(
            listed.cell(3).label(),
            "run.duration=60s bottleneck.rate=5mbit bottleneck.delay=40ms"
        );
        for k in 0..listed.len() {
            let (listed, set) = (listed.cell(k), set.cell(k));
            let without_duration: Vec<_> = listed
                .assignments
                .iter()
                .filter(|(key, _)| key != "run.duration")
                .cloned()
                .collect();
            assert_eq!(set.assignments, without_duration, "cell {k}");
            let value: toml::Table = toml::from_str(&set.text).unwrap();
            assert_eq!(value["run"]["duration"].as_str(), Some("30s"), "cell {k}");
        }
        // Fixed the other way round, by the key that comes later in the
        // file, the durations keep their place too.
        let set = Grid::new(
            "1-one-flow-l4s.toml",
            text,
            &["bottleneck.delay=10ms".into()],
        )
        .unwrap();
        assert_eq!(
            set.cell(3).label(),
            "run.duration=60s bottleneck.rate=5mbit"
        );
    }

    #[test]
    fn together_refuses_unknown_keys_and_unequal_lists() {
        let text = |together: &str| {
            format!(
                "[run]\ntogether = {together}\n[bottleneck]\ndelay = [\"2ms\", \"4ms\"]\nrate = [\"1mbit\", \"2mbit\", \"3mbit\"]\nloss = 0.1\n"
            )
        };
        let error = Grid::new(
            "x.toml",
            &text(r#"[["bottleneck.delay", "bottleneck.rate"]]"#),
            &[],
        )
        .unwrap_err();
        assert!(
            error.0.contains("has 2 values and 'bottleneck.rate' has 3"),
            "{error}"
        );
        let error = Grid::new("x.toml", &text(r#"[["bottleneck.dealy"]]"#), &[]).unwrap_err();
        assert!(
            error.0.contains("'bottleneck.dealy' is not a key"),
            "{error}"
        );
        let error = Grid::new("x.toml", &text(r#"["bottleneck.delay"]"#), &[]).unwrap_err();
        assert!(error.0.contains("give lists of keys"), "{error}");
        // A scalar key is allowed (it has one value) and changes nothing.
        let grid = Grid::new(
            "x.toml",
            &text(r#"[["bottleneck.loss", "bottleneck.delay"]]"#),
            &[],
        )
        .unwrap();
        assert_eq!(grid.len(), 6);
        // The groups and the quick form's lists are never axes.
        assert!(grid
            .axes()
            .iter()
            .all(|a| !a.key.starts_with("run.together")));
        let grid = Grid::new("x.toml", "[quick]\nset = [\"a=1\", \"b=2\"]\n", &[]).unwrap();
        assert_eq!(grid.len(), 1);
    }
}
