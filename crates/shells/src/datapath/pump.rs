//! The data path of one direction of a shell: its input (read by its
//! direction's reader thread, which stamps each packet's arrival as it
//! comes off the TUN device; see [`crate::datapath::reader`]), and a pump thread that
//! writes each packet out when the link model says it is due — sleeping
//! until shortly before, then spinning. Where departures come closer
//! together than the slack (1 Gbit/s: one every 12 µs), the pump ticks
//! instead: it sleeps on a timer kept set a slack after the next departure
//! and writes everything due when it wakes, merged per flow (see
//! `Ticker`).
//!
//! The link model and everything that writes lives behind one lock, taken
//! by whichever thread has work. A packet due the moment it is read (no
//! delay, an idle link) is written by the reader itself, in the same
//! wake-up: handing it to a sleeping pump would cost a second wake-up, more
//! than the whole model. So is a packet due sooner than the sleeping pump
//! could wake for it (see [`crate::datapath::direction::Waits`]). Under load (the reader
//! finds more packets waiting than a few) the reader only reads, and hands
//! packets over a lock-free ring to the pump, so reading and writing run
//! on two cores. How packets are read and reach the model is in
//! [`crate::datapath::input`].
//!
//! A pump about to sleep first takes what its writes caused at once (a
//! reply, an acknowledgement), so that packet's arrival is stamped when it
//! happened, not when the other direction's reader woke for it.
//!
//! Between the shells of one chain, a packet the kernel would only forward
//! goes from one model to the next in memory (see [`crate::datapath::forwarding`]):
//! it leaves one shell and arrives in the next at the same instant, on the
//! thread that let it leave.
//!
//! No async runtime is involved: its timers tick in milliseconds, and the
//! model needs microseconds.

use crate::accounting::lateness::Lateness;
use crate::accounting::live::LiveCounters;
use crate::accounting::overload::Overload;
pub use crate::datapath::direction::PumpNews;
use crate::datapath::direction::{
    follow, hand_on, lock, Follower, Model, Onward, Shared, Turn, Waits, Wake,
};
use crate::datapath::forwarding::{Crossing, Route};
use crate::datapath::input::Input;
use crate::datapath::spin::{
    Plan, Spacing, Spin, SpinBudget, Tick, CALIBRATION_SLEEP, CALIBRATION_SLEEPS,
};
use crate::datapath::wire::MERGED_HEADERS;
use crate::sys::timer::KeptTimer;
use crate::sys::{poll, scheduling};
use emu_core::ring::spsc;
use emu_core::time::{monotonic_now, Nanos};
use emu_core::Packet;
use link::Link;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;

/// Packets between reader and pump; deep enough for bursts at 10 Gbit/s.
const RING_CAPACITY: usize = 1 << 15;
/// How many arrivals the pump takes before it checks for due departures,
/// so a burst of arrivals cannot hold departures back.
const ARRIVAL_BATCH: usize = 64;

/// Tuning of the pump's wait.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long before a departure the pump stops sleeping and spins;
    /// `None` adapts it to this machine's measured wake-up lateness.
    pub spin: Option<Nanos>,
    /// The lateness accepted for a write: an adaptive spin covers only the
    /// wake-up lateness beyond it (see `crate::datapath::spin`).
    /// [`DEFAULT_SLACK`] unless the user chose.
    pub slack: Nanos,
    /// Never sleep: readers and pumps poll (yielding the core to anything
    /// else runnable). Removes the wake-up latency of sleeping threads from
    /// every packet's path, at the price of keeping the cores busy.
    pub busy_poll: bool,
}

/// The slack by default: writes at most about 20 µs late at the 99th
/// percentile. The spin that would make them exact takes a third of emu's
/// CPU at 10 Mbit/s on this project's VM (docs/performance.md),
/// and 20 µs is a fiftieth of a packet's time on a 10 Mbit/s link, well
/// within the 50 µs that emu's timing targets allow there.
pub const DEFAULT_SLACK: Nanos = 20_000;

