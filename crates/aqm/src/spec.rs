//! Queue specifications in `tc qdisc` syntax: a discipline name followed by
//! keyword/value pairs, e.g. `droptail packets 100` or `droptail bytes 64kb`.
//! Every error names the keyword and says what it accepts.

use crate::cake::overhead::{Framing, Overhead};
use crate::cake::tins::TinMode;
use crate::cake::{flow_mode, AckFilter, Cake, CakeParams};
use crate::codel::{Codel, CodelParams, Variant};
use crate::dualpi2::{gain_from_hz, DualPi2, DualPi2Params, Scheduler, Step};
use crate::fifo::{Bounded, Infinite, Limits, Overflow};
use crate::fq_codel::{FqCodel, FqCodelParams};
use crate::fq_pie::{FqPie, FqPieParams};
use crate::pie::{Pie, PieParams};
use crate::red::{Red, RedParams, Unit};
use crate::Queue;
use emu_core::error::ParseError;
use emu_core::rate::Rate;
use emu_core::size::{parse_count, parse_size};
use emu_core::time::{parse_duration, Nanos};
use std::fmt;

/// A queue specification we could not build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// One discipline in the catalogue shown by `emu queues`.
pub struct Discipline {
    pub name: &'static str,
    pub summary: &'static str,
    /// (keyword, value form, default, meaning)
    /// Groups of options; disciplines that share options share a group.
    pub options: &'static [&'static [Opt]],
}

/// One option: keyword, value form, default, meaning.
pub type Opt = (&'static str, &'static str, &'static str, &'static str);

impl Discipline {
    pub fn all_options(&self) -> impl Iterator<Item = &'static Opt> {
        self.options.iter().flat_map(|group| group.iter())
    }
}

const FIFO_OPTIONS: &[Opt] = &[
    ("packets", "N", "none", "most packets held"),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (IP lengths; 64kb, 1mb accepted)",
    ),
];

/// Every discipline emu offers, with its options and defaults.
pub fn catalogue() -> &'static [Discipline] {
    &[
        Discipline {
            name: "infinite",
            summary: "unbounded FIFO (never drops)",
            options: &[],
        },
        Discipline {
            name: "droptail",
            summary: "FIFO that drops arrivals beyond its limit (at least one limit required)",
            options: &[FIFO_OPTIONS],
        },
        Discipline {
            name: "drophead",
            summary:
                "FIFO that drops its oldest packets to make room (at least one limit required)",
            options: &[FIFO_OPTIONS],
        },
        Discipline {
            name: "codel",
            summary: "CoDel (RFC 8289), Linux fixed-point arithmetic unless 'variant rfc'",
            options: &[CODEL_OWN, CODEL_SHARED],
        },
        Discipline {
            name: "fq_codel",
            summary: "FQ-CoDel (RFC 8290): per-flow CoDel queues served by DRR++",
            options: &[FLOW_QUEUES, FQ_CODEL_OWN, CODEL_SHARED],
        },
        Discipline {
            name: "pie",
            summary: "PIE (RFC 8033) with Linux's arithmetic and derandomization",
            options: &[PIE_LIMIT_1000, PIE_OPTIONS],
        },
        Discipline {
            name: "fq_pie",
            summary: "FQ-PIE (Linux sch_fq_pie): per-flow PIE queues served by DRR++",
            options: &[FLOW_QUEUES, FQ_PIE_OWN, PIE_OPTIONS],
        },
        Discipline {
            name: "red",
            summary: "RED (Floyd & Jacobson 1993) with tc-red's options, gentle and adaptive RED",
            options: &[RED_OPTIONS],
        },
        Discipline {
            name: "cake",
            summary:
                "Cake (sch_cake): shaper, diffserv tins, host/flow isolation, COBALT, SCE marking",
            options: &[CAKE_OPTIONS],
        },
        Discipline {
            name: "dualpi2",
            summary: "DualPI2 (RFC 9332, sch_dualpi2): coupled L4S/classic dual queue",
            options: &[DUALPI2_OPTIONS],
        },
    ]
}

/// The CoDel options `codel` and `fq_codel` share.
const CODEL_SHARED: &[Opt] = &[
    ("target", "TIME", "5ms", "acceptable standing queue delay"),
    (
        "interval",
        "TIME",
        "100ms",
        "window over which delay must stay above target",
    ),
    (
        "ce_threshold",
        "TIME",
        "off",
        "CE-mark ECT packets whose sojourn exceeds this",
    ),
    (
        "variant",
        "linux|rfc",
        "linux",
        "fixed-point Newton steps (Linux) or exact sqrt (RFC 8289)",
    ),
    (
        "mtu",
        "BYTES",
        "1500",
        "no drop while the backlog is at most this",
    ),
];

