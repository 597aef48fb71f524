//! A chain of shells around one command: each shell a namespace joined to
//! the one around it by a pair of TUN devices and two packet pumps.
//!
//!   host ns ── emu0-PID ⇄ [uplink/downlink pumps] ⇄ ingress ── ns 1
//!   ns 1    ── emu1-PID ⇄ [pumps]                 ⇄ ingress ── ns 2 … command
//!
//! The namespaces between shells route (the host's namespace alone
//! masquerades the shells' addresses), so what one of them would only
//! forward from shell to shell, emu hands over in memory instead (see
//! `forwarding`), and the kernel sees only what it must answer.

mod shell;

use crate::accounting::kernel_drops::{self, KernelDrops};
use crate::accounting::receiver_drops::{ReceiverDrops, ReceiverWatch};
use crate::accounting::status::{self, StatusLine};
use crate::accounting::tcp_sampler::Sampler;
use crate::control::{self, Endpoint};
use crate::datapath::forwarding::{Crossing, Route};
use crate::datapath::pump::{DirectionPump, DirectionResult, PumpNews, Timing};
use crate::datapath::reader::Reader;
use crate::error::{Result, ShellError};
use crate::spec::{Finished, RunOptions, ShellSpec};
use crate::summary;
use crate::sys::addressing::{self, AddressPair};
use crate::sys::command::{self, CommandSpec};
use crate::sys::guardian::Guardian;
use crate::sys::nat::{self};
use crate::sys::netns::{self, NetNs};
use crate::sys::outside::Outside;
use crate::sys::rootless;
use crate::sys::{devices, dns, environment, privilege, signals, sysctl};
use emu_core::log::{Direction, LogHeader, LogWriter, WriterTotals};
use shell::{build_shell, seed_from_clock, Around, RunningShell};
use std::io::IsTerminal;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Messages to the control thread.
enum News {
    Pump(PumpNews),
    Exited(std::process::ExitStatus),
    Signal(i32),
}

/// Runs `options.command` inside `shells` (outermost first) and returns the
/// command's exit status and the logs written.
pub fn run(shells: Vec<ShellSpec>, options: RunOptions) -> Result<Finished> {
    if options.rootless {
        rootless::enter()?;
    }
    privilege::check()?;
    // The guardian must be forked while this process has a single thread.
    let mut guardian = Guardian::start()?;
    signals::block_forwarded_signals();
    let result = run_guarded(shells, options, &mut guardian);
    guardian.release();
    result
}

/// The run, phase by phase, once the guardian watches: the host and the
/// outputs, the chain of shells, the threads that move packets, the
/// command; then supervising it until it ends, tearing everything down and
/// reporting what each direction did.
fn run_guarded(
    shells: Vec<ShellSpec>,
    options: RunOptions,
    guardian: &mut Guardian,
) -> Result<Finished> {
    let seeds: Vec<u64> = shells
        .iter()
        .map(|s| s.seed.unwrap_or_else(seed_from_clock))
        .collect();
    // Read and bound before anything is built, so a bad file or a taken
    // path leaves nothing behind.
    let replay = (options.control_replay.as_deref())
        .map(control::record::read)
        .transpose()
        .map_err(ShellError::new)?;
    let endpoint = options.control.as_ref().map(Endpoint::bind).transpose()?;
    let (host, outside) = prepare_host(&options, guardian)?;
    let mut writer = prepare_outputs(&options)?;
    let (news_tx, news_rx) = mpsc::channel::<News>();
    let pump_tx = relay_pump_news(news_tx.clone());
    let mut chain = build_chain(
        &shells,
        &seeds,
        &options,
        &host,
        guardian,
        writer.as_mut(),
        pump_tx,
    )?;
    let readers = start_readers(&chain.running, chain.depth, options.timing)?;
    let steering = steer(&chain, &options, endpoint, replay)?;
    prepare_ends(&options, &host, &chain)?;
    // Held until the run ends: the relay answers the command's lookups.
    let names = dns::prepare(
        options.dns,
        &host,
        &chain.outermost().pair,
        &chain.innermost().inner,
        options.rootless,
    );
    if let Some(w) = writer.as_mut() {
        w.start();
    }
    for line in &options.at_start {
        eprintln!("emu: {line}");
    }
    let command = start_command(&shells, &options, &host, &chain, names.as_ref(), &news_tx)?;
    let started = std::time::Instant::now();
    let (status, trace_ended) = supervise(&news_rx, &command, &shells);
    if let Some(server) = steering {
        server.stop();
    }
    let (results, receivers) = tear_down(&mut chain, readers, command, outside, &host);
    report(Report {
        shells: &shells,
        options: &options,
        chain,
        results,
        receivers,
        writer,
        started,
        status,
        trace_ended,
    })
}

