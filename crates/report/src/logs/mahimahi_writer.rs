//! Mahimahi's `--uplink-log` text format, written from emu's records so
//! that tools built for Mahimahi logs (mm-throughput-graph, Pantheon's
//! analysis) read emu's runs unchanged. [`crate::logs::mahimahi_reader`] reads it
//! back, so old Mahimahi logs can be reported.
//!
//! The format (mahimahi src/frontend/link_queue.cc): header lines starting
//! with `#`, then one event per line with its time in whole milliseconds
//! since the emulator started:
//! - `T + BYTES` a packet arrived at the link;
//! - `T d PACKETS BYTES` packets were dropped;
//! - `T # 1504` a delivery opportunity (every one, used or not);
//! - `T - BYTES DELAY` a packet left, DELAY ms after it arrived.
//!
//! Sizes are Mahimahi's: its TUN devices carry a 4-byte packet-information
//! header, so every packet counts 4 bytes more than its IP length and an
//! opportunity carries 1504. emu writes the same (IP length + 4), so
//! analyses that subtract 4 (as Pantheon's does) get IP lengths back. emu
//! also logs drops made at dequeue (CoDel, PIE), which Mahimahi misses.

use crate::analysis::mahimahi_figures::TUN_HEADER;
use crate::measures::in_flight::InFlight;
use emu_core::log::{Direction, Event, LogReader, Record};
use emu_core::trace::Trace;
use emu_core::Nanos;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

/// What Mahimahi logs for each delivery opportunity.
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// The header lines of one direction's log.
#[derive(Debug, Clone)]
pub struct Header {
    /// `Uplink` or `Downlink`.
    pub link_name: String,
    pub trace_path: String,
    pub log_path: String,
    pub command_line: String,
    pub queue: String,
    /// Wall-clock ms when the emulator started (Mahimahi's init timestamp).
    pub init_timestamp_ms: u64,
    /// ms from the init timestamp to the link's start.
    pub base_timestamp_ms: u64,
    /// MAHIMAHI_SHELL_PREFIX, if set.
    pub prefix: Option<String>,
}

fn ms(time: Nanos, origin: Nanos) -> u64 {
    time.saturating_sub(origin) / 1_000_000
}

/// Writes one direction's log. `records` are that direction's records in
/// time order; `opportunities` the trace's delivery opportunities in order,
/// as (time, bytes), which are written up to `end`. Times become ms after
/// `origin`.
pub fn write_log(
    out: &mut impl Write,
    header: &Header,
    origin: Nanos,
    records: impl IntoIterator<Item = Record>,
    opportunities: impl IntoIterator<Item = (Nanos, u32)>,
    end: Nanos,
) -> io::Result<()> {
    writeln!(
        out,
        "# mahimahi mm-link ({}) [{}] > {}",
        header.link_name, header.trace_path, header.log_path
    )?;
    writeln!(out, "# command line: {}", header.command_line)?;
    writeln!(out, "# queue: {}", header.queue)?;
    writeln!(out, "# init timestamp: {}", header.init_timestamp_ms)?;
    writeln!(out, "# base timestamp: {}", header.base_timestamp_ms)?;
    if let Some(prefix) = &header.prefix {
        writeln!(out, "# mahimahi config: {prefix}")?;
    }
    let mut log = Writer {
        out,
        origin,
        arrivals: InFlight::default(),
    };
    let mut records = records.into_iter().peekable();
    let mut opportunities = opportunities
        .into_iter()
        .take_while(|&(t, _)| t <= end)
        .peekable();
    // Bytes of the next departing packet already carried by earlier
    // opportunities at the same instant.
    let mut carried = 0u32;
    loop {
        let next_opportunity = opportunities.peek().map(|&(t, _)| t);
        // Mahimahi burns every opportunity up to a packet's arrival (same
        // millisecond included) before it logs the arrival, and logs each
        // departure right after the opportunity that completed it.
        let opportunity_first = match (next_opportunity, records.peek()) {
            // A departure follows the opportunities at or before its time.
            (Some(o), Some(r)) if r.event == Event::Depart => o <= r.time,
            (Some(o), Some(r)) => ms(o, origin) <= ms(r.time, origin),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if !opportunity_first {
            let r = records.next().expect("peeked");
            log.record(&r)?;
            carried = 0;
            continue;
        }
        let (o, bytes) = opportunities.next().expect("peeked");
        writeln!(log.out, "{} # {OPPORTUNITY_BYTES}", ms(o, origin))?;
        // The packets this opportunity completes, by its byte budget.
        let mut budget = bytes;
        while budget > 0 {
            let Some(r) = records
                .peek()
                .filter(|r| r.event == Event::Depart && r.time == o)
            else {
                break;
            };
            let need = r.bytes.saturating_sub(carried);
            if need > budget {
                carried += budget;
                break;
            }
            budget -= need;
            carried = 0;
            let r = records.next().expect("peeked");
            log.record(&r)?;
        }
    }
    Ok(())
}

/// Turns records into event lines, remembering when each packet arrived.
struct Writer<'a, W: Write> {
    out: &'a mut W,
    origin: Nanos,
    arrivals: InFlight<u32, u64>,
}