const CODEL_OWN: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "1000",
        "most packets held (tail drop beyond)",
    ),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (tail drop beyond)",
    ),
    (
        "ecn | noecn",
        "",
        "noecn",
        "mark ECT packets instead of dropping them",
    ),
];

/// The flow-queue options fq_codel and fq_pie share.
const FLOW_QUEUES: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "10240",
        "most packets held in all flows",
    ),
    ("flows", "N", "1024", "number of flow queues"),
    (
        "quantum",
        "BYTES",
        "1514",
        "bytes a flow may send per round",
    ),
    (
        "memory_limit",
        "SIZE",
        "32mb",
        "most bytes held in all flows",
    ),
];

const FQ_CODEL_OWN: &[Opt] = &[
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

const PIE_LIMIT_1000: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "1000",
        "most packets held (tail drop beyond)",
    ),
    (
        "bytes",
        "SIZE",
        "none",
        "most bytes held (tail drop beyond)",
    ),
];

const FQ_PIE_OWN: &[Opt] = &[(
    "ecn_prob",
    "PERCENT",
    "10",
    "mark rather than drop while p is at most this",
)];

const RED_OPTIONS: &[Opt] = &[
    (
        "limit",
        "SIZE",
        "required",
        "hard limit on the backlog (packets with 'packets')",
    ),
    (
        "min",
        "SIZE",
        "max/3",
        "average backlog where marking starts",
    ),
    (
        "max",
        "SIZE",
        "3*min",
        "average backlog where marking reaches 'probability'",
    ),
    (
        "avpkt",
        "BYTES",
        "1000",
        "average packet size (idle decay, burst, bytemode)",
    ),
    (
        "burst",
        "PACKETS",
        "(2min+max)/3avpkt",
        "burst that must fit before min: sets the weight as tc does",
    ),
    (
        "weight",
        "W",
        "from burst",
        "EWMA weight of the average, 0 < W <= 1",
    ),
    ("probability", "P", "0.02", "marking probability at max"),
    (
        "bandwidth",
        "RATE",
        "10mbit",
        "link rate, for the idle-time decay",
    ),
    (
        "packets",
        "",
        "bytes",
        "count the queue in packets instead of bytes",
    ),
    (
        "ecn",
        "",
        "off",
        "mark ECT packets instead of dropping them",
    ),
    ("harddrop", "", "off", "drop even ECT packets above max"),
    (
        "gentle",
        "",
        "off",
        "ramp from probability to 1 between max and 2*max",
    ),
    (
        "adaptive",
        "",
        "off",
        "adapt probability every 500 ms (Adaptive RED)",
    ),
    (
        "bytemode",
        "",
        "off",
        "scale the probability by packet size / avpkt",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

const CAKE_OPTIONS: &[Opt] = &[
    ("bandwidth", "RATE|unlimited", "unlimited", "cake's own shaper (see README: with the link rate)"),
    ("besteffort | precedence | diffserv8 | diffserv4 | diffserv3", "", "diffserv3", "priority tins by DSCP"),
    ("flowblind | srchost | dsthost | hosts | flows | dual-srchost | dual-dsthost | triple-isolate", "", "triple-isolate", "flow isolation"),
    ("rtt", "TIME", "100ms", "interval; target = rtt/20"),
    ("target", "TIME", "5ms", "COBALT target (raised to 1.5 MTU times on slow links)"),
    ("datacentre | lan | metro | regional | internet | oceanic | satellite | interplanetary", "", "internet", "rtt presets"),
    ("overhead", "BYTES", "0", "bytes added to each IP packet by the link below"),
    ("mpu", "BYTES", "0", "smallest frame the link sends"),
    ("atm | ptm | noatm", "", "noatm", "cell framing of the link below"),
    ("raw", "", "raw", "no compensation: charge IP bytes"),
    ("conservative | ethernet | docsis | pppoe-ptm | bridged-ptm | pppoa-vcmux | pppoa-llc | pppoe-vcmux | pppoe-llcsnap | bridged-vcmux | bridged-llcsnap | ipoa-vcmux | ipoa-llcsnap | ether-vlan", "", "", "tc-cake's link presets"),
    ("memlimit", "SIZE", "4 BDP, >= 4mb", "most bytes held"),
    ("ingress | egress", "", "egress", "ingress: count dropped packets against the shaper"),
    ("ack-filter | ack-filter-aggressive | no-ack-filter", "", "no-ack-filter", "drop redundant pure TCP ACKs"),
    ("wash | nowash", "", "nowash", "clear DSCP after choosing the tin"),
    ("split-gso | no-split-gso", "", "split-gso", "accepted; emu's packets are already segmented"),
    ("nonat", "", "nonat", "accepted; 'nat' needs conntrack, which emu's path has none of"),
    ("sce | sce-single | no-sce", "", "no-sce", "SCE ECT(1) ramp: 0->100% over target/2..target, or target..2*target"),
    ("sce-thresh", "N", "", "SCE ramp to 1/N at target, 100% at 2*target"),
    ("mtu", "BYTES", "1500", "MTU for the target floor and buffer limit"),
    ("seed", "N", "1", "seed of BLUE, SCE and quantum dithering"),
];

const DUALPI2_OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "10000",
        "most packets held in both queues",
    ),
    (
        "memlimit",
        "SIZE",
        "limit*2*mtu",
        "most bytes held in both queues",
    ),
    ("target", "TIME", "15ms", "PI target queue delay"),
    ("tupdate", "TIME", "16ms", "interval between PI updates"),
    ("alpha", "HZ", "0.16", "integral gain"),
    ("beta", "HZ", "3.2", "proportional gain"),
    (
        "max_rtt",
        "TIME",
        "",
        "set target, tupdate, alpha, beta for this RTT",
    ),
    (
        "typical_rtt",
        "TIME",
        "",
        "with max_rtt: the RTT the target is set to",
    ),
    ("coupling_factor", "K", "2", "p_L = K * p'"),
    (
        "step_thresh",
        "TIME|Np",
        "1ms",
        "L queue step marking threshold (time, or packets with 'p')",
    ),
    (
        "min_qlen_step",
        "PACKETS",
        "0",
        "no step marking below this L queue length",
    ),
    (
        "drop_on_overload | overflow",
        "",
        "drop_on_overload",
        "overload: classic drop for L4S too, or mark and overflow",
    ),
    (
        "drop_enqueue | drop_dequeue",
        "",
        "drop_dequeue",
        "where the PI signal is applied",
    ),
    (
        "classic_protection",
        "PERCENT",
        "10",
        "the C queue's WRR weight",
    ),
    (
        "l4s_ect | any_ect",
        "",
        "l4s_ect",
        "what goes to the L queue: ECT(1)/CE, or any ECT",
    ),
    (
        "split_gso | no_split_gso",
        "",
        "split_gso",
        "accepted; emu's packets are already segmented",
    ),
    (
        "tshift",
        "TIME",
        "off",
        "time-shifted FIFO scheduler instead of WRR",
    ),
    (
        "uncoupled",
        "",
        "off",
        "no coupling: L queue step AQM only, PI sees the C queue",
    ),
    (
        "mtu",
        "BYTES",
        "1500",
        "MTU for the 2-MTU floor and the WRR credit",
    ),
    ("seed", "N", "1", "seed of the random decisions"),
];

