//! One pass over a bottleneck's log of an experiment's run: per named
//! flow, what left the bottleneck per interval, the time its packets took
//! through it and the marks they got; per queue, the queue delay and the
//! drops and marks per interval; and the moments the path changed (a
//! rate step, a queue replaced), for the charts' time axis.
//!
//! A dual queue (a discipline named `dualpi2...` or `twin_codel_af...`)
//! is shown as its two queues: the log has one queue, so each packet is
//! put in L or C by its ECN codepoint when it arrived (ECT(1) or CE is L,
//! as DualPI2 classifies). Memory is bounded by the packets inside the
//! bottleneck and the number of intervals, not by the log's length.

use crate::experiments::run_flows::{Role, RunFlows};
use crate::measures::in_flight::InFlight;
use emu_core::flow::FlowTable;
use emu_core::log::{Change, Direction, Event, LogError, LogReader, Record};
use emu_core::Nanos;
use std::collections::HashMap;
use std::path::Path;

/// ECN codepoints (the low two bits of the traffic class).
const ECT1: u8 = 1;
const CE: u8 = 3;
const MARK_CE: u8 = 16;
const MARK_ECT1: u8 = 17;

/// Whether a queue discipline has an L and a C queue.
pub fn is_dual(discipline: &str) -> bool {
    discipline.starts_with("dualpi2")
        || discipline.starts_with("twin_codel_af")
        || discipline.starts_with("dualq_")
}

/// Per-interval values, grown as time goes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bins(pub Vec<f64>);

impl Bins {
    fn add(&mut self, bin: usize, value: f64) {
        if self.0.len() <= bin {
            self.0.resize(bin + 1, 0.0);
        }
        self.0[bin] += value;
    }

    fn max(&mut self, bin: usize, value: f64) {
        if self.0.len() <= bin {
            self.0.resize(bin + 1, 0.0);
        }
        self.0[bin] = self.0[bin].max(value);
    }

    fn get(&self, bin: usize) -> f64 {
        self.0.get(bin).copied().unwrap_or(0.0)
    }
}

/// A named flow's packets at the bottleneck (its data direction).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowBins {
    /// The direction its data crossed the bottleneck in (`uplink`).
    pub direction: Option<String>,
    pub departed_bytes: Bins,
    /// Sum of arrival-to-departure times (ms) and their count, per bin.
    pub transit_ms: Bins,
    pub transits: Bins,
    pub ce: Bins,
    pub ect1: Bins,
}

/// One queue of one direction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueBins {
    /// `uplink`, or `uplink L` / `uplink C` for a dual queue.
    pub name: String,
    pub sojourn_ms: Bins,
    pub departures: Bins,
    pub departed_bytes: Bins,
    pub sojourn_max_ms: Bins,
    pub drops: Bins,
    pub ce: Bins,
    pub ect1: Bins,
}

/// What the page draws of one bottleneck in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct BottleneckSeries {
    pub bin_s: f64,
    pub bins: usize,
    /// By the index of the flow in [`RunFlows::flows`].
    pub flows: Vec<FlowBins>,
    pub queues: Vec<QueueBins>,
    /// The rate steps and queue replacements after the flows started, in
    /// time order, once each (both directions log the same change).
    pub changes: Vec<PathChange>,
}

/// A moment the path changed, in s from when the flows started, and what
/// it changed to (`rate 40 Mbit/s`, `queue step 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct PathChange {
    pub time_s: f64,
    pub what: String,
}

/// What a change record says, for the changes a chart marks: the rate
/// and the queue (a delay that walks or jitters would mark every instant).
fn change_text(record: &Record) -> Option<String> {
    match Change::from_u8(record.detail)? {
        Change::Rate => Some(format!("rate {} Mbit/s", record.sojourn as f64 / 1e6)),
        Change::Queue => Some(format!("queue step {}", record.sojourn)),
        _ => None,
    }
}

