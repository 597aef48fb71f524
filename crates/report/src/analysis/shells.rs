//! Per shell of a direction: what it passed, its summary over the window,
//! and the one that limits the path (the bottleneck) with the queue worth
//! plotting.

use super::totals::*;
use crate::analysis::events::ShellInfo;
use crate::analysis::mahimahi_figures::MmAccumulator;
use crate::analysis::summary::{ms, DelayStats, Marks, QueueSummary, ShellSummary};
use crate::measures::capacity::{with_shaper, Capacity};
use crate::measures::histogram::Histogram;
use crate::measures::series::{Bins, Step};
use emu_core::log::DropCounts;
use emu_core::Nanos;

pub(super) struct ShellAcc {
    pub(super) info: ShellInfo,
    pub(super) arrivals: u64,
    pub(super) departures: u64,
    pub(super) departed_bytes: u64,
    pub(super) drops: DropCounts,
    pub(super) ce: u64,
    pub(super) ect1: u64,
    pub(super) sojourn: Histogram,
    pub(super) transit: Histogram,
    pub(super) queue_bytes: Step,
    pub(super) queue_packets: Step,
    pub(super) departed_bins: Bins,
    pub(super) logged_capacity: Bins,
    pub(super) mahimahi: MmAccumulator,
    /// The path's parameter changes this shell logged (event 7), in time
    /// order: the rate (bit/s), outages (true = down) and base delay (ns).
    pub(super) rate_changes: Vec<(Nanos, u64)>,
    pub(super) outages: Vec<(Nanos, bool)>,
    pub(super) delay_changes: Vec<(Nanos, u64)>,
}

/// The shell that limits the path (the least capacity) and the queue
/// worth plotting (the bottleneck's, else the deepest).
#[derive(Clone)]
pub(super) struct Bottleneck {
    pub(super) shell: Option<u8>,
    pub(super) capacity_bytes: Option<Vec<u64>>,
    pub(super) capacity_source: Option<&'static str>,
    pub(super) queue_shell: Option<u8>,
    pub(super) queue_mean: Vec<f64>,
    pub(super) queue_max: Vec<u64>,
}

impl Bottleneck {
    pub(super) fn of(shells: &[ShellParts]) -> Bottleneck {
        let shell = shells
            .iter()
            .filter_map(|(s, _, _)| Some((s.shell, s.capacity_mbps?)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(shell, _)| shell);
        let capacity_bytes = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == shell)
            .and_then(|(_, c, _)| c.clone());
        let queue_shell = shell.or_else(|| {
            shells
                .iter()
                .max_by_key(|(s, _, _)| s.queue.max_bytes)
                .map(|(s, _, _)| s.shell)
        });
        let (queue_mean, queue_max) = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == queue_shell)
            .map(|(_, _, q)| q.clone())
            .unwrap_or_default();
        let capacity_source = shells
            .iter()
            .find(|(s, _, _)| Some(s.shell) == shell)
            .and_then(|(s, _, _)| s.capacity_source);
        Bottleneck {
            shell,
            capacity_bytes,
            capacity_source,
            queue_shell,
            queue_mean,
            queue_max,
        }
    }
}

/// A shell's logged base delay as a step line in report seconds and ms,
/// from its first change to the window's end.
pub(super) fn delay_steps(changes: &[(Nanos, u64)], window: &Window) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let x = |t: Nanos| t.saturating_sub(window.from) as f64 / NS_PER_S;
    for (i, &(t, delay)) in changes.iter().enumerate() {
        if t >= window.to {
            break;
        }
        let t = t.max(window.from);
        if i > 0 {
            points.push((x(t), ms(changes[i - 1].1)));
        }
        points.push((x(t), ms(delay)));
    }
    if let Some(&(_, last)) = changes.iter().rfind(|(t, _)| *t < window.to) {
        points.push((x(window.to), ms(last)));
    }
    points
}

pub(super) type ShellParts = (ShellSummary, Option<Vec<u64>>, (Vec<f64>, Vec<u64>));

pub(super) fn shell_summary(acc: ShellAcc, window: &Window) -> ShellParts {
    let (from, to, bins) = (window.from, window.to, window.bins);
    let window_s = window.seconds();
    let base_rate = match acc.info.capacity {
        Capacity::Rate(bps) => Some(bps),
        _ => None,
    };
    // A rate that followed a schedule or had outages: the rate the link
    // actually had, from its change records.
    let scheduled =
        !acc.rate_changes.is_empty() || (!acc.outages.is_empty() && base_rate.is_some());
    let link = if scheduled {
        let steps =
            crate::measures::capacity::effective_rate(base_rate, &acc.rate_changes, &acc.outages);
        let source = if acc.rate_changes.is_empty() {
            "link rate with outages"
        } else {
            "link rate schedule"
        };
        Some((
            crate::measures::capacity::step_bins(&steps, from, to, bins, window.bin),
            source,
        ))
    } else {
        acc.info
            .capacity
            .per_bin(&acc.logged_capacity, from, to, bins, window.bin)
            .zip(acc.info.capacity.source())
    };
    let (capacity, capacity_source) =
        match with_shaper(link, acc.info.shaper_bps, from, to, bins, window.bin) {
            Some((bins, source)) => (Some(bins), Some(source)),
            None => (None, None),
        };
    let capacity_mbps = capacity
        .as_ref()
        .map(|c| c.iter().sum::<u64>() as f64 * 8.0 / window_s / 1e6);
    let throughput = (window_s > 0.0).then(|| acc.departed_bytes as f64 * 8.0 / window_s / 1e6);
    let mahimahi = match &acc.info.capacity {
        Capacity::Unknown => None,
        capacity => acc.mahimahi.figures(capacity),
    };
    let (bytes_mean, bytes_max) = acc.queue_bytes.finish(to - from, bins);
    let (packets_mean, packets_max) = acc.queue_packets.finish(to - from, bins);
    let time_mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let summary = ShellSummary {
        shell: acc.info.shell,
        description: acc.info.description.clone(),
        arrivals: acc.arrivals,
        departures: acc.departures,
        departed_bytes: acc.departed_bytes,
        drops: acc.drops.nonzero_by_name(),
        marks: Marks::of(acc.ce, acc.ect1, acc.departures),
        sojourn: DelayStats::of(&acc.sojourn),
        transit: DelayStats::of(&acc.transit),
        queue: QueueSummary {
            mean_bytes: time_mean(&bytes_mean),
            max_bytes: bytes_max.iter().copied().max().unwrap_or(0),
            mean_packets: time_mean(&packets_mean),
            max_packets: packets_max.iter().copied().max().unwrap_or(0),
        },
        capacity_mbps,
        capacity_source,
        throughput_mbps: throughput,
        utilization: throughput
            .zip(capacity_mbps)
            .filter(|&(_, c)| c > 0.0)
            .map(|(t, c)| t / c),
        mahimahi,
    };
    (summary, capacity, (bytes_mean, bytes_max))
}
