//! The flows of one run of an experiment by the names its file gave them:
//! which packets in the logs are whose, and what TCP said about each
//! (`tcp/FLOW.csv`: smoothed RTT, cwnd, delivery rate over time).
//!
//! A packet's flow is found by its 5-tuple, from the first source that
//! has one: the tuples `result.json` lists per flow (every 5-tuple the
//! sender used), the TCP samples' addresses and ports, and last the two
//! hosts' addresses from `plan.json` where only one flow of that protocol
//! joins them. A tuple seen the other way round is the flow's
//! acknowledgements.

use crate::experiments::results_dir;
use crate::experiments::results_schema::RunResult;
use emu_core::flow::FlowTuple;
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

/// One flow as the experiment named it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedFlow {
    pub name: String,
    pub kind: String,
    pub congestion_control: Option<String>,
    /// TCP's samples over the run (empty for other flows).
    pub samples: Vec<TcpPoint>,
}

/// One TCP_INFO sample, its time in s from when the flows started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpPoint {
    pub time_s: f64,
    pub srtt_ms: f64,
    pub cwnd: f64,
    pub delivery_mbps: f64,
}

type Key = (u8, IpAddr, u16, IpAddr, u16);

fn key(t: &FlowTuple) -> Key {
    (
        t.protocol,
        t.source,
        t.source_port,
        t.destination,
        t.destination_port,
    )
}

/// The run's flows and how to tell their packets.
#[derive(Debug, Default)]
pub struct RunFlows {
    pub flows: Vec<NamedFlow>,
    /// 5-tuple as the sender sent it → the flow (index into `flows`).
    tuples: HashMap<Key, usize>,
    /// (protocol, sender's address, receiver's address) → the one flow of
    /// that protocol between the two hosts; None where several are.
    host_pairs: HashMap<(u8, IpAddr, IpAddr), Option<usize>>,
}

/// What a packet is to the named flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The flow's own packets, as its sender sent them.
    Data(usize),
    /// Packets the other way (acknowledgements, replies).
    Reverse(usize),
}

impl RunFlows {
    /// Which flow a log's tuple belongs to, and which way.
    pub fn role(&self, t: &FlowTuple) -> Option<Role> {
        let k = key(t);
        if let Some(&i) = self.tuples.get(&k) {
            return Some(Role::Data(i));
        }
        let reversed = (k.0, k.3, k.4, k.1, k.2);
        if let Some(&i) = self.tuples.get(&reversed) {
            return Some(Role::Reverse(i));
        }
        if let Some(&Some(i)) = self.host_pairs.get(&(t.protocol, t.source, t.destination)) {
            return Some(Role::Data(i));
        }
        if let Some(&Some(i)) = self.host_pairs.get(&(t.protocol, t.destination, t.source)) {
            return Some(Role::Reverse(i));
        }
        None
    }

    fn add_tuple(&mut self, k: Key, flow: usize) {
        self.tuples.entry(k).or_insert(flow);
    }
}

fn protocol_of(kind: &str) -> Option<u8> {
    match kind {
        "tcp" => Some(6),
        "udp" => Some(17),
        "ping" => Some(1),
        _ => None,
    }
}

/// The flows of the run in `run_dir` (its `result.json` given), with the
/// cell's `plan.json` in `cell_dir` for the hosts' addresses.
pub fn load(run_dir: &Path, result: &RunResult, cell_dir: &Path) -> RunFlows {
    let mut out = RunFlows::default();
    let plan = results_dir::plan(cell_dir);
    let address = |host: &str| -> Option<IpAddr> {
        plan.hosts
            .iter()
            .find(|h| h.name == host)?
            .address
            .as_deref()?
            .parse()
            .ok()
    };
    for (i, f) in result.flows.iter().enumerate() {
        let (samples, sockets) = tcp_samples(&results_dir::tcp_samples(run_dir, &f.name));
        for t in &f.tuples {
            out.add_tuple(key(t), i);
        }
        for k in sockets {
            out.add_tuple(k, i);
        }
        let ends = (address(&f.from), f.to.as_deref().and_then(address));
        if let (Some(p), (Some(a), Some(b))) = (protocol_of(&f.kind), ends) {
            out.host_pairs
                .entry((p, a, b))
                .and_modify(|e| *e = None)
                .or_insert(Some(i));
        }
        out.flows.push(NamedFlow {
            name: f.name.clone(),
            kind: f.kind.clone(),
            congestion_control: f.congestion_control.clone(),
            samples,
        });
    }
    out
}

