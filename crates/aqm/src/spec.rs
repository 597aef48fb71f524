//! Queue specifications in `tc qdisc` syntax: a discipline name followed by
//! keyword/value pairs, e.g. `droptail packets 100` or `droptail bytes 64kb`.
//! Every error names the keyword and says what it accepts.

use crate::codel::{Codel, CodelParams, Variant};
use crate::fifo::{Bounded, Infinite, Limits, Overflow};
use crate::fq_codel::{FqCodel, FqCodelParams};
use crate::pie::{Pie, PieParams};
use crate::Queue;
use emu_core::error::ParseError;
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
            options: &[FQ_CODEL_OWN, CODEL_SHARED],
        },
        Discipline {
            name: "pie",
            summary: "PIE (RFC 8033) with Linux's arithmetic and derandomization",
            options: &[PIE_OPTIONS],
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
        "ecn | noecn",
        "",
        "noecn",
        "mark ECT packets instead of dropping them",
    ),
];

const FQ_CODEL_OWN: &[Opt] = &[
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

const PIE_OPTIONS: &[Opt] = &[
    (
        "limit",
        "PACKETS",
        "1000",
        "most packets held (tail drop beyond)",
    ),
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
    let mut limit = 1000;
    while let Some(keyword) = words.next_keyword() {
        if keyword == "limit" {
            limit = words.value(keyword, parse_count)?;
        } else if !codel_option(words, keyword, &mut params)? {
            return Err(words.unknown(keyword));
        }
    }
    Ok(Codel::new(params, limit))
}

fn fq_codel(words: &mut Words) -> Result<FqCodel, SpecError> {
    let mut p = FqCodelParams::default();
    while let Some(keyword) = words.next_keyword() {
        match keyword {
            "limit" => p.limit = words.value(keyword, parse_count)?,
            "flows" => p.flows = words.value(keyword, parse_count)?.clamp(1, 65_536) as usize,
            "quantum" => p.quantum = words.value(keyword, parse_size)?.max(1) as u32,
            "memory_limit" => p.memory_limit = words.value(keyword, parse_size)?,
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
            _ => return Err(words.unknown(keyword)),
        }
    }
    Ok(Pie::new(p))
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
            .contains("unknown option 'frobs' (it accepts: limit, target, tupdate"));
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
                    _ => "1500",
                };
                for keyword in keywords.split(" | ") {
                    let spec = format!("{} {keyword} {value}", d.name);
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
