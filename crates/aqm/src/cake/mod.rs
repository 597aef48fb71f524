//! Cake, Common Applications Kept Enhanced (Linux net/sched/sch_cake.c;
//! Høiland-Jørgensen, Täht and Morton, "Piece of CAKE", LANMAN 2018), with
//! the SCE marking of the SCE project's cake.
//!
//! Layers, outermost first:
//! - a deficit-mode shaper (`bandwidth`), charging each packet its size
//!   after link-layer compensation ([`overhead`]);
//! - priority tins chosen by DSCP ([`tins`]), each with a bandwidth share
//!   it may exceed only when others are idle;
//! - in each tin 1024 flow queues, filled by an 8-way set-associative hash
//!   of flows and hosts (isolation modes) and served by DRR++, with
//!   triple-isolate's per-host fairness scaling each flow's quantum by the
//!   number of bulk flows its hosts have;
//! - COBALT on every flow queue ([`cobalt`]);
//! - overflow drops from the head of the longest queue across all tins.
//!
//! Sizes are frame lengths as [`emu_core::size`] defines them (IP bytes,
//! plus the 14-byte MAC header with `link --l2 ethernet`, exactly what the
//! kernel's cake is given on an Ethernet device), and the MTU time is that
//! of [`CakeParams::frame_mtu`].
//!
//! Differences from the kernel, all forced by emu being userspace: there
//! is no skb truesize, so memory limits count frame bytes; packets arrive already
//! segmented, so `split-gso` has no work to do; there is no conntrack, so
//! `nat` is refused; `autorate-ingress` is not implemented.

pub mod ack_filter;
pub mod cobalt;
pub(crate) mod options;
pub mod overhead;
mod rotations;
pub mod tins;

use crate::{Outcome, Queue};
use cobalt::CobaltVars;
use emu_core::log::{DropReason, Mark};
use emu_core::packet::host_hashes;
use emu_core::{Ecn, Nanos, Packet};
use overhead::Overhead;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rotations::{List, Rotations};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use tins::{TinConfig, TinMode};

pub const QUEUES: usize = 1024;
const WAYS: usize = 8;

/// Isolation modes (CAKE_FLOW_*): which of source host, destination host
/// and 5-tuple the hash keys on.
pub mod flow_mode {
    pub const FLOWBLIND: u8 = 0;
    pub const SRC_IP: u8 = 1;
    pub const DST_IP: u8 = 2;
    pub const HOSTS: u8 = 3;
    pub const FLOWS: u8 = 4;
    pub const DUAL_SRC: u8 = 5;
    pub const DUAL_DST: u8 = 6;
    pub const TRIPLE: u8 = 7;

