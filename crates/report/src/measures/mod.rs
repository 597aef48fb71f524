//! Accumulators in memory bounded by a run's length, never by its number
//! of packets: exact histograms, series per bin, a link's capacity over
//! time, and queues of values per key.

pub mod capacity;
pub mod histogram;
pub(crate) mod keyed_fifo;
pub mod series;