/// The devices one direction moves packets between.
#[derive(Debug, Clone, Copy)]
pub struct Devices {
    /// Read by the reader thread.
    pub input: RawFd,
    /// Written by whichever thread runs the model. Both devices carry
    /// virtio-net headers (see `Tun::create`).
    pub output: RawFd,
}

/// The pump thread of one direction, its input and what they share.
pub struct DirectionPump {
    pump: Option<JoinHandle<Waited>>,
    /// The slack its spin accepted, for the summary.
    slack: Option<Nanos>,
    input: Arc<Input>,
    shared: Arc<Shared>,
    live: Arc<LiveCounters>,
}

/// What one direction did, read after its threads have stopped.
pub struct DirectionResult {
    pub link: Link,
    /// Packets that arrived: read from the device, or handed over.
    pub read: u64,
    /// Of those, the packets the previous shell of a chain handed over in
    /// memory (see [`crate::datapath::forwarding`]).
    pub handed_in: u64,
    pub write_errors: u64,
    /// How late each write was against its due time.
    pub lateness: Lateness,
    /// One-second windows whose lateness p99 broke emu's bound, of all
    /// judged, and the worst of them.
    pub overload: OverloadSummary,
    /// What the kernel dropped around this direction (filled in by the
    /// chain, which knows the devices).
    pub kernel: crate::accounting::kernel_drops::KernelDrops,
    /// The spin the pump allowed itself before its departures, on average
    /// (adapted to the machine and held to its budget, unless `--spin`
    /// fixed it); None with `--busy-poll`.
    pub spin: Option<Nanos>,
    /// The lateness the adaptive spin accepted (see [`Timing::slack`]);
    /// None where the spin was fixed or the pump busy polled.
    pub slack: Option<Nanos>,
    /// Of the pump's waits for a departure, the share it ticked for
    /// (`datapath::spin::Tick`) instead of spinning; None without a wait.
    pub ticked_share: Option<f64>,
}

/// The overload windows of one direction.
#[derive(Debug, Clone, Copy, Default)]
pub struct OverloadSummary {
    pub windows: u64,
    pub overloaded: u64,
    pub worst_p99_ns: Nanos,
    pub worst_mean_ns: f64,
}

