//! Every flow's figures as the path saw them, from the links' packet logs:
//! the 5-tuples its sender sent, and Pantheon's three figures (throughput,
//! 95th-percentile one-way delay, loss), whatever the flow's program and
//! protocol.
//!
//! A flow's packets are those its sender's host sent to its receiver's
//! host under one of its tuples. A tuple belongs to the flow between the
//! two hosts whose port it carries (or, for ICMP, to their ping); a tuple
//! no port claims (ICMP aside) belongs to the Pantheon scheme or command
//! between them, so a scheme that opens several sockets is still one flow. A packet
//! enters the path when it arrives at the sender's side link (uplink) and
//! leaves it when it departs the receiver's side link (downlink); it is
//! followed between the two by its flow hash and fingerprint, so its
//! one-way delay takes in every link's delay, queue and serialization.
//!
//! Cost: each side link's log is read once or twice per run (once per
//! role), and memory holds the packets in flight and those lost (never
//! delivered), not the run's packets.

use emu_core::flow::{FlowTable, FlowTuple};
use emu_core::log::{Direction, Event, LogReader, Record};
use emu_core::Nanos;
use report::experiments::results_schema::PathFigures;
use report::measures::histogram::{Histogram, Rank};
use report::measures::in_flight::InFlight;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;

/// How a flow is told apart on the path, and where it enters and leaves.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowClaim {
    pub from: IpAddr,
    pub to: IpAddr,
    /// The flow's port, matched at either end of a tuple.
    pub port: Option<u16>,
    /// The flow's packets are ICMP (a ping).
    pub icmp: bool,
    /// The flow takes the tuples between its hosts no port claims (a
    /// Pantheon scheme's or a command's other sockets).
    pub takes_the_rest: bool,
    /// The sender's side link log (its uplink is where packets enter).
    pub entry: PathBuf,
    /// The receiver's side link log (its downlink is where they leave).
    pub exit: PathBuf,
}

/// What one flow's tuples and packets came to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlowOnPath {
    /// Every 5-tuple of the flow, as its sender sent it.
    pub tuples: Vec<FlowTuple>,
    pub figures: PathFigures,
}

impl FlowClaim {
    fn names(&self, tuple: &FlowTuple) -> bool {
        match self.port {
            Some(port) if tuple.has_port(port) => true,
            _ => self.icmp && matches!(tuple.protocol, 1 | 58),
        }
    }
}

/// The flow (index into `claims`) that owns `tuple`, if any.
pub fn owner(claims: &[FlowClaim], tuple: &FlowTuple) -> Option<usize> {
    let between = |c: &&FlowClaim| c.from == tuple.source && c.to == tuple.destination;
    let candidates: Vec<(usize, &FlowClaim)> = claims
        .iter()
        .enumerate()
        .filter(|(_, c)| between(c))
        .collect();
    candidates
        .iter()
        .find(|(_, c)| c.names(tuple))
        .or_else(|| {
            // A kernel's ICMP error about a scheme's packet is not the
            // scheme's own traffic.
            let icmp = matches!(tuple.protocol, 1 | 58);
            candidates.iter().find(|(_, c)| c.takes_the_rest && !icmp)
        })
        .map(|(i, _)| *i)
}

/// Per flow: what was sent and not yet delivered, and the tallies.
#[derive(Default)]
struct Tally {
    tuples: BTreeSet<FlowTuple>,
    sent: (u64, u64),
    delivered: (u64, u64),
    first: Option<Nanos>,
    last: Nanos,
    delays: Option<Histogram>,
}

/// Every flow's tuples and figures from the logs its claims name, in the
/// claims' order. A log that cannot be read whole is an error naming it:
/// figures from part of a log would pass for the whole.
///
/// The entry logs' uplinks and the exit logs' downlinks are read as one
/// stream in time order (each direction of a log is in time order), so a
/// packet is held from its arrival to its delivery only.
pub fn measure(claims: &[FlowClaim]) -> Result<Vec<FlowOnPath>, String> {
    let mut tallies: Vec<Tally> = claims.iter().map(|_| Tally::default()).collect();
    let mut owners: HashMap<u32, Option<usize>> = HashMap::new();
    let mut in_flight: InFlight<(u32, u32), Nanos> = InFlight::default();
    let entries: BTreeSet<&PathBuf> = claims.iter().map(|c| &c.entry).collect();
    let exits: BTreeSet<&PathBuf> = claims.iter().map(|c| &c.exit).collect();
    let mut streams = Vec::new();
    for path in entries {
        streams.push(Stream::open(path, Direction::Uplink)?);
    }
    for path in exits {
        streams.push(Stream::open(path, Direction::Downlink)?);
    }
    let mut heads: BinaryHeap<Reverse<(Nanos, usize)>> = BinaryHeap::new();
    for (i, stream) in streams.iter_mut().enumerate() {
        if let Some(time) = stream.advance()? {
            heads.push(Reverse((time, i)));
        }
    }
    while let Some(Reverse((_, i))) = heads.pop() {
        let stream = &mut streams[i];
        let record = stream.head.take().expect("a head has a record");
        if stream.direction == Direction::Uplink {
            enter(
                claims,
                stream,
                &record,
                &mut owners,
                &mut tallies,
                &mut in_flight,
            );
        } else if record.event == Event::Depart {
            if let Some(&Some(f)) = owners.get(&record.flow) {
                let key = (record.flow, record.fingerprint);
                if &claims[f].exit == stream.path {
                    if let Some(sent) = in_flight.pop(&key) {
                        deliver(&mut tallies[f], &record, sent);
                    }
                }
            }
        }
        if let Some(time) = stream.advance()? {
            heads.push(Reverse((time, i)));
        }
    }
    Ok(tallies.into_iter().map(finish).collect())
}

