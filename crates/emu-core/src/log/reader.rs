//! Reading a log back in bounded memory, a finished one or one still being
//! written: each damaged or truncated file is reported with its byte
//! offset.

use crate::log::header::{LogHeader, MAGIC};
use crate::log::record::{Record, RECORD_SIZE};
use crate::progress::Counted;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

/// Error reading a log: what went wrong and at which byte offset, so a
/// truncated or foreign file is reported precisely.
#[derive(Debug)]
pub struct LogError {
    pub path: PathBuf,
    pub offset: u64,
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: at byte {}: {}",
            self.path.display(),
            self.offset,
            self.message
        )
    }
}

impl std::error::Error for LogError {}

/// Streams the records of one log file in bounded memory.
///
/// A log written by [`LogWriter`] (as the shells write theirs), read back:
///
/// ```
/// use emu_core::log::{Direction, Event, LogHeader, LogReader, LogWriter, Record};
///
/// let path = std::env::temp_dir().join(format!("doc-{}.emulog", std::process::id()));
/// let header = LogHeader {
///     shell: 0,
///     description: "delay 40 ms".into(),
///     monotonic_origin_ns: 0,
///     realtime_origin_ns: 0,
///     rate_bps: None,
///     command_line: "emu delay 40".into(),
///     ..Default::default()
/// };
/// let mut writer = LogWriter::new();
/// let file = writer.add_file(&path, &header).unwrap();
/// let mut sink = writer.sink(file);
/// writer.start();
/// let arrival = Record {
///     time: 1_000,
///     sojourn: 0,
///     flow: 7,
///     fingerprint: 42,
///     bytes: 1500,
///     queue_bytes: 0,
///     queue_packets: 0,
///     shell: 0,
///     direction: Direction::Uplink,
///     event: Event::Arrive,
///     detail: 0,
///     ecn: 0,
/// };
/// sink.record(arrival);
/// sink.record(Record { time: 40_001_000, event: Event::Depart, ..arrival });
/// drop(sink);
/// let totals = writer.finish().unwrap();
/// assert_eq!((totals.records, totals.records_lost), (2, 0));
///
/// let reader = LogReader::open(&path).unwrap();
/// assert_eq!(reader.header.description, "delay 40 ms");
/// let events: Vec<Event> = reader.map(|r| r.unwrap().event).collect();
/// assert_eq!(events, [Event::Arrive, Event::Depart]);
/// # std::fs::remove_file(&path).unwrap();
/// ```
pub struct LogReader {
    path: PathBuf,
    input: BufReader<Counted<File>>,
    offset: u64,
    pub header: LogHeader,
    failed: bool,
    /// The record being read, `filled` bytes of it so far: a follower
    /// keeps a part of a record until the writer adds the rest.
    record: [u8; RECORD_SIZE],
    filled: usize,
}

impl LogReader {
    pub fn open(path: &Path) -> Result<LogReader, LogError> {
        let fail = |offset: u64, message: String| LogError {
            path: path.to_path_buf(),
            offset,
            message,
        };
        let file = File::open(path).map_err(|e| fail(0, format!("cannot open: {e}")))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(fail(
                0,
                "is a directory, not a log: give one of its .emulog files".into(),
            ));
        }
        // A buffer of 1 MiB reads a long log in few system calls; a short
        // file gets one its own size, because the buffer is zero-filled on
        // first use (`Counted` only implements `read`), and a report opening
        // many small logs would otherwise clear a MiB for each.
        let length = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
        let capacity = length.clamp(8 << 10, 1 << 20) as usize;
        let mut input = BufReader::with_capacity(capacity, Counted(file));
        let mut magic = [0u8; 8];
        input
            .read_exact(&mut magic)
            .map_err(|_| fail(0, "too short to be an emu log (no magic)".into()))?;
        if magic[..7] != MAGIC[..7] {
            return Err(fail(
                0,
                "not an emu log: the file does not start with EMULOG".into(),
            ));
        }
        if magic[7] != MAGIC[7] {
            return Err(fail(
                7,
                format!(
                    "log format version {} is not supported (this emu reads {})",
                    magic[7], MAGIC[7]
                ),
            ));
        }
        let mut length = [0u8; 4];
        input
            .read_exact(&mut length)
            .map_err(|_| fail(8, "truncated before the header length".into()))?;
        let length = u32::from_le_bytes(length) as usize;
        if length > 1 << 20 {
            return Err(fail(8, format!("header length {length} is implausible")));
        }
        let mut json = vec![0u8; length];
        input
            .read_exact(&mut json)
            .map_err(|_| fail(12, "truncated inside the header".into()))?;
        let header: LogHeader = serde_json::from_slice(&json)
            .map_err(|e| fail(12, format!("header is not valid: {e}")))?;
        Ok(LogReader {
            path: path.to_path_buf(),
            input,
            offset: 12 + length as u64,
            header,
            failed: false,
            record: [0; RECORD_SIZE],
            filled: 0,
        })
    }
}

impl Iterator for LogReader {
    type Item = Result<Record, LogError>;

    /// The next record of a finished log; a part of a record at its end is
    /// an error (the log was cut).
    fn next(&mut self) -> Option<Self::Item> {
        match self.read_record()? {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.failed = true;
                Some(Err(self.error(format!(
                    "truncated record ({} of {RECORD_SIZE} bytes)",
                    self.filled
                ))))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl LogReader {
    /// The next record of a log that may still be written: None when the
    /// file ends, on a record boundary or inside a record. A part of a
    /// record is kept, and a later call completes it once the writer has
    /// added the rest; [`partial_bytes`](Self::partial_bytes) says how much
    /// is held when the log is known to be finished.
    pub fn follow(&mut self) -> Option<Result<Record, LogError>> {
        match self.read_record()? {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// Bytes of a record read but not yet whole (see [`follow`](Self::follow)).
    pub fn partial_bytes(&self) -> usize {
        self.filled
    }

    /// Reads on into the current record: None at the end of the file with
    /// nothing of a record read (or after an error), Some(Ok(None)) at the
    /// end of the file inside a record, the record once whole.
    fn read_record(&mut self) -> Option<Result<Option<Record>, LogError>> {
        if self.failed {
            return None;
        }
        while self.filled < RECORD_SIZE {
            match self.input.read(&mut self.record[self.filled..]) {
                Ok(0) => break,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.failed = true;
                    return Some(Err(self.error(format!("read failed: {e}"))));
                }
            }
        }
        match self.filled {
            0 => None,
            RECORD_SIZE => {
                self.filled = 0;
                match Record::decode(&self.record) {
                    Ok(record) => {
                        self.offset += RECORD_SIZE as u64;
                        Some(Ok(Some(record)))
                    }
                    Err(message) => {
                        self.failed = true;
                        Some(Err(self.error(message)))
                    }
                }
            }
            _ => Some(Ok(None)),
        }
    }
}

impl LogReader {
    /// Byte offset of the next record (right after `open`, of the first):
    /// for a reader that follows a log while it is written.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn error(&self, message: String) -> LogError {
        LogError {
            path: self.path.clone(),
            offset: self.offset,
            message,
        }
    }
}