/// The path's elements made steerable: a replayed `control.jsonl`
/// scheduled, and the control socket's server started (None without
/// `--control`). Changes are recorded in the log directory's
/// `control.jsonl`.
fn steer(
    chain: &Chain,
    options: &RunOptions,
    endpoint: Option<Endpoint>,
    replay: Option<Vec<control::record::Recorded>>,
) -> Result<Option<control::Server>> {
    if endpoint.is_none() && replay.is_none() {
        return Ok(None);
    }
    let list = chain
        .running
        .iter()
        .enumerate()
        .flat_map(|(k, shell)| {
            let index = chain.depth + k;
            shell
                .pumps
                .iter()
                .map(move |(d, pump)| (format!("{index}.{}", d.name()), pump.shared()))
        })
        .collect();
    // Run time 0 is the moment the whole path exists: the innermost
    // shell's start, its log header's origin. A recorded change after it
    // can be replayed on every link.
    let elements = control::Elements::new(list, chain.innermost().start);
    let file = match &options.log_dir {
        Some(dir) => {
            let path = dir.join(control::record::FILE);
            let file = privilege::io_as_invoker(|| std::fs::File::create(&path))
                .map_err(|e| ShellError::os(&format!("creating {}", path.display()), e))?;
            Some(file)
        }
        None => None,
    };
    let control = control::Control::new(elements, control::record::Recorder::new(file));
    if let Some(changes) = &replay {
        control.replay(changes).map_err(ShellError::new)?;
    }
    let Some(endpoint) = endpoint else {
        return Ok(None);
    };
    eprintln!(
        "emu: steer the path with `emu ctl {} ...` (elements {})",
        endpoint.address(),
        control.elements.names().join(", ")
    );
    control::Server::start(endpoint, control)
        .map(Some)
        .map_err(|e| ShellError::os("starting the control thread", e))
}

/// The namespace the chain starts from, cleared of NAT rules whose emu is
/// gone, and the `--outside` programs started in it (first, so a server
/// has the time the shells take to come up).
fn prepare_host(options: &RunOptions, guardian: &mut Guardian) -> Result<(Arc<NetNs>, Outside)> {
    let host = Arc::new(NetNs::current()?);
    nat::sweep_stale(&host);
    if options.rootless {
        // Whatever runs in emu's own outer namespace goes with emu.
        guardian.watch_namespace(host.identity()?);
    }
    let outside = Outside::start(&host, &options.outside, guardian)?;
    Ok((host, outside))
}

/// The log and capture directories, made as the user, and the one writer
/// thread that takes both the log records and the captures (None when
/// neither is asked for).
fn prepare_outputs(options: &RunOptions) -> Result<Option<LogWriter>> {
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
    Ok((options.log_dir.is_some() || options.pcap.is_some()).then(LogWriter::new))
}

/// A channel for the pumps' news, passed on to the control thread's.
fn relay_pump_news(news: mpsc::Sender<News>) -> mpsc::Sender<PumpNews> {
    let (pump_tx, pump_rx) = mpsc::channel::<PumpNews>();
    std::thread::spawn(move || {
        while let Ok(n) = pump_rx.recv() {
            if news.send(News::Pump(n)).is_err() {
                break;
            }
        }
    });
    pump_tx
}

/// The chain as built: its shells (outermost first), the prompt prefix
/// naming the shells, the address pairs in use, and how deep it is
/// nested in other emus.
struct Chain {
    running: Vec<RunningShell>,
    prompt: String,
    taken: Vec<u32>,
    depth: usize,
}

impl Chain {
    /// The outermost shell, whose outer end is on the host.
    fn outermost(&self) -> &RunningShell {
        self.running.first().expect("at least one shell")
    }

