//! What the threads of one direction share, and how any of them runs its
//! model: the link model and its output behind one lock (taken by
//! whichever thread has work: the direction's reader, its pump, or
//! another thread that just wrote), the ring and the eventfd that reach
//! the pump, the departures a thread waits for itself instead of waking a
//! pump ([`Waits`]), and what a thread does after it wrote ([`follow`]).
//!
//! It stands below the reading of inputs (`crate::datapath::input`), the reader
//! threads (`crate::datapath::reader`) and the pump threads (`crate::datapath::pump`), which
//! all run models by its rules.

use crate::accounting::lateness::Lateness;
use crate::accounting::live::{LiveCounters, PUBLISH_EVERY_NS};
use crate::accounting::overload::Overload;
use crate::datapath::forwarding::{Crossing, Route};
use crate::datapath::spin::Spacing;
use crate::datapath::wire::write_due;
use emu_core::ring::{Consumer, Producer};
use emu_core::time::{monotonic_now, Nanos};
use emu_core::Packet;
use link::Link;
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// Something the pumps tell the control thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PumpNews {
    /// The link of shell `n` reached the end of a trace run with `--once`.
    TraceEnded(usize),
}

/// An eventfd that wakes the pump from its sleep, and when it was first
/// rung since the pump last woke: how late the pump runs after it is
/// asked to tells a reader whether waking it is worth it (see
/// [`Waits`]).
pub(crate) struct Wake {
    pub(crate) fd: EventFd,
    rung_at: AtomicU64,
}

impl Wake {
    pub(crate) fn new() -> io::Result<Wake> {
        Ok(Wake {
            fd: EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?,
            rung_at: AtomicU64::new(0),
        })
    }

    pub(crate) fn ring(&self) {
        let _ =
            self.rung_at
                .compare_exchange(0, monotonic_now(), Ordering::AcqRel, Ordering::Relaxed);
        let _ = self.fd.write(1);
    }

    /// Empties the eventfd; when it was first rung (None if it was not).
    pub(crate) fn clear(&self) -> Option<Nanos> {
        // Non-blocking: an eventfd not rung answers EAGAIN.
        let _ = self.fd.read();
        Some(self.rung_at.swap(0, Ordering::AcqRel)).filter(|&at| at != 0)
    }
}

/// What the reader and the pump share.
pub(crate) struct Shared {
    /// The model and the output, run by one thread at a time.
    pub(crate) model: Mutex<Model>,
    /// The pump is asleep (or about to be) until `sleep_until`.
    pub(crate) sleeping: AtomicBool,
    /// When the sleeping pump will wake by itself; `u64::MAX`: never.
    pub(crate) sleep_until: AtomicU64,
    /// Counts the reader's runs of the model, so a pump about to sleep on
    /// a deadline it computed can tell the deadline may be stale.
    pub(crate) reader_runs: AtomicU64,
    /// The reader has put packets on the ring since the model last took
    /// them off (a hint for a spinning pump; the ring is the truth).
    pub(crate) pending: AtomicBool,
    pub(crate) stop: AtomicBool,
    pub(crate) wake: Wake,
    /// How late the pump runs after it is rung: a high quantile, learnt
    /// as its spin is from timed sleeps (see [`crate::datapath::spin`]). A departure
    /// closer than this is better waited for by the thread that has it in
    /// hand (see [`Waits`]).
    pub(crate) ring_lateness: AtomicU64,
    /// The direction this one hands packets to in memory (the same
    /// direction of the next shell of a chain), for a thread to run once
    /// it has let go of this one's model.
    pub(crate) onward: OnceLock<Arc<Shared>>,
    /// Packets handed in by the previous shell of a chain: read, as far as
    /// this direction's accounting goes, though never read from a device.
    pub(crate) handed_in: AtomicU64,
    /// The inputs that packets written by this direction reach at once
    /// (see [`crate::datapath::pump::DirectionPump::feeds`]).
    pub(crate) followers: OnceLock<Vec<Weak<dyn Follower>>>,
}