impl DirectionPump {
    /// Starts the pump: packets read from `input` (by a
    /// [`crate::datapath::reader::Reader`] given [`DirectionPump::input`]) cross
    /// `link` and are written to `output`. `label` names the direction in
    /// warnings.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        name: &str,
        label: String,
        shell: usize,
        link: Link,
        devices: Devices,
        timing: Timing,
        news: Sender<PumpNews>,
    ) -> io::Result<DirectionPump> {
        let Devices { input, output } = devices;
        let (producer, consumer) = spsc::<Packet>(RING_CAPACITY);
        let live = Arc::new(LiveCounters::default());
        let shared = Arc::new(Shared {
            model: Mutex::new(Model {
                link: Some(link),
                ring: consumer,
                output,
                write_errors: 0,
                lateness: Lateness::default(),
                overload: Overload::new(label),
                due: Vec::with_capacity(ARRIVAL_BATCH),
                merged: Vec::with_capacity(MERGED_HEADERS),
                handed: None,
                onward: None,
                next_publish: 0,
                told_trace_end: false,
                shell,
                news,
                live: live.clone(),
                spacing: Spacing::between_instants(),
            }),
            sleeping: AtomicBool::new(false),
            sleep_until: AtomicU64::new(u64::MAX),
            reader_runs: AtomicU64::new(0),
            pending: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            wake: Wake::new()?,
            ring_lateness: AtomicU64::new(0),
            onward: OnceLock::new(),
            handed_in: AtomicU64::new(0),
            followers: OnceLock::new(),
        });
        let pump = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("{name}-pump"))
                .spawn(move || pump_loop(&shared, timing))?
        };
        let input = Arc::new(Input::new(input, producer, shared.clone()));
        let adaptive = timing.spin.is_none() && !timing.busy_poll;
        Ok(DirectionPump {
            pump: Some(pump),
            slack: adaptive.then_some(timing.slack),
            input,
            shared,
            live,
        })
    }

    /// This direction's input, for its reader.
    pub(crate) fn input(&self) -> Arc<Input> {
        self.input.clone()
    }

    /// Names the directions whose input this direction's output feeds: the
    /// other direction of the same shell (which carries the answers) and
    /// the same direction of the next shell of a chain. After writing, a
    /// thread takes what its write caused there at once (see [`Input`]).
    /// Set once, before traffic flows.
    pub fn feeds(&self, next: &[&DirectionPump]) {
        let _ = self.shared.followers.set(
            next.iter()
                .map(|d| Arc::downgrade(&d.input) as Weak<dyn Follower>)
                .collect(),
        );
    }

    /// Has the packets this direction lets leave, which the namespace
    /// `crossing` would only route `towards` the next shell, go straight
    /// into `next`'s model (the same direction, one shell on) instead of
    /// through the kernel. Set once, before traffic flows.
    pub(crate) fn hands_on(&self, next: &DirectionPump, crossing: Crossing, towards: Route) {
        let (producer, consumer) = spsc::<Packet>(RING_CAPACITY);
        lock(&next.shared.model).handed = Some(consumer);
        lock(&self.shared.model).onward = Some(Onward {
            ring: producer,
            crossing,
            towards,
        });
        let _ = self.shared.onward.set(next.shared.clone());
    }

    /// What this direction's threads share, for a controller to reach
    /// its model (see `crate::control::elements`).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    /// The counters this direction publishes while it runs.
    pub fn live(&self) -> Arc<LiveCounters> {
        self.live.clone()
    }

    /// Stops the pump after it has taken every packet off the ring. Call
    /// once the readers have stopped, and the direction that hands packets
    /// to this one (see [`DirectionPump::hands_on`]) has finished, so that
    /// no packet arrives after the pump stopped counting; the count of
    /// packets read is taken here, from the input and the hand-overs.
    pub fn finish(mut self) -> DirectionResult {
        let handed_in = self.shared.handed_in.load(Ordering::Acquire);
        let read = self.input.read() + handed_in;
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.ring();
        let Waited { spin, ticked_share } = self
            .pump
            .take()
            .expect("finish is called once")
            .join()
            .expect("pump thread panicked");
        let mut model = lock(&self.shared.model);
        model.overload.finish();
        let overload = OverloadSummary {
            windows: model.overload.windows,
            overloaded: model.overload.overloaded,
            worst_p99_ns: model.overload.worst_p99,
            worst_mean_ns: model.overload.worst_mean,
        };
        DirectionResult {
            link: model.link.take().expect("the link is taken once"),
            read,
            handed_in,
            write_errors: model.write_errors,
            lateness: std::mem::take(&mut model.lateness),
            overload,
            kernel: Default::default(),
            spin,
            slack: self.slack,
            ticked_share,
        }
    }
}

/// How a pump waited for its departures, for the summary.
struct Waited {
    /// The mean spin it allowed itself (None: it busy polled).
    spin: Option<Nanos>,
    /// The share of its waits it ticked for (None: it waited for none).
    ticked_share: Option<f64>,
}

