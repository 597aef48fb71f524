//! Telling an overloaded emulator from a slow path. When the machine cannot
//! keep up, packets are written later than the model says, and the path
//! looks slower or more jittery than the one configured. Each direction
//! judges its lateness over one-second windows, and the count of windows
//! whose p99 exceeds [`LATE_P99_LIMIT`] goes into the summary. The warning
//! at run time waits for two such windows in a row: on a quiet machine a
//! single second now and then (a run's start, a stall of the host) can
//! exceed the limit while the run's p99 stays a few tens of microseconds,
//! and telling the user the machine cannot keep up would then be wrong.
//! Overload that lasts is what the warning is for; the summary counts
//! every late window either way.

use crate::accounting::lateness::Lateness;
use emu_core::Nanos;

/// The p99 lateness above which emu's timing no longer holds.
pub const LATE_P99_LIMIT: Nanos = 100_000;
/// The length of one judged window.
const WINDOW: Nanos = 1_000_000_000;
/// Fewer writes than this in a window say nothing about load.
const MIN_PACKETS: u64 = 100;
/// Late windows in a row before the warning.
const WARN_AFTER: u64 = 2;

/// One direction's lateness, judged window by window.
pub struct Overload {
    label: String,
    window: Lateness,
    window_start: Nanos,
    /// Windows judged, and those whose p99 exceeded the limit.
    pub windows: u64,
    pub overloaded: u64,
    /// The worst window's p99 and mean.
    pub worst_p99: Nanos,
    pub worst_mean: f64,
    /// Late windows in a row, up to the last judged.
    in_a_row: u64,
    /// The warning was printed.
    pub warned: bool,
}

impl Overload {
    /// `label` names the direction in the warning, e.g. "[delay 0] uplink".
    pub fn new(label: String) -> Overload {
        Overload {
            label,
            window: Lateness::default(),
            window_start: 0,
            windows: 0,
            overloaded: 0,
            worst_p99: 0,
            worst_mean: 0.0,
            in_a_row: 0,
            warned: false,
        }
    }

    #[inline]
    pub fn record(&mut self, late: Nanos) {
        self.window.record(late);
    }

    /// Closes the window if it is a second old; cheap otherwise.
    #[inline]
    pub fn tick(&mut self, now: Nanos) {
        if self.window_start == 0 {
            self.window_start = now;
        } else if now.saturating_sub(self.window_start) >= WINDOW {
            self.judge();
            self.window_start = now;
        }
    }

    /// Judges what is left at exit.
    pub fn finish(&mut self) {
        self.judge();
    }

    fn judge(&mut self) {
        if self.window.count() >= MIN_PACKETS {
            self.windows += 1;
            let p99 = self.window.quantile_ns(0.99);
            if p99 > LATE_P99_LIMIT {
                self.overloaded += 1;
                self.in_a_row += 1;
                if self.in_a_row >= WARN_AFTER && !self.warned {
                    self.warned = true;
                    eprintln!(
                        "emu: warning: {}: packets are written late ({} seconds in a row; in the last, p99 {:.0} us, mean {:.0} us over {} packets, above the {} us emu guarantees): this machine cannot keep up with the load, so the path is slower than the one configured; use fewer or slower flows, --busy-poll, or a less loaded machine",
                        self.label,
                        self.in_a_row,
                        p99 as f64 / 1e3,
                        self.window.mean_ns() / 1e3,
                        self.window.count(),
                        LATE_P99_LIMIT / 1_000
                    );
                }
                if p99 > self.worst_p99 {
                    self.worst_p99 = p99;
                    self.worst_mean = self.window.mean_ns();
                }
            } else {
                self.in_a_row = 0;
            }
        }
        self.window.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_windows_late_at_the_99th_percentile_count() {
        let mut o = Overload::new("test".into());
        let second = 1_000_000_000;
        o.tick(1);
        // A punctual second, with one very late write in 200.
        for i in 0..200 {
            o.record(if i == 0 { 5_000_000 } else { 3_000 });
        }
        o.tick(1 + second);
        assert_eq!((o.windows, o.overloaded), (1, 0));
        // A late second: a tenth of the writes 300 µs late.
        for i in 0..200 {
            o.record(if i % 10 == 0 { 300_000 } else { 3_000 });
        }
        o.tick(1 + 2 * second);
        assert_eq!((o.windows, o.overloaded), (2, 1));
        assert_eq!(o.worst_p99, 300_000);
        // One late second is counted but not warned about.
        assert!(!o.warned);
        // Too few packets to judge.
        o.record(900_000);
        o.finish();
        assert_eq!((o.windows, o.overloaded), (2, 1));
    }

    /// A punctual second between two late ones starts the count again;
    /// two late seconds in a row warn, once.
    #[test]
    fn the_warning_waits_for_two_late_seconds_in_a_row() {
        let mut o = Overload::new("test".into());
        let second = 1_000_000_000;
        let mut now = 1;
        o.tick(now);
        let mut window = |o: &mut Overload, late: Nanos| {
            for _ in 0..200 {
                o.record(late);
            }
            now += second;
            o.tick(now);
        };
        window(&mut o, 300_000);
        window(&mut o, 3_000);
        window(&mut o, 300_000);
        assert_eq!((o.overloaded, o.warned), (2, false));
        window(&mut o, 300_000);
        assert_eq!((o.overloaded, o.warned), (3, true));
        window(&mut o, 300_000);
        assert_eq!((o.windows, o.overloaded, o.warned), (5, 4, true));
    }
}