const PIE_OPTIONS: &[Opt] = &[
    ("target", "TIME", "15ms", "target queue delay"),
    (
        "tupdate",
        "TIME",
        "15ms",
        "interval between probability updates",
    ),
    ("alpha", "N", "2", "integral gain in 1/16 (2 = 0.125)"),
    ("beta", "N", "20", "proportional gain in 1/16 (20 = 1.25)"),
    ("max_burst", "TIME", "150ms", "burst allowance"),
    (
        "ecn | noecn",
        "",
        "noecn",
        "mark ECT packets while p <= 10%",
    ),
    (
        "bytemode | nobytemode",
        "",
        "nobytemode",
        "scale the probability by packet size",
    ),
    (
        "dq_rate_estimator | no_dq_rate_estimator",
        "",
        "off",
        "delay from the departure rate instead of timestamps",
    ),
    ("seed", "N", "1", "seed of the random drop decisions"),
];

/// A time in tc's syntax: a bare number is microseconds, as in tc.
fn tc_time(text: &str) -> Result<Nanos, ParseError> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return parse_duration(&format!("{text}us"));
    }
    parse_duration(text)
}

/// Handles a CoDel keyword; false if it is not one.
fn codel_option(words: &mut Words, keyword: &str, p: &mut CodelParams) -> Result<bool, SpecError> {
    match keyword {
        "target" => p.target = words.value(keyword, tc_time)?,
        "interval" => p.interval = words.value(keyword, tc_time)?,
        "ce_threshold" => p.ce_threshold = Some(words.value(keyword, tc_time)?),
        "ecn" => p.ecn = true,
        "noecn" => p.ecn = false,
        "mtu" => p.mtu = words.value(keyword, parse_size)? as u32,
        "variant" => {
            p.variant = words.value(keyword, |v| match v {
                "linux" => Ok(Variant::Linux),
                "rfc" => Ok(Variant::Rfc),
                _ => Err(format!("'{v}' is not a variant: expected linux or rfc")),
            })?
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn codel(words: &mut Words) -> Result<Codel, SpecError> {
    let mut params = CodelParams::default();
    let (mut limit, mut bytes) = (1000, None);
    while let Some(keyword) = words.next_keyword() {
        if keyword == "limit" {
            limit = words.value(keyword, parse_count)?;
        } else if keyword == "bytes" {
            bytes = Some(words.value(keyword, parse_size)?);
        } else if !codel_option(words, keyword, &mut params)? {
            return Err(words.unknown(keyword));
        }
    }
    Ok(Codel::new(params, limit).with_byte_limit(bytes))
}

/// Handles a flow-queue keyword (limit, flows, quantum, memory_limit) of
/// fq_codel or fq_pie; false if it is not one.
fn flow_queue_option(
    words: &mut Words,
    keyword: &str,
    (limit, flows, quantum, memory_limit): (&mut u64, &mut usize, &mut u32, &mut u64),
) -> Result<bool, SpecError> {
    match keyword {
        "limit" => *limit = words.value(keyword, parse_count)?,
        "flows" => *flows = words.value(keyword, parse_count)?.clamp(1, 65_536) as usize,
        "quantum" => *quantum = words.value(keyword, parse_size)?.max(1) as u32,
        "memory_limit" => *memory_limit = words.value(keyword, parse_size)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn fq_codel(words: &mut Words) -> Result<FqCodel, SpecError> {
    let mut p = FqCodelParams::default();
    while let Some(keyword) = words.next_keyword() {
        let queues = (
            &mut p.limit,
            &mut p.flows,
            &mut p.quantum,
            &mut p.memory_limit,
        );
        if flow_queue_option(words, keyword, queues)? {
            continue;
        }
        match keyword {
            "drop_batch" => p.drop_batch = words.value(keyword, parse_count)?.max(1) as u32,
            _ => {
                if !codel_option(words, keyword, &mut p.codel)? {
                    return Err(words.unknown(keyword));
                }
            }
        }
    }
    Ok(FqCodel::new(p))
}

fn pie(words: &mut Words) -> Result<Pie, SpecError> {
    let mut p = PieParams::default();
    while let Some(keyword) = words.next_keyword() {
        if keyword == "bytes" {
            p.byte_limit = Some(words.value(keyword, parse_size)?);
        } else if !pie_option(words, keyword, &mut p)? {
            return Err(words.unknown(keyword));
        }
    }
    Ok(Pie::new(p))
}

fn fq_pie(words: &mut Words) -> Result<FqPie, SpecError> {
    let mut p = FqPieParams::default();
    while let Some(keyword) = words.next_keyword() {
        let queues = (
            &mut p.pie.limit,
            &mut p.flows,
            &mut p.quantum,
            &mut p.memory_limit,
        );
        if flow_queue_option(words, keyword, queues)? {
            continue;
        }
        match keyword {
            "ecn_prob" => p.ecn_prob = words.value(keyword, parse_count)?.min(100) as u32,
            _ => {
                if !pie_option(words, keyword, &mut p.pie)? {
                    return Err(words.unknown(keyword));
                }
            }
        }
    }
    Ok(FqPie::new(p))
}

/// Handles a PIE keyword; false if it is not one.
fn pie_option(words: &mut Words, keyword: &str, p: &mut PieParams) -> Result<bool, SpecError> {
    {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?,
            "target" => p.target = words.value(keyword, tc_time)?,
            "tupdate" => p.tupdate = words.value(keyword, tc_time)?,
            "alpha" => p.alpha = words.value(keyword, parse_count)?.min(32) as u32,
            "beta" => p.beta = words.value(keyword, parse_count)?.min(32) as u32,
            "max_burst" => p.max_burst = words.value(keyword, tc_time)?,
            "ecn" => p.ecn = true,
            "noecn" => p.ecn = false,
            "bytemode" => p.bytemode = true,
            "nobytemode" => p.bytemode = false,
            "dq_rate_estimator" => p.dq_rate_estimator = true,
            "no_dq_rate_estimator" => p.dq_rate_estimator = false,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Ok(false),
        }
    }
    Ok(true)
}

fn probability(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 1.0 => Ok(p),
        _ => Err(format!(
            "'{text}' is not a probability: expected a number in (0, 1]"
        )),
    }
}

fn red(words: &mut Words) -> Result<Red, SpecError> {
    let (mut limit, mut min, mut max, mut burst) = (None, None, None, None);
    let (mut avpkt, mut unit) = (1000u32, Unit::Bytes);
    let (mut weight, mut max_p, mut bandwidth, mut seed) = (None, None, None, None);
    let mut flags = [false; 5];
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => limit = Some(words.value(keyword, parse_size)?),
            "min" => min = Some(words.value(keyword, parse_size)?),
            "max" => max = Some(words.value(keyword, parse_size)?),
            "avpkt" => avpkt = words.value(keyword, parse_size)?.clamp(1, 65_535) as u32,
            "burst" => burst = Some(words.value(keyword, parse_count)?),
            "weight" => {
                weight = Some(words.value(keyword, |v| match v.parse::<f64>() {
                    Ok(w) if w > 0.0 && w <= 1.0 => Ok(w),
                    _ => Err(format!(
                        "'{v}' is not a weight: expected a number in (0, 1]"
                    )),
                })?)
            }
            "probability" => max_p = Some(words.value(keyword, probability)?),
            "bandwidth" => bandwidth = Some(words.value(keyword, Rate::parse)?.bits_per_sec()),
            "packets" => unit = Unit::Packets,
            "ecn" => flags[0] = true,
            "harddrop" => flags[1] = true,
            "gentle" => flags[2] = true,
            "adaptive" => flags[3] = true,
            "bytemode" => flags[4] = true,
            "seed" => seed = Some(words.value(keyword, parse_count)?),
            _ => return Err(words.unknown(keyword)),
        }
    }
    let limit = limit.ok_or_else(|| {
        SpecError("red: needs 'limit', e.g. 'red limit 400kb min 30kb max 90kb avpkt 1000'".into())
    })?;
    let mut p = RedParams::new(limit, min, max, burst, unit, avpkt)
        .map_err(|e| SpecError(format!("red: {e}")))?;
    p.weight = weight.unwrap_or(p.weight);
    p.max_p = max_p.unwrap_or(p.max_p);
    p.bandwidth = bandwidth.unwrap_or(p.bandwidth);
    p.seed = seed.unwrap_or(p.seed);
    [p.ecn, p.harddrop, p.gentle, p.adaptive, p.bytemode] = flags;
    Ok(Red::new(p))
}

/// tc-cake's rtt presets: (keyword, interval); the target is 1/20 of it.
const CAKE_RTT_PRESETS: &[(&str, Nanos)] = &[
    ("datacentre", 100_000),
    ("lan", 1_000_000),
    ("metro", 10_000_000),
    ("regional", 30_000_000),
    ("internet", 100_000_000),
    ("oceanic", 300_000_000),
    ("satellite", 1_000_000_000),
    ("interplanetary", 1_000_000_000_000),
];

fn cake(words: &mut Words) -> Result<Cake, SpecError> {
    let mut p = CakeParams::default();
    let mut target_given = false;
    while let Some(keyword) = words.next_keyword() {
        let tins = [
            ("besteffort", TinMode::Besteffort),
            ("precedence", TinMode::Precedence),
            ("diffserv8", TinMode::Diffserv8),
            ("diffserv4", TinMode::Diffserv4),
            ("diffserv3", TinMode::Diffserv3),
        ];
        if let Some((_, mode)) = tins.iter().find(|(k, _)| *k == keyword) {
            p.tin_mode = *mode;
            continue;
        }
        if let Some((_, mode)) = flow_mode::NAMES.iter().find(|(k, _)| *k == keyword) {
            p.flow_mode = *mode;
            continue;
        }
        if let Some((_, rtt)) = CAKE_RTT_PRESETS.iter().find(|(k, _)| *k == keyword) {
            p.rtt = *rtt;
            if !target_given {
                p.target = (rtt / 20).max(1000);
            }
            continue;
        }
        if let Some((_, overhead, framing, mpu)) =
            Overhead::PRESETS.iter().find(|(k, ..)| *k == keyword)
        {
            p.overhead.overhead = *overhead;
            p.overhead.framing = *framing;
            if let Some(mpu) = mpu {
                p.overhead.mpu = *mpu;
            }
            continue;
        }
        match keyword {
            "bandwidth" => {
                p.bandwidth = words.value(keyword, |v| {
                    if v == "unlimited" {
                        Ok(0)
                    } else {
                        Rate::parse(v).map(|r| r.bits_per_sec() / 8)
                    }
                })?
            }
            "unlimited" => p.bandwidth = 0,
            "rtt" => {
                p.rtt = words.value(keyword, tc_time)?.max(1000);
                if !target_given {
                    p.target = (p.rtt / 20).max(1000);
                }
            }
            "target" => {
                p.target = words.value(keyword, tc_time)?.max(1000);
                target_given = true;
            }
            "overhead" => {
                p.overhead.overhead = words.value(keyword, |v| match v.parse::<i32>() {
                    Ok(n) if (-64..=256).contains(&n) => Ok(n),
                    _ => Err(format!("'{v}' is not an overhead: expected bytes from -64 to 256")),
                })?
            }
            "mpu" => p.overhead.mpu = words.value(keyword, parse_count)?.min(256) as u32,
            "atm" => p.overhead.framing = Framing::Atm,
            "ptm" => p.overhead.framing = Framing::Ptm,
            "noatm" => p.overhead.framing = Framing::None,
            "raw" => p.overhead = Overhead::default(),
            "ether-vlan" => p.overhead.overhead += 4,
            "memlimit" => p.memlimit = Some(words.value(keyword, parse_size)?),
            "ingress" => p.ingress = true,
            "egress" => p.ingress = false,
            "ack-filter" => p.ack_filter = AckFilter::On,
            "ack-filter-aggressive" => p.ack_filter = AckFilter::Aggressive,
            "no-ack-filter" => p.ack_filter = AckFilter::Off,
            "wash" => p.wash = true,
            "nowash" => p.wash = false,
            "split-gso" | "no-split-gso" | "nonat" => {}
            "nat" => {
                return Err(SpecError(
                    "cake: 'nat' needs connection tracking; an emu link sees its namespace's own addresses, so leave it out".into(),
                ))
            }
            "autorate-ingress" => {
                return Err(SpecError(
                    "cake: 'autorate-ingress' is not implemented; give 'bandwidth' instead".into(),
                ))
            }
            "sce" => p.sce = 1,
            "sce-single" => p.sce = 65_535,
            "no-sce" => p.sce = 0,
            "sce-thresh" => {
                p.sce = words.value(keyword, |v| match v.parse::<u32>() {
                    Ok(n) if (1..=1024).contains(&n) => Ok(n),
                    _ => Err(format!("'{v}' is not a divisor: expected 1 to 1024")),
                })?
            }
            "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    Ok(Cake::new(p))
}

fn dualpi2(words: &mut Words) -> Result<DualPi2, SpecError> {
    let mut p = DualPi2Params::default();
    let (mut max_rtt, mut typical_rtt, mut memlimit) = (None, None, None);
    let gain = |v: &str| match v.parse::<f64>() {
        Ok(hz) if hz > 0.0 && hz < 8_388_608.0 => Ok(gain_from_hz(hz)),
        _ => Err(format!(
            "'{v}' is not a gain: expected a positive number of Hz"
        )),
    };
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?.max(1),
            "memlimit" => memlimit = Some(words.value(keyword, parse_size)?),
            "target" => p.target = words.value(keyword, tc_time)?,
            "tupdate" => p.tupdate = words.value(keyword, tc_time)?.max(1000),
            "alpha" => p.alpha = words.value(keyword, gain)?,
            "beta" => p.beta = words.value(keyword, gain)?,
            "max_rtt" => max_rtt = Some(words.value(keyword, tc_time)?),
            "typical_rtt" => typical_rtt = Some(words.value(keyword, tc_time)?),
            "coupling_factor" => {
                p.coupling = words.value(keyword, |v| match v.parse::<u8>() {
                    Ok(k) if k >= 1 => Ok(k),
                    _ => Err(format!("'{v}' is not a coupling factor: expected 1 to 255")),
                })?
            }
            "step_thresh" => {
                p.step = words.value(keyword, |v| {
                    let packets = ["p", "pkt", "pkts", "packet", "packets"]
                        .iter()
                        .find_map(|suffix| v.strip_suffix(suffix))
                        .and_then(|n| n.parse::<u32>().ok());
                    match packets {
                        Some(n) => Ok(Step::Packets(n)),
                        None => tc_time(v).map(Step::Time).map_err(|e| e.to_string()),
                    }
                })?
            }
            "min_qlen_step" => {
                p.min_qlen_step = words.value(keyword, parse_count)?.min(u32::MAX as u64) as u32
            }
            "drop_on_overload" => p.drop_overload = true,
            "overflow" => p.drop_overload = false,
            "drop_enqueue" => p.drop_early = true,
            "drop_dequeue" => p.drop_early = false,
            "classic_protection" => {
                p.classic_protection =
                    words.value(keyword, |v| match v.trim_end_matches('%').parse::<u8>() {
                        Ok(n) if n <= 100 => Ok(n),
                        _ => Err(format!("'{v}' is not a percentage: expected 0 to 100")),
                    })?
            }
            "l4s_ect" => p.ecn_mask = 1,
            "any_ect" => p.ecn_mask = 3,
            "split_gso" | "no_split_gso" => {}
            "tshift" => p.scheduler = Scheduler::TimeShifted(words.value(keyword, tc_time)?),
            "uncoupled" => p.uncoupled = true,
            "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    p.tune_for_rtt(max_rtt, typical_rtt)
        .map_err(|e| SpecError(format!("dualpi2: {e}")))?;
    p.memory_limit = memlimit.unwrap_or(p.limit * 2 * p.mtu as u64);
    Ok(DualPi2::new(p))
}

/// Keyword/value pairs after the discipline name, consumed one at a time.
pub struct Words<'a> {
    discipline: &'a str,
    words: std::slice::Iter<'a, &'a str>,
}

impl<'a> Words<'a> {
    pub fn next_keyword(&mut self) -> Option<&'a str> {
        self.words.next().copied()
    }

    /// The value after `keyword`, read by `parse`; errors name both.
    pub fn value<T, E: fmt::Display>(
        &mut self,
        keyword: &str,
        parse: impl Fn(&str) -> Result<T, E>,
    ) -> Result<T, SpecError> {
        let text = self
            .words
            .next()
            .ok_or_else(|| SpecError(format!("{}: '{keyword}' needs a value", self.discipline)))?;
        parse(text).map_err(|e| SpecError(format!("{}: {keyword}: {e}", self.discipline)))
    }

    pub fn unknown(&self, keyword: &str) -> SpecError {
        let known: Vec<&str> = catalogue()
            .iter()
            .find(|d| d.name == self.discipline)
            .map(|d| d.all_options().map(|o| o.0).collect())
            .unwrap_or_default();
        let accepted = if known.is_empty() {
            "no options".to_string()
        } else {
            known.join(", ")
        };
        SpecError(format!(
            "{}: unknown option '{keyword}' (it accepts: {accepted})",
            self.discipline
        ))
    }
}

fn fifo_limits(words: &mut Words) -> Result<Limits, SpecError> {
    let mut limits = Limits::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "packets" | "limit" => limits.packets = Some(words.value(keyword, parse_count)?),
            "bytes" => limits.bytes = Some(words.value(keyword, parse_size)?),
            _ => return Err(words.unknown(keyword)),
        }
    }
    if limits.packets.is_none() && limits.bytes.is_none() {
        return Err(SpecError(format!(
            "{}: needs a limit, e.g. '{} packets 100' or '{} bytes 150000'",
            words.discipline, words.discipline, words.discipline
        )));
    }
    Ok(limits)
}

