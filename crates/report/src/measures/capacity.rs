//! Where a shell's capacity comes from, and the bytes it could deliver in
//! a window: a constant rate, a delivery trace placed from the shell's
//! start, or opportunities written in the log itself (Mahimahi's `#`).

use crate::measures::series::Bins;
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

/// What a [`Capacity`] is called where the report says which limit set a
/// shell's capacity.
impl Capacity {
    pub(crate) fn source(&self) -> Option<&'static str> {
        match self {
            Capacity::Unknown => None,
            Capacity::Rate(_) => Some("link rate"),
            Capacity::Trace { .. } => Some("link trace"),
            Capacity::Logged => Some("logged"),
        }
    }
}

/// Bytes per bin a constant `bps` carries in the window.
fn rate_bins(bps: u64, from: Nanos, to: Nanos, bins: usize, bin: Nanos) -> Vec<u64> {
    (0..bins as u64)
        .map(|b| {
            let start = from + b * bin;
            let stop = (start + bin).min(to);
            (bps as u128 * stop.saturating_sub(start) as u128 / 8 / 1_000_000_000) as u64
        })
        .collect()
}

/// The capacity per bin of a link (`link`, with what set it) whose queue
/// may shape at `shaper_bps`: the lower of the two in each bin, and which
/// set it. A `link 1gbit --queue "cake bandwidth 10mbit"` shell carries
/// 10 Mbit/s, not 1 Gbit/s.
pub(crate) fn with_shaper(
    link: Option<(Vec<u64>, &'static str)>,
    shaper_bps: Option<u64>,
    from: Nanos,
    to: Nanos,
    bins: usize,
    bin: Nanos,
) -> Option<(Vec<u64>, &'static str)> {
    let Some(shaper) = shaper_bps else {
        return link;
    };
    let shaped = rate_bins(shaper, from, to, bins, bin);
    let Some((link, source)) = link else {
        return Some((shaped, "queue shaper"));
    };
    let shaper_lower = shaped.iter().zip(&link).filter(|(s, l)| s < l).count();
    let link_lower = shaped.iter().zip(&link).filter(|(s, l)| s > l).count();
    let source = match (shaper_lower, link_lower) {
        (0, _) => source,
        (_, 0) => "queue shaper",
        _ => match source {
            "link rate" => "link rate and queue shaper",
            "logged" => "logged and queue shaper",
            _ => "link trace and queue shaper",
        },
    };
    let lower = shaped.iter().zip(&link).map(|(s, l)| *s.min(l)).collect();
    Some((lower, source))
}

/// The rate a link had over time, from its change records: `(from, bit/s)`
/// steps in time order, 0 while an outage lasts. `base` is the constant
/// rate of a link whose only changes are outages.
pub(crate) fn effective_rate(
    base: Option<u64>,
    rates: &[(Nanos, u64)],
    outages: &[(Nanos, bool)],
) -> Vec<(Nanos, u64)> {
    let mut events: Vec<(Nanos, Option<u64>, Option<bool>)> = rates
        .iter()
        .map(|&(t, r)| (t, Some(r), None))
        .chain(outages.iter().map(|&(t, down)| (t, None, Some(down))))
        .collect();
    events.sort_by_key(|e| e.0);
    let (mut rate, mut down) = (base.unwrap_or(0), false);
    let mut steps = vec![(0, if base.is_some() { rate } else { 0 })];
    for (t, new_rate, outage) in events {
        if let Some(r) = new_rate {
            rate = r;
        }
        if let Some(d) = outage {
            down = d;
        }
        steps.push((t, if down { 0 } else { rate }));
    }
    steps
}

/// Bytes per bin of a rate that holds in steps (from [`effective_rate`]).
pub(crate) fn step_bins(
    steps: &[(Nanos, u64)],
    from: Nanos,
    to: Nanos,
    bins: usize,
    bin: Nanos,
) -> Vec<u64> {
    let mut out = vec![0u64; bins];
    for (i, &(start, bps)) in steps.iter().enumerate() {
        let end = steps.get(i + 1).map_or(to, |s| s.0).min(to);
        let mut t = start.max(from);
        while t < end {
            let b = ((t - from) / bin) as usize;
            let bin_end = (from + (b as u64 + 1) * bin).min(end);
            if let Some(slot) = out.get_mut(b) {
                *slot += (bps as u128 * (bin_end - t) as u128 / 8 / 1_000_000_000) as u64;
            }
            t = bin_end;
        }
    }
    out
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

    /// A rate schedule with an outage, integrated per bin by hand: 8 Mbit/s
    /// for 1.5 s, 16 Mbit/s from then on, down from 2.5 s to 3 s.
    #[test]
    fn a_scheduled_rate_with_an_outage_gives_the_bytes_per_bin() {
        const S: Nanos = 1_000_000_000;
        let steps = effective_rate(
            None,
            &[(0, 8_000_000), (3 * S / 2, 16_000_000)],
            &[(5 * S / 2, true), (3 * S, false)],
        );
        let bins = step_bins(&steps, 0, 4 * S, 4, S);
        assert_eq!(
            bins,
            vec![1_000_000, 500_000 + 1_000_000, 1_000_000, 2_000_000]
        );
        // Outages alone on a constant rate.
        let steps = effective_rate(Some(8_000_000), &[], &[(S, true), (2 * S, false)]);
        assert_eq!(
            step_bins(&steps, 0, 3 * S, 3, S),
            vec![1_000_000, 0, 1_000_000]
        );
    }

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
