//! Where a shell's capacity comes from, and the bytes it could deliver in
//! a window: a constant rate, a delivery trace placed from the shell's
//! start, or opportunities written in the log itself (Mahimahi's `#`).

use crate::series::Bins;
use emu_core::trace::{Opportunity, Trace};
use emu_core::Nanos;
use std::sync::Arc;

/// Where a shell's capacity comes from.
#[derive(Debug, Clone)]
pub enum Capacity {
    /// No bottleneck (a delay or loss shell), or not recorded.
    Unknown,
    /// A constant rate in bit/s.
    Rate(u64),
    /// A delivery trace starting at `start` (from the report's time 0,
    /// negative for a shell that started before it).
    Trace {
        trace: Arc<emu_core::trace::Trace>,
        repeat: bool,
        start: i64,
    },
    /// Delivery opportunities that appear in the log itself (Mahimahi's `#`).
    Logged,
}

impl Capacity {
    /// Bytes the shell could deliver in each of `bins` bins of `bin` from
    /// `from` (the last one ending at `to`), None without a capacity.
    /// `logged` holds the opportunities a Mahimahi log wrote down.
    pub(crate) fn per_bin(
        &self,
        logged: &Bins,
        from: Nanos,
        to: Nanos,
        bins: usize,
        bin: Nanos,
    ) -> Option<Vec<u64>> {
        match self {
            Capacity::Unknown => None,
            Capacity::Logged => Some(logged.dense(bins)),
            Capacity::Rate(bps) => Some(
                (0..bins as u64)
                    .map(|b| {
                        let start = from + b * bin;
                        let stop = (start + bin).min(to);
                        (*bps as u128 * stop.saturating_sub(start) as u128 / 8 / 1_000_000_000)
                            as u64
                    })
                    .collect(),
            ),
            Capacity::Trace {
                trace,
                repeat,
                start,
            } => {
                let mut out = vec![0u64; bins];
                for (t, bytes) in trace_opportunities(trace, *repeat, *start, from, to) {
                    out[((t - from) / bin) as usize] += bytes as u64;
                }
                Some(out)
            }
        }
    }
}

/// The opportunities of a trace started at `start` (from the report's
/// time 0; negative for a shell that started before it) that fall in
/// `[from, to)`, in report time.
pub(crate) fn trace_opportunities(
    trace: &Arc<Trace>,
    repeat: bool,
    start: i64,
    from: Nanos,
    to: Nanos,
) -> impl Iterator<Item = Opportunity> {
    // Walk in the trace's own time (0 = its start), from the window's start.
    let mut opportunities = trace.opportunities(0, repeat);
    let skip = from as i64 - start;
    if skip > 0 {
        opportunities.skip_through(skip as Nanos - 1);
    }
    opportunities
        .map(move |(t, bytes)| ((start + t as i64) as Nanos, bytes))
        .take_while(move |&(t, _)| t < to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_opportunities_are_placed_from_the_shell_start() {
        const MS: Nanos = 1_000_000;
        let trace = Arc::new(Trace::parse("5\n10\n").unwrap());
        let times = |repeat, start: i64| {
            trace_opportunities(&trace, repeat, start, 0, 20 * MS)
                .map(|(t, _)| t / MS)
                .collect::<Vec<_>>()
        };
        // Started 3 ms before time 0: opportunities at 2, 7, 12, 17 ms.
        assert_eq!(times(true, -3 * (MS as i64)), vec![2, 7, 12, 17]);
        assert_eq!(times(false, -3 * (MS as i64)), vec![2, 7]);
        assert_eq!(times(true, 4 * MS as i64), vec![9, 14, 19]);
    }
}