impl<W: Write> Writer<'_, W> {
    fn record(&mut self, r: &Record) -> io::Result<()> {
        let t = ms(r.time, self.origin);
        let size = r.bytes + TUN_HEADER;
        match r.event {
            Event::Arrive => {
                self.arrivals.push(r.fingerprint, t);
                writeln!(self.out, "{t} + {size}")
            }
            Event::Drop => {
                self.arrivals.pop(&r.fingerprint);
                writeln!(self.out, "{t} d 1 {size}")
            }
            Event::Depart => {
                let arrived = self.arrivals.pop(&r.fingerprint).unwrap_or(t);
                writeln!(self.out, "{t} - {size} {}", t.saturating_sub(arrived))
            }
            // A copy made by the path arrives as a packet of its own.
            Event::Duplicate => {
                self.arrivals.push(r.fingerprint, t);
                writeln!(self.out, "{t} + {size}")
            }
            Event::Enqueue | Event::Mark | Event::Corrupt | Event::Change | Event::Flow => Ok(()),
        }
    }
}

/// One direction's Mahimahi text log, made from emu's binary log after a
/// run (what `mm-link --uplink-log` writes).
pub struct TextLog<'a> {
    /// emu's log of the shell.
    pub binary: &'a Path,
    pub direction: Direction,
    /// The trace as the command line named it (read again for its
    /// opportunities, and shown in the header).
    pub trace: &'a str,
    pub repeat: bool,
    /// Where the text log goes.
    pub path: &'a str,
    pub command_line: &'a str,
    /// The queue as an emu specification.
    pub queue: &'a str,
    /// MAHIMAHI_SHELL_PREFIX, if set.
    pub prefix: Option<&'a str>,
}

impl TextLog<'_> {
    /// Writes the log; errors are the reason, for the caller to put after the path.
    pub fn write(&self) -> Result<(), String> {
        let reader = LogReader::open(self.binary).map_err(|e| e.to_string())?;
        let header = reader.header.clone();
        let origin = header.monotonic_origin_ns;
        let trace = Trace::load(Path::new(self.trace)).map_err(|e| e.to_string())?;
        // Two streaming passes, so a long run's log is never held in
        // memory: the first finds where the run ended (and any damage),
        // the second writes this direction's events.
        let mut end = origin;
        for record in reader {
            end = end.max(record.map_err(|e| e.to_string())?.time);
        }
        let direction = self.direction;
        let records = LogReader::open(self.binary)
            .map_err(|e| e.to_string())?
            .map_while(Result::ok)
            .filter(move |r| {
                r.direction == direction && !matches!(r.event, Event::Mark | Event::Flow)
            });
        let opportunities = Arc::new(trace).opportunities(origin, self.repeat);
        let text_header = Header {
            link_name: if self.direction == Direction::Uplink {
                "Uplink"
            } else {
                "Downlink"
            }
            .into(),
            trace_path: self.trace.into(),
            log_path: self.path.into(),
            command_line: self.command_line.into(),
            queue: self.queue.into(),
            init_timestamp_ms: header.realtime_origin_ns / 1_000_000,
            base_timestamp_ms: 0,
            prefix: self.prefix.map(str::to_string),
        };
        let file = std::fs::File::create(self.path).map_err(|e| e.to_string())?;
        let mut out = std::io::BufWriter::new(file);
        write_log(&mut out, &text_header, origin, records, opportunities, end)
            .map_err(|e| e.to_string())?;
        std::io::Write::flush(&mut out).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(time_ms: f64, event: Event, bytes: u32, fingerprint: u32) -> Record {
        Record {
            time: (time_ms * 1e6) as Nanos,
            sojourn: 0,
            flow: 1,
            fingerprint,
            bytes,
            queue_bytes: 0,
            queue_packets: 0,
            shell: 0,
            direction: Direction::Uplink,
            event,
            detail: 0,
            ecn: 0,
        }
    }

    #[test]
    fn events_and_opportunities_interleave_as_mahimahi_logs_them() {
        let header = Header {
            link_name: "Uplink".into(),
            trace_path: "up.trace".into(),
            log_path: "up.log".into(),
            command_line: "mm-link up.trace down.trace --uplink-log=up.log".into(),
            queue: "droptail [packets=1]".into(),
            init_timestamp_ms: 1_700_000_000_000,
            base_timestamp_ms: 0,
            prefix: Some("[link] ".into()),
        };
        let records = vec![
            record(0.5, Event::Arrive, 1500, 7),
            record(0.5, Event::Enqueue, 1500, 7),
            record(1.2, Event::Arrive, 100, 8),
            record(1.2, Event::Drop, 100, 8),
            record(2.0, Event::Depart, 1500, 7),
        ];
        let opportunities = [1.0, 2.0, 2.0, 3.0].map(|ms| ((ms * 1e6) as Nanos, 1500));
        let mut out = Vec::new();
        write_log(&mut out, &header, 0, records, opportunities, 3_000_000).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "# mahimahi mm-link (Uplink) [up.trace] > up.log\n\
             # command line: mm-link up.trace down.trace --uplink-log=up.log\n\
             # queue: droptail [packets=1]\n\
             # init timestamp: 1700000000000\n\
             # base timestamp: 0\n\
             # mahimahi config: [link] \n\
             0 + 1504\n\
             1 # 1504\n\
             1 + 104\n\
             1 d 1 104\n\
             2 # 1504\n\
             2 - 1504 2\n\
             2 # 1504\n\
             3 # 1504\n"
        );
    }
}
