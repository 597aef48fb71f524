//! The experiment file: what it may say (`schema`), the checks that need
//! more than one key (`checks`), a link direction as a shell would build
//! it (`directions`), the plan a run follows (`plan`) and the making of
//! it (`planning`), the grid a sweep makes (`sweep`) and the units its
//! values are written in (`units`).

mod checks;
mod directions;
mod plan;
mod planning;
mod schema;
pub mod sweep;
pub mod units;

pub use plan::*;
pub use planning::plan;
pub use schema::*;
