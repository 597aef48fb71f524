//! The data path of one direction of a shell: its input (read by its
//! direction's reader thread, which stamps each packet's arrival as it
//! comes off the TUN device; see [`crate::reader`]), and a pump thread that
//! writes each packet out when the link model says it is due — sleeping
//! until shortly before, then spinning.
//!
//! The link model and everything that writes lives behind one lock, taken
//! by whichever thread has work. A packet due the moment it is read (no
//! delay, an idle link) is written by the reader itself, in the same
//! wake-up: handing it to a sleeping pump would cost a second wake-up, more
//! than the whole model. So is a packet due sooner than the sleeping pump
//! could wake for it (see [`crate::input::Waits`]). Under load (the reader
//! finds more packets waiting than a few) the reader only reads, and hands
//! packets over a lock-free ring to the pump, so reading and writing run
//! on two cores. How packets are read and reach the model is in
//! [`crate::input`].
//!
//! A pump about to sleep first takes what its writes caused at once (a
//! reply, an acknowledgement), so that packet's arrival is stamped when it
//! happened, not when the other direction's reader woke for it.
//!
//! Between the shells of one chain, a packet the kernel would only forward
//! goes from one model to the next in memory (see [`crate::forwarding`]):
//! it leaves one shell and arrives in the next at the same instant, on the
//! thread that let it leave.
//!
//! No async runtime is involved: its timers tick in milliseconds, and the
//! model needs microseconds.

use crate::forwarding::{Crossing, Route};
use crate::input::{follow, Input, Waits};
use crate::lateness::Lateness;
use crate::live::{LiveCounters, PUBLISH_EVERY_NS};
use crate::overload::Overload;
use crate::spin::{Plan, Spin, SpinBudget, CALIBRATION_SLEEP, CALIBRATION_SLEEPS};
use crate::wire::{write_due, MERGED_BUFFER};
use emu_core::ring::{spsc, Consumer, Producer};
use emu_core::time::{monotonic_now, timespec, Nanos};
use emu_core::Packet;
use link::Link;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::thread::JoinHandle;

/// Packets between reader and pump; deep enough for bursts at 10 Gbit/s.
const RING_CAPACITY: usize = 1 << 15;
/// How many arrivals the pump takes before it checks for due departures,
/// so a burst of arrivals cannot hold departures back.
const ARRIVAL_BATCH: usize = 64;
/// Reads in a row (without the device running dry) after which the reader
/// stops writing packets itself and hands them to the pump: past this, a
/// backlog is building and reading must not wait for writes.
pub(crate) const FAST_PATH_STREAK: u32 = 4;

/// Something the pumps tell the control thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PumpNews {
    /// The link of shell `n` reached the end of a trace run with `--once`.
    TraceEnded(usize),
}

/// Tuning of the pump's wait.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long before a departure the pump stops sleeping and spins;
    /// `None` adapts it to this machine's measured wake-up lateness.
    pub spin: Option<Nanos>,
    /// The lateness accepted for a write: an adaptive spin covers only the
    /// wake-up lateness beyond it (see [`crate::spin`]). [`DEFAULT_SLACK`]
    /// unless the user chose.
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
    pump: Option<JoinHandle<Option<Nanos>>>,
    /// The slack its spin accepted, for the summary.
    slack: Option<Nanos>,
    input: Arc<Input>,
    shared: Arc<Shared>,
    live: Arc<LiveCounters>,
}

/// An eventfd that wakes the pump from its sleep, and when it was first
/// rung since the pump last woke: how late the pump runs after it is
/// asked to tells a reader whether waking it is worth it (see
/// [`Waits`]).
struct Wake {
    fd: RawFd,
    rung_at: AtomicU64,
}

