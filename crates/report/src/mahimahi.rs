//! Mahimahi's `--uplink-log` text format, written from emu's records and
//! read back, so that tools built for Mahimahi logs (mm-throughput-graph,
//! Pantheon's analysis) read emu's runs unchanged, and old Mahimahi logs
//! can be reported.
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

use emu_core::log::{Event, Record};
use emu_core::Nanos;
use std::collections::{HashMap, VecDeque};
use std::io::{self, BufRead, Write};

/// Bytes Mahimahi's packet-information header adds to each packet.
pub const TUN_HEADER: u32 = 4;
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
        arrivals: HashMap::new(),
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
    arrivals: HashMap<u32, VecDeque<u64>>,
}

impl<W: Write> Writer<'_, W> {
    fn record(&mut self, r: &Record) -> io::Result<()> {
        let t = ms(r.time, self.origin);
        let size = r.bytes + TUN_HEADER;
        match r.event {
            Event::Arrive => {
                self.arrivals.entry(r.fingerprint).or_default().push_back(t);
                writeln!(self.out, "{t} + {size}")
            }
            Event::Drop => {
                take_arrival(&mut self.arrivals, r.fingerprint);
                writeln!(self.out, "{t} d 1 {size}")
            }
            Event::Depart => {
                let arrived = take_arrival(&mut self.arrivals, r.fingerprint).unwrap_or(t);
                writeln!(self.out, "{t} - {size} {}", t.saturating_sub(arrived))
            }
            Event::Enqueue | Event::Mark => Ok(()),
        }
    }
}

fn take_arrival(arrivals: &mut HashMap<u32, VecDeque<u64>>, fingerprint: u32) -> Option<u64> {
    let queue = arrivals.get_mut(&fingerprint)?;
    let t = queue.pop_front();
    if queue.is_empty() {
        arrivals.remove(&fingerprint);
    }
    t
}

/// One event of a Mahimahi log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MmEvent {
    Arrival { ms: u64, bytes: u64 },
    Drop { ms: u64, packets: u64, bytes: u64 },
    Opportunity { ms: u64, bytes: u64 },
    Departure { ms: u64, bytes: u64, delay_ms: u64 },
}

/// A line that is not a Mahimahi event, with its line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MmError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for MmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Reads a Mahimahi log one event at a time (header lines are skipped; the
/// init timestamp, if any, is returned by [`init_timestamp`]).
pub fn read_events(input: impl BufRead) -> impl Iterator<Item = Result<MmEvent, MmError>> {
    input.lines().enumerate().filter_map(|(index, line)| {
        let line_number = index + 1;
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                return Some(Err(MmError {
                    line: line_number,
                    message: e.to_string(),
                }))
            }
        };
        if line.starts_with('#') || line.trim().is_empty() {
            return None;
        }
        Some(parse_event(&line).ok_or_else(|| MmError {
            line: line_number,
            message: format!(
                "'{line}' is not a Mahimahi log event (T + B, T - B D, T # B or T d N B)"
            ),
        }))
    })
}

fn parse_event(line: &str) -> Option<MmEvent> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| words.get(i)?.parse::<u64>().ok();
    let ms = n(0)?;
    Some(match (*words.get(1)?, words.len()) {
        ("+", 3) => MmEvent::Arrival { ms, bytes: n(2)? },
        ("#", 3) => MmEvent::Opportunity { ms, bytes: n(2)? },
        ("-", 4) => MmEvent::Departure {
            ms,
            bytes: n(2)?,
            delay_ms: n(3)?,
        },
        ("d", 4) => MmEvent::Drop {
            ms,
            packets: n(2)?,
            bytes: n(3)?,
        },
        _ => return None,
    })
}

/// The `# init timestamp:` of a log's header, if it has one.
pub fn init_timestamp(input: impl BufRead) -> Option<u64> {
    input
        .lines()
        .map_while(Result::ok)
        .take_while(|l| l.starts_with('#'))
        .find_map(|l| l.strip_prefix("# init timestamp: ")?.trim().parse().ok())
}

/// Pantheon's figures for one direction of an mm-link log: average
/// throughput over the span of departures, 95th-percentile per-packet delay
/// (nearest rank) and loss = 1 − departures/arrivals. Sizes are taken net
/// of Mahimahi's 4-byte header, as Pantheon does.
#[derive(Debug, Clone, PartialEq)]
pub struct PantheonFigures {
    pub throughput_mbps: f64,
    pub delay_p95_ms: f64,
    pub loss: f64,
    pub arrivals: u64,
    pub departures: u64,
}

