//! What a run is made of, as the front ends (emu's shells, Mahimahi's
//! commands) describe it: each shell's two directions, the run's options,
//! and what a finished run hands back.

use crate::datapath::pump::Timing;
use emu_core::time::Nanos;
use link::Server;
use std::path::PathBuf;

/// One direction of a shell as the user asked for it.
#[derive(Debug, Clone)]
pub struct DirectionSpec {
    pub delay: Nanos,
    pub server: Server,
    /// The queue, built when the shell's link is.
    pub queue: aqm::QueueSpec,
    pub loss: link::Pattern,
    /// Bytes of framing charged per packet by the server, on top of the frame.
    pub overhead: u32,
    /// The link layer the queue and the server count (`link --l2`).
    pub link_layer: emu_core::size::LinkLayer,
    /// Jitter, schedules, outages, duplication, corruption (seed and
    /// stream are filled in where the link is built: `links::LinkSetup`).
    pub dynamics: link::Dynamics,
}

impl DirectionSpec {
    /// A direction that changes nothing: no delay, no bottleneck, an
    /// unbounded queue, no loss. Each shell sets what it is about on top.
    pub fn pass_through() -> DirectionSpec {
        DirectionSpec {
            delay: 0,
            server: Server::Unlimited,
            queue: aqm::QueueSpec::Infinite,
            loss: link::Pattern::Bernoulli(0.0),
            overhead: 0,
            link_layer: emu_core::size::LinkLayer::None,
            dynamics: link::Dynamics::default(),
        }
    }

    /// The finest time scale its queues decide on (see
    /// [`aqm::QueueSpec::finest_time_scale`]): the queue it starts with and
    /// each that `--queue-steps` puts in, at its rate where the rate is
    /// constant. Timing errors past it make the queue answer the machine.
    pub fn finest_queue_time_scale(&self) -> Option<aqm::TimeScale> {
        let bps = match &self.server {
            Server::Rate(rate) => Some(rate.bits_per_sec()),
            _ => None,
        };
        std::iter::once(&self.queue)
            .chain(self.dynamics.queue_steps.iter().map(|step| &step.queue))
            .filter_map(|queue| queue.finest_time_scale(bps))
            .min_by_key(|scale| scale.ns)
    }
}

/// One shell as the user asked for it.
#[derive(Debug, Clone)]
pub struct ShellSpec {
    /// `delay`, `link` or `loss`.
    pub kind: &'static str,
    /// For the prompt and the log, e.g. `delay 40 ms`.
    pub description: String,
    /// Uplink then downlink.
    pub directions: [DirectionSpec; 2],
    /// Seed of the shell's random loss; None picks one from the clock when
    /// the run starts (it is written in the log header, so a run can be
    /// repeated).
    pub seed: Option<u64>,
}

/// What a finished run leaves: the command's exit status and the packet
/// logs written, one per shell (outermost first) when logging was on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub status: i32,
    pub logs: Vec<PathBuf>,
}

/// How to run the chain.
pub struct RunOptions {
    /// The command and its arguments; empty runs the user's login shell.
    pub command: Vec<String>,
    pub log_dir: Option<PathBuf>,
    pub timing: Timing,
    /// MTU of every TUN device; larger packets are segmented by the kernel.
    pub mtu: u32,
    /// Print each direction's packet accounting when the command ends.
    pub stats: bool,
    /// Let the kernel hand over TCP super-packets, cut into real packets by
    /// the readers (far fewer system calls at high rates).
    pub offload: bool,
    pub command_line: String,
    /// Show the live status line while the command runs (drawn at the
    /// bottom of the screen when stderr is a terminal).
    pub status: bool,
    /// Write pcapng captures of every shell and direction.
    pub pcap: Option<Pcap>,
    /// Build everything inside a user namespace of emu's own (no root
    /// needed), whose network namespace stands in for the host.
    pub rootless: bool,
    /// Shell commands run around the outermost shell while the command runs.
    pub outside: Vec<String>,
    /// Sample the command's TCP sockets (TCP_INFO) at this interval into
    /// the log directory (`--tcp-info`).
    pub tcp_info: Option<std::time::Duration>,
    /// Attaches programs to a device of the path's two ends, called inside
    /// the device's namespace with its name: once for the host's end of
    /// the outermost shell, once for the command's device (emu's
    /// congestion controls use it for their helpers).
    pub device_helpers: Option<DeviceHelpers>,
    /// `net.*` sysctls of the command's namespace, set before it starts
    /// (as an experiment's hosts take theirs).
    pub command_sysctls: Vec<(String, String)>,
    /// Where the command's DNS lookups go (`--dns`): see [`DnsRoute`].
    pub dns: DnsRoute,
    /// Lines said (`emu: ...` on stderr) once the shells are up, just
    /// before the command starts: none if the run fails before.
    pub at_start: Vec<String>,
}

/// Where the command's lookups go: emu relays them to the host's
/// nameservers either way (see `sys::dns`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DnsRoute {
    /// Across the emulated path, like any other packet: the relay listens
    /// on the host's end of the outermost shell.
    #[default]
    Path,
    /// Straight to the host's nameservers: the relay listens on the
    /// command's own loopback.
    Host,
}

/// See [`RunOptions::device_helpers`].
pub type DeviceHelpers = std::sync::Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// Where and what to capture (`--pcap DIR`).
#[derive(Debug, Clone)]
pub struct Pcap {
    pub dir: PathBuf,
    pub options: emu_core::capture::CaptureOptions,
}