impl Wake {
    fn new() -> io::Result<Wake> {
        // SAFETY: creating a descriptor we own from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Wake {
            fd,
            rung_at: AtomicU64::new(0),
        })
    }

    fn ring(&self) {
        let _ =
            self.rung_at
                .compare_exchange(0, monotonic_now(), Ordering::AcqRel, Ordering::Relaxed);
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe { libc::write(self.fd, (&one as *const u64).cast(), 8) };
    }

    /// Empties the eventfd; when it was first rung (None if it was not).
    fn clear(&self) -> Option<Nanos> {
        let mut value: u64 = 0;
        // SAFETY: reading 8 bytes from our eventfd (non-blocking).
        unsafe { libc::read(self.fd, (&mut value as *mut u64).cast(), 8) };
        Some(self.rung_at.swap(0, Ordering::AcqRel)).filter(|&at| at != 0)
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor we own.
        unsafe { libc::close(self.fd) };
    }
}

/// What the reader and the pump share.
pub(crate) struct Shared {
    /// The model and the output, run by one thread at a time.
    model: Mutex<Model>,
    /// The pump is asleep (or about to be) until `sleep_until`.
    sleeping: AtomicBool,
    /// When the sleeping pump will wake by itself; `u64::MAX`: never.
    sleep_until: AtomicU64,
    /// Counts the reader's runs of the model, so a pump about to sleep on
    /// a deadline it computed can tell the deadline may be stale.
    reader_runs: AtomicU64,
    /// The reader has put packets on the ring since the model last took
    /// them off (a hint for a spinning pump; the ring is the truth).
    pending: AtomicBool,
    stop: AtomicBool,
    wake: Wake,
    /// How late the pump runs after it is rung: a high quantile, learnt
    /// as its spin is from timed sleeps (see [`crate::spin`]). A departure
    /// closer than this is better waited for by the thread that has it in
    /// hand (see [`Waits`]).
    ring_lateness: AtomicU64,
    /// The direction this one hands packets to in memory (the same
    /// direction of the next shell of a chain), for a thread to run once
    /// it has let go of this one's model.
    onward: OnceLock<Arc<Shared>>,
    /// Packets handed in by the previous shell of a chain: read, as far as
    /// this direction's accounting goes, though never read from a device.
    handed_in: AtomicU64,
    /// The inputs that packets written by this direction reach at once
    /// (see [`DirectionPump::feeds`]).
    pub(crate) followers: OnceLock<Vec<Weak<Input>>>,
}

/// The link model with the ring it takes arrivals from and the device it
/// writes departures to.
struct Model {
    link: Option<Link>,
    ring: Consumer<Packet>,
    output: RawFd,
    write_errors: u64,
    lateness: Lateness,
    overload: Overload,
    due: Vec<(Packet, Nanos)>,
    merged: Vec<u8>,
    /// Packets the previous shell of a chain handed over in memory.
    handed: Option<Consumer<Packet>>,
    onward: Option<Onward>,
    next_publish: Nanos,
    told_trace_end: bool,
    shell: usize,
    news: Sender<PumpNews>,
    live: Arc<LiveCounters>,
}

/// Where a direction hands the packets it lets leave, when the namespace
/// they leave into would only forward them to the next shell (whose
/// `Shared` is this direction's `Shared::onward`).
struct Onward {
    ring: Producer<Packet>,
    crossing: Crossing,
    towards: Route,
}

/// What one run of the model let leave.
#[derive(Debug, Clone, Copy, Default)]
struct Departed {
    /// Packets written to the output device.
    written: usize,
    /// Packets handed to the next shell in memory: run its model.
    handed: bool,
    /// When the model was run.
    at: Nanos,
}