/// Adds the change `record` makes after `origin`, unless the same change
/// is there already at the same instant (the other direction's).
fn add_change(changes: &mut Vec<PathChange>, record: &Record, origin: Nanos) {
    let Some(what) = change_text(record).filter(|_| record.time > origin) else {
        return;
    };
    let time_s = (record.time - origin) as f64 / 1e9;
    if !changes
        .iter()
        .any(|c| c.what == what && (c.time_s - time_s).abs() < 1e-3)
    {
        changes.push(PathChange { time_s, what });
    }
}

impl BottleneckSeries {
    /// The bins' start times in s.
    pub fn times(&self) -> Vec<f64> {
        (0..self.bins).map(|b| b as f64 * self.bin_s).collect()
    }

    /// Bytes per bin as Mbit/s.
    pub fn rate_mbps(&self, bytes: &Bins) -> Vec<f64> {
        (0..self.bins)
            .map(|b| bytes.get(b) * 8.0 / self.bin_s / 1e6)
            .collect()
    }

    /// Per-bin mean of `sum` over `count` (NaN where there is none).
    pub fn mean(&self, sum: &Bins, count: &Bins) -> Vec<f64> {
        (0..self.bins)
            .map(|b| match count.get(b) {
                n if n > 0.0 => sum.get(b) / n,
                _ => f64::NAN,
            })
            .collect()
    }

    /// What left the bottleneck in `direction` (every queue of it, every
    /// flow) over the named flows' active bins (from the earliest bin
    /// with a departure of theirs to the latest) and over every bin, in
    /// Mbit/s: `(active, whole)`. None if no named flow went that way.
    pub fn throughput_mbps(&self, direction: &str) -> Option<(f64, f64)> {
        let first = |f: &FlowBins| f.departed_bytes.0.iter().position(|&b| b > 0.0);
        let last = |f: &FlowBins| f.departed_bytes.0.iter().rposition(|&b| b > 0.0);
        let mine: Vec<&FlowBins> = self
            .flows
            .iter()
            .filter(|f| f.direction.as_deref() == Some(direction))
            .collect();
        let from = mine.iter().filter_map(|f| first(f)).min()?;
        let to = mine.iter().filter_map(|f| last(f)).max()?;
        let bytes = |range: std::ops::Range<usize>| -> f64 {
            self.queues
                .iter()
                .filter(|q| q.name.split(' ').next() == Some(direction))
                .map(|q| range.clone().map(|b| q.departed_bytes.get(b)).sum::<f64>())
                .sum()
        };
        let rate = |range: std::ops::Range<usize>| {
            bytes(range.clone()) * 8.0 / (range.len() as f64 * self.bin_s) / 1e6
        };
        Some((rate(from..to + 1), rate(0..self.bins)))
    }

    /// Per-bin values, 0 where nothing happened.
    pub fn dense(&self, bins: &Bins) -> Vec<f64> {
        (0..self.bins).map(|b| bins.get(b)).collect()
    }
}

/// One pass over a bottleneck's log: the bins it fills, and the packets
/// inside the bottleneck (by direction and fingerprint: when each arrived
/// and its queue), which leave the map as they leave the bottleneck.
struct Pass<'a> {
    flows: &'a RunFlows,
    origin: Nanos,
    bin: Nanos,
    dual: bool,
    queues: Vec<QueueBins>,
    flow_bins: Vec<FlowBins>,
    names: FlowTable,
    roles: HashMap<(Direction, u32), Option<Role>>,
    inside: InFlight<(Direction, u32), (Nanos, usize)>,
    last: usize,
    changes: Vec<PathChange>,
}