/// The link model with the ring it takes arrivals from and the device it
/// writes departures to.
pub(crate) struct Model {
    pub(crate) link: Option<Link>,
    pub(crate) ring: Consumer<Packet>,
    pub(crate) output: RawFd,
    pub(crate) write_errors: u64,
    pub(crate) lateness: Lateness,
    pub(crate) overload: Overload,
    pub(crate) due: Vec<(Packet, Nanos)>,
    pub(crate) merged: Vec<u8>,
    /// Packets the previous shell of a chain handed over in memory.
    pub(crate) handed: Option<Consumer<Packet>>,
    pub(crate) onward: Option<Onward>,
    pub(crate) next_publish: Nanos,
    pub(crate) told_trace_end: bool,
    pub(crate) shell: usize,
    pub(crate) news: Sender<PumpNews>,
    pub(crate) live: Arc<LiveCounters>,
    /// How far apart the departures come due, whoever writes them: the
    /// pump ticks where they are close (see `crate::datapath::pump`).
    pub(crate) spacing: Spacing,
}

/// Where a direction hands the packets it lets leave, when the namespace
/// they leave into would only forward them to the next shell (whose
/// `Shared` is this direction's `Shared::onward`).
pub(crate) struct Onward {
    pub(crate) ring: Producer<Packet>,
    pub(crate) crossing: Crossing,
    pub(crate) towards: Route,
}

/// What one run of the model let leave.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Departed {
    /// Packets written to the output device.
    pub(crate) written: usize,
    /// Packets handed to the next shell in memory: run its model.
    pub(crate) handed: bool,
    /// When the model was run.
    pub(crate) at: Nanos,
}

