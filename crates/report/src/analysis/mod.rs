//! The analysis of one direction of one run: the events it is fed, their
//! accumulation, Mahimahi's own four figures, and the summary it gives
//! back.

pub mod direction;
pub mod events;
mod flows;
pub mod mahimahi_figures;
mod shells;
pub mod summary;
mod totals;
