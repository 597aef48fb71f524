//! Whether a run kept time: the warnings a run's figures need when the
//! fabric wrote packets late into its hosts, or the kernel held its
//! threads off their CPUs.
//!
//! Late writes bend the path: a bottleneck that leaves its packets late is
//! slower and burstier than the one configured, and the flows' figures
//! are those of that path. The results still stand as measured, so a run
//! that kept no time is not failed; it is said, on stderr and in
//! `result.json` (`timing_warnings`).

use emu_core::Nanos;

/// A host's p99 lateness above which the run did not keep time: the bar
/// an experiment's deliveries are held to at 1 Gbit/s on two cores.
pub const LATE_P99: Nanos = 200_000;
/// The longest single lateness a run may have: beyond it, the fabric
/// stalled (at 1 Gbit/s, 5 ms is 400 packets written at once).
pub const LATE_MAX: Nanos = 5_000_000;
/// The share of a lane's time it may spend held off a CPU while it had
/// work (in stretches, the waits of its wake-ups left out: see
/// `shells::sys::schedstat::HoldMeter`): a real-time lane of an ordinary
/// run is held for none of it, and 50 ms in 10 s is a burst of hundreds
/// of packets at 50 Mbit/s.
pub const HELD_SHARE: f64 = 0.005;

/// What one host's deliveries came to: how late its packets were written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLateness<'a> {
    pub host: &'a str,
    pub packets: u64,
    pub p99_ns: Nanos,
    pub max_ns: Nanos,
}

/// How long one lane was held off a CPU, over how long it ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneHeld<'a> {
    /// Whose packets it carries (`left`, `right`).
    pub lane: &'a str,
    pub held_ns: Nanos,
    pub over_ns: Nanos,
}

/// The warnings of a run: one for the host written latest (by p99, and
/// by its longest lateness if another host's is longer), one per lane
/// held off its CPU for more than [`HELD_SHARE`] of its time.
pub fn warnings(hosts: &[HostLateness], lanes: &[LaneHeld]) -> Vec<String> {
    let mut said = Vec::new();
    let written = hosts.iter().filter(|h| h.packets > 0);
    let worst_p99 = written.clone().max_by_key(|h| h.p99_ns);
    let worst_max = written.max_by_key(|h| h.max_ns);
    if let (Some(p99), Some(max)) = (worst_p99, worst_max) {
        if p99.p99_ns > LATE_P99 || max.max_ns > LATE_MAX {
            let longest = match max.host == p99.host {
                true => String::new(),
                false => format!("; into {}, one {} late", max.host, ms(max.max_ns)),
            };
            said.push(format!(
                "packets were written into host {} late: {} at the 99th percentile, up to {}{longest}; \
                 the path was slower and burstier than configured for part of the run \
                 (links.json: delivery_lateness). Set `offload = true` under [run], use fewer or \
                 slower flows, or a machine with more cores",
                p99.host,
                ms(p99.p99_ns),
                ms(p99.max_ns),
            ));
        }
    }
    for lane in lanes {
        if (lane.held_ns as f64) > HELD_SHARE * lane.over_ns as f64 {
            said.push(format!(
                "the fabric's {} lane waited {} for a CPU while it had packets to carry ({:.1}% of the run): \
                 the kernel holds real-time threads that use more than their share of each second \
                 (/proc/sys/kernel/sched_rt_runtime_us) or that meet others of their priority, and \
                 deliveries due meanwhile were late",
                lane.lane,
                ms(lane.held_ns),
                100.0 * lane.held_ns as f64 / lane.over_ns.max(1) as f64,
            ));
        }
    }
    said
}

fn ms(ns: Nanos) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(host: &str, p99_ns: Nanos, max_ns: Nanos) -> HostLateness<'_> {
        HostLateness {
            host,
            packets: 1_000,
            p99_ns,
            max_ns,
        }
    }

    #[test]
    fn a_run_that_kept_time_has_nothing_to_say() {
        let hosts = [host("a", 40_000, 900_000), host("b", 150_000, 4_000_000)];
        let lanes = [LaneHeld {
            lane: "left",
            held_ns: 5_000_000,
            over_ns: 10_000_000_000,
        }];
        assert!(warnings(&hosts, &lanes).is_empty());
        assert!(warnings(&[], &[]).is_empty());
    }

    #[test]
    fn the_latest_host_is_named_with_its_p99_and_the_longest_lateness() {
        let hosts = [
            host("r1", 250_000, 1_000_000),
            host("r2", 90_000, 22_500_000),
            HostLateness {
                packets: 0,
                ..host("idle", 0, 0)
            },
        ];
        let said = warnings(&hosts, &[]);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with(
                "packets were written into host r1 late: 0.25 ms at the 99th percentile, up to 1.00 ms; \
                 into r2, one 22.50 ms late;"
            ),
            "{said:?}"
        );
        assert!(said[0].contains("`offload = true` under [run]"), "{said:?}");
        // A stall alone, on the host with the highest p99 too.
        let said = warnings(&[host("r1", 100_000, 6_000_000)], &[]);
        assert!(
            said[0]
                .contains("host r1 late: 0.10 ms at the 99th percentile, up to 6.00 ms; the path"),
            "{said:?}"
        );
    }

    #[test]
    fn a_lane_held_off_its_cpu_is_named() {
        let lanes = [
            LaneHeld {
                lane: "left",
                held_ns: 67_000_000,
                over_ns: 4_000_000_000,
            },
            LaneHeld {
                lane: "right",
                held_ns: 15_000_000,
                over_ns: 4_000_000_000,
            },
        ];
        let said = warnings(&[], &lanes);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("the fabric's left lane waited 67.00 ms for a CPU while it had packets to carry (1.7% of the run)"),
            "{said:?}"
        );
        assert!(said[0].contains("sched_rt_runtime_us"), "{said:?}");
    }
}
