//! One repetition of one cell, on real namespaces.
//!
//! The hosts are made, every link direction becomes a `link::Link` with its
//! own log, and the fabric's two lanes carry the packets, a thread each
//! (see `shells::dumbbell`). The control plane — starting each flow's programs
//! at their times, sampling TCP_INFO, timeouts, signals — runs on a
//! single-threaded tokio runtime and never touches a packet. When the run
//! ends, every process left in the hosts is killed, the fabric stops and
//! each link's accounting is written next to its log.

use crate::file::{kind_name, DirectionPlan, FlowKind, FlowPlan, PantheonSide, Plan, Side};
use crate::results::flow_paths::{self, FlowClaim};
use crate::results::marks::{self, FlowEnds};
use crate::results::measured::{Distribution, FlowResult, RunResult};
use crate::run::flows;
use crate::run::timing;
use emu_core::log::{Direction, DropReason, LogWriter};
use emu_core::time::{monotonic_now, realtime_now, NS_PER_SEC};
use emu_core::Nanos;
use fabric::{Fabric, Topology};
use link::Link;
use shells::dumbbell::{FabricThread, Host, HostSetup};
use shells::guardian::Guardian;
use shells::links::{copy_traces, LinkSetup};
use shells::netns;
use shells::receiver_drops::udp_buffer_drops;
use shells::tcp_info::{DiagSocket, TcpSample};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Time the receivers get to start listening before the first flow.
const RECEIVER_HEAD_START: Duration = Duration::from_millis(300);
/// How long a flow's program may run past its end before it is killed.
const GRACE: Duration = Duration::from_secs(10);

/// The control plane's runtime and the signals that stop a run, made once
/// per session: installed before the first host exists, Ctrl-C never
/// finds emu without its handler.
pub struct ControlPlane {
    runtime: tokio::runtime::Runtime,
    sigint: tokio::signal::unix::Signal,
    sigterm: tokio::signal::unix::Signal,
    interrupted: bool,
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

/// Which run this is, for the progress line and the results.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub cell: usize,
    pub cells: usize,
    pub cell_label: String,
    pub run: u32,
    pub runs: u32,
    pub seed: u64,
    /// Seconds the runs still to come after this one will take.
    pub later_seconds: f64,
}

/// Why a run did not finish.
#[derive(Debug)]
pub enum RunError {
    /// Ctrl-C or SIGTERM: the run stopped early; its results are partial.
    Interrupted,
    Failed(String),
}

impl From<shells::ShellError> for RunError {
    fn from(e: shells::ShellError) -> RunError {
        RunError::Failed(e.to_string())
    }
}

fn io_error(doing: &str, path: &Path) -> impl FnOnce(std::io::Error) -> RunError {
    let what = format!("{doing} {}", path.display());
    move |e| RunError::Failed(format!("{what}: {e}"))
}

/// Runs `plan` once, writing into `dir`. `interrupted` is set by the
/// caller's signal handling; the run then stops as soon as it can.
pub fn run_once(
    plan: &Plan,
    dir: &Path,
    info: &RunInfo,
    guardian: &mut Guardian,
    control: &mut ControlPlane,
) -> Result<RunResult, RunError> {
    for sub in ["links", "flows", "tcp"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(io_error("creating", &path))?;
    }
    let mut hosts = Vec::new();
    for (index, host) in plan.hosts.iter().enumerate() {
        hosts.push(Host::create(
            &HostSetup {
                name: host.name.clone(),
                address: host.address,
                prefix: 24,
                mtu: plan.run.mtu,
                offload: plan.run.offload,
                sysctls: crate::run::congestion::host_sysctls(
                    plan,
                    index,
                    control.endpoints.is_some(),
                ),
            },
            guardian,
        )?);
    }
    // The flows' settings stay handed to their connections while this
    // value lives: to the end of the run.
    let _settings = match &control.endpoints {
        Some(loaded) => {
            crate::run::congestion::attach(loaded, &hosts).map_err(RunError::Failed)?;
            Some(crate::run::congestion::apply(loaded, plan, &hosts).map_err(RunError::Failed)?)
        }
        None => None,
    };
    let identities: Vec<(u64, u64)> = hosts
        .iter()
        .filter_map(|h| h.namespace.identity().ok())
        .collect();
    // The hosts' programs resolve names as the machine does, while the
    // run lasts.
    let _names = shells::dns::prepare_hosts(
        &hosts
            .iter()
            .map(|h| h.namespace.as_ref())
            .collect::<Vec<_>>(),
    );
    let outcome = run_with_hosts(plan, dir, info, &hosts, control);
    // Whatever is left in the hosts goes, whatever happened.
    netns::kill_processes_in(&identities);
    drop(hosts);
    outcome
}

