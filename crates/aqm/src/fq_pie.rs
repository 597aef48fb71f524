//! FQ-PIE (Linux net/sched/sch_fq_pie.c; Ramakrishnan et al., "FQ-PIE
//! Queue Discipline in the Linux Kernel", 2020): fq_codel's flow queues and
//! DRR++ scheduler ([`crate::flow_queues`]), with a PIE controller per flow
//! in place of CoDel. Every
//! `tupdate` all flows' probabilities are updated from their own backlogs;
//! arrivals are dropped (or, with ECN, CE-marked while the flow's p is at
//! most `ecn_prob`) by their flow's PIE.

use crate::ecn::set_ce;
use crate::flow_queues::FlowQueues;
use crate::grammar::{Opt, SpecError, Words};
use crate::pie::{PieParams, PieVars, UpdateTimer, MAX_PROB};
use crate::{flow_queues, pie};
use crate::{Outcome, Queue};
use emu_core::log::{DropReason, Mark};
use emu_core::size::parse_count;
use emu_core::{Nanos, Packet};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FqPieParams {
    /// PIE's parameters; `pie.limit` is the whole qdisc's packet limit.
    pub pie: PieParams,
    pub flows: usize,
    pub quantum: u32,
    pub memory_limit: u64,
    /// Mark instead of drop only while the flow's p is at most this (%).
    pub ecn_prob: u32,
}

impl Default for FqPieParams {
    fn default() -> Self {
        FqPieParams {
            pie: PieParams {
                limit: 10_240,
                ..PieParams::default()
            },
            flows: 1024,
            quantum: 1514,
            memory_limit: 32 << 20,
            ecn_prob: 10,
        }
    }
}

pub struct FqPie {
    params: FqPieParams,
    queues: FlowQueues<PieVars>,
    timer: UpdateTimer,
    rng: ChaCha8Rng,
}

impl FqPie {
    pub fn new(params: FqPieParams) -> FqPie {
        FqPie {
            queues: FlowQueues::new(params.flows, params.quantum, || PieVars::new(&params.pie)),
            rng: ChaCha8Rng::seed_from_u64(params.pie.seed),
            params,
            timer: UpdateTimer::default(),
        }
    }

    pub fn flow_of(&self, packet: &Packet) -> usize {
        self.queues.classify(packet)
    }

    pub fn probability(&self, flow: usize) -> f64 {
        self.queues.flow(flow).state.prob as f64 / MAX_PROB as f64
    }

    /// fq_pie_timer: one update of every flow per `tupdate`.
    fn run_timer(&mut self, now: Nanos) {
        for _ in 0..self.timer.due(now, self.params.pie.tupdate) {
            for flow in self.queues.flows_mut() {
                let backlog = flow.backlog();
                flow.state.calculate_probability(&self.params.pie, backlog);
            }
        }
    }
}

impl Queue for FqPie {
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        self.run_timer(now);
        let index = self.queues.classify(&packet);
        let len = packet.frame_len() as u64;
        if self.queues.packets() >= self.params.pie.limit
            || self.queues.bytes() + len > self.params.memory_limit
        {
            outcome.drop(packet, DropReason::Tail, now);
            return false;
        }
        let draw: u64 = self.rng.gen();
        let flow = self.queues.flow_mut(index);
        let backlog = flow.backlog();
        let vars = &mut flow.state;
        if vars.drop_early(&self.params.pie, backlog, len as u32, draw) {
            let may_mark =
                self.params.pie.ecn && vars.prob <= MAX_PROB / 100 * self.params.ecn_prob as u64;
            if !(may_mark && set_ce(&mut packet)) {
                vars.accu_prob = 0;
                outcome.drop(packet, DropReason::Aqm, now);
                return false;
            }
            outcome.mark(&packet, Mark::Ce, now);
        }
        packet.enqueued = now;
        self.queues.push(index, packet);
        true
    }

    fn dequeue(&mut self, now: Nanos, _outcome: &mut Outcome) -> Option<Packet> {
        self.run_timer(now);
        let pie = &self.params.pie;
        let tick = now >> 6;
        self.queues.dequeue(|vars, packets| {
            let packet = packets.pop()?;
            vars.process_dequeue(pie, &packet, tick, packets.flow_backlog());
            Some(packet)
        })
    }

    fn packets(&self) -> usize {
        self.queues.packets() as usize
    }

    fn bytes(&self) -> usize {
        self.queues.bytes() as usize
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
        format!(
            "fq_pie limit {} flows {} quantum {} memory_limit {} target {} tupdate {} alpha {} beta {} max_burst {} ecn_prob {}{}{}{}",
            p.pie.limit,
            self.queues.len(),
            p.quantum,
            p.memory_limit,
            ms(p.pie.target),
            ms(p.pie.tupdate),
            p.pie.alpha,
            p.pie.beta,
            ms(p.pie.max_burst),
            p.ecn_prob,
            if p.pie.ecn { " ecn" } else { " noecn" },
            if p.pie.bytemode { " bytemode" } else { "" },
            if p.pie.dq_rate_estimator { " dq_rate_estimator" } else { "" },
        )
    }
}

