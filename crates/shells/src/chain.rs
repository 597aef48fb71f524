//! A chain of shells around one command: each shell a namespace joined to
//! the one around it by a pair of TUN devices and two packet pumps.
//!
//!   host ns ── emu0-PID ⇄ [uplink/downlink pumps] ⇄ ingress ── ns 1
//!   ns 1    ── emu1-PID ⇄ [pumps]                 ⇄ ingress ── ns 2 … command

use crate::addressing::{self, AddressPair};
use crate::command::{self, CommandSpec};
use crate::error::{Result, ShellError};
use crate::guardian::Guardian;
use crate::nat::{self, NatRule};
use crate::netns::{self, NetNs};
use crate::outside::Outside;
use crate::privilege;
use crate::pump::{Devices, DirectionPump, DirectionResult, PumpNews, Timing};
use crate::rootless;
use crate::tun::Tun;
use emu_core::capture::{CaptureHeader, CaptureOptions};
use emu_core::log::{Direction, DropReason, LogHeader, LogSink, LogWriter, TraceFile};
use emu_core::time::{monotonic_now, realtime_now, Nanos};
use link::{Link, LinkConfig, Loss, Server};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// One direction of a shell as the user asked for it.
#[derive(Debug, Clone)]
pub struct DirectionSpec {
    pub delay: Nanos,
    pub server: Server,
    /// A queue specification for `aqm::parse_queue`.
    pub queue: String,
    pub loss: link::Pattern,
    /// Bytes of framing charged per packet by the server.
    pub overhead: u32,
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
    pub seed: u64,
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
    /// Write pcapng captures of every shell and direction.
    pub pcap: Option<Pcap>,
    /// Build everything inside a user namespace of emu's own (no root
    /// needed), whose network namespace stands in for the host.
    pub rootless: bool,
    /// Shell commands run around the outermost shell while the command runs.
    pub outside: Vec<String>,
}

/// Where and what to capture (`--pcap DIR`).
#[derive(Debug, Clone)]
pub struct Pcap {
    pub dir: PathBuf,
    pub options: CaptureOptions,
}

/// Messages to the control thread.
enum News {
    Pump(PumpNews),
    Exited(std::process::ExitStatus),
    Signal(i32),
}

/// Everything one shell holds while it runs. Dropping it removes the
/// shell: NAT rules are deleted, TUN devices and the namespace close.
struct RunningShell {
    pumps: Vec<(Direction, DirectionPump)>,
    _nat: Vec<NatRule>,
    _outer_tun: Tun,
    _inner_tun: Tun,
    inner: Arc<NetNs>,
    pair: AddressPair,
}

const FORWARDED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Runs `options.command` inside `shells` (outermost first) and returns the
/// command's exit status.
pub fn run(shells: Vec<ShellSpec>, options: RunOptions) -> Result<i32> {
    if options.rootless {
        rootless::enter()?;
    }
    privilege::check()?;
    // The guardian must be forked while this process has a single thread.
    let mut guardian = Guardian::start()?;
    block_forwarded_signals();
    let result = run_guarded(shells, options, &mut guardian);
    guardian.release();
    result
}