    pub const NAMES: [(&str, u8); 8] = [
        ("flowblind", FLOWBLIND),
        ("srchost", SRC_IP),
        ("dsthost", DST_IP),
        ("hosts", HOSTS),
        ("flows", FLOWS),
        ("dual-srchost", DUAL_SRC),
        ("dual-dsthost", DUAL_DST),
        ("triple-isolate", TRIPLE),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AckFilter {
    Off,
    On,
    Aggressive,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CakeParams {
    /// Shaper rate in bytes per second; 0 = unlimited.
    pub bandwidth: u64,
    pub tin_mode: TinMode,
    pub flow_mode: u8,
    pub rtt: Nanos,
    pub target: Nanos,
    pub overhead: Overhead,
    pub memlimit: Option<u64>,
    pub ingress: bool,
    pub ack_filter: AckFilter,
    pub wash: bool,
    /// SCE ramp divisor: 0 off, 1 `sce`, N `sce-thresh N`, 65535 `sce-single`.
    pub sce: u32,
    /// The device MTU in IP bytes (`ip link`'s); see [`CakeParams::frame_mtu`].
    pub mtu: u32,
    /// Link-layer header bytes of the device (14 with `link --l2
    /// ethernet`), set by the shell from its link layer, not by an option.
    #[serde(default)]
    pub link_header: u32,
    /// Packets the kernel's default buffer limit is scaled from.
    pub limit: u64,
    pub seed: u64,
}

impl Default for CakeParams {
    fn default() -> Self {
        CakeParams {
            bandwidth: 0,
            tin_mode: TinMode::Diffserv3,
            flow_mode: flow_mode::TRIPLE,
            rtt: 100_000_000,
            target: 5_000_000,
            overhead: Overhead::default(),
            memlimit: None,
            ingress: false,
            ack_filter: AckFilter::Off,
            wash: false,
            sce: 0,
            mtu: 1500,
            link_header: 0,
            limit: 10_240,
            seed: 1,
        }
    }
}

impl CakeParams {
    /// The MTU as the kernel's cake uses it (`psched_mtu()`: the device MTU
    /// plus its hard header, 1514 on Ethernet): the size whose
    /// serialization time is the MTU time, and the unit of the buffer limit.
    pub fn frame_mtu(&self) -> u32 {
        self.mtu + self.link_header
    }
}

fn dual_src(mode: u8) -> bool {
    mode & flow_mode::DUAL_SRC == flow_mode::DUAL_SRC
}

fn dual_dst(mode: u8) -> bool {
    mode & flow_mode::DUAL_DST == flow_mode::DUAL_DST
}

/// 65535 / n, the per-host quantum divisor (quantum_div).
fn quantum_div(host_load: u32) -> u64 {
    if host_load == 0 {
        65_535
    } else {
        65_535 / host_load as u64
    }
}

/// A flow's place in its tin's rotations (CAKE_SET_*).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Set {
    #[default]
    None,
    Sparse,
    /// Empty, counted as sparse, but in the bulk rotation.
    SparseWait,
    Bulk,
    Decaying,
}

struct Queued {
    packet: Packet,
    /// Bytes the shaper charges (after overhead compensation).
    adjusted: u32,
}

#[derive(Default)]
struct Flow {
    queue: VecDeque<Queued>,
    deficit: i64,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
}

#[derive(Default, Clone, Copy)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u32,
    dst_bulk: u32,
}

struct Tin {
    config: TinConfig,
    flows: Vec<Flow>,
    backlogs: Vec<u64>,
    tags: Vec<u32>,
    hosts: Vec<Host>,
    rotations: Rotations,
    bulk_flow_count: u32,
    sparse_flow_count: u32,
    decaying_flow_count: u32,
    unresponsive_flow_count: u32,
    time_next_packet: Nanos,
    deficit: i64,
    backlog: u64,
}

impl Tin {
    fn new(config: TinConfig) -> Tin {
        Tin {
            config,
            flows: (0..QUEUES).map(|_| Flow::default()).collect(),
            backlogs: vec![0; QUEUES],
            tags: vec![0; QUEUES],
            hosts: vec![Host::default(); QUEUES],
            rotations: Rotations::new(QUEUES),
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            time_next_packet: 0,
            deficit: 0,
            backlog: 0,
        }
    }

    fn active(&self) -> bool {
        self.sparse_flow_count + self.bulk_flow_count > 0
    }

    fn host_load(&self, mode: u8, flow: usize) -> u32 {
        let f = &self.flows[flow];
        let mut load = 1;
        if dual_src(mode) {
            load = load.max(self.hosts[f.srchost as usize].src_bulk);
        }
        if dual_dst(mode) {
            load = load.max(self.hosts[f.dsthost as usize].dst_bulk);
        }
        load
    }

    fn add_bulk(&mut self, mode: u8, flow: usize, delta: i32) {
        let (src, dst) = (
            self.flows[flow].srchost as usize,
            self.flows[flow].dsthost as usize,
        );
        if dual_src(mode) {
            self.hosts[src].src_bulk = self.hosts[src].src_bulk.saturating_add_signed(delta);
        }
        if dual_dst(mode) {
            self.hosts[dst].dst_bulk = self.hosts[dst].dst_bulk.saturating_add_signed(delta);
        }
    }

