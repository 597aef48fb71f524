//! What the link model's test files share: numbered packets and a link
//! built from the few fields the tests vary.

use aqm::build_queue;
use emu_core::log::{Direction, LogSink};
use emu_core::packet::build::ipv4_udp;
use emu_core::{Nanos, Packet};
use link::{Dynamics, Link, LinkConfig, Loss, Server};

/// A UDP packet of `size` bytes arriving at `at`, numbered `id` (in the
/// IP identification field).
pub fn packet(size: usize, at: Nanos, id: u16) -> Packet {
    let mut data = ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1000, 2000, 0, size);
    data[4..6].copy_from_slice(&id.to_be_bytes());
    Packet::new(data, at)
}

/// The number `packet` gave it.
pub fn id(p: &Packet) -> u16 {
    u16::from_be_bytes([p.data[4], p.data[5]])
}

/// What a test sets of an uplink starting at time 0.
pub struct TestLink<'a> {
    pub server: Server,
    pub delay: Nanos,
    pub queue: &'a str,
    pub loss: Option<Loss>,
    pub max_packet: usize,
    pub dynamics: Dynamics,
    pub log: LogSink,
}

impl TestLink<'_> {
    pub fn build(self) -> Link {
        Link::new(
            LinkConfig {
                shell: 0,
                direction: Direction::Uplink,
                delay: self.delay,
                server: self.server,
                queue: build_queue(self.queue).unwrap(),
                loss: self.loss,
                max_packet: self.max_packet,
                overhead: 0,
                dynamics: self.dynamics,
            },
            0,
            self.log,
        )
    }
}
