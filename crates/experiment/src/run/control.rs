//! The flows' control plane: starting each flow's programs at their
//! times on a single-threaded tokio runtime, sampling TCP_INFO, the
//! progress line, timeouts and signals. It never touches a packet.

use super::measure::{connection_counts, data_socket, flow_result};
use super::repetition::{io_error, RunError, RunInfo};
use crate::file::{FlowKind, PantheonSide, Plan};
use crate::results::measured::FlowResult;
use crate::run::flows;
use emu_core::time::{monotonic_now, NS_PER_SEC};
use report::experiments::results_dir;
use shells::dumbbell::Host;
use shells::netns;
use shells::tcp_info::{DiagSocket, TcpSample};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

/// Time the receivers get to start listening before the first flow.
const RECEIVER_HEAD_START: Duration = Duration::from_millis(300);
/// How long a flow's program may run past its end before it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// The control plane's runtime and the signals that stop a run, made once
/// per session: installed before the first host exists, Ctrl-C never
/// finds emu without its handler.
pub struct ControlPlane {
    pub(super) runtime: tokio::runtime::Runtime,
    pub(super) sigint: tokio::signal::unix::Signal,
    pub(super) sigterm: tokio::signal::unix::Signal,
    pub(super) interrupted: bool,
    /// emu's congestion controls the session's plans name, loaded for all
    /// its runs; each run attaches their helpers to its hosts.
    pub endpoints: Option<endpoints::Loaded>,
}

impl ControlPlane {
    /// A single-threaded runtime (it starts no thread of its own, so the
    /// guardian may be forked before or after it).
    pub fn new() -> Result<ControlPlane, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the control runtime: {e}"))?;
        let _entered = runtime.enter();
        let sigint =
            signal(SignalKind::interrupt()).map_err(|e| format!("handling SIGINT: {e}"))?;
        let sigterm =
            signal(SignalKind::terminate()).map_err(|e| format!("handling SIGTERM: {e}"))?;
        drop(_entered);
        Ok(ControlPlane {
            runtime,
            sigint,
            sigterm,
            interrupted: false,
            endpoints: None,
        })
    }

    /// Ctrl-C or SIGTERM arrived.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }
}

/// What the control plane keeps of one flow while it runs.
pub(super) struct FlowState {
    pub(super) samples: Vec<(f64, TcpSample)>,
    /// Buffered: a sample round is one write per file, not one per row.
    csv: std::io::BufWriter<std::fs::File>,
}

/// Runs the flows of one repetition: the receivers first, then each
/// sender at its time, sampling the TCP senders' sockets meanwhile, until
/// every flow has ended (or a signal stops the run); then what each flow
/// measured.
pub(super) async fn run_flows(
    plan: &Plan,
    dir: &Path,
    info: &RunInfo,
    hosts: &[Host],
    sigint: &mut tokio::signal::unix::Signal,
    sigterm: &mut tokio::signal::unix::Signal,
    endpoints: Option<&endpoints::Loaded>,
) -> Result<Vec<FlowResult>, RunError> {
    let mut interrupted = false;
    let servers = start_receivers(plan, dir, hosts)?;
    tokio::time::sleep(RECEIVER_HEAD_START).await;
    let t0 = tokio::time::Instant::now();
    let t0_mono = monotonic_now();
    shells::tcp_info::write_clock(dir, t0_mono)
        .map_err(io_error("writing", &dir.join(results_dir::CLOCK)))?;
    let mut tasks = start_senders(plan, dir, hosts, t0);
    let (mut states, mut sockets) = open_samples(plan, dir, hosts)?;
    let mut ticker = tokio::time::interval(Duration::from_nanos(plan.run.sample_interval.0));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut progress = tokio::time::interval(Duration::from_secs(1));
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let show_progress = std::io::stderr().is_terminal();
    let mut ended: Vec<String> = vec![String::new(); plan.flows.len()];
    let mut last_acked: Vec<u64> = vec![0; plan.flows.len()];
    loop {
        tokio::select! {
            done = tasks.join_next() => match done {
                Some(Ok((index, how))) => ended[index] = how,
                Some(Err(e)) => return Err(RunError::Failed(format!("a flow's task failed: {e}"))),
                None => break,
            },
            _ = ticker.tick() => sample_tcp(plan, &mut sockets, &mut states, t0.elapsed().as_secs_f64()),
            _ = progress.tick(), if show_progress => {
                let line = progress_line(plan, info, t0.elapsed().as_secs_f64(), &states, &mut last_acked);
                eprint!("\r\x1b[K{}", fit_to_width(&line, shells::terminal_size().1));
            },
            _ = sigint.recv() => interrupted = true,
            _ = sigterm.recv() => interrupted = true,
        }
        if interrupted {
            tasks.abort_all();
            break;
        }
    }
    if show_progress {
        eprint!("\r\x1b[K");
    }
    for state in states.iter_mut().flatten() {
        // A full disk loses samples, never the run.
        let _ = state.csv.flush();
    }
    for mut server in servers {
        crate::run::system::kill(&mut server).await;
    }
    if interrupted {
        return Err(RunError::Interrupted);
    }
    let counts = counts_per_flow(plan, hosts, endpoints, &states);
    Ok(plan
        .flows
        .iter()
        .zip(states)
        .zip(ended)
        .zip(counts)
        .map(|(((flow, state), ended), counts)| {
            let mut result = flow_result(plan, flow, dir, state.map(|s| s.samples), ended);
            crate::run::congestion::add_counts(&mut result, flow, counts.as_ref());
            result
        })
        .collect())
}

