//! Whether a run kept time: the warnings a run's figures need when the
//! fabric wrote packets late into its hosts, or the kernel held its
//! threads off their CPUs, and the run's verdict on its own timing.
//!
//! Late writes bend the path: a bottleneck that leaves its packets late is
//! slower and burstier than the one configured, and the flows' figures
//! are those of that path. How late is too late depends on what the run
//! measures: a queue that marks past a 1 ms sojourn (DualPI2's step, a
//! CoDel `ce_threshold`, an SCE ramp) answers 1 ms of the machine's
//! lateness as if the flows had queued it, where a 15 ms PIE target does
//! not notice. So the verdict holds the run's lateness against its
//! bottleneck queues' finest time scale. The results still stand as
//! measured, so a run that kept no time is not failed; it is said, on
//! stderr, in `result.json` (`timing_warnings`) and in `links.json`
//! (`timing`, the verdict).

use emu_core::Nanos;
use serde::Serialize;

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
/// The p99 lateness past which a run's path was not the one configured
/// whatever its queues: 2 ms is more jitter than any study of these
/// queues puts on a path on purpose. A queue with a finer time scale
/// lowers the bar to it.
pub const DISTURBED_P99: Nanos = 2_000_000;

/// The finest time scale of the run's bottleneck queues, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueScale {
    /// The bottleneck link it is on (`bottleneck-0`).
    pub link: String,
    pub scale: aqm::TimeScale,
}

/// A run's verdict on its own timing (`links.json`'s `timing`): whether
/// the path it emulated was the one configured, and why not. What tests
/// and scripts read to tell a run the machine disturbed from a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// False when a lane was held off its CPU past [`HELD_SHARE`], or the
    /// worst host's p99 lateness passed `bar_ns`.
    pub kept_time: bool,
    /// The worst host's p99 and the longest single lateness, in ns.
    pub late_p99_ns: Nanos,
    pub late_max_ns: Nanos,
    /// The p99 bar: half the bottleneck queues' finest time scale (see
    /// `aqm::TimeScale::lateness_bar`), or [`DISTURBED_P99`] where that is
    /// finer or there is none.
    pub bar_ns: Nanos,
    /// What set the bar (`dualpi2's L-queue marking step on bottleneck-0`).
    pub bar_set_by: String,
    /// One line per reason the run did not keep time.
    pub why: Vec<String>,
}

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

impl LaneHeld<'_> {
    /// Held off its CPU for more than [`HELD_SHARE`] of its time.
    fn held(&self) -> bool {
        (self.held_ns as f64) > HELD_SHARE * self.over_ns as f64
    }
}

/// The warnings of a run: one for the host written latest (by p99, and
/// by its longest lateness if another host's is longer), one per lane
/// held off its CPU for more than [`HELD_SHARE`] of its time, and one
/// when the lateness passed the bottleneck queues' finest time scale.
pub fn warnings(
    hosts: &[HostLateness],
    lanes: &[LaneHeld],
    queue: Option<&QueueScale>,
) -> Vec<String> {
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
        if let Some(q) = queue.filter(|q| p99.p99_ns > q.scale.lateness_bar()) {
            said.push(format!(
                "the deliveries' lateness ({} at the 99th percentile) passed half of {} ({}) on {}: \
                 the machine's delays built sojourn that the queue marked or dropped as if the \
                 flows had queued it, so this run's marks, drops and the flows' response to them \
                 are not the configured path's (links.json: timing)",
                ms(p99.p99_ns),
                q.scale.what,
                ms(q.scale.lateness_bar()),
                q.link,
            ));
        }
    }
    for lane in lanes.iter().filter(|lane| lane.held()) {
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
    said
}