/// What one direction did, read after its threads have stopped.
pub struct DirectionResult {
    pub link: Link,
    /// Packets that arrived: read from the device, or handed over.
    pub read: u64,
    /// Of those, the packets the previous shell of a chain handed over in
    /// memory (see [`crate::forwarding`]).
    pub handed_in: u64,
    pub write_errors: u64,
    /// How late each write was against its due time.
    pub lateness: Lateness,
    /// One-second windows whose lateness p99 broke emu's bound, of all
    /// judged, and the worst of them.
    pub overload: OverloadSummary,
    /// What the kernel dropped around this direction (filled in by the
    /// chain, which knows the devices).
    pub kernel: crate::kernel_drops::KernelDrops,
    /// The spin the pump allowed itself before its departures, on average
    /// (adapted to the machine and held to its budget, unless `--spin`
    /// fixed it); None with `--busy-poll`.
    pub spin: Option<Nanos>,
    /// The lateness the adaptive spin accepted (see [`Timing::slack`]);
    /// None where the spin was fixed or the pump busy polled.
    pub slack: Option<Nanos>,
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
    /// [`crate::reader::Reader`] given [`DirectionPump::input`]) cross
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
                merged: Vec::with_capacity(MERGED_BUFFER),
                handed: None,
                onward: None,
                next_publish: 0,
                told_trace_end: false,
                shell,
                news,
                live: live.clone(),
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
        let _ = self
            .shared
            .followers
            .set(next.iter().map(|d| Arc::downgrade(&d.input)).collect());
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
        let spin = self
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
        }
    }
}

/// Locks the model or an input, also if a thread panicked holding it (the
/// counters are still worth reporting).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Model {
    fn link(&mut self) -> &mut Link {
        self.link
            .as_mut()
            .expect("the link is present while running")
    }

    /// Takes up to `limit` packets off the rings (the reader's, then the
    /// previous shell's) into the model; how many.
    fn take_arrivals(&mut self, limit: usize) -> usize {
        let mut taken = 0;
        while taken < limit {
            let packet = match self.ring.pop() {
                Ok(packet) => packet,
                Err(_) => match self.handed.as_mut().map(Consumer::pop) {
                    Some(Ok(packet)) => packet,
                    _ => break,
                },
            };
            self.link().arrive(packet);
            taken += 1;
        }
        taken
    }

    /// True if no packet waits on either ring.
    fn rings_empty(&self) -> bool {
        self.ring.is_empty() && self.handed.as_ref().is_none_or(Consumer::is_empty)
    }

    /// Advances the model to now, hands on what the next shell takes in
    /// memory and writes the rest of what is due; publishes the counters
    /// now and then and tells of a trace's end. `shared` is this
    /// direction's.
    fn depart(&mut self, shared: &Shared) -> Departed {
        let now = monotonic_now();
        let link = self.link.as_mut().expect("the link is present");
        link.advance(now);
        let mut handed = false;
        while let Some((mut packet, due)) = link.pop_due_written_at(now) {
            match (&mut self.onward, shared.onward.get()) {
                (Some(onward), Some(next))
                    if onward.crossing.forward(&mut packet.data, onward.towards) =>
                {
                    let late = now.saturating_sub(due);
                    self.lateness.record(late);
                    self.overload.record(late);
                    // It arrives in the next shell when this one's log
                    // says it left (now, which is `due` unless late).
                    packet.arrival = now;
                    packet.enqueued = now;
                    next.handed_in.fetch_add(1, Ordering::Release);
                    push_packet(&mut onward.ring, packet, &next.wake);
                    handed = true;
                }
                _ => self.due.push((packet, due)),
            }
        }
        if !self.due.is_empty() {
            let (lateness, overload) = (&mut self.lateness, &mut self.overload);
            self.write_errors += write_due(self.output, &self.due, &mut self.merged, |late| {
                lateness.record(late);
                overload.record(late);
            });
        }
        self.overload.tick(now);
        if now >= self.next_publish {
            self.publish();
            self.next_publish = now + PUBLISH_EVERY_NS;
        }
        let written = self.due.len();
        self.due.clear();
        if !self.told_trace_end && self.link().trace_ended() {
            self.told_trace_end = true;
            let _ = self.news.send(PumpNews::TraceEnded(self.shell));
        }
        Departed {
            written,
            handed,
            at: now,
        }
    }

    fn publish(&mut self) {
        let link = self.link.as_ref().expect("the link is present");
        self.live.publish(link);
    }

    fn next_event(&mut self) -> Option<Nanos> {
        self.link().next_event()
    }
}

/// What one thread's runs of the models leave it to do.
pub(crate) struct Turn<'a> {
    /// The directions (this one, or shells further along it that packets
    /// were handed to) that wrote a packet on this thread: what the writes
    /// caused waits on their followers' inputs.
    pub(crate) writers: Vec<Arc<Shared>>,
    /// Where the thread keeps the departures it waits for itself.
    pub(crate) waits: &'a mut Waits,
}

