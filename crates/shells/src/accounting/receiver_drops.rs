//! What the receiving sockets dropped after emu delivered, so a loss that
//! happened past the emulated path is not taken for the path's.
//!
//! A UDP datagram emu writes is delivered within the write to the
//! receiver's socket; if the receiving program has not read its buffer in
//! time, the kernel drops the datagram there and counts it in the
//! namespace's `RcvbufErrors` (or `MemErrors`, when UDP as a whole is out
//! of memory). Nothing else tells: emu counts the datagram delivered, and
//! the receiver counts it lost, as if the path had lost it. It happens
//! when emu, sender and receiver share a few cores: measured with
//! `iperf3 -u -b 0 -l 1472` through `delay 0` on a 2-core machine, the
//! receiver reported 21% loss while emu delivered every datagram, and the
//! namespace outside counted each missing one as `RcvbufErrors`.
//!
//! The counters are per network namespace. Inside, the command's
//! namespace is emu's own and counts only the command's sockets (the
//! downlink's receivers). Outside (the uplink's receivers) is wherever emu
//! was started, and every program there counts too; the summary says so.
//! TCP needs no such count: its receiver's window keeps a slow reader from
//! being sent more than it has room for.

use crate::sys::netns::NetNs;
use std::sync::Arc;

/// The UDP datagrams dropped for want of buffer space in one namespace
/// since it was created: IPv4 and IPv6, a full socket buffer and UDP's
/// memory limit. None if the counters cannot be read.
pub fn udp_buffer_drops(ns: &NetNs) -> Option<u64> {
    // `/proc/net` would be the namespace of the process's first thread;
    // `thread-self` is the namespace the reading thread entered.
    let (snmp, snmp6) = ns
        .run(|| {
            let read =
                |name: &str| std::fs::read_to_string(format!("/proc/thread-self/net/{name}"));
            Ok((read("snmp").ok(), read("snmp6").ok()))
        })
        .ok()?;
    let ipv4 = snmp.as_deref().and_then(ipv4_udp_drops)?;
    // A kernel without IPv6 has no snmp6: nothing dropped there.
    let ipv6 = snmp6.as_deref().map_or(Some(0), ipv6_udp_drops)?;
    Some(ipv4 + ipv6)
}

/// The counters that count a datagram dropped for want of buffer space.
const BUFFER_COUNTERS: [&str; 2] = ["RcvbufErrors", "MemErrors"];

/// From `/proc/net/snmp`: the `Udp:` line of names, then the `Udp:` line
/// of values in the same order.
fn ipv4_udp_drops(snmp: &str) -> Option<u64> {
    let mut lines = snmp.lines().filter_map(|l| l.strip_prefix("Udp:"));
    let names = lines.next()?;
    let values = lines.next()?;
    let mut total = 0;
    for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
        if BUFFER_COUNTERS.contains(&name) {
            total += value.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// From `/proc/net/snmp6`: one `Udp6<Name> <value>` per line.
fn ipv6_udp_drops(snmp6: &str) -> Option<u64> {
    let mut total = 0;
    for line in snmp6.lines() {
        let mut fields = line.split_whitespace();
        let (Some(name), Some(value)) = (fields.next(), fields.next()) else {
            continue;
        };
        let counted = name
            .strip_prefix("Udp6")
            .is_some_and(|n| BUFFER_COUNTERS.contains(&n));
        if counted {
            total += value.parse::<u64>().ok()?;
        }
    }
    Some(total)
}

/// What the receivers on either side of a chain of shells dropped during
/// a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiverDrops {
    /// In the command's namespace: the downlink's receivers.
    pub inside: u64,
    /// Where emu was started: the uplink's receivers, and any other
    /// program's sockets there.
    pub outside: u64,
}

/// The counters on both sides as the command starts, to be compared with
/// them at the end.
pub(crate) struct ReceiverWatch {
    outside_ns: Arc<NetNs>,
    inside_ns: Arc<NetNs>,
    outside: Option<u64>,
    inside: Option<u64>,
}

impl ReceiverWatch {
    /// Notes the counters of the namespace `outside` the chain and of the
    /// command's, `inside`.
    pub(crate) fn start(outside: &Arc<NetNs>, inside: &Arc<NetNs>) -> ReceiverWatch {
        ReceiverWatch {
            outside: udp_buffer_drops(outside),
            inside: udp_buffer_drops(inside),
            outside_ns: outside.clone(),
            inside_ns: inside.clone(),
        }
    }

    /// What was dropped since the start; None if either side could not be
    /// read.
    pub(crate) fn finish(self) -> Option<ReceiverDrops> {
        let since = |before: Option<u64>, ns: &NetNs| {
            let after = udp_buffer_drops(ns)?;
            Some(after.saturating_sub(before?))
        };
        Some(ReceiverDrops {
            inside: since(self.inside, &self.inside_ns)?,
            outside: since(self.outside, &self.outside_ns)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As a 6.x kernel writes them (lines cut to what matters).
    const SNMP: &str = "\
Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1000
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 272192 0 71807 1 71801 0 0 0 6
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 500 0 0 0 0
";
    const SNMP6: &str = "\
Ip6InReceives                   \t40
Udp6InDatagrams                 \t12
Udp6RcvbufErrors                \t30
Udp6SndbufErrors                \t7
Udp6MemErrors                   \t2
UdpLite6RcvbufErrors            \t900
";

    #[test]
    fn buffer_drops_are_read_by_name_from_both_tables() {
        // RcvbufErrors and MemErrors of UDP only: not InErrors (which
        // counts them again, with checksum errors), not UDP-Lite.
        assert_eq!(ipv4_udp_drops(SNMP), Some(71_807));
        assert_eq!(ipv6_udp_drops(SNMP6), Some(32));
    }

    #[test]
    fn an_older_kernel_without_mem_errors_counts_the_rest() {
        let snmp = "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 5 0 3 1 3\n";
        assert_eq!(ipv4_udp_drops(snmp), Some(3));
    }

    #[test]
    fn unreadable_tables_say_so_rather_than_zero() {
        assert_eq!(ipv4_udp_drops("Ip: Forwarding\nIp: 1\n"), None);
        assert_eq!(ipv4_udp_drops("Udp: RcvbufErrors\n"), None);
        assert_eq!(ipv4_udp_drops("Udp: RcvbufErrors\nUdp: many\n"), None);
        assert_eq!(ipv6_udp_drops("Udp6RcvbufErrors x\n"), None);
    }
}