/// The run's verdict on its timing (see [`Verdict`]).
pub fn verdict(hosts: &[HostLateness], lanes: &[LaneHeld], queue: Option<&QueueScale>) -> Verdict {
    let written = hosts.iter().filter(|h| h.packets > 0);
    let late_p99_ns = written.clone().map(|h| h.p99_ns).max().unwrap_or(0);
    let late_max_ns = written.map(|h| h.max_ns).max().unwrap_or(0);
    let (bar_ns, bar_set_by) = match queue {
        Some(q) if q.scale.lateness_bar() < DISTURBED_P99 => (
            q.scale.lateness_bar(),
            format!("half of {} on {}", q.scale.what, q.link),
        ),
        _ => (
            DISTURBED_P99,
            "the path's own bar (no bottleneck queue decides on less)".to_string(),
        ),
    };
    let mut why = Vec::new();
    if late_p99_ns > bar_ns {
        why.push(format!(
            "deliveries were {} late at the 99th percentile, past {} ({})",
            ms(late_p99_ns),
            bar_set_by,
            ms(bar_ns)
        ));
    }
    for lane in lanes.iter().filter(|lane| lane.held()) {
        why.push(format!(
            "the fabric's {} lane was held off a CPU for {}",
            lane.lane,
            ms(lane.held_ns)
        ));
    }
    Verdict {
        kept_time: why.is_empty(),
        late_p99_ns,
        late_max_ns,
        bar_ns,
        bar_set_by,
        why,
    }
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
        assert!(warnings(&hosts, &lanes, None).is_empty());
        assert!(warnings(&[], &[], None).is_empty());
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
        let said = warnings(&hosts, &[], None);
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
        let said = warnings(&[host("r1", 100_000, 6_000_000)], &[], None);
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
        let said = warnings(&[], &lanes, None);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("the fabric's left lane waited 67.00 ms for a CPU while it had packets to carry (1.7% of the run)"),
            "{said:?}"
        );
        assert!(said[0].contains("sched_rt_runtime_us"), "{said:?}");
    }

    fn dualpi2_step() -> QueueScale {
        QueueScale {
            link: "bottleneck-0".into(),
            scale: aqm::TimeScale {
                ns: 1_000_000,
                what: "dualpi2's L-queue marking step".into(),
            },
        }
    }

    /// 1.14 ms late at p99 is within the 2 ms any path allows, but past
    /// half of DualPI2's 1 ms step: the run did not keep time for that
    /// queue.
    #[test]
    fn lateness_past_the_queues_finest_time_scale_is_a_disturbed_run() {
        let hosts = [
            host("f1-r", 1_140_000, 1_420_000),
            host("f1-s", 90_000, 400_000),
        ];
        let step = dualpi2_step();
        let v = verdict(&hosts, &[], Some(&step));
        assert!(!v.kept_time, "{v:?}");
        assert_eq!(
            (v.late_p99_ns, v.late_max_ns, v.bar_ns),
            (1_140_000, 1_420_000, 500_000)
        );
        assert_eq!(
            v.why,
            [
                "deliveries were 1.14 ms late at the 99th percentile, past half of dualpi2's \
                 L-queue marking step on bottleneck-0 (0.50 ms)"
            ]
        );
        let said = warnings(&hosts, &[], Some(&step));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[1].starts_with(
                "the deliveries' lateness (1.14 ms at the 99th percentile) passed half of \
                 dualpi2's L-queue marking step (0.50 ms) on bottleneck-0"
            ),
            "{said:?}"
        );
        // The same lateness through a queue with no finer scale than 2 ms
        // (drop-tail, a 15 ms PIE) kept time.
        let v = verdict(&hosts, &[], None);
        assert!(v.kept_time, "{v:?}");
        assert_eq!(v.bar_ns, DISTURBED_P99);
        assert_eq!(warnings(&hosts, &[], None).len(), 1);
        // Under half the step, nothing to say of the queue.
        let quiet = [host("f1-r", 390_000, 900_000)];
        assert!(verdict(&quiet, &[], Some(&step)).kept_time);
        assert_eq!(warnings(&quiet, &[], Some(&step)).len(), 1);
    }

    #[test]
    fn a_held_lane_or_lateness_past_2_ms_is_a_disturbed_run_whatever_the_queue() {
        let lanes = [LaneHeld {
            lane: "left",
            held_ns: 67_000_000,
            over_ns: 4_000_000_000,
        }];
        let v = verdict(&[host("a", 40_000, 90_000)], &lanes, None);
        assert!(!v.kept_time);
        assert_eq!(
            v.why,
            ["the fabric's left lane was held off a CPU for 67.00 ms"]
        );
        let v = verdict(&[host("a", 2_100_000, 3_000_000)], &[], None);
        assert_eq!(v.why.len(), 1, "{v:?}");
        assert!(verdict(&[], &[], None).kept_time);
    }
}
