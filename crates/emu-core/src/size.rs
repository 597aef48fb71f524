//! Byte counts as `tc` writes them (`1500`, `64kb`, `4mb`), and what a
//! "byte" means wherever emu counts them.
//!
//! # What a byte is
//!
//! emu's packets are IP packets: a TUN device hands over no link-layer
//! header. Every byte count a queue or a link keeps is a count of *frame
//! bytes*: the packet's IP length plus the link-layer header of the
//! [`LinkLayer`] the shell was given (`emu link --l2 ethernet`). This is
//! exactly the length the Linux kernel gives a qdisc (`qdisc_pkt_len`, the
//! `skb->len` at the root qdisc, which includes the device's hard header):
//!
//! | `--l2`           | a byte counts           | like the kernel on         |
//! |------------------|-------------------------|----------------------------|
//! | `none` (default) | the IP packet           | a TUN, WireGuard, PPP device |
//! | `ethernet`       | IP packet + 14 (MAC header) | an Ethernet device      |
//!
//! It holds for every byte option of every queue: the `bytes`/`limit`
//! byte limits of droptail, drophead, codel and pie, fq_codel's and
//! fq_pie's `quantum` and `memory_limit`, cake's `memlimit` and the bytes its
//! shaper charges, DualPI2's byte limits, RED's byte-mode thresholds, PIE's
//! `bytemode`, the `mtu` thresholds of codel, pie and dualpi2 (compared
//! with a backlog in frame bytes: write `mtu 1514` for the kernel's
//! Ethernet figure); and the link's own serialization and trace
//! opportunities (with `link --overhead N` added on top). The one
//! exception is cake's `mtu`, the device's MTU in IP bytes as `ip link`
//! shows it: like the kernel's `psched_mtu()`, cake adds the header to it,
//! so its MTU time is that of 1514 bytes on Ethernet. Cake's `overhead`
//! and link-type keywords start from the frame as the kernel does (see
//! aqm's `cake::overhead`).
//!
//! The packet log and the report always count IP bytes: throughput is IP
//! throughput whatever the link layer.

use crate::error::{scaled_decimal, split_number_unit, ParseError};
use serde::{Deserialize, Serialize};

/// The link layer a shell's queues and link account for: what the kernel's
/// device would put in front of each IP packet. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkLayer {
    /// No header: bytes are IP bytes (the kernel on an IP-level device).
    #[default]
    None,
    /// A 14-byte Ethernet MAC header (destination, source, EtherType), as
    /// the kernel's qdiscs see on an Ethernet device. Preamble, FCS and the
    /// inter-frame gap never reach a qdisc: add them with `overhead`.
    Ethernet,
}

impl LinkLayer {
    pub const NAMES: [(&'static str, LinkLayer); 2] =
        [("none", LinkLayer::None), ("ethernet", LinkLayer::Ethernet)];

    /// Bytes of link-layer header in front of each IP packet (the kernel's
    /// `dev->hard_header_len`, and `skb_network_offset` at the qdisc).
    pub fn header_bytes(self) -> u16 {
        match self {
            LinkLayer::None => 0,
            LinkLayer::Ethernet => 14,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LinkLayer::None => "none",
            LinkLayer::Ethernet => "ethernet",
        }
    }

    /// Reads `none` or `ethernet`.
    pub fn parse(text: &str) -> Result<LinkLayer, ParseError> {
        let lowered = text.trim().to_ascii_lowercase();
        LinkLayer::NAMES
            .iter()
            .find(|(name, _)| *name == lowered)
            .map(|(_, l2)| *l2)
            .ok_or_else(|| {
                ParseError::new(
                    text,
                    "a link layer: 'none' (IP bytes) or 'ethernet' (+14-byte MAC header)",
                )
            })
    }
}

const SIZE_HELP: &str =
    "a size in bytes such as 1500, 64kb or 4mb (k/kb, m/mb, g/gb are ×1024 as in tc)";

/// Reads a size in bytes: bare or `b` = bytes; `k`/`kb`, `m`/`mb`, `g`/`gb`
/// are binary multiples as in tc; `kbit`, `mbit`, `gbit` are bits (×1000/8).
pub fn parse_size(text: &str) -> Result<u64, ParseError> {
    let lowered = text.trim().to_ascii_lowercase();
    let (number, unit) = split_number_unit(&lowered);
    // Bits are carried ×8 so every multiplier is an integer.
    let (multiplier, divisor): (u128, u128) = match unit {
        "" | "b" => (1, 1),
        "k" | "kb" => (1 << 10, 1),
        "m" | "mb" => (1 << 20, 1),
        "g" | "gb" => (1 << 30, 1),
        "kbit" => (1_000, 8),
        "mbit" => (1_000_000, 8),
        "gbit" => (1_000_000_000, 8),
        _ => return Err(ParseError::new(text, SIZE_HELP)),
    };
    let value = scaled_decimal(number, multiplier)
        .ok_or_else(|| ParseError::new(text, SIZE_HELP))?
        / divisor;
    u64::try_from(value).map_err(|_| ParseError::new(text, SIZE_HELP))
}

/// Reads a plain non-negative integer count (packets, flows), naming the
/// input in the error.
pub fn parse_count(text: &str) -> Result<u64, ParseError> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| ParseError::new(text, "a whole number such as 100"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_sizes() {
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("64kb").unwrap(), 65536);
        assert_eq!(parse_size("4mb").unwrap(), 4 << 20);
        assert_eq!(parse_size("8kbit").unwrap(), 1000);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert!(parse_size("12 apples").is_err());
        assert!(parse_count("-1").is_err());
        assert_eq!(parse_count("100").unwrap(), 100);
    }

    #[test]
    fn link_layers() {
        assert_eq!(LinkLayer::parse("ethernet").unwrap().header_bytes(), 14);
        assert_eq!(LinkLayer::parse("none").unwrap().header_bytes(), 0);
        assert_eq!(LinkLayer::default(), LinkLayer::None);
        assert!(LinkLayer::parse("atm").is_err());
    }
}
