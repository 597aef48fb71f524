//! What the helpers and the congestion controls kept per connection, read
//! back after a run: the sender's side of SCE feedback (bytes acknowledged
//! by ACKs that carried ESCE), and what TCP Prague's classic-ECN detection
//! concluded; no TCP_INFO field shows either.
//!
//! The layout mirrors `bpf/flows.h` (`struct emu_flow_key`, `struct
//! emu_flow`); the tests below pin its size.

use crate::object::SCE_FLOWS;
use crate::registry::Loaded;
use libbpf_rs::{MapCore, MapFlags};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `struct emu_flow_key` and `struct emu_flow`, in bytes.
const KEY_SIZE: usize = 48;
const VALUE_SIZE: usize = 32;
/// Classic-ECN detection's score above which a classic AQM was seen
/// (`EMU_PRAGUE_L_STICKY`, 8 with 2^20 = 1).
pub const CLASSIC_ECN_SEEN: u64 = 16 << 19;
/// The key's family byte.
const AF_INET: u8 = libc::AF_INET as u8;
const AF_INET6: u8 = libc::AF_INET6 as u8;

/// One connection's counts, as seen from `local` in the network namespace
/// `netns` (its cookie, as `SO_NETNS_COOKIE` gives it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SceCounts {
    pub netns: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// Sender: bytes acknowledged by ACKs that carried ESCE.
    pub esce_acked_bytes: u64,
    /// Sender, TCP Prague with classic-ECN detection on: the highest score
    /// detection reached (2^20 = 1; above [`CLASSIC_ECN_SEEN`] it took the
    /// path for a classic AQM's). 0 without detection.
    pub classic_ecn_max: u64,
}

impl Loaded {
    /// Every connection the helpers keep counts for (a bounded table: the
    /// least recently used go first when it is full).
    pub fn sce_counts(&self) -> Vec<SceCounts> {
        let Some(map) = self
            .object()
            .maps()
            .find(|m| m.name().to_string_lossy() == SCE_FLOWS)
        else {
            return Vec::new();
        };
        map.keys()
            .filter_map(|key| {
                let value = map.lookup(&key, MapFlags::ANY).ok()??;
                decode(&key, &value)
            })
            .collect()
    }
}

fn decode(key: &[u8], value: &[u8]) -> Option<SceCounts> {
    if key.len() != KEY_SIZE || value.len() != VALUE_SIZE {
        return None;
    }
    let address = |at: usize| -> Option<IpAddr> {
        let bytes: [u8; 16] = key[at..at + 16].try_into().ok()?;
        match key[8] {
            AF_INET => Some(IpAddr::V4(Ipv4Addr::new(
                bytes[0], bytes[1], bytes[2], bytes[3],
            ))),
            AF_INET6 => Some(IpAddr::V6(Ipv6Addr::from(bytes))),
            _ => None,
        }
    };
    // Ports are in network byte order, as on the wire.
    let port = |at: usize| u16::from_be_bytes([key[at], key[at + 1]]);
    Some(SceCounts {
        netns: u64::from_ne_bytes(key[..8].try_into().ok()?),
        local: SocketAddr::new(address(12)?, port(44)),
        remote: SocketAddr::new(address(28)?, port(46)),
        esce_acked_bytes: u64::from_ne_bytes(value[..8].try_into().ok()?),
        classic_ecn_max: u64::from(u32::from_ne_bytes(value[28..32].try_into().ok()?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_and_value_decode_as_the_programs_write_them() {
        let mut key = [0u8; KEY_SIZE];
        key[..8].copy_from_slice(&4097u64.to_ne_bytes());
        key[8] = AF_INET;
        key[12..16].copy_from_slice(&[10, 0, 0, 1]);
        key[28..32].copy_from_slice(&[10, 0, 0, 2]);
        key[44..46].copy_from_slice(&5201u16.to_be_bytes());
        key[46..48].copy_from_slice(&40000u16.to_be_bytes());
        let mut value = [0u8; VALUE_SIZE];
        value[..8].copy_from_slice(&123_456u64.to_ne_bytes());
        value[28..32].copy_from_slice(&(9u32 << 20).to_ne_bytes());
        let counts = decode(&key, &value).unwrap();
        assert_eq!(counts.classic_ecn_max, 9 << 20);
        assert_eq!(counts.local, "10.0.0.1:5201".parse().unwrap());
        assert_eq!(counts.remote, "10.0.0.2:40000".parse().unwrap());
        assert_eq!(counts.esce_acked_bytes, 123_456);
        assert_eq!(counts.netns, 4097);
        key[8] = 99;
        assert_eq!(decode(&key, &value), None);
        assert_eq!(decode(&key[..47], &value), None);
    }
}
