//! What the analysis is fed: the user's options, the shells of a
//! direction, and the two event streams the readers ([`crate::logs::emu_reader`],
//! [`crate::logs::mahimahi_reader`]) make of a log. *Path* events follow a packet
//! through the whole nested path; *shell* events are one shell's view.

use crate::measures::capacity::Capacity;
use emu_core::flow::FlowTuple;
use emu_core::log::{DropReason, Mark};
use emu_core::Nanos;
use std::net::IpAddr;

/// What the user asked the report to cover.
#[derive(Debug, Clone)]
pub struct Options {
    /// Width of a time bin.
    pub bin: Nanos,
    /// Only events at or after this time (from the run's start) count.
    pub from: Nanos,
    /// Only events before this time count.
    pub to: Option<Nanos>,
    pub flows: FlowSelection,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            bin: 100_000_000,
            from: 0,
            to: None,
            flows: FlowSelection::Significant,
        }
    }
}

/// Which flows get their own rows and lines. Jain's index takes those of
/// them that compete for the path (not pings, not streams of
/// acknowledgements; see `FlowSummary::in_fairness`), or all of them when
/// the user named them ([`FlowSelection::Matching`]).
#[derive(Debug, Clone, PartialEq)]
pub enum FlowSelection {
    /// Flows that carried at least 1% of the direction's delivered bytes:
    /// the bulk flows of an experiment, without the control connections
    /// and name lookups that would drag a fairness index down.
    Significant,
    All,
    /// The N flows that delivered the most bytes.
    Top(usize),
    /// Flows that match any of these.
    Matching(Vec<FlowMatch>),
}

/// One way to pick a flow out: by its id (the hash), or by a port or an
/// address of its 5-tuple as it entered or as it left the path.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowMatch {
    Id(u32),
    Port(u16),
    Address(IpAddr),
}

impl FlowMatch {
    pub(crate) fn matches(&self, id: u32, name: Option<&FlowName>) -> bool {
        let tuples = name
            .into_iter()
            .flat_map(|n| std::iter::once(&n.entry).chain(n.exit.as_ref()));
        match self {
            FlowMatch::Id(wanted) => *wanted == id,
            FlowMatch::Port(port) => tuples.into_iter().any(|t| t.has_port(*port)),
            FlowMatch::Address(address) => tuples.into_iter().any(|t| t.has_address(*address)),
        }
    }
}

/// A flow's 5-tuple as it entered the path (before any NAT) and, where a
/// shell rewrote it, as it left.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowName {
    pub entry: FlowTuple,
    pub exit: Option<FlowTuple>,
}

impl FlowName {
    /// `tcp 10.0.0.2:40312 → 100.64.0.1:5201`, with `(left as …)` after it
    /// when the path rewrote the tuple.
    pub fn label(&self) -> String {
        match &self.exit {
            Some(exit) => format!("{} (left as {exit})", self.entry),
            None => self.entry.to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ShellInfo {
    pub shell: u8,
    pub description: String,
    pub capacity: Capacity,
    /// The rate of a shaper inside the shell's queue (cake `bandwidth`), in
    /// bit/s: where it is lower than the link, it is the bottleneck.
    pub shaper_bps: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PathKind {
    /// Entered the path at its first shell.
    Arrive,
    /// Left the path's last shell, `delay` after it entered.
    Deliver {
        delay: Nanos,
    },
    Drop(DropReason),
    Mark(Mark),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathEvent {
    /// Time from the run's start.
    pub time: Nanos,
    pub flow: u32,
    /// IP bytes.
    pub bytes: u32,
    pub kind: PathKind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShellKind {
    Arrive,
    /// Only the queue changed.
    Enqueue,
    /// `arrived`: when the packet arrived at this shell, if known.
    Depart {
        sojourn: Nanos,
        arrived: Option<Nanos>,
    },
    Drop(DropReason),
    Mark(Mark),
    /// A delivery opportunity of `bytes` (a [`Capacity::Logged`] shell).
    Opportunity,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShellEvent {
    pub time: Nanos,
    pub shell: u8,
    pub bytes: u32,
    /// The shell's queue after the event (bytes, packets), if recorded.
    pub queue: Option<(u32, u32)>,
    pub kind: ShellKind,
}

/// Packets a reader could not see through the path, handed to
/// [`DirectionAnalysis::finish`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Unmatched {
    /// Entered the path and neither left nor were dropped by the end.
    pub in_flight: u64,
    /// Left the path's last shell without having entered at its first:
    /// sent from a namespace between two shells.
    pub entered_mid_path: u64,
}
