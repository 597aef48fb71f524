//! Queue specifications in `tc qdisc` syntax: a discipline name followed by
//! keyword/value pairs, e.g. `droptail packets 100` or `cake bandwidth
//! 10mbit diffserv4`. Text is parsed once into a [`QueueSpec`], a typed
//! value that travels (to the shells, into experiment files and log
//! headers through serde) and builds its queue where the link is built.
//!
//! Each discipline's options and parser sit beside the discipline; this
//! module holds what they share: the word-and-unit grammar
//! ([`crate::grammar`]), the registry `emu queues` prints ([`catalogue`]), and Mahimahi's spelling of
//! queue arguments as one more front end ([`mahimahi`]).
//!
//! ```
//! use aqm::QueueSpec;
//!
//! let spec = QueueSpec::parse("codel target 5ms ecn").unwrap();
//! assert_eq!(spec.name(), "codel");
//! let queue = spec.build();
//! assert!(queue.describe().starts_with("codel limit 1000 target 5ms"));
//! // Every error names the keyword and what it accepts.
//! let err = QueueSpec::parse("droptail flows 3").unwrap_err();
//! assert!(err.0.contains("unknown option 'flows' (it accepts: packets, bytes)"));
//! ```

pub mod catalogue;
pub mod mahimahi;
pub mod time_scale;

use crate::cake::{Cake, CakeParams};
use crate::codel::{Codel, CodelQueueParams};
use crate::curvy_red::{CurvyRed, CurvyRedParams};
use crate::dualpi2::{DualPi2, DualPi2Params};
use crate::dualq::cred::{CredParams, DualqCred};
use crate::dualq::pi2::{DualqPi2, Pi2Params};
use crate::dualq::pie::{CoupledPieParams, DualqPie};
use crate::dualq::uncoupled::{Uncoupled, UncoupledParams};
use crate::fifo::{Bounded, Infinite, Limits, Overflow};
use crate::fq_codel::{FqCodel, FqCodelParams};
use crate::fq_pie::{FqPie, FqPieParams};
pub use crate::grammar::SpecError;
use crate::grammar::Words;
use crate::instant_red::{InstantRed, InstantRedParams};
use crate::lfq_cobalt::LfqCobalt;
use crate::pie::{Pie, PieParams};
use crate::red::{Red, RedParams};
use crate::sce_options::SceQueueParams;
use crate::twin_codel_af::TwinCodelAf;
use crate::Queue;
use serde::{Deserialize, Serialize};

/// A queue discipline and all its parameters, resolved (defaults filled
/// in, derived values such as RED's weight computed), ready to build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "discipline", rename_all = "snake_case")]
pub enum QueueSpec {
    /// An unbounded FIFO.
    Infinite,
    /// A FIFO that drops arrivals beyond its limits.
    Droptail(Limits),
    /// A FIFO that drops its oldest packets to make room.
    Drophead(Limits),
    Codel(CodelQueueParams),
    FqCodel(FqCodelParams),
    Pie(PieParams),
    FqPie(FqPieParams),
    Red(RedParams),
    Cake(CakeParams),
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Params),
    TwinCodelAf(SceQueueParams),
    LfqCobalt(SceQueueParams),
    InstantRed(InstantRedParams),
    DualqPie(CoupledPieParams),
    DualqCred(CredParams),
    DualqPi2(Pi2Params),
    DualqUncoupled(UncoupledParams),
    CurvyRed(CurvyRedParams),
}

