//! The start of a log file: the magic with its format version, then what
//! the file says about the shell that wrote it, as JSON, with room kept
//! for what is only known when the run ends.

use crate::log::record::{Record, RECORD_SIZE};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::Path;

/// First eight bytes of every log file; the last byte is the format version.
pub const MAGIC: [u8; 8] = *b"EMULOG\0\x01";

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

/// Room left after the header's JSON (as spaces, which JSON readers skip)
/// for what is only known at the end of a run; see [`update_header`].
pub(crate) const HEADER_RESERVE: usize = 128;

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