pub fn pantheon_figures(events: impl IntoIterator<Item = MmEvent>) -> Option<PantheonFigures> {
    let (mut arrivals, mut departures, mut bytes) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (u64::MAX, 0u64);
    let mut delays = Vec::new();
    for event in events {
        match event {
            MmEvent::Arrival { .. } => arrivals += 1,
            MmEvent::Departure {
                ms,
                bytes: b,
                delay_ms,
            } => {
                departures += 1;
                bytes += b.saturating_sub(TUN_HEADER as u64);
                first = first.min(ms);
                last = last.max(ms);
                delays.push(delay_ms);
            }
            _ => {}
        }
    }
    if departures == 0 {
        return None;
    }
    delays.sort_unstable();
    let rank = ((0.95 * delays.len() as f64).ceil() as usize).clamp(1, delays.len());
    let span_s = (last - first).max(1) as f64 / 1000.0;
    Some(PantheonFigures {
        throughput_mbps: bytes as f64 * 8.0 / span_s / 1e6,
        delay_p95_ms: delays[rank - 1] as f64,
        loss: 1.0 - departures as f64 / arrivals.max(1) as f64,
        arrivals,
        departures,
    })
}

/// Pantheon's summary plot: one point per run at (95th-percentile delay,
/// average throughput), delay axis reversed (better is up and right), as a
/// self-contained SVG.
pub fn scatter_svg(points: &[(String, PantheonFigures)]) -> String {
    let (w, h, margin) = (640.0, 420.0, 60.0);
    let max_delay = points
        .iter()
        .map(|(_, f)| f.delay_p95_ms)
        .fold(1.0, f64::max)
        * 1.1;
    let max_tput = points
        .iter()
        .map(|(_, f)| f.throughput_mbps)
        .fold(1.0, f64::max)
        * 1.1;
    // Reversed delay axis: low delay on the right.
    let x = |d: f64| margin + (1.0 - d / max_delay) * (w - 2.0 * margin);
    let y = |t: f64| h - margin - t / max_tput * (h - 2.0 * margin);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{margin}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <line x1=\"{margin}\" y1=\"{margin}\" x2=\"{margin}\" y2=\"{b}\" stroke=\"black\"/>\n\
         <text x=\"{cx}\" y=\"{lx}\" text-anchor=\"middle\">95th percentile one-way delay (ms), reversed</text>\n\
         <text x=\"15\" y=\"{cy}\" text-anchor=\"middle\" transform=\"rotate(-90 15 {cy})\">average throughput (Mbit/s)</text>\n",
        b = h - margin,
        r = w - margin,
        cx = w / 2.0,
        lx = h - 20.0,
        cy = h / 2.0,
    );
    for i in 0..=4 {
        let d = max_delay * i as f64 / 4.0;
        let t = max_tput * i as f64 / 4.0;
        svg += &format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{d:.0}</text>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t:.1}</text>\n",
            x(d),
            h - margin + 15.0,
            margin - 5.0,
            y(t) + 4.0
        );
    }
    for (name, f) in points {
        let name = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        svg += &format!(
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"#1f77b4\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{name}</text>\n",
            x(f.delay_p95_ms),
            y(f.throughput_mbps),
            x(f.delay_p95_ms) + 8.0,
            y(f.throughput_mbps) - 8.0
        );
    }
    svg + "</svg>\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::log::Direction;

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
        let events: Vec<MmEvent> = read_events(text.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(events.len(), 8);
        assert_eq!(
            events[5],
            MmEvent::Departure {
                ms: 2,
                bytes: 1504,
                delay_ms: 2
            }
        );
        assert_eq!(init_timestamp(text.as_bytes()), Some(1_700_000_000_000));
    }

    #[test]
    fn pantheon_figures_by_their_definitions() {
        // 11 departures of 1504 bytes over 10 ms, delays 1..=11 ms.
        let mut events: Vec<MmEvent> = (0..12)
            .map(|i| MmEvent::Arrival { ms: i, bytes: 1504 })
            .collect();
        events.extend((0..11).map(|i| MmEvent::Departure {
            ms: 10 + i,
            bytes: 1504,
            delay_ms: i + 1,
        }));
        let f = pantheon_figures(events).unwrap();
        assert!((f.throughput_mbps - 11.0 * 1500.0 * 8.0 / 0.010 / 1e6).abs() < 1e-9);
        assert_eq!(f.delay_p95_ms, 11.0); // rank ceil(0.95 · 11) = 11
        assert!((f.loss - 1.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn bad_lines_are_named() {
        let errors: Vec<MmError> = read_events("# h\n5 + 100\n5 ? 3\n".as_bytes())
            .filter_map(Result::err)
            .collect();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].line, 3);
    }
}
