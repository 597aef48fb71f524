//! The links of a run: every host's side link and every bottleneck, one
//! `link::Link` per direction with its log, and the fabric's topology
//! that joins them.

use super::repetition::{io_error, RunError};
use crate::file::{DirectionPlan, Plan, Side};
use emu_core::log::LogWriter;
use emu_core::time::{monotonic_now, realtime_now};
use emu_core::Nanos;
use fabric::{Fabric, Topology};
use link::Link;
use report::experiments::results_dir;
use shells::links::{copy_traces, LinkSetup};
use std::path::Path;

/// The links of a run, in the fabric's order, with their names and logs.
pub(super) struct Links {
    pub(super) models: Vec<Link>,
    /// Per link (both directions): name, and its (uplink, downlink) ids.
    pub(super) names: Vec<(String, [usize; 2])>,
    pub(super) writer: LogWriter,
    pub(super) start: Nanos,
}

/// One link (both directions) of a plan: its name, description, the two
/// directions and their ids in the fabric's numbering.
pub(super) struct PlannedLink<'a> {
    name: String,
    description: String,
    directions: [&'a DirectionPlan; 2],
    ids: [usize; 2],
}

/// Every link of `plan`: each host's side link (uplink from the host),
/// then the bottlenecks (uplink left to right).
pub(super) fn planned_links(plan: &Plan) -> Vec<PlannedLink<'_>> {
    let hosts = plan.hosts.len();
    let mut links = Vec::new();
    for (h, host) in plan.hosts.iter().enumerate() {
        links.push(PlannedLink {
            name: results_dir::side_link(&host.name),
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
            name: results_dir::bottleneck_link(b),
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
pub(super) fn topology(plan: &Plan) -> Result<Topology, String> {
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

pub(super) fn build_links(plan: &Plan, dir: &Path, seed: u64) -> Result<Links, RunError> {
    let mut writer = LogWriter::new();
    let start = monotonic_now();
    let mut slots: Vec<Option<Link>> = (0..2 * plan.hosts.len() + 2 * plan.bottlenecks.len())
        .map(|_| None)
        .collect();
    let mut names = Vec::new();
    for link in planned_links(plan) {
        let link_dir = dir.join(results_dir::LINKS_DIR).join(&link.name);
        std::fs::create_dir_all(&link_dir).map_err(io_error("creating", &link_dir))?;
        let directions = link.directions.map(Clone::clone);
        let setup = link.setup(plan, &directions, seed, start);
        let header = setup.log_header(
            format!("{}; seed {seed}", link.description),
            format!("emu run ({})", plan.name),
            realtime_now(),
            copy_traces(&link_dir, "0", &directions)?,
        );
        let path = results_dir::link_log(dir, &link.name);
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
