//! The flows of a direction: the ones shown (biggest first, as the
//! selection says), those left out, and Jain's fairness index over those
//! that compete for the path, overall and per bin.

use super::totals::*;
use crate::analysis::events::{FlowName, FlowSelection};
use crate::analysis::summary::{jain, DelayStats, Fairness, FlowSummary, OtherFlows};
use emu_core::Nanos;
use std::collections::HashMap;

/// The flows shown (rows and throughput lines), those left out, and
/// fairness over the shown ones, overall and per bin.
pub(super) struct FlowTables {
    pub(super) rows: Vec<FlowSummary>,
    pub(super) lines: Vec<(String, Vec<f64>)>,
    pub(super) other: OtherFlows,
    pub(super) fairness: Fairness,
    pub(super) jain_bins: Vec<Option<f64>>,
    /// See [`active_span`].
    pub(super) active: Option<(usize, usize)>,
}

/// Flows biggest first; the selection decides who is shown, and Jain's
/// index takes the shown flows that compete for the path.
pub(super) fn flows_and_fairness(
    flows: HashMap<u32, Totals>,
    names: &HashMap<u32, FlowName>,
    selection: &FlowSelection,
    total: &Totals,
    window: &Window,
) -> FlowTables {
    let bins = window.bins;
    let (flows, selected, fair) = rank_and_select(flows, names, selection, total.delivered_bytes);
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut other = OtherFlows {
        count: 0,
        delivered_bytes: 0,
    };
    let mut shares = Vec::new();
    let mut active_bins = Vec::new();
    let common = common_window(
        flows
            .iter()
            .zip(&fair)
            .filter(|(_, fair)| **fair)
            .map(|((_, t), _)| t.delivered_bins.span()),
        bins,
    );
    let windows = Windows {
        window,
        common,
        common_s: common.map_or(0.0, |(a, b)| window.span_s(a, b)),
        common_total: common_bytes(common, &total.delivered_bins.dense(bins)),
    };
    let mut common_rates = Vec::new();
    for (((id, t), chosen), &fair) in flows.iter().zip(&selected).zip(&fair) {
        if !chosen {
            other.count += 1;
            other.delivered_bytes += t.delivered_bytes;
            continue;
        }
        let named = names.get(id);
        let name = named.map_or_else(|| format!("flow {id:08x}"), FlowName::label);
        let dense = t.delivered_bins.dense(bins);
        let row = flow_row(*id, t, named, fair, &windows, &dense);
        if fair {
            common_rates.extend(row.common_window_throughput_mbps);
            shares.extend(t.throughput_mbps());
            if let Some(span) = t.delivered_bins.span() {
                active_bins.push((span, dense.clone()));
            }
        }
        rows.push(row);
        lines.push((name, window.rates(dense)));
    }
    let fair_flows = fair.iter().filter(|&&f| f).count();
    let active = active_span(&flows, &selected, &fair, bins);
    let jain_bins = jain_per_bin(&active_bins, bins);
    let defined: Vec<f64> = jain_bins.iter().flatten().copied().collect();
    let fairness = Fairness {
        flows: fair_flows,
        common_from_s: common.map(|(a, _)| (a as u64 * window.bin) as f64 / NS_PER_S),
        common_to_s: common.map(|(_, b)| {
            ((b as u64 * window.bin + window.bin).min(window.to - window.from)) as f64 / NS_PER_S
        }),
        jain: (common_rates.len() == fair_flows)
            .then(|| jain(common_rates.iter().copied()))
            .flatten(),
        jain_over_own_spans: jain(shares.iter().copied()),
        jain_mean_over_bins: (!defined.is_empty())
            .then(|| defined.iter().sum::<f64>() / defined.len() as f64),
    };
    FlowTables {
        rows,
        lines,
        other,
        fairness,
        jain_bins,
        active,
    }
}

/// The bins from the earliest first delivery of the flows in Jain's index
/// to their latest last one (of every shown flow where the index takes
/// none): the time the link was in use, without the idle time before the
/// flows start (a run's setup, a ping before the transfer) or after they
/// end. None if no such flow delivered anything.
pub(super) fn active_span(
    flows: &[(u32, Totals)],
    selected: &[bool],
    fair: &[bool],
    bins: usize,
) -> Option<(usize, usize)> {
    let over = |take: &[bool]| {
        flows
            .iter()
            .zip(take)
            .filter(|(_, t)| **t)
            .filter_map(|((_, t), _)| t.delivered_bins.span())
            .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    };
    let last = bins.saturating_sub(1) as u32;
    over(fair)
        .or_else(|| over(selected))
        .map(|(a, b)| (a.min(last) as usize, b.min(last) as usize))
}

/// The flows biggest first (by id where equal), which the selection shows,
/// and which of those Jain's index takes: those that compete for the path,
/// unless the user named the flows.
pub(super) fn rank_and_select(
    flows: HashMap<u32, Totals>,
    names: &HashMap<u32, FlowName>,
    selection: &FlowSelection,
    total_bytes: u64,
) -> (Vec<(u32, Totals)>, Vec<bool>, Vec<bool>) {
    let mut flows: Vec<(u32, Totals)> = flows.into_iter().collect();
    flows.sort_by(|a, b| {
        b.1.delivered_bytes
            .cmp(&a.1.delivered_bytes)
            .then(a.0.cmp(&b.0))
    });
    let selected: Vec<bool> = flows
        .iter()
        .enumerate()
        .map(|(rank, (id, t))| match selection {
            FlowSelection::All => true,
            FlowSelection::Significant => {
                t.delivered_bytes > 0 && t.delivered_bytes * 100 >= total_bytes
            }
            FlowSelection::Top(n) => rank < *n,
            FlowSelection::Matching(matches) => {
                matches.iter().any(|m| m.matches(*id, names.get(id)))
            }
        })
        .collect();
    let fair: Vec<bool> = flows
        .iter()
        .zip(&selected)
        .map(|((id, t), &chosen)| {
            chosen
                && (matches!(selection, FlowSelection::Matching(_)) || competes(t, names.get(id)))
        })
        .collect();
    (flows, selected, fair)
}

