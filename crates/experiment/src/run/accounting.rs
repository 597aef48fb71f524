//! A run's accounting, written next to its links' logs: per link
//! direction, read or arrived = delivered + dropped + queued, with the
//! kernel's and the receivers' drops beside it.

use super::repetition::{io_error, RunError};
use crate::file::Plan;
use emu_core::log::{Direction, DropReason};
use emu_core::Nanos;
use report::experiments::results_dir;
use shells::dumbbell::Host;
use shells::receiver_drops::udp_buffer_drops;
use std::path::Path;

/// Per link direction: read or arrived = delivered + dropped + queued.
pub(super) fn write_accounting(
    plan: &Plan,
    dir: &Path,
    (names, origin): (&[(String, [usize; 2])], Nanos),
    result: &shells::dumbbell::FabricResult,
    (log_lost, timing): (u64, &super::timing::Verdict),
    hosts: &[Host],
) -> Result<bool, RunError> {
    let fabric = &result.fabric;
    let mut ok = true;
    let mut entries = Vec::new();
    for (name, ids) in names {
        for (d, direction) in Direction::BOTH.into_iter().enumerate() {
            let (entry, holds) = link_entry(plan, result, name, ids[d], ids[0], direction);
            ok &= holds;
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
        "timing": timing,
        "links": entries,
    });
    let path = dir.join(results_dir::LINKS);
    std::fs::write(&path, format!("{json:#}\n")).map_err(io_error("writing", &path))?;
    Ok(ok)
}

/// One direction of one link's accounting, and whether it holds. `first`
/// is the link's uplink id: a host's side link (ids below twice the
/// hosts) also says what was read from the host and written into it.
fn link_entry(
    plan: &Plan,
    result: &shells::dumbbell::FabricResult,
    name: &str,
    id: usize,
    first: usize,
    direction: Direction,
) -> (serde_json::Value, bool) {
    let link = result.fabric.link(id);
    let c = link.counters();
    let queued = link.packets_inside();
    let holds = link.accounting_holds();
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
    let host = first / 2;
    if first < 2 * plan.hosts.len() {
        match direction {
            Direction::Uplink => entry["read_from_host"] = result.read[host].into(),
            Direction::Downlink => {
                entry["write_errors"] = result.write_errors[host].into();
                entry["delivery_lateness"] = result.lateness[host].to_json();
            }
        }
    }
    (entry, holds)
}