/// Runs until stopped; returns how it waited. Each turn runs the model on
/// what arrived and lets leave what is due; then the pump either takes
/// what its writes caused, or waits for the next departure.
fn pump_loop(shared: &Arc<Shared>, timing: Timing) -> Waited {
    let mut waiting = Waiting::start(shared, timing);
    // Departures of other directions this pump took on while following
    // its writes (see `takes_what_it_caused`).
    let mut waits = Waits::default();
    // Packets written since the pump last followed its writes or waited,
    // and whether any came to it over the ring (the reader is loaded).
    let (mut wrote, mut loaded) = (false, false);
    loop {
        waits.run_due();
        let (deadline, runs, spacing) = match run_turn(shared, &mut waiting, &mut waits) {
            Step::Again {
                wrote: w,
                loaded: l,
            } => {
                (wrote, loaded) = (wrote || w, loaded || l);
                continue;
            }
            Step::Stopped => {
                waits.hand_to_pumps();
                return waiting.ended();
            }
            Step::Idle {
                wrote: w,
                deadline,
                runs,
                spacing,
            } => {
                wrote |= w;
                (deadline, runs, spacing)
            }
        };
        let now = monotonic_now();
        let spin_now = waiting.allowed_spin(now);
        if takes_what_it_caused(&waiting, wrote && !loaded, deadline, now, spin_now) {
            wrote = false;
            follow(Turn {
                writers: vec![shared.clone()],
                waits: &mut waits,
            });
            continue;
        }
        let deadline = match (deadline, waits.earliest()) {
            (Some(d), Some(w)) => Some(d.min(w)),
            (d, w) => d.or(w),
        };
        match deadline {
            Some(d) if d <= now => continue,
            Some(d)
                if waits.is_empty()
                    && waiting
                        .tick
                        .as_mut()
                        .is_some_and(|tick| tick.wait(&shared.wake, &spacing, d, now)) =>
            {
                waiting.ticked_before_departure();
                (wrote, loaded) = (false, false);
                continue;
            }
            Some(_) => waiting.allowed_before_departure(spin_now),
            None => {}
        }
        wait(
            shared,
            &mut waiting,
            &waits,
            (deadline, runs),
            now,
            spin_now,
        );
        (wrote, loaded) = (false, false);
        waiting.publish_ring_lateness(shared);
    }
}

/// Whether the pump, before it would sleep, takes what its writes caused
/// at once (a ping's reply, a TCP acknowledgement), as a reader does after
/// its writes (see `direction::follow`): the packet is read, and its arrival
/// stamped, now, where the other direction's reader would run only after
/// its wake-up (tens to hundreds of microseconds on a virtual machine),
/// each one added to the emulated path's round trip. A departure of the
/// other direction due too soon to wake its pump for is then this pump's
/// to wait for. Not when it would not sleep (its own next departure is too
/// close, by the same rule as `wait`): then the other direction's reader
/// is as near. Nor under load (`wrote_unloaded` is false where the reader
/// handed packets over): the other reader is awake then, and a third
/// thread reading would only contend with it (TCP through `delay 0` by a
/// few percent, within this VM's spread).
fn takes_what_it_caused(
    waiting: &Waiting,
    wrote_unloaded: bool,
    deadline: Option<Nanos>,
    now: Nanos,
    spin_now: Nanos,
) -> bool {
    let follows = wrote_unloaded && !waiting.busy_poll;
    let sleeps = matches!(
        waiting.spin.plan_spinning(spin_now, deadline, now),
        Plan::Timed(_) | Plan::Idle
    );
    follows && sleeps
}

/// What a pump knows of its own waiting: the spin before a departure
/// (adapted to this machine's timed wake-ups, less the slack, and held to
/// its budget) and how late it runs after a ring, both learnt from its
/// sleeps; and the spins it allowed itself, for the summary.
struct Waiting {
    spin: Spin,
    rings: Spin,
    budget: Option<SpinBudget>,
    busy_poll: bool,
    /// How the pump waits where departures come closer together than its
    /// tick (see [`Ticker`]); None where the spin is fixed, the pump busy
    /// polls, or the slack is zero (exact writes asked for).
    tick: Option<Ticker>,
    /// The spins allowed before departures, summed and counted: what the
    /// summary reports, which with a budget is less than the estimate.
    allowed: u128,
    decisions: u64,
    /// Of those decisions, the waits ticked for (counted as no spin).
    ticked: u64,
}

