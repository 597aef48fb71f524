//! TCP's own view of a run beside the packets': the kernel's TCP_INFO
//! samples (smoothed RTT, cwnd) that `emu run` and `emu SHELL --tcp-info`
//! write, matched to the log's named flows by 5-tuple.
//!
//! The samples are CSV files in a `tcp/` directory (one per flow from
//! `emu run`, one for every socket from `--tcp-info`), each row one socket
//! at one moment with the columns the samplers write (`time_s`, `inode`,
//! `src`, `sport`, `dst`, `dport`, ..., `srtt_us`, `cwnd`, ...). Times are
//! seconds from `flows_started_monotonic_ns` in the directory's
//! `clock.json`, so they can be placed on the packet log's clock.
//!
//! srtt is not the one-way delay of the packets: it is the sender's
//! smoothed estimate of a round trip, both directions of the path, plus
//! the time the receiver holds its delayed ACKs and the time the data and
//! ACKs spend in the two hosts' stacks and queues. A table shows both, so
//! a reader sees how far apart they are.

use crate::analysis::summary::DelayStats;
use crate::experiments::results_dir::{CLOCK, TCP_DIR};
use crate::experiments::results_schema::Clock;
use crate::measures::statistics::Distribution;
use emu_core::flow::FlowTuple;
use emu_core::Nanos;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// One socket's samples over a run.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSocket {
    pub source: IpAddr,
    pub source_port: u16,
    pub destination: IpAddr,
    pub destination_port: u16,
    /// The kernel's inode: tells apart two sockets on one port pair.
    pub inode: u32,
    pub congestion_control: String,
    /// (time in s on the report's clock, srtt in ms, cwnd in packets).
    pub samples: Vec<(f64, f64, u32)>,
    pub min_rtt_ms: Option<f64>,
    pub bytes_acked: u64,
}

impl TcpSocket {
    /// `tcp 10.0.0.2:40312 → 10.0.0.1:5201`, as flows are named.
    pub fn label(&self) -> String {
        let end = |a: &IpAddr, p: u16| match a {
            IpAddr::V6(_) => format!("[{a}]:{p}"),
            IpAddr::V4(_) => format!("{a}:{p}"),
        };
        format!(
            "tcp {} → {}",
            end(&self.source, self.source_port),
            end(&self.destination, self.destination_port)
        )
    }

    /// Whether a flow's tuple is this connection, in either direction (its
    /// data one way, its ACKs the other).
    pub fn is_flow(&self, tuple: &FlowTuple) -> bool {
        tuple.protocol == 6
            && ((tuple.source == self.source
                && tuple.source_port == self.source_port
                && tuple.destination == self.destination
                && tuple.destination_port == self.destination_port)
                || (tuple.source == self.destination
                    && tuple.source_port == self.destination_port
                    && tuple.destination == self.source
                    && tuple.destination_port == self.source_port))
    }
}

/// What a report says about one socket.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TcpSummary {
    /// `tcp SRC:PORT → DST:PORT` as the sampled socket has it.
    pub socket: String,
    pub inode: u32,
    pub congestion_control: String,
    pub samples: usize,
    /// The smoothed RTT over the samples (nearest-rank percentiles), ms.
    pub srtt: Option<DelayStats>,
    /// The kernel's minimum RTT at the last sample, ms.
    pub min_rtt_ms: Option<f64>,
    pub cwnd_mean: Option<f64>,
    pub cwnd_max: Option<u32>,
    pub bytes_acked: u64,
    /// The log's flows this connection's packets are, per direction
    /// (`uplink: tcp 10.0.0.2:40312 → 10.0.0.1:5201 (60f4b6f5)`).
    pub flows: Vec<String>,
    /// The median one-way delays of its two directions' packets added up:
    /// the round trip the path alone gave it, to set beside srtt.
    pub path_rtt_p50_ms: Option<f64>,
}

/// Nearest-rank statistics of values in ms.
fn stats(values: &[f64]) -> Option<DelayStats> {
    let d = Distribution::of(values)?;
    Some(DelayStats {
        count: d.samples as u64,
        mean_ms: d.mean,
        min_ms: d.min,
        p50_ms: d.p50,
        p95_ms: d.p95,
        p99_ms: d.p99,
        max_ms: d.max,
    })
}

