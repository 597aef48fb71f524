//! One direction's input: the device its reader thread reads, and how the
//! packets read reach the model (at once, on the reading thread, or over
//! a ring to the pump; see [`crate::datapath::pump`]). Also what a reading thread
//! takes on besides: the packets its writes caused on other inputs, and
//! departures too close to wake a pump for.

use crate::datapath::direction::{
    follow, hand_over, lock, run_model, Follower, Shared, Turn, Waits,
};
use crate::datapath::wire::Reception;
use emu_core::ring::Producer;
use emu_core::time::monotonic_now;
use emu_core::Packet;
use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};

/// One direction's input: the device, and the state of its reading.
///
/// Its direction's reader thread reads it (see [`crate::datapath::reader`]); so may
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
/// Reads in a row (without the device running dry) after which the reader
/// stops writing packets itself and hands them to the pump: past this, a
/// backlog is building and reading must not wait for writes.
const FAST_PATH_STREAK: u32 = 4;

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

impl Follower for Input {
    fn take_caused(&self, waits: &mut Waits) -> Option<Vec<Arc<Shared>>> {
        let Ok(mut side) = self.side.try_lock() else {
            return None;
        };
        let mut turn = Turn::new(waits);
        let reading = side.round(&self.shared, FOLLOW_ROUND, &mut turn);
        drop(side);
        (reading == Reading::Open).then_some(turn.writers)
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