impl<'a> Turn<'a> {
    pub(crate) fn new(waits: &'a mut Waits) -> Turn<'a> {
        Turn {
            writers: Vec::new(),
            waits,
        }
    }

    fn wrote(&mut self, shared: &Arc<Shared>) {
        if !self.writers.iter().any(|w| Arc::ptr_eq(w, shared)) {
            self.writers.push(shared.clone());
        }
    }
}

/// The fast path: runs the model on this thread, if no one else is, and
/// writes what is due (adding each direction that wrote, this one or one
/// it handed packets to, to `turn`). The model's next departure goes to
/// the turn's waits if it is too close to wake the sleeping pump for;
/// otherwise the pump is woken if it would sleep past it. Returns false
/// (and leaves `packets`) if another thread has the model.
pub(crate) fn run_model(shared: &Arc<Shared>, packets: &mut Vec<Packet>, turn: &mut Turn) -> bool {
    let Ok(mut model) = shared.model.try_lock() else {
        return false;
    };
    if model.link.is_none() {
        // Finished (see `DirectionPump::finish`): a departure another
        // pump waited for is the queue's now, counted as queued.
        return false;
    }
    // Announce the run before touching the model: a pump about to sleep on
    // a deadline it computed sees this and looks again.
    shared.reader_runs.fetch_add(1, Ordering::SeqCst);
    // Whatever the ring holds arrived before these.
    shared.pending.store(false, Ordering::Relaxed);
    while model.take_arrivals(usize::MAX) > 0 {}
    for packet in packets.drain(..) {
        model.link().arrive(packet);
    }
    let departed = model.depart(shared);
    let next = model.next_event();
    drop(model);
    if departed.written > 0 {
        turn.wrote(shared);
    }
    if departed.handed {
        hand_on(shared, turn);
    }
    // Pairs with the pump's fence between announcing its sleep and reading
    // `reader_runs`: one of the two sees the other.
    fence(Ordering::SeqCst);
    let pump = PumpState {
        sleeping: shared.sleeping.load(Ordering::SeqCst),
        sleep_until: shared.sleep_until.load(Ordering::SeqCst),
        ring_lateness: shared.ring_lateness.load(Ordering::Relaxed),
    };
    match after_run(next, monotonic_now, pump) {
        NextEvent::Pump => {}
        NextEvent::Wait(at) => turn.waits.add(at, shared),
        NextEvent::Ring => shared.wake.ring(),
    }
    true
}

/// The longest a thread waits for a departure itself (see [`Waits`]):
/// the lateness emu answers for. A pump that runs later than that after a
/// ring is on a machine too loaded to keep time (see [`crate::overload`]),
/// and readers spinning longer would only load it more.
const MAX_WAIT: Nanos = crate::overload::LATE_P99_LIMIT;

/// What a thread that ran a model knows of the direction's pump.
#[derive(Debug, Clone, Copy)]
struct PumpState {
    sleeping: bool,
    /// When it wakes by itself (`u64::MAX`: never).
    sleep_until: Nanos,
    /// How late it runs after a ring.
    ring_lateness: Nanos,
}

/// Who sees to a model's next event, as decided by the thread that just
/// ran the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NextEvent {
    /// The pump: it is awake, or wakes in time by itself (or there is
    /// nothing to see to).
    Pump,
    /// This thread, at the given time: it is too close to wake the pump for.
    Wait(Nanos),
    /// The pump, woken now.
    Ring,
}

/// Decides who sees to a model's `next` event: a sleeping pump that would
/// wake after it is rung, unless the event is due sooner than the pump
/// runs after a ring (and within [`MAX_WAIT`]). The clock, `now`, is read
/// only then: with the pump awake (any load) there is nothing to decide.
fn after_run(next: Option<Nanos>, now: impl FnOnce() -> Nanos, pump: PumpState) -> NextEvent {
    match next {
        Some(next) if pump.sleeping && next < pump.sleep_until => {
            if next <= now().saturating_add(pump.ring_lateness.min(MAX_WAIT)) {
                NextEvent::Wait(next)
            } else {
                NextEvent::Ring
            }
        }
        _ => NextEvent::Pump,
    }
}