    /// The host slot for a host hash: its tagged way, or a free one, or
    /// the first way (cake_hash's allocate_src / allocate_dst).
    fn host_slot(&mut self, hash: u32, source: bool) -> usize {
        let index = hash as usize % QUEUES;
        let (inner, outer) = (index % WAYS, index - index % WAYS);
        let tag = |h: &Host| if source { h.src_tag } else { h.dst_tag };
        let bulk = |h: &Host| if source { h.src_bulk } else { h.dst_bulk };
        let mut k = inner;
        for _ in 0..WAYS {
            if tag(&self.hosts[outer + k]) == hash {
                return outer + k;
            }
            k = (k + 1) % WAYS;
        }
        for _ in 0..WAYS {
            if bulk(&self.hosts[outer + k]) == 0 {
                break;
            }
            k = (k + 1) % WAYS;
        }
        let host = &mut self.hosts[outer + k];
        if source {
            host.src_tag = hash;
        } else {
            host.dst_tag = hash;
        }
        outer + k
    }

    /// cake_hash: the flow queue of a packet. A flow keeps the way it was
    /// given while it has state; a new flow takes a free way of its set,
    /// and only when all eight are busy does it share (a collision).
    fn classify(&mut self, mode: u8, packet: &Packet) -> usize {
        if mode == flow_mode::FLOWBLIND {
            return 0;
        }
        let (src_hash, dst_hash) = if mode & flow_mode::HOSTS != 0 {
            host_hashes(&packet.data)
        } else {
            (0, 0)
        };
        let mut flow_hash = 0;
        if mode & flow_mode::FLOWS != 0 {
            flow_hash = packet.flow;
        } else {
            if mode & flow_mode::SRC_IP != 0 {
                flow_hash ^= src_hash;
            }
            if mode & flow_mode::DST_IP != 0 {
                flow_hash ^= dst_hash;
            }
        }
        let reduced = flow_hash as usize % QUEUES;
        if self.tags[reduced] == flow_hash && self.flows[reduced].set != Set::None {
            return reduced;
        }
        let (inner, outer) = (reduced % WAYS, reduced - reduced % WAYS);
        let mut allocate = false;
        let mut k = inner;
        let mut found = false;
        for _ in 0..WAYS {
            if self.tags[outer + k] == flow_hash {
                allocate = self.flows[outer + k].set == Set::None;
                found = true;
                break;
            }
            k = (k + 1) % WAYS;
        }
        if !found {
            for _ in 0..WAYS {
                if self.flows[outer + k].set == Set::None {
                    allocate = true;
                    found = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if !found {
            // Every way is busy: share the first, moving its host counts.
            if self.flows[outer + k].set == Set::Bulk {
                self.add_bulk(mode, outer + k, -1);
            }
            allocate = true;
        }
        let index = outer + k;
        self.tags[index] = flow_hash;
        if allocate && dual_src(mode) {
            let slot = self.host_slot(src_hash, true);
            if self.flows[index].set == Set::Bulk {
                self.hosts[slot].src_bulk += 1;
            }
            self.flows[index].srchost = slot as u16;
        }
        if allocate && dual_dst(mode) {
            let slot = self.host_slot(dst_hash, false);
            if self.flows[index].set == Set::Bulk {
                self.hosts[slot].dst_bulk += 1;
            }
            self.flows[index].dsthost = slot as u16;
        }
        index
    }
}

pub struct Cake {
    pub params: CakeParams,
    tins: Vec<Tin>,
    time_next_packet: Nanos,
    failsafe_next_packet: Nanos,
    rate_ns: u64,
    rate_shift: u32,
    buffer_limit: u64,
    cur_tin: usize,
    packets: usize,
    bytes: u64,
    rng: ChaCha8Rng,
}

impl Cake {
    pub fn new(params: CakeParams) -> Cake {
        let configs = tins::configure(
            params.tin_mode,
            params.bandwidth,
            params.frame_mtu(),
            params.target,
            params.rtt,
            params.sce,
        );
        let (rate_ns, rate_shift) = (configs[0].rate_ns, configs[0].rate_shift);
        // cake_reconfigure: memlimit, else 4 BDPs (at least 4 MiB) when
        // shaped, capped by limit · MTU unless memlimit says more.
        let configured = params.memlimit.unwrap_or(0);
        let mut buffer_limit = if let Some(limit) = params.memlimit {
            limit
        } else if params.bandwidth > 0 {
            (params.bandwidth as u128 * (params.rtt / 1000) as u128 / 250_000).max(4 << 20) as u64
        } else {
            u64::MAX
        };
        buffer_limit = buffer_limit.min((params.limit * params.frame_mtu() as u64).max(configured));
        Cake {
            tins: configs.into_iter().map(Tin::new).collect(),
            rng: ChaCha8Rng::seed_from_u64(params.seed),
            params,
            time_next_packet: 0,
            failsafe_next_packet: 0,
            rate_ns,
            rate_shift,
            buffer_limit,
            cur_tin: 0,
            packets: 0,
            bytes: 0,
        }
    }

    pub fn buffer_limit(&self) -> u64 {
        self.buffer_limit
    }

    /// The flow queue `packet` would join, as (tin, queue).
    pub fn queue_of(&mut self, packet: &Packet) -> (usize, usize) {
        let tin = self.tin_of(packet);
        (tin, self.tins[tin].classify(self.params.flow_mode, packet))
    }

    pub fn tin_count(&self) -> usize {
        self.tins.len()
    }

    /// The BLUE drop probability of a flow queue, in 1/2^32.
    pub fn blue_probability(&self, tin: usize, queue: usize) -> u32 {
        self.tins[tin].flows[queue].cvars.p_drop
    }

    /// cake_select_tin: by DSCP (read before any washing).
    fn tin_of(&self, packet: &Packet) -> usize {
        if self.params.tin_mode == TinMode::Besteffort {
            return 0;
        }
        let dscp = packet.dscp().unwrap_or(0) as usize;
        let tin = self.params.tin_mode.index()[dscp & 63] as usize;
        if tin < self.tins.len() {
            tin
        } else {
            0
        }
    }

    /// cake_advance_shaper: charge a packet to its tin and to the global
    /// shaper. The failsafe (1.5× slower) only counts packets sent.
    fn advance_shaper(&mut self, tin: usize, adjusted: u32, now: Nanos, dropped: bool) -> u32 {
        if self.rate_ns != 0 {
            let b = &mut self.tins[tin];
            let tin_dur = (adjusted as u64 * b.config.rate_ns) >> b.config.rate_shift;
            let global_dur = (adjusted as u64 * self.rate_ns) >> self.rate_shift;
            if b.time_next_packet < now {
                b.time_next_packet += tin_dur;
            } else if b.time_next_packet < now + tin_dur {
                b.time_next_packet = now + tin_dur;
            }
            self.time_next_packet += global_dur;
            if !dropped {
                self.failsafe_next_packet += global_dur + global_dur / 2;
            }
        }
        adjusted
    }

    /// Takes the head of a flow queue, keeping every count.
    fn pop(&mut self, tin: usize, flow: usize) -> Option<Queued> {
        let b = &mut self.tins[tin];
        let queued = b.flows[flow].queue.pop_front()?;
        let len = queued.packet.frame_len() as u64;
        b.backlogs[flow] -= len;
        b.backlog -= len;
        self.bytes -= len;
        self.packets -= 1;
        Some(queued)
    }

    /// cake_drop: on overflow, drop from the head of the longest flow
    /// queue of any tin, and tell its BLUE.
    fn drop_from_longest(&mut self, now: Nanos, outcome: &mut Outcome) {
        let Some((tin, flow)) = (0..self.tins.len())
            .flat_map(|t| (0..QUEUES).map(move |f| (t, f)))
            .max_by_key(|&(t, f)| self.tins[t].backlogs[f])
        else {
            return;
        };
        let Some(queued) = self.pop(tin, flow) else {
            return;
        };
        let b = &mut self.tins[tin];
        if b.flows[flow].cvars.queue_full(&b.config.cobalt, now) {
            b.unresponsive_flow_count += 1;
        }
        if self.params.ingress {
            self.advance_shaper(tin, queued.adjusted, now, true);
        }
        outcome.drop(queued.packet, DropReason::Head, now);
    }

    /// Picks the tin to serve (cake_dequeue's class choice); None if there
    /// is nothing to send.
    fn choose_tin(&mut self, now: Nanos) -> Option<usize> {
        let n = self.tins.len();
        if self.rate_ns == 0 {
            // Unshaped: DRR among the tins by their quanta.
            let (mut wrapped, mut empty) = (false, true);
            loop {
                let b = &mut self.tins[self.cur_tin];
                if b.deficit >= 0 && b.active() {
                    return Some(self.cur_tin);
                }
                if b.deficit <= 0 {
                    b.deficit += b.config.tin_quantum as i64;
                }
                if b.active() {
                    empty = false;
                }
                self.cur_tin += 1;
                if self.cur_tin >= n {
                    self.cur_tin = 0;
                    if wrapped {
                        if empty {
                            return None;
                        }
                    } else {
                        wrapped = true;
                    }
                }
            }
        }
        // Shaped: the highest tin within its share, else the one whose
        // share frees up first.
        let mut best: Option<(i64, usize)> = None;
        for (index, b) in self.tins.iter().enumerate() {
            if b.active() {
                let time_to_packet = b.time_next_packet as i64 - now as i64;
                if time_to_packet <= 0 || best.is_none_or(|(t, _)| time_to_packet <= t) {
                    best = Some((time_to_packet, index));
                }
            }
        }
        let (_, tin) = best?;
        self.cur_tin = tin;
        Some(tin)
    }

    /// Records COBALT's marks on a packet that was not CE before.
    fn record_marks(
        packet: &Packet,
        was_ce: bool,
        verdict: cobalt::Verdict,
        now: Nanos,
        outcome: &mut Outcome,
    ) {
        if verdict.ce_marked && !was_ce {
            outcome.mark(packet, Mark::Ce, now);
        }
        if verdict.sce_marked {
            outcome.mark(packet, Mark::Ect1, now);
        }
    }
}

impl Queue for Cake {
    // Long: the kernel's cake_enqueue step for step (classify, wash, ack filter, flow and host
    // bookkeeping, overflow), to be read beside it.
    fn enqueue(&mut self, mut packet: Packet, now: Nanos, outcome: &mut Outcome) -> bool {
        let tin = self.tin_of(&packet);
        if self.params.wash && packet.dscp().is_some_and(|d| d != 0) {
            emu_core::packet::set_dscp(&mut packet.data, 0);
        }
        let mode = self.params.flow_mode;
        let flow = self.tins[tin].classify(mode, &packet);

        // Keep the shaper from banking credit over an idle period.
        let idle = self.packets == 0;
        let b = &mut self.tins[tin];
        if b.backlog == 0 {
            b.time_next_packet = b.time_next_packet.max(now);
            if idle && self.time_next_packet < now {
                self.failsafe_next_packet = now;
                self.time_next_packet = now;
            }
        }

        let len = packet.frame_len() as u64;
        let adjusted = self
            .params
            .overhead
            .adjusted(len as u32, packet.link_header as u32);
        packet.enqueued = now;
        b.flows[flow].queue.push_back(Queued { packet, adjusted });
        b.backlogs[flow] += len;
        b.backlog += len;
        self.bytes += len;
        self.packets += 1;

        if self.params.ack_filter != AckFilter::Off {
            let aggressive = self.params.ack_filter == AckFilter::Aggressive;
            let queue = &b.flows[flow].queue;
            if let Some(index) = ack_filter::redundant_ack(
                queue.iter().map(|q| q.packet.data.as_slice()),
                aggressive,
            ) {
                let ack = b.flows[flow]
                    .queue
                    .remove(index)
                    .expect("the filter names a queued packet");
                let ack_len = ack.packet.frame_len() as u64;
                b.backlogs[flow] -= ack_len;
                b.backlog -= ack_len;
                self.bytes -= ack_len;
                self.packets -= 1;
                if self.params.ingress {
                    self.advance_shaper(tin, ack.adjusted, now, true);
                }
                outcome.drop(ack.packet, DropReason::AckFilter, now);
            }
        }

        // The flow joins the new-flow rotation if it had no state.
        let b = &mut self.tins[tin];
        match b.flows[flow].set {
            Set::None | Set::Decaying => {
                if b.flows[flow].set == Set::Decaying {
                    b.decaying_flow_count -= 1;
                }
                // A decaying flow may sit in the decaying or (after a
                // deficit refill) the old rotation: it moves from either.
                b.rotations.move_to_back(flow, List::New);
                b.flows[flow].set = Set::Sparse;
                b.sparse_flow_count += 1;
                let load = b.host_load(mode, flow);
                b.flows[flow].deficit =
                    ((b.config.flow_quantum as u64 * quantum_div(load)) >> 16) as i64;
            }
            Set::SparseWait => {
                b.flows[flow].set = Set::Bulk;
                b.sparse_flow_count -= 1;
                b.bulk_flow_count += 1;
                b.add_bulk(mode, flow, 1);
            }
            Set::Sparse | Set::Bulk => {}
        }

        while self.bytes > self.buffer_limit {
            self.drop_from_longest(now, outcome);
        }
        true
    }

    // Long: the kernel's cake_dequeue with its gotos (begin, retry) as labelled loops in one body,
    // step for step, so the two read side by side.
    fn dequeue(&mut self, now: Nanos, outcome: &mut Outcome) -> Option<Packet> {
        let mode = self.params.flow_mode;
        // Only the first flow looked at in a call may come from the
        // decaying rotation; this holds across restarts (goto begin).
        let mut first_flow = true;
        'begin: loop {
            if self.packets == 0 {
                return None;
            }
            if self.time_next_packet > now && self.failsafe_next_packet > now {
                return None; // the shaper holds the next packet back
            }
            let tin = self.choose_tin(now)?;
            'retry: loop {
                let b = &mut self.tins[tin];
                let r = &b.rotations;
                let list = if first_flow && !r.is_empty(List::Decaying) {
                    List::Decaying
                } else if !r.is_empty(List::New) {
                    List::New
                } else if !r.is_empty(List::Old) {
                    List::Old
                } else if !r.is_empty(List::Decaying) {
                    List::Decaying
                } else {
                    continue 'begin;
                };
                let flow = r.front(list).expect("the list is not empty");
                first_flow = false;

                if b.flows[flow].deficit <= 0 {
                    // Out of credit: now a bulk flow, to the old rotation
                    // with a quantum scaled down by its hosts' bulk flows.
                    if b.flows[flow].set == Set::Sparse {
                        if !b.flows[flow].queue.is_empty() {
                            b.sparse_flow_count -= 1;
                            b.bulk_flow_count += 1;
                            b.add_bulk(mode, flow, 1);
                            b.flows[flow].set = Set::Bulk;
                        } else {
                            b.flows[flow].set = Set::SparseWait;
                        }
                    }
                    let load = b.host_load(mode, flow);
                    let dither = self.rng.gen::<u16>() as u64;
                    let b = &mut self.tins[tin];
                    b.flows[flow].deficit +=
                        ((b.config.flow_quantum as u64 * quantum_div(load) + dither) >> 16) as i64;
                    b.rotations.move_to_back(flow, List::Old);
                    continue 'retry;
                }

                loop {
                    let Some(mut queued) = self.pop(tin, flow) else {
                        // Empty: keep it in the decaying rotation until
                        // COBALT's state has relaxed, else forget it.
                        let b = &mut self.tins[tin];
                        let f = &mut b.flows[flow];
                        if f.cvars.queue_empty(&b.config.cobalt, now) {
                            b.unresponsive_flow_count = b.unresponsive_flow_count.saturating_sub(1);
                        }
                        let f = &b.flows[flow];
                        if f.cvars.p_drop != 0 || f.cvars.count != 0 || now < f.cvars.drop_next {
                            match f.set {
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.add_bulk(mode, flow, -1);
                                    b.decaying_flow_count += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    b.sparse_flow_count -= 1;
                                    b.decaying_flow_count += 1;
                                }
                                _ => {}
                            }
                            b.flows[flow].set = Set::Decaying;
                            b.rotations.move_to_back(flow, List::Decaying);
                        } else {
                            match f.set {
                                Set::Sparse | Set::SparseWait => b.sparse_flow_count -= 1,
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.add_bulk(mode, flow, -1);
                                }
                                _ => b.decaying_flow_count -= 1,
                            }
                            b.flows[flow].set = Set::None;
                            b.rotations.remove(flow);
                        }
                        continue 'begin;
                    };

                    let b = &mut self.tins[tin];
                    let bulk = if self.params.ingress {
                        b.bulk_flow_count
                    } else {
                        0
                    };
                    let was_ce = queued.packet.ecn() == Some(Ecn::Ce);
                    let rng = &mut self.rng;
                    let verdict = b.flows[flow].cvars.should_drop(
                        &b.config.cobalt,
                        now,
                        &mut queued.packet,
                        bulk,
                        || rng.gen::<u32>(),
                    );
                    Cake::record_marks(&queued.packet, was_ce, verdict, now, outcome);
                    // The last packet of a queue is never dropped.
                    if !verdict.drop || b.flows[flow].queue.is_empty() {
                        let len = self.advance_shaper(tin, queued.adjusted, now, false) as i64;
                        let b = &mut self.tins[tin];
                        b.flows[flow].deficit -= len;
                        b.deficit -= len;
                        return Some(queued.packet);
                    }
                    if self.params.ingress {
                        let len = self.advance_shaper(tin, queued.adjusted, now, true) as i64;
                        let b = &mut self.tins[tin];
                        b.flows[flow].deficit -= len;
                        b.deficit -= len;
                        outcome.drop(queued.packet, DropReason::Aqm, now);
                        continue 'retry;
                    }
                    outcome.drop(queued.packet, DropReason::Aqm, now);
                }
            }
        }
    }

