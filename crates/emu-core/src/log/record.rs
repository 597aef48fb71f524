//! One record of the per-packet log: 48 bytes, little-endian, for every
//! event a packet meets (arrival, enqueue, departure, drop with its reason,
//! mark), a change of the path, or a flow's name. The bottom of the log:
//! the header, the reader and the writer stand on it, as do captures and
//! flow names. The byte layout is documented in docs/log-format.md.

use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Size in bytes of one encoded [`Record`].
pub const RECORD_SIZE: usize = 48;

/// Which way a packet travels. Uplink leaves the shell (from the command
/// towards the host), downlink enters it, as in Mahimahi.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum Direction {
    #[default]
    Uplink = 0,
    Downlink = 1,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Uplink, Direction::Downlink];

    pub fn name(self) -> &'static str {
        match self {
            Direction::Uplink => "uplink",
            Direction::Downlink => "downlink",
        }
    }
}

/// What happened to the packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Event {
    /// Read from the device (stamped by the reader thread).
    #[default]
    Arrive = 0,
    /// Accepted by the queue.
    Enqueue = 1,
    /// Written out of the shell, after serialization and delay.
    Depart = 2,
    /// Gone, with a [`DropReason`] in `detail`.
    Drop = 3,
    /// ECN field rewritten by a queue, with a [`Mark`] in `detail`.
    Mark = 4,
    /// A copy of the packet made by the path (netem's duplicate); the copy
    /// then has its own enqueue, depart or drop records.
    Duplicate = 5,
    /// One bit of the packet flipped past its IP header (netem's corrupt).
    Corrupt = 6,
    /// A parameter of the path changed: the [`Change`] in `detail`, its new
    /// value in the record's `sojourn` slot (see [`Record::value`]). Not
    /// about a packet: flow, fingerprint and bytes are 0.
    Change = 7,
    /// Names a flow the first time this shell sees it in this direction:
    /// its protocol and 5-tuple (see [`crate::flow`]). Not a packet event.
    Flow = 8,
}

impl Event {
    pub fn name(self) -> &'static str {
        match self {
            Event::Arrive => "arrive",
            Event::Enqueue => "enqueue",
            Event::Depart => "depart",
            Event::Drop => "drop",
            Event::Mark => "mark",
            Event::Duplicate => "duplicate",
            Event::Corrupt => "corrupt",
            Event::Change => "change",
            Event::Flow => "flow",
        }
    }

    fn from_u8(value: u8) -> Option<Event> {
        Some(match value {
            0 => Event::Arrive,
            1 => Event::Enqueue,
            2 => Event::Depart,
            3 => Event::Drop,
            4 => Event::Mark,
            5 => Event::Duplicate,
            6 => Event::Corrupt,
            7 => Event::Change,
            8 => Event::Flow,
            _ => return None,
        })
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// Arrived to a full queue.
    Tail = 1,
    /// Pushed out of the head of a full queue (drop-head, or a flow queue's
    /// overflow drop from the fattest flow).
    Head = 2,
    /// The AQM's congestion signal.
    Aqm = 3,
    /// The random loss model.
    Loss = 4,
    /// Larger than the path accepts.
    Oversize = 5,
    /// An AQM's overload protection.
    Overload = 6,
    /// A pure TCP ACK made redundant by a later one in the same queue
    /// (cake's ack-filter).
    AckFilter = 7,
    /// Held by a queue whose discipline was replaced (`tc qdisc replace`
    /// purges the old qdisc; see `link::queue_steps`).
    Replaced = 8,
}