/// The links of a run, in the fabric's order, with their names and logs.
struct Links {
    models: Vec<Link>,
    /// Per link (both directions): name, and its (uplink, downlink) ids.
    names: Vec<(String, [usize; 2])>,
    writer: LogWriter,
    start: Nanos,
}

/// One link (both directions) of a plan: its name, description, the two
/// directions and their ids in the fabric's numbering.
struct PlannedLink<'a> {
    name: String,
    description: String,
    directions: [&'a DirectionPlan; 2],
    ids: [usize; 2],
}

/// The name of host `host`'s side link.
fn side_link(host: &str) -> String {
    format!("side-{host}")
}

/// Every link of `plan`: each host's side link (uplink from the host),
/// then the bottlenecks (uplink left to right).
fn planned_links(plan: &Plan) -> Vec<PlannedLink<'_>> {
    let hosts = plan.hosts.len();
    let mut links = Vec::new();
    for (h, host) in plan.hosts.iter().enumerate() {
        links.push(PlannedLink {
            name: side_link(&host.name),
            description: format!(
                "side link of {}: uplink from the host, downlink to it",
                host.name
            ),
            directions: [&host.up, &host.down],
            ids: [2 * h, 2 * h + 1],
        });
    }
    for (b, [forward, reverse]) in plan.bottlenecks.iter().enumerate() {
        links.push(PlannedLink {
            name: format!("bottleneck-{b}"),
            description: format!("bottleneck {b}: uplink left to right, downlink right to left"),
            directions: [forward, reverse],
            ids: [2 * hosts + 2 * b, 2 * hosts + 2 * b + 1],
        });
    }
    links
}

impl PlannedLink<'_> {
    fn setup<'a>(
        &self,
        plan: &Plan,
        directions: &'a [DirectionPlan; 2],
        seed: u64,
        start: Nanos,
    ) -> LinkSetup<'a> {
        LinkSetup {
            shell: 0,
            directions,
            seed,
            streams: self.ids.map(|id| id as u64),
            max_packet: plan.run.mtu as usize,
            start,
        }
    }
}

/// The plan's topology.
fn topology(plan: &Plan) -> Result<Topology, String> {
    Topology::new(
        plan.hosts
            .iter()
            .map(|h| {
                let side = match h.side {
                    Side::Left => fabric::Side::Left,
                    Side::Right => fabric::Side::Right,
                };
                (side, h.address)
            })
            .collect(),
        plan.bottlenecks.len(),
    )
    .map_err(|e| e.to_string())
}

/// The fabric of `plan` without logs, starting at `start`: the same links
/// a run builds (`shells::links`), for running the plan in virtual time.
pub fn virtual_fabric(plan: &Plan, seed: u64, start: Nanos) -> Result<Fabric, String> {
    let mut slots: Vec<Option<Link>> = (0..2 * plan.hosts.len() + 2 * plan.bottlenecks.len())
        .map(|_| None)
        .collect();
    for link in planned_links(plan) {
        let directions = link.directions.map(Clone::clone);
        let setup = link.setup(plan, &directions, seed, start);
        for d in 0..2 {
            slots[link.ids[d]] = Some(setup.build(d, emu_core::log::LogSink::disabled()));
        }
    }
    let models = slots
        .into_iter()
        .map(|l| l.expect("every link direction was built"))
        .collect();
    Fabric::new(topology(plan)?, models).map_err(|e| e.to_string())
}