impl TcpSummary {
    pub fn of(socket: &TcpSocket) -> TcpSummary {
        let srtts: Vec<f64> = socket.samples.iter().map(|s| s.1).collect();
        let cwnds: Vec<u32> = socket.samples.iter().map(|s| s.2).collect();
        TcpSummary {
            socket: socket.label(),
            inode: socket.inode,
            congestion_control: socket.congestion_control.clone(),
            samples: socket.samples.len(),
            srtt: stats(&srtts),
            min_rtt_ms: socket.min_rtt_ms,
            cwnd_mean: (!cwnds.is_empty())
                .then(|| cwnds.iter().map(|&c| c as f64).sum::<f64>() / cwnds.len() as f64),
            cwnd_max: cwnds.iter().copied().max(),
            bytes_acked: socket.bytes_acked,
            flows: Vec::new(),
            path_rtt_p50_ms: None,
        }
    }
}

/// Reads one samples file. `offset_s` is added to every time (the
/// sampling clock's start on the report's clock). Rows are grouped into
/// sockets by 5-tuple; rows without an RTT yet (srtt 0, a
/// socket still connecting or already closed) are left out of the series.
// Long: one reading per column of the samples file, each with its error, then the rows grouped by
// socket.
pub fn parse_csv(text: &str, offset_s: f64) -> Result<Vec<TcpSocket>, String> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else {
        return Ok(Vec::new());
    };
    let columns: Vec<&str> = header.split(',').map(str::trim).collect();
    let column = |name: &str| {
        columns
            .iter()
            .position(|c| *c == name)
            .ok_or_else(|| format!("no '{name}' column in the header '{header}'"))
    };
    let [time, inode, src, sport, dst, dport, cc, srtt, cwnd, min_rtt, acked] = [
        "time_s",
        "inode",
        "src",
        "sport",
        "dst",
        "dport",
        "congestion_control",
        "srtt_us",
        "cwnd",
        "min_rtt_us",
        "bytes_acked",
    ]
    .map(column);
    let (time, inode, src, sport, dst, dport, cc, srtt, cwnd, min_rtt, acked) = (
        time?, inode?, src?, sport?, dst?, dport?, cc?, srtt?, cwnd?, min_rtt?, acked?,
    );
    // By 5-tuple: a socket's inode reads 0 once it is closing (TIME_WAIT),
    // and one run rarely reuses a port pair.
    let mut sockets: BTreeMap<(String, u16, String, u16), TcpSocket> = BTreeMap::new();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let bad = |what: &str| format!("line {}: {what} in '{line}'", n + 1);
        let get = |i: usize| {
            fields
                .get(i)
                .map(|f| f.trim())
                .ok_or_else(|| bad("a column is missing"))
        };
        let number = |i: usize| -> Result<f64, String> {
            get(i)?.parse::<f64>().map_err(|_| bad("not a number"))
        };
        let address = |i: usize| -> Result<IpAddr, String> {
            get(i)?.parse::<IpAddr>().map_err(|_| bad("not an address"))
        };
        let key = (
            get(src)?.to_string(),
            number(sport)? as u16,
            get(dst)?.to_string(),
            number(dport)? as u16,
        );
        let socket_inode = number(inode)? as u32;
        let socket = match sockets.entry(key.clone()) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(TcpSocket {
                source: address(src)?,
                source_port: key.1,
                destination: address(dst)?,
                destination_port: key.3,
                inode: socket_inode,
                congestion_control: get(cc)?.to_string(),
                samples: Vec::new(),
                min_rtt_ms: None,
                bytes_acked: 0,
            }),
        };
        if socket.inode == 0 {
            socket.inode = socket_inode;
        }
        // The last sample's: a program sets its congestion control on the
        // socket after the kernel made it with the default, and a sample
        // taken in between named the default.
        socket.congestion_control = get(cc)?.to_string();
        let srtt_us = number(srtt)?;
        if srtt_us > 0.0 {
            socket.samples.push((
                number(time)? + offset_s,
                srtt_us / 1e3,
                number(cwnd)? as u32,
            ));
            let min = number(min_rtt)?;
            if min > 0.0 {
                socket.min_rtt_ms = Some(min / 1e3);
            }
        }
        socket.bytes_acked = socket.bytes_acked.max(number(acked)? as u64);
    }
    Ok(sockets
        .into_values()
        .filter(|s| !s.samples.is_empty())
        .collect())
}

/// Where the TCP samples of a log directory are: its own `tcp/` (a shell
/// run with `--tcp-info`), or that of the run directory two levels up (an
/// `emu run` directory keeps each link's logs in `links/NAME/`).
pub fn samples_dir(log_dir: &Path) -> Option<PathBuf> {
    let own = log_dir.join(TCP_DIR);
    if own.is_dir() && log_dir.join(CLOCK).is_file() {
        return Some(own);
    }
    let run = log_dir.parent()?.parent()?;
    (run.join(TCP_DIR).is_dir() && run.join(CLOCK).is_file()).then(|| run.join(TCP_DIR))
}

