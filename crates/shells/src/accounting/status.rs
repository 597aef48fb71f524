//! The live status line: once a second, per shell and direction, the rate
//! into and out of the link, the queue, and the drops and marks so far.
//!
//! On a terminal the lines sit in rows reserved at the bottom of the screen
//! (a scroll region, as apt draws its progress bar), so the command's own
//! output scrolls above them undisturbed; elsewhere (`--status` with stderr
//! redirected) each refresh is printed as ordinary lines.

use crate::accounting::live::{LiveCounters, Snapshot};
use crate::sys::terminal::terminal_size;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One shell's row: its description and its two directions' counters.
pub struct Row {
    pub label: String,
    pub directions: [Arc<LiveCounters>; 2],
}

/// The running status thread; [`StatusLine::stop`] removes the lines.
pub struct StatusLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

const REFRESH: Duration = Duration::from_secs(1);

impl StatusLine {
    pub fn start(rows: Vec<Row>, terminal: bool) -> StatusLine {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("emu-status".into())
                .spawn(move || run(rows, terminal, &stop))
                .ok()
        };
        StatusLine { stop, thread }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

fn run(rows: Vec<Row>, terminal: bool, stop: &AtomicBool) {
    let mut screen = terminal.then(|| Screen::reserve(rows.len()));
    let mut previous: Vec<[Snapshot; 2]> = rows
        .iter()
        .map(|r| r.directions.each_ref().map(|d| d.snapshot()))
        .collect();
    let started = Instant::now();
    let mut last = started;
    loop {
        let next = last + REFRESH;
        while !stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::park_timeout(next - now);
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        let now = Instant::now();
        let seconds = now.duration_since(last).as_secs_f64();
        last = now;
        let lines: Vec<String> = rows
            .iter()
            .zip(previous.iter_mut())
            .map(|(row, before)| {
                let after = row.directions.each_ref().map(|d| d.snapshot());
                let line = format_row(&row.label, before, &after, seconds);
                *before = after;
                line
            })
            .collect();
        match screen.as_mut() {
            Some(screen) => screen.draw(&lines),
            None => {
                let elapsed = now.duration_since(started).as_secs();
                let text: String = lines
                    .iter()
                    .map(|l| format!("emu: {elapsed:>4} s {l}\n"))
                    .collect();
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
        }
    }
    if let Some(screen) = screen {
        screen.release();
    }
}

/// `[link 10 Mbit/s] up in 9.93 out 9.87 Mbit/s queue 31 pkt 45.0 kB drop 2 mark 0 | down ...`
pub fn format_row(
    label: &str,
    before: &[Snapshot; 2],
    after: &[Snapshot; 2],
    seconds: f64,
) -> String {
    let mut parts = Vec::new();
    for (d, name) in ["up", "down"].into_iter().enumerate() {
        let rate =
            |now: u64, then: u64| now.saturating_sub(then) as f64 * 8.0 / seconds.max(1e-9) / 1e6;
        let a = &after[d];
        parts.push(format!(
            "{name} in {:.2} out {:.2} Mbit/s queue {} pkt {} drop {} mark {}",
            rate(a.arrived_bytes, before[d].arrived_bytes),
            rate(a.delivered_bytes, before[d].delivered_bytes),
            a.queue_packets,
            human_bytes(a.queue_bytes),
            a.dropped,
            a.marked
        ));
    }
    format!("[{label}] {}", parts.join(" | "))
}

fn human_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 10_000_000 => format!("{:.0} MB", b as f64 / 1e6),
        b if b >= 1_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} B"),
    }
}

/// The bottom rows of the terminal, kept out of the scroll region.
struct Screen {
    reserved: usize,
    size: (usize, usize),
}

impl Screen {
    fn reserve(reserved: usize) -> Screen {
        let mut screen = Screen {
            reserved,
            size: (0, 0),
        };
        // Make room below the cursor first, so nothing on screen is
        // overwritten, then fence the rows off.
        let mut text = "\n".repeat(reserved);
        text += &format!("\x1b[{reserved}A");
        write_stderr(&text);
        screen.fit();
        screen
    }

    /// Sets the scroll region for the terminal's current size (again after
    /// a resize).
    fn fit(&mut self) {
        let size = terminal_size();
        if size == self.size {
            return;
        }
        self.size = size;
        let (rows, _) = size;
        let region_end = rows.saturating_sub(self.reserved).max(1);
        // Save the cursor, set the region (which homes the cursor), restore.
        write_stderr(&format!("\x1b7\x1b[1;{region_end}r\x1b8"));
    }

    fn draw(&mut self, lines: &[String]) {
        self.fit();
        let (rows, columns) = self.size;
        let first = rows.saturating_sub(self.reserved) + 1;
        let mut text = String::from("\x1b7");
        for (i, line) in lines.iter().enumerate() {
            let shown: String = line.chars().take(columns.saturating_sub(1)).collect();
            text += &format!("\x1b[{};1H\x1b[2K{shown}", first + i);
        }
        text += "\x1b8";
        write_stderr(&text);
    }

    fn release(self) {
        let (rows, _) = self.size;
        let first = rows.saturating_sub(self.reserved) + 1;
        let mut text = String::from("\x1b7\x1b[r");
        for i in 0..self.reserved {
            text += &format!("\x1b[{};1H\x1b[2K", first + i);
        }
        text += "\x1b8";
        write_stderr(&text);
    }
}

/// One write, so a refresh is never split by other output on stderr.
fn write_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_shows_rates_queue_drops_and_marks_per_direction() {
        let before = [Snapshot::default(); 2];
        let after = [
            Snapshot {
                arrived_bytes: 1_250_000,
                delivered_bytes: 1_000_000,
                dropped: 3,
                marked: 2,
                queue_packets: 31,
                queue_bytes: 45_000,
            },
            Snapshot {
                delivered_bytes: 125_000,
                arrived_bytes: 125_000,
                ..Snapshot::default()
            },
        ];
        let line = format_row("link 10 Mbit/s", &before, &after, 1.0);
        assert_eq!(
            line,
            "[link 10 Mbit/s] up in 10.00 out 8.00 Mbit/s queue 31 pkt 45.0 kB drop 3 mark 2 \
             | down in 1.00 out 1.00 Mbit/s queue 0 pkt 0 B drop 0 mark 0"
        );
        // Rates are per second of the interval actually measured.
        let half = format_row("x", &before, &after, 2.0);
        assert!(half.contains("up in 5.00 out 4.00"), "{half}");
    }
}
