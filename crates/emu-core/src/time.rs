//! Time is a count of nanoseconds (`Nanos`). Real time comes from
//! CLOCK_MONOTONIC; virtual time is whatever a test passes in. The models
//! never read a clock themselves.

use crate::error::{scaled_decimal, split_number_unit, ParseError};

/// Nanoseconds, either since an arbitrary monotonic origin (real time) or
/// since the start of a simulation (virtual time).
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_SEC: Nanos = 1_000_000_000;

/// CLOCK_MONOTONIC in nanoseconds: the clock every real-time stamp uses, so
/// stamps from different threads compare.
pub fn monotonic_now() -> Nanos {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch, used once per log to
/// tie monotonic stamps to wall-clock time.
pub fn realtime_now() -> Nanos {
    clock_ns(libc::CLOCK_REALTIME)
}

/// A span of `ns` nanoseconds as the C library's timeouts take it (ppoll).
pub fn timespec(ns: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_SEC) as libc::time_t,
        tv_nsec: (ns % NS_PER_SEC) as libc::c_long,
    }
}

fn clock_ns(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and both clocks always exist.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as Nanos * NS_PER_SEC + ts.tv_nsec as Nanos
}

/// The longest span emu takes (a delay, a trace's timestamps, a time in a
/// schedule): a hundred years. The clock plus such a span stays within a
/// u64 of nanoseconds (584 years); a delay of 18446744000 s wrapped around
/// to no delay at all.
pub const LONGEST_SPAN: Nanos = 100 * 365 * 86_400 * NS_PER_SEC;

const DURATION_HELP: &str =
    "a duration such as 40, 0.25ms, 500us, 2s or 100ns (a bare number is milliseconds)";

/// Reads a duration as users write it: a decimal number with an optional
/// unit `ns`, `us`, `ms` or `s`. A bare number is milliseconds, as in
/// Mahimahi's `mm-delay 40`.
pub fn parse_duration(text: &str) -> Result<Nanos, ParseError> {
    let trimmed = text.trim();
    let (number, unit) = split_number_unit(trimmed);
    let scale: u128 = match unit {
        "" | "ms" => NS_PER_MS as u128,
        "ns" => 1,
        "us" | "µs" => NS_PER_US as u128,
        "s" | "sec" => NS_PER_SEC as u128,
        _ => return Err(ParseError::new(text, DURATION_HELP)),
    };
    let value =
        scaled_decimal(number, scale).ok_or_else(|| ParseError::new(text, DURATION_HELP))?;
    Nanos::try_from(value)
        .ok()
        .filter(|&ns| ns <= LONGEST_SPAN)
        .ok_or_else(|| ParseError::new(text, "a duration of at most 100 years"))
}

/// Writes a duration in the largest unit that keeps it short and exact
/// enough for a prompt or a log header: `40 ms`, `250 us`, `1.5 s`.
pub fn format_duration(ns: Nanos) -> String {
    let (value, unit) = if ns >= NS_PER_SEC {
        (ns as f64 / NS_PER_SEC as f64, "s")
    } else if ns >= NS_PER_MS {
        (ns as f64 / NS_PER_MS as f64, "ms")
    } else if ns >= NS_PER_US {
        (ns as f64 / NS_PER_US as f64, "us")
    } else {
        (ns as f64, "ns")
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timespec_splits_seconds_from_nanoseconds() {
        let t = timespec(2 * NS_PER_SEC + 500_000_001);
        assert_eq!((t.tv_sec, t.tv_nsec), (2, 500_000_001));
        let t = timespec(999);
        assert_eq!((t.tv_sec, t.tv_nsec), (0, 999));
    }

    #[test]
    fn bare_numbers_are_milliseconds() {
        assert_eq!(parse_duration("40").unwrap(), 40 * NS_PER_MS);
        assert_eq!(parse_duration("0").unwrap(), 0);
    }

    #[test]
    fn units_and_decimals_are_exact() {
        assert_eq!(parse_duration("0.25ms").unwrap(), 250_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert_eq!(parse_duration("500us").unwrap(), 500_000);
        assert_eq!(parse_duration("7ns").unwrap(), 7);
        assert_eq!(parse_duration("0.0000001ms").unwrap(), 0);
        assert_eq!(parse_duration(".5ms").unwrap(), 500_000);
    }

    /// Past a hundred years, a span plus the clock could wrap a u64 of
    /// nanoseconds around to a time long past.
    #[test]
    fn a_duration_is_at_most_a_hundred_years() {
        let years = 100 * 365 * 86_400u64;
        assert_eq!(parse_duration(&format!("{years}s")).unwrap(), LONGEST_SPAN);
        let err = parse_duration(&format!("{}s", years + 1)).unwrap_err();
        assert!(err.to_string().contains("100 years"), "{err}");
        assert!(parse_duration("18446744000s").is_err());
        assert!(monotonic_now().checked_add(LONGEST_SPAN).is_some());
    }

    #[test]
    fn garbage_is_rejected_with_the_input_named() {
        for bad in ["", "ms", "4x", "-3", "1.2.3", "1e3", "forty"] {
            let err = parse_duration(bad).unwrap_err();
            assert_eq!(err.input, bad);
        }
    }

    #[test]
    fn formatting_is_short() {
        assert_eq!(format_duration(40 * NS_PER_MS), "40 ms");
        assert_eq!(format_duration(250_000), "250 us");
        assert_eq!(format_duration(1_500_000_000), "1.5 s");
    }

    #[test]
    fn monotonic_clock_advances() {
        let a = monotonic_now();
        let b = monotonic_now();
        assert!(b >= a);
    }
}
