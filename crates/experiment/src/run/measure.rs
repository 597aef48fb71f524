//! A finished run's flows measured: their figures from the programs'
//! output and TCP_INFO samples, their connections counted, and the marks
//! and paths the links' logs show.

use super::repetition::RunError;
use crate::file::{kind_name, FlowKind, FlowPlan, Plan};
use crate::results::flow_paths::{self, FlowClaim};
use crate::results::marks::{self, FlowEnds};
use crate::results::measured::{Distribution, FlowResult, WholeFlow};
use crate::run::flows;
use emu_core::time::NS_PER_SEC;
use emu_core::Nanos;
use report::experiments::results_dir::{link_log, side_link};
use shells::tcp_info::TcpSample;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Gives each TCP and UDP flow the CE marks the links put on its packets
/// (see [`crate::results::marks`]); the logs are read only if a link marked any
/// (`marked`, the links' own count).
pub(super) fn count_path_marks(
    plan: &Plan,
    dir: &Path,
    names: &[(String, [usize; 2])],
    marked: u64,
    flows: &mut [FlowResult],
) -> Result<(), RunError> {
    let counted: Vec<(usize, FlowEnds)> = plan
        .flows
        .iter()
        .enumerate()
        .filter(|(_, f)| matches!(f.kind, FlowKind::Tcp | FlowKind::Udp))
        .filter_map(|(i, f)| {
            let to = f.to?;
            let hosts = [f.from, to].map(|h| IpAddr::V4(plan.hosts[h].address));
            Some((
                i,
                FlowEnds {
                    hosts,
                    port: f.port,
                },
            ))
        })
        .collect();
    let counts = if marked == 0 {
        vec![0; counted.len()]
    } else {
        let logs: Vec<PathBuf> = names.iter().map(|(name, _)| link_log(dir, name)).collect();
        let ends: Vec<FlowEnds> = counted.iter().map(|(_, e)| *e).collect();
        marks::ce_marks(&logs, &ends)
            .map_err(|e| RunError::Failed(format!("counting the flows' CE marks: {e}")))?
    };
    for ((i, _), n) in counted.iter().zip(counts) {
        if let Some(flow) = flows.iter_mut().find(|r| r.name == plan.flows[*i].name) {
            flow.ce_marks = Some(n);
        }
    }
    Ok(())
}

/// Gives every flow with a receiver its tuples and the links' figures (see
/// [`crate::results::flow_paths`]).
pub(super) fn measure_paths(
    plan: &Plan,
    dir: &Path,
    flows: &mut [FlowResult],
) -> Result<(), RunError> {
    let measured: Vec<(usize, FlowClaim)> = plan
        .flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, flow_claim(plan, dir, f)?)))
        .collect();
    let claims: Vec<FlowClaim> = measured.iter().map(|(_, c)| c.clone()).collect();
    let found = flow_paths::measure(&claims)
        .map_err(|e| RunError::Failed(format!("measuring the flows on the links: {e}")))?;
    for ((i, _), on_path) in measured.iter().zip(found) {
        if let Some(flow) = flows.iter_mut().find(|r| r.name == plan.flows[*i].name) {
            flow.tuples = on_path.tuples;
            flow.path = Some(on_path.figures);
        }
    }
    Ok(())
}

/// How `flow` is told apart on the path, and its two side links' logs.
pub(super) fn flow_claim(plan: &Plan, dir: &Path, flow: &FlowPlan) -> Option<FlowClaim> {
    let to = flow.to?;
    let (from_host, to_host) = (&plan.hosts[flow.from], &plan.hosts[to]);
    Some(FlowClaim {
        from: IpAddr::V4(from_host.address),
        to: IpAddr::V4(to_host.address),
        port: (flow.kind != FlowKind::Ping).then_some(flow.port),
        icmp: flow.kind == FlowKind::Ping,
        takes_the_rest: matches!(flow.kind, FlowKind::Pantheon | FlowKind::Command),
        entry: link_log(dir, &side_link(&from_host.name)),
        exit: link_log(dir, &side_link(&to_host.name)),
    })
}

/// The socket of a flow that carried its data (iperf3 also opens a
/// control connection to the same port): the one with most bytes acked.
/// A socket past its close reports inode 0 (it belongs to no file any
/// more): those last samples name no socket and are left out.
pub(super) fn data_socket(samples: &[(f64, TcpSample)]) -> Option<u32> {
    samples
        .iter()
        .filter(|(_, s)| s.inode != 0)
        .max_by_key(|(_, s)| s.bytes_acked)
        .map(|(_, s)| s.inode)
}

