//! The programs behind each kind of flow, and what their output says.
//!
//! TCP and UDP flows are iperf3 (a one-off server on the receiving host, a
//! client on the sending host, JSON output); a latency probe is ping; a
//! command flow is the user's own command through `sh -c`, told the
//! experiment's addresses in its environment; a Pantheon flow is the
//! scheme's wrapper, its two sides on the two hosts.

use crate::file::{FlowKind, FlowPlan, PantheonSide, Plan};
use emu_core::time::NS_PER_SEC;
use report::experiments::results_dir;
use std::path::{Path, PathBuf};

pub use super::system::CommandLine;

/// Where a flow's sending program writes its output.
pub fn output_path(dir: &Path, flow: &FlowPlan) -> PathBuf {
    let extension = match flow.kind {
        FlowKind::Tcp | FlowKind::Udp => "json",
        FlowKind::Ping | FlowKind::Command => "out",
        FlowKind::Pantheon => "sender.out",
    };
    results_dir::flow_file(dir, &flow.name, extension)
}

/// One side of a Pantheon flow: the host it runs on and its program
/// (`WRAPPER SIDE PORT` for the side that runs first, `WRAPPER SIDE IP
/// PORT` for the other, IP being the first side's host; a Python wrapper
/// through [`crate::run::wrappers`]).
pub fn pantheon_side(
    plan: &Plan,
    flow: &FlowPlan,
    dir: &Path,
    side: PantheonSide,
) -> (usize, CommandLine) {
    let scheme = flow.pantheon.as_ref().expect("checked: a wrapper");
    let to = flow.to.expect("checked: a receiver");
    let host = |side: PantheonSide| match side {
        PantheonSide::Sender => flow.from,
        PantheonSide::Receiver => to,
    };
    // Planning asked the wrapper run_first the same way, so the launcher
    // is in place; were it not, the wrapper's own error says so.
    let mut argv = crate::run::wrappers::command(&scheme.wrapper)
        .unwrap_or_else(|_| vec![scheme.wrapper.display().to_string()]);
    argv.push(side.name().to_string());
    if side != scheme.first {
        argv.push(plan.hosts[host(scheme.first)].address.to_string());
    }
    argv.push(flow.port.to_string());
    let file = |suffix: &str| {
        results_dir::flow_file(dir, &flow.name, &format!("{}.{suffix}", side.name()))
    };
    (
        host(side),
        CommandLine {
            argv,
            env: crate::run::pantheon::after_reboot::environment(dir, flow),
            stdout: file("out"),
            stderr: file("err"),
        },
    )
}

/// Whole seconds, at least one (iperf3 and ping count in seconds).
fn seconds(ns: u64) -> String {
    ns.div_ceil(NS_PER_SEC).max(1).to_string()
}

/// The receiving side of a flow, if it has one.
pub fn receiver(plan: &Plan, flow: &FlowPlan, dir: &Path) -> Option<CommandLine> {
    if !matches!(flow.kind, FlowKind::Tcp | FlowKind::Udp) {
        return None;
    }
    let to = plan.hosts[flow.to?].address.to_string();
    let file = |suffix: &str| results_dir::flow_file(dir, &flow.name, suffix);
    Some(CommandLine {
        argv: [
            "iperf3",
            "--server",
            "--one-off",
            "--port",
            &flow.port.to_string(),
            "--bind",
            &to,
        ]
        .map(String::from)
        .to_vec(),
        env: Vec::new(),
        // Not with_extension: a name like `bulk.0` has a dot of its own.
        stdout: file("server.out"),
        stderr: file("server.err"),
    })
}

/// The sending side of a flow.
// Long: one arm per kind of flow, each the command line of its program.
pub fn sender(plan: &Plan, flow: &FlowPlan, dir: &Path) -> CommandLine {
    let from = plan.hosts[flow.from].address.to_string();
    let to = flow.to.map(|t| plan.hosts[t].address.to_string());
    let stdout = output_path(dir, flow);
    let stderr = results_dir::flow_file(dir, &flow.name, "err");
    let mut argv: Vec<String> = Vec::new();
    let mut env = Vec::new();
    match flow.kind {
        FlowKind::Tcp | FlowKind::Udp => {
            argv.extend(
                [
                    "iperf3",
                    "--client",
                    to.as_deref().expect("checked: a receiver"),
                    "--port",
                    &flow.port.to_string(),
                    "--bind",
                    &from,
                    "--json",
                ]
                .map(String::from),
            );
            match flow.bytes {
                Some(bytes) => argv.extend(["--bytes".into(), bytes.to_string()]),
                None => argv.extend(["--time".into(), seconds(flow.duration - flow.omit)]),
            }
            if flow.omit > 0 {
                argv.extend(["--omit".into(), seconds(flow.omit)]);
            }
            if flow.kind == FlowKind::Tcp {
                if let Some(cc) = &flow.cc {
                    argv.extend(["--congestion".into(), cc.clone()]);
                }
                if flow.tos != 0 {
                    // Linux keeps a TCP socket's ECN bits its own (IP_TOS
                    // sets only the DSCP of a stream socket).
                    argv.extend(["--tos".into(), flow.tos.to_string()]);
                }
            } else {
                let rate = flow.rate.expect("checked: a UDP rate").0.bits_per_sec();
                argv.extend([
                    "--udp".into(),
                    "--bitrate".into(),
                    rate.to_string(),
                    "--length".into(),
                    flow.size.to_string(),
                    "--tos".into(),
                    flow.ecn.bits().to_string(),
                ]);
            }
        }
        FlowKind::Ping => {
            let interval = flow.interval as f64 / NS_PER_SEC as f64;
            argv.extend(
                [
                    "ping",
                    "-n",
                    "-i",
                    &format!("{interval}"),
                    "-w",
                    &seconds(flow.duration),
                    "-I",
                    &from,
                    to.as_deref().expect("checked: a receiver"),
                ]
                .map(String::from),
            );
        }
        FlowKind::Pantheon => return pantheon_side(plan, flow, dir, PantheonSide::Sender).1,
        FlowKind::Command => {
            argv.extend([
                "sh".into(),
                "-c".into(),
                flow.command.clone().expect("checked: a command"),
            ]);
            env.push(("EMU_HOST".into(), plan.hosts[flow.from].name.clone()));
            env.push(("EMU_ADDR".into(), from));
            if let Some(to) = to {
                env.push(("EMU_PEER".into(), to));
            }
            env.push(("EMU_PORT".into(), flow.port.to_string()));
            if let Some(cc) = &flow.cc {
                env.push(("EMU_CC".into(), cc.clone()));
            }
            env.push((
                "EMU_DURATION".into(),
                format!("{}", flow.duration as f64 / NS_PER_SEC as f64),
            ));
            for host in &plan.hosts {
                env.push((
                    format!(
                        "EMU_HOST_{}",
                        host.name.to_uppercase().replace(['-', '.'], "_")
                    ),
                    host.address.to_string(),
                ));
            }
        }
    }
    CommandLine {
        argv,
        env,
        stdout,
        stderr,
    }
}