/// The options only fq_pie has.
pub(crate) const OWN_OPTIONS: &[Opt] = &[(
    "ecn_prob",
    "PERCENT",
    "10",
    "mark rather than drop while p is at most this",
)];

/// Reads fq_pie's options.
pub(crate) fn parse(words: &mut Words) -> Result<FqPieParams, SpecError> {
    let mut p = FqPieParams::default();
    while let Some(keyword) = words.next_keyword() {
        let queues = (
            &mut p.pie.limit,
            &mut p.flows,
            &mut p.quantum,
            &mut p.memory_limit,
        );
        if flow_queues::option(words, keyword, queues)? {
            continue;
        }
        match keyword {
            "ecn_prob" => p.ecn_prob = words.value(keyword, parse_count)?.min(100) as u32,
            _ => {
                if !pie::option(words, keyword, &mut p.pie)? {
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
    use emu_core::time::NS_PER_MS;

    fn packet(sport: u16, tos: u8) -> Packet {
        Packet::new(
            ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], sport, 2, tos, 1000),
            0,
        )
    }

    /// A standing queue in one flow raises only that flow's probability;
    /// a flow that keeps no queue is left alone.
    #[test]
    fn each_flow_has_its_own_pie() {
        let mut q = FqPie::new(FqPieParams::default());
        let mut out = Outcome::default();
        let (fat, thin) = (packet(1, 0), packet(2, 0));
        let (f_fat, f_thin) = (q.flow_of(&fat), q.flow_of(&thin));
        assert_ne!(f_fat, f_thin);
        // 1000-byte packets: the fat flow gets 2 per ms and sends 1 per ms;
        // the thin flow sends each packet as it arrives.
        for ms in 0..3000u64 {
            let t = ms * NS_PER_MS;
            q.enqueue(fat.clone(), t, &mut out);
            q.enqueue(fat.clone(), t, &mut out);
            q.enqueue(thin.clone(), t, &mut out);
            q.dequeue(t, &mut out);
            q.dequeue(t, &mut out);
        }
        assert!(
            q.probability(f_fat) > 0.01,
            "fat flow p = {}",
            q.probability(f_fat)
        );
        assert_eq!(q.probability(f_thin), 0.0);
        assert!(out.drops.iter().all(|d| d.packet.flow == fat.flow));
        assert!(!out.drops.is_empty());
    }

    #[test]
    fn drr_alternates_between_backlogged_flows() {
        let mut q = FqPie::new(FqPieParams::default());
        let mut out = Outcome::default();
        for _ in 0..10 {
            q.enqueue(packet(1, 0), 0, &mut out);
            q.enqueue(packet(2, 0), 0, &mut out);
        }
        let order: Vec<u16> = (0..6)
            .map(|_| {
                let p = q.dequeue(0, &mut out).unwrap();
                u16::from_be_bytes([p.data[20], p.data[21]])
            })
            .collect();
        // quantum 1514: each flow sends two 1000-byte packets per round.
        assert_eq!(order, vec![1, 1, 2, 2, 1, 1]);
    }

    #[test]
    fn the_limit_tail_drops() {
        let mut q = FqPie::new(FqPieParams {
            pie: PieParams {
                limit: 5,
                ..FqPieParams::default().pie
            },
            ..FqPieParams::default()
        });
        let mut out = Outcome::default();
        for port in 0..6 {
            q.enqueue(packet(port, 0), 0, &mut out);
        }
        assert_eq!(out.drops.len(), 1);
        assert_eq!(out.drops[0].reason, DropReason::Tail);
    }
}
