//! Queue disciplines behind one trait. A queue is pure: it is told the time
//! (`now`) with every call and never reads a clock, so the same code runs in
//! a live shell, in virtual-time tests and in benchmarks.
//!
//! Every packet a queue gets back out is either returned by `dequeue` or put
//! in the [`Outcome`] with the reason it was dropped; marks are reported the
//! same way. The link turns both into per-packet log records.
//!
//! Every byte a queue counts — byte limits, quanta, memory limits, byte-mode
//! probabilities, backlog thresholds — is a frame byte as
//! [`emu_core::size`] defines it ([`Packet::frame_len`]): the IP length,
//! plus the 14-byte MAC header under `link --l2 ethernet`, as a Linux qdisc
//! counts on that device.

pub mod cake;
pub mod codel;
pub mod curvy_red;
pub mod deficit_shaper;
pub mod dualpi2;
pub mod dualq;
pub mod ecn;
mod fifo;
mod flow_queues;
pub mod fq_codel;
pub mod fq_pie;
pub mod grammar;
pub mod instant_red;
pub mod lfq_cobalt;
pub mod pie;
pub mod red;
pub mod sce_cobalt;
pub mod sce_options;
#[cfg(test)]
mod sce_test_support;
pub mod spec;
pub mod twin_codel_af;

pub(crate) use fifo::Fifo;
pub use fifo::{Bounded, Infinite, Limits, Overflow};
pub use spec::catalogue::catalogue;
pub use spec::time_scale::TimeScale;
pub use spec::{build_queue, QueueSpec, SpecError};

use emu_core::log::{DropReason, Mark};
use emu_core::{Nanos, Packet};

/// A packet a queue let go of, and why.
#[derive(Debug)]
pub struct Dropped {
    pub packet: Packet,
    pub reason: DropReason,
    /// When the queue decided (may be a dequeue time for AQM drops).
    pub at: Nanos,
}

/// A mark a queue applied to a packet it kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marked {
    pub flow: u32,
    pub fingerprint: u32,
    pub bytes: u32,
    pub mark: Mark,
    pub at: Nanos,
}

/// What a queue call did besides accepting or handing out a packet. The link
/// owns one and empties it after every call, so its vectors are reused and
/// the hot path does not allocate.
#[derive(Debug, Default)]
pub struct Outcome {
    pub drops: Vec<Dropped>,
    pub marks: Vec<Marked>,
}

impl Outcome {
    pub fn drop(&mut self, packet: Packet, reason: DropReason, at: Nanos) {
        self.drops.push(Dropped { packet, reason, at });
    }

    pub fn mark(&mut self, packet: &Packet, mark: Mark, at: Nanos) {
        self.marks.push(Marked {
            flow: packet.flow,
            fingerprint: packet.fingerprint,
            bytes: packet.len() as u32,
            mark,
            at,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.drops.is_empty() && self.marks.is_empty()
    }
}

/// A queue discipline.
///
/// Built from a [`QueueSpec`]; every call carries the time, so a test
/// drives it in virtual time. CoDel, for one, drops at dequeue once packets
/// have waited more than its target for a whole interval (RFC 8289):
///
/// ```
/// use aqm::{Outcome, Queue, QueueSpec};
/// use emu_core::log::DropReason;
/// use emu_core::packet::build::ipv4_udp;
/// use emu_core::Packet;
///
/// let mut codel = QueueSpec::parse("codel target 5ms interval 100ms").unwrap().build();
/// let mut outcome = Outcome::default();
/// let ms = 1_000_000;
/// // 1000 packets arrive at once; one leaves per ms.
/// for _ in 0..1000 {
///     let packet = Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 1000), 0);
///     assert!(codel.enqueue(packet, 0, &mut outcome));
/// }
/// let mut sent = 0;
/// for t in 0..300 {
///     sent += codel.dequeue(t * ms, &mut outcome).is_some() as usize;
/// }
/// assert!(outcome.drops.iter().all(|d| d.reason == DropReason::Aqm));
/// assert!(!outcome.drops.is_empty(), "a standing queue of 100s of ms is dropped from");
/// assert_eq!(sent + outcome.drops.len() + codel.packets(), 1000);
/// ```
pub trait Queue: Send {
    /// Offers a packet arriving at `now`. Returns true if the queue kept it;
    /// if not, the packet is in `outcome.drops`. A queue may also drop other
    /// packets to make room (drop-head, overflow from the fattest flow).
    fn enqueue(&mut self, packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool;

    /// The next packet to put on the wire at `now`, if any. AQMs that drop at
    /// dequeue put those drops in `outcome` and keep going.
    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet>;

    /// Packets held.
    fn packets(&self) -> usize;

    /// Bytes held, in frame bytes ([`Packet::frame_len`]).
    fn bytes(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.packets() == 0
    }

    /// Called by the rate model when the link goes idle with the queue empty,
    /// for disciplines whose state decays while idle (BLUE, PIE).
    fn on_idle(&mut self, _now: Nanos) {}

    /// For a queue with a shaper of its own (cake `bandwidth`): while it
    /// holds packets, the earliest time its shaper lets the next one go.
    /// `dequeue` before then returns nothing. None for unshaped queues.
    fn next_ready(&self) -> Option<Nanos> {
        None
    }

    /// The discipline and its parameters, as a `tc qdisc` line would show them.
    fn describe(&self) -> String;

    /// Whether [`Queue::change`] takes `spec` (`tc qdisc change`): the
    /// same discipline with new parameters. A discipline that cannot
    /// change in place says so, and names the replacement instead.
    fn accepts_change(&self, spec: &QueueSpec) -> Result<(), String> {
        let _ = spec;
        Err(format!(
            "'{}' cannot change its parameters in place; replace the queue instead",
            self.describe()
        ))
    }

    /// Takes `spec`'s parameters at `now`, keeping the packets held and the
    /// discipline's state, as `tc qdisc change` does; packets beyond a
    /// lowered limit are dropped from the head into `outcome` where Linux
    /// trims them. Call only after [`Queue::accepts_change`] said yes.
    fn change(&mut self, spec: &QueueSpec, now: Nanos, outcome: &mut Outcome) {
        let _ = (spec, now, outcome);
    }
}