/// A pump's ticking (see [`Tick`]): at its slack, and only for a
/// departure within a tick, since its readers do not wake it while it
/// ticks; with the timer it keeps set.
struct Ticker {
    tick: Tick,
    timer: KeptTimer,
}

impl Ticker {
    /// The ticker of a pump whose spin is `fixed` (or adapts: None) with
    /// `slack`: none for a fixed spin or busy polling, nor for a slack of
    /// zero, which asks for exact writes. Without a timer descriptor the
    /// pump spins as for sparse departures.
    fn for_timing(fixed: Option<Nanos>, slack: Nanos) -> Option<Ticker> {
        if fixed.is_some() || slack == 0 {
            return None;
        }
        let timer = KeptTimer::new().ok()?;
        Some(Ticker {
            tick: Tick {
                every: slack,
                woken_by_input: false,
            },
            timer,
        })
    }

    /// Waits, if the pump ticks for the departure due at `due` with its
    /// model's departures spaced as `spacing` (see [`Tick::until`]), for
    /// the kept timer or for the pump to be stopped; whether it waited.
    /// Readers are not told the pump sleeps: what they hand over waits for
    /// the tick, as it would for a pump busy writing.
    fn wait(&mut self, wake: &Wake, spacing: &Spacing, due: Nanos, now: Nanos) -> bool {
        let Some(until) = self.tick.until(spacing, due, now) else {
            return false;
        };
        if self.timer.by(until).is_err() {
            return false;
        }
        let (_, [rung, went_off]) = poll::wait([wake.fd.as_raw_fd(), self.timer.fd()], None);
        if went_off != 0 {
            self.timer.went_off();
        }
        if rung != 0 {
            wake.clear();
        }
        true
    }
}

impl Waiting {
    /// Readies the calling thread (its timer slack, its scheduling class)
    /// and calibrates the spin on a few short sleeps, unless it is fixed.
    fn start(shared: &Shared, timing: Timing) -> Waiting {
        scheduling::precise_timer_slack();
        if !timing.busy_poll {
            scheduling::realtime_priority();
        }
        // Busy polling spins through every wait: a fixed spin without end, so
        // it never calibrates, probes or sleeps on a timer.
        let fixed = if timing.busy_poll {
            Some(Nanos::MAX)
        } else {
            timing.spin
        };
        let samples = if fixed.is_none() {
            calibration_sleeps(shared)
        } else {
            Vec::new()
        };
        let spin = Spin::new(fixed, &samples).accepting(timing.slack);
        // A spin the user fixed (or busy polling) is theirs: only an adaptive
        // one is held to a share of the core.
        let budget = fixed.is_none().then(|| SpinBudget::new(monotonic_now()));
        // How late the pump runs after a ring is learnt apart from the spin:
        // a woken pump may also wait for a core, which the spin must not
        // chase (spinning longer would keep the cores busier still). No slack
        // here: this decides who sees to a close departure, not how exactly
        // (a thread that keeps one sleeps until its own spin before it).
        let rings = Spin::new(fixed, &samples);
        let tick = Ticker::for_timing(fixed, timing.slack);
        let waiting = Waiting {
            spin,
            rings,
            budget,
            busy_poll: timing.busy_poll,
            tick,
            allowed: 0,
            decisions: 0,
            ticked: 0,
        };
        waiting.publish_ring_lateness(shared);
        waiting
    }

    /// The spin allowed before the next departure: the estimate, held to
    /// the budget where there is one.
    fn allowed_spin(&mut self, now: Nanos) -> Nanos {
        match self.budget.as_mut() {
            Some(budget) => budget.allow(self.spin.current(), now),
            None => self.spin.current(),
        }
    }