/// After this thread handed packets from `shared`'s model to the next
/// shell's: runs that model here if no one else is (the packets are due
/// there now), or else tells the thread that will.
fn hand_on(shared: &Shared, turn: &mut Turn) {
    let Some(next) = shared.onward.get() else {
        return;
    };
    if !run_model(next, &mut Vec::new(), turn) {
        tell_pump(next);
    }
}

/// The pump's path: puts the packets on the ring and wakes the pump if it
/// sleeps.
pub(crate) fn hand_over(shared: &Shared, ring: &mut Producer<Packet>, packets: &mut Vec<Packet>) {
    for packet in packets.drain(..) {
        push_packet(ring, packet, &shared.wake);
    }
    tell_pump(shared);
}

/// Tells the pump that packets wait on a ring: a spinning pump sees the
/// flag, a sleeping one is woken.
pub(crate) fn tell_pump(shared: &Shared) {
    shared.pending.store(true, Ordering::Release);
    // Pairs with the pump's fence between announcing sleep and checking the
    // ring: one of the two sees the other.
    fence(Ordering::SeqCst);
    if shared.sleeping.load(Ordering::SeqCst) {
        shared.wake.ring();
    }
}

/// Puts a packet on the ring. A full ring means the pump is far behind (a
/// ring's worth of packets): wait for room rather than lose a packet that
/// was already read, sleeping rather than spinning, so a real-time reader
/// does not keep the command that must consume those packets off the core.
fn push_packet(ring: &mut Producer<Packet>, mut packet: Packet, wake: &Wake) {
    loop {
        match ring.push(packet) {
            Ok(()) => return,
            Err(emu_core::ring::PushError::Full(back)) => {
                packet = back;
                wake.ring();
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }
}

/// Runs until stopped; returns the spin it ended with (None: it busy
/// polled).
fn pump_loop(shared: &Arc<Shared>, timing: Timing) -> Option<Nanos> {
    // Ask for wakeups to the nanosecond instead of the default 50 µs slack.
    // SAFETY: prctl on the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    if !timing.busy_poll {
        realtime_priority();
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
    let mut spin = Spin::new(fixed, &samples).accepting(timing.slack);
    // A spin the user fixed (or busy polling) is theirs: only an adaptive
    // one is held to a share of the core.
    let mut budget = fixed.is_none().then(|| SpinBudget::new(monotonic_now()));
    // The spins allowed before departures, summed and counted: what the
    // summary reports, which with a budget is less than the estimate.
    let (mut allowed, mut decisions) = (0u128, 0u64);
    // How late the pump runs after a ring is learnt apart from the spin:
    // a woken pump may also wait for a core, which the spin must not
    // chase (spinning longer would keep the cores busier still). No slack
    // here: this decides who sees to a close departure, not how exactly
    // (a thread that keeps one sleeps until its own spin before it).
    let mut rings = Spin::new(fixed, &samples);
    if !timing.busy_poll {
        shared
            .ring_lateness
            .store(rings.current(), Ordering::Relaxed);
    }
    // Departures of other directions this pump took on while following
    // its writes (see below).
    let mut waits = Waits::default();
    // Packets written since the pump last followed its writes or waited,
    // and whether any came to it over the ring (the reader is loaded).
    let (mut wrote, mut loaded) = (false, false);
    loop {
        waits.run_due();
        let mut model = lock(&shared.model);
        shared.pending.store(false, Ordering::Relaxed);
        let taken = model.take_arrivals(ARRIVAL_BATCH);
        let departed = model.depart(shared);
        wrote |= departed.written > 0;
        if let Some(budget) = budget.as_mut() {
            if departed.written > 0 || departed.handed {
                budget.departed(departed.at);
            }
        }
        loaded |= taken > 0;
        if departed.handed {
            drop(model);
            hand_on(shared, &mut Turn::new(&mut waits));
            continue;
        }
        if taken > 0 {
            continue;
        }
        if shared.stop.load(Ordering::Acquire) && model.rings_empty() {
            model.publish();
            drop(model);
            waits.hand_to_pumps();
            let spun = match decisions {
                0 => spin.current(),
                n => (allowed / u128::from(n)) as Nanos,
            };
            return (!timing.busy_poll).then_some(spun);
        }
        let deadline = model.next_event();
        let runs = shared.reader_runs.load(Ordering::SeqCst);
        drop(model);
        let now = monotonic_now();
        let spin_now = match budget.as_mut() {
            Some(budget) => budget.allow(spin.current(), now),
            None => spin.current(),
        };
        // Before it would sleep, the pump takes what its writes caused at
        // once (a ping's reply, a TCP acknowledgement), as a reader does
        // after its writes (see `input::follow`): the packet is read, and
        // its arrival stamped, now, where the other direction's reader
        // would run only after its wake-up (tens to hundreds of
        // microseconds on a virtual machine), each one added to the
        // emulated path's round trip. A departure of the other direction
        // due too soon to wake its pump for is then this pump's to wait
        // for. Not when it would not sleep (its own next departure is too
        // close, by the same rule as below): then the other direction's
        // reader is as near. Nor under load (the reader hands packets
        // over): the other reader is awake then, and a third thread
        // reading would only contend with it (TCP through `delay 0` by a
        // few percent, within this VM's spread).
        let follows = wrote && !loaded && !timing.busy_poll;
        let sleeps = matches!(
            spin.plan_spinning(spin_now, deadline, now),
            Plan::Timed(_) | Plan::Idle
        );
        if follows && sleeps {
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
            Some(_) => {
                allowed += u128::from(spin_now);
                decisions += 1;
            }
            None => {}
        }
        // The reader ran the model, or handed packets over, since the
        // deadline was computed: it may be stale.
        let stale = || {
            shared.pending.load(Ordering::Acquire)
                || shared.reader_runs.load(Ordering::SeqCst) != runs
                || shared.stop.load(Ordering::Acquire)
        };
        match spin.plan_spinning(spin_now, deadline, now) {
            // Not while it keeps other directions' departures: a probe
            // risks one of its own a little late, not theirs.
            Plan::Probe(target) if waits.is_empty() => {
                match sleep_announced(shared, Some(target), stale) {
                    Slept::Timer { woke } => spin.observe_probe(target, woke),
                    slept => slept.teach(&mut spin, &mut rings, None),
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
                if let Some(budget) = budget.as_mut() {
                    budget.spend(spun_to - now);
                }
            }
            // Nothing to depart: a busy-polling pump looks again.
            Plan::Idle if timing.busy_poll => std::thread::yield_now(),
            plan @ (Plan::Timed(_) | Plan::Idle) => {
                // What is published must be current before a sleep that
                // may last until the next packet.
                lock(&shared.model).publish();
                let target = match plan {
                    Plan::Timed(until) => Some(until),
                    _ => None,
                };
                sleep_announced(shared, target, stale).teach(&mut spin, &mut rings, target);
            }
        }
        (wrote, loaded) = (false, false);
        if !timing.busy_poll {
            shared
                .ring_lateness
                .store(rings.current(), Ordering::Relaxed);
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

/// Puts the calling thread in the lowest real-time class (SCHED_FIFO,
/// priority 1), so that when it wakes for a packet it runs at once instead
/// of waiting for the command's threads to use up their time slice: on a
/// loaded machine that wait, not the model, is what makes packets late
/// (milliseconds at the 99th percentile with both cores busy). The thread
/// sleeps whenever it has nothing due, and spins at most `--spin` before a
/// departure, so it takes little from the command; the kernel's real-time
/// throttling (sched_rt_runtime_us) bounds it in any case. Not for
/// `--busy-poll`, whose threads never sleep. Where the class is refused
/// (rootless, a container without CAP_SYS_NICE) the thread keeps its
/// ordinary class.
pub(crate) fn realtime_priority() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: changes the calling thread's (pid 0) policy with a valid param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// Sleeps until the monotonic time `until` or until `wake` rings. A ring
/// from before `since` (rung while the pump was awake, say just after its
/// timer ended a sleep) ends the sleep at once, but says nothing of how
/// late the pump wakes: its stamp is dropped. Kept, it would measure the
/// time since that ring, milliseconds, and a single such sample can hold
/// the spin at hundreds of microseconds for a whole run.
fn sleep(wake: &Wake, until: Option<Nanos>, since: Nanos) -> Slept {
    let mut fds = [libc::pollfd {
        fd: wake.fd,
        events: libc::POLLIN,
        revents: 0,
    }];
    let timeout = until.map(|t| timespec(t.saturating_sub(monotonic_now())));
    let timeout_ptr = timeout
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: one valid pollfd and an optional valid timespec.
    let ready = unsafe { libc::ppoll(fds.as_mut_ptr(), 1, timeout_ptr, std::ptr::null()) };
    let woke = monotonic_now();
    if fds[0].revents != 0 {
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

    const SLEEPING: PumpState = PumpState {
        sleeping: true,
        sleep_until: u64::MAX,
        ring_lateness: 40_000,
    };

    #[test]
    fn a_departure_closer_than_the_pumps_spin_is_waited_for_here() {
        // An acknowledgement due 30 µs after it was read, the pump asleep
        // with nothing to do and 40 µs late when rung.
        let now = 1_000_000;
        assert_eq!(
            after_run(Some(now + 30_000), || now, SLEEPING),
            NextEvent::Wait(now + 30_000)
        );
        assert_eq!(
            after_run(Some(now + 40_000), || now, SLEEPING),
            NextEvent::Wait(now + 40_000)
        );
    }

    #[test]
    fn a_departure_further_than_the_spin_wakes_the_pump() {
        let now = 1_000_000;
        assert_eq!(
            after_run(Some(now + 40_001), || now, SLEEPING),
            NextEvent::Ring
        );
        // Overdue (the model was busy): whoever is nearest, here.
        assert_eq!(
            after_run(Some(now - 5), || now, SLEEPING),
            NextEvent::Wait(now - 5)
        );
    }

    #[test]
    fn a_thread_waits_no_longer_than_emus_timing_bound() {
        let now = 1_000_000;
        let slow = PumpState {
            ring_lateness: 400_000,
            ..SLEEPING
        };
        // The pump is slow to answer, but a 100 µs spin is all a reader
        // may spend on a departure.
        assert_eq!(
            after_run(Some(now + MAX_WAIT), || now, slow),
            NextEvent::Wait(now + MAX_WAIT)
        );
        assert_eq!(
            after_run(Some(now + MAX_WAIT + 1), || now, slow),
            NextEvent::Ring
        );
    }

    #[test]
    fn a_pump_that_is_awake_or_wakes_in_time_is_left_to_it() {
        let now = 1_000_000;
        let awake = PumpState {
            sleeping: false,
            ..SLEEPING
        };
        assert_eq!(
            after_run(Some(now + 10_000), || now, awake),
            NextEvent::Pump
        );
        // Nor is the clock read for it: the common case under load.
        let no_clock = || -> Nanos { panic!("the clock was read for an awake pump") };
        assert_eq!(
            after_run(Some(now + 10_000), no_clock, awake),
            NextEvent::Pump
        );
        // Asleep until before the event: it wakes and sees it.
        let wakes_first = PumpState {
            sleep_until: now + 5_000,
            ..SLEEPING
        };
        assert_eq!(
            after_run(Some(now + 10_000), || now, wakes_first),
            NextEvent::Pump
        );
        assert_eq!(after_run(None, || now, SLEEPING), NextEvent::Pump);
        // A pump that does not spin (--spin 0) is always rung.
        let no_spin = PumpState {
            ring_lateness: 0,
            ..SLEEPING
        };
        assert_eq!(after_run(Some(now + 1), || now, no_spin), NextEvent::Ring);
    }

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