/// What the helpers and the congestion control kept of the flow's data
/// socket in the namespace whose cookie is `netns` (None where they kept
/// nothing, or where the namespace's cookie could not be read).
pub(super) fn connection_counts(
    counts: &[endpoints::feedback::SceCounts],
    netns: Option<u64>,
    samples: &[(f64, TcpSample)],
) -> Option<endpoints::feedback::SceCounts> {
    let netns = netns?;
    let inode = data_socket(samples)?;
    let (_, socket) = samples.iter().find(|(_, s)| s.inode == inode)?;
    let local: std::net::IpAddr = socket.src.parse().ok()?;
    let remote: std::net::IpAddr = socket.dst.parse().ok()?;
    counts
        .iter()
        .find(|c| {
            c.netns == netns
                && c.local == std::net::SocketAddr::new(local, socket.sport)
                && c.remote == std::net::SocketAddr::new(remote, socket.dport)
        })
        .copied()
}

/// The smoothed RTTs (ms) of the samples `timed` (seconds into the run) of
/// a flow's data socket, past the start-up (`omit` after its `start`) its
/// goodput leaves out, so that both describe the same seconds; all of them
/// where it omits nothing or no sample falls past it (a flow that ended
/// early).
pub(super) fn steady_srtts(timed: &[&(f64, TcpSample)], start: Nanos, omit: Nanos) -> Vec<f64> {
    let from = (start + omit) as f64 / NS_PER_SEC as f64;
    let srtt = |s: &TcpSample| s.srtt_us as f64 / 1e3;
    let past: Vec<f64> = timed
        .iter()
        .filter(|(time, _)| *time >= from)
        .map(|(_, s)| srtt(s))
        .collect();
    if omit == 0 || past.is_empty() {
        return timed.iter().map(|(_, s)| srtt(s)).collect();
    }
    past
}

/// The flow's whole life from the samples `timed` (seconds into the run)
/// of its data socket: the mean of every smoothed RTT, start-up included,
/// and the bytes acknowledged by its last sample over the time from its
/// `start` to that sample. None without samples.
pub(super) fn whole_flow(timed: &[&(f64, TcpSample)], start: Nanos) -> Option<WholeFlow> {
    let (last_time, last) = timed.last()?;
    let srtts: Vec<f64> = timed.iter().map(|(_, s)| s.srtt_us as f64 / 1e3).collect();
    let lived = last_time - start as f64 / NS_PER_SEC as f64;
    Some(WholeFlow {
        srtt_mean_ms: srtts.iter().sum::<f64>() / srtts.len() as f64,
        throughput_bps: (lived > 0.0).then(|| last.bytes_acked as f64 * 8.0 / lived),
        samples: srtts.len(),
    })
}