/// A flow's TCP samples (those of its socket that had an RTT) and every
/// socket's 5-tuple in the file; nothing if there is no file or it has
/// none of the columns needed.
fn tcp_samples(path: &Path) -> (Vec<TcpPoint>, Vec<Key>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), Vec::new());
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |name: &str| header.iter().position(|c| c.trim() == name);
    let (Some(time), Some(src), Some(sport), Some(dst), Some(dport), Some(srtt)) = (
        col("time_s"),
        col("src"),
        col("sport"),
        col("dst"),
        col("dport"),
        col("srtt_us"),
    ) else {
        return (Vec::new(), Vec::new());
    };
    let (cwnd, rate, acked) = (col("cwnd"), col("delivery_rate_Bps"), col("bytes_acked"));
    // Per socket: its samples and the bytes it had acknowledged.
    let mut sockets: Vec<(Key, Vec<TcpPoint>, f64)> = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let num = |i: Option<usize>| i.and_then(|i| f.get(i)?.parse::<f64>().ok());
        let parsed = (|| {
            let k: Key = (
                6,
                f.get(src)?.parse().ok()?,
                f.get(sport)?.parse().ok()?,
                f.get(dst)?.parse().ok()?,
                f.get(dport)?.parse().ok()?,
            );
            Some((k, num(Some(time))?, num(Some(srtt))?))
        })();
        let Some((k, t, srtt_us)) = parsed else {
            continue;
        };
        let at = match sockets.iter().position(|s| s.0 == k) {
            Some(at) => at,
            None => {
                sockets.push((k, Vec::new(), 0.0));
                sockets.len() - 1
            }
        };
        let socket = &mut sockets[at];
        socket.2 = socket.2.max(num(acked).unwrap_or(0.0));
        if srtt_us > 0.0 {
            socket.1.push(TcpPoint {
                time_s: t,
                srtt_ms: srtt_us / 1e3,
                cwnd: num(cwnd).unwrap_or(f64::NAN),
                delivery_mbps: num(rate).map_or(f64::NAN, |r| r * 8.0 / 1e6),
            });
        }
    }
    let keys = sockets.iter().map(|s| s.0).collect();
    // The flow's own connection is the one that moved the most data (a
    // program's control connection rides along in the same file).
    let samples = sockets
        .into_iter()
        .max_by(|a, b| a.2.total_cmp(&b.2).then(a.1.len().cmp(&b.1.len())))
        .map(|s| s.1)
        .unwrap_or_default();
    (samples, keys)
}

impl RunFlows {
    /// One flow named `name` whose packets carry `tuple`.
    #[cfg(test)]
    pub(crate) fn for_test(name: &str, tuple: &FlowTuple) -> RunFlows {
        let mut flows = RunFlows::default();
        flows.add_tuple(key(tuple), 0);
        flows.flows.push(NamedFlow {
            name: name.into(),
            kind: String::new(),
            congestion_control: None,
            samples: Vec::new(),
        });
        flows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(source: &str, sport: u16, destination: &str, dport: u16, protocol: u8) -> FlowTuple {
        FlowTuple {
            protocol,
            source: source.parse().unwrap(),
            destination: destination.parse().unwrap(),
            source_port: sport,
            destination_port: dport,
        }
    }

    /// Flows are told by the tuples result.json lists, then the TCP
    /// samples' sockets, then the hosts' addresses where one flow of the
    /// protocol joins them; the other way round is the flow's reverse.
    #[test]
    fn packets_are_named_by_tuples_samples_then_hosts() {
        let dir = std::env::temp_dir().join(format!("emu-run-flows-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("run/tcp")).unwrap();
        let plan = serde_json::json!({"hosts": [
            {"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.2"},
        ]});
        std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
        std::fs::write(
            dir.join("run/tcp/sampled.csv"),
            "time_s,src,sport,dst,dport,srtt_us,cwnd,delivery_rate_Bps,bytes_acked\n\
             0.1,10.0.0.1,4000,10.0.0.2,5201,20000,10,1250000,100\n\
             0.1,10.0.0.1,4001,10.0.0.2,5201,21000,10,0,5\n",
        )
        .unwrap();
        let result = serde_json::json!({"flows": [
            {"name": "listed", "kind": "tcp", "from": "a", "to": "b", "tuples": [
                {"protocol": 6, "source": "10.0.0.1", "source_port": 3000,
                 "destination": "10.0.0.2", "destination_port": 5201}]},
            {"name": "sampled", "kind": "tcp", "from": "a", "to": "b"},
            {"name": "video", "kind": "udp", "from": "b", "to": "a"},
        ]});
        let result = serde_json::from_value(result).unwrap();
        let flows = load(&dir.join("run"), &result, &dir);
        let role = |t: FlowTuple| flows.role(&t);
        let (a, b) = ("10.0.0.1", "10.0.0.2");
        assert_eq!(role(tuple(a, 3000, b, 5201, 6)), Some(Role::Data(0)));
        assert_eq!(role(tuple(b, 5201, a, 3000, 6)), Some(Role::Reverse(0)));
        assert_eq!(role(tuple(a, 4000, b, 5201, 6)), Some(Role::Data(1)));
        // The control connection in the samples is the flow's too.
        assert_eq!(role(tuple(b, 5201, a, 4001, 6)), Some(Role::Reverse(1)));
        // Two TCP flows join a and b: their hosts alone name neither.
        assert_eq!(role(tuple(a, 4999, b, 5201, 6)), None);
        assert_eq!(role(tuple(b, 7, a, 8, 17)), Some(Role::Data(2)));
        // The samples are the socket that moved the data's.
        let samples = &flows.flows[1].samples;
        assert_eq!(samples.len(), 1);
        assert_eq!((samples[0].srtt_ms, samples[0].delivery_mbps), (20.0, 10.0));
        assert!(flows.flows[0].samples.is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