/// One direction of one log, a record ahead.
struct Stream<'a> {
    path: &'a PathBuf,
    direction: Direction,
    reader: LogReader,
    names: FlowTable,
    head: Option<Record>,
}

impl<'a> Stream<'a> {
    fn open(path: &'a PathBuf, direction: Direction) -> Result<Stream<'a>, String> {
        Ok(Stream {
            path,
            direction,
            reader: LogReader::open(path).map_err(|e| e.to_string())?,
            names: FlowTable::default(),
            head: None,
        })
    }

    /// Reads the next record of its direction; its time, or None at the end.
    fn advance(&mut self) -> Result<Option<Nanos>, String> {
        for record in self.reader.by_ref() {
            let record = record.map_err(|e| e.to_string())?;
            if record.direction == self.direction {
                self.head = Some(record);
                return Ok(Some(record.time));
            }
        }
        Ok(None)
    }
}

/// An entry log's record: a flow named (and given its owner), or a
/// packet of an owned flow entering the path.
fn enter(
    claims: &[FlowClaim],
    stream: &mut Stream,
    record: &Record,
    owners: &mut HashMap<u32, Option<usize>>,
    tallies: &mut [Tally],
    in_flight: &mut InFlight<(u32, u32), Nanos>,
) {
    if record.event == Event::Flow {
        stream.names.add(record);
        if let Some(tuple) = stream
            .names
            .get(record.shell, record.direction, record.flow)
        {
            let own = owner(claims, tuple).filter(|&i| &claims[i].entry == stream.path);
            if let Some(i) = own {
                tallies[i].tuples.insert(tuple.clone());
            }
            owners.entry(record.flow).or_insert(own);
        }
        return;
    }
    if record.event != Event::Arrive {
        return;
    }
    if let Some(&Some(i)) = owners.get(&record.flow) {
        tallies[i].sent.0 += 1;
        tallies[i].sent.1 += record.bytes as u64;
        in_flight.push((record.flow, record.fingerprint), record.time);
    }
}

fn deliver(tally: &mut Tally, record: &Record, sent: Nanos) {
    tally.delivered.0 += 1;
    tally.delivered.1 += record.bytes as u64;
    tally.first.get_or_insert(record.time);
    tally.last = tally.last.max(record.time);
    tally
        .delays
        .get_or_insert_with(Histogram::micros)
        .add(record.time.saturating_sub(sent));
}

fn finish(tally: Tally) -> FlowOnPath {
    let span = tally.first.map(|first| tally.last.saturating_sub(first));
    let figures = PathFigures {
        throughput_bps: span
            .filter(|&s| s > 0)
            .map(|s| tally.delivered.1 as f64 * 8.0 / (s as f64 / 1e9)),
        delay_p95_ms: tally
            .delays
            .as_ref()
            .and_then(|h| h.percentile(Rank::NumpyNearest, 0.95))
            .map(|ns| ns as f64 / 1e6),
        loss_percent: (tally.sent.1 > 0)
            .then(|| 100.0 * (1.0 - tally.delivered.1 as f64 / tally.sent.1 as f64)),
        sent_packets: tally.sent.0,
        sent_bytes: tally.sent.1,
        delivered_packets: tally.delivered.0,
        delivered_bytes: tally.delivered.1,
    };
    FlowOnPath {
        tuples: tally.tuples.into_iter().collect(),
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn tuple(protocol: u8, sport: u16, dport: u16) -> FlowTuple {
        FlowTuple {
            protocol,
            source: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            destination: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2)),
            source_port: sport,
            destination_port: dport,
        }
    }

    fn claim(port: Option<u16>, icmp: bool, rest: bool) -> FlowClaim {
        FlowClaim {
            from: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            to: IpAddr::V4(Ipv4Addr::new(10, 0, 1, 2)),
            port,
            icmp,
            takes_the_rest: rest,
            entry: PathBuf::from("a"),
            exit: PathBuf::from("b"),
        }
    }

    /// A port names its flow; ICMP goes to the ping; what no port names
    /// goes to the scheme between the hosts; the other way, to nobody.
    #[test]
    fn each_tuple_has_at_most_one_owner() {
        let claims = [
            claim(Some(5201), false, false),
            claim(None, true, false),
            claim(Some(5202), false, true),
        ];
        assert_eq!(owner(&claims, &tuple(6, 40000, 5201)), Some(0));
        assert_eq!(owner(&claims, &tuple(1, 0, 0)), Some(1));
        assert_eq!(owner(&claims, &tuple(17, 5202, 40001)), Some(2));
        assert_eq!(owner(&claims, &tuple(17, 41000, 9000)), Some(2));
        let mut back = tuple(6, 5201, 40000);
        std::mem::swap(&mut back.source, &mut back.destination);
        assert_eq!(owner(&claims, &back), None);
        assert_eq!(owner(&claims[..2], &tuple(17, 41000, 9000)), None);
        assert_eq!(owner(&[claims[2].clone()], &tuple(1, 0, 0)), None);
    }
}
