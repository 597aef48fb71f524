//! twin_codel_af, "Twinned Cheap Nasty Queuing with Codel and Approximate
//! Fairness" (the SCE reference kernel's sch_twin_codel_af.c): the SCE
//! project's two-class queue with SCE marking on by default.
//!
//! - Classes: packets with DSCP 4 (TOS 0x10, the legacy minimise-delay
//!   codepoint) go to the low-latency class, whose constants are the normal
//!   class's divided by 5 (interval 20 ms, target 1 ms, SCE 500 µs on a 5 ms
//!   schedule); the rest to the normal class (100 ms, 5 ms, 2.5 ms on 25 ms).
//! - Each class keeps per-flow packet counts (5-tuple hash modulo 65536), a
//!   sparse queue and a bulk queue. A packet of a flow with nothing queued
//!   is sparse: it joins the sparse queue, which has strict priority, and a
//!   placeholder joins the bulk queue, so the flow stays counted until the
//!   bulk queue has drained past that point. Every other packet is bulk.
//! - The classes share the link flow-fairly: the class served gains credit
//!   equal to the other class's flow count, and the class with less credit
//!   is served next.
//! - AQM ([`crate::sce_cobalt`], one state per flow hash) acts on bulk
//!   packets, with sojourn weighted by the flow's share of the queue
//!   (sojourn × flow's packets × active flows against target × packets
//!   queued), and never drops a flow's last queued packet. Serving a sparse
//!   packet counts as its flow's queue being empty; one idle flow's state
//!   decays on every dequeue, round-robin over the 65536.
//! - An optional deficit-mode shaper (`bandwidth`), as cake's.
//!
//! Differences from the reference: arrivals beyond `limit` packets (10240,
//! the limit the reference sets but never checks) are dropped, as emu must
//! bound its memory; segmentation does not arise (packets come segmented).
//!
//! Cost: O(1) per packet, plus dequeue's skipping of placeholders (at most
//! one per flow); about 4 MB of per-flow state per queue.

use crate::deficit_shaper::DeficitShaper;
use crate::sce_cobalt::{judge, SceCobaltParams, SceCobaltVars, Service, Weight};
use crate::sce_options::SceQueueParams;
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Flow hash buckets (CNQ_QUEUES).
pub const FLOWS: usize = 65_536;
/// DSCP of the low-latency class.
pub const LL_DSCP: u8 = 4;
/// The low-latency class's constants are the normal class's over this.
pub const DIVISOR: u64 = 5;
/// The reference's default SCE schedule interval, normal class.
const SCE_INTERVAL: Nanos = 25_000_000;

/// A bulk queue entry: a packet, or the placeholder of a sparse packet.
#[derive(Debug)]
enum Slot {
    Packet(Packet),
    Placeholder(usize),
}

fn flow_of(packet: &Packet) -> usize {
    packet.flow as usize % FLOWS
}

impl Slot {
    fn flow(&self) -> usize {
        match self {
            Slot::Packet(p) => flow_of(p),
            Slot::Placeholder(flow) => *flow,
        }
    }
}

/// One class (struct cnq_class_data).
#[derive(Debug)]
struct Class {
    sparse: VecDeque<Packet>,
    bulk: VecDeque<Slot>,
    /// Entries in the bulk queue per flow, placeholders included.
    backlogs: Vec<u32>,
    active_flows: u32,
    active_sparse: u32,
    placeholders: u32,
    /// Frame bytes of real packets held.
    backlog: u64,
    deficit: i64,
    params: SceCobaltParams,
}

impl Class {
    fn new(params: SceCobaltParams) -> Class {
        Class {
            sparse: VecDeque::new(),
            bulk: VecDeque::new(),
            backlogs: vec![0; FLOWS],
            active_flows: 0,
            active_sparse: 0,
            placeholders: 0,
            backlog: 0,
            deficit: 0,
            params,
        }
    }

    fn push_bulk(&mut self, slot: Slot) {
        let flow = slot.flow();
        if self.backlogs[flow] == 0 {
            self.active_flows += 1;
        }
        self.backlogs[flow] += 1;
        self.bulk.push_back(slot);
    }

    fn push_sparse(&mut self, packet: Packet) {
        self.push_bulk(Slot::Placeholder(flow_of(&packet)));
        self.placeholders += 1;
        self.sparse.push_back(packet);
        self.active_sparse += 1;
    }

    /// Takes the bulk head, keeping the counts.
    fn pop_bulk_slot(&mut self) -> Option<Slot> {
        let slot = self.bulk.pop_front()?;
        let flow = slot.flow();
        self.backlogs[flow] -= 1;
        if self.backlogs[flow] == 0 {
            self.active_flows -= 1;
        }
        if matches!(slot, Slot::Placeholder(_)) {
            self.placeholders -= 1;
        }
        Some(slot)
    }

    /// The first real bulk packet, discarding placeholders before it.
    fn pop_bulk(&mut self) -> Option<Packet> {
        loop {
            if let Slot::Packet(p) = self.pop_bulk_slot()? {
                return Some(p);
            }
        }
    }