/// Where the flows' throughputs are told: the report window, and the
/// common window (the bins where every flow in Jain's index is active)
/// with its length and what the direction delivered in it.
pub(super) struct Windows<'a> {
    pub(super) window: &'a Window,
    pub(super) common: Option<(usize, usize)>,
    pub(super) common_s: f64,
    pub(super) common_total: Option<u64>,
}

/// The bytes of `dense` (per bin) within the common window, if there is one.
pub(super) fn common_bytes(common: Option<(usize, usize)>, dense: &[u64]) -> Option<u64> {
    common.map(|(a, b)| dense[a..=b].iter().sum::<u64>())
}

/// The row of one shown flow; `dense` its delivered bytes per bin.
pub(super) fn flow_row(
    id: u32,
    t: &Totals,
    named: Option<&FlowName>,
    fair: bool,
    windows: &Windows,
    dense: &[u64],
) -> FlowSummary {
    let from = windows.window.from;
    let seconds = |ns: Nanos| (ns - from) as f64 / NS_PER_S;
    let window_s = windows.window.seconds();
    let in_common = common_bytes(windows.common, dense);
    let common_rate = in_common
        .filter(|_| windows.common_s > 0.0)
        .map(|bytes| bytes as f64 * 8.0 / windows.common_s / 1e6);
    FlowSummary {
        flow: format!("{id:08x}"),
        name: named.map(FlowName::label),
        tuple: named.map(|n| n.entry.clone()),
        left_as: named.and_then(|n| n.exit.clone()),
        arrivals: t.arrivals,
        delivered: t.delivered,
        delivered_bytes: t.delivered_bytes,
        dropped: t.dropped(),
        drops: t.drops_by_reason(),
        first_delivery_s: t.first_delivery.map(seconds),
        last_delivery_s: t.first_delivery.map(|_| seconds(t.last_delivery)),
        throughput_mbps: t.throughput_mbps(),
        window_throughput_mbps: (window_s > 0.0)
            .then(|| t.delivered_bytes as f64 * 8.0 / window_s / 1e6),
        common_window_throughput_mbps: common_rate,
        common_window_share: in_common
            .zip(windows.common_total)
            .filter(|&(_, total)| total > 0)
            .map(|(bytes, total)| bytes as f64 / total as f64),
        loss: t.loss(),
        one_way_delay: DelayStats::of(&t.delay),
        marks: t.marks(),
        in_fairness: fair,
    }
}

/// Jain's index per bin over the flows active in that bin (`active`: each
/// flow's span of bins and its bytes per bin); with several flows, only
/// bins where two or more share the path count (a flow alone is trivially
/// fair to itself).
pub(super) fn jain_per_bin(active: &[((u32, u32), Vec<u64>)], bins: usize) -> Vec<Option<f64>> {
    let needed = active.len().min(2);
    (0..bins)
        .map(|b| {
            let rates: Vec<f64> = active
                .iter()
                .filter(|((first, last), _)| (*first as usize..=*last as usize).contains(&b))
                .map(|(_, dense)| dense[b] as f64)
                .collect();
            (rates.len() >= needed).then(|| jain(rates)).flatten()
        })
        .collect()
}

/// The longest pure TCP acknowledgement: an IPv6 header (40 bytes), a TCP
/// header (20) and the most options (40).
pub(super) const LONGEST_PURE_ACK: u64 = 100;

/// Whether a flow competes for the path, and so takes a place in Jain's
/// index: it carries data of its own. Not a probe (ICMP: a ping shares the
/// path but asks for no share of it), and not an acknowledgement stream
/// (its packets no bigger than a pure acknowledgement, on average): a
/// reverse flow's acknowledgements, a few hundred kbit/s beside bulk flows
/// of tens of Mbit/s, counted as a starved third flow and took two equal
/// flows' index from 1.00 to 0.69 (and shortened the common window to the
/// reverse flow's life).
pub(super) fn competes(t: &Totals, name: Option<&FlowName>) -> bool {
    let probe = name.is_some_and(|n| matches!(n.entry.protocol, 1 | 58));
    let acknowledgements = t.delivered > 0 && t.delivered_bytes <= LONGEST_PURE_ACK * t.delivered;
    !probe && !acknowledgements
}

/// The bins where every flow of `spans` (first and last bin with a
/// delivery) is active, None if some flow delivered nothing or they never
/// overlap.
pub(super) fn common_window(
    spans: impl Iterator<Item = Option<(u32, u32)>>,
    bins: usize,
) -> Option<(usize, usize)> {
    let mut window: Option<(u32, u32)> = None;
    for span in spans {
        let (first, last) = span?;
        window = Some(match window {
            None => (first, last),
            Some((a, b)) => (a.max(first), b.min(last)),
        });
    }
    // A delivery exactly at the window's end falls one past the last bin.
    let last = bins.saturating_sub(1) as u32;
    window
        .map(|(a, b)| (a, b.min(last)))
        .filter(|(a, b)| a <= b)
        .map(|(a, b)| (a as usize, b as usize))
}
