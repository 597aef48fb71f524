//! The per-packet log: a compact fixed-size binary record for every event a
//! packet meets (arrival, enqueue, departure, drop with its reason, mark),
//! the writer that takes records off the pumps through rings so logging
//! never blocks the data path, and the streaming reader behind `emu log dump`
//! and the report crate. The file format is documented in docs/log-format.md.

use crate::capture::{CaptureEncoder, CaptureHeader, CaptureOptions, Captured, Fate};
use crate::output::{Encode, FileTotals, Routed, Stream};
use crate::progress::Counted;
use crate::ring::{spsc, Consumer, Producer};
use crate::time::Nanos;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// First eight bytes of every log file; the last byte is the format version.
pub const MAGIC: [u8; 8] = *b"EMULOG\0\x01";
/// Size in bytes of one encoded [`Record`].
pub const RECORD_SIZE: usize = 48;

/// Which way a packet travels. Uplink leaves the shell (from the command
/// towards the host), downlink enters it, as in Mahimahi.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Direction {
    #[default]
    Uplink = 0,
    Downlink = 1,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Uplink, Direction::Downlink];

    pub fn name(self) -> &'static str {
        match self {
            Direction::Uplink => "uplink",
            Direction::Downlink => "downlink",
        }
    }
}

/// What happened to the packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Event {
    /// Read from the device (stamped by the reader thread).
    #[default]
    Arrive = 0,
    /// Accepted by the queue.
    Enqueue = 1,
    /// Written out of the shell, after serialization and delay.
    Depart = 2,
    /// Gone, with a [`DropReason`] in `detail`.
    Drop = 3,
    /// ECN field rewritten by a queue, with a [`Mark`] in `detail`.
    Mark = 4,
    /// A copy of the packet made by the path (netem's duplicate); the copy
    /// then has its own enqueue, depart or drop records.
    Duplicate = 5,
    /// One bit of the packet flipped past its IP header (netem's corrupt).
    Corrupt = 6,
    /// A parameter of the path changed: the [`Change`] in `detail`, its new
    /// value in the record's `sojourn` slot (see [`Record::value`]). Not
    /// about a packet: flow, fingerprint and bytes are 0.
    Change = 7,
    /// Names a flow the first time this shell sees it in this direction:
    /// its protocol and 5-tuple (see [`crate::flow`]). Not a packet event.
    Flow = 8,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Arrive => "arrive",
            Event::Enqueue => "enqueue",
            Event::Depart => "depart",
            Event::Drop => "drop",
            Event::Mark => "mark",
            Event::Duplicate => "duplicate",
            Event::Corrupt => "corrupt",
            Event::Change => "change",
            Event::Flow => "flow",
        }
    }

    fn from_u8(value: u8) -> Option<Event> {
        Some(match value {
            0 => Event::Arrive,
            1 => Event::Enqueue,
            2 => Event::Depart,
            3 => Event::Drop,
            4 => Event::Mark,
            5 => Event::Duplicate,
            6 => Event::Corrupt,
            7 => Event::Change,
            8 => Event::Flow,
            _ => return None,
        })
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// Arrived to a full queue.
    Tail = 1,
    /// Pushed out of the head of a full queue (drop-head, or a flow queue's
    /// overflow drop from the fattest flow).
    Head = 2,
    /// The AQM's congestion signal.
    Aqm = 3,
    /// The random loss model.
    Loss = 4,
    /// Larger than the path accepts.
    Oversize = 5,
    /// An AQM's overload protection.
    Overload = 6,
    /// A pure TCP ACK made redundant by a later one in the same queue
    /// (cake's ack-filter).
    AckFilter = 7,
}

impl DropReason {
    pub const ALL: [DropReason; 7] = [
        DropReason::Tail,
        DropReason::Head,
        DropReason::Aqm,
        DropReason::Loss,
        DropReason::Oversize,
        DropReason::Overload,
        DropReason::AckFilter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Tail => "tail",
            DropReason::Head => "head",
            DropReason::Aqm => "aqm",
            DropReason::Loss => "loss",
            DropReason::Oversize => "oversize",
            DropReason::Overload => "overload",
            DropReason::AckFilter => "ack_filter",
        }
    }

    pub fn from_u8(value: u8) -> Option<DropReason> {
        DropReason::ALL.into_iter().find(|r| *r as u8 == value)
    }
}

/// Packets dropped, counted by reason: the link's counters, the shells'
/// summaries and the report's tables all count drops in one of these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounts([u64; DropReason::ALL.len() + 1]);

