//! The report of what `emu run` wrote: one experiment gets one page
//! (`OUT/index.html`); a study (several experiments) gets an index
//! (`OUT/index.html`, see [`crate::experiments::study_index`]) and one page per
//! experiment (`OUT/NAME/index.html`), each with its figures beside it.

use crate::experiments::merge::Merged;
use crate::experiments::page::{self, PageOptions};
use crate::experiments::results_dir::ExperimentDir;
use crate::experiments::study_index::{self, Entry};
use crate::pages::figures::slug;
use std::io;
use std::path::{Path, PathBuf};

/// What was written: the page to open, and what could not be drawn.
#[derive(Debug, Default)]
pub struct Report {
    pub index: PathBuf,
    pub pages: Vec<PathBuf>,
    pub warnings: Vec<String>,
}

/// Writes the pages of `experiments` into `out`; `tables[i]` is the merged
/// results of `experiments[i]`. `title` heads a study's index.
pub fn write(
    experiments: &[ExperimentDir],
    tables: &[Merged],
    out: &Path,
    title: &str,
    options: &PageOptions,
) -> io::Result<Report> {
    let mut report = Report::default();
    if let ([one], [table]) = (experiments, tables) {
        let written = page::write(one, table, out, options)?;
        report.index = written.page.clone();
        report.pages.push(written.page);
        report.warnings = written.warnings;
        return Ok(report);
    }
    let mut entries = Vec::new();
    for (e, table) in experiments.iter().zip(tables) {
        let dir_name = slug(&e.name);
        let dir = out.join(&dir_name);
        let written = page::write(e, table, &dir, options)?;
        report.pages.push(written.page);
        report.warnings.extend(written.warnings);
        entries.push(Entry {
            experiment: e,
            table,
            page_dir: format!("{dir_name}/"),
            page_path: dir,
        });
    }
    std::fs::create_dir_all(out)?;
    report.index = out.join("index.html");
    std::fs::write(&report.index, study_index::page(title, &entries))?;
    Ok(report)
}
