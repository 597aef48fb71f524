//! The log side of `benches/soak.sh`: over a run directory of emu logs,
//! the departure lateness of the delay shell per time window, and whether
//! the accounting balances (every log against its summary).
//!
//!     soak_windows LOG_DIR DELAY_MS WINDOW_S [--follow DONE_FILE [--free]]
//!
//! Lateness is read off the log: a delay shell is first in, first out in
//! each direction, so its i-th departure is its i-th arrival, due exactly
//! DELAY_MS later; the pump logs a departure when it writes the packet, so
//! departure - arrival - delay is how late it went out. Streams the logs,
//! so an hour of 1 Gbit/s fits in a few MB of memory.
//!
//! With `--follow`, the logs are read while emu writes them, until
//! DONE_FILE exists (the script creates it once emu has exited). With
//! `--free` as well, the blocks already read are handed back to the file
//! system (a hole punched in the file, whose size stays the same): an hour
//! at 1 Gbit/s writes some 80 GB of records, and this way the soak needs
//! room for a few seconds of them instead. Such a log is no longer whole,
//! so `--free` is for the soak alone.

use emu_core::log::{Event, LogReader, Record};
use std::collections::{HashMap, VecDeque};
use std::fs::File;
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

/// One log being read: its reader (which follows the file as emu writes
/// it), and the delay shell's arrivals still waiting for their departures.
struct Follower {
    path: PathBuf,
    reader: LogReader,
    /// Open for writing only to punch holes in it (`--free`).
    file: File,
    /// Everything before this offset has been freed (`--free`).
    freed_to: u64,
    origin: u64,
    is_delay: bool,
    pending: [VecDeque<u64>; 2],
}

/// What the logs add up to, over every file.
struct Tally {
    delay_ns: u64,
    window_ns: u64,
    /// (shell, direction) -> (arrive, depart, drop) counted in the logs.
    counted: HashMap<(u8, &'static str), [u64; 3]>,
    windows: Vec<Window>,
    early: u64,
}

impl Follower {
    fn open(path: &Path) -> Result<Follower, String> {
        let reader = LogReader::open(path).map_err(|e| e.to_string())?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Follower {
            path: path.to_path_buf(),
            freed_to: reader.offset().next_multiple_of(BLOCK),
            origin: reader.header.monotonic_origin_ns,
            is_delay: reader.header.description.starts_with("delay"),
            reader,
            file,
            pending: [VecDeque::new(), VecDeque::new()],
        })
    }

    /// Reads every whole record written so far. At the end of the run
    /// (`last`), a part of a record left over is an error.
    fn drain(&mut self, tally: &mut Tally, last: bool) -> Result<(), String> {
        while let Some(record) = self.reader.follow() {
            self.take(record.map_err(|e| e.to_string())?, tally);
        }
        match self.reader.partial_bytes() {
            partial if last && partial > 0 => Err(format!(
                "{}: {partial} bytes at the end are not a whole record",
                self.path.display()
            )),
            _ => Ok(()),
        }
    }

    fn take(&mut self, record: Record, tally: &mut Tally) {
        let slot = match record.event {
            Event::Arrive => 0,
            Event::Depart => 1,
            Event::Drop => 2,
            _ => return,
        };
        tally
            .counted
            .entry((record.shell, record.direction.name()))
            .or_default()[slot] += 1;
        if !self.is_delay {
            return;
        }
        let queue = &mut self.pending[record.direction as usize];
        match record.event {
            Event::Arrive => queue.push_back(record.time),
            Event::Depart => {
                let Some(arrived) = queue.pop_front() else {
                    return;
                };
                let due = arrived + tally.delay_ns;
                if record.time < due {
                    tally.early += 1;
                    return;
                }
                let window = (record.time.saturating_sub(self.origin) / tally.window_ns) as usize;
                while tally.windows.len() <= window {
                    tally.windows.push(Window::new());
                }
                tally.windows[window].add(record.time - due);
            }
            _ => {}
        }
    }

    /// Hands the blocks wholly read back to the file system.
    fn free(&mut self) -> Result<(), String> {
        let end = self.reader.offset() / BLOCK * BLOCK;
        if end <= self.freed_to {
            return Ok(());
        }
        use std::os::fd::AsRawFd;
        // SAFETY: fallocate on a descriptor this struct owns; the range
        // lies inside the file and the file's size is kept.
        let done = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                self.freed_to as libc::off_t,
                (end - self.freed_to) as libc::off_t,
            )
        };
        if done != 0 {
            return Err(format!(
                "{}: cannot free what was read: {}",
                self.path.display(),
                std::io::Error::last_os_error()
            ));
        }
        self.freed_to = end;
        Ok(())
    }
}

/// File-system blocks are freed in whole units of this size.
const BLOCK: u64 = 1 << 20;

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
        eprintln!("usage: soak_windows LOG_DIR DELAY_MS WINDOW_S [--follow DONE_FILE [--free]]");
        return ExitCode::from(2);
    };
    let done_file = match args.get(4).map(String::as_str) {
        None => None,
        Some("--follow") if args.len() >= 6 => Some(PathBuf::from(&args[5])),
        Some(other) => {
            eprintln!("soak_windows: unexpected argument {other:?}");
            return ExitCode::from(2);
        }
    };
    let free = args.get(6).is_some_and(|a| a == "--free");
    let mut tally = Tally {
        delay_ns: delay_ms * 1_000_000,
        window_ns: window_s.max(1) * 1_000_000_000,
        counted: HashMap::new(),
        windows: Vec::new(),
        early: 0,
    };
    let mut followers: Vec<Follower> = Vec::new();
    loop {
        // Decided before reading, so the last pass sees every record.
        let last = done_file.as_ref().is_none_or(|done| done.exists());
        for path in logs_in(&dir) {
            if followers.iter().any(|f| f.path == path) {
                continue;
            }
            match Follower::open(&path) {
                Ok(follower) => followers.push(follower),
                // A log whose header is still being written is read later.
                Err(_) if !last => {}
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        for follower in &mut followers {
            let read = follower.drain(&mut tally, last);
            let freed = if free { follower.free() } else { Ok(()) };
            if let Err(e) = read.and(freed) {
                eprintln!("{e}");
                eprintln!("soak_windows: stopped reading the logs");
                return ExitCode::FAILURE;
            }
        }
        if last {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let Tally {
        windows,
        early,
        counted,
        ..
    } = tally;
    let mut balanced = true;

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