impl<'a> Pass<'a> {
    fn new(flows: &'a RunFlows, origin: Nanos, bin: Nanos, dual: bool) -> Pass<'a> {
        let queues = Direction::BOTH
            .iter()
            .flat_map(|d| match dual {
                true => vec![format!("{} L", d.name()), format!("{} C", d.name())],
                false => vec![d.name().to_string()],
            })
            .map(|name| QueueBins {
                name,
                ..QueueBins::default()
            })
            .collect();
        Pass {
            flows,
            origin,
            bin,
            dual,
            queues,
            flow_bins: vec![FlowBins::default(); flows.flows.len()],
            names: FlowTable::default(),
            roles: HashMap::new(),
            inside: InFlight::default(),
            last: 0,
            changes: Vec::new(),
        }
    }

    /// The queue a packet of `direction` with codepoint `ecn` on arrival
    /// goes to: L for ECT(1) or CE in a dual queue, C otherwise.
    fn queue_of(&self, direction: Direction, ecn: u8) -> usize {
        let per_direction = if self.dual { 2 } else { 1 };
        direction as usize * per_direction + usize::from(self.dual && !(ecn == ECT1 || ecn == CE))
    }

    /// The named flow whose data `r` is, if any.
    fn data_flow(&mut self, r: &Record) -> Option<usize> {
        let (names, flows) = (&self.names, self.flows);
        let role = *self.roles.entry((r.direction, r.flow)).or_insert_with(|| {
            names
                .get(r.shell, r.direction, r.flow)
                .and_then(|t| flows.role(t))
        });
        match role {
            Some(Role::Data(i)) => Some(i),
            _ => None,
        }
    }

    fn record(&mut self, r: &Record) {
        if r.event == Event::Flow {
            self.names.add(r);
            return;
        }
        if r.event == Event::Change {
            add_change(&mut self.changes, r, self.origin);
            return;
        }
        let key = (r.direction, r.fingerprint);
        let data = self.data_flow(r);
        let bin = (r.time >= self.origin).then(|| ((r.time - self.origin) / self.bin) as usize);
        if let Some(b) = bin {
            self.last = self.last.max(b);
        }
        match r.event {
            Event::Arrive => self
                .inside
                .push(key, (r.time, self.queue_of(r.direction, r.ecn))),
            Event::Depart => {
                if let (Some((arrived, q)), Some(b)) = (self.inside.pop(&key), bin) {
                    self.depart(r, b, q, data.map(|i| (i, arrived)));
                }
            }
            Event::Drop => {
                let q = self
                    .inside
                    .pop(&key)
                    .map_or(self.queue_of(r.direction, r.ecn), |(_, q)| q);
                if let Some(b) = bin {
                    self.queues[q].drops.add(b, 1.0);
                }
            }
            Event::Mark => {
                let q = self
                    .inside
                    .oldest(&key)
                    .map_or(self.queue_of(r.direction, r.ecn), |&(_, q)| q);
                if let Some(b) = bin {
                    self.mark(r.detail, b, q, data);
                }
            }
            Event::Duplicate => {
                if let Some(&oldest) = self.inside.oldest(&key) {
                    self.inside.push(key, oldest);
                }
            }
            _ => {}
        }
    }

    /// A departure in bin `b` from queue `q`; `data`: the named flow it
    /// is data of, and when it arrived.
    fn depart(&mut self, r: &Record, b: usize, q: usize, data: Option<(usize, Nanos)>) {
        let queue = &mut self.queues[q];
        let sojourn = r.sojourn as f64 / 1e6;
        queue.sojourn_ms.add(b, sojourn);
        queue.departures.add(b, 1.0);
        queue.departed_bytes.add(b, r.bytes as f64);
        queue.sojourn_max_ms.max(b, sojourn);
        if let Some((i, arrived)) = data {
            let f = &mut self.flow_bins[i];
            f.direction
                .get_or_insert_with(|| r.direction.name().to_string());
            f.departed_bytes.add(b, r.bytes as f64);
            f.transit_ms
                .add(b, r.time.saturating_sub(arrived) as f64 / 1e6);
            f.transits.add(b, 1.0);
        }
    }

    /// A mark (`detail`) in bin `b` on a packet of queue `q`.
    fn mark(&mut self, detail: u8, b: usize, q: usize, data: Option<usize>) {
        let (queue, flow) = (&mut self.queues[q], data.map(|i| &mut self.flow_bins[i]));
        let (queue_count, flow_count) = match detail {
            MARK_CE => (&mut queue.ce, flow.map(|f| &mut f.ce)),
            MARK_ECT1 => (&mut queue.ect1, flow.map(|f| &mut f.ect1)),
            _ => return,
        };
        queue_count.add(b, 1.0);
        if let Some(count) = flow_count {
            count.add(b, 1.0);
        }
    }

    fn finish(mut self) -> BottleneckSeries {
        // Only the queues that carried something.
        self.queues.retain(|q| {
            q.departures.0.iter().any(|&n| n > 0.0) || q.drops.0.iter().any(|&n| n > 0.0)
        });
        self.changes.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        BottleneckSeries {
            bin_s: self.bin as f64 / 1e9,
            bins: self.last + 1,
            flows: self.flow_bins,
            queues: self.queues,
            changes: self.changes,
        }
    }
}

/// Reads the log at `path`; time 0 is the monotonic instant `origin`
/// (when the flows started), intervals are `bin` ns long. Records from
/// before `origin` only place packets. `dual`: split each direction's
/// queue into L and C.
pub fn read(
    path: &Path,
    flows: &RunFlows,
    origin: Nanos,
    bin: Nanos,
    dual: bool,
) -> Result<BottleneckSeries, LogError> {
    let mut pass = Pass::new(flows, origin, bin, dual);
    for item in LogReader::open(path)? {
        pass.record(&item?);
    }
    Ok(pass.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use emu_core::flow::FlowTuple;
    use emu_core::log::{write_log_file, LogHeader, Record};

    const MS: Nanos = 1_000_000;

    /// A classic packet marked CE stays in C (its codepoint on arrival
    /// decides), an ECT(1) one goes to L; a drop counts in its queue, a
    /// record before the flows started only places its packet.
    #[test]
    fn a_dual_queue_splits_by_the_codepoint_on_arrival() {
        let dir = std::env::temp_dir().join(format!("emu-bottleneck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0-link.emulog");
        let origin = 1000 * MS;
        let tuple = FlowTuple {
            protocol: 17,
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            source_port: 1,
            destination_port: 2,
        };
        let (named, n) = tuple.records(0, 5, 0, Direction::Uplink);
        let r = |t: Nanos, fingerprint, event, detail, ecn| Record {
            time: origin + t,
            sojourn: 4 * MS,
            flow: 5,
            fingerprint,
            bytes: 1000,
            event,
            detail,
            ecn,
            ..Record::default()
        };
        let mut records = named[..n].to_vec();
        records.extend([
            // Another flow's, arrived before the flows started, departs after.
            Record {
                flow: 6,
                ..r(0, 9, Event::Arrive, 0, 2)
            },
            r(50 * MS, 1, Event::Arrive, 0, 2),
            r(51 * MS, 1, Event::Mark, MARK_CE, 3),
            r(55 * MS, 1, Event::Depart, 0, 3),
            r(60 * MS, 2, Event::Arrive, 0, 1),
            r(65 * MS, 2, Event::Depart, 0, 1),
            r(70 * MS, 3, Event::Arrive, 0, 1),
            r(150 * MS, 3, Event::Drop, 3, 1),
        ]);
        records[n].time = origin - MS;
        records.push(Record {
            flow: 6,
            ..r(120 * MS, 9, Event::Depart, 0, 2)
        });
        records.sort_by_key(|r| r.time);
        write_log_file(&path, &LogHeader::default(), &records).unwrap();
        let flows = RunFlows::for_test("bulk", &tuple);
        let s = read(&path, &flows, origin, 100 * MS, true).unwrap();
        let names: Vec<&str> = s.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["uplink L", "uplink C"]);
        let (l, c) = (&s.queues[0], &s.queues[1]);
        assert_eq!((c.ce.get(0), l.ce.get(0)), (1.0, 0.0));
        assert_eq!((l.departures.get(0), c.departures.get(0)), (1.0, 1.0));
        assert_eq!(c.departures.get(1), 1.0, "the early packet departs in C");
        assert_eq!((l.drops.get(1), c.drops.get(1)), (1.0, 0.0));
        assert_eq!(s.bins, 2);
        let f = &s.flows[0];
        assert_eq!(f.departed_bytes.get(0), 2000.0);
        assert_eq!(f.ce.get(0), 1.0);
        // 5 ms through the bottleneck each.
        assert_eq!(s.mean(&f.transit_ms, &f.transits)[0], 5.0);
        // 2000 bytes in bin 0 and 1000 in bin 1 (the other flow's) over
        // the named flow's active bin 0 and over both.
        let (active, whole) = s.throughput_mbps("uplink").unwrap();
        assert!((active - 0.16).abs() < 1e-9 && (whole - 0.12).abs() < 1e-9);
        assert_eq!(s.throughput_mbps("downlink"), None);
        // A single queue is one per direction.
        let single = read(&path, &flows, origin, 100 * MS, false).unwrap();
        assert_eq!(single.queues.len(), 1);
        assert_eq!(single.queues[0].name, "uplink");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Rate steps and queue replacements after the flows started are the
    /// changes, once each though both directions log them; the rate the
    /// link starts with (before the flows) and delay changes are not.
    #[test]
    fn the_path_changes_are_its_rate_steps_and_queue_replacements() {
        let dir = std::env::temp_dir().join(format!("emu-changes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("0-link.emulog");
        let origin = 1000 * MS;
        let change = |t: Nanos, what: Change, value: u64, direction| Record {
            time: t,
            sojourn: value,
            event: Event::Change,
            detail: what as u8,
            direction,
            ..Record::default()
        };
        let mut records = Vec::new();
        for d in Direction::BOTH {
            records.extend([
                change(0, Change::Rate, 50_000_000, d),
                change(origin + 2000 * MS, Change::Rate, 5_000_000, d),
                change(origin + 2500 * MS, Change::Delay, 3 * MS, d),
                change(origin + 4000 * MS, Change::Queue, 1, d),
            ]);
        }
        records.sort_by_key(|r| r.time);
        write_log_file(&path, &LogHeader::default(), &records).unwrap();
        let tuple = FlowTuple {
            protocol: 6,
            source: "10.0.0.1".parse().unwrap(),
            destination: "10.0.0.2".parse().unwrap(),
            source_port: 1,
            destination_port: 2,
        };
        let flows = RunFlows::for_test("bulk", &tuple);
        let s = read(&path, &flows, origin, 100 * MS, false).unwrap();
        let seen: Vec<(f64, &str)> = s
            .changes
            .iter()
            .map(|c| (c.time_s, c.what.as_str()))
            .collect();
        assert_eq!(seen, [(2.0, "rate 5 Mbit/s"), (4.0, "queue step 1")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Packets that have left the bottleneck leave the pass's map: a long
    /// log holds only what is inside, not every fingerprint it saw.
    #[test]
    fn the_packets_inside_are_only_those_not_yet_gone() {
        let flows = RunFlows::default();
        let mut pass = Pass::new(&flows, 0, 100 * MS, true);
        let packet = |time: Nanos, fingerprint: u32, event| Record {
            time,
            fingerprint,
            bytes: 1000,
            event,
            ..Record::default()
        };
        for i in 0..100_000u32 {
            let t = i as Nanos * 10_000;
            let leaves = if i % 2 == 0 {
                Event::Depart
            } else {
                Event::Drop
            };
            pass.record(&packet(t, i, Event::Arrive));
            pass.record(&packet(t + 5_000, i, leaves));
        }
        pass.record(&packet(1_000_000_000, 7, Event::Arrive));
        assert_eq!((pass.inside.keys(), pass.inside.len()), (1, 1));
        let series = pass.finish();
        assert_eq!(series.queues[0].departures.0.iter().sum::<f64>(), 50_000.0);
    }

    #[test]
    fn dual_queues_are_known_by_name() {
        assert!(is_dual("dualpi2"));
        assert!(is_dual("dualq_uncoupled"));
        assert!(is_dual("twin_codel_af"));
        assert!(!is_dual("fq_codel"));
    }
}
