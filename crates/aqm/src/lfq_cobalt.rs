//! lfq_cobalt, "Lightweight Fair Queueing with COBALT" (the SCE reference
//! kernel's sch_lfq_cobalt.c): two queues instead of one per flow, with
//! fairness from a scan over the bulk queue. SCE marking is off by default.
//!
//! - Per flow (5-tuple hash modulo 65536): a packet count, a byte credit
//!   and a `skip` flag. A packet whose flow has nothing queued, no debt and
//!   no skip joins the sparse queue, which has strict priority and no AQM;
//!   every other packet joins the bulk queue.
//! - The bulk queue is served not from its head but from a scan position
//!   moving head to tail: a packet is sent if its flow is not skipped,
//!   else the scan moves on. Sending charges the flow its size; a flow that
//!   goes into debt is skipped (and credited one MTU) until the scan next
//!   wraps to the head, when skips clear and idle flows' credit resets. So
//!   each pass over the queue gives each flow about one MTU.
//! - AQM ([`crate::sce_cobalt`], one state per flow hash, unweighted) acts
//!   on bulk packets, with the low-latency constants (all /5: 20 ms, 1 ms,
//!   no SCE) for DSCP 4; it never drops a flow's last packet, and finding
//!   the queue empty counts as the flow's queue being empty. One idle
//!   flow's state decays on every dequeue, round-robin over the 65536.
//! - An optional deficit-mode shaper (`bandwidth`), as cake's.
//!
//! Differences from the reference: `memlimit` counts frame bytes (emu has
//! no skb truesize) and makes room by dropping the oldest bulk packet (then
//! sparse), where the reference's loop re-queues the packet it popped;
//! arrivals beyond `limit` packets (10240, set but never checked by the
//! reference) are dropped.
//!
//! Cost: amortised O(1) per packet for the scan (each pass visits each
//! queued packet once), plus an O(distance from the head) removal at the
//! scan position; about 4 MB of per-flow state per queue.

use crate::deficit_shaper::DeficitShaper;
use crate::sce_cobalt::{judge, SceCobaltParams, SceCobaltVars, Service, Weight};
use crate::sce_options::SceQueueParams;
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Flow hash buckets (LFQ_FLOWS).
pub const FLOWS: usize = 65_536;
/// DSCP of the low-latency constants.
pub const LL_DSCP: u8 = 4;
/// The low-latency constants are the normal ones over this.
pub const DIVISOR: u64 = 5;

fn flow_of(packet: &Packet) -> usize {
    packet.flow as usize % FLOWS
}

/// struct lfq_flow_data.
#[derive(Debug, Clone, Copy, Default)]
struct FlowData {
    deficit: i64,
    backlog: u32,
    skip: bool,
    dirty: bool,
}

pub struct LfqCobalt {
    pub params: SceQueueParams,
    cparams: SceCobaltParams,
    cparams_ll: SceCobaltParams,
    cvars: Vec<SceCobaltVars>,
    decay_index: usize,
    flows: Vec<FlowData>,
    /// Flows touched since the last sweep.
    dirty: Vec<usize>,
    sparse: VecDeque<Packet>,
    bulk: VecDeque<Packet>,
    /// Index into `bulk` of the next packet to consider; None once the
    /// scan has passed the tail (the next dequeue sweeps and restarts).
    scan: Option<usize>,
    /// Credit a flow gets on going into debt: the MTU plus link header.
    quantum: i64,
    shaper: DeficitShaper,
    packets: usize,
    bytes: u64,
    rng: ChaCha8Rng,
}

impl LfqCobalt {
    pub fn new(params: SceQueueParams) -> LfqCobalt {
        let (cparams, cparams_ll) = Self::class_params(&params);
        LfqCobalt {
            cparams,
            cparams_ll,
            cvars: vec![SceCobaltVars::default(); FLOWS],
            decay_index: 0,
            flows: vec![FlowData::default(); FLOWS],
            dirty: Vec::new(),
            sparse: VecDeque::new(),
            bulk: VecDeque::new(),
            scan: None,
            quantum: (params.mtu + params.link_header) as i64,
            shaper: DeficitShaper::new(params.bandwidth, params.overhead),
            packets: 0,
            bytes: 0,
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
        }
    }

    /// The normal and low-latency constants (lfq_init, then lfq_change):
    /// `rtt`, `target` and `sce` change only the normal ones.
    pub fn class_params(p: &SceQueueParams) -> (SceCobaltParams, SceCobaltParams) {
        let mut normal = SceCobaltParams::defaults(1, 0);
        if let Some(rtt) = p.rtt {
            normal.set_rtt(rtt);
        }
        if let Some(target) = p.target {
            normal.set_target(target);
        }
        if let Some(sce) = p.sce {
            normal.set_sce(sce);
        }
        (normal, SceCobaltParams::defaults(DIVISOR, 0))
    }