fn run_guarded(
    shells: Vec<ShellSpec>,
    options: RunOptions,
    guardian: &mut Guardian,
) -> Result<i32> {
    let host = Arc::new(NetNs::current()?);
    nat::sweep_stale(&host);
    if options.rootless {
        // Whatever runs in emu's own outer namespace goes with emu.
        guardian.watch_namespace(host.identity()?);
    }
    // Started first, so a server has the time the shells take to come up.
    let outside = Outside::start(&host, &options.outside)?;
    let depth: usize = std::env::var("EMU_SHELL_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    // The variable alone is not trusted: a user of a setuid emu could set it
    // to have emu treat the host like one of its own namespaces.
    let nested_in_emu = depth > 0 && !host.is_initial();

    if let Some(dir) = &options.log_dir {
        privilege::io_as_invoker(|| std::fs::create_dir_all(dir))
            .map_err(|e| ShellError::os(&format!("creating log directory {}", dir.display()), e))?;
    }
    if let Some(pcap) = &options.pcap {
        privilege::io_as_invoker(|| std::fs::create_dir_all(&pcap.dir)).map_err(|e| {
            ShellError::os(
                &format!("creating capture directory {}", pcap.dir.display()),
                e,
            )
        })?;
    }
    // One writer thread takes both the log records and the captures.
    let mut writer = (options.log_dir.is_some() || options.pcap.is_some()).then(LogWriter::new);
    let (news_tx, news_rx) = mpsc::channel::<News>();
    let (pump_tx, pump_rx) = mpsc::channel::<PumpNews>();
    {
        let news = news_tx.clone();
        std::thread::spawn(move || {
            while let Ok(n) = pump_rx.recv() {
                if news.send(News::Pump(n)).is_err() {
                    break;
                }
            }
        });
    }

    let mut taken: Vec<u32> = addressing::inherited_pairs();
    let mut running: Vec<RunningShell> = Vec::new();
    // Addresses are chosen under a machine-wide lock, so emus started
    // together never pick the same pair; a rootless emu's outer namespace
    // is its alone, and /run is not its to write.
    let selection = if options.rootless {
        None
    } else {
        Some(addressing::SelectionLock::acquire()?)
    };
    let mut outer = host.clone();
    let mut prompt = String::new();
    for (k, spec) in shells.iter().enumerate() {
        let index = depth + k;
        let shell = build_shell(
            index,
            k,
            spec,
            &outer,
            Arc::ptr_eq(&outer, &host) && !nested_in_emu,
            &options,
            &mut taken,
            guardian,
            writer.as_mut(),
            pump_tx.clone(),
        )?;
        prompt += &format!("[{}] ", spec.description);
        outer = shell.inner.clone();
        running.push(shell);
    }
    drop(selection);
    if let Some(w) = writer.as_mut() {
        w.start();
    }

    // The command, in the innermost namespace.
    let invoker = privilege::invoker();
    let argv = if options.command.is_empty() {
        vec![command::login_shell(&invoker)]
    } else {
        options.command.clone()
    };
    let env = command_environment(&running, &prompt, &taken, depth + shells.len());
    let mut child = command::spawn(
        &outer,
        &CommandSpec {
            argv,
            env,
            invoker,
            own_process_group: false,
        },
    )?;
    let child_pid = child.id() as i32;
    {
        let news = news_tx.clone();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = news.send(News::Exited(status));
            }
        });
    }
    spawn_signal_thread(news_tx.clone());

    let started = std::time::Instant::now();
    let mut trace_ended = false;
    // Set once the command has been asked to stop; past it, it is killed.
    let mut kill_at: Option<std::time::Instant> = None;
    let status = loop {
        let news = match kill_at {
            None => news_rx.recv().map_err(|_| ()),
            Some(at) => match news_rx
                .recv_timeout(at.saturating_duration_since(std::time::Instant::now()))
            {
                Ok(news) => Ok(news),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // Still not reaped (its exit would have come first), so
                    // the pid is still our child's.
                    // SAFETY: sending a signal to our own child.
                    unsafe { libc::kill(child_pid, libc::SIGKILL) };
                    kill_at = None;
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(()),
            },
        };
        match news {
            Ok(News::Exited(status)) => break command::status_code(status),
            Ok(News::Signal(signal)) => {
                // SAFETY: sending a signal to our own child.
                unsafe { libc::kill(child_pid, signal) };
            }
            Ok(News::Pump(PumpNews::TraceEnded(n))) if !trace_ended => {
                trace_ended = true;
                eprintln!(
                    "emu: {}: the trace ended (--once); stopping the command",
                    shells[n].description
                );
                // SAFETY: as above; SIGKILL follows if it ignores SIGTERM.
                unsafe { libc::kill(child_pid, libc::SIGTERM) };
                kill_at = Some(std::time::Instant::now() + Duration::from_secs(2));
            }
            Ok(News::Pump(_)) => {}
            Err(()) => break 1,
        }
    };

    // Whatever the command left running in our namespaces goes with it.
    let identities: Vec<(u64, u64)> = running
        .iter()
        .filter_map(|s| s.inner.identity().ok())
        .collect();
    netns::kill_processes_in(&identities);
    drop(outside);

    // Stop every reader first, so nothing is read that a stopped pump would
    // not count; then let each pump take what is left on its ring.
    let mut reads: Vec<Vec<u64>> = Vec::new();
    for shell in running.iter_mut() {
        reads.push(
            shell
                .pumps
                .iter_mut()
                .map(|(_, p)| p.stop_reading())
                .collect(),
        );
    }
    let mut results: Vec<(usize, Direction, DirectionResult)> = Vec::new();
    for (k, (shell, reads)) in running.iter_mut().zip(reads).enumerate() {
        for ((direction, pump), read) in shell.pumps.drain(..).zip(reads) {
            results.push((depth + k, direction, pump.finish(read)));
        }
    }
    let totals = match writer {
        Some(w) => Some(
            w.finish()
                .map_err(|e| ShellError::os("writing the packet log", e))?,
        ),
        None => None,
    };
    let lost = totals.map_or(0, |t| t.records_lost);
    if let Some(t) = totals.filter(|t| t.records_lost > 0) {
        eprintln!(
            "emu: warning: {} log records were lost because the disk could not keep up ({} written)",
            t.records_lost, t.records
        );
    }
    if let Some(t) = totals.filter(|t| t.captures_lost > 0) {
        eprintln!(
            "emu: warning: {} captured packets were lost because the disk could not keep up ({} written)",
            t.captures_lost, t.captures
        );
    }
    let summary = summarize(
        &shells,
        depth,
        &results,
        lost,
        started.elapsed().as_secs_f64(),
    );
    if options.stats {
        eprint!("{}", summary.text);
    }
    if let Some(dir) = &options.log_dir {
        let path = dir.join(format!("summary-{depth}.json"));
        privilege::io_as_invoker(|| std::fs::write(&path, summary.json))
            .map_err(|e| ShellError::os(&format!("writing {}", path.display()), e))?;
    }
    drop(running);
    Ok(if trace_ended { 0 } else { status })
}

