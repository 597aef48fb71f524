//! `emu report` over what `emu run` wrote, before any page: each
//! experiment's cells merged into its table, the tables as text and as
//! the summary's JSON, the tables of one axis by another if asked for,
//! and whether the grid was whole (the exit status `emu report` ends
//! with). The command line prints and writes what this returns.

use crate::experiments::grid_tables::TableSpec;
use crate::experiments::merge::{merge_found, Merged};
use crate::experiments::results_dir::ExperimentDir;
use crate::experiments::table_formats;

/// The exit status of a report over an experiment's grid that lacks cells
/// or runs: written, but not whole.
pub const INCOMPLETE: i32 = 3;

/// The experiments' merged tables, as printed and written.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Each experiment's merged results, in the order found.
    pub tables: Vec<Merged>,
    /// The tables as text (under each experiment's name, for several).
    pub text: String,
    /// `summary.json`: one experiment's merged table, or every one's with
    /// its name, scenario and variant.
    pub json: String,
    /// What merging found odd, in order.
    pub warnings: Vec<String>,
    /// What each experiment's grid lacks, where it lacks something.
    pub shortfalls: Vec<String>,
}

/// Merges the runs of each experiment of `found`.
pub fn summarize(found: &[ExperimentDir]) -> Result<Summary, String> {
    let mut summary = Summary {
        tables: Vec::new(),
        text: String::new(),
        json: String::new(),
        warnings: Vec::new(),
        shortfalls: Vec::new(),
    };
    for e in found {
        let merged = merge_found(&[e]);
        summary.warnings.extend(merged.warnings.iter().cloned());
        if found.len() > 1 {
            summary.text += &format!("# {}\n", e.name);
        }
        summary.text += &merged.text();
        if let Some(short) = merged.shortfall() {
            summary.shortfalls.push(match found.len() {
                1 => short,
                _ => format!("{}: {short}", e.name),
            });
        }
        summary.tables.push(merged);
    }
    // One experiment's summary is its merged table, as before studies.
    let value = match &summary.tables[..] {
        [one] => serde_json::to_value(one).map_err(|e| e.to_string())?,
        _ => serde_json::json!({ "experiments": found.iter().zip(&summary.tables).map(|(e, t)| {
            serde_json::json!({ "name": e.name, "scenario": e.scenario, "variant": e.variant, "results": t })
        }).collect::<Vec<_>>() }),
    };
    summary.json = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
    Ok(summary)
}

impl Summary {
    /// Adds the tables of one axis by another to the text; returns the
    /// experiments passed over for lacking the axes, each with its reason
    /// (an error if none has them).
    pub fn add_grid_tables(
        &mut self,
        found: &[ExperimentDir],
        spec: &TableSpec,
    ) -> Result<Vec<String>, String> {
        let (tables, passed_over) = table_formats::markdown_of_experiments(found, spec)?;
        self.text += &tables;
        Ok(passed_over)
    }

    /// The exit status: 0 for a whole grid, or one accepted as it is
    /// (`partial`); else [`INCOMPLETE`], with the line that says why and
    /// what to do.
    pub fn status(&self, partial: bool) -> (i32, Option<String>) {
        if self.shortfalls.is_empty() || partial {
            return (0, None);
        }
        let said = format!(
            "the grid is incomplete ({}): the report covers what is there; \
             run what is missing (`emu run ... --cell K`) and report again, \
             or pass --partial to accept it",
            self.shortfalls.join("; ")
        );
        (INCOMPLETE, Some(said))
    }
}