/// Builds a queue from its specification.
pub fn parse_queue(spec: &str) -> Result<Box<dyn Queue>, SpecError> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let Some((&name, rest)) = words.split_first() else {
        return Err(SpecError(format!(
            "empty queue specification (known disciplines: {})",
            names()
        )));
    };
    let mut words = Words {
        discipline: name,
        words: rest.iter(),
    };
    let queue: Box<dyn Queue> = match name {
        "infinite" => {
            if let Some(keyword) = words.next_keyword() {
                return Err(words.unknown(keyword));
            }
            Box::new(Infinite::default())
        }
        "droptail" => Box::new(Bounded::new(fifo_limits(&mut words)?, Overflow::Tail)),
        "drophead" => Box::new(Bounded::new(fifo_limits(&mut words)?, Overflow::Head)),
        "codel" => Box::new(codel(&mut words)?),
        "fq_codel" => Box::new(fq_codel(&mut words)?),
        "pie" => Box::new(pie(&mut words)?),
        "fq_pie" => Box::new(fq_pie(&mut words)?),
        "red" => Box::new(red(&mut words)?),
        "cake" => Box::new(cake(&mut words)?),
        "dualpi2" => Box::new(dualpi2(&mut words)?),
        _ => {
            return Err(SpecError(format!(
                "unknown queue discipline '{name}' (known: {})",
                names()
            )))
        }
    };
    Ok(queue)
}

