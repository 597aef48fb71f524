//! One repetition of one cell, on real namespaces: the phases in order.
//!
//! The hosts are made, every link direction becomes a `link::Link` with
//! its own log (`links`), and the fabric's two lanes carry the packets, a
//! thread each (see `shells::dumbbell`). The flows run on the control
//! plane (`control`), which never touches a packet. When the run ends,
//! every process left in the hosts is stopped, the fabric stops, each
//! link's accounting is written next to its log (`accounting`) and the
//! flows' figures are taken from their samples and the logs (`measure`).

use super::accounting::write_accounting;
use super::control::{run_flows, ControlPlane};
use super::links::{build_links, topology, Links};
use super::measure::{count_path_marks, measure_paths};
use super::repetition::{io_error, RunError, RunInfo};
use super::system;
use crate::file::{Plan, Side};
use crate::results::measured::{Assignments, RunResult};
use crate::run::timing;
use fabric::Fabric;
use report::experiments::results_dir;
use shells::dumbbell::{FabricThread, Host, HostSetup};
use shells::guardian::Guardian;
use std::path::Path;

/// Runs `plan` once, writing into `dir`. `interrupted` is set by the
/// caller's signal handling; the run then stops as soon as it can.
pub fn run_once(
    plan: &Plan,
    dir: &Path,
    info: &RunInfo,
    guardian: &mut Guardian,
    control: &mut ControlPlane,
) -> Result<RunResult, RunError> {
    for sub in [
        results_dir::LINKS_DIR,
        results_dir::FLOWS_DIR,
        results_dir::TCP_DIR,
    ] {
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
    system::kill_left_in(&hosts);
    drop(hosts);
    outcome
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

    system::kill_left_in(hosts);
    let result = thread.stop()?;
    let lost = writer
        .finish()
        .map_err(|e| RunError::Failed(format!("writing the packet logs: {e}")))?
        .records_lost;
    let (timing_warnings, verdict) = timing(plan, &result);
    let accounting_ok =
        write_accounting(plan, dir, (&names, start), &result, (lost, &verdict), hosts)?;
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
        sweep: Assignments(info.sweep.clone()),
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

/// What a run's timing calls for saying, and its verdict on it (see
/// [`crate::run::timing`]): each host's deliveries and each lane's time
/// held off a CPU, against the bottleneck queues' finest time scale.
fn timing(plan: &Plan, result: &shells::dumbbell::FabricResult) -> (Vec<String>, timing::Verdict) {
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
                held_ns: lane.held_ns?,
                over_ns: lane.over_ns,
            })
        })
        .collect();
    let queue = finest_queue_scale(plan);
    (
        timing::warnings(&hosts, &lanes, queue.as_ref()),
        timing::verdict(&hosts, &lanes, queue.as_ref()),
    )
}

/// The finest time scale any bottleneck queue decides on, either way,
/// with the bottleneck's name as the results give it.
fn finest_queue_scale(plan: &Plan) -> Option<timing::QueueScale> {
    plan.bottlenecks
        .iter()
        .enumerate()
        .flat_map(|(i, directions)| {
            directions.iter().filter_map(move |d| {
                Some(timing::QueueScale {
                    link: results_dir::bottleneck_link(i),
                    scale: d.finest_queue_time_scale()?,
                })
            })
        })
        .min_by_key(|q| q.scale.ns)
}