    /// Counts a spin allowed before a departure.
    fn allowed_before_departure(&mut self, spin: Nanos) {
        self.allowed += u128::from(spin);
        self.decisions += 1;
    }

    /// Counts a wait for a departure that ticked: no spin.
    fn ticked_before_departure(&mut self) {
        self.allowed_before_departure(0);
        self.ticked += 1;
    }

    /// Tells the readers how late this pump runs after a ring (see
    /// `Shared::ring_lateness`).
    fn publish_ring_lateness(&self, shared: &Shared) {
        if !self.busy_poll {
            shared
                .ring_lateness
                .store(self.rings.current(), Ordering::Relaxed);
        }
    }

    /// How the pump waited, for the summary: the mean of the spins it
    /// allowed (None: it busy polled), and the share of its waits ticked.
    fn ended(&self) -> Waited {
        let spun = match self.decisions {
            0 => self.spin.current(),
            n => (self.allowed / u128::from(n)) as Nanos,
        };
        Waited {
            spin: (!self.busy_poll).then_some(spun),
            ticked_share: (self.decisions > 0).then(|| self.ticked as f64 / self.decisions as f64),
        }
    }
}

/// What one run of the model left the pump to do.
enum Step {
    /// Run it again at once: arrivals were taken, or packets handed on.
    Again { wrote: bool, loaded: bool },
    /// Stopped, with every ring empty.
    Stopped,
    /// Nothing more now: the model's next event, and the count of the
    /// readers' runs when it was read (a later count says it may be stale).
    Idle {
        wrote: bool,
        deadline: Option<Nanos>,
        runs: u64,
        /// How far apart the model's departures come due, for the tick.
        spacing: Spacing,
    },
}

/// Runs the model once: takes a batch of arrivals, lets leave what is due
/// (running the next shell's model for what it handed on), and says what
/// is left to do.
fn run_turn(shared: &Arc<Shared>, waiting: &mut Waiting, waits: &mut Waits) -> Step {
    let mut model = lock(&shared.model);
    shared.pending.store(false, Ordering::Relaxed);
    let taken = model.take_arrivals(ARRIVAL_BATCH);
    let departed = model.depart(shared);
    let wrote = departed.written > 0;
    if let Some(budget) = waiting.budget.as_mut() {
        if departed.written > 0 || departed.handed {
            budget.departed(departed.at);
        }
    }
    let loaded = taken > 0;
    if departed.handed {
        drop(model);
        hand_on(shared, &mut Turn::new(waits));
        return Step::Again { wrote, loaded };
    }
    if taken > 0 {
        return Step::Again { wrote, loaded };
    }
    if shared.stop.load(Ordering::Acquire) && model.rings_empty() {
        model.publish();
        return Step::Stopped;
    }
    let deadline = model.next_event();
    let runs = shared.reader_runs.load(Ordering::SeqCst);
    Step::Idle {
        wrote,
        deadline,
        runs,
        spacing: model.spacing,
    }
}