    /// The innermost shell, whose namespace is the command's.
    fn innermost(&self) -> &RunningShell {
        self.running.last().expect("at least one shell")
    }
}

/// Builds every shell, outermost first, each in the namespace of the one
/// before, and joins their directions (see `link_followers` and
/// `link_hand_overs`).
fn build_chain(
    shells: &[ShellSpec],
    seeds: &[u64],
    options: &RunOptions,
    host: &Arc<NetNs>,
    guardian: &mut Guardian,
    mut writer: Option<&mut LogWriter>,
    pump_tx: mpsc::Sender<PumpNews>,
) -> Result<Chain> {
    let depth: usize = std::env::var("EMU_SHELL_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    // The variable alone is not trusted: a user of a setuid emu could set it
    // to have emu treat the host like one of its own namespaces.
    let nested_in_emu = depth > 0 && !host.is_initial();
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
            seeds[k],
            &Around {
                outer: &outer,
                host,
                host_is_machine: !nested_in_emu,
                earlier: &running,
            },
            options,
            &mut taken,
            guardian,
            writer.as_deref_mut(),
            pump_tx.clone(),
        )?;
        prompt += &format!("[{}] ", spec.description);
        outer = shell.inner.clone();
        running.push(shell);
    }
    drop(selection);
    link_followers(&running);
    link_hand_overs(&running);
    Ok(Chain {
        running,
        prompt,
        taken,
        depth,
    })
}

/// Readies the path's two ends for the command: the command's namespace
/// gets its sysctls (`RunOptions::command_sysctls`), and the host's end
/// of the outermost shell and the command's device their programs
/// (`RunOptions::device_helpers`).
fn prepare_ends(options: &RunOptions, host: &NetNs, chain: &Chain) -> Result<()> {
    let (outermost, innermost) = (chain.outermost(), chain.innermost());
    for (key, value) in &options.command_sysctls {
        sysctl::set_in(&innermost.inner, key, value)?;
    }
    let Some(attach) = &options.device_helpers else {
        return Ok(());
    };
    host.run(|| attach(&outermost.outer_device).map_err(ShellError::new))?;
    innermost
        .inner
        .run(|| attach(devices::INNER_DEVICE).map_err(ShellError::new))
}

/// One reader per direction, each serving that direction's input in every
/// shell (see `reader` for why).
fn start_readers(running: &[RunningShell], depth: usize, timing: Timing) -> Result<Vec<Reader>> {
    Direction::BOTH
        .into_iter()
        .map(|direction| {
            let inputs = running
                .iter()
                .flat_map(|shell| &shell.pumps)
                .filter(|(d, _)| *d == direction)
                .map(|(_, pump)| pump.input())
                .collect();
            let name = format!("emu{depth}{}-read", &direction.name()[..1]);
            Reader::start(&name, inputs, timing)
                .map_err(|e| ShellError::os("starting a reader thread", e))
        })
        .collect()
}

/// The command as it runs, and what watches it.
struct Command {
    pid: i32,
    /// Its namespace, where SIGINT goes to the foreground process.
    namespace: Option<(u64, u64)>,
    sampler: Option<Sampler>,
    receivers: ReceiverWatch,
    status_line: Option<StatusLine>,
}

