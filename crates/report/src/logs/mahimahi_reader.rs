//! Reads a Mahimahi link log (`--uplink-log`/`--downlink-log`, from
//! Mahimahi itself or from emu's mm-link) into the analysis, so old logs
//! get the same report.
//!
//! Such a log is one direction of one link, in whole milliseconds, without
//! flows: every packet belongs to flow 0, a packet's one-way delay is the
//! `-` line's delay, and the queue is counted from arrivals, departures and
//! drops. Sizes in the log include Mahimahi's 4-byte TUN header; the report
//! counts IP bytes, as for emu's own logs.

use crate::analysis::direction::DirectionAnalysis;
use crate::analysis::events::{Options, PathEvent, PathKind, ShellEvent, ShellInfo, ShellKind};
use crate::analysis::mahimahi_figures::TUN_HEADER;
use crate::measures::capacity::Capacity;
use emu_core::log::{Direction, DropReason};
use emu_core::Nanos;
use std::io::BufRead;

const MS: Nanos = 1_000_000;

/// What a Mahimahi log's header says.
#[derive(Debug, Clone, PartialEq)]
pub struct MmHeader {
    pub direction: Direction,
    pub description: String,
    pub queue: String,
    pub command_line: String,
    pub base_ms: u64,
}

/// True if `first_line` starts a Mahimahi log.
pub fn looks_like_mahimahi(first_line: &str) -> bool {
    first_line.starts_with("# mahimahi") || first_line.starts_with("# base timestamp")
}

/// A damaged line: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct MmInputError {
    pub line: usize,
    pub offset: u64,
    pub message: String,
}

/// The header and an analysis fed with every event of the log, the
/// packets still queued at its end and its last time; stops at the first
/// damaged line and returns it with what came before.
pub fn analyze(
    mut input: impl BufRead,
    options: Options,
) -> (
    MmHeader,
    DirectionAnalysis,
    u64,
    Nanos,
    Option<MmInputError>,
) {
    let mut header = MmHeader {
        direction: Direction::Uplink,
        description: "mm-link".into(),
        queue: String::new(),
        command_line: String::new(),
        base_ms: 0,
    };
    // Built at the first event, once the header has said which direction
    // and queue this is.
    let mut state: Option<(DirectionAnalysis, Feeder)> = None;
    let (mut number, mut offset, mut error) = (0usize, 0u64, None);
    let mut line = String::new();
    loop {
        line.clear();
        let at = offset;
        let n = match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                error = Some(MmInputError {
                    line: number + 1,
                    offset: at,
                    message: e.to_string(),
                });
                break;
            }
        };
        number += 1;
        offset += n as u64;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        if let Some(rest) = text.strip_prefix('#') {
            if state.is_none() {
                read_header_line(rest.trim(), &mut header);
            }
            continue;
        }
        let (analysis, feeder) = state.get_or_insert_with(|| start(&header, options.clone()));
        // Mahimahi ends every line; a last line without its newline was
        // cut short, even if what is left of it still parses.
        let message = if !line.ends_with('\n') {
            format!("the log ends inside a line ('{text}'): it was cut short")
        } else if let Some(event) = parse(text) {
            match feeder.feed(event, analysis) {
                Ok(()) => continue,
                Err(message) => message,
            }
        } else {
            format!("'{text}' is not a Mahimahi log event (T + B, T - B D, T # B or T d N B)")
        };
        error = Some(MmInputError {
            line: number,
            offset: at,
            message,
        });
        break;
    }
    let (analysis, feeder) = state.unwrap_or_else(|| start(&header, options));
    (header, analysis, feeder.queue.1, feeder.end, error)
}

fn start(header: &MmHeader, options: Options) -> (DirectionAnalysis, Feeder) {
    let shell = ShellInfo {
        shell: 0,
        description: header.description.clone(),
        capacity: Capacity::Logged,
        shaper_bps: None,
    };
    let analysis = DirectionAnalysis::new(header.direction, options, vec![shell], 0, 0);
    let feeder = Feeder {
        base: header.base_ms,
        drop_reason: drop_reason_of(&header.queue),
        queue: (0, 0),
        end: 0,
    };
    (analysis, feeder)
}

fn read_header_line(line: &str, header: &mut MmHeader) {
    if let Some(rest) = line.strip_prefix("mahimahi ") {
        header.description = rest.to_string();
        if rest.contains("(Downlink)") {
            header.direction = Direction::Downlink;
        }
    } else if let Some(rest) = line.strip_prefix("queue: ") {
        header.queue = rest.to_string();
    } else if let Some(rest) = line.strip_prefix("command line: ") {
        header.command_line = rest.to_string();
    } else if let Some(rest) = line.strip_prefix("base timestamp: ") {
        header.base_ms = rest.trim().parse().unwrap_or(0);
    }
}