/// Waits for `deadline` (the model's next event, or a departure waited
/// for) as the spin's plan says: a probe, a spin, or a sleep, which a
/// reader that changes the model (its count of runs past `runs`) ends.
fn wait(
    shared: &Shared,
    waiting: &mut Waiting,
    waits: &Waits,
    (deadline, runs): (Option<Nanos>, u64),
    now: Nanos,
    spin_now: Nanos,
) {
    // The reader ran the model, or handed packets over, since the
    // deadline was computed: it may be stale.
    let stale = || {
        shared.pending.load(Ordering::Acquire)
            || shared.reader_runs.load(Ordering::SeqCst) != runs
            || shared.stop.load(Ordering::Acquire)
    };
    match waiting.spin.plan_spinning(spin_now, deadline, now) {
        // Not while it keeps other directions' departures: a probe
        // risks one of its own a little late, not theirs.
        Plan::Probe(target) if waits.is_empty() => {
            match sleep_announced(shared, Some(target), stale) {
                Slept::Timer { woke } => waiting.spin.observe_probe(target, woke),
                slept => slept.teach(&mut waiting.spin, &mut waiting.rings, None),
            }
        }
        // The next departure, its own or one waited for (see
        // `Waits`), is within the spin, or too close for a sleep worth
        // taking: no sleep.
        Plan::Probe(_) | Plan::Look => {
            // Only a departure is looked or probed for.
            let deadline = deadline.unwrap_or(now);
            // Yielding while spinning lets a reader or the command that
            // shares this core run; with nothing else runnable, the
            // yield returns at once and this is a plain spin.
            let mut spun_to = now;
            while spun_to < deadline && !stale() {
                std::thread::yield_now();
                spun_to = monotonic_now();
            }
            if let Some(budget) = waiting.budget.as_mut() {
                budget.spend(spun_to - now);
            }
        }
        // Nothing to depart: a busy-polling pump looks again.
        Plan::Idle if waiting.busy_poll => std::thread::yield_now(),
        plan @ (Plan::Timed(_) | Plan::Idle) => {
            // What is published must be current before a sleep that
            // may last until the next packet.
            lock(&shared.model).publish();
            let target = match plan {
                Plan::Timed(until) => Some(until),
                _ => None,
            };
            sleep_announced(shared, target, stale).teach(
                &mut waiting.spin,
                &mut waiting.rings,
                target,
            );
        }
    }
}

/// How a sleep of the pump ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slept {
    /// It did not sleep: the model changed since its deadline was computed.
    Stale,
    /// Its timer ran out, and the thread ran again at `woke`.
    Timer { woke: Nanos },
    /// A reader woke it, having rung at `rung` (None if the ring came
    /// before this sleep began, when the pump was awake), and the thread
    /// ran again at `woke`.
    Rung { rung: Option<Nanos>, woke: Nanos },
}

impl Slept {
    /// Teaches how late this wake-up was: `timers` a timed sleep's against
    /// its `target`, `rings` a ring's against the moment it rang.
    fn teach(self, timers: &mut Spin, rings: &mut Spin, target: Option<Nanos>) {
        match (self, target) {
            (Slept::Timer { woke }, Some(target)) => timers.observe(target, woke),
            (
                Slept::Rung {
                    rung: Some(rung),
                    woke,
                },
                _,
            ) => rings.observe(rung, woke),
            _ => {}
        }
    }
}

/// Sleeps until `target` (None: until woken), first announcing the sleep
/// and its end so that a reader that changes the model wakes the pump
/// (unless `stale` says it already did).
fn sleep_announced(shared: &Shared, target: Option<Nanos>, stale: impl Fn() -> bool) -> Slept {
    shared
        .sleep_until
        .store(target.unwrap_or(u64::MAX), Ordering::SeqCst);
    let since = monotonic_now();
    shared.sleeping.store(true, Ordering::SeqCst);
    fence(Ordering::SeqCst);
    let slept = if stale() {
        Slept::Stale
    } else {
        sleep(&shared.wake, target, since)
    };
    shared.sleeping.store(false, Ordering::SeqCst);
    slept
}

/// The wake-up lateness of each calibration sleep: 16 sleeps of 100 µs,
/// under 3 ms while the command starts. The sleeps are announced like any
/// other, so a reader with a packet for the pump ends the calibration with
/// what it has.
fn calibration_sleeps(shared: &Shared) -> Vec<Nanos> {
    let stale = || shared.pending.load(Ordering::Acquire) || shared.stop.load(Ordering::Acquire);
    (0..CALIBRATION_SLEEPS)
        .map_while(|_| {
            let target = monotonic_now() + CALIBRATION_SLEEP;
            match sleep_announced(shared, Some(target), stale) {
                Slept::Timer { woke } => Some(woke.saturating_sub(target)),
                _ => None,
            }
        })
        .collect()
}

