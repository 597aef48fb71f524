//! What fq_codel and fq_pie share: packets hashed by 5-tuple into flows,
//! each with its own AQM state, served by the DRR++ scheduler of RFC 8290
//! §4.2 (Linux fq_codel_dequeue, fq_pie_qdisc_dequeue): flows that just
//! became active (new flows) go before flows with a standing queue (old
//! flows), each spending a byte quantum per round.
//!
//! The scheduler owns the lists, the deficits and the rule that an emptied
//! new flow goes behind the old ones (so it cannot starve them by coming
//! back as new); each discipline passes its own per-flow dequeue.

use crate::grammar::{Opt, SpecError, Words};
use emu_core::size::{parse_count, parse_size};
use emu_core::Packet;
use std::collections::VecDeque;

/// Which DRR++ list a flow is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowList {
    Inactive,
    New,
    Old,
}

/// One flow: its packets, their bytes, its credit and its AQM's state.
pub(crate) struct Flow<S> {
    packets: VecDeque<Packet>,
    backlog: u64,
    deficit: i64,
    list: FlowList,
    pub(crate) state: S,
}

impl<S> Flow<S> {
    /// Bytes queued in this flow.
    pub(crate) fn backlog(&self) -> u64 {
        self.backlog
    }
}

/// A flow's packets as its AQM takes them at dequeue, keeping the flow's
/// and the whole queue's counts right.
pub(crate) struct FlowPackets<'a> {
    packets: &'a mut VecDeque<Packet>,
    backlog: &'a mut u64,
    total_packets: &'a mut u64,
    total_bytes: &'a mut u64,
}

impl FlowPackets<'_> {
    /// Takes the flow's head packet.
    pub(crate) fn pop(&mut self) -> Option<Packet> {
        let packet = self.packets.pop_front()?;
        let len = packet.frame_len() as u64;
        *self.backlog -= len;
        *self.total_packets -= 1;
        *self.total_bytes -= len;
        Some(packet)
    }

    /// Bytes left in this flow.
    pub(crate) fn flow_backlog(&self) -> u64 {
        *self.backlog
    }

    /// Bytes left in all flows.
    pub(crate) fn total_backlog(&self) -> u64 {
        *self.total_bytes
    }
}

/// Flow queues under DRR++, each flow carrying AQM state `S`.
pub(crate) struct FlowQueues<S> {
    flows: Vec<Flow<S>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    quantum: i64,
    packets: u64,
    bytes: u64,
}

