//! What `emu run` wrote, reported: the results directory found
//! (`results_dir`, the layout) and its files' types (`results_schema`,
//! which `emu run` writes too), the cells merged across directories
//! (`merge`) and summed up with the exit status they call for
//! (`summary`), a run's flows and bottleneck series read (`run_flows`,
//! `bottleneck_series`), the charts and page of each experiment
//! (`figures`, `page`), a sweep's figures laid out as tables of one axis
//! by another (`grid_tables`, written by `table_formats`), a study's index
//! (`study_index`), and the pages laid out (`report`).

pub mod bottleneck_series;
pub mod figures;
pub mod grid_tables;
pub mod merge;
pub mod page;
pub mod report;
pub mod results_dir;
pub mod results_schema;
pub mod run_flows;
pub mod study_index;
pub mod summary;
pub mod table_formats;
