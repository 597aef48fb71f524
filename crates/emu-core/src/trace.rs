//! Delivery traces: the times at which the link may deliver bytes.
//!
//! Mahimahi's format (read exactly as Mahimahi does): one integer
//! millisecond per line, each line one opportunity to deliver one MTU
//! (1500 bytes of IP packet here; Mahimahi counts 1504 with its 4-byte TUN
//! header). Several lines may share a timestamp. The trace repeats with a
//! period equal to its last timestamp. An empty line, a decreasing
//! timestamp, no lines, or a last timestamp of 0 are errors.
//!
//! emu's finer format starts with the line `#emu-trace us` (or `ns`); each
//! following line is `TIME [BYTES]`: a timestamp in that unit and,
//! optionally, the size of the opportunity (default 1500). Lines starting
//! with `#` are comments. The same rules on order and period apply.
//!
//! A trace is a file format, like the packet log: the link model spends
//! its opportunities, the report counts them as capacity and the Mahimahi
//! writer logs them, all through one walker, [`Opportunities`].
//!
//! ```
//! use emu_core::trace::Trace;
//! use std::sync::Arc;
//!
//! // Mahimahi's format: opportunities at 1, 1 and 3 ms, repeating every 3 ms.
//! let trace = Arc::new(Trace::parse("1\n1\n3\n").unwrap());
//! assert_eq!(trace.mean_rate_bps(), 3.0 * 1500.0 * 8.0 / 0.003);
//! let ms = |(t, _bytes): (u64, u32)| t / 1_000_000;
//! // Placed from a start at 10 ms, repeating:
//! let times: Vec<u64> = trace.opportunities(10_000_000, true).take(5).map(ms).collect();
//! assert_eq!(times, [11, 11, 13, 14, 14]);
//! // Or once through:
//! assert_eq!(trace.opportunities(0, false).count(), 3);
//! ```

use crate::time::{Nanos, LONGEST_SPAN, NS_PER_MS, NS_PER_US};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Bytes of IP packet one Mahimahi opportunity delivers.
pub const MTU_OPPORTUNITY: u32 = 1500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.path.display(), line, self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for TraceError {}

