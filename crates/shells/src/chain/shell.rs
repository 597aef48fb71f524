//! One shell of a chain, phase by phase: its address pair, its two
//! devices and the namespace inside, the routes and NAT that reach it,
//! its logs and captures, and the pumps of its two directions; and what
//! it holds while it runs (dropping it removes the shell).

use crate::datapath::pump::{Devices, DirectionPump, PumpNews};
use crate::error::{Result, ShellError};
use crate::links::{copy_traces, LinkSetup};
use crate::spec::{RunOptions, ShellSpec};
use crate::sys::addressing::{self, AddressPair};
use crate::sys::devices::{self, DeviceEnd};
use crate::sys::guardian::Guardian;
use crate::sys::nat::{self, NatRule};
use crate::sys::netlink::default_route;
use crate::sys::netns::NetNs;
use crate::sys::privilege;
use crate::sys::tun::Tun;
use emu_core::capture::CaptureHeader;
use emu_core::log::{Direction, LogSink, LogWriter};
use emu_core::time::{monotonic_now, realtime_now};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

/// Everything one shell holds while it runs. Dropping it removes the
/// shell: NAT rules are deleted, TUN devices and the namespace close.
pub(super) struct RunningShell {
    pub(super) pumps: Vec<(Direction, DirectionPump)>,
    pub(super) _nat: Vec<NatRule>,
    pub(super) _outer_tun: Tun,
    pub(super) _inner_tun: Tun,
    /// The namespace around the shell, where its outer TUN device lives.
    pub(super) outer: Arc<NetNs>,
    pub(super) outer_device: String,
    pub(super) inner: Arc<NetNs>,
    pub(super) pair: AddressPair,
    pub(super) log: Option<PathBuf>,
    /// When its links started (the innermost shell's is the control
    /// socket's run time 0).
    pub(super) start: emu_core::Nanos,
}

/// A seed for a shell that was given none: different for every run, and
/// for shells started in the same nanosecond by different processes.
pub(super) fn seed_from_clock() -> u64 {
    realtime_now() ^ ((std::process::id() as u64) << 32)
}

/// Where a new shell goes: the namespace around it, the chain's outermost
/// one, and the shells already built around it.
pub(super) struct Around<'a> {
    pub(super) outer: &'a Arc<NetNs>,
    /// Where the chain started: the machine's namespace, an enclosing
    /// emu's, or a rootless emu's own.
    pub(super) host: &'a Arc<NetNs>,
    /// `host` is not a namespace of an enclosing emu.
    pub(super) host_is_machine: bool,
    pub(super) earlier: &'a [RunningShell],
}

/// One shell, phase by phase: its address pair, its two devices and the
/// namespace inside, the routes and NAT that reach it, its logs and
/// captures, and the pumps of its two directions.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_shell(
    index: usize,
    position: usize,
    spec: &ShellSpec,
    seed: u64,
    around: &Around,
    options: &RunOptions,
    taken: &mut Vec<u32>,
    guardian: &mut Guardian,
    writer: Option<&mut LogWriter>,
    news: mpsc::Sender<PumpNews>,
) -> Result<RunningShell> {
    // The pair must be free wherever it will be routed: in every
    // namespace around the shell.
    let mut namespaces: Vec<&NetNs> = vec![around.host];
    namespaces.extend(around.earlier.iter().map(|s| s.inner.as_ref()));
    let pair = addressing::choose(&namespaces, taken)?;
    taken.push(pair.index);
    let (outer_tun, inner, inner_tun) =
        bring_up_link(around.outer, &pair, position, options, guardian)?;
    let rules = reach_shell(around, &pair, guardian)?;
    let start = monotonic_now();
    let realtime_start = realtime_now();
    let setup = LinkSetup {
        shell: index as u8,
        directions: &spec.directions,
        seed,
        streams: [(index * 2) as u64, (index * 2 + 1) as u64],
        max_packet: options.mtu as usize,
        start,
    };
    let (sinks, log) = open_outputs(index, spec, &setup, options, writer, realtime_start)?;
    let mut pumps = Vec::new();
    for ((d, direction), sink) in Direction::BOTH.into_iter().enumerate().zip(sinks) {
        let link = setup.build(d, sink);
        let (input, output) = match direction {
            Direction::Uplink => (inner_tun.raw_fd(), outer_tun.raw_fd()),
            Direction::Downlink => (outer_tun.raw_fd(), inner_tun.raw_fd()),
        };
        let pump = DirectionPump::start(
            &format!("emu{index}{}", &direction.name()[..1]),
            format!("[{}] {}", spec.description, direction.name()),
            position,
            link,
            Devices { input, output },
            options.timing,
            news.clone(),
        )
        .map_err(|e| ShellError::os("starting a pump thread", e))?;
        pumps.push((direction, pump));
    }
    Ok(RunningShell {
        pumps,
        _nat: rules,
        outer_device: outer_tun.name().to_string(),
        _outer_tun: outer_tun,
        _inner_tun: inner_tun,
        outer: around.outer.clone(),
        inner,
        pair,
        log,
        start,
    })
}