/// Per flow, what the helpers and its congestion control kept of its
/// data connection (see [`connection_counts`]), read once after the
/// flows ended.
fn counts_per_flow(
    plan: &Plan,
    hosts: &[Host],
    endpoints: Option<&endpoints::Loaded>,
    states: &[Option<FlowState>],
) -> Vec<Option<endpoints::feedback::SceCounts>> {
    let Some(counts) = endpoints.map(|loaded| loaded.sce_counts()) else {
        return vec![None; plan.flows.len()];
    };
    // The helpers key each connection by its namespace too: another emu's
    // hosts may use the same addresses and ports at the same time.
    plan.flows
        .iter()
        .zip(states)
        .map(|(flow, state)| {
            let samples = &state.as_ref()?.samples;
            let cookie = hosts[flow.from].namespace.cookie().ok();
            connection_counts(&counts, cookie, samples)
        })
        .collect()
}

/// The receivers of the flows that have one, each on its host.
pub(super) fn start_receivers(
    plan: &Plan,
    dir: &Path,
    hosts: &[Host],
) -> Result<Vec<tokio::process::Child>, RunError> {
    let mut servers = Vec::new();
    for flow in &plan.flows {
        if let Some(command) = flows::receiver(plan, flow, dir) {
            let host = &hosts[flow.to.expect("a receiver has a host")];
            servers.push(
                crate::run::system::spawn(&host.namespace, &command).map_err(RunError::Failed)?,
            );
        }
    }
    Ok(servers)
}

/// A task per flow that starts its sender (or a Pantheon scheme's two
/// sides) at its time, counted from `t0`, and says how it ended.
pub(super) fn start_senders(
    plan: &Plan,
    dir: &Path,
    hosts: &[Host],
    t0: tokio::time::Instant,
) -> tokio::task::JoinSet<(usize, String)> {
    let mut tasks = tokio::task::JoinSet::new();
    for (index, flow) in plan.flows.iter().enumerate() {
        let start = t0 + Duration::from_nanos(flow.start);
        let end = start + Duration::from_nanos(flow.duration);
        if let Some(scheme) = &flow.pantheon {
            let sides = [scheme.first, scheme.first.other()].map(|side| {
                let (host, command) = flows::pantheon_side(plan, flow, dir, side);
                (side, hosts[host].namespace.clone(), command)
            });
            let setup = Duration::from_nanos(scheme.setup_time);
            let after_reboot: Vec<_> = crate::run::pantheon::after_reboot::commands(flow, dir)
                .into_iter()
                .map(|(host, command)| (hosts[host].namespace.clone(), command))
                .collect();
            tasks.spawn(async move {
                tokio::time::sleep_until(start).await;
                crate::run::pantheon::after_reboot::run(after_reboot).await;
                (index, run_pantheon(sides, setup, end).await)
            });
            continue;
        }
        let command = flows::sender(plan, flow, dir);
        let namespace = hosts[flow.from].namespace.clone();
        let is_command = flow.kind == FlowKind::Command;
        tasks.spawn(async move {
            tokio::time::sleep_until(start).await;
            (
                index,
                run_sender(&namespace, &command, end, is_command).await,
            )
        });
    }
    tasks
}

