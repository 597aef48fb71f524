//! The finest time scale a queue decides on: the smallest sojourn (or
//! backlog, in time at the link's rate) at which its marks or drops
//! change. A run whose machine delays packets by about that much has a
//! queue that answers the machine as well as the flows: at 50 Mbit/s,
//! packets read 1 ms late reach DualPI2's L queue as a 1 ms burst, past
//! its 1 ms step. `emu run` holds a run's lateness against it.
//!
//! Cost: a match and, for thresholds in bytes or packets, one division;
//! computed once per run, never per packet.

use super::QueueSpec;
use crate::dualpi2::Step;
use crate::red::Unit;
use emu_core::Nanos;

/// A queue's finest time scale and what sets it, for messages
/// ("dualpi2's L-queue marking step").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeScale {
    pub ns: Nanos,
    pub what: String,
}

impl TimeScale {
    /// The lateness at p99 past which a run's queue answers the machine:
    /// half its time scale. Packets written L late arrive as a burst of
    /// L, which the queue holds as L of backlog on top of what the flows
    /// queue; past half the scale, more than half of the room before the
    /// queue acts is the machine's.
    pub fn lateness_bar(&self) -> Nanos {
        self.ns / 2
    }
}

impl QueueSpec {
    /// The smallest time scale at which this queue's decisions change, at
    /// a link of `link_bps` (which turns thresholds in bytes or packets
    /// into time; None where the rate is not constant, and such
    /// thresholds then give none). None for queues that decide on
    /// nothing but their capacity (FIFOs).
    pub fn finest_time_scale(&self, link_bps: Option<u64>) -> Option<TimeScale> {
        let scale = |ns: Nanos, what: String| Some(TimeScale { ns, what });
        let name = self.name();
        match self {
            QueueSpec::Infinite | QueueSpec::Droptail(_) | QueueSpec::Drophead(_) => None,
            QueueSpec::Codel(p) => codel_scale(name, &p.codel),
            QueueSpec::FqCodel(p) => codel_scale(name, &p.codel),
            QueueSpec::Pie(p) => scale(p.target, format!("{name}'s target")),
            QueueSpec::FqPie(p) => scale(p.pie.target, format!("{name}'s target")),
            QueueSpec::Red(p) => {
                let per_unit = match p.unit {
                    Unit::Bytes => 1,
                    Unit::Packets => p.avpkt.max(1) as u64,
                };
                let bps = link_bps.or((p.bandwidth > 0).then_some(p.bandwidth * 8))?;
                let ns = bytes_time(p.min.saturating_mul(per_unit), bps)?;
                scale(ns, format!("{name}'s min threshold"))
            }
            QueueSpec::Cake(p) if p.sce > 0 => {
                scale(p.target / 2, format!("{name}'s SCE ramp (half its target)"))
            }
            QueueSpec::Cake(p) => scale(p.target, format!("{name}'s target")),
            QueueSpec::DualPi2(p) => {
                let step = match p.step {
                    Step::Time(t) => Some(t),
                    Step::Packets(n) => {
                        link_bps.and_then(|bps| bytes_time(n as u64 * p.mtu as u64, bps))
                    }
                };
                match step {
                    Some(step) if step < p.target => {
                        scale(step, format!("{name}'s L-queue marking step"))
                    }
                    _ => scale(p.target, format!("{name}'s classic target")),
                }
            }
            QueueSpec::InstantRed(p) => instant_red_scale(name, p, link_bps),
            QueueSpec::CurvyRed(p) => {
                // The sojourn at which p reaches 1%: dq * 0.01^(1/U).
                let ns = (p.dq as f64 * 0.01f64.powf(1.0 / p.curviness)) as Nanos;
                scale(ns, format!("{name}'s 1% point"))
            }
            QueueSpec::DualqUncoupled(p) => match p.aqms().0 {
                crate::dualq::uncoupled::Aqm::Red(red) => instant_red_scale(name, &red, link_bps),
                crate::dualq::uncoupled::Aqm::Pie(pie) => {
                    scale(pie.target, format!("{name}'s L target"))
                }
            },
            QueueSpec::DualqPi2(p) => scale(
                p.step.min(p.target),
                format!("{name}'s L-queue marking step"),
            ),
            QueueSpec::DualqPie(p) => scale(
                p.step.min(p.pie.target),
                format!("{name}'s L-queue marking step"),
            ),
            QueueSpec::DualqCred(p) => {
                let bytes = p.step_packets.max(1) as u64 * FULL_PACKET;
                scale(
                    bytes_time(bytes, link_bps?)?,
                    format!("{name}'s L-queue marking step"),
                )
            }
            QueueSpec::TwinCodelAf(p) => {
                let [normal, low] = crate::twin_codel_af::TwinCodelAf::class_params(p);
                sce_cobalt_scale(name, [normal, low])
            }
            QueueSpec::LfqCobalt(p) => {
                let (normal, low) = crate::lfq_cobalt::LfqCobalt::class_params(p);
                sce_cobalt_scale(name, [normal, low])
            }
        }
    }
}

/// CoDel's target, or its CE threshold where that is finer.
fn codel_scale(name: &str, p: &crate::codel::CodelParams) -> Option<TimeScale> {
    Some(match p.ce_threshold {
        Some(ce) if ce < p.target => TimeScale {
            ns: ce,
            what: format!("{name}'s ce_threshold"),
        },
        _ => TimeScale {
            ns: p.target,
            what: format!("{name}'s target"),
        },
    })
}