impl<S> FlowQueues<S> {
    /// `flows` queues (at least one), each starting with `state()`.
    pub(crate) fn new(flows: usize, quantum: u32, mut state: impl FnMut() -> S) -> Self {
        FlowQueues {
            flows: (0..flows.max(1))
                .map(|_| Flow {
                    packets: VecDeque::new(),
                    backlog: 0,
                    deficit: 0,
                    list: FlowList::Inactive,
                    state: state(),
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            quantum: quantum as i64,
            packets: 0,
            bytes: 0,
        }
    }

    /// Number of flow queues.
    pub(crate) fn len(&self) -> usize {
        self.flows.len()
    }

    /// The flow a packet belongs to: its 5-tuple hash scaled to the
    /// number of flows (Linux's reciprocal_scale).
    pub(crate) fn classify(&self, packet: &Packet) -> usize {
        ((packet.flow as u64 * self.flows.len() as u64) >> 32) as usize
    }

    /// Packets held in all flows.
    pub(crate) fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes held in all flows.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    pub(crate) fn flow(&self, index: usize) -> &Flow<S> {
        &self.flows[index]
    }

    pub(crate) fn flow_mut(&mut self, index: usize) -> &mut Flow<S> {
        &mut self.flows[index]
    }

    pub(crate) fn flows_mut(&mut self) -> impl Iterator<Item = &mut Flow<S>> {
        self.flows.iter_mut()
    }

    pub(crate) fn deficit(&self, index: usize) -> i64 {
        self.flows[index].deficit
    }

    pub(crate) fn list(&self, index: usize) -> FlowList {
        self.flows[index].list
    }

    pub(crate) fn flow_packets(&self, index: usize) -> usize {
        self.flows[index].packets.len()
    }

    /// Appends a packet to its flow. A flow on no list joins the new
    /// flows with a quantum of credit.
    pub(crate) fn push(&mut self, index: usize, packet: Packet) {
        let len = packet.frame_len() as u64;
        let flow = &mut self.flows[index];
        flow.packets.push_back(packet);
        flow.backlog += len;
        self.packets += 1;
        self.bytes += len;
        if flow.list == FlowList::Inactive {
            flow.list = FlowList::New;
            flow.deficit = self.quantum;
            self.new_flows.push_back(index);
        }
    }

    /// Takes a flow's head packet outside the scheduler (overflow drops).
    pub(crate) fn pop_front(&mut self, index: usize) -> Option<Packet> {
        let flow = &mut self.flows[index];
        FlowPackets {
            packets: &mut flow.packets,
            backlog: &mut flow.backlog,
            total_packets: &mut self.packets,
            total_bytes: &mut self.bytes,
        }
        .pop()
    }

    /// The flow with the most bytes queued (the lowest index on a tie).
    pub(crate) fn fattest(&self) -> usize {
        (0..self.flows.len())
            .max_by_key(|&i| (self.flows[i].backlog, std::cmp::Reverse(i)))
            .expect("at least one flow")
    }

    /// The next packet by DRR++. `take` is the discipline's dequeue of
    /// one flow: it may drop packets on the way (CoDel) and returns None
    /// when the flow has nothing to send.
    pub(crate) fn dequeue(
        &mut self,
        mut take: impl FnMut(&mut S, &mut FlowPackets) -> Option<Packet>,
    ) -> Option<Packet> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let index = *(if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            })?;
            let flow = &mut self.flows[index];
            if flow.deficit <= 0 {
                // Out of credit: a quantum more, to the back of the old list.
                flow.deficit += self.quantum;
                flow.list = FlowList::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(index);
                continue;
            }
            let mut packets = FlowPackets {
                packets: &mut flow.packets,
                backlog: &mut flow.backlog,
                total_packets: &mut self.packets,
                total_bytes: &mut self.bytes,
            };
            if let Some(packet) = take(&mut flow.state, &mut packets) {
                flow.deficit -= packet.frame_len() as i64;
                return Some(packet);
            }
            // Empty: a new flow goes to the old list (so it cannot starve
            // old flows by re-entering as new), unless the old list is
            // empty; an old flow becomes inactive.
            if from_new {
                self.new_flows.pop_front();
                if !self.old_flows.is_empty() {
                    flow.list = FlowList::Old;
                    self.old_flows.push_back(index);
                    continue;
                }
            } else {
                self.old_flows.pop_front();
            }
            flow.list = FlowList::Inactive;
        }
    }
}

/// The flow-queue options fq_codel and fq_pie share.
pub(crate) const OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "10240",
        "most packets held in all flows",
    ),
    ("flows", "N", "1024", "number of flow queues"),
    (
        "quantum",
        "BYTES",
        "1514",
        "bytes a flow may send per round",
    ),
    (
        "memory_limit",
        "SIZE",
        "32mb",
        "most bytes held in all flows",
    ),
];

/// The most a flow may send per round: Linux refuses a larger quantum
/// (fq_codel_change, fq_pie_change), and without a bound a size such as
/// `4g` would wrap to a zero quantum that never lets a flow send.
pub(crate) const MAX_QUANTUM: u64 = 1 << 20;

fn parse_quantum(text: &str) -> Result<u32, String> {
    match parse_size(text) {
        Ok(bytes) if bytes <= MAX_QUANTUM => Ok(bytes.max(1) as u32),
        Ok(_) => Err(format!(
            "'{text}' is more than {MAX_QUANTUM} bytes, the most Linux allows"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// A count of flow queues: 1 to 65536, as Linux takes for fq_codel.
fn flow_count(text: &str) -> Result<usize, String> {
    match parse_count(text) {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n as usize),
        Ok(_) => Err(format!("'{text}' is not from 1 to 65536")),
        Err(e) => Err(e.to_string()),
    }
}

/// Handles a flow-queue keyword (limit, flows, quantum, memory_limit) of
/// fq_codel or fq_pie; false if it is not one.
pub(crate) fn option(
    words: &mut Words,
    keyword: &str,
    (limit, flows, quantum, memory_limit): (&mut u64, &mut usize, &mut u32, &mut u64),
) -> Result<bool, SpecError> {
    match keyword {
        "limit" => *limit = words.value(keyword, parse_count)?,
        // As Linux: 1 to 65536 flow queues, anything else refused.
        "flows" => *flows = words.value(keyword, flow_count)?,
        "quantum" => *quantum = words.value(keyword, parse_quantum)?,
        "memory_limit" => *memory_limit = words.value(keyword, parse_size)?,
        _ => return Ok(false),
    }
    Ok(true)
}