fn build_links(plan: &Plan, dir: &Path, seed: u64) -> Result<Links, RunError> {
    let mut writer = LogWriter::new();
    let start = monotonic_now();
    let mut slots: Vec<Option<Link>> = (0..2 * plan.hosts.len() + 2 * plan.bottlenecks.len())
        .map(|_| None)
        .collect();
    let mut names = Vec::new();
    for link in planned_links(plan) {
        let link_dir = dir.join("links").join(&link.name);
        std::fs::create_dir_all(&link_dir).map_err(io_error("creating", &link_dir))?;
        let directions = link.directions.map(Clone::clone);
        let setup = link.setup(plan, &directions, seed, start);
        let header = setup.log_header(
            format!("{}; seed {seed}", link.description),
            format!("emu run ({})", plan.name),
            realtime_now(),
            copy_traces(&link_dir, "0", &directions)?,
        );
        let path = link_log(dir, &link.name);
        let file = writer
            .add_file(&path, &header)
            .map_err(io_error("creating", &path))?;
        for d in 0..2 {
            slots[link.ids[d]] = Some(setup.build(d, writer.sink(file)));
        }
        names.push((link.name, link.ids));
    }
    let models = slots
        .into_iter()
        .map(|l| l.expect("every link direction was built"))
        .collect();
    Ok(Links {
        models,
        names,
        writer,
        start,
    })
}

fn run_with_hosts(
    plan: &Plan,
    dir: &Path,
    info: &RunInfo,
    hosts: &[Host],
    control: &mut ControlPlane,
) -> Result<RunResult, RunError> {
    let Links {
        models,
        names,
        mut writer,
        start,
    } = build_links(plan, dir, info.seed)?;
    let topology = topology(plan).map_err(RunError::Failed)?;
    let fabric = Fabric::new(topology, models).map_err(|e| RunError::Failed(e.to_string()))?;
    writer.start();
    let thread = FabricThread::start(fabric, hosts, plan.run.slack.0)?;

    let ControlPlane {
        runtime,
        sigint,
        sigterm,
        interrupted,
        endpoints,
    } = control;
    let control = runtime.block_on(run_flows(
        plan,
        dir,
        info,
        hosts,
        sigint,
        sigterm,
        endpoints.as_ref(),
    ));
    if matches!(control, Err(RunError::Interrupted)) {
        *interrupted = true;
    }

    let identities: Vec<(u64, u64)> = hosts
        .iter()
        .filter_map(|h| h.namespace.identity().ok())
        .collect();
    netns::kill_processes_in(&identities);
    let result = thread.stop()?;
    let lost = writer
        .finish()
        .map_err(|e| RunError::Failed(format!("writing the packet logs: {e}")))?
        .records_lost;
    let accounting_ok = write_accounting(plan, dir, (&names, start), &result, lost, hosts)?;
    let timing_warnings = timing_warnings(plan, &result);
    let mut flows = control?;
    let marked: u64 = names
        .iter()
        .flat_map(|(_, ids)| ids)
        .map(|&id| result.fabric.link(id).counters().marked_ce)
        .sum();
    count_path_marks(plan, dir, &names, marked, &mut flows)?;
    measure_paths(plan, dir, &mut flows)?;
    let left_to_right: Vec<bool> = plan
        .flows
        .iter()
        .map(|f| plan.hosts[f.from].side == Side::Left)
        .collect();
    Ok(RunResult {
        cell: info.cell,
        cell_label: info.cell_label.clone(),
        run: info.run,
        seed: info.seed,
        flows,
        jain_index: None,
        jain_flows: Vec::new(),
        jain_measure: Default::default(),
        accounting_ok,
        timing_warnings,
    }
    .with_jain(&left_to_right))
}

/// What a run's timing calls for saying (see [`crate::run::timing`]): each
/// host's deliveries and each lane's time held off a CPU.
fn timing_warnings(plan: &Plan, result: &shells::dumbbell::FabricResult) -> Vec<String> {
    let hosts: Vec<timing::HostLateness> = plan
        .hosts
        .iter()
        .zip(&result.lateness)
        .map(|(host, late)| timing::HostLateness {
            host: &host.name,
            packets: late.count(),
            p99_ns: late.quantile_ns(0.99),
            max_ns: late.max_ns(),
        })
        .collect();
    let lanes: Vec<timing::LaneHeld> = result
        .held
        .iter()
        .filter_map(|lane| {
            Some(timing::LaneHeld {
                lane: match lane.side {
                    fabric::Side::Left => "left",
                    fabric::Side::Right => "right",
                },
                held_ns: lane.waited_ns?,
                over_ns: lane.over_ns,
            })
        })
        .collect();
    timing::warnings(&hosts, &lanes)
}