/// The shell's point-to-point link: its outer device in `outer`, a new
/// namespace with the inner device, and default routes inside through it.
pub(super) fn bring_up_link(
    outer: &Arc<NetNs>,
    pair: &AddressPair,
    position: usize,
    options: &RunOptions,
    guardian: &mut Guardian,
) -> Result<(Tun, Arc<NetNs>, Tun)> {
    let mtu = options.mtu;
    let name = format!("emu{position}-{}", std::process::id());
    let outer_tun = devices::bring_up(
        outer,
        DeviceEnd {
            name: &name,
            mtu,
            offload: options.offload,
            ipv4: (pair.outer4, 32, Some(pair.inner4)),
            ipv6: Some(pair.outer6),
        },
    )?;
    let inner = devices::new_namespace(guardian)?;
    let inner_tun = devices::bring_up(
        &inner,
        DeviceEnd {
            name: devices::INNER_DEVICE,
            mtu,
            offload: options.offload,
            ipv4: (pair.inner4, 32, Some(pair.outer4)),
            ipv6: Some(pair.inner6),
        },
    )?;
    let mut netlink = inner.netlink()?;
    for via in [IpAddr::V4(pair.outer4), IpAddr::V6(pair.outer6)] {
        netlink.add_route(default_route(via), Some(via), devices::INNER_DEVICE)?;
    }
    Ok((outer_tun, inner, inner_tun))
}

/// What makes a new shell reachable: forwarding in the namespace around
/// it, a route to its addresses in every namespace further out, and the
/// masquerade rules of the chain's outermost namespace (watched by the
/// guardian on the machine's own).
pub(super) fn reach_shell(
    around: &Around,
    pair: &AddressPair,
    guardian: &mut Guardian,
) -> Result<Vec<NatRule>> {
    let outer_is_host = Arc::ptr_eq(around.outer, around.host) && around.host_is_machine;
    nat::enable_forwarding(around.outer, !outer_is_host)?;
    // Every namespace further out routes the shell's addresses inwards,
    // through the next shell's outer device (the routes go with the
    // device), so packets keep their addresses up to the host.
    for earlier in around.earlier {
        let mut netlink = earlier.outer.netlink()?;
        for network in pair.networks() {
            netlink.add_route(network, None, &earlier.outer_device)?;
        }
    }
    // Only the chain's outermost namespace masquerades, as before for the
    // outermost shell (IPv6 too inside an enclosing emu).
    let mut rules = vec![NatRule::masquerade(
        around.host.clone(),
        IpAddr::V4(pair.inner4),
    )?];
    if !around.host_is_machine {
        rules.push(NatRule::masquerade(
            around.host.clone(),
            IpAddr::V6(pair.inner6),
        )?);
    }
    if around.host_is_machine {
        for rule in &rules {
            guardian.watch_rule(rule.program(), rule.spec());
        }
    }
    Ok(rules)
}

/// The sinks of the shell's two directions: into its packet log (created
/// as the user, with the traces it follows copied beside it) and its
/// captures where they are asked for; the log's path.
pub(super) fn open_outputs(
    index: usize,
    spec: &ShellSpec,
    setup: &LinkSetup,
    options: &RunOptions,
    mut writer: Option<&mut LogWriter>,
    realtime_start: u64,
) -> Result<([LogSink; 2], Option<PathBuf>)> {
    let mut log = None;
    let mut sinks = match writer.as_deref_mut().filter(|_| options.log_dir.is_some()) {
        Some(w) => {
            let dir = options
                .log_dir
                .as_ref()
                .expect("a writer implies a log directory");
            let header = setup.log_header(
                format!("{} seed {}", spec.description, setup.seed),
                options.command_line.clone(),
                realtime_start,
                copy_traces(dir, &index.to_string(), &spec.directions)?,
            );
            let path = dir.join(format!("{index}-{}.emulog", spec.kind));
            let file = privilege::io_as_invoker(|| w.add_file(&path, &header))
                .map_err(|e| ShellError::os(&format!("creating {}", path.display()), e))?;
            log = Some(path);
            [w.sink(file), w.sink(file)]
        }
        None => [LogSink::disabled(), LogSink::disabled()],
    };
    if let (Some(w), Some(pcap)) = (writer, &options.pcap) {
        for (d, direction) in Direction::BOTH.into_iter().enumerate() {
            // `<shell>-<kind>-<direction>.pcapng`, and `…-drops.pcapng`.
            let mut create = |suffix: &str| {
                let name = format!("{index}-{}-{}{suffix}", spec.kind, direction.name());
                let path = pcap.dir.join(format!("{name}.pcapng"));
                let header = CaptureHeader {
                    name: format!(
                        "emu{index} {}{}",
                        direction.name(),
                        suffix.replace('-', " ")
                    ),
                    description: spec.description.clone(),
                    monotonic_origin_ns: setup.start,
                    realtime_origin_ns: realtime_start,
                    options: pcap.options,
                };
                privilege::io_as_invoker(|| w.add_capture(&path, &header))
                    .map_err(|e| ShellError::os(&format!("creating {}", path.display()), e))
            };
            let departures = create("")?;
            let drops = pcap.options.drops.then(|| create("-drops")).transpose()?;
            let sink = std::mem::replace(&mut sinks[d], LogSink::disabled());
            sinks[d] = sink.with_capture(w.capture_sink(departures, drops, pcap.options));
        }
    }
    Ok((sinks, log))
}
