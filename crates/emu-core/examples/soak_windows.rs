//! The log side of `benches/soak.sh`: over a run directory of emu logs,
//! the departure lateness of the delay shell per time window, and whether
//! the accounting balances (every log against its summary).
//!
//!     soak_windows LOG_DIR DELAY_MS WINDOW_S
//!
//! Lateness is read off the log: a delay shell is first in, first out in
//! each direction, so its i-th departure is its i-th arrival, due exactly
//! DELAY_MS later; the pump logs a departure when it writes the packet, so
//! departure - arrival - delay is how late it went out. Streams the logs,
//! so an hour of 1 Gbit/s fits in a few MB of memory.

use emu_core::log::{Event, LogReader};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Lateness histogram of one window: 1 us buckets up to 200 ms (later ones
/// share the last bucket), and the exact max.
struct Window {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

impl Window {
    const BUCKETS: usize = 200_000;

    fn new() -> Window {
        Window {
            buckets: vec![0; Self::BUCKETS + 1],
            count: 0,
            max: 0,
        }
    }

    fn add(&mut self, lateness_ns: u64) {
        let bucket = ((lateness_ns / 1_000) as usize).min(Self::BUCKETS);
        self.buckets[bucket] += 1;
        self.count += 1;
        self.max = self.max.max(lateness_ns);
    }

    /// The upper edge in us of the bucket holding quantile `q`.
    fn quantile_us(&self, q: f64) -> u64 {
        let rank = ((self.count as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket as u64 + 1;
            }
        }
        Self::BUCKETS as u64
    }
}

fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "emulog"))
                .collect()
        })
        .unwrap_or_default();
    logs.sort();
    logs
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(Ok(delay_ms)), Some(Ok(window_s))) = (
        args.get(1).map(PathBuf::from),
        args.get(2).map(|a| a.parse::<u64>()),
        args.get(3).map(|a| a.parse::<u64>()),
    ) else {
        eprintln!("usage: soak_windows LOG_DIR DELAY_MS WINDOW_S");
        return ExitCode::from(2);
    };
    let delay_ns = delay_ms * 1_000_000;
    let window_ns = window_s.max(1) * 1_000_000_000;
    let mut balanced = true;
    // (shell, direction) -> (arrive, depart, drop) counted in the logs.
    let mut counted: HashMap<(u8, &str), [u64; 3]> = HashMap::new();
    let mut windows: Vec<Window> = Vec::new();
    let mut early = 0u64;
    for path in logs_in(&dir) {
        let reader = match LogReader::open(&path) {
            Ok(reader) => reader,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        let origin = reader.header.monotonic_origin_ns;
        let is_delay = reader.header.description.starts_with("delay");
        let mut pending: [VecDeque<u64>; 2] = [VecDeque::new(), VecDeque::new()];
        for record in reader {
            let record = match record {
                Ok(record) => record,
                Err(e) => {
                    eprintln!("{e}");
                    balanced = false;
                    break;
                }
            };
            let slot = match record.event {
                Event::Arrive => 0,
                Event::Depart => 1,
                Event::Drop => 2,
                _ => continue,
            };
            counted
                .entry((record.shell, record.direction.name()))
                .or_default()[slot] += 1;
            if !is_delay {
                continue;
            }
            let queue = &mut pending[record.direction as usize];
            match record.event {
                Event::Arrive => queue.push_back(record.time),
                Event::Depart => {
                    let Some(arrived) = queue.pop_front() else {
                        continue;
                    };
                    let due = arrived + delay_ns;
                    if record.time < due {
                        early += 1;
                        continue;
                    }
                    let window = (record.time.saturating_sub(origin) / window_ns) as usize;
                    while windows.len() <= window {
                        windows.push(Window::new());
                    }
                    windows[window].add(record.time - due);
                }
                _ => {}
            }
        }
    }

    println!("## Departure lateness of the delay shell per {window_s} s window (us)");
    println!(
        "{:>8} {:>12} {:>8} {:>8} {:>8} {:>10}",
        "window", "packets", "p50", "p99", "p99.9", "max"
    );
    for (k, w) in windows.iter().enumerate() {
        println!(
            "{:>8} {:>12} {:>8} {:>8} {:>8} {:>10.1}",
            k,
            w.count,
            w.quantile_us(0.5),
            w.quantile_us(0.99),
            w.quantile_us(0.999),
            w.max as f64 / 1e3
        );
    }
    if early > 0 {
        println!("EARLY: {early} departures logged before they were due");
        balanced = false;
    }

    println!("## Accounting (summary-0.json against itself and the logs)");
    let summary: serde_json::Value = match std::fs::read_to_string(dir.join("summary-0.json"))
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("{}: {e}", dir.join("summary-0.json").display());
            return ExitCode::FAILURE;
        }
    };
    println!(
        "log records lost {}, unwritten {}",
        summary["log_records_lost"], summary["log_records_unwritten"]
    );
    let directions = summary["directions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for d in &directions {
        let number = |key: &str| d[key].as_u64().unwrap_or(0);
        let dropped: u64 = d["dropped"]
            .as_object()
            .map(|o| o.values().filter_map(|v| v.as_u64()).sum())
            .unwrap_or(0);
        let (read, delivered, queued) = (
            number("read"),
            number("delivered"),
            number("queued_at_exit"),
        );
        let shell = number("shell") as u8;
        let direction = d["direction"].as_str().unwrap_or("?");
        let logged = counted
            .get(&(shell, direction))
            .copied()
            .unwrap_or_default();
        let ok = read == delivered + dropped + queued && logged == [read, delivered, dropped];
        balanced &= ok;
        println!(
            "shell {shell} {direction:<8} read {read} = delivered {delivered} + dropped {dropped} \
             + queued {queued}; log {logged:?}: {}",
            if ok { "balanced" } else { "NOT BALANCED" }
        );
    }
    if balanced && !directions.is_empty() {
        println!("accounting: balanced");
        ExitCode::SUCCESS
    } else {
        println!("accounting: NOT balanced");
        ExitCode::FAILURE
    }
}