impl DropCounts {
    pub fn add(&mut self, reason: DropReason) {
        self.0[reason as usize] += 1;
    }

    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason as usize]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Every reason with its count, zeros included, in [`DropReason::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&reason| (reason, self.get(reason)))
    }

    /// The reasons that dropped anything, by name, as tables and JSON show them.
    pub fn nonzero_by_name(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.iter()
            .filter(|&(_, n)| n > 0)
            .map(|(reason, n)| (reason.name(), n))
            .collect()
    }
}

/// Which congestion mark a queue applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Mark {
    /// Congestion Experienced (RFC 3168).
    Ce = 16,
    /// ECT(0) rewritten to ECT(1): a Some Congestion Experienced mark.
    Ect1 = 17,
}

impl Mark {
    pub fn name(self) -> &'static str {
        match self {
            Mark::Ce => "ce",
            Mark::Ect1 => "ect1",
        }
    }
}

/// Which parameter of the path a [`Event::Change`] record is about, and
/// the unit of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Change {
    /// The base propagation delay, in ns (jitter comes on top).
    Delay = 1,
    /// The bottleneck's rate, in bit/s.
    Rate = 2,
    /// The bottleneck went down; the value is the outage's length in ns.
    OutageStart = 3,
    /// The bottleneck is up again; the value is 0.
    OutageEnd = 4,
    /// The loss model's Markov state: Gilbert-Elliott 1 good, 2 bad; the
    /// four-state model 1 to 4 as netem numbers them.
    LossState = 5,
}

impl Change {
    pub const ALL: [Change; 5] = [
        Change::Delay,
        Change::Rate,
        Change::OutageStart,
        Change::OutageEnd,
        Change::LossState,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Change::Delay => "delay",
            Change::Rate => "rate",
            Change::OutageStart => "outage_start",
            Change::OutageEnd => "outage_end",
            Change::LossState => "loss_state",
        }
    }

    pub fn from_u8(value: u8) -> Option<Change> {
        Change::ALL.into_iter().find(|c| *c as u8 == value)
    }
}

/// One event in a packet's life. Encoded little-endian in 48 bytes. The
/// default is what 48 zero bytes decode to (an uplink arrival at time 0),
/// for records built field by field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// CLOCK_MONOTONIC (real runs) or virtual time, in ns.
    pub time: Nanos,
    /// Time the packet spent in this shell's queue (departures, AQM drops); else 0.
    pub sojourn: Nanos,
    pub flow: u32,
    pub fingerprint: u32,
    /// IP packet length in bytes.
    pub bytes: u32,
    /// Queue occupancy right after the event.
    pub queue_bytes: u32,
    pub queue_packets: u32,
    /// Position of the shell in the chain, 0 = outermost.
    pub shell: u8,
    pub direction: Direction,
    pub event: Event,
    /// Drop reason or mark kind, 0 when the event has none.
    pub detail: u8,
    /// The packet's ECN codepoint after the event.
    pub ecn: u8,
}

impl Record {
    pub fn drop_reason(&self) -> Option<DropReason> {
        (self.event == Event::Drop)
            .then(|| DropReason::from_u8(self.detail))
            .flatten()
    }

    /// A record of a parameter change at `time`.
    pub fn change(
        time: Nanos,
        shell: u8,
        direction: Direction,
        change: Change,
        value: u64,
    ) -> Record {
        Record {
            time,
            sojourn: value,
            flow: 0,
            fingerprint: 0,
            bytes: 0,
            queue_bytes: 0,
            queue_packets: 0,
            shell,
            direction,
            event: Event::Change,
            detail: change as u8,
            ecn: 0,
        }
    }

    /// What a change record changed.
    pub fn change_kind(&self) -> Option<Change> {
        (self.event == Event::Change)
            .then(|| Change::from_u8(self.detail))
            .flatten()
    }

    /// The new value of a change record (its unit is the [`Change`]'s), 0
    /// for other records.
    pub fn value(&self) -> u64 {
        if self.event == Event::Change {
            self.sojourn
        } else {
            0
        }
    }

    pub fn encode(&self, out: &mut [u8; RECORD_SIZE]) {
        out[0..8].copy_from_slice(&self.time.to_le_bytes());
        out[8..16].copy_from_slice(&self.sojourn.to_le_bytes());
        out[16..20].copy_from_slice(&self.flow.to_le_bytes());
        out[20..24].copy_from_slice(&self.fingerprint.to_le_bytes());
        out[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        out[28..32].copy_from_slice(&self.queue_bytes.to_le_bytes());
        out[32..36].copy_from_slice(&self.queue_packets.to_le_bytes());
        out[36] = self.shell;
        out[37] = self.direction as u8;
        out[38] = self.event as u8;
        out[39] = self.detail;
        out[40] = self.ecn;
        out[41..48].fill(0);
    }

    pub fn decode(bytes: &[u8; RECORD_SIZE]) -> Result<Record, String> {
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let direction = match bytes[37] {
            0 => Direction::Uplink,
            1 => Direction::Downlink,
            other => return Err(format!("direction byte {other} is neither 0 nor 1")),
        };
        let event = Event::from_u8(bytes[38])
            .ok_or_else(|| format!("event byte {} is unknown", bytes[38]))?;
        Ok(Record {
            time: u64_at(0),
            sojourn: u64_at(8),
            flow: u32_at(16),
            fingerprint: u32_at(20),
            bytes: u32_at(24),
            queue_bytes: u32_at(28),
            queue_packets: u32_at(32),
            shell: bytes[36],
            direction,
            event,
            detail: bytes[39],
            ecn: bytes[40],
        })
    }

    /// The `detail` byte spelled out: a drop reason, a mark, or empty.
    pub fn detail_name(&self) -> &'static str {
        match self.event {
            Event::Drop => DropReason::from_u8(self.detail).map_or("unknown", DropReason::name),
            Event::Mark => match self.detail {
                16 => Mark::Ce.name(),
                17 => Mark::Ect1.name(),
                _ => "unknown",
            },
            Event::Flow => match self.detail {
                4 => "ipv4",
                6 => "ipv6_source",
                7 => "ipv6_destination",
                _ => "unknown",
            },
            Event::Change => Change::from_u8(self.detail).map_or("unknown", Change::name),
            _ => "",
        }
    }
}

/// What a log file says about the shell that wrote it, stored as JSON after
/// the magic so the format can grow without breaking readers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LogHeader {
    pub shell: u8,
    /// The shell's kind and arguments as the user gave them, e.g. "link 10mbit".
    pub description: String,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME read together at the start, so
    /// record times can be turned into wall-clock times.
    pub monotonic_origin_ns: u64,
    pub realtime_origin_ns: u64,
    /// Per direction: the link rate in bit/s if constant, for capacity plots.
    #[serde(default)]
    pub rate_bps: Option<[Option<u64>; 2]>,
    #[serde(default)]
    pub command_line: String,
    /// Per direction: the delivery trace this shell followed, copied into
    /// the log directory so a report can show capacity over time without
    /// the original file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<[Option<TraceFile>; 2]>,
    /// Per direction: the queue discipline with all its parameters (the
    /// `aqm::QueueSpec` as JSON), so a log says what the path was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queues: Option<[Option<serde_json::Value>; 2]>,
    /// Per direction: the rate in bit/s of a shaper inside the queue (cake's
    /// `bandwidth`), which caps the shell's capacity below the link's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper_bps: Option<[Option<u64>; 2]>,
    /// Per direction: packets the kernel dropped on their way in, before
    /// emu read them (the TUN device's ring and its qdisc), so a reader of
    /// the log alone can tell them from the path's drops. Known only when
    /// the run ends: written then with [`update_header`]; None in a log
    /// still being written, or from an emu that did not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_dropped: Option<[u64; 2]>,
}

/// A trace copied next to a log, in emu's nanosecond trace format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceFile {
    /// File name, relative to the log's directory.
    pub file: String,
    /// False when the shell ran with `--once`: the trace did not loop.
    pub repeat: bool,
}

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

/// Room left after the header's JSON (as spaces, which JSON readers skip)
/// for what is only known at the end of a run; see [`update_header`].
const HEADER_RESERVE: usize = 128;

/// Writes the header of a log file.
pub fn write_header(out: &mut impl Write, header: &LogHeader) -> io::Result<()> {
    let mut json = serde_json::to_vec(header).map_err(io::Error::other)?;
    json.resize(json.len() + HEADER_RESERVE, b' ');
    out.write_all(&MAGIC)?;
    out.write_all(&(json.len() as u32).to_le_bytes())?;
    out.write_all(&json)
}

/// Writes a whole log at `path`: the header, then `records` in their
/// order. For logs made at once (tests, converters); a running shell
/// writes through a [`LogWriter`].
pub fn write_log_file(path: &Path, header: &LogHeader, records: &[Record]) -> io::Result<()> {
    let mut out = Vec::with_capacity(records.len() * RECORD_SIZE + 512);
    write_header(&mut out, header)?;
    for r in records {
        let mut bytes = [0u8; RECORD_SIZE];
        r.encode(&mut bytes);
        out.extend_from_slice(&bytes);
    }
    std::fs::write(path, out)
}

/// Rewrites the header of the finished log at `path` in place (the records
/// stay where they are): the new JSON must fit in the length the header
/// was written with, which leaves room for the exit-time counts.
pub fn update_header(path: &Path, header: &LogHeader) -> io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut start = [0u8; 12];
    file.read_exact(&mut start)?;
    if start[..8] != MAGIC {
        return Err(io::Error::other("not an emu log of this version"));
    }
    let length = u32::from_le_bytes([start[8], start[9], start[10], start[11]]) as usize;
    let mut json = serde_json::to_vec(header).map_err(io::Error::other)?;
    if json.len() > length {
        return Err(io::Error::other(format!(
            "the updated header ({} bytes) does not fit in the {length} reserved",
            json.len()
        )));
    }
    json.resize(length, b' ');
    file.seek(SeekFrom::Start(12))?;
    file.write_all(&json)
}

/// The pump's end of a log ring. Pushing never blocks: if the writer has
/// fallen so far behind that the ring is full, the record is counted in
/// `lost` (reported at exit) rather than stalling a packet.
pub struct LogSink {
    producer: Option<Producer<Record>>,
    lost: Arc<AtomicU64>,
    capture: Option<CaptureSink>,
}

/// The pump's end of a capture ring, with what to capture. Like records,
/// a capture that finds the ring full is counted as lost, never waited for.
pub struct CaptureSink {
    producer: Producer<Captured>,
    options: CaptureOptions,
    lost: Arc<AtomicU64>,
}

impl LogSink {
    /// A sink that records nothing (logging off).
    pub fn disabled() -> LogSink {
        LogSink {
            producer: None,
            lost: Arc::new(AtomicU64::new(0)),
            capture: None,
        }
    }

    /// This sink, also capturing packets into `capture`.
    pub fn with_capture(mut self, capture: CaptureSink) -> LogSink {
        self.capture = Some(capture);
        self
    }

    /// True when packets are captured (departures at least).
    #[inline]
    pub fn captures(&self) -> bool {
        self.capture.is_some()
    }

    /// Captures the first bytes of a packet that departed or was dropped
    /// at `time`; drops only when they were asked for.
    pub fn capture(&mut self, time: Nanos, data: &[u8], fate: Fate) {
        let Some(capture) = &mut self.capture else {
            return;
        };
        if matches!(fate, Fate::Dropped { .. }) && !capture.options.drops {
            return;
        }
        if capture.producer.is_full() {
            capture.lost.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let kept = data.len().min(capture.options.snaplen as usize);
        let packet = Captured {
            time,
            original_len: data.len() as u32,
            data: data[..kept].to_vec(),
            fate,
        };
        if capture.producer.push(packet).is_err() {
            capture.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.producer.is_some()
    }

    #[inline]
    pub fn record(&mut self, record: Record) {
        if let Some(producer) = &mut self.producer {
            if producer.push(record).is_err() {
                self.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A capture ring read directly, for virtual-time tests.
impl CaptureSink {
    pub fn in_memory(
        capacity: usize,
        options: CaptureOptions,
    ) -> (CaptureSink, Consumer<Captured>) {
        let (producer, consumer) = spsc(capacity);
        (
            CaptureSink {
                producer,
                options,
                lost: Arc::new(AtomicU64::new(0)),
            },
            consumer,
        )
    }
}

/// A sink that keeps records in memory, for virtual-time tests.
impl LogSink {
    pub fn in_memory(capacity: usize) -> (LogSink, Consumer<Record>) {
        let (producer, consumer) = spsc(capacity);
        (
            LogSink {
                producer: Some(producer),
                lost: Arc::new(AtomicU64::new(0)),
                capture: None,
            },
            consumer,
        )
    }
}

/// Encodes records as the log format has them, 48 bytes each.
struct RecordEncoder;

impl Encode<Record> for RecordEncoder {
    fn encode(&mut self, record: &Record, out: &mut Vec<u8>) -> io::Result<()> {
        let mut bytes = [0u8; RECORD_SIZE];
        record.encode(&mut bytes);
        out.extend_from_slice(&bytes);
        Ok(())
    }
}

/// A record has one file per ring.
impl Routed for Record {
    fn slot(&self) -> usize {
        0
    }
}

/// The thread that drains every sink's ring into its shell's file, and
/// every capture ring into its pcapng files: two [`Stream`]s, one thread.
/// A file the disk refuses is cut at its last whole item and what follows
/// is counted (see [`crate::output`]); the rings keep being drained.
pub struct LogWriter {
    stop: Arc<AtomicBool>,
    lost: Arc<AtomicU64>,
    captures_lost: Arc<AtomicU64>,
    thread: Option<JoinHandle<(Vec<FileTotals>, Vec<FileTotals>)>>,
    records: Option<Stream<Record>>,
    captures: Option<Stream<Captured>>,
}

/// What the writer wrote, what it had to lose (a ring was full: the
/// writer fell behind) and what it could not write (the disk refused).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriterTotals {
    /// Records in the log files.
    pub records: u64,
    pub records_lost: u64,
    /// Records taken off the rings that are not in their file.
    pub records_unwritten: u64,
    /// Packets in the capture files.
    pub captures: u64,
    pub captures_lost: u64,
    pub captures_unwritten: u64,
    /// Every file, log files first, with what it holds and why it stopped.
    pub files: Vec<FileTotals>,
}

impl WriterTotals {
    fn new(records: Vec<FileTotals>, captures: Vec<FileTotals>, lost: [u64; 2]) -> WriterTotals {
        let sum = |files: &[FileTotals], f: fn(&FileTotals) -> u64| files.iter().map(f).sum();
        WriterTotals {
            records: sum(&records, |f| f.written),
            records_lost: lost[0],
            records_unwritten: sum(&records, |f| f.unwritten),
            captures: sum(&captures, |f| f.written),
            captures_lost: lost[1],
            captures_unwritten: sum(&captures, |f| f.unwritten),
            files: records.into_iter().chain(captures).collect(),
        }
    }

    /// The files the disk refused, with why: each holds everything before
    /// its failure and nothing after.
    pub fn incomplete(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.files
            .iter()
            .filter_map(|f| f.failure.as_deref().map(|e| (f.path.as_path(), e)))
    }
}

/// Captured packets per ring: they carry their bytes, so fewer than records.
pub const CAPTURE_CAPACITY: usize = 1 << 16;

/// Records per ring: about 4 s of a saturated 1 Gbit/s direction, so the
/// writer can stall on a slow disk without losing any.
pub const SINK_CAPACITY: usize = 1 << 20;

impl LogWriter {
    pub fn new() -> LogWriter {
        let said = Arc::new(AtomicBool::new(false));
        LogWriter {
            stop: Arc::new(AtomicBool::new(false)),
            lost: Arc::new(AtomicU64::new(0)),
            captures_lost: Arc::new(AtomicU64::new(0)),
            thread: None,
            records: Some(Stream::new(("packet log", "records"), said.clone())),
            captures: Some(Stream::new(("capture", "packets"), said)),
        }
    }

    fn streams(&mut self) -> (&mut Stream<Record>, &mut Stream<Captured>) {
        match (&mut self.records, &mut self.captures) {
            (Some(records), Some(captures)) => (records, captures),
            _ => panic!("files and sinks are added before LogWriter::start"),
        }
    }

    /// Creates a pcapng capture file; returns its index for [`capture_sink`].
    pub fn add_capture(&mut self, path: &Path, header: &CaptureHeader) -> io::Result<usize> {
        let (encoder, start) = CaptureEncoder::new(header)?;
        self.streams().1.add_file(path, &start, Box::new(encoder))
    }

    /// A new capture ring whose departures go to capture file `departures`
    /// and whose drops, if captured, to `drops`.
    pub fn capture_sink(
        &mut self,
        departures: usize,
        drops: Option<usize>,
        options: CaptureOptions,
    ) -> CaptureSink {
        let (producer, consumer) = spsc(CAPTURE_CAPACITY);
        self.streams()
            .1
            .add_ring([Some(departures), drops], consumer);
        CaptureSink {
            producer,
            options: CaptureOptions {
                drops: drops.is_some(),
                ..options
            },
            lost: self.captures_lost.clone(),
        }
    }

    /// Creates a log file with its header; returns its index for [`sink`].
    pub fn add_file(&mut self, path: &Path, header: &LogHeader) -> io::Result<usize> {
        let mut start = Vec::new();
        write_header(&mut start, header)?;
        self.streams()
            .0
            .add_file(path, &start, Box::new(RecordEncoder))
    }

    /// A new sink whose records go to file `file`.
    pub fn sink(&mut self, file: usize) -> LogSink {
        let (producer, consumer) = spsc(SINK_CAPACITY);
        self.streams().0.add_ring([Some(file), None], consumer);
        LogSink {
            producer: Some(producer),
            lost: self.lost.clone(),
            capture: None,
        }
    }

    /// Starts the writer thread.
    pub fn start(&mut self) {
        let stop = self.stop.clone();
        let (Some(mut records), Some(mut captures)) = (self.records.take(), self.captures.take())
        else {
            return; // started already
        };
        self.thread = Some(
            std::thread::Builder::new()
                .name("emu-log".into())
                .spawn(move || {
                    loop {
                        // Read the flag before draining so nothing pushed
                        // before stop() is left behind.
                        let stopping = stop.load(Ordering::Acquire);
                        let moved = records.drain() + captures.drain();
                        if stopping {
                            break;
                        }
                        if moved == 0 {
                            records.flush();
                            captures.flush();
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                    records.flush();
                    captures.flush();
                    (records.totals(), captures.totals())
                })
                .expect("spawning the log writer thread"),
        );
    }

    /// Drains every ring, flushes, and says what was written, lost and
    /// unwritten. A disk that refused is no error here: it shows in the
    /// totals' [`WriterTotals::incomplete`] files, for the caller to report.
    pub fn finish(mut self) -> io::Result<WriterTotals> {
        self.stop.store(true, Ordering::Release);
        let (records, captures) = match self.thread.take() {
            Some(thread) => thread
                .join()
                .map_err(|_| io::Error::other("the log writer thread panicked"))?,
            None => {
                let (records, captures) = self.streams();
                records.flush();
                captures.flush();
                (
                    self.records.take().map(Stream::totals).unwrap_or_default(),
                    self.captures.take().map(Stream::totals).unwrap_or_default(),
                )
            }
        };
        Ok(WriterTotals::new(
            records,
            captures,
            [
                self.lost.load(Ordering::Relaxed),
                self.captures_lost.load(Ordering::Relaxed),
            ],
        ))
    }
}

impl Default for LogWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// Text forms of a log for `emu log dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFormat {
    Csv,
    JsonLines,
}

/// One record as a JSON Lines object: the CSV's columns, under the same
/// names, numbers as numbers, names and hexadecimal hashes as strings.
#[derive(Serialize)]
struct JsonRecord {
    time_ns: u64,
    shell: u8,
    direction: &'static str,
    event: &'static str,
    detail: &'static str,
    bytes: u32,
    flow: String,
    fingerprint: String,
    queue_bytes: u32,
    queue_packets: u32,
    sojourn_ns: u64,
    ecn: u8,
    /// A change record's new value (0 for packet records).
    value: u64,
    /// A flow record's tuple, decoded (empty for other records).
    tuple: String,
}

impl JsonRecord {
    fn of(r: &Record, tuple: String) -> JsonRecord {
        let r = &shown(r);
        JsonRecord {
            time_ns: r.time,
            shell: r.shell,
            direction: r.direction.name(),
            event: r.event.name(),
            detail: r.detail_name(),
            bytes: r.bytes,
            flow: format!("{:08x}", r.flow),
            fingerprint: format!("{:08x}", r.fingerprint),
            queue_bytes: r.queue_bytes,
            queue_packets: r.queue_packets,
            sojourn_ns: if r.event == Event::Change {
                0
            } else {
                r.sojourn
            },
            ecn: r.ecn,
            value: r.value(),
            tuple,
        }
    }
}

/// A record as the dump shows it: a flow record's packed addresses and
/// ports are not byte counts or a fingerprint, so those fields read 0 and
/// the decoded tuple goes in its own column.
fn shown(r: &Record) -> Record {
    if r.event != Event::Flow {
        return *r;
    }
    Record {
        sojourn: 0,
        fingerprint: 0,
        bytes: 0,
        queue_bytes: 0,
        queue_packets: 0,
        ecn: 0,
        ..*r
    }
}

/// The CSV columns of a record (also the keys of its JSON Lines object).
const COLUMNS: [&str; 14] = [
    "time_ns",
    "shell",
    "direction",
    "event",
    "detail",
    "bytes",
    "flow",
    "fingerprint",
    "queue_bytes",
    "queue_packets",
    "sojourn_ns",
    "ecn",
    "value",
    "tuple",
];

/// The values of a record in the order of [`COLUMNS`]; `tuple` is a flow
/// record's decoded tuple.
fn column_values(r: &Record, tuple: String) -> [String; 14] {
    let r = &shown(r);
    [
        r.time.to_string(),
        r.shell.to_string(),
        r.direction.name().to_string(),
        r.event.name().to_string(),
        r.detail_name().to_string(),
        r.bytes.to_string(),
        format!("{:08x}", r.flow),
        format!("{:08x}", r.fingerprint),
        r.queue_bytes.to_string(),
        r.queue_packets.to_string(),
        if r.event == Event::Change {
            0
        } else {
            r.sojourn
        }
        .to_string(),
        r.ecn.to_string(),
        r.value().to_string(),
        tuple,
    ]
}

/// The tuple a flow record completes (`tcp 10.0.0.1:40312 → 10.0.0.2:5201`,
/// on the second half of an IPv6 tuple), empty for any other record.
fn tuple_of(table: &mut crate::flow::FlowTable, r: &Record) -> String {
    if r.event != Event::Flow {
        return String::new();
    }
    table.add(r);
    table
        .get(r.shell, r.direction, r.flow)
        .filter(|_| r.detail != 6)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Writes every record of `reader` as text. Stops at the first bad record
/// with its offset, after writing everything before it.
pub fn dump(
    reader: LogReader,
    format: DumpFormat,
    out: &mut impl Write,
) -> Result<u64, Box<dyn std::error::Error>> {
    if format == DumpFormat::Csv {
        writeln!(out, "{}", COLUMNS.join(","))?;
    }
    let mut count = 0;
    let mut flows = crate::flow::FlowTable::default();
    for record in reader {
        let record = record?;
        let tuple = tuple_of(&mut flows, &record);
        match format {
            DumpFormat::Csv => writeln!(out, "{}", column_values(&record, tuple).join(","))?,
            DumpFormat::JsonLines => {
                serde_json::to_writer(&mut *out, &JsonRecord::of(&record, tuple))?;
                writeln!(out)?
            }
        }
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64) -> Record {
        Record {
            time: 1_000 + i,
            sojourn: i * 7,
            flow: 0xdead_beef,
            fingerprint: i as u32,
            bytes: 1500,
            queue_bytes: 3000,
            queue_packets: 2,
            shell: 1,
            direction: Direction::Downlink,
            event: Event::Drop,
            detail: DropReason::Aqm as u8,
            ecn: 3,
        }
    }

    #[test]
    fn the_default_record_is_what_zero_bytes_decode_to() {
        assert_eq!(Record::decode(&[0; RECORD_SIZE]), Ok(Record::default()));
        let mut bytes = [1u8; RECORD_SIZE];
        Record::default().encode(&mut bytes);
        assert_eq!(bytes, [0; RECORD_SIZE]);
    }

    #[test]
    fn change_records_round_trip_and_dump_their_value() {
        let record = Record::change(5, 2, Direction::Uplink, Change::Rate, 20_000_000);
        let mut bytes = [0u8; RECORD_SIZE];
        record.encode(&mut bytes);
        let back = Record::decode(&bytes).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.change_kind(), Some(Change::Rate));
        assert_eq!((back.value(), back.detail_name()), (20_000_000, "rate"));
        let values = column_values(&back, String::new());
        assert_eq!(values[3], "change");
        assert_eq!(values[10], "0", "sojourn_ns is no packet's");
        assert_eq!(values[12], "20000000");
        // A record of the first format version decodes as before.
        assert_eq!(sample(3).value(), 0);
    }

    /// A flow record is dumped as the tuple it names, not as its packed
    /// addresses posing as byte counts.
    #[test]
    fn flow_records_dump_their_tuple() {
        use crate::flow::{FlowTable, FlowTuple};
        let mut table = FlowTable::default();
        let v4 = FlowTuple {
            protocol: 6,
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            source_port: 40312,
            destination_port: 5201,
        };
        let (records, n) = v4.records(9, 0xabc, 0, Direction::Uplink);
        assert_eq!(n, 1);
        let values = column_values(&records[0], tuple_of(&mut table, &records[0]));
        assert_eq!(values[3], "flow");
        assert_eq!(values[13], "tcp 10.0.0.1:40312 → 10.0.0.2:5201");
        assert_eq!((values[5].as_str(), values[8].as_str()), ("0", "0"));
        let v6 = FlowTuple {
            protocol: 17,
            source: "fd00::1".parse().unwrap(),
            destination: "fd00::2".parse().unwrap(),
            source_port: 443,
            destination_port: 50000,
        };
        let (records, n) = v6.records(10, 0xdef, 0, Direction::Downlink);
        assert_eq!(n, 2);
        assert_eq!(
            tuple_of(&mut table, &records[0]),
            "",
            "the source half alone"
        );
        assert_eq!(
            tuple_of(&mut table, &records[1]),
            "udp [fd00::1]:443 → [fd00::2]:50000"
        );
        assert_eq!(tuple_of(&mut table, &sample(1)), "", "a packet record");
        let json = serde_json::to_value(JsonRecord::of(&records[1], "x".into())).unwrap();
        assert_eq!(
            (json["tuple"].as_str(), json["bytes"].as_u64()),
            (Some("x"), Some(0))
        );
    }

    #[test]
    fn records_round_trip() {
        let mut bytes = [0u8; RECORD_SIZE];
        sample(5).encode(&mut bytes);
        assert_eq!(Record::decode(&bytes).unwrap(), sample(5));
        assert_eq!(sample(5).drop_reason(), Some(DropReason::Aqm));
    }

    fn header() -> LogHeader {
        LogHeader {
            shell: 1,
            description: "link 10mbit".into(),
            monotonic_origin_ns: 1,
            realtime_origin_ns: 2,
            rate_bps: None,
            command_line: String::new(),
            traces: None,
            queues: None,
            shaper_bps: Some([Some(500_000), None]),
            kernel_dropped: None,
        }
    }

    /// Writes `count` sample records to a fresh log `name` in a new
    /// directory named after `test`; returns the directory and the path.
    fn sample_log(test: &str, name: &str, count: u64) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("emu-log-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let mut writer = LogWriter::new();
        let file = writer.add_file(&path, &header()).unwrap();
        let mut sink = writer.sink(file);
        writer.start();
        for i in 0..count {
            sink.record(sample(i));
        }
        let totals = writer.finish().unwrap();
        assert_eq!((totals.records, totals.records_lost), (count, 0));
        (dir, path)
    }

    /// The exit-time counts go into the header of a finished log without
    /// moving its records; a header that no longer fits is refused.
    #[test]
    fn a_finished_log_takes_the_kernel_drops_into_its_header() {
        let (dir, path) = sample_log("update", "0-delay.emulog", 10);
        let updated = LogHeader {
            kernel_dropped: Some([280_066, u64::MAX]),
            ..header()
        };
        update_header(&path, &updated).unwrap();
        let reader = LogReader::open(&path).unwrap();
        assert_eq!(reader.header, updated);
        let records: Vec<Record> = reader.map(|r| r.unwrap()).collect();
        assert_eq!(records, (0..10).map(sample).collect::<Vec<_>>());
        let too_long = LogHeader {
            command_line: "x".repeat(HEADER_RESERVE + 1),
            ..header()
        };
        assert!(update_header(&path, &too_long).is_err());
        assert_eq!(LogReader::open(&path).unwrap().header, updated);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A follower reads a log as it grows: a record cut by the end of the
    /// file so far is held, not an error, and completed by a later read.
    #[test]
    fn a_follower_completes_a_record_the_writer_finishes_later() {
        use std::io::Write;
        let (dir, path) = sample_log("follow", "1-link.emulog", 3);
        let whole = std::fs::read(&path).unwrap();
        // The file as a writer might leave it mid-way: 1.5 records.
        let cut = whole.len() - RECORD_SIZE - RECORD_SIZE / 2;
        std::fs::write(&path, &whole[..cut]).unwrap();
        let mut reader = LogReader::open(&path).unwrap();
        assert_eq!(reader.follow().unwrap().unwrap(), sample(0));
        assert!(reader.follow().is_none());
        assert_eq!(reader.partial_bytes(), RECORD_SIZE / 2);
        assert!(reader.follow().is_none());
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(&whole[cut..]).unwrap();
        assert_eq!(reader.follow().unwrap().unwrap(), sample(1));
        assert_eq!(reader.follow().unwrap().unwrap(), sample(2));
        assert!(reader.follow().is_none());
        assert_eq!(reader.partial_bytes(), 0);
        assert_eq!(reader.offset(), whole.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writer_and_reader_agree_and_truncation_names_the_offset() {
        let (dir, path) = sample_log("test", "1-link.emulog", 1000);

        let reader = LogReader::open(&path).unwrap();
        assert_eq!(reader.header, header());
        let records: Vec<Record> = reader.map(|r| r.unwrap()).collect();
        assert_eq!(records.len(), 1000);
        assert_eq!(records[999], sample(999));

        // Cut the file in the middle of the last record.
        let length = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(length - 10).unwrap();
        let results: Vec<_> = LogReader::open(&path).unwrap().collect();
        assert_eq!(results.len(), 1000);
        assert!(results[..999].iter().all(|r| r.is_ok()));
        let error = results[999].as_ref().unwrap_err();
        assert_eq!(error.offset, length - RECORD_SIZE as u64);
        assert!(error.message.contains("truncated"), "{}", error.message);

        let mut text = Vec::new();
        let err = dump(LogReader::open(&path).unwrap(), DumpFormat::Csv, &mut text).unwrap_err();
        assert!(err.to_string().contains("truncated"));
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), 1000); // header + 999 good records
        assert!(text.lines().nth(1).unwrap().contains(",drop,aqm,1500,"));
        let mut json = Vec::new();
        let _ = dump(
            LogReader::open(&path).unwrap(),
            DumpFormat::JsonLines,
            &mut json,
        );
        let first: serde_json::Value =
            serde_json::from_str(String::from_utf8(json).unwrap().lines().next().unwrap()).unwrap();
        assert_eq!(first["event"], "drop");
        assert_eq!(first["detail"], "aqm");
        assert_eq!(first["flow"], "deadbeef");
        assert_eq!(first["time_ns"], 1000);
        // Every line is one object with exactly the CSV's columns.
        let keys: Vec<&str> = first
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut columns = COLUMNS.to_vec();
        columns.sort_unstable();
        let mut keys_sorted = keys.clone();
        keys_sorted.sort_unstable();
        assert_eq!(keys_sorted, columns);
        assert_eq!(first["sojourn_ns"], 0);
        assert_eq!(first["bytes"], 1500);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn foreign_files_are_refused() {
        let path = std::env::temp_dir().join(format!("emu-not-a-log-{}", std::process::id()));
        std::fs::write(&path, b"hello world, this is text").unwrap();
        let err = LogReader::open(&path).err().unwrap();
        assert!(err.message.contains("not an emu log"));
        std::fs::remove_file(&path).unwrap();
        // A log directory given for a log: said so, not "too short".
        let err = LogReader::open(&std::env::temp_dir()).err().unwrap();
        assert!(err.message.contains("is a directory"), "{}", err.message);
    }
}
