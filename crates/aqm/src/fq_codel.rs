//! FQ-CoDel (RFC 8290; Linux net/sched/sch_fq_codel.c): packets are hashed
//! by 5-tuple into flows, each a FIFO under its own CoDel, served by the
//! DRR++ scheduler of [`crate::flow_queues`]. On overflow it drops from the
//! head of the fattest flow.

use crate::codel::{describe_codel, CodelParams, CodelVars, FlowQueue};
use crate::flow_queues::{FlowPackets, FlowQueues};
use crate::grammar::{Opt, SpecError, Words};
use crate::{codel, flow_queues};
use crate::{Outcome, Queue};
use emu_core::log::DropReason;
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use serde::{Deserialize, Serialize};

/// Parameters of fq_codel beyond CoDel's own (RFC 8290 §4, §5; tc-fq_codel).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FqCodelParams {
    pub codel: CodelParams,
    pub flows: usize,
    /// Bytes a flow may send per round (RFC 8290 §4.1; Linux 1514).
    pub quantum: u32,
    /// Packets held in all flows together.
    pub limit: u64,
    /// Bytes held in all flows together (Linux counts buffer truesize; we
    /// count packet bytes).
    pub memory_limit: u64,
    /// Most packets dropped from the fattest flow when a limit is hit.
    pub drop_batch: u32,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            codel: CodelParams {
                ecn: true,
                ..CodelParams::default()
            },
            flows: 1024,
            quantum: 1514,
            limit: 10_240,
            memory_limit: 32 << 20,
            drop_batch: 64,
        }
    }
}

pub use crate::flow_queues::FlowList;

pub struct FqCodel {
    params: FqCodelParams,
    queues: FlowQueues<CodelVars>,
}

/// CoDel sees one flow's packets, but compares the whole qdisc's backlog
/// with the MTU, as Linux does.
impl FlowQueue for FlowPackets<'_> {
    fn pop(&mut self) -> Option<Packet> {
        FlowPackets::pop(self)
    }
    fn backlog(&self) -> u64 {
        self.total_backlog()
    }
}

impl FqCodel {
    pub fn new(params: FqCodelParams) -> FqCodel {
        FqCodel {
            queues: FlowQueues::new(params.flows, params.quantum, CodelVars::default),
            params,
        }
    }

    pub fn flow_of(&self, packet: &Packet) -> usize {
        self.queues.classify(packet)
    }

    pub fn deficit(&self, flow: usize) -> i64 {
        self.queues.deficit(flow)
    }

    pub fn list(&self, flow: usize) -> FlowList {
        self.queues.list(flow)
    }

    pub fn flow_packets(&self, flow: usize) -> usize {
        self.queues.flow_packets(flow)
    }

    /// On overflow, drop from the head of the flow with the largest
    /// backlog until half of it is gone or `drop_batch` packets are
    /// (RFC 8290 §4.1; fq_codel_drop). Returns that flow.
    fn drop_from_fattest(&mut self, now: Nanos, outcome: &mut Outcome) -> usize {
        let fattest = self.queues.fattest();
        let threshold = self.queues.flow(fattest).backlog() / 2;
        let mut dropped_bytes = 0;
        let mut dropped = 0;
        while dropped < self.params.drop_batch && dropped_bytes < threshold {
            let Some(packet) = self.queues.pop_front(fattest) else {
                break;
            };
            dropped_bytes += packet.frame_len() as u64;
            dropped += 1;
            outcome.drop(packet, DropReason::Head, now);
        }
        fattest
    }
}

impl Queue for FqCodel {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        let index = self.queues.classify(&packet);
        packet.enqueued = now;
        self.queues.push(index, packet);
        if self.queues.packets() > self.params.limit
            || self.queues.bytes() > self.params.memory_limit
        {
            self.drop_from_fattest(now, outcome);
        }
        // The arriving packet is at its flow's tail and batch drops take
        // from the head, at most half the flow: it is always kept.
        true
    }

    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        let codel = &self.params.codel;
        self.queues
            .dequeue(|vars, packets| vars.dequeue(codel, now, packets, outcome))
    }

    fn packets(&self) -> usize {
        self.queues.packets() as usize
    }

    fn bytes(&self) -> usize {
        self.queues.bytes() as usize
    }

    fn describe(&self) -> String {
        let p = &self.params;
        describe_codel(
            "fq_codel",
            &p.codel,
            &format!(
                "limit {} flows {} quantum {} memory_limit {} drop_batch {}",
                p.limit,
                self.queues.len(),
                p.quantum,
                p.memory_limit,
                p.drop_batch
            ),
        )
    }
}

