//! First-in first-out queues: unbounded, tail-drop and head-drop, with a
//! limit in packets, in bytes, or both (as Mahimahi's droptail/drophead).

use crate::grammar::{Opt, SpecError, Words};
use crate::{Outcome, Queue, QueueSpec};
use emu_core::log::DropReason;
use emu_core::size::{parse_count, parse_size};
use emu_core::{Nanos, Packet};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How much a bounded FIFO holds. A limit of `None` does not apply; bytes
/// are frame bytes (see [`emu_core::size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
}

impl Limits {
    /// Whether a packet of `size` bytes fits beside `packets` and `bytes`.
    pub(crate) fn admits(&self, packets: usize, bytes: usize, size: usize) -> bool {
        self.packets.is_none_or(|limit| (packets as u64) < limit)
            && self
                .bytes
                .is_none_or(|limit| (bytes + size) as u64 <= limit)
    }

    fn describe(&self) -> String {
        let mut text = String::new();
        if let Some(p) = self.packets {
            text += &format!(" packets {p}");
        }
        if let Some(b) = self.bytes {
            text += &format!(" bytes {b}");
        }
        text
    }
}

/// The packets and their byte total: the FIFO variants, and every
/// single-queue AQM (codel, pie, red), keep their packets in one.
#[derive(Debug, Default)]
pub(crate) struct Fifo {
    pub(crate) packets: VecDeque<Packet>,
    pub(crate) bytes: usize,
}

impl Fifo {
    pub(crate) fn push(&mut self, mut packet: Packet, now: Nanos) {
        packet.enqueued = now;
        self.bytes += packet.frame_len();
        self.packets.push_back(packet);
    }

    pub(crate) fn pop(&mut self) -> Option<Packet> {
        let packet = self.packets.pop_front()?;
        self.bytes -= packet.frame_len();
        Some(packet)
    }

    pub(crate) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }
}

/// Never drops: the queue Mahimahi calls `infinite`.
#[derive(Debug, Default)]
pub struct Infinite {
    fifo: Fifo,
}

impl Queue for Infinite {
    fn enqueue(&mut self, packet: Packet, now: Nanos, _outcome: &mut Outcome) -> bool {
        self.fifo.push(packet, now);
        true
    }
    fn dequeue(&mut self, _now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.fifo.pop()
    }
    fn packets(&self) -> usize {
        self.fifo.packets.len()
    }
    fn bytes(&self) -> usize {
        self.fifo.bytes
    }
    fn describe(&self) -> String {
        "infinite".into()
    }
}

/// What a full FIFO gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The arriving packet (drop-tail).
    Tail,
    /// Its oldest packets, until the arrival fits (drop-head), so the
    /// freshest data survives. A packet that alone exceeds the byte limit
    /// is still dropped on arrival: there is nothing older to push out.
    Head,
}

/// A FIFO with a limit in packets, bytes or both: Mahimahi's droptail and
/// drophead.
#[derive(Debug)]
pub struct Bounded {
    fifo: Fifo,
    limits: Limits,
    overflow: Overflow,
}

impl Bounded {
    pub fn new(limits: Limits, overflow: Overflow) -> Self {
        Bounded {
            fifo: Fifo::default(),
            limits,
            overflow,
        }
    }
}

impl Queue for Bounded {
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        let fits = |fifo: &Fifo| {
            self.limits
                .admits(fifo.packets.len(), fifo.bytes, packet.frame_len())
        };
        if !fits(&self.fifo) {
            if self.overflow == Overflow::Tail || !self.limits.admits(0, 0, packet.frame_len()) {
                outcome.drop(packet, DropReason::Tail, now);
                return false;
            }
            while !fits(&self.fifo) {
                let oldest = self
                    .fifo
                    .pop()
                    .expect("a queue that cannot admit holds packets");
                outcome.drop(oldest, DropReason::Head, now);
            }
        }
        self.fifo.push(packet, now);
        true
    }
    fn dequeue(&mut self, _now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.fifo.pop()
    }
    fn packets(&self) -> usize {
        self.fifo.packets.len()
    }
    fn bytes(&self) -> usize {
        self.fifo.bytes
    }
    fn accepts_change(&self, spec: &QueueSpec) -> Result<(), String> {
        match (spec, self.overflow) {
            (QueueSpec::Droptail(_), Overflow::Tail) | (QueueSpec::Drophead(_), Overflow::Head) => {
                Ok(())
            }
            _ => Err(format!(
                "'{}' changes in place only to new limits of its own kind; replace the queue instead",
                self.describe()
            )),
        }
    }

    /// New limits; a lowered one drops nothing held (pfifo's change only
    /// sets the limit), it refuses arrivals until the queue is under it.
    fn change(&mut self, spec: &QueueSpec, _now: Nanos, _outcome: &mut Outcome) {
        if let QueueSpec::Droptail(limits) | QueueSpec::Drophead(limits) = spec {
            self.limits = *limits;
        }
    }

    fn describe(&self) -> String {
        let name = match self.overflow {
            Overflow::Tail => "droptail",
            Overflow::Head => "drophead",
        };
        format!("{name}{}", self.limits.describe())
    }
}