/// Sleeps until the monotonic time `until` or until `wake` rings. A ring
/// from before `since` (rung while the pump was awake, say just after its
/// timer ended a sleep) ends the sleep at once, but says nothing of how
/// late the pump wakes: its stamp is dropped. Kept, it would measure the
/// time since that ring, milliseconds, and a single such sample can hold
/// the spin at hundreds of microseconds for a whole run.
fn sleep(wake: &Wake, until: Option<Nanos>, since: Nanos) -> Slept {
    let timeout = until.map(|t| t.saturating_sub(monotonic_now()));
    let (ready, [rung]) = poll::wait([wake.fd.as_raw_fd()], timeout);
    let woke = monotonic_now();
    if rung != 0 {
        Slept::Rung {
            rung: wake.clear().filter(|&rung| rung >= since),
            woke,
        }
    } else if ready == 0 {
        Slept::Timer { woke }
    } else {
        // Interrupted by a signal: neither a timer's nor a ring's lateness.
        Slept::Stale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_counts_only_if_it_came_during_the_sleep() {
        let wake = Wake::new().unwrap();
        let until = || Some(monotonic_now() + 1_000_000_000);
        // Rung while the pump was awake: the sleep ends at once, unstamped.
        wake.ring();
        let since = monotonic_now() + 1;
        assert!(matches!(
            sleep(&wake, until(), since),
            Slept::Rung { rung: None, .. }
        ));
        // Rung during the sleep (here, just before it reached ppoll).
        let since = monotonic_now();
        wake.ring();
        match sleep(&wake, until(), since) {
            Slept::Rung {
                rung: Some(rung),
                woke,
            } => assert!(since <= rung && rung <= woke),
            other => panic!("{other:?}"),
        }
        // The stamp is taken with the ring: a timed sleep follows.
        let target = monotonic_now() + 1_000_000;
        assert!(matches!(
            sleep(&wake, Some(target), 0),
            Slept::Timer { woke } if woke >= target
        ));
    }

    /// A pump ticks at its slack, for departures within a tick only (a
    /// reader must be able to wake it for what comes sooner); a pump
    /// without a tick (slack zero, a fixed spin) waits as for sparse ones.
    #[test]
    fn a_pump_ticks_at_its_slack_for_near_departures_only() {
        let ticking = Ticker::for_timing(None, 20_000).unwrap();
        assert_eq!(
            ticking.tick,
            Tick {
                every: 20_000,
                woken_by_input: false
            }
        );
        assert!(Ticker::for_timing(None, 0).is_none(), "slack zero");
        assert!(
            Ticker::for_timing(Some(5_000), 20_000).is_none(),
            "fixed spin"
        );
    }

    #[test]
    fn rings_and_timers_are_learnt_apart() {
        let calibration = [10_000; 4];
        let (mut timers, mut rings) =
            (Spin::new(None, &calibration), Spin::new(None, &calibration));
        let start = timers.current();
        for _ in 0..16 {
            Slept::Rung {
                rung: Some(1_000_000),
                woke: 1_200_000,
            }
            .teach(&mut timers, &mut rings, None);
        }
        assert!(rings.current() > start + 100_000, "{}", rings.current());
        assert_eq!(timers.current(), start);
        for _ in 0..16 {
            Slept::Timer { woke: 2_150_000 }.teach(&mut timers, &mut rings, Some(2_000_000));
        }
        assert!(timers.current() > start + 100_000, "{}", timers.current());
        // A ring from before the sleep, or no sleep at all, teaches
        // nothing.
        let settled = (timers.current(), rings.current());
        Slept::Rung {
            rung: None,
            woke: 9_000_000,
        }
        .teach(&mut timers, &mut rings, None);
        Slept::Stale.teach(&mut timers, &mut rings, Some(0));
        assert_eq!((timers.current(), rings.current()), settled);
    }
}
