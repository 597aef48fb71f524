//! Link models and a small topology for the crate's tests, and for benches
//! through the feature `fixtures`.

use emu_core::log::{Direction, LogSink};
use emu_core::{Nanos, Rate};
use link::{Link, LinkConfig, Server};

/// A link of `delay`, served at `rate` bit/s (`None`: at once), queueing
/// under `queue` (an `aqm` spec), logging into `sink`.
pub fn link(id: usize, delay: Nanos, rate: Option<u64>, queue: &str, sink: LogSink) -> Link {
    Link::new(
        LinkConfig {
            shell: id as u8,
            direction: Direction::Uplink,
            delay,
            server: match rate {
                Some(bps) => Server::Rate(Rate::from_bits_per_sec(bps).unwrap()),
                None => Server::Unlimited,
            },
            queue: aqm::build_queue(queue).unwrap(),
            loss: None,
            max_packet: 1500,
            overhead: 0,
            dynamics: Default::default(),
        },
        0,
        sink,
    )
}

pub const A: [u8; 4] = [10, 0, 0, 1];
pub const B: [u8; 4] = [10, 0, 0, 2];
pub const C: [u8; 4] = [10, 0, 0, 3];

/// Hosts A and B on the left, C on the right, one bottleneck.
pub fn two_left_one_right() -> crate::Topology {
    use crate::Side;
    use std::net::Ipv4Addr;
    crate::Topology::new(
        vec![
            (Side::Left, Ipv4Addr::from(A)),
            (Side::Left, Ipv4Addr::from(B)),
            (Side::Right, Ipv4Addr::from(C)),
        ],
        1,
    )
    .unwrap()
}