/// The options of droptail and drophead.
pub(crate) const OPTIONS: &[Opt] = &[
    ("packets", "N", "none", "most packets held"),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (IP lengths; 64kb, 1mb accepted)",
    ),
];

/// tc's pfifo: a packet limit, by default the usual device queue length.
pub(crate) const PFIFO_OPTIONS: &[Opt] = &[(
    "limit",
    "N",
    "1000",
    "most packets held (tc's default: the device's txqueuelen, 1000 on Ethernet)",
)];

/// Reads pfifo's `limit` (tc's spelling), defaulting to 1000 packets.
pub(crate) fn parse_pfifo(words: &mut Words) -> Result<Limits, SpecError> {
    let mut packets = 1000;
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => packets = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    Ok(Limits {
        packets: Some(packets),
        bytes: None,
    })
}

/// Reads droptail's or drophead's limits; at least one is required.
pub(crate) fn parse(words: &mut Words) -> Result<Limits, SpecError> {
    let mut limits = Limits::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "packets" | "limit" => limits.packets = Some(words.value(keyword, parse_count)?),
            "bytes" => limits.bytes = Some(words.value(keyword, parse_size)?),
            _ => return Err(words.unknown(keyword)),
        }
    }
    if limits.packets.is_none() && limits.bytes.is_none() {
        return Err(SpecError(format!(
            "{name}: needs a limit, e.g. '{name} packets 100' or '{name} bytes 150000'",
            name = words.discipline()
        )));
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    fn packet(size: usize, id: u8) -> Packet {
        let mut data = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, size);
        data[size - 1] = id;
        Packet::new(data, 0)
    }

    #[test]
    fn droptail_by_packets_drops_the_arrival() {
        let mut q = Bounded::new(
            Limits {
                packets: Some(2),
                bytes: None,
            },
            Overflow::Tail,
        );
        let mut out = Outcome::default();
        for id in 0..3 {
            q.enqueue(packet(100, id), 0, &mut out);
        }
        assert_eq!(q.packets(), 2);
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
        assert_eq!(*out.drops[0].packet.data.last().unwrap(), 2);
    }

    #[test]
    fn droptail_by_bytes_counts_bytes() {
        let mut q = Bounded::new(
            Limits {
                packets: None,
                bytes: Some(250),
            },
            Overflow::Tail,
        );
        let mut out = Outcome::default();
        q.enqueue(packet(100, 0), 0, &mut out);
        q.enqueue(packet(100, 1), 0, &mut out);
        q.enqueue(packet(100, 2), 0, &mut out); // 300 > 250
        q.enqueue(packet(50, 3), 0, &mut out); // 250 fits exactly
        assert_eq!((q.packets(), q.bytes()), (3, 250));
        assert_eq!(out.drops.len(), 1);
    }

    #[test]
    fn drophead_keeps_the_newest() {
        let mut q = Bounded::new(
            Limits {
                packets: Some(2),
                bytes: None,
            },
            Overflow::Head,
        );
        let mut out = Outcome::default();
        for id in 0..4 {
            q.enqueue(packet(100, id), 0, &mut out);
        }
        let kept: Vec<u8> = std::iter::from_fn(|| q.dequeue(0, &mut out))
            .map(|p| *p.data.last().unwrap())
            .collect();
        assert_eq!(kept, vec![2, 3]);
        assert!(out.drops.iter().all(|d| d.reason == DropReason::Head));
        assert_eq!(out.drops.len(), 2);
    }

    #[test]
    fn infinite_keeps_order() {
        let mut q = Infinite::default();
        let mut out = Outcome::default();
        for id in 0..100 {
            q.enqueue(packet(100, id), id as u64, &mut out);
        }
        for id in 0..100 {
            let p = q.dequeue(1000, &mut out).unwrap();
            assert_eq!(*p.data.last().unwrap(), id);
            assert_eq!(p.enqueued, id as u64);
        }
        assert!(out.is_empty());
    }
}