    fn packets(&self) -> usize {
        self.packets
    }

    fn bytes(&self) -> usize {
        self.bytes as usize
    }

    fn next_ready(&self) -> Option<Nanos> {
        (self.rate_ns != 0 && self.packets > 0)
            .then(|| self.time_next_packet.min(self.failsafe_next_packet))
    }

    fn describe(&self) -> String {
        let p = &self.params;
        let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
        let bandwidth = emu_core::rate::Rate::from_bits_per_sec(p.bandwidth * 8)
            .map_or("unlimited".to_string(), |r| r.to_string());
        let isolation = flow_mode::NAMES
            .iter()
            .find(|(_, m)| *m == p.flow_mode)
            .map_or("?", |(n, _)| n);
        let mut text = format!(
            "cake bandwidth {bandwidth} {} {isolation} rtt {} target {}",
            p.tin_mode.name(),
            ms(p.rtt),
            ms(p.target),
        );
        text += &p.overhead.describe();
        text += &format!(" memlimit {}", self.buffer_limit);
        for (on, word) in [
            (p.ingress, " ingress"),
            (p.wash, " wash"),
            (p.ack_filter == AckFilter::On, " ack-filter"),
            (
                p.ack_filter == AckFilter::Aggressive,
                " ack-filter-aggressive",
            ),
        ] {
            if on {
                text += word;
            }
        }
        text += &match p.sce {
            0 => String::new(),
            1 => " sce".to_string(),
            d if d > 1024 => " sce-single".to_string(),
            d => format!(" sce-thresh {d}"),
        };
        text
    }
}

#[cfg(test)]
mod tests;