#[allow(clippy::too_many_arguments)]
fn build_shell(
    index: usize,
    position: usize,
    spec: &ShellSpec,
    outer: &Arc<NetNs>,
    outer_is_host: bool,
    options: &RunOptions,
    taken: &mut Vec<u32>,
    guardian: &mut Guardian,
    writer: Option<&mut LogWriter>,
    news: mpsc::Sender<PumpNews>,
) -> Result<RunningShell> {
    let pair = addressing::choose(outer, taken)?;
    taken.push(pair.index);
    let mtu = options.mtu.to_string();

    let name = format!("emu{position}-{}", std::process::id());
    let outer_tun = bring_up_end(
        outer,
        &name,
        &mtu,
        (pair.outer4, pair.outer6),
        pair.inner4,
        options.offload,
    )?;
    let inner = Arc::new(NetNs::create()?);
    guardian.watch_namespace(inner.identity()?);
    inner.exec("ip", &["link", "set", "dev", "lo", "up"])?;
    let inner_tun = bring_up_end(
        &inner,
        "ingress",
        &mtu,
        (pair.inner4, pair.inner6),
        pair.outer4,
        options.offload,
    )?;
    inner.exec(
        "ip",
        &[
            "route",
            "add",
            "default",
            "via",
            &pair.outer4.to_string(),
            "dev",
            "ingress",
        ],
    )?;
    inner.exec(
        "ip",
        &[
            "-6",
            "route",
            "add",
            "default",
            "via",
            &pair.outer6.to_string(),
            "dev",
            "ingress",
        ],
    )?;

    nat::enable_forwarding(outer, !outer_is_host)?;
    let mut rules = vec![NatRule::masquerade(outer.clone(), IpAddr::V4(pair.inner4))?];
    if !outer_is_host {
        rules.push(NatRule::masquerade(outer.clone(), IpAddr::V6(pair.inner6))?);
    }
    if outer_is_host {
        for rule in &rules {
            guardian.watch_rule(rule.program(), rule.spec());
        }
    }

    let start = monotonic_now();
    let realtime_start = realtime_now();
    let mut writer = writer;
    let mut sinks = match writer.as_deref_mut().filter(|_| options.log_dir.is_some()) {
        Some(w) => {
            let header = LogHeader {
                shell: index as u8,
                description: format!("{} seed {}", spec.description, spec.seed),
                monotonic_origin_ns: start,
                realtime_origin_ns: realtime_start,
                rate_bps: Some(spec.directions.clone().map(|d| match d.server {
                    Server::Rate(r) => Some(r.bits_per_sec()),
                    _ => None,
                })),
                command_line: options.command_line.clone(),
                traces: None,
            };
            let dir = options
                .log_dir
                .as_ref()
                .expect("a writer implies a log directory");
            let header = LogHeader {
                traces: copy_traces(dir, index, &spec.directions)?,
                ..header
            };
            let path = dir.join(format!("{index}-{}.emulog", spec.kind));
            let file = privilege::io_as_invoker(|| w.add_file(&path, &header))
                .map_err(|e| ShellError::os(&format!("creating {}", path.display()), e))?;
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
                    monotonic_origin_ns: start,
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

    let mut pumps = Vec::new();
    for (d, direction) in Direction::BOTH.into_iter().enumerate() {
        let dir_spec = &spec.directions[d];
        let queue = aqm::parse_queue(&dir_spec.queue)
            .map_err(|e| ShellError::new(format!("{}: {e}", spec.kind)))?;
        let loss = (!dir_spec.loss.is_none())
            .then(|| Loss::with_pattern(dir_spec.loss, spec.seed, (index * 2 + d) as u64));
        let link = Link::new(
            LinkConfig {
                shell: index as u8,
                direction,
                delay: dir_spec.delay,
                server: dir_spec.server.clone(),
                queue,
                loss,
                max_packet: options.mtu as usize,
                overhead: dir_spec.overhead,
            },
            start,
            std::mem::replace(&mut sinks[d], LogSink::disabled()),
        );
        let (input, output) = match direction {
            Direction::Uplink => (inner_tun.raw_fd(), outer_tun.raw_fd()),
            Direction::Downlink => (outer_tun.raw_fd(), inner_tun.raw_fd()),
        };
        let pump = DirectionPump::start(
            &format!("emu{index}{}", &direction.name()[..1]),
            position,
            link,
            Devices {
                input,
                output,
                offload: options.offload,
            },
            options.timing,
            news.clone(),
        )
        .map_err(|e| ShellError::os("starting a pump thread", e))?;
        pumps.push((direction, pump));
    }
    Ok(RunningShell {
        pumps,
        _nat: rules,
        _outer_tun: outer_tun,
        _inner_tun: inner_tun,
        inner,
        pair,
    })
}

/// The command's environment: the address of the host as seen from inside
/// (kept from an enclosing emu, so it is always the outermost), the prompt
/// prefix, and what nested emu processes need to avoid our addresses.
/// Copies each direction's trace into the log directory (as
/// `<shell>-<direction>.trace`, in emu's nanosecond format) so the logs
/// carry their own capacity: a report stays right when the original trace
/// has moved or changed.
fn copy_traces(
    dir: &std::path::Path,
    index: usize,
    directions: &[DirectionSpec; 2],
) -> Result<Option<[Option<TraceFile>; 2]>> {
    let mut files = [None, None];
    for (d, direction) in Direction::BOTH.into_iter().enumerate() {
        if let Server::Trace { trace, repeat } = &directions[d].server {
            let file = format!("{index}-{}.trace", direction.name());
            let path = dir.join(&file);
            privilege::io_as_invoker(|| std::fs::write(&path, trace.to_emu_text()))
                .map_err(|e| ShellError::os(&format!("writing {}", path.display()), e))?;
            files[d] = Some(TraceFile {
                file,
                repeat: *repeat,
            });
        }
    }
    Ok(files.iter().any(Option::is_some).then_some(files))
}

fn command_environment(
    running: &[RunningShell],
    prompt: &str,
    taken: &[u32],
    depth: usize,
) -> Vec<(String, String)> {
    let outermost = running.first().expect("at least one shell").pair;
    let base = std::env::var("EMU_BASE").unwrap_or_else(|_| outermost.outer4.to_string());
    let base6 = std::env::var("EMU_BASE6").unwrap_or_else(|_| outermost.outer6.to_string());
    let mahimahi_base = std::env::var("MAHIMAHI_BASE").unwrap_or_else(|_| base.clone());
    let prefix = std::env::var("EMU_SHELL_PREFIX").unwrap_or_default() + prompt;
    let mm_prefix = std::env::var("MAHIMAHI_SHELL_PREFIX").unwrap_or_default() + prompt;
    let pairs: Vec<String> = taken.iter().map(|p| p.to_string()).collect();
    vec![
        ("EMU_BASE".into(), base),
        ("EMU_BASE6".into(), base6),
        ("MAHIMAHI_BASE".into(), mahimahi_base),
        ("EMU_SHELL_PREFIX".into(), prefix.clone()),
        ("MAHIMAHI_SHELL_PREFIX".into(), mm_prefix),
        ("EMU_PAIRS_IN_USE".into(), pairs.join(",")),
        ("EMU_SHELL_DEPTH".into(), depth.to_string()),
        // Shows the prefix in bash's prompt once, after its rc files set PS1.
        (
            "PROMPT_COMMAND".into(),
            "PS1=\"$EMU_SHELL_PREFIX$PS1\"; unset PROMPT_COMMAND".into(),
        ),
        ("PS1".into(), format!("{prefix}$ ")),
    ]
}

fn block_forwarded_signals() {
    // SAFETY: building and installing a signal mask for this thread, which
    // every thread created afterwards inherits.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in FORWARDED {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Waits for the blocked signals and passes on those sent with kill(): a
/// terminal's Ctrl-C already reaches the command, which shares our
/// process group, and must not arrive twice.
fn spawn_signal_thread(news: mpsc::Sender<News>) {
    std::thread::spawn(move || {
        // SAFETY: as in block_forwarded_signals; sigwaitinfo fills `info`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in FORWARDED {
                libc::sigaddset(&mut set, signal);
            }
            loop {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                let signal = libc::sigwaitinfo(&set, &mut info);
                if signal < 0 {
                    continue;
                }
                if info.si_code == libc::SI_KERNEL || info.si_code > 0 {
                    continue; // from the terminal: the command has it already
                }
                if news.send(News::Signal(signal)).is_err() {
                    return;
                }
            }
        }
    });
}

struct Summary {
    text: String,
    json: String,
}

/// Per direction: read = delivered + dropped (by reason) + queued at exit.
fn summarize(
    shells: &[ShellSpec],
    depth: usize,
    results: &[(usize, Direction, DirectionResult)],
    log_lost: u64,
    wall: f64,
) -> Summary {
    let mut text = String::new();
    let mut entries = Vec::new();
    for (index, direction, r) in results {
        let c = r.link.counters();
        let queued = r.link.queued();
        let drops: Vec<String> = DropReason::ALL
            .iter()
            .filter(|reason| c.dropped_by(**reason) > 0)
            .map(|reason| format!("{} {}", reason.name(), c.dropped_by(*reason)))
            .collect();
        let description = &shells[index - depth].description;
        text += &format!(
            "emu: [{description}] {}: read {} = delivered {} + dropped {}{} + queued {}{}; written late by mean {:.1} us, p99 {:.1} us\n",
            direction.name(),
            r.read,
            c.delivered,
            c.dropped_total(),
            if drops.is_empty() {
                String::new()
            } else {
                format!(" ({})", drops.join(", "))
            },
            queued,
            if r.write_errors > 0 {
                format!(" ({} writes refused by the kernel)", r.write_errors)
            } else {
                String::new()
            },
            r.lateness.mean_ns() / 1e3,
            r.lateness.quantile_ns(0.99) as f64 / 1e3,
        );
        let dropped: serde_json::Map<String, serde_json::Value> = DropReason::ALL
            .iter()
            .map(|reason| (reason.name().to_string(), c.dropped_by(*reason).into()))
            .collect();
        entries.push(serde_json::json!({
            "shell": index,
            "description": description,
            "direction": direction.name(),
            "read": r.read,
            "arrived": c.arrived,
            "delivered": c.delivered,
            "delivered_bytes": c.delivered_bytes,
            "dropped": dropped,
            "queued_at_exit": queued,
            "marked_ce": c.marked_ce,
            "marked_ect1": c.marked_ect1,
            "write_errors": r.write_errors,
            "queue": r.link.queue_description(),
            "departure_lateness": r.lateness.to_json(),
        }));
    }
    let (user, system) = own_cpu_seconds();
    text += &format!(
        "emu: CPU used by emu itself: {user:.2} s user + {system:.2} s system over {wall:.2} s ({:.0}% of one core)\n",
        (user + system) / wall * 100.0
    );
    let json = serde_json::json!({
        "log_records_lost": log_lost,
        "process": { "cpu_user_s": user, "cpu_system_s": system, "wall_s": wall },
        "directions": entries,
    });
    Summary {
        text,
        json: format!("{json}\n"),
    }
}

/// CPU time of emu's own threads (not the command's), from getrusage.
fn own_cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (seconds(usage.ru_utime), seconds(usage.ru_stime))
}