/// The options only fq_codel has.
pub(crate) const OWN_OPTIONS: &[Opt] = &[
    (
        "drop_batch",
        "N",
        "64",
        "most packets dropped from the fattest flow on overflow",
    ),
    (
        "ecn | noecn",
        "",
        "ecn",
        "mark ECT packets instead of dropping them",
    ),
];

/// Reads fq_codel's options.
pub(crate) fn parse(words: &mut Words) -> Result<FqCodelParams, SpecError> {
    let mut p = FqCodelParams::default();
    while let Some(keyword) = words.next_keyword() {
        let queues = (
            &mut p.limit,
            &mut p.flows,
            &mut p.quantum,
            &mut p.memory_limit,
        );
        if flow_queues::option(words, keyword, queues)? {
            continue;
        }
        match keyword {
            "drop_batch" => {
                p.drop_batch = words.value(keyword, parse_count)?.clamp(1, 65_536) as u32
            }
            _ => {
                if !codel::option(words, keyword, &mut p.codel)? {
                    return Err(words.unknown(keyword));
                }
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::packet::build::ipv4_udp;

    /// A 120-byte IPv4 packet (100 bytes of payload) to `dst`, as in the
    /// ns-3 fq-codel test "credits and flows status".
    fn packet(dst: [u8; 4]) -> Packet {
        let mut data = ipv4_udp([10, 10, 1, 1], dst, 0, 0, 0, 120);
        data[9] = 7; // protocol 7, no ports
        let checksum = emu_core::packet::ipv4_header_checksum(&data[..20]);
        data[10..12].copy_from_slice(&checksum.to_be_bytes());
        Packet::new(data, 0)
    }

    /// The deficit sequence of ns-3's "credits and flows status" test
    /// (quantum 90, 120-byte packets), step by step.
    #[test]
    fn drr_credits_and_flow_lists_follow_the_reference_sequence() {
        let mut q = FqCodel::new(FqCodelParams {
            quantum: 90,
            ..FqCodelParams::default()
        });
        let mut out = Outcome::default();
        let first = || packet([10, 10, 1, 2]);
        let second = || packet([10, 10, 1, 10]);
        let f1 = q.flow_of(&first());
        let f2 = q.flow_of(&second());
        assert_ne!(f1, f2, "the two flows must hash apart");
        let state = |q: &FqCodel| (q.deficit(f1), q.list(f1), q.deficit(f2), q.list(f2));
        use FlowList::*;

        q.enqueue(first(), 0, &mut out);
        assert_eq!((q.deficit(f1), q.list(f1)), (90, New));
        q.dequeue(0, &mut out).unwrap();
        assert_eq!(q.deficit(f1), -30);

        q.enqueue(first(), 0, &mut out);
        q.enqueue(first(), 0, &mut out);
        assert_eq!(q.list(f1), New, "still in the new list");
        q.enqueue(second(), 0, &mut out);
        q.enqueue(second(), 0, &mut out);
        assert_eq!((q.deficit(f2), q.list(f2)), (90, New));

        let p = q.dequeue(0, &mut out).unwrap();
        assert_eq!(q.flow_of(&p), f2);
        assert_eq!(state(&q), (60, Old, -30, New));

        let p = q.dequeue(0, &mut out).unwrap();
        assert_eq!(q.flow_of(&p), f1);
        assert_eq!(state(&q), (-60, Old, 60, Old));

        let p = q.dequeue(0, &mut out).unwrap();
        assert_eq!(q.flow_of(&p), f2);
        assert_eq!(state(&q), (30, Old, -60, Old));

        let p = q.dequeue(0, &mut out).unwrap();
        assert_eq!(q.flow_of(&p), f1);
        assert_eq!(state(&q), (-90, Old, 30, Old));

        assert!(q.dequeue(0, &mut out).is_none());
        assert_eq!(state(&q), (90, Inactive, 30, Inactive));
        assert!(out.is_empty());
    }

    #[test]
    fn overflow_drops_from_the_head_of_the_fattest_flow() {
        let mut q = FqCodel::new(FqCodelParams {
            limit: 100,
            ..FqCodelParams::default()
        });
        let mut out = Outcome::default();
        let fat = || Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 1000), 0);
        let thin = || Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 3, 4, 0, 1000), 0);
        for _ in 0..90 {
            q.enqueue(fat(), 0, &mut out);
        }
        for _ in 0..10 {
            q.enqueue(thin(), 0, &mut out);
        }
        assert!(out.drops.is_empty());
        q.enqueue(thin(), 0, &mut out);
        // Half of the fat flow's 90 000 bytes: 45 packets, within the batch of 64.
        assert_eq!(out.drops.len(), 45);
        assert!(out
            .drops
            .iter()
            .all(|d| d.reason == DropReason::Head && d.packet.flow == fat().flow));
        assert_eq!(q.packets(), 56);
    }
}