/// Runs one sender until it ends, or past its end: a command is stopped
/// at its end; the others end by themselves and are stopped only if they
/// overstay. How it ended.
pub(super) async fn run_sender(
    namespace: &netns::NetNs,
    command: &flows::CommandLine,
    end: tokio::time::Instant,
    is_command: bool,
) -> String {
    let mut child = match crate::run::system::spawn(namespace, command) {
        Ok(child) => child,
        Err(e) => return format!("did not start: {e}"),
    };
    let deadline = if is_command { end } else { end + GRACE };
    tokio::select! {
        status = child.wait() => match status {
            Ok(s) => flows::describe(s),
            Err(e) => format!("could not be waited for: {e}"),
        },
        _ = tokio::time::sleep_until(deadline) => {
            crate::run::system::kill(&mut child).await;
            if is_command { flows::STOPPED_AT_ITS_END.to_string() } else { "killed: ran past its end".to_string() }
        }
    }
}

/// A sock_diag socket in each host (by index) that sends sampled flows.
pub(super) type Sockets = BTreeMap<usize, DiagSocket>;

/// Per flow, the file its TCP samples go to (None for flows not sampled),
/// and a sock_diag socket in each host that sends sampled flows.
pub(super) fn open_samples(
    plan: &Plan,
    dir: &Path,
    hosts: &[Host],
) -> Result<(Vec<Option<FlowState>>, Sockets), RunError> {
    let mut states: Vec<Option<FlowState>> = Vec::new();
    for flow in &plan.flows {
        if samples_tcp(flow.kind) {
            let path = results_dir::tcp_samples(dir, &flow.name);
            let mut csv = std::io::BufWriter::new(
                std::fs::File::create(&path).map_err(io_error("creating", &path))?,
            );
            writeln!(csv, "{}", flows::CSV_HEADER).map_err(io_error("writing", &path))?;
            states.push(Some(FlowState {
                samples: Vec::new(),
                csv,
            }));
        } else {
            states.push(None);
        }
    }
    let mut sockets = Sockets::new();
    for flow in plan.flows.iter().filter(|f| samples_tcp(f.kind)) {
        if let std::collections::btree_map::Entry::Vacant(slot) = sockets.entry(flow.from) {
            slot.insert(DiagSocket::open_in(&hosts[flow.from].namespace)?);
        }
    }
    Ok((states, sockets))
}

/// One round of TCP samples, `elapsed` seconds into the run: each sampled
/// socket of each host, matched to its flow by port, into the flow's file.
pub(super) fn sample_tcp(
    plan: &Plan,
    sockets: &mut Sockets,
    states: &mut [Option<FlowState>],
    elapsed: f64,
) {
    for (host, socket) in sockets.iter_mut() {
        let Ok(samples) = socket.tcp_sockets() else {
            continue;
        };
        for sample in samples {
            let Some(f) = plan.flows.iter().position(|f| {
                f.from == *host
                    && match f.kind {
                        FlowKind::Tcp => f.port == sample.dport,
                        // The sender connects to the port, or
                        // listens on it when it runs first.
                        FlowKind::Pantheon => f.port == sample.dport || f.port == sample.sport,
                        _ => false,
                    }
            }) else {
                continue;
            };
            if let Some(state) = states[f].as_mut() {
                let _ = writeln!(state.csv, "{}", flows::csv_row(elapsed, &sample));
                state.samples.push((elapsed, sample));
            }
        }
    }
}

/// Flows whose sender's TCP sockets are sampled: kernel TCP, and Pantheon
/// schemes (those that run over TCP show up; the others leave no samples).
pub(super) fn samples_tcp(kind: FlowKind) -> bool {
    matches!(kind, FlowKind::Tcp | FlowKind::Pantheon)
}