/// Locks the model or an input, also if a thread panicked holding it (the
/// counters are still worth reporting).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Model {
    pub(crate) fn link(&mut self) -> &mut Link {
        self.link
            .as_mut()
            .expect("the link is present while running")
    }

    /// Takes up to `limit` packets off the rings (the reader's, then the
    /// previous shell's) into the model; how many.
    pub(crate) fn take_arrivals(&mut self, limit: usize) -> usize {
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
    pub(crate) fn rings_empty(&self) -> bool {
        self.ring.is_empty() && self.handed.as_ref().is_none_or(Consumer::is_empty)
    }

    /// Advances the model to now, hands on what the next shell takes in
    /// memory and writes the rest of what is due; publishes the counters
    /// now and then and tells of a trace's end. `shared` is this
    /// direction's.
    pub(crate) fn depart(&mut self, shared: &Shared) -> Departed {
        let now = monotonic_now();
        let link = self.link.as_mut().expect("the link is present");
        link.advance(now);
        let mut handed = false;
        while let Some((mut packet, due)) = link.pop_due_written_at(now) {
            self.spacing.due(due);
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

    pub(crate) fn publish(&mut self) {
        let link = self.link.as_ref().expect("the link is present");
        self.live.publish(link);
    }

    pub(crate) fn next_event(&mut self) -> Option<Nanos> {
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
/// ring is on a machine too loaded to keep time (see [`crate::accounting::overload`]),
/// and readers spinning longer would only load it more.
const MAX_WAIT: Nanos = crate::accounting::overload::LATE_P99_LIMIT;

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
pub(crate) fn hand_on(shared: &Shared, turn: &mut Turn) {
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

/// An input that a direction's writes reach at once (the other direction
/// of the same shell, which carries the answers, and the same direction of
/// the next shell of a chain): a thread that wrote takes what its writes
/// caused there (see [`follow`]). The inputs themselves are
/// `crate::datapath::input`'s; the threads that run the models see them only
/// through this.
pub(crate) trait Follower: Send + Sync {
    /// Takes a few reads' worth of what is waiting, with the departures
    /// too close to wake a pump for going to `waits`; the directions that
    /// wrote on the way. None if another thread is reading this input (it
    /// is left to it) or its device is gone.
    fn take_caused(&self, waits: &mut Waits) -> Option<Vec<Arc<Shared>>>;
}

/// Inputs one thread visits after a write, so answers to answers cannot
/// keep it from its own devices.
const MAX_FOLLOW: usize = 8;

/// After this thread wrote packets out of the directions in `turn`, takes
/// what the writes caused on the inputs they fed, and so on along the
/// chain. An input another thread is reading is left to it.
pub(crate) fn follow(turn: Turn) {
    let Turn { writers, waits } = turn;
    let followers = |writer: &Arc<Shared>| -> Vec<Arc<dyn Follower>> {
        writer
            .followers
            .get()
            .map(|f| f.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    };
    let mut work: Vec<Arc<dyn Follower>> = writers.iter().flat_map(followers).collect();
    let mut visits = 0;
    while let Some(next) = work.pop() {
        if visits == MAX_FOLLOW {
            break;
        }
        visits += 1;
        if let Some(writers) = next.take_caused(&mut *waits) {
            work.extend(writers.iter().flat_map(followers));
        }
    }
}

/// Departures a thread waits for itself instead of waking a pump: a
/// reader, or a pump that took what its writes caused (see
/// `crate::datapath::pump`'s loop).
///
/// A sleeping pump runs late after it is woken: tens of microseconds on a
/// virtual machine, often a hundred or more after a long idle (each pump
/// measures it on the rings it answers, see `Shared::ring_lateness`). A
/// packet due sooner than that (an acknowledgement through a slow link,
/// due one serialization time after it was read) would be written late if
/// handed to the pump, while the thread that ran the model is awake
/// already. So that thread keeps the departure and runs the model when it
/// is due, watching its inputs meanwhile: asleep until its own spin before
/// the departure (a reader learns its wake-up lateness as a pump does, see
/// `crate::datapath::reader`), then looking without sleeping. At 10 Mbit/s bulk TCP,
/// where each acknowledgement is due 53 µs after it is read, that writes
/// them a few tens of microseconds late where a woken pump could be
/// hundreds late (docs/performance.md, "Close departures").
#[derive(Default)]
pub(crate) struct Waits {
    /// When each model is next due, and the direction it belongs to.
    due: Vec<(Nanos, Arc<Shared>)>,
}

impl Waits {
    pub(crate) fn is_empty(&self) -> bool {
        self.due.is_empty()
    }

    /// When the first departure waited for is due.
    pub(crate) fn earliest(&self) -> Option<Nanos> {
        self.due.iter().map(|(at, _)| *at).min()
    }

    pub(crate) fn add(&mut self, at: Nanos, shared: &Arc<Shared>) {
        match self.due.iter_mut().find(|(_, s)| Arc::ptr_eq(s, shared)) {
            Some(entry) => entry.0 = entry.0.min(at),
            None => self.due.push((at, shared.clone())),
        }
    }

    /// Runs each model whose departure has come, and follows its writes.
    /// A model another thread holds is left to it: a thread that holds
    /// a model is awake and sees its departures.
    pub(crate) fn run_due(&mut self) {
        if self.due.is_empty() {
            return;
        }
        let now = monotonic_now();
        let (due, later) = std::mem::take(&mut self.due)
            .into_iter()
            .partition::<Vec<_>, _>(|(at, _)| *at <= now);
        self.due = later;
        for (_, shared) in due {
            let mut turn = Turn::new(self);
            if run_model(&shared, &mut Vec::new(), &mut turn) {
                follow(turn);
            }
            // One wait at a time per model: one that is due again as soon
            // (a queue draining at 100 Mbit/s, a packet every 120 µs) is
            // its pump's work. A reader that kept waiting would pump such
            // a queue by spinning, in the real-time class, for as long as
            // the queue lasts, until the kernel's real-time throttling
            // stalls every packet thread for milliseconds.
            if let Some(again) = self.due.iter().position(|(_, s)| Arc::ptr_eq(s, &shared)) {
                self.due.swap_remove(again);
                tell_pump(&shared);
            }
        }
    }

    /// Leaves every departure waited for to its pump, waking the pumps
    /// that sleep: the reader is about to be busy reading (or stopping).
    pub(crate) fn hand_to_pumps(&mut self) {
        for (_, shared) in self.due.drain(..) {
            tell_pump(&shared);
        }
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
}
