//! What the kernel dropped around emu, so a loss emu never saw is not
//! mistaken for the emulated path's (or hidden by it).
//!
//! A packet sent towards a shell crosses the qdisc of the TUN device that
//! emu reads and then the device's own ring (`tun_net_xmit` in
//! drivers/net/tun.c, as long as the device's `txqueuelen`); if emu does not
//! read fast enough the ring is full and the kernel drops the packet,
//! counting it in the device's `tx_dropped`. A packet emu writes can still
//! be refused on the other device (`rx_dropped`). Both counters, and the
//! qdisc's drops, are read at exit over rtnetlink.

use crate::sys::netns::NetNs;

/// One device's drop counters, since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceDrops {
    /// Packets the kernel dropped on their way to emu (the TUN's ring was
    /// full): the device's `tx_dropped`.
    pub tx_dropped: u64,
    /// Packets emu wrote that the kernel dropped: `rx_dropped`.
    pub rx_dropped: u64,
    /// Drops of the qdisc in front of the device.
    pub qdisc_dropped: u64,
}

/// What the kernel dropped around one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelDrops {
    /// False if the counters could not be read.
    pub known: bool,
    /// Dropped on the way in, before emu read them: the input device's
    /// ring and its qdisc.
    pub ring: u64,
    pub qdisc: u64,
    /// Written by emu, dropped by the kernel on the output device.
    pub after_write: u64,
}

impl KernelDrops {
    /// For a direction reading `input` and writing `output`.
    pub fn of(input: Option<DeviceDrops>, output: Option<DeviceDrops>) -> KernelDrops {
        match (input, output) {
            (Some(i), Some(o)) => KernelDrops {
                known: true,
                ring: i.tx_dropped,
                qdisc: i.qdisc_dropped,
                after_write: o.rx_dropped,
            },
            _ => KernelDrops::default(),
        }
    }

    /// Dropped before emu read them.
    pub fn on_the_way_in(&self) -> u64 {
        self.ring + self.qdisc
    }
}

/// Reads `device`'s counters in `ns`; None if the kernel cannot tell
/// (the device is gone). A qdisc dump that fails counts no qdisc drops.
pub fn read(ns: &NetNs, device: &str) -> Option<DeviceDrops> {
    let mut netlink = ns.netlink().ok()?;
    let link = netlink.link_drops(device).ok()?;
    Some(DeviceDrops {
        tx_dropped: link.tx_dropped,
        rx_dropped: link.rx_dropped,
        qdisc_dropped: netlink.qdisc_drops(device).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_counts_its_input_before_emu_and_its_output_after() {
        let drops = |tx_dropped, rx_dropped, qdisc_dropped| DeviceDrops {
            tx_dropped,
            rx_dropped,
            qdisc_dropped,
        };
        let (input, output) = (drops(280_066, 3, 7), drops(1, 9, 2));
        let k = KernelDrops::of(Some(input), Some(output));
        assert_eq!(
            (k.on_the_way_in(), k.after_write, k.known),
            (280_073, 9, true)
        );
        assert!(!KernelDrops::of(None, Some(output)).known);
        assert!(!KernelDrops::of(Some(input), None).known);
    }
}
