//! Accumulators in memory bounded by a run's length, never by its number
//! of packets: exact histograms, series per bin, a link's capacity over
//! time, and the packets in flight per fingerprint; and the small figures
//! over a handful of values (Jain's index, mean and spread, percentiles).

pub mod capacity;
pub mod histogram;
pub mod in_flight;
pub mod series;
pub mod statistics;
