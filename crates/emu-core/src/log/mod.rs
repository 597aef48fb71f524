//! The per-packet log: a compact fixed-size binary record for every event a
//! packet meets (arrival, enqueue, departure, drop with its reason, mark),
//! the writer that takes records off the pumps through rings so logging
//! never blocks the data path, and the streaming reader behind `emu log
//! dump` and the report crate. The file format is documented in
//! docs/log-format.md.
//!
//! From the bottom up: [`record`] (the 48-byte record and its fields),
//! [`header`] (the file's magic and JSON header), [`reader`] and
//! [`writer`]. Everything is also named here, as `emu_core::log::...`.

pub mod header;
pub mod reader;
pub mod record;
pub mod text;
pub mod writer;

pub use header::{update_header, write_header, write_log_file, LogHeader, TraceFile, MAGIC};
pub use reader::{LogError, LogReader};
pub use record::{Change, Direction, DropCounts, DropReason, Event, Mark, Record, RECORD_SIZE};
pub use writer::{CaptureSink, LogSink, LogWriter, WriterTotals, CAPTURE_CAPACITY, SINK_CAPACITY};

#[cfg(test)]
mod tests;