impl QueueSpec {
    /// Reads a specification such as `fq_codel flows 16 quantum 300`.
    pub fn parse(text: &str) -> Result<QueueSpec, SpecError> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some((&name, rest)) = words.split_first() else {
            return Err(SpecError(format!(
                "empty queue specification (known disciplines: {})",
                catalogue::names()
            )));
        };
        let mut words = Words::new(name, catalogue::options_of(name), rest);
        Ok(match name {
            "infinite" => {
                if let Some(keyword) = words.next_keyword() {
                    return Err(words.unknown(keyword));
                }
                QueueSpec::Infinite
            }
            "droptail" => QueueSpec::Droptail(crate::fifo::parse(&mut words)?),
            "drophead" => QueueSpec::Drophead(crate::fifo::parse(&mut words)?),
            "pfifo" => QueueSpec::Droptail(crate::fifo::parse_pfifo(&mut words)?),
            "codel" => QueueSpec::Codel(crate::codel::parse(&mut words)?),
            "fq_codel" => QueueSpec::FqCodel(crate::fq_codel::parse(&mut words)?),
            "pie" => QueueSpec::Pie(crate::pie::parse(&mut words)?),
            "fq_pie" => QueueSpec::FqPie(crate::fq_pie::parse(&mut words)?),
            "red" => QueueSpec::Red(crate::red::parse(&mut words)?),
            "cake" => QueueSpec::Cake(crate::cake::options::parse(&mut words)?),
            "dualpi2" => QueueSpec::DualPi2(crate::dualpi2::parse(&mut words)?),
            "twin_codel_af" => {
                QueueSpec::TwinCodelAf(crate::sce_options::parse(&mut words, false)?)
            }
            "lfq_cobalt" => QueueSpec::LfqCobalt(crate::sce_options::parse(&mut words, true)?),
            "instant_red" => QueueSpec::InstantRed(crate::instant_red::parse(&mut words)?),
            "dualq_pie" => QueueSpec::DualqPie(crate::dualq::pie::parse(&mut words)?),
            "dualq_cred" => QueueSpec::DualqCred(crate::dualq::cred::parse(&mut words)?),
            "dualq_pi2" => QueueSpec::DualqPi2(crate::dualq::pi2::parse(&mut words)?),
            "dualq_uncoupled" => {
                QueueSpec::DualqUncoupled(crate::dualq::uncoupled::parse(&mut words)?)
            }
            "curvy_red" => QueueSpec::CurvyRed(crate::curvy_red::parse(&mut words)?),
            _ => {
                return Err(SpecError(format!(
                    "unknown queue discipline '{name}' (known: {})",
                    catalogue::names()
                )))
            }
        })
    }

    /// The discipline's name, as written in a specification.
    pub fn name(&self) -> &'static str {
        match self {
            QueueSpec::Infinite => "infinite",
            QueueSpec::Droptail(_) => "droptail",
            QueueSpec::Drophead(_) => "drophead",
            QueueSpec::Codel(_) => "codel",
            QueueSpec::FqCodel(_) => "fq_codel",
            QueueSpec::Pie(_) => "pie",
            QueueSpec::FqPie(_) => "fq_pie",
            QueueSpec::Red(_) => "red",
            QueueSpec::Cake(_) => "cake",
            QueueSpec::DualPi2(_) => "dualpi2",
            QueueSpec::TwinCodelAf(_) => "twin_codel_af",
            QueueSpec::LfqCobalt(_) => "lfq_cobalt",
            QueueSpec::InstantRed(_) => "instant_red",
            QueueSpec::DualqPie(_) => "dualq_pie",
            QueueSpec::DualqCred(_) => "dualq_cred",
            QueueSpec::DualqPi2(_) => "dualq_pi2",
            QueueSpec::DualqUncoupled(_) => "dualq_uncoupled",
            QueueSpec::CurvyRed(_) => "curvy_red",
        }
    }

    /// The rate in bit/s of the queue's own shaper, for disciplines that
    /// pace what they send (cake with `bandwidth`); None for the others,
    /// which send as fast as the link takes.
    pub fn shaper_bps(&self) -> Option<u64> {
        match self {
            QueueSpec::Cake(p) if p.bandwidth > 0 => Some(p.bandwidth * 8),
            QueueSpec::TwinCodelAf(p) | QueueSpec::LfqCobalt(p) if p.bandwidth > 0 => {
                Some(p.bandwidth * 8)
            }
            _ => None,
        }
    }

    /// The specification as it runs on a device with this link layer.
    /// Cake's `mtu` is the device MTU in IP bytes, and the kernel's cake
    /// works with it plus the hard header (`psched_mtu()`), so its MTU time
    /// and buffer unit become those of 1514 bytes on Ethernet. Every other
    /// byte option (limits, quanta, the `mtu` thresholds of codel, pie and
    /// dualpi2) is already in frame bytes (see [`emu_core::size`]) and stays
    /// as written.
    pub fn on_link_layer(mut self, link_layer: emu_core::size::LinkLayer) -> QueueSpec {
        let header = link_layer.header_bytes() as u32;
        match &mut self {
            QueueSpec::Cake(p) => p.link_header = header,
            QueueSpec::TwinCodelAf(p) | QueueSpec::LfqCobalt(p) => p.link_header = header,
            _ => {}
        }
        self
    }

    /// A new, empty queue with these parameters.
    pub fn build(&self) -> Box<dyn Queue> {
        match self {
            QueueSpec::Infinite => Box::new(Infinite::default()),
            QueueSpec::Droptail(limits) => Box::new(Bounded::new(*limits, Overflow::Tail)),
            QueueSpec::Drophead(limits) => Box::new(Bounded::new(*limits, Overflow::Head)),
            QueueSpec::Codel(p) => {
                Box::new(Codel::new(p.codel.clone(), p.limit).with_byte_limit(p.byte_limit))
            }
            QueueSpec::FqCodel(p) => Box::new(FqCodel::new(p.clone())),
            QueueSpec::Pie(p) => Box::new(Pie::new(p.clone())),
            QueueSpec::FqPie(p) => Box::new(FqPie::new(p.clone())),
            QueueSpec::Red(p) => Box::new(Red::new(p.clone())),
            QueueSpec::Cake(p) => Box::new(Cake::new(p.clone())),
            QueueSpec::DualPi2(p) => Box::new(DualPi2::new(p.clone())),
            QueueSpec::TwinCodelAf(p) => Box::new(TwinCodelAf::new(p.clone())),
            QueueSpec::LfqCobalt(p) => Box::new(LfqCobalt::new(p.clone())),
            QueueSpec::InstantRed(p) => Box::new(InstantRed::new(p.clone())),
            QueueSpec::DualqPie(p) => Box::new(DualqPie::new(p.clone())),
            QueueSpec::DualqCred(p) => Box::new(DualqCred::new(p.clone())),
            QueueSpec::DualqPi2(p) => Box::new(DualqPi2::new(p.clone())),
            QueueSpec::DualqUncoupled(p) => Box::new(Uncoupled::new(p.clone())),
            QueueSpec::CurvyRed(p) => Box::new(CurvyRed::new(p.clone())),
        }
    }
}

impl std::str::FromStr for QueueSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<QueueSpec, SpecError> {
        QueueSpec::parse(text)
    }
}

/// Builds a queue from its text specification: [`QueueSpec::parse`], then
/// [`QueueSpec::build`]. For tests and benchmarks that need a queue at once.
///
/// ```
/// use aqm::{build_queue, Outcome, Queue};
/// use emu_core::packet::build::ipv4_udp;
/// use emu_core::Packet;
///
/// let mut queue = build_queue("droptail packets 1").unwrap();
/// let mut outcome = Outcome::default();
/// let packet = || Packet::new(ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 100), 0);
/// assert!(queue.enqueue(packet(), 0, &mut outcome));
/// assert!(!queue.enqueue(packet(), 0, &mut outcome), "the limit is one packet");
/// assert_eq!(outcome.drops.len(), 1);
/// assert!(queue.dequeue(0, &mut outcome).is_some());
/// ```
pub fn build_queue(text: &str) -> Result<Box<dyn Queue>, SpecError> {
    Ok(QueueSpec::parse(text)?.build())
}

#[cfg(test)]
mod tests;