/// A loaded trace: opportunity times (offsets from the start of a period)
/// with their sizes, and the period after which it repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    times: Vec<Nanos>,
    bytes: Vec<u32>,
    period: Nanos,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read(path).map_err(|e| TraceError {
            path: path.to_path_buf(),
            line: None,
            message: format!("cannot read the trace: {e}"),
        })?;
        let text = String::from_utf8(text).map_err(|_| TraceError {
            path: path.to_path_buf(),
            line: None,
            message: "not a text file: a trace has one timestamp per line".into(),
        })?;
        Trace::parse(&text).map_err(|(line, message)| TraceError {
            path: path.to_path_buf(),
            line,
            message,
        })
    }

    /// Parses trace text; errors carry the 1-based line number.
    // Long: both trace formats read line by line, each line's errors beside its reading.
    pub fn parse(text: &str) -> Result<Trace, (Option<usize>, String)> {
        let mut lines: Vec<&str> = text.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop(); // the newline that ends the last line
        }
        let first = lines.first().map(|l| l.trim());
        let fine_unit = match first {
            Some("#emu-trace us") => Some(NS_PER_US),
            Some("#emu-trace ns") => Some(1),
            Some(other) if other.starts_with("#emu-trace") => {
                return Err((
                    Some(1),
                    format!("unknown unit in '{other}': write '#emu-trace us' or '#emu-trace ns'"),
                ))
            }
            _ => None,
        };
        let mut times = Vec::with_capacity(lines.len());
        let mut bytes = Vec::with_capacity(lines.len());
        for (index, raw) in lines.iter().enumerate() {
            let number = index + 1;
            let line = raw.trim_end_matches('\r').trim();
            if fine_unit.is_some() && (index == 0 || line.starts_with('#')) {
                continue;
            }
            if line.is_empty() {
                return Err((
                    Some(number),
                    "empty line (Mahimahi traces allow none)".into(),
                ));
            }
            let (time_text, size_text) = match fine_unit {
                Some(_) => {
                    let mut fields = line.split_whitespace();
                    let time = fields.next().unwrap_or("");
                    let size = fields.next();
                    if fields.next().is_some() {
                        return Err((Some(number), format!("'{line}': expected TIME [BYTES]")));
                    }
                    (time, size)
                }
                None => (line, None),
            };
            let value: u64 = time_text.parse().map_err(|_| {
                (
                    Some(number),
                    format!(
                        "'{time_text}' is not a whole number of {}",
                        if fine_unit.is_some() {
                            "time units"
                        } else {
                            "milliseconds"
                        }
                    ),
                )
            })?;
            let time = value
                .checked_mul(fine_unit.unwrap_or(NS_PER_MS))
                .filter(|&t| t <= LONGEST_SPAN)
                .ok_or((
                    Some(number),
                    format!("timestamp {value} is too large (a trace lasts at most 100 years)"),
                ))?;
            if let Some(&previous) = times.last() {
                if time < previous {
                    return Err((Some(number), "timestamps must be nondecreasing".into()));
                }
            }
            let size = match size_text {
                Some(text) => match text.parse::<u32>() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        return Err((
                            Some(number),
                            format!("'{text}' is not a positive byte count"),
                        ))
                    }
                },
                None => MTU_OPPORTUNITY,
            };
            times.push(time);
            bytes.push(size);
        }
        let Some(&period) = times.last() else {
            return Err((
                None,
                "no timestamps found: a trace needs at least one line".into(),
            ));
        };
        if period == 0 {
            return Err((None, "the last timestamp is 0: a trace must last a nonzero time (it repeats with that period)".into()));
        }
        Ok(Trace {
            times,
            bytes,
            period,
        })
    }

    /// A trace of evenly spaced opportunities, for tests and benchmarks.
    pub fn from_opportunities(times: Vec<Nanos>, bytes: Vec<u32>) -> Trace {
        assert_eq!(times.len(), bytes.len());
        let period = *times.last().expect("at least one opportunity");
        assert!(period > 0 && times.windows(2).all(|w| w[0] <= w[1]));
        Trace {
            times,
            bytes,
            period,
        }
    }

    pub fn period(&self) -> Nanos {
        self.period
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Offset within a period and size of opportunity `index`.
    pub fn opportunity(&self, index: usize) -> (Nanos, u32) {
        (self.times[index], self.bytes[index])
    }

    /// The trace in emu's nanosecond format, which [`Trace::parse`] reads
    /// back exactly (times and sizes), whatever format it was loaded from.
    pub fn to_emu_text(&self) -> String {
        let mut text = String::with_capacity(16 + self.times.len() * 16);
        text.push_str("#emu-trace ns\n");
        for (time, bytes) in self.times.iter().zip(&self.bytes) {
            text.push_str(&format!("{time} {bytes}\n"));
        }
        text
    }

    /// Mean capacity in bit/s over one period.
    pub fn mean_rate_bps(&self) -> f64 {
        let total: u64 = self.bytes.iter().map(|&b| b as u64).sum();
        total as f64 * 8.0 * 1e9 / self.period as f64
    }

    /// Index of the first opportunity at an offset strictly greater than
    /// `offset` within one period, or `len()` if none.
    fn first_after(&self, offset: Nanos) -> usize {
        self.times.partition_point(|&t| t <= offset)
    }

    /// The opportunities of this trace started at `start`: once through
    /// (`repeat` false, as with `--once`), or repeating every period.
    pub fn opportunities(self: &Arc<Self>, start: Nanos, repeat: bool) -> Opportunities {
        Opportunities {
            trace: Arc::clone(self),
            repeat,
            lap_start: start,
            next: 0,
            ended: false,
        }
    }
}