/// Starts the command in the innermost namespace, as the user, with the
/// TCP sampler before it (so its first connection is seen), the watch on
/// the receivers' drops, a thread that reports its exit, the signal
/// forwarder and the status line.
fn start_command(
    shells: &[ShellSpec],
    options: &RunOptions,
    host: &Arc<NetNs>,
    chain: &Chain,
    names: Option<&dns::CommandNames>,
    news_tx: &mpsc::Sender<News>,
) -> Result<Command> {
    let inner = &chain.innermost().inner;
    let invoker = privilege::invoker();
    let argv = if options.command.is_empty() {
        vec![command::login_shell(&invoker)]
    } else {
        options.command.clone()
    };
    let sampler = match (options.tcp_info, &options.log_dir) {
        (Some(interval), Some(dir)) => Some(Sampler::start(inner, dir, interval)?),
        _ => None,
    };
    let outermost = chain.outermost().pair;
    let shells_deep = chain.depth + shells.len();
    let env = environment::command_environment(outermost, &chain.prompt, &chain.taken, shells_deep);
    let argv = crate::placeholders::expand(argv, &env);
    // What receivers drop from here on, on either side of the chain.
    let receivers = ReceiverWatch::start(host, inner);
    let mut child = command::spawn(
        inner,
        &CommandSpec {
            argv,
            env,
            invoker,
            own_process_group: false,
            mount_namespace: names.map(|n| n.mount_namespace().fd()),
        },
    )?;
    let pid = child.id() as i32;
    let namespace = inner.identity().ok();
    {
        let news = news_tx.clone();
        std::thread::spawn(move || {
            if let Ok(status) = child.wait() {
                let _ = news.send(News::Exited(status));
            }
        });
    }
    {
        let news = news_tx.clone();
        signals::spawn_forwarder(move |signal| news.send(News::Signal(signal)).is_ok());
    }
    let status_line = options.status.then(|| {
        let rows = chain
            .running
            .iter()
            .zip(shells)
            .map(|(shell, spec)| status::Row {
                label: spec.description.clone(),
                directions: [0, 1].map(|d| shell.pumps[d].1.live()),
            })
            .collect();
        StatusLine::start(rows, std::io::stderr().is_terminal())
    });
    Ok(Command {
        pid,
        namespace,
        sampler,
        receivers,
        status_line,
    })
}

/// Waits for the command to end, passing signals on to it and stopping it
/// when a `--once` trace ends; its exit status, and whether a trace ended.
fn supervise(
    news_rx: &mpsc::Receiver<News>,
    command: &Command,
    shells: &[ShellSpec],
) -> (i32, bool) {
    let child_pid = command.pid;
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
                    signals::send(child_pid, libc::SIGKILL);
                    kill_at = None;
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => Err(()),
            },
        };
        match news {
            Ok(News::Exited(status)) => break command::status_code(status),
            Ok(News::Signal(libc::SIGINT)) => signals::interrupt(command.namespace, child_pid),
            Ok(News::Signal(signal)) => {
                signals::send(child_pid, signal);
                // emu was told to end: a command that ignores it is
                // killed after a grace period, or emu would never end
                // and never clean up. SIGINT (above) is only passed on
                // (an interactive shell rightly ignores it).
                if kill_at.is_none() {
                    kill_at = Some(std::time::Instant::now() + STOP_GRACE);
                }
            }
            Ok(News::Pump(PumpNews::TraceEnded(n))) if !trace_ended => {
                trace_ended = true;
                eprintln!(
                    "emu: {}: the trace ended (--once); stopping the command",
                    shells[n].description
                );
                // SIGKILL follows if it ignores SIGTERM.
                signals::send(child_pid, libc::SIGTERM);
                kill_at = Some(std::time::Instant::now() + STOP_GRACE);
            }
            Ok(News::Pump(_)) => {}
            Err(()) => break 1,
        }
    };
    (status, trace_ended)
}

/// Once the command has ended: stops what watched it, kills whatever it
/// left in the chain's namespaces and the `--outside` programs, ends the
/// connections `host` had with the command (`ss -K`), then stops
/// reading before each pump takes what is left on its ring, so nothing is
/// read that a stopped pump would not count. What each direction did, and
/// what the receivers dropped.
fn tear_down(
    chain: &mut Chain,
    readers: Vec<Reader>,
    command: Command,
    outside: Outside,
    host: &NetNs,
) -> (
    Vec<(usize, Direction, DirectionResult)>,
    Option<ReceiverDrops>,
) {
    if let Some(line) = command.status_line {
        line.stop();
    }
    if let Some(sampler) = command.sampler {
        sampler.stop();
    }
    let identities: Vec<(u64, u64)> = chain
        .running
        .iter()
        .filter_map(|s| s.inner.identity().ok())
        .collect();
    netns::kill_processes_in(&identities);
    drop(outside);
    // The connections left with the command's address go: its last
    // packets die with the path, so a server on the host would otherwise
    // wait minutes for an answer (iperf3's says it is busy meanwhile), and
    // a connection of emu's congestion controls would hold their programs.
    let innermost = chain.innermost();
    close_connections_to(host, innermost.pair);
    // And the command's own, left closing by its processes' end.
    let _ = innermost.inner.exec("ss", &["-K", "-t", "-a"]);
    readers.into_iter().for_each(Reader::stop);
    let results = finish_pumps(&mut chain.running, chain.depth);
    (results, command.receivers.finish())
}