    fn set_dirty(&mut self, flow: usize) {
        if !self.flows[flow].dirty {
            self.flows[flow].dirty = true;
            self.dirty.push(flow);
        }
    }

    /// Back to the bulk head (lfq_sweep): skipped flows are forgiven, and
    /// flows with nothing queued lose any credit left.
    fn sweep(&mut self) {
        for &flow in &self.dirty {
            let d = &mut self.flows[flow];
            if d.skip {
                d.skip = false;
            } else if d.backlog == 0 {
                d.deficit = 0;
            }
            d.dirty = false;
        }
        self.dirty.clear();
        self.scan = (!self.bulk.is_empty()).then_some(0);
    }

    /// Accounts a packet leaving (lfq_send).
    fn charge(&mut self, packet: &Packet) {
        let flow = flow_of(packet);
        let len = packet.frame_len() as u64;
        let d = &mut self.flows[flow];
        d.backlog -= 1;
        d.deficit -= len as i64;
        if d.deficit < 0 {
            d.skip = true;
            d.deficit += self.quantum;
        }
        self.packets -= 1;
        self.bytes -= len;
        self.set_dirty(flow);
    }

    /// The next bulk packet by the scan, charged to its flow.
    fn take_bulk(&mut self) -> Option<Packet> {
        while !self.bulk.is_empty() {
            let i = match self.scan {
                Some(i) => i,
                None => {
                    self.sweep();
                    0
                }
            };
            if !self.flows[flow_of(&self.bulk[i])].skip {
                let packet = self.bulk.remove(i)?;
                self.scan = (i < self.bulk.len()).then_some(i);
                self.charge(&packet);
                return Some(packet);
            }
            self.scan = (i + 1 < self.bulk.len()).then_some(i + 1);
        }
        None
    }

    /// Drops the oldest bulk packet (else sparse) to make room.
    fn drop_oldest(&mut self, now: Nanos, outcome: &mut Outcome) -> bool {
        let packet = match self.bulk.pop_front() {
            Some(p) => {
                self.scan = match self.scan {
                    Some(0) | None => (!self.bulk.is_empty() && self.scan.is_some()).then_some(0),
                    Some(i) => Some(i - 1),
                };
                p
            }
            None => match self.sparse.pop_front() {
                Some(p) => p,
                None => return false,
            },
        };
        let flow = flow_of(&packet);
        let len = packet.frame_len() as u64;
        self.flows[flow].backlog -= 1;
        self.packets -= 1;
        self.bytes -= len;
        self.set_dirty(flow);
        outcome.drop(packet, DropReason::Head, now);
        true
    }
}

impl Queue for LfqCobalt {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        if self.packets as u64 >= self.params.limit {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let len = packet.frame_len() as u64;
        if let Some(memlimit) = self.params.memlimit {
            while self.bytes + len > memlimit && self.drop_oldest(now, outcome) {}
        }
        if self.bytes == 0 {
            self.shaper.unstale(now);
        }
        let flow = flow_of(&packet);
        packet.enqueued = now;
        let d = self.flows[flow];
        if d.backlog == 0 && d.deficit >= 0 && !d.skip {
            self.sparse.push_back(packet);
        } else {
            if self.bulk.is_empty() {
                self.scan = Some(0);
            }
            self.bulk.push_back(packet);
        }
        self.flows[flow].backlog += 1;
        self.packets += 1;
        self.bytes += len;
        self.set_dirty(flow);
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        let packet = loop {
            if self.packets == 0 || self.shaper.holds(now) {
                return None;
            }
            if let Some(packet) = self.sparse.pop_front() {
                self.charge(&packet);
                break packet;
            }
            let packet = self.take_bulk()?;
            let flow = flow_of(&packet);
            if self.bytes == 0 {
                self.cvars[flow].queue_empty(&self.cparams, now);
                break packet;
            }
            let p = if packet.dscp() == Some(LL_DSCP) {
                &self.cparams_ll
            } else {
                &self.cparams
            };
            let service = Service {
                now,
                weight: Weight::NONE,
                flow_has_more: self.flows[flow].backlog > 0,
            };
            let rng = &mut self.rng;
            let vars = &mut self.cvars[flow];
            if let Some(packet) = judge(vars, p, service, packet, || rng.gen(), outcome) {
                break packet;
            }
        };
        self.shaper.advance(&packet);
        let i = self.decay_index;
        if self.flows[i].backlog == 0 {
            self.cvars[i].queue_empty(&self.cparams, now);
        }
        self.decay_index = (i + 1) % FLOWS;
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
        self.params.describe("lfq_cobalt", &self.cparams)
    }
}

#[cfg(test)]
mod tests;