/// One delivery opportunity: its time and the bytes it may carry.
pub type Opportunity = (Nanos, u32);

/// A trace's delivery opportunities in time order, from a start time,
/// once through or repeating. The one way to walk a trace: the link model
/// spends them, the report counts them as capacity, the Mahimahi writer
/// logs them.
#[derive(Debug, Clone)]
pub struct Opportunities {
    trace: Arc<Trace>,
    repeat: bool,
    /// Absolute time of offset 0 of the current lap.
    lap_start: Nanos,
    /// Index of the next opportunity within the lap.
    next: usize,
    /// A trace run once has given its last opportunity.
    ended: bool,
}

impl Opportunities {
    /// The next opportunity, without taking it.
    #[inline]
    pub fn peek(&self) -> Option<Opportunity> {
        if self.ended {
            return None;
        }
        let (offset, bytes) = self.trace.opportunity(self.next);
        Some((self.lap_start + offset, bytes))
    }

    /// True once a trace run once has given its last opportunity.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Whether the walk repeats the trace.
    pub fn repeats(&self) -> bool {
        self.repeat
    }

    /// For a trace run once, the time of its last opportunity (where a
    /// `--once` run stops); None for a repeating one.
    pub fn ends_at(&self) -> Option<Nanos> {
        (!self.repeat).then(|| self.lap_start + self.trace.period())
    }

    /// Drops every opportunity at or before `now` in one step (by binary
    /// search, however many periods lie between): an idle link loses them
    /// unused, a report window starts after them.
    pub fn skip_through(&mut self, now: Nanos) {
        if self.peek().is_none_or(|(time, _)| time > now) {
            return;
        }
        let period = self.trace.period();
        let elapsed = now - self.lap_start;
        if !self.repeat && elapsed >= period {
            self.ended = true;
            return;
        }
        self.lap_start += elapsed / period * period;
        self.next = self.trace.first_after(now - self.lap_start);
        if self.next == self.trace.len() {
            self.next = 0;
            self.lap_start += period;
        }
    }
}

impl Iterator for Opportunities {
    type Item = Opportunity;