/// What `report` turns into the run's accounting.
struct Report<'a> {
    shells: &'a [ShellSpec],
    options: &'a RunOptions,
    chain: Chain,
    results: Vec<(usize, Direction, DirectionResult)>,
    receivers: Option<ReceiverDrops>,
    writer: Option<LogWriter>,
    started: std::time::Instant,
    status: i32,
    trace_ended: bool,
}

/// Closes the logs, says what they lost, puts the kernel's drops in their
/// headers, and writes the summary (on stderr with `--stats`, as JSON in
/// the log directory). A log the disk refused fails the run, however the
/// command did: the experiment's record is incomplete, and a script must
/// notice. The shells are removed last.
fn report(run: Report) -> Result<Finished> {
    let depth = run.chain.depth;
    let totals = match run.writer {
        Some(w) => w
            .finish()
            .map_err(|e| ShellError::os("writing the packet log", e))?,
        None => WriterTotals::default(),
    };
    let mut log_failed = warn_of_lost_records(&totals);
    record_kernel_drops(&run.chain.running, &run.results);
    let summary = summary::summarize(
        run.shells,
        depth,
        &run.results,
        run.receivers,
        (totals.records_lost, totals.records_unwritten),
        run.started.elapsed().as_secs_f64(),
    );
    if run.options.stats {
        eprint!("{}", summary.text);
    }
    if let Some(dir) = &run.options.log_dir {
        let path = dir.join(format!("summary-{depth}.json"));
        if let Err(e) = privilege::io_as_invoker(|| std::fs::write(&path, &summary.json)) {
            // The emulation is over and its logs are closed: say what is
            // missing rather than lose the command's status to it.
            eprintln!("emu: error: cannot write {}: {e}", path.display());
            let _ = std::fs::remove_file(&path);
            log_failed = true;
        }
    }
    let logs = run
        .chain
        .running
        .iter()
        .filter_map(|s| s.log.clone())
        .collect();
    drop(run.chain);
    let status = if run.trace_ended { 0 } else { run.status };
    Ok(Finished {
        status: if log_failed && status == 0 { 1 } else { status },
        logs,
    })
}

/// Warns of the records and captures the writer lost or could not write;
/// true if a log is incomplete.
fn warn_of_lost_records(totals: &WriterTotals) -> bool {
    if totals.records_lost > 0 {
        eprintln!(
            "emu: warning: {} log records were lost because the disk could not keep up ({} written)",
            totals.records_lost, totals.records
        );
    }
    if totals.captures_lost > 0 {
        eprintln!(
            "emu: warning: {} captured packets were lost because the disk could not keep up ({} written)",
            totals.captures_lost, totals.captures
        );
    }
    let mut log_failed = false;
    for (path, error) in totals.incomplete() {
        log_failed = true;
        eprintln!(
            "emu: error: {} is incomplete ({error}): it holds everything before the failure",
            path.display()
        );
    }
    if log_failed {
        eprintln!(
            "emu: error: {} log records and {} captured packets were not written",
            totals.records_unwritten, totals.captures_unwritten
        );
    }
    log_failed
}

/// How long a command asked to stop (by a signal to emu, or by the end of
/// a `--once` trace) has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Tells each direction which inputs its writes reach at once: the other
/// direction of its shell (answers), and the same direction of the next
/// shell along the packet's way (uplink goes outwards, to shell k-1;
/// downlink inwards, to shell k+1).
fn link_followers(running: &[RunningShell]) {
    let direction = |k: usize, d: usize| &running[k].pumps[d].1;
    for k in 0..running.len() {
        let mut up = vec![direction(k, 1)];
        if k > 0 {
            up.push(direction(k - 1, 0));
        }
        direction(k, 0).feeds(&up);
        let mut down = vec![direction(k, 0)];
        if k + 1 < running.len() {
            down.push(direction(k + 1, 1));
        }
        direction(k, 1).feeds(&down);
    }
}

