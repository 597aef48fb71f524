//! One direction's input: the device its reader thread reads, and how the
//! packets read reach the model (at once, on the reading thread, or over
//! a ring to the pump; see [`crate::pump`]). Also what a reading thread
//! takes on besides: the packets its writes caused on other inputs, and
//! departures too close to wake a pump for.

use crate::pump::{hand_over, lock, run_model, tell_pump, Shared, Turn, FAST_PATH_STREAK};
use crate::wire::Reception;
use emu_core::ring::Producer;
use emu_core::time::{monotonic_now, Nanos};
use emu_core::Packet;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, Weak};

/// One direction's input: the device, and the state of its reading.
///
/// Its direction's reader thread reads it (see [`crate::reader`]); so may
/// another thread right after it wrote a packet that reaches this device
/// at once (the other direction's reader, or a pump before it sleeps):
/// the kernel delivers a written packet within the
/// write, so an immediate answer (a ping's, a TCP acknowledgement) is
/// already waiting here, and so is the packet itself, forwarded into the
/// next shell of a chain. Taking it in the same wake-up carries a ping's
/// round trip through every shell on the thread its request woke, where a
/// hand-off to the other reader would wait for that thread to wake. The
/// lock keeps the two readers apart: a thread following its write passes
/// by an input the other holds; the input's own reader waits for it.
pub(crate) struct Input {
    side: Mutex<ReaderSide>,
    shared: Arc<Shared>,
}

impl Input {
    /// The input of the direction `shared`, read from `fd`; packets the
    /// reader does not run through the model itself go on `ring`.
    pub(crate) fn new(fd: RawFd, ring: Producer<Packet>, shared: Arc<Shared>) -> Input {
        Input {
            side: Mutex::new(ReaderSide {
                fd,
                ring,
                reception: Reception::default(),
                packets: Vec::with_capacity(64),
                read: 0,
                streak: 0,
                closed: false,
            }),
            shared,
        }
    }

    /// Packets read from the device so far.
    pub(crate) fn read(&self) -> u64 {
        lock(&self.side).read
    }

    /// Ends all reading of this input: called by its reader once it has
    /// stopped, before any pump finishes. A pump still running follows its
    /// writes onto inputs (see `follow`); one reading after its reader
    /// stopped could hand a packet to a direction that has already taken
    /// its count, and the packet would be lost to the accounting.
    pub(crate) fn close(&self) {
        lock(&self.side).closed = true;
    }
}

/// Whether a device can still be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Open,
    /// The device is gone (an error other than "nothing to read").
    Gone,
}

/// Reads per round before the reader turns to its other inputs, so a
/// flood on one cannot hold up the others.
const ROUND: u32 = 64;
/// Reads a thread takes from an input its write fed.
const FOLLOW_ROUND: u32 = 4;
/// Inputs one thread visits after a write, so answers to answers cannot
/// keep it from its own devices.
const MAX_FOLLOW: usize = 8;

impl Input {
    /// The device this input reads.
    pub(crate) fn fd(&self) -> RawFd {
        lock(&self.side).fd
    }

    /// Reads and passes on up to a round's worth of reads (fewer if the
    /// device runs dry), then takes what its writes caused on the inputs
    /// they fed. Departures due too soon to wake a pump for go to `waits`.
    /// If the other reader is taking this input's packets (following its
    /// own write), this waits for it rather than look again at once: the
    /// device stays ready until it is read dry, and a real-time thread
    /// polling for it would keep a core from the command.
    pub(crate) fn read_round(&self, waits: &mut Waits) -> Reading {
        let mut side = lock(&self.side);
        let mut turn = Turn::new(waits);
        let reading = side.round(&self.shared, ROUND, &mut turn);
        drop(side);
        if reading == Reading::Open {
            follow(turn);
        }
        reading
    }
}

/// After this thread wrote packets out of the directions in `turn`, takes
/// what the writes caused on the inputs they fed, and so on along the
/// chain. An input another thread is reading is left to it.
pub(crate) fn follow(turn: Turn) {
    let Turn { writers, waits } = turn;
    let followers = |writer: &Arc<Shared>| -> Vec<Arc<Input>> {
        writer
            .followers
            .get()
            .map(|f| f.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    };
    let mut work: Vec<Arc<Input>> = writers.iter().flat_map(followers).collect();
    let mut visits = 0;
    while let Some(next) = work.pop() {
        if visits == MAX_FOLLOW {
            break;
        }
        visits += 1;
        let Ok(mut side) = next.side.try_lock() else {
            continue;
        };
        let mut turn = Turn::new(&mut *waits);
        let reading = side.round(&next.shared, FOLLOW_ROUND, &mut turn);
        drop(side);
        if reading == Reading::Open {
            work.extend(turn.writers.iter().flat_map(followers));
        }
    }
}

/// Departures a thread waits for itself instead of waking a pump: a
/// reader, or a pump that took what its writes caused (see
/// `crate::pump`'s loop).
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
/// `crate::reader`), then looking without sleeping. At 10 Mbit/s bulk TCP,
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
            // its pump's work. A reader that kept waiting pumped such a
            // queue by spinning, in the real-time class, for as long as
            // the queue lasted, until the kernel's real-time throttling
            // stalled every packet thread for milliseconds.
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

/// The reading state of one direction.
struct ReaderSide {
    fd: RawFd,
    ring: Producer<Packet>,
    reception: Reception,
    packets: Vec<Packet>,
    read: u64,
    /// Reads since the device last ran dry.
    streak: u32,
    /// No more reading (see [`Input::close`]).
    closed: bool,
}

impl ReaderSide {
    /// Reads and passes on up to `limit` reads' worth of packets.
    fn round(&mut self, shared: &Arc<Shared>, limit: u32, turn: &mut Turn) -> Reading {
        if self.closed {
            return Reading::Open;
        }
        for _ in 0..limit {
            match self.reception.read(self.fd) {
                Ok(0) => {}
                Ok(_) => {
                    // One read may hold a TCP super-packet: its packets
                    // are all stamped now.
                    self.reception.split(monotonic_now(), &mut self.packets);
                    self.read += self.packets.len() as u64;
                    self.streak = self.streak.saturating_add(1);
                    let fast = self.streak <= FAST_PATH_STREAK;
                    if !fast {
                        // Reading must not wait on departures now.
                        turn.waits.hand_to_pumps();
                    }
                    if !(fast && run_model(shared, &mut self.packets, turn)) {
                        hand_over(shared, &mut self.ring, &mut self.packets);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.streak = 0;
                    return Reading::Open;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Reading::Gone,
            }
        }
        Reading::Open
    }
}
