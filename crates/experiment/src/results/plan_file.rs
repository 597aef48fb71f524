//! A cell's plan and an experiment's meta, as their files hold them
//! (`plan.json`, `meta.json`; the types are the report's, which reads
//! them back).

use crate::file::{self, DirectionPlan, Plan};
use emu_core::time::format_duration;
use report::experiments::results_schema::{
    BottleneckFile, DirectionFile, FlowFile, HostFile, PlanFile,
};

/// The plan `plan.json` holds.
pub fn plan_file(plan: &Plan) -> PlanFile {
    PlanFile {
        name: plan.name.clone(),
        duration: format_duration(plan.run.duration.0),
        seed: plan.run.seed,
        runs: Some(plan.run.runs),
        sample_interval: format_duration(plan.run.sample_interval.0),
        mtu: plan.run.mtu,
        hosts: plan
            .hosts
            .iter()
            .map(|h| HostFile {
                name: h.name.clone(),
                side: format!("{:?}", h.side).to_lowercase(),
                address: Some(h.address.to_string()),
                sysctls: h.sysctls.clone(),
                up: direction_file(&h.up),
                down: direction_file(&h.down),
            })
            .collect(),
        bottlenecks: plan
            .bottlenecks
            .iter()
            .map(|[f, r]| BottleneckFile {
                forward: direction_file(f),
                reverse: direction_file(r),
            })
            .collect(),
        flows: plan
            .flows
            .iter()
            .map(|f| FlowFile {
                name: f.name.clone(),
                kind: file::kind_name(f.kind).to_string(),
                from: plan.hosts[f.from].name.clone(),
                to: f.to.map(|t| plan.hosts[t].name.clone()),
                cc: f.cc.clone(),
                rate_bps: f.rate.map(|r| r.0.bits_per_sec()),
                ecn: format!("{:?}", f.ecn),
                start: format_duration(f.start),
                duration: format_duration(f.duration),
                bytes: f.bytes,
                port: f.port,
                command: f.command.clone(),
            })
            .collect(),
    }
}

/// One direction of a link, as `plan.json` shows it.
fn direction_file(d: &DirectionPlan) -> DirectionFile {
    let (server, rate_bps) = match &d.server {
        link::Server::Unlimited => ("unlimited".to_string(), None),
        link::Server::Rate(r) => (
            format!("{} bit/s", r.bits_per_sec()),
            Some(r.bits_per_sec()),
        ),
        link::Server::Trace { trace, .. } => (
            format!("trace, period {}", format_duration(trace.period())),
            None,
        ),
        link::Server::Schedule(_) => ("rate schedule".to_string(), None),
    };
    DirectionFile {
        delay: format_duration(d.delay),
        server: Some(server),
        rate_bps,
        queue: serde_json::to_value(&d.queue).unwrap_or_default(),
        loss: format!("{:?}", d.loss),
        overhead: d.overhead,
        dynamics: (!d.dynamics.is_none()).then(|| format!("{:?}", d.dynamics)),
    }
}