    /// Once no sparse packet is left, placeholders at the bulk head go.
    fn drain_placeholders(&mut self) {
        while self.placeholders > 0
            && self.active_sparse == 0
            && matches!(self.bulk.front(), Some(Slot::Placeholder(_)))
        {
            self.pop_bulk_slot();
        }
    }

    /// Flows that count against the other class's credit.
    fn flows(&self) -> i64 {
        self.active_flows as i64 + self.active_sparse as i64 - self.placeholders as i64
    }
}

pub struct TwinCodelAf {
    pub params: SceQueueParams,
    classes: [Class; 2],
    cvars: Vec<SceCobaltVars>,
    decay_index: usize,
    shaper: DeficitShaper,
    packets: usize,
    bytes: u64,
    rng: ChaCha8Rng,
}

impl TwinCodelAf {
    pub fn new(params: SceQueueParams) -> TwinCodelAf {
        let [normal, low_latency] = Self::class_params(&params);
        TwinCodelAf {
            classes: [Class::new(normal), Class::new(low_latency)],
            cvars: vec![SceCobaltVars::default(); FLOWS],
            decay_index: 0,
            shaper: DeficitShaper::new(params.bandwidth, params.overhead),
            packets: 0,
            bytes: 0,
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
        }
    }

    /// The two classes' constants (cnq_init, then cnq_change): defaults,
    /// then `rtt`, `target` (each /5 for the low-latency class) and `sce`.
    pub fn class_params(p: &SceQueueParams) -> [SceCobaltParams; 2] {
        let mut classes = [
            SceCobaltParams::defaults(1, SCE_INTERVAL),
            SceCobaltParams::defaults(DIVISOR, SCE_INTERVAL),
        ];
        for (class, divisor) in classes.iter_mut().zip([1, DIVISOR]) {
            if let Some(rtt) = p.rtt {
                class.set_rtt(rtt / divisor);
            }
            if let Some(target) = p.target {
                class.set_target(target / divisor);
            }
            if let Some(sce) = p.sce {
                class.set_sce(sce);
            }
        }
        classes
    }

    fn class_of(packet: &Packet) -> usize {
        (packet.dscp() == Some(LL_DSCP)) as usize
    }

    /// The class to serve, and the credit update for flow-fair sharing.
    fn choose_class(&mut self) -> usize {
        let [c0, c1] = &self.classes;
        let c = if c1.backlog == 0 {
            0
        } else if c0.backlog == 0 {
            1
        } else {
            (c0.deficit >= c1.deficit) as usize
        };
        let gain = self.classes[1 - c].flows();
        self.classes[c].deficit += gain;
        let common = self.classes[0].deficit.min(self.classes[1].deficit);
        for class in &mut self.classes {
            class.deficit -= common;
        }
        c
    }
}

impl Queue for TwinCodelAf {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.packets as u64 >= self.params.limit {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        if self.bytes == 0 {
            self.shaper.unstale(now);
        }
        let len = packet.frame_len() as u64;
        packet.enqueued = now;
        let class = &mut self.classes[Self::class_of(&packet)];
        if class.backlogs[flow_of(&packet)] > 0 {
            class.push_bulk(Slot::Packet(packet));
        } else {
            class.push_sparse(packet);
        }
        class.backlog += len;
        self.packets += 1;
        self.bytes += len;
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        let packet = loop {
            if self.packets == 0 || self.shaper.holds(now) {
                return None;
            }
            let c = self.choose_class();
            let class = &mut self.classes[c];
            let (packet, sparse) = match class.sparse.pop_front() {
                Some(p) => {
                    class.active_sparse -= 1;
                    (p, true)
                }
                None => (class.pop_bulk()?, false),
            };
            let flow = flow_of(&packet);
            let len = packet.frame_len() as u64;
            self.packets -= 1;
            self.bytes -= len;
            class.backlog -= len;
            if sparse {
                self.cvars[flow].queue_empty(&class.params, now);
                break packet;
            }
            let service = Service {
                now,
                weight: Weight {
                    flow_backlog: class.backlogs[flow] + 1,
                    active_flows: class.active_flows.saturating_sub(class.placeholders),
                    total_backlog: self.packets as u32 + 1,
                },
                flow_has_more: class.backlogs[flow] > 0,
            };
            let rng = &mut self.rng;
            let vars = &mut self.cvars[flow];
            if let Some(packet) = judge(vars, &class.params, service, packet, || rng.gen(), outcome)
            {
                break packet;
            }
        };
        self.shaper.advance(&packet);
        let i = self.decay_index;
        if self.classes.iter().all(|c| c.backlogs[i] == 0) {
            self.cvars[i].queue_empty(&self.classes[0].params, now);
        }
        self.decay_index = (i + 1) % FLOWS;
        for class in &mut self.classes {
            class.drain_placeholders();
        }
        Some(packet)
    }

    fn packets(&self) -> usize {
        self.packets
    }

    fn bytes(&self) -> usize {
        self.bytes as usize
    }

    fn next_ready(&self) -> Option<Nanos> {
        (self.packets > 0)
            .then(|| self.shaper.next_ready())
            .flatten()
    }

    fn describe(&self) -> String {
        self.params
            .describe("twin_codel_af", &self.classes[0].params)
    }
}

#[cfg(test)]
mod tests;
