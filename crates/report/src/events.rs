//! What the analysis is fed: the user's options, the shells of a
//! direction, and the two event streams the readers ([`crate::emu_reader`],
//! [`crate::mahimahi_reader`]) make of a log. *Path* events follow a packet
//! through the whole nested path; *shell* events are one shell's view.

use crate::capacity::Capacity;
use emu_core::log::{DropReason, Mark};
use emu_core::Nanos;

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

/// Which flows get their own rows, lines and a place in Jain's index.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowSelection {
    /// Flows that carried at least 1% of the direction's delivered bytes:
    /// the bulk flows of an experiment, without the control connections
    /// and name lookups that would drag a fairness index down.
    Significant,
    All,
    /// The N flows that delivered the most bytes.
    Top(usize),
    /// These flow ids.
    Ids(Vec<u32>),
}

#[derive(Debug, Clone)]
pub struct ShellInfo {
    pub shell: u8,
    pub description: String,
    pub capacity: Capacity,
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