/// Every socket sampled in `tcp_dir` (whose parent holds `clock.json`),
/// with times on a report clock whose 0 is the monotonic instant `origin`.
pub fn load(tcp_dir: &Path, origin: Nanos) -> Result<Vec<TcpSocket>, String> {
    let run = tcp_dir.parent().unwrap_or(Path::new("."));
    let clock_path = run.join(CLOCK);
    let clock: Clock = std::fs::read_to_string(&clock_path)
        .map_err(|e| format!("{}: {e}", clock_path.display()))
        .and_then(|t| {
            serde_json::from_str(&t).map_err(|e| format!("{}: {e}", clock_path.display()))
        })?;
    let start = clock.flows_started_monotonic_ns.ok_or_else(|| {
        format!(
            "{}: no flows_started_monotonic_ns, so the TCP samples cannot be placed in time",
            clock_path.display()
        )
    })?;
    let offset_s = (start as i128 - origin as i128) as f64 / 1e9;
    let mut files: Vec<PathBuf> = std::fs::read_dir(tcp_dir)
        .map_err(|e| format!("{}: {e}", tcp_dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    let mut sockets = Vec::new();
    for path in files {
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        sockets.extend(parse_csv(&text, offset_s).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    Ok(sockets)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "time_s,inode,src,sport,dst,dport,state,congestion_control,srtt_us,rttvar_us,min_rtt_us,cwnd,ssthresh,mss,unacked,lost,total_retrans,pacing_rate_Bps,delivery_rate_Bps,bytes_acked,bytes_received,bytes_sent,bytes_retrans,delivered,delivered_ce,ecn,ecn_seen";

    fn row(t: f64, inode: u32, sport: u16, srtt_us: u32, cwnd: u32) -> String {
        format!("{t:.4},{inode},10.0.0.2,{sport},10.0.0.1,5201,1,cubic,{srtt_us},0,80000,{cwnd},0,1448,0,0,0,0,0,{},0,0,0,0,0,0,0", t as u64 * 1000)
    }

    #[test]
    fn rows_group_into_sockets_placed_on_the_report_clock() {
        let text = [
            HEADER.to_string(),
            row(0.0, 7, 40000, 0, 10),
            row(0.1, 7, 40000, 81_000, 10),
            row(0.2, 7, 40000, 85_000, 14),
            row(0.1, 8, 40002, 90_000, 20),
            // Closing: the kernel reports inode 0; still the same socket.
            row(0.3, 0, 40000, 86_000, 14),
        ]
        .join("\n");
        let sockets = parse_csv(&text, 2.0).unwrap();
        assert_eq!(sockets.len(), 2);
        let first = &sockets[0];
        assert_eq!(first.label(), "tcp 10.0.0.2:40000 → 10.0.0.1:5201");
        // The row without an RTT yet is left out.
        assert_eq!(first.samples.len(), 3);
        assert_eq!(first.samples[..2], [(2.1, 81.0, 10), (2.2, 85.0, 14)]);
        assert_eq!(first.inode, 7);
        assert_eq!(first.min_rtt_ms, Some(80.0));
        let summary = TcpSummary::of(first);
        assert_eq!(summary.srtt.as_ref().unwrap().p50_ms, 85.0);
        assert_eq!(summary.cwnd_max, Some(14));
        let tuple = FlowTuple {
            protocol: 6,
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            source_port: 5201,
            destination_port: 40000,
        };
        assert!(
            first.is_flow(&tuple),
            "the ACK direction is the same connection"
        );
        assert!(!sockets[1].is_flow(&tuple));
    }

    /// The first sample can predate the program's choice of congestion
    /// control (the kernel's default, bbr here); the connection ran cubic.
    #[test]
    fn the_congestion_control_is_the_last_samples() {
        let text = [
            HEADER.to_string(),
            row(0.0, 7, 40000, 0, 10).replace(",cubic,", ",bbr,"),
            row(0.1, 7, 40000, 81_000, 10),
            row(0.2, 7, 40000, 85_000, 14),
        ]
        .join("\n");
        let sockets = parse_csv(&text, 0.0).unwrap();
        assert_eq!(sockets[0].congestion_control, "cubic");
    }

    #[test]
    fn a_damaged_file_is_named() {
        let err = parse_csv("time_s,inode\n1,2\n", 0.0).unwrap_err();
        assert!(err.contains("no 'src' column"), "{err}");
        let bad = format!(
            "{HEADER}\n{}",
            row(0.1, 7, 40000, 1, 1).replace("10.0.0.2", "ten")
        );
        assert!(parse_csv(&bad, 0.0).unwrap_err().contains("not an address"));
    }
}