impl DropReason {
    pub const ALL: [DropReason; 8] = [
        DropReason::Tail,
        DropReason::Head,
        DropReason::Aqm,
        DropReason::Loss,
        DropReason::Oversize,
        DropReason::Overload,
        DropReason::AckFilter,
        DropReason::Replaced,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DropReason::Tail => "tail",
            DropReason::Head => "head",
            DropReason::Aqm => "aqm",
            DropReason::Loss => "loss",
            DropReason::Oversize => "oversize",
            DropReason::Overload => "overload",
            DropReason::AckFilter => "ack_filter",
            DropReason::Replaced => "replaced",
        }
    }

    pub fn from_u8(value: u8) -> Option<DropReason> {
        DropReason::ALL.into_iter().find(|r| *r as u8 == value)
    }
}

/// Packets dropped, counted by reason: the link's counters, the shells'
/// summaries and the report's tables all count drops in one of these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DropCounts([u64; DropReason::ALL.len() + 1]);

impl DropCounts {
    pub fn add(&mut self, reason: DropReason) {
        self.0[reason as usize] += 1;
    }

    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason as usize]
    }

    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Every reason with its count, zeros included, in [`DropReason::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&reason| (reason, self.get(reason)))
    }

    /// The reasons that dropped anything, by name, as tables and JSON show them.
    pub fn nonzero_by_name(&self) -> std::collections::BTreeMap<&'static str, u64> {
        self.iter()
            .filter(|&(_, n)| n > 0)
            .map(|(reason, n)| (reason.name(), n))
            .collect()
    }
}

/// Which congestion mark a queue applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Mark {
    /// Congestion Experienced (RFC 3168).
    Ce = 16,
    /// ECT(0) rewritten to ECT(1): a Some Congestion Experienced mark.
    Ect1 = 17,
}

impl Mark {
    pub fn name(self) -> &'static str {
        match self {
            Mark::Ce => "ce",
            Mark::Ect1 => "ect1",
        }
    }
}

/// Which parameter of the path a [`Event::Change`] record is about, and
/// the unit of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Change {
    /// The base propagation delay, in ns (jitter comes on top).
    Delay = 1,
    /// The bottleneck's rate, in bit/s.
    Rate = 2,
    /// The bottleneck went down; the value is the outage's length in ns.
    OutageStart = 3,
    /// The bottleneck is up again; the value is 0.
    OutageEnd = 4,
    /// The loss model's Markov state: Gilbert-Elliott 1 good, 2 bad; the
    /// four-state model 1 to 4 as netem numbers them.
    LossState = 5,
    /// The queue's discipline was replaced; the value is the step's
    /// number in the link's queue steps (0 is the first queue), counting
    /// on through the replacements asked over the control socket.
    Queue = 6,
    /// The probability of random loss, in parts per billion (set over the
    /// control socket).
    Loss = 7,
    /// The jitter's deviation, in ns (set over the control socket).
    Jitter = 8,
    /// The queue took new parameters in place (`tc qdisc change`); the
    /// value counts such changes from 1.
    QueueParameters = 9,
}

impl Change {
    pub const ALL: [Change; 9] = [
        Change::Delay,
        Change::Rate,
        Change::OutageStart,
        Change::OutageEnd,
        Change::LossState,
        Change::Queue,
        Change::Loss,
        Change::Jitter,
        Change::QueueParameters,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Change::Delay => "delay",
            Change::Rate => "rate",
            Change::OutageStart => "outage_start",
            Change::OutageEnd => "outage_end",
            Change::LossState => "loss_state",
            Change::Queue => "queue",
            Change::Loss => "loss",
            Change::Jitter => "jitter",
            Change::QueueParameters => "queue_parameters",
        }
    }

    pub fn from_u8(value: u8) -> Option<Change> {
        Change::ALL.into_iter().find(|c| *c as u8 == value)
    }
}

/// One event in a packet's life. Encoded little-endian in 48 bytes. The
/// default is what 48 zero bytes decode to (an uplink arrival at time 0),
/// for records built field by field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// CLOCK_MONOTONIC (real runs) or virtual time, in ns.
    pub time: Nanos,
    /// Time the packet spent in this shell's queue (departures, AQM drops); else 0.
    pub sojourn: Nanos,
    pub flow: u32,
    pub fingerprint: u32,
    /// IP packet length in bytes.
    pub bytes: u32,
    /// Queue occupancy right after the event.
    pub queue_bytes: u32,
    pub queue_packets: u32,
    /// Position of the shell in the chain, 0 = outermost.
    pub shell: u8,
    pub direction: Direction,
    pub event: Event,
    /// Drop reason or mark kind, 0 when the event has none.
    pub detail: u8,
    /// The packet's ECN codepoint after the event.
    pub ecn: u8,
}

impl Record {
    pub fn drop_reason(&self) -> Option<DropReason> {
        (self.event == Event::Drop)
            .then(|| DropReason::from_u8(self.detail))
            .flatten()
    }

    /// A record of a parameter change at `time`.
    pub fn change(
        time: Nanos,
        shell: u8,
        direction: Direction,
        change: Change,
        value: u64,
    ) -> Record {
        Record {
            time,
            sojourn: value,
            shell,
            direction,
            event: Event::Change,
            detail: change as u8,
            ..Record::default()
        }
    }

    /// What a change record changed.
    pub fn change_kind(&self) -> Option<Change> {
        (self.event == Event::Change)
            .then(|| Change::from_u8(self.detail))
            .flatten()
    }

    /// The new value of a change record (its unit is the [`Change`]'s), 0
    /// for other records.
    pub fn value(&self) -> u64 {
        if self.event == Event::Change {
            self.sojourn
        } else {
            0
        }
    }

    pub fn encode(&self, out: &mut [u8; RECORD_SIZE]) {
        out[0..8].copy_from_slice(&self.time.to_le_bytes());
        out[8..16].copy_from_slice(&self.sojourn.to_le_bytes());
        out[16..20].copy_from_slice(&self.flow.to_le_bytes());
        out[20..24].copy_from_slice(&self.fingerprint.to_le_bytes());
        out[24..28].copy_from_slice(&self.bytes.to_le_bytes());
        out[28..32].copy_from_slice(&self.queue_bytes.to_le_bytes());
        out[32..36].copy_from_slice(&self.queue_packets.to_le_bytes());
        out[36] = self.shell;
        out[37] = self.direction as u8;
        out[38] = self.event as u8;
        out[39] = self.detail;
        out[40] = self.ecn;
        out[41..48].fill(0);
    }

    pub fn decode(bytes: &[u8; RECORD_SIZE]) -> Result<Record, String> {
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let direction = match bytes[37] {
            0 => Direction::Uplink,
            1 => Direction::Downlink,
            other => return Err(format!("direction byte {other} is neither 0 nor 1")),
        };
        let event = Event::from_u8(bytes[38])
            .ok_or_else(|| format!("event byte {} is unknown", bytes[38]))?;
        Ok(Record {
            time: u64_at(0),
            sojourn: u64_at(8),
            flow: u32_at(16),
            fingerprint: u32_at(20),
            bytes: u32_at(24),
            queue_bytes: u32_at(28),
            queue_packets: u32_at(32),
            shell: bytes[36],
            direction,
            event,
            detail: bytes[39],
            ecn: bytes[40],
        })
    }

    /// The `detail` byte spelled out: a drop reason, a mark, or empty.
    pub fn detail_name(&self) -> &'static str {
        match self.event {
            Event::Drop => DropReason::from_u8(self.detail).map_or("unknown", DropReason::name),
            Event::Mark => match self.detail {
                16 => Mark::Ce.name(),
                17 => Mark::Ect1.name(),
                _ => "unknown",
            },
            Event::Flow => match self.detail {
                4 => "ipv4",
                6 => "ipv6_source",
                7 => "ipv6_destination",
                _ => "unknown",
            },
            Event::Change => Change::from_u8(self.detail).map_or("unknown", Change::name),
            _ => "",
        }
    }
}
