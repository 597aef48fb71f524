//! The plan a run follows: every host, bottleneck and flow of an
//! experiment resolved, every default filled in. `planning` makes it.

use super::schema::*;
use crate::file::units::RateValue;
use emu_core::Nanos;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// One direction of one link, resolved: what a shell's direction is, so
/// both are built by the same constructor (`shells::links`).
pub type DirectionPlan = shells::DirectionSpec;

/// A host, resolved: its address, sysctls and side link.
#[derive(Debug, Clone)]
pub struct HostPlan {
    pub name: String,
    pub side: Side,
    pub address: Ipv4Addr,
    pub sysctls: Vec<(String, String)>,
    /// The settings of its congestion control (one of emu's), for every
    /// connection of its namespace that a flow's own do not cover.
    pub cc_settings: Option<endpoints::Settings>,
    /// Host to router, router to host.
    pub up: DirectionPlan,
    pub down: DirectionPlan,
}

/// One flow (a `count` of N gives N of these), resolved.
#[derive(Debug, Clone)]
pub struct FlowPlan {
    pub name: String,
    pub kind: FlowKind,
    pub from: usize,
    pub to: Option<usize>,
    /// The congestion control's name (its settings apart).
    pub cc: Option<String>,
    /// The settings of its congestion control (one of emu's): its own, or
    /// its sending host's where it names none.
    pub cc_settings: Option<endpoints::Settings>,
    pub rate: Option<RateValue>,
    pub ecn: EcnCodepoint,
    /// TCP: the TOS byte the sender sets (ECN bits 0), 0 for none.
    pub tos: u8,
    pub size: u32,
    pub interval: Nanos,
    pub command: Option<String>,
    /// Pantheon: the wrapper, which side runs first, and the time it gets.
    pub pantheon: Option<PantheonPlan>,
    pub start: Nanos,
    pub duration: Nanos,
    pub bytes: Option<u64>,
    pub omit: Nanos,
    /// The receiving port (TCP and UDP flows).
    pub port: u16,
}

/// Which side of a Pantheon scheme starts first (its `run_first` answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PantheonSide {
    Sender,
    Receiver,
}

impl PantheonSide {
    pub fn name(self) -> &'static str {
        match self {
            PantheonSide::Sender => "sender",
            PantheonSide::Receiver => "receiver",
        }
    }

    pub fn other(self) -> PantheonSide {
        match self {
            PantheonSide::Sender => PantheonSide::Receiver,
            PantheonSide::Receiver => PantheonSide::Sender,
        }
    }
}

/// A Pantheon flow, resolved.
#[derive(Debug, Clone)]
pub struct PantheonPlan {
    pub wrapper: PathBuf,
    pub first: PantheonSide,
    pub setup_time: Nanos,
}

/// Everything a run needs, every default filled in.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub run: RunSection,
    pub hosts: Vec<HostPlan>,
    /// Forward (left to right) and reverse, per bottleneck.
    pub bottlenecks: Vec<[DirectionPlan; 2]>,
    pub flows: Vec<FlowPlan>,
    /// What the file asks for that runs, but likely not as meant (a flow
    /// between two hosts on the same side, which never crosses the
    /// bottleneck).
    pub warnings: Vec<String>,
}

/// The first port flows receive on.
pub const FIRST_PORT: u16 = 5201;

/// The congestion controls of this kernel.
#[derive(Debug, Clone, Default)]
pub struct CongestionControls {
    /// Loaded: a socket may use any of them (emu runs as root).
    pub available: Vec<String>,
    /// Those the kernel also lets a namespace other than the first take
    /// as its default (tcp_allowed_congestion_control); for any other,
    /// setting the default there fails with EPERM.
    pub allowed: Vec<String>,
}

/// What planning a flow needs besides the flow.
pub(super) struct FlowContext<'a> {
    pub(super) experiment: &'a Experiment,
    pub(super) source: &'a Source<'a>,
    pub(super) base: &'a Path,
    pub(super) controls: &'a CongestionControls,
    pub(super) run_first: &'a dyn Fn(&Path) -> Result<PantheonSide, String>,
    pub(super) hosts: &'a [HostPlan],
}