/// Runs a Pantheon scheme's two sides: the first at once, the other
/// `setup` later; both are stopped at `end` (a wrapper runs until it is
/// stopped), or when one of them ends before.
pub(super) async fn run_pantheon(
    sides: [(
        PantheonSide,
        std::sync::Arc<shells::netns::NetNs>,
        flows::CommandLine,
    ); 2],
    setup: Duration,
    end: tokio::time::Instant,
) -> String {
    let [(first_side, first_ns, first_cmd), (second_side, second_ns, second_cmd)] = sides;
    let mut first = match crate::run::system::spawn_group(&first_ns, &first_cmd) {
        Ok(child) => child,
        Err(e) => return format!("the {} did not start: {e}", first_side.name()),
    };
    let early = |side: PantheonSide, status: std::io::Result<std::process::ExitStatus>| {
        format!(
            "the {} ended before the flow's end ({})",
            side.name(),
            match status {
                Ok(s) => flows::describe(s),
                Err(e) => e.to_string(),
            }
        )
    };
    tokio::select! {
        status = first.wait() => return early(first_side, status),
        _ = tokio::time::sleep(setup) => {}
    }
    let mut second = match crate::run::system::spawn_group(&second_ns, &second_cmd) {
        Ok(child) => child,
        Err(e) => {
            crate::run::system::stop_group(&mut first).await;
            return format!("the {} did not start: {e}", second_side.name());
        }
    };
    let ended = tokio::select! {
        status = first.wait() => early(first_side, status),
        status = second.wait() => early(second_side, status),
        _ = tokio::time::sleep_until(end) => "stopped at its end".to_string(),
    };
    crate::run::system::stop_group(&mut second).await;
    crate::run::system::stop_group(&mut first).await;
    ended
}

/// `line` cut to one character less than `columns`, so a terminal never
/// wraps it (a wrapped line leaves debris that `\r` cannot clear).
pub(super) fn fit_to_width(line: &str, columns: usize) -> String {
    line.chars().take(columns.saturating_sub(1)).collect()
}

pub(super) fn progress_line(
    plan: &Plan,
    info: &RunInfo,
    elapsed: f64,
    states: &[Option<FlowState>],
    last_acked: &mut [u64],
) -> String {
    let total = plan.run.duration.0 as f64 / NS_PER_SEC as f64;
    let mut rates = Vec::new();
    for (f, state) in states.iter().enumerate() {
        let Some(state) = state else { continue };
        let acked = data_socket(&state.samples)
            .and_then(|inode| {
                state
                    .samples
                    .iter()
                    .rev()
                    .find(|(_, s)| s.inode == inode)
                    .map(|(_, s)| s.bytes_acked)
            })
            .unwrap_or(0);
        let delta = acked.saturating_sub(last_acked[f]);
        last_acked[f] = acked;
        rates.push(format!(
            "{} {:.1}",
            plan.flows[f].name,
            delta as f64 * 8.0 / 1e6
        ));
    }
    let left = (total - elapsed).max(0.0) + info.later_seconds;
    format!(
        "{} of {} cells done  cell {} run {}/{}  {:.0}/{:.0} s  {} Mbit/s  about {} left",
        info.cells_done,
        info.cells_all,
        info.cell,
        info.run + 1,
        info.runs,
        elapsed.min(total),
        total,
        rates.join("  "),
        crate::run::progress::duration_text(left)
    )
}

#[cfg(test)]
mod tests {
    use super::fit_to_width;

    #[test]
    fn the_progress_line_fits_the_terminal() {
        let line = "3 of 123 cells done  cell 1 run 1/1  12/30 s  cubic 24.1  prague 25.3 Mbit/s  about 2 h 58 min left";
        assert_eq!(fit_to_width(line, 200), line);
        let cut = fit_to_width(line, 40);
        assert_eq!(cut.chars().count(), 39);
        assert!(line.starts_with(&cut));
        // Characters, not bytes: a name in any script is cut whole.
        assert_eq!(fit_to_width("débit ± écart", 6), "débit");
        assert_eq!(fit_to_width("x", 0), "");
    }
}