pub(super) fn flow_result(
    plan: &Plan,
    flow: &FlowPlan,
    dir: &Path,
    samples: Option<Vec<(f64, TcpSample)>>,
    ended: String,
) -> FlowResult {
    let mut result = FlowResult {
        name: flow.name.clone(),
        kind: kind_name(flow.kind).to_string(),
        from: plan.hosts[flow.from].name.clone(),
        to: flow.to.map(|t| plan.hosts[t].name.clone()),
        congestion_control: None,
        ended,
        ..FlowResult::default()
    };
    let output = std::fs::read_to_string(flows::output_path(dir, flow)).unwrap_or_default();
    match flow.kind {
        FlowKind::Tcp | FlowKind::Udp => {
            let report = flows::iperf_report(&output, flow.kind);
            result.goodput_bps = report.goodput_bps;
            result.lost_percent = report.lost_percent;
            result.retransmits = report.retransmits;
        }
        FlowKind::Ping => {
            let (rtts, lost) = flows::ping_report(&output);
            result.ping_rtt_ms = Distribution::of(&rtts);
            result.lost_percent = lost;
        }
        FlowKind::Command | FlowKind::Pantheon => {}
    }
    if let Some(samples) = samples {
        if let Some(inode) = data_socket(&samples) {
            let timed: Vec<&(f64, TcpSample)> = samples
                .iter()
                .filter(|(_, s)| s.inode == inode && s.srtt_us > 0)
                .collect();
            let own: Vec<&TcpSample> = timed.iter().map(|(_, s)| s).collect();
            let srtts = steady_srtts(&timed, flow.start, flow.omit);
            // Without a program that reports it (a Pantheon scheme), the
            // goodput is what the sender's socket saw acknowledged between
            // its first and last samples.
            if let (None, Some((t0, first)), Some((t1, last))) =
                (result.goodput_bps, timed.first(), timed.last())
            {
                if t1 > t0 {
                    result.goodput_bps = Some(
                        last.bytes_acked.saturating_sub(first.bytes_acked) as f64 * 8.0 / (t1 - t0),
                    );
                }
            }
            result.srtt_ms = Distribution::of(&srtts);
            result.whole_flow = whole_flow(&timed, flow.start);
            if let Some(last) = own.last() {
                result.min_rtt_ms = Some(last.min_rtt_us as f64 / 1e3);
                result.ece_acked = Some(last.delivered_ce as u64);
                result.ecn = Some(last.ecn);
                result.congestion_control = Some(last.congestion_control.clone());
                result.retransmits = result.retransmits.or(Some(last.total_retrans as u64));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::{connection_counts, steady_srtts, whole_flow};
    use shells::tcp_info::TcpSample;

    /// A flow started 1 s into the run with 3 s omitted: its srtt is taken
    /// from 4 s on, where its goodput is; omitting nothing, or a flow that
    /// ended before 4 s, keeps every sample.
    #[test]
    fn the_srtt_leaves_out_the_omitted_start_up() {
        let samples: Vec<(f64, TcpSample)> =
            [(1.5, 80_000), (3.9, 60_000), (4.0, 21_000), (5.0, 22_000)]
                .into_iter()
                .map(|(time, srtt_us)| {
                    (
                        time,
                        TcpSample {
                            srtt_us,
                            ..TcpSample::default()
                        },
                    )
                })
                .collect();
        let timed: Vec<&(f64, TcpSample)> = samples.iter().collect();
        let s = 1_000_000_000;
        assert_eq!(steady_srtts(&timed, s, 3 * s), vec![21.0, 22.0]);
        assert_eq!(steady_srtts(&timed, s, 0), vec![80.0, 60.0, 21.0, 22.0]);
        assert_eq!(steady_srtts(&timed[..2], s, 3 * s), vec![80.0, 60.0]);
    }

    /// The whole flow keeps the start-up that `omit` leaves out of
    /// `srtt_ms`: a flow started 1 s into the run, sampled at 1.5, 2, 3
    /// and 5 s with 500 kB acknowledged by the last, averages all four
    /// RTTs and moved 4 Mbit over its 4 s.
    #[test]
    fn the_whole_flow_keeps_its_start_up() {
        let samples: Vec<(f64, TcpSample)> = [
            (1.5, 80_000, 10_000),
            (2.0, 40_000, 100_000),
            (3.0, 20_000, 300_000),
            (5.0, 20_000, 500_000),
        ]
        .into_iter()
        .map(|(time, srtt_us, bytes_acked)| {
            (
                time,
                TcpSample {
                    srtt_us,
                    bytes_acked,
                    ..TcpSample::default()
                },
            )
        })
        .collect();
        let timed: Vec<&(f64, TcpSample)> = samples.iter().collect();
        let s = 1_000_000_000;
        let whole = whole_flow(&timed, s).unwrap();
        assert_eq!(whole.srtt_mean_ms, 40.0);
        assert_eq!(whole.samples, 4);
        assert_eq!(whole.throughput_bps, Some(1e6));
        // The steady figure, past 3 s omitted, is another one.
        assert_eq!(steady_srtts(&timed, s, 2 * s), vec![20.0, 20.0]);
        // No time past the start: no rate.
        assert_eq!(whole_flow(&timed[..1], 2 * s).unwrap().throughput_bps, None);
        assert_eq!(whole_flow(&[], s), None);
    }

    /// A flow's SCE counts are those of its own namespace's connection,
    /// though another namespace has one on the same addresses and ports.
    #[test]
    fn the_esce_count_is_the_senders_namespaces() {
        let socket = TcpSample {
            src: "10.0.0.1".into(),
            sport: 40000,
            dst: "10.0.0.2".into(),
            dport: 5201,
            inode: 7,
            bytes_acked: 1,
            ..TcpSample::default()
        };
        let samples = vec![(1.0, socket)];
        let counts = |netns, esce_acked_bytes| endpoints::feedback::SceCounts {
            netns,
            local: "10.0.0.1:40000".parse().unwrap(),
            remote: "10.0.0.2:5201".parse().unwrap(),
            esce_acked_bytes,
            classic_ecn_max: 0,
        };
        let both = [counts(11, 500), counts(12, 900)];
        let esce = |netns| connection_counts(&both, netns, &samples).map(|c| c.esce_acked_bytes);
        assert_eq!(esce(Some(12)), Some(900));
        assert_eq!(esce(Some(11)), Some(500));
        assert_eq!(esce(Some(13)), None);
        assert_eq!(esce(None), None);
    }
}