fn names() -> String {
    catalogue()
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_each_fifo() {
        assert_eq!(parse_queue("infinite").unwrap().describe(), "infinite");
        assert_eq!(
            parse_queue("droptail packets 100").unwrap().describe(),
            "droptail packets 100"
        );
        assert_eq!(
            parse_queue("drophead bytes 64kb").unwrap().describe(),
            "drophead bytes 65536"
        );
        assert_eq!(
            parse_queue("droptail packets 10 bytes 15000")
                .unwrap()
                .describe(),
            "droptail packets 10 bytes 15000"
        );
    }

    #[test]
    fn builds_the_aqms_with_tc_keywords() {
        assert_eq!(
            parse_queue("codel").unwrap().describe(),
            "codel limit 1000 target 5 ms interval 100 ms noecn".replace(" ms", "ms")
        );
        assert_eq!(
            parse_queue("codel target 5ms ecn ce_threshold 2500 variant rfc")
                .unwrap()
                .describe(),
            "codel limit 1000 target 5ms interval 100ms ce_threshold 2.5ms ecn variant rfc"
        );
        assert!(parse_queue("fq_codel flows 16 quantum 300 noecn")
            .unwrap()
            .describe()
            .starts_with("fq_codel limit 10240 flows 16 quantum 300"));
        assert_eq!(
            parse_queue("pie limit 1000 target 20ms noecn")
                .unwrap()
                .describe(),
            "pie limit 1000 target 20ms tupdate 15ms alpha 2 beta 20 max_burst 150ms noecn"
        );
        let err = |s| parse_queue(s).err().unwrap().0;
        assert!(err("codel target soon").contains("codel: target: 'soon'"));
        assert!(err("codel variant bsd").contains("'bsd' is not a variant"));
        assert!(err("pie frobs 3")
            .contains("unknown option 'frobs' (it accepts: limit, bytes, target, tupdate"));
    }

    /// What `emu queues` documents is what the parser takes: every keyword
    /// of every discipline, with a value of its stated form.
    #[test]
    fn every_documented_option_is_accepted() {
        for d in catalogue() {
            for (keywords, form, _, _) in d.all_options() {
                let value = match *form {
                    "" => "",
                    "TIME" => "5ms",
                    "linux|rfc" => "rfc",
                    "RATE" | "RATE|unlimited" => "10mbit",
                    "HZ" => "0.5",
                    "P" => "0.1",
                    "W" => "0.002",
                    "PERCENT" | "K" => "2",
                    "TIME|Np" => "2p",
                    _ => "1500",
                };
                for keyword in keywords.split(" | ") {
                    // Values a discipline needs in a narrower range.
                    let value = match (d.name, keyword) {
                        ("red", "limit") => "400kb",
                        ("red", "min") => "20kb",
                        ("red", "max") => "100kb",
                        ("cake", "sce-thresh") => "4",
                        ("cake", "overhead") => "38",
                        _ => value,
                    };
                    let required = if d.name == "red" {
                        " limit 400kb min 30kb max 90kb"
                    } else {
                        ""
                    };
                    let spec = format!("{}{required} {keyword} {value}", d.name);
                    let spec = if d.options.first() == Some(&FIFO_OPTIONS) && keyword != "packets" {
                        format!("{spec} packets 10")
                    } else {
                        spec
                    };
                    assert!(
                        parse_queue(&spec).is_ok(),
                        "'{spec}': {:?}",
                        parse_queue(&spec).err()
                    );
                }
            }
        }
    }

    #[test]
    fn builds_red_cake_dualpi2_and_fq_pie() {
        let describe = |s| parse_queue(s).unwrap().describe();
        assert!(
            describe("red limit 400kb min 30kb max 90kb avpkt 1000 ecn gentle")
                .starts_with("red limit 409600 min 30720 max 92160 avpkt 1000 probability 0.02")
        );
        let cake =
            describe("cake bandwidth 10mbit triple-isolate sce diffserv4 rtt 50ms atm overhead 32");
        assert!(
            cake.starts_with("cake bandwidth 10mbit diffserv4 triple-isolate rtt 50ms target 2.5ms overhead 32 mpu 0 atm"),
            "{cake}"
        );
        assert!(cake.ends_with(" sce"), "{cake}");
        assert!(describe("cake sce-thresh 4 ethernet").contains("overhead 38 mpu 84"));
        assert!(describe("cake sce-single").ends_with("sce-single"));
        let dualpi2 = describe("dualpi2 target 15ms coupling_factor 2 step_thresh 1ms");
        assert!(dualpi2.starts_with("dualpi2 limit 10000 memlimit 30000000 target 15ms tupdate 16ms alpha 0.16015625 beta 3.19921875 coupling_factor 2 step_thresh 1ms"), "{dualpi2}");
        assert!(describe("dualpi2 step_thresh 5p any_ect overflow").contains("step_thresh 5packets min_qlen_step 0 overflow drop_dequeue classic_protection 10 any_ect"));
        assert!(describe("dualpi2 max_rtt 100ms typical_rtt 15ms")
            .contains("target 15ms tupdate 15ms alpha 0.1484375 beta 3"));
        assert!(describe("fq_pie ecn target 10ms").contains("target 10ms tupdate 15ms"));
        let err = |s| parse_queue(s).err().unwrap().0;
        assert!(err("red limit 100kb").contains("needs 'min' or 'max'"));
        assert!(err("red min 30kb").contains("needs 'limit'"));
        assert!(err("red limit 100kb min 90kb max 30kb").contains("min (92160) must be below max"));
        assert!(err("cake nat").contains("connection tracking"));
        assert!(err("cake sce-thresh 0").contains("expected 1 to 1024"));
        assert!(err("cake bandwidth fast").contains("bandwidth: 'fast'"));
        assert!(err("dualpi2 coupling_factor 0").contains("coupling factor"));
        assert!(err("dualpi2 max_rtt 10ms typical_rtt 20ms")
            .contains("typical_rtt must be at most max_rtt"));
    }

    #[test]
    fn errors_name_the_keyword() {
        let err = |s| parse_queue(s).err().unwrap().0;
        assert!(err("droptail packets").contains("'packets' needs a value"));
        assert!(err("droptail packets ten").contains("packets: 'ten'"));
        assert!(
            err("droptail flows 3").contains("unknown option 'flows' (it accepts: packets, bytes)")
        );
        assert!(err("droptail").contains("needs a limit"));
        assert!(err("sfq").contains("unknown queue discipline 'sfq'"));
        assert!(err("").contains("empty"));
    }
}