/// Has each direction hand what it lets leave straight to the next shell
/// of the chain, where the namespace between them would only forward it
/// (uplink from shell k to k-1, downlink from k-1 to k).
fn link_hand_overs(running: &[RunningShell]) {
    let direction = |k: usize, d: usize| &running[k].pumps[d].1;
    for k in 1..running.len() {
        let inner: Vec<AddressPair> = running[k..].iter().map(|s| s.pair).collect();
        let crossing = Crossing::between(&running[k - 1].pair, &inner);
        direction(k, 0).hands_on(direction(k - 1, 0), crossing.clone(), Route::Outward);
        direction(k - 1, 1).hands_on(direction(k, 1), crossing, Route::Inward);
    }
}

/// Stops every pump and collects what each direction did, shell by shell
/// (uplink, then downlink). Pumps stop in the order packets flow, uplink
/// from the innermost shell out and downlink from the outermost in, so no
/// pump is handed a packet after it stopped counting.
fn finish_pumps(
    running: &mut [RunningShell],
    depth: usize,
) -> Vec<(usize, Direction, DirectionResult)> {
    let shells = running.len();
    // Each shell's pumps, uplink then downlink (as built).
    let mut pumps: Vec<[Option<DirectionPump>; 2]> = running
        .iter_mut()
        .map(|shell| {
            let mut pumps = shell.pumps.drain(..).map(|(_, pump)| Some(pump));
            [(); 2].map(|_| pumps.next().flatten())
        })
        .collect();
    let mut finished: Vec<[Option<DirectionResult>; 2]> =
        (0..shells).map(|_| [None, None]).collect();
    let order = (0..shells)
        .rev()
        .map(|k| (k, Direction::Uplink))
        .chain((0..shells).map(|k| (k, Direction::Downlink)));
    for (k, direction) in order {
        let d = direction as usize;
        let pump = pumps[k][d].take().expect("each shell has both directions");
        finished[k][d] = Some(pump.finish());
    }
    let mut results = Vec::new();
    for (k, (shell, directions)) in running.iter().zip(finished).enumerate() {
        // What the kernel dropped before emu could read, or after it wrote.
        let outer = kernel_drops::read(&shell.outer, &shell.outer_device);
        let inner = kernel_drops::read(&shell.inner, devices::INNER_DEVICE);
        for (direction, result) in Direction::BOTH.into_iter().zip(directions) {
            let mut result = result.expect("every pump finished");
            result.kernel = match direction {
                Direction::Uplink => KernelDrops::of(inner, outer),
                Direction::Downlink => KernelDrops::of(outer, inner),
            };
            results.push((depth + k, direction, result));
        }
    }
    results
}

/// Puts what the kernel dropped on the way in into each shell's log header,
/// now that the run is over, so the log alone tells those losses from the
/// path's. A log that cannot be updated keeps its header; the summary still
/// has the counts.
fn record_kernel_drops(running: &[RunningShell], results: &[(usize, Direction, DirectionResult)]) {
    for (k, shell) in running.iter().enumerate() {
        let Some(path) = &shell.log else { continue };
        let mut dropped = [0u64; 2];
        let mut known = false;
        for (_, direction, result) in results.iter().skip(2 * k).take(2) {
            known |= result.kernel.known;
            dropped[*direction as usize] = result.kernel.on_the_way_in();
        }
        if !known {
            continue;
        }
        let updated = privilege::io_as_invoker(|| {
            let header = emu_core::log::LogReader::open(path)
                .map_err(|e| std::io::Error::other(e.to_string()))?
                .header;
            emu_core::log::update_header(
                path,
                &LogHeader {
                    kernel_dropped: Some(dropped),
                    ..header
                },
            )
        });
        if let Err(e) = updated {
            eprintln!(
                "emu: warning: could not record the kernel's drops in {}: {e}",
                path.display()
            );
        }
    }
}

/// Ends the host's TCP connections with the command's addresses (`ss
/// -K`): the command and its path are gone, and a connection left closing
/// would retry for minutes, holding what it uses (the programs of emu's
/// congestion controls among it).
fn close_connections_to(host: &NetNs, pair: AddressPair) {
    let (v4, mapped, v6) = (
        pair.inner4.to_string(),
        format!("[::ffff:{}]", pair.inner4),
        format!("[{}]", pair.inner6),
    );
    let filter = ["dst", &v4, "or", "dst", &mapped, "or", "dst", &v6];
    let _ = host.exec("ss", &[&["-K", "-t", "-a"][..], &filter[..]].concat());
}
