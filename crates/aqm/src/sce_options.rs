//! The options of the SCE project's lightweight queues (twin_codel_af and
//! lfq_cobalt), which tc configures with cake's attributes and keywords:
//! a shaper rate, link compensation, `rtt`, `target` and the SCE divisor.
//! What an option leaves unset keeps the queue's own default, so each
//! queue resolves them itself ([`crate::twin_codel_af`], [`crate::lfq_cobalt`]).

use crate::cake::overhead::{Overhead, OverheadWords};
use crate::grammar::{sce_divisor, shaper_rate, tc_time, Opt, SpecError, Words};
use crate::sce_cobalt::SceCobaltParams;
use emu_core::rate::Rate;
use emu_core::size::{parse_count, parse_size};
use emu_core::time::Nanos;
use serde::{Deserialize, Serialize};

/// The packet limit both references set (and do not enforce).
pub const LIMIT: u64 = 10_240;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceQueueParams {
    /// Shaper rate in bytes per second; 0 = unlimited.
    pub bandwidth: u64,
    pub overhead: Overhead,
    /// CE interval of the normal class; None: the queue's default.
    pub rtt: Option<Nanos>,
    /// CE target of the normal class; None: the queue's default.
    pub target: Option<Nanos>,
    /// SCE divisor (SCE interval = CE interval / N, 0 off); None: default.
    pub sce: Option<u32>,
    /// Packets held at most; arrivals beyond it are dropped.
    pub limit: u64,
    /// Bytes held at most (lfq_cobalt's `memlimit`); None: no limit.
    pub memlimit: Option<u64>,
    /// Device MTU in IP bytes; lfq_cobalt's per-flow credit is this plus
    /// the link header (the kernel's psched_mtu).
    pub mtu: u32,
    /// Link-layer header bytes, set from the link, not by an option.
    #[serde(default)]
    pub link_header: u32,
    pub seed: u64,
}

impl Default for SceQueueParams {
    fn default() -> Self {
        SceQueueParams {
            bandwidth: 0,
            overhead: Overhead::default(),
            rtt: None,
            target: None,
            sce: None,
            limit: LIMIT,
            memlimit: None,
            mtu: 1500,
            link_header: 0,
            seed: 1,
        }
    }
}

impl SceQueueParams {
    /// The queue as tc would print it: `name`, the shaper, and the normal
    /// class's constants `c` as the reference dumps them.
    pub fn describe(&self, name: &str, c: &SceCobaltParams) -> String {
        let ms = |ns: Nanos| emu_core::time::format_duration(ns).replace(' ', "");
        let bandwidth = Rate::from_bits_per_sec(self.bandwidth * 8)
            .map_or("unlimited".to_string(), |r| r.to_string());
        let mut text = format!(
            "{name} bandwidth {bandwidth} rtt {} target {}{}",
            ms(c.ce_interval),
            ms(c.ce_target),
            self.overhead.describe()
        );
        text += &match c.sce_interval {
            0 => " no-sce".to_string(),
            i => format!(" sce-thresh {}", c.ce_interval / i),
        };
        text += &format!(" limit {}", self.limit);
        if let Some(m) = self.memlimit {
            text += &format!(" memlimit {m}");
        }
        text
    }
}

/// The options both queues take, for `emu queues`.
pub(crate) const OPTIONS: &[Opt] = &[
    (
        "bandwidth",
        "RATE|unlimited",
        "unlimited",
        "the queue's own shaper (as cake's: see docs/guide.md)",
    ),
    (
        "rtt",
        "TIME",
        "100ms",
        "CE interval; also target = rtt/20 unless 'target' is given; BLUE acts at 4*rtt",
    ),
    (
        "target",
        "TIME",
        "5ms",
        "CE target; the SCE target is half of it",
    ),
    (
        "sce | no-sce",
        "",
        "twin_codel_af: sce-thresh 4; lfq_cobalt: no-sce",
        "SCE marking on (interval = rtt) or off",
    ),
    (
        "sce-thresh",
        "N",
        "as above",
        "SCE on a CoDel schedule of interval rtt/N",
    ),
    (
        "limit",
        "PACKETS",
        "10240",
        "most packets held (the reference sets it but never drops for it)",
    ),
    (
        "mtu",
        "BYTES",
        "1500",
        "device MTU (lfq_cobalt's per-flow credit)",
    ),
    ("seed", "N", "1", "seed of BLUE's random drops"),
];

/// lfq_cobalt's one more option.
pub(crate) const MEMORY_OPTIONS: &[Opt] = &[(
    "memlimit",
    "SIZE",
    "none",
    "most bytes held; beyond it the oldest bulk packets are dropped",
)];

/// Reads the options; `memory` says whether `memlimit` is accepted.
pub(crate) fn parse(words: &mut Words, memory: bool) -> Result<SceQueueParams, SpecError> {
    let mut p = SceQueueParams::default();
    let mut link = OverheadWords::default();
    let mut target_given = false;
    while let Some(keyword) = words.next_keyword() {
        if link.take(keyword, words)? {
            continue;
        }
        match keyword {
            "bandwidth" => p.bandwidth = words.value(keyword, shaper_rate)?,
            "unlimited" => p.bandwidth = 0,
            "rtt" => {
                let rtt = words.value(keyword, tc_time)?.max(1000);
                p.rtt = Some(rtt);
                if !target_given {
                    p.target = Some((rtt / 20).max(1000));
                }
            }
            "target" => {
                p.target = Some(words.value(keyword, tc_time)?.max(1000));
                target_given = true;
            }
            "sce" => p.sce = Some(1),
            "no-sce" => p.sce = Some(0),
            "sce-thresh" => p.sce = Some(words.value(keyword, sce_divisor)?),
            "limit" => {
                p.limit = words.value(keyword, |v| match parse_count(v) {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(format!(
                        "'{v}' is not a limit: expected a whole number of packets above 0"
                    )),
                })?
            }
            "memlimit" if memory => p.memlimit = Some(words.value(keyword, parse_size)?),
            "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    p.overhead = link.finish();
    Ok(p)
}
