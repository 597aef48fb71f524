//! cake's options in tc-cake's syntax: keywords for tins, isolation, rtt
//! presets and link framing, as `tc qdisc add ... cake` takes them.

use super::overhead::OverheadWords;
use super::tins::TinMode;
use super::{flow_mode, AckFilter, CakeParams};
use crate::grammar::{sce_divisor, shaper_rate, tc_time, Opt, SpecError, Words};
use emu_core::size::{parse_count, parse_size};
use emu_core::time::Nanos;

pub(crate) const OPTIONS: &[Opt] = &[
    ("bandwidth", "RATE|unlimited", "unlimited", "cake's own shaper (see docs/guide.md: with the link rate)"),
    ("besteffort | precedence | diffserv8 | diffserv4 | diffserv3", "", "diffserv3", "priority tins by DSCP"),
    ("flowblind | srchost | dsthost | hosts | flows | dual-srchost | dual-dsthost | triple-isolate", "", "triple-isolate", "flow isolation"),
    ("rtt", "TIME", "100ms", "interval; target = rtt/20"),
    ("target", "TIME", "5ms", "COBALT target (raised to 1.5 MTU times on slow links)"),
    ("datacentre | lan | metro | regional | internet | oceanic | satellite | interplanetary", "", "internet", "rtt presets"),
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

/// tc-cake's rtt presets: (keyword, interval); the target is 1/20 of it.
const RTT_PRESETS: &[(&str, Nanos)] = &[
    ("datacentre", 100_000),
    ("lan", 1_000_000),
    ("metro", 10_000_000),
    ("regional", 30_000_000),
    ("internet", 100_000_000),
    ("oceanic", 300_000_000),
    ("satellite", 1_000_000_000),
    ("interplanetary", 1_000_000_000_000),
];

/// Reads cake's options, as tc-cake takes them.
// Long: one arm per tc-cake keyword, in tc-cake's order: the keywords read as a table.
pub(crate) fn parse(words: &mut Words) -> Result<CakeParams, SpecError> {
    let mut p = CakeParams::default();
    let mut target_given = false;
    // tc-cake sends an overhead (the kernel's CAKE_FLAG_OVERHEAD) for
    // `overhead` and every named link type; `raw` clears the flag again.
    let mut link = OverheadWords::default();
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
        if let Some((_, rtt)) = RTT_PRESETS.iter().find(|(k, _)| *k == keyword) {
            p.rtt = *rtt;
            if !target_given {
                p.target = (rtt / 20).max(1000);
            }
            continue;
        }
        if link.take(keyword, words)? {
            continue;
        }
        match keyword {
            "bandwidth" => p.bandwidth = words.value(keyword, shaper_rate)?,
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
            "sce-thresh" => p.sce = words.value(keyword, sce_divisor)?,
            "mtu" => p.mtu = words.value(keyword, parse_size)?.clamp(68, 65_535) as u32,
            "seed" => p.seed = words.value(keyword, parse_count)?,
            _ => return Err(words.unknown(keyword)),
        }
    }
    p.overhead = link.finish();
    Ok(p)
}