/// Mahimahi logs a drop without its cause; the queue names it.
fn drop_reason_of(queue: &str) -> DropReason {
    let name = queue.split_whitespace().next().unwrap_or("");
    match name {
        "drophead" => DropReason::Head,
        "codel" | "pie" => DropReason::Aqm,
        _ => DropReason::Tail,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum MmLine {
    Arrival { ms: u64, bytes: u64 },
    Drop { ms: u64, packets: u64, bytes: u64 },
    Opportunity { ms: u64, bytes: u64 },
    Departure { ms: u64, bytes: u64, delay: u64 },
}

fn parse(line: &str) -> Option<MmLine> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = |i: usize| words.get(i)?.parse::<u64>().ok();
    let ms = n(0)?;
    Some(match (*words.get(1)?, words.len()) {
        ("+", 3) => MmLine::Arrival { ms, bytes: n(2)? },
        ("#", 3) => MmLine::Opportunity { ms, bytes: n(2)? },
        ("-", 4) => MmLine::Departure {
            ms,
            bytes: n(2)?,
            delay: n(3)?,
        },
        ("d", 4) => MmLine::Drop {
            ms,
            packets: n(2)?,
            bytes: n(3)?,
        },
        _ => return None,
    })
}

struct Feeder {
    base: u64,
    drop_reason: DropReason,
    /// (bytes, packets) queued, counted from the events.
    queue: (u64, u64),
    end: Nanos,
}

impl Feeder {
    /// Feeds one event to the analysis, or says why the log cannot be
    /// true at this line.
    // Long: one arm per kind of line of a Mahimahi log, each the event the analysis is given.
    fn feed(&mut self, line: MmLine, analysis: &mut DirectionAnalysis) -> Result<(), String> {
        let ip = |bytes: u64| bytes.saturating_sub(TUN_HEADER as u64) as u32;
        let time_of = |ms: u64| ms.saturating_sub(self.base) * MS;
        let shell = |analysis: &mut DirectionAnalysis, time, bytes, queue, kind| {
            analysis.shell(ShellEvent {
                time,
                shell: 0,
                bytes,
                queue: Some(queue),
                kind,
            })
        };
        let path = |analysis: &mut DirectionAnalysis, time, bytes, kind| {
            analysis.path(PathEvent {
                time,
                flow: 0,
                bytes,
                kind,
            })
        };
        let queue = |q: (u64, u64)| (q.0 as u32, q.1 as u32);
        match line {
            MmLine::Arrival { ms, bytes } => {
                let (time, bytes) = (time_of(ms), ip(bytes));
                self.queue = (self.queue.0 + bytes as u64, self.queue.1 + 1);
                self.end = self.end.max(time);
                shell(analysis, time, bytes, queue(self.queue), ShellKind::Arrive);
                path(analysis, time, bytes, PathKind::Arrive);
            }
            MmLine::Departure { ms, bytes, delay } => {
                let (time, bytes) = (time_of(ms), ip(bytes));
                self.queue = (
                    self.queue.0.saturating_sub(bytes as u64),
                    self.queue.1.saturating_sub(1),
                );
                self.end = self.end.max(time);
                let delay = delay * MS;
                let kind = ShellKind::Depart {
                    sojourn: delay,
                    arrived: Some(time.saturating_sub(delay)),
                };
                shell(analysis, time, bytes, queue(self.queue), kind);
                let kind = PathKind::Deliver { delay };
                path(analysis, time, bytes, kind);
            }
            MmLine::Drop { ms, packets, bytes } => {
                // Mahimahi's queues drop only packets they hold (the one
                // arriving included, whose '+' line comes first). A line
                // that drops more says nothing true, and taken packet by
                // packet it would have the report loop for as many as it
                // claims (billions, in a fuzzed log).
                if packets > self.queue.1 {
                    return Err(format!(
                        "drops {packets} packets, but the log shows only {} queued",
                        self.queue.1
                    ));
                }
                let time = time_of(ms);
                self.end = self.end.max(time);
                // The line gives a total: share it out, remainder first.
                let ip_total = bytes.saturating_sub(packets * TUN_HEADER as u64);
                for i in 0..packets {
                    let size = ip_total / packets + u64::from(i < ip_total % packets);
                    self.queue = (
                        self.queue.0.saturating_sub(size),
                        self.queue.1.saturating_sub(1),
                    );
                    let kind = ShellKind::Drop(self.drop_reason);
                    shell(analysis, time, size as u32, queue(self.queue), kind);
                    path(
                        analysis,
                        time,
                        size as u32,
                        PathKind::Drop(self.drop_reason),
                    );
                }
            }
            MmLine::Opportunity { ms, bytes } => {
                let time = time_of(ms);
                self.end = self.end.max(time);
                shell(
                    analysis,
                    time,
                    ip(bytes),
                    queue(self.queue),
                    ShellKind::Opportunity,
                );
            }
        }
        Ok(())
    }
}