    #[inline]
    fn next(&mut self) -> Option<Opportunity> {
        let opportunity = self.peek()?;
        self.next += 1;
        if self.next == self.trace.len() {
            self.next = 0;
            if self.repeat {
                self.lap_start += self.trace.period();
            } else {
                self.ended = true;
            }
        }
        Some(opportunity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mahimahi_format() {
        let t = Trace::parse("1\n1\n3\n").unwrap();
        assert_eq!(t.period(), 3 * NS_PER_MS);
        assert_eq!(t.len(), 3);
        assert_eq!(t.opportunity(1), (NS_PER_MS, 1500));
        // A single "1" is 12 Mbit/s.
        assert_eq!(Trace::parse("1").unwrap().mean_rate_bps(), 12e6);
    }

    #[test]
    fn the_emu_text_form_reads_back_as_the_same_trace() {
        let trace = Trace::parse("1\n1\n3\n7\n").unwrap();
        let copy = Trace::parse(&trace.to_emu_text()).unwrap();
        assert_eq!(copy, trace);
        let fine = Trace::parse("#emu-trace us\n5 100\n2500 1500\n").unwrap();
        assert_eq!(Trace::parse(&fine.to_emu_text()).unwrap(), fine);
    }

    #[test]
    fn mahimahi_errors() {
        let err = |s: &str| Trace::parse(s).unwrap_err();
        assert_eq!(err("1\n\n2\n").0, Some(2));
        assert!(err("1\n\n2\n").1.contains("empty line"));
        assert!(err("5\n3\n").1.contains("nondecreasing"));
        assert!(err("").1.contains("no timestamps"));
        assert!(err("0\n0\n").1.contains("nonzero"));
        assert!(err("1\nabc\n").1.contains("'abc'"));
        assert!(err("1\n2\n\n").1.contains("empty line"));
        assert!(err("-1\n").1.contains("'-1'"));
        // A period the clock would wrap around with.
        assert!(err("1\n18446744073000\n").1.contains("100 years"));
    }

    #[test]
    fn fine_format_has_units_sizes_and_comments() {
        let t = Trace::parse("#emu-trace us\n# a comment\n250\n250 300\n1000 9000\n").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.opportunity(0), (250_000, 1500));
        assert_eq!(t.opportunity(1), (250_000, 300));
        assert_eq!(t.period(), 1_000_000);
        assert!(Trace::parse("#emu-trace min\n1\n").is_err());
        assert!(Trace::parse("#emu-trace ns\n10 0\n").is_err());
    }

    #[test]
    fn opportunities_repeat_or_end() {
        let trace = Arc::new(Trace::parse("1\n1\n3\n").unwrap());
        let ms = |o: Vec<Opportunity>| {
            o.into_iter()
                .map(|(t, _)| t / NS_PER_MS)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ms(trace.opportunities(0, true).take(7).collect()),
            [1, 1, 3, 4, 4, 6, 7]
        );
        let mut once = trace.opportunities(2 * NS_PER_MS, false);
        assert_eq!(once.ends_at(), Some(5 * NS_PER_MS));
        assert_eq!(ms(once.by_ref().collect()), [3, 3, 5]);
        assert!(once.is_ended());
        assert_eq!(trace.opportunities(0, true).ends_at(), None);
    }

    /// Skipping drops exactly the opportunities at or before the time,
    /// across any number of periods, and ends a trace run once.
    #[test]
    fn skipping_is_strict_and_jumps_periods() {
        let trace = Arc::new(Trace::parse("1\n1\n3\n").unwrap());
        let after = |repeat, now| {
            let mut o = trace.opportunities(0, repeat);
            o.skip_through(now);
            o.peek().map(|(t, _)| t)
        };
        assert_eq!(after(true, 0), Some(NS_PER_MS));
        assert_eq!(after(true, NS_PER_MS), Some(3 * NS_PER_MS));
        assert_eq!(after(true, 3 * NS_PER_MS), Some(4 * NS_PER_MS));
        assert_eq!(after(true, 3 * NS_PER_MS - 1), Some(3 * NS_PER_MS));
        assert_eq!(after(true, 3000 * NS_PER_MS + 2), Some(3001 * NS_PER_MS));
        assert_eq!(after(true, 3001 * NS_PER_MS), Some(3003 * NS_PER_MS));
        assert_eq!(after(false, 2 * NS_PER_MS), Some(3 * NS_PER_MS));
        assert_eq!(after(false, 3 * NS_PER_MS), None);
        // The walk agrees with stepping one opportunity at a time.
        for now in 0..20 * NS_PER_MS / 100_000 {
            let now = now * 100_000;
            let mut stepped = trace.opportunities(0, true);
            while stepped.peek().unwrap().0 <= now {
                stepped.next();
            }
            assert_eq!(after(true, now), stepped.peek().map(|(t, _)| t), "{now}");
        }
    }

    #[test]
    fn first_after_is_strict() {
        let t = Trace::parse("1\n1\n3\n").unwrap();
        assert_eq!(t.first_after(0), 0);
        assert_eq!(t.first_after(NS_PER_MS), 2);
        assert_eq!(t.first_after(3 * NS_PER_MS), 3);
    }

    #[test]
    fn the_repository_cellular_traces_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/cellular");
        let path = dir.join("Verizon-LTE-short.down");
        let trace = Trace::load(&path).unwrap();
        assert!(trace.len() > 10_000);
        assert!(trace.mean_rate_bps() > 1e6);
        let missing = Trace::load(&dir.join("nope")).unwrap_err();
        assert!(missing.to_string().contains("cannot read the trace"));
    }
}