/// Where the packet log of link `name` of a run in `dir` goes.
fn link_log(dir: &Path, name: &str) -> PathBuf {
    dir.join("links").join(name).join("0-link.emulog")
}

/// Gives each TCP and UDP flow the CE marks the links put on its packets
/// (see [`crate::results::marks`]); the logs are read only if a link marked any
/// (`marked`, the links' own count).
fn count_path_marks(
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
fn measure_paths(plan: &Plan, dir: &Path, flows: &mut [FlowResult]) -> Result<(), RunError> {
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
fn flow_claim(plan: &Plan, dir: &Path, flow: &FlowPlan) -> Option<FlowClaim> {
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

/// Per link direction: read or arrived = delivered + dropped + queued.
fn write_accounting(
    plan: &Plan,
    dir: &Path,
    (names, origin): (&[(String, [usize; 2])], Nanos),
    result: &shells::dumbbell::FabricResult,
    log_lost: u64,
    hosts: &[Host],
) -> Result<bool, RunError> {
    let fabric = &result.fabric;
    let mut ok = true;
    let mut entries = Vec::new();
    for (name, ids) in names {
        for (d, direction) in Direction::BOTH.into_iter().enumerate() {
            let link = fabric.link(ids[d]);
            let c = link.counters();
            let queued = link.packets_inside();
            let holds = link.accounting_holds();
            ok &= holds;
            let dropped: serde_json::Map<String, serde_json::Value> = DropReason::ALL
                .iter()
                .map(|r| (r.name().to_string(), c.dropped_by(*r).into()))
                .collect();
            let mut entry = serde_json::json!({
                "link": name,
                "direction": direction.name(),
                "arrived": c.arrived,
                "arrived_bytes": c.arrived_bytes,
                "delivered": c.delivered,
                "delivered_bytes": c.delivered_bytes,
                "dropped": dropped,
                "queued_at_exit": queued,
                "marked_ce": c.marked_ce,
                "marked_ect1": c.marked_ect1,
                "duplicated": c.duplicated,
                "corrupted": c.corrupted,
                "queue": link.queue_description(),
                "accounting_holds": holds,
            });
            let host = ids[0] / 2;
            if ids[0] < 2 * plan.hosts.len() {
                match direction {
                    Direction::Uplink => entry["read_from_host"] = result.read[host].into(),
                    Direction::Downlink => {
                        entry["write_errors"] = result.write_errors[host].into();
                        entry["delivery_lateness"] = result.lateness[host].to_json();
                    }
                }
            }
            entries.push(entry);
        }
    }
    // Every packet read from a host entered its side link or was counted
    // as addressed to nobody.
    let read: u64 = result.read.iter().sum();
    let entered: u64 = (0..plan.hosts.len())
        .map(|h| fabric.link(2 * h).counters().arrived)
        .sum();
    ok &= read == entered + fabric.unroutable();
    // What each host's receiving sockets dropped of what the fabric
    // delivered, their buffers full (see `shells::receiver_drops`): a
    // UDP flow's loss that happened past the path. Each host's namespace
    // was made for this run, so its counters are the run's.
    let receivers: Vec<serde_json::Value> = hosts
        .iter()
        .map(|h| {
            serde_json::json!({
                "host": h.name,
                "udp_buffer_drops": udp_buffer_drops(&h.namespace),
            })
        })
        .collect();
    let json = serde_json::json!({
        "read_from_hosts": read,
        "unroutable": fabric.unroutable(),
        "receivers": receivers,
        "log_records_lost": log_lost,
        "monotonic_origin_ns": origin,
        "accounting_holds": ok,
        "links": entries,
    });
    let path = dir.join("links.json");
    std::fs::write(&path, format!("{json:#}\n")).map_err(io_error("writing", &path))?;
    Ok(ok)
}

/// What the control plane keeps of one flow while it runs.
struct FlowState {
    samples: Vec<(f64, TcpSample)>,
    /// Buffered: a sample round is one write per file, not one per row.
    csv: std::io::BufWriter<std::fs::File>,
}

/// Runs the flows of one repetition: the receivers first, then each
/// sender at its time, sampling the TCP senders' sockets meanwhile, until
/// every flow has ended (or a signal stops the run); then what each flow
/// measured.
async fn run_flows(
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
        .map_err(io_error("writing", &dir.join("clock.json")))?;
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
        let _ = server.start_kill();
        let _ = server.wait().await;
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
fn start_receivers(
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
fn start_senders(
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
            tasks.spawn(async move {
                tokio::time::sleep_until(start).await;
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
async fn run_sender(
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
            let _ = child.start_kill();
            let _ = child.wait().await;
            if is_command { flows::STOPPED_AT_ITS_END.to_string() } else { "killed: ran past its end".to_string() }
        }
    }
}

/// A sock_diag socket in each host (by index) that sends sampled flows.
type Sockets = BTreeMap<usize, DiagSocket>;

/// Per flow, the file its TCP samples go to (None for flows not sampled),
/// and a sock_diag socket in each host that sends sampled flows.
fn open_samples(
    plan: &Plan,
    dir: &Path,
    hosts: &[Host],
) -> Result<(Vec<Option<FlowState>>, Sockets), RunError> {
    let mut states: Vec<Option<FlowState>> = Vec::new();
    for flow in &plan.flows {
        if samples_tcp(flow.kind) {
            let path = dir.join("tcp").join(format!("{}.csv", flow.name));
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
fn sample_tcp(plan: &Plan, sockets: &mut Sockets, states: &mut [Option<FlowState>], elapsed: f64) {
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
fn samples_tcp(kind: FlowKind) -> bool {
    matches!(kind, FlowKind::Tcp | FlowKind::Pantheon)
}

/// Runs a Pantheon scheme's two sides: the first at once, the other
/// `setup` later; both are stopped at `end` (a wrapper runs until it is
/// stopped), or when one of them ends before.
async fn run_pantheon(
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
fn fit_to_width(line: &str, columns: usize) -> String {
    line.chars().take(columns.saturating_sub(1)).collect()
}

fn progress_line(
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
        "cell {}/{} run {}/{}  {:.0}/{:.0} s  {} Mbit/s  ~{:.0} s left",
        info.cell + 1,
        info.cells,
        info.run + 1,
        info.runs,
        elapsed.min(total),
        total,
        rates.join("  "),
        left
    )
}

/// The socket of a flow that carried its data (iperf3 also opens a
/// control connection to the same port): the one with most bytes acked.
/// A socket past its close reports inode 0 (it belongs to no file any
/// more): those last samples name no socket and are left out.
fn data_socket(samples: &[(f64, TcpSample)]) -> Option<u32> {
    samples
        .iter()
        .filter(|(_, s)| s.inode != 0)
        .max_by_key(|(_, s)| s.bytes_acked)
        .map(|(_, s)| s.inode)
}

/// What the helpers and the congestion control kept of the flow's data
/// socket in the namespace whose cookie is `netns` (None where they kept
/// nothing, or where the namespace's cookie could not be read).
fn connection_counts(
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
fn steady_srtts(timed: &[&(f64, TcpSample)], start: Nanos, omit: Nanos) -> Vec<f64> {
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

fn flow_result(
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

/// Where a run of a cell goes: `OUT/cell-K/run-R`.
pub fn run_dir(out: &Path, cell: usize, run: u32) -> PathBuf {
    out.join(format!("cell-{cell}")).join(format!("run-{run}"))
}

#[cfg(test)]
mod tests {
    use super::{connection_counts, fit_to_width, steady_srtts};
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

    #[test]
    fn the_progress_line_fits_the_terminal() {
        let line = "cell 1/45 run 1/1  12/30 s  cubic 24.1  prague 25.3 Mbit/s  ~1380 s left";
        assert_eq!(fit_to_width(line, 200), line);
        let cut = fit_to_width(line, 40);
        assert_eq!(cut.chars().count(), 39);
        assert!(line.starts_with(&cut));
        // Characters, not bytes: a name in any script is cut whole.
        assert_eq!(fit_to_width("débit ± écart", 6), "débit");
        assert_eq!(fit_to_width("x", 0), "");
    }
}