/// How a flow's program that did its work ends (see [`describe`] and the
/// runner): by itself with status 0, or stopped at its end (a command).
pub fn ended_well(ended: &str) -> bool {
    ended == "exit 0" || ended == STOPPED_AT_ITS_END
}

/// How a command stopped when its time was up is said to have ended.
pub const STOPPED_AT_ITS_END: &str = "stopped at its end";

/// How a program ended, in words.
pub fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "ended".to_string(),
    }
}

/// What iperf3's JSON says about a flow.
#[derive(Debug, Default, PartialEq)]
pub struct IperfReport {
    pub goodput_bps: Option<f64>,
    pub lost_percent: Option<f64>,
    pub retransmits: Option<u64>,
}

/// Reads a client's `--json` output: the receiver's goodput (for UDP, the
/// datagrams that arrived), retransmits and loss.
pub fn iperf_report(output: &str, kind: FlowKind) -> IperfReport {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(output) else {
        return IperfReport::default();
    };
    let end = &json["end"];
    match kind {
        FlowKind::Tcp => IperfReport {
            goodput_bps: end["sum_received"]["bits_per_second"].as_f64(),
            lost_percent: None,
            retransmits: end["sum_sent"]["retransmits"].as_u64(),
        },
        _ => {
            let lost = end["sum"]["lost_percent"].as_f64();
            let received = end["sum_received"]["bits_per_second"].as_f64();
            let sent = end["sum"]["bits_per_second"].as_f64();
            IperfReport {
                goodput_bps: received.or_else(|| Some(sent? * (1.0 - lost? / 100.0))),
                lost_percent: lost,
                retransmits: None,
            }
        }
    }
}

/// Round trips (ms) and loss (%) from ping's output.
pub fn ping_report(output: &str) -> (Vec<f64>, Option<f64>) {
    let rtts = output
        .lines()
        .filter(|l| l.contains("icmp_seq="))
        .filter_map(|l| {
            let at = l.find("time=")? + 5;
            l[at..].split_whitespace().next()?.parse::<f64>().ok()
        })
        .collect();
    let lost = output
        .lines()
        .find(|l| l.contains("packet loss"))
        .and_then(|l| {
            l.split(',')
                .find(|part| part.contains("packet loss"))?
                .trim()
                .split('%')
                .next()?
                .parse::<f64>()
                .ok()
        });
    (rtts, lost)
}

/// The TCP_INFO samples' file format, shared with `emu SHELL --tcp-info`
/// so `emu report` reads one format.
pub use shells::tcp_info::{csv_row, CSV_HEADER};

#[cfg(test)]
mod tests {
    use super::*;
    use shells::tcp_info::TcpSample;

    #[test]
    fn iperf_goodput_is_the_receivers() {
        let tcp = r#"{"end": {"sum_sent": {"bits_per_second": 11e6, "retransmits": 4},
                              "sum_received": {"bits_per_second": 10e6}}}"#;
        assert_eq!(
            iperf_report(tcp, FlowKind::Tcp),
            IperfReport {
                goodput_bps: Some(10e6),
                lost_percent: None,
                retransmits: Some(4)
            }
        );
        let udp = r#"{"end": {"sum": {"bits_per_second": 20e6, "lost_percent": 25.0}}}"#;
        let report = iperf_report(udp, FlowKind::Udp);
        assert_eq!(report.goodput_bps, Some(15e6));
        assert_eq!(report.lost_percent, Some(25.0));
        assert_eq!(
            iperf_report("iperf3: error", FlowKind::Tcp),
            IperfReport::default()
        );
    }

    #[test]
    fn ping_output_gives_round_trips_and_loss() {
        let output = "PING 10.0.0.2 (10.0.0.2) from 10.0.0.1 : 56(84) bytes of data.\n\
64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=40.3 ms\n\
64 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=41 ms\n\
\n--- 10.0.0.2 ping statistics ---\n\
3 packets transmitted, 2 received, 33.3333% packet loss, time 2003ms\n";
        let (rtts, lost) = ping_report(output);
        assert_eq!(rtts, vec![40.3, 41.0]);
        assert_eq!(lost, Some(33.3333));
    }

    #[test]
    fn every_sample_row_has_a_column_per_header() {
        let row = csv_row(1.5, &TcpSample::default());
        assert_eq!(row.split(',').count(), CSV_HEADER.split(',').count());
    }
}