/// One end of a shell's point-to-point link: a TUN device in `ns`, up,
/// holding the `local` IPv4 and IPv6 addresses and facing `peer`.
fn bring_up_end(
    ns: &NetNs,
    device: &str,
    mtu: &str,
    local: (Ipv4Addr, Ipv6Addr),
    peer: Ipv4Addr,
    offload: bool,
) -> Result<Tun> {
    let tun = ns.run(|| Tun::create(device, offload))?;
    quiet_ipv6(ns, device)?;
    ns.exec("ip", &["link", "set", "dev", device, "mtu", mtu, "up"])?;
    ns.exec(
        "ip",
        &[
            "addr",
            "add",
            &local.0.to_string(),
            "peer",
            &peer.to_string(),
            "dev",
            device,
        ],
    )?;
    ns.exec(
        "ip",
        &[
            "-6",
            "addr",
            "add",
            &format!("{}/64", local.1),
            "dev",
            device,
            "nodad",
        ],
    )?;
    Ok(tun)
}

/// Stops the kernel from sending its own IPv6 housekeeping (router
/// solicitations, MLD reports from a link-local address) over a new device,
/// so the path carries, and the log records, only the experiment's traffic.
/// Must run before the device comes up.
fn quiet_ipv6(ns: &NetNs, device: &str) -> Result<()> {
    let device = device.to_string();
    ns.run(move || {
        for (setting, value) in [
            ("addr_gen_mode", "1"),
            ("router_solicitations", "0"),
            ("accept_ra", "0"),
        ] {
            let path = format!("/proc/sys/net/ipv6/conf/{device}/{setting}");
            // A kernel without IPv6 has none of these: nothing to quieten.
            if std::path::Path::new(&path).exists() {
                std::fs::write(&path, value)
                    .map_err(|e| ShellError::os(&format!("writing {path}"), e))?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lateness::Lateness;

    /// A trace named with quotes, control characters and non-ASCII still
    /// gives a summary that JSON readers accept, with the name intact.
    #[test]
    fn the_summary_is_valid_json_whatever_the_description() {
        let description = "link up \"ünï\u{1}\ttrace\".up";
        let spec = ShellSpec {
            kind: "link",
            description: description.into(),
            directions: std::array::from_fn(|_| DirectionSpec {
                delay: 0,
                server: Server::Unlimited,
                queue: "infinite".into(),
                loss: link::Pattern::Bernoulli(0.0),
                overhead: 0,
            }),
            seed: 0,
        };
        let link = Link::new(
            LinkConfig {
                shell: 0,
                direction: Direction::Uplink,
                delay: 0,
                server: Server::Unlimited,
                queue: aqm::parse_queue("infinite").unwrap(),
                loss: None,
                max_packet: 1500,
                overhead: 0,
            },
            0,
            LogSink::disabled(),
        );
        let result = DirectionResult {
            link,
            read: 0,
            write_errors: 0,
            lateness: Lateness::default(),
        };
        let summary = summarize(&[spec], 0, &[(0, Direction::Uplink, result)], 0, 1.0);
        let parsed: serde_json::Value = serde_json::from_str(&summary.json).expect("valid JSON");
        assert_eq!(parsed["directions"][0]["description"], description);
        assert_eq!(parsed["directions"][0]["dropped"]["tail"], 0);
        assert_eq!(parsed["directions"][0]["departure_lateness"]["packets"], 0);
    }
}