/// The finest of the classes' CE and SCE targets.
fn sce_cobalt_scale(
    name: &str,
    classes: [crate::sce_cobalt::SceCobaltParams; 2],
) -> Option<TimeScale> {
    let mut finest: Option<TimeScale> = None;
    for (class, params) in ["normal", "low-latency"].into_iter().zip(classes) {
        for (ns, kind) in [(params.sce_target, "SCE"), (params.ce_target, "CE")] {
            if ns > 0 && finest.as_ref().is_none_or(|f| ns < f.ns) {
                finest = Some(TimeScale {
                    ns,
                    what: format!("{name}'s {class} {kind} target"),
                });
            }
        }
    }
    finest
}

/// The time a stateless RED's threshold in packets takes at `link_bps`:
/// its min, or its max where min is under a packet.
fn instant_red_scale(
    name: &str,
    p: &crate::instant_red::InstantRedParams,
    link_bps: Option<u64>,
) -> Option<TimeScale> {
    let packets = if p.min >= 1.0 { p.min } else { p.max };
    let ns = bytes_time((packets * FULL_PACKET as f64) as u64, link_bps?)?;
    Some(TimeScale {
        ns,
        what: format!("{name}'s threshold"),
    })
}

/// The packet the thresholds in packets of the thesis's queues stand for,
/// in bytes: a full-size one.
const FULL_PACKET: u64 = 1500;

/// How long `bytes` take at `bps`; None at a rate of 0.
fn bytes_time(bytes: u64, bps: u64) -> Option<Nanos> {
    (bps > 0).then(|| (bytes as u128 * 8 * 1_000_000_000 / bps as u128) as Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale(spec: &str, bps: Option<u64>) -> Option<(Nanos, String)> {
        QueueSpec::parse(spec)
            .unwrap()
            .finest_time_scale(bps)
            .map(|s| (s.ns, s.what))
    }

    #[test]
    fn fifos_decide_on_nothing_finer_than_their_capacity() {
        assert_eq!(scale("droptail packets 100", Some(50_000_000)), None);
        assert_eq!(scale("infinite", None), None);
    }

    #[test]
    fn dualpi2_is_held_to_its_step_in_time_or_in_packets_at_the_rate() {
        let ms = 1_000_000;
        assert_eq!(
            scale("dualpi2", Some(50_000_000)),
            Some((ms, "dualpi2's L-queue marking step".into()))
        );
        // 2 packets of 1500 bytes at 12 Mbit/s: 2 ms.
        assert_eq!(
            scale("dualpi2 step_thresh 2packets", Some(12_000_000))
                .unwrap()
                .0,
            2 * ms
        );
        // No constant rate: the step in packets gives no time; the target does.
        assert_eq!(
            scale("dualpi2 step_thresh 2packets", None),
            Some((15 * ms, "dualpi2's classic target".into()))
        );
    }

    #[test]
    fn codel_pie_cake_and_red_give_their_own_thresholds() {
        let ms = 1_000_000;
        assert_eq!(scale("codel", None).unwrap().0, 5 * ms);
        assert_eq!(
            scale("fq_codel ce_threshold 1ms", None),
            Some((ms, "fq_codel's ce_threshold".into()))
        );
        assert_eq!(scale("pie", None).unwrap().0, 15 * ms);
        assert_eq!(scale("cake", None).unwrap().0, 5 * ms);
        assert_eq!(scale("cake sce", None).unwrap().0, 5 * ms / 2);
        // 30,000 bytes at 60 Mbit/s: 4 ms.
        let red = "red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 bandwidth 60mbit";
        assert_eq!(scale(red, Some(60_000_000)).unwrap().0, 4 * ms);
    }

    #[test]
    fn the_thesis_queues_give_their_steps_and_thresholds() {
        let ms = 1_000_000;
        assert_eq!(scale("dualq_pi2", None).unwrap().0, ms);
        assert_eq!(scale("dualq_pie", None).unwrap().0, ms);
        // 5 packets of 1500 bytes at 10 Mbit/s: 6 ms.
        assert_eq!(scale("dualq_cred", Some(10_000_000)).unwrap().0, 6 * ms);
        assert_eq!(scale("dualq_cred", None), None);
        // instant_red's min, 3 packets, at 12 Mbit/s: 3 ms.
        assert_eq!(
            scale("instant_red min 3 max 9", Some(12_000_000))
                .unwrap()
                .0,
            3 * ms
        );
        // dq-red's L queue at 1:5, base 5: min 0, so its max of 1 packet.
        let dq = "dualq_uncoupled l_flows 1 c_flows 5 l_max 5";
        assert_eq!(scale(dq, Some(12_000_000)).unwrap().0, ms);
        assert_eq!(scale("dualq_uncoupled aqm pie", None).unwrap().0, 5 * ms);
        // U = 2: p is 1% at a tenth of dq.
        assert_eq!(scale("curvy_red dq 100ms", None).unwrap().0, 10 * ms);
    }

    #[test]
    fn the_sce_queues_are_held_to_their_finest_class() {
        // The low-latency class runs at a fifth of the normal one's
        // targets, and its SCE target is half its CE target.
        assert_eq!(
            scale("twin_codel_af", None),
            Some((500_000, "twin_codel_af's low-latency SCE target".into()))
        );
    }
}
