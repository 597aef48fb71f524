//! What the kernel dropped around emu, so a loss emu never saw is not
//! mistaken for the emulated path's (or hidden by it).
//!
//! A packet sent towards a shell crosses the qdisc of the TUN device that
//! emu reads and then the device's own ring (`tun_net_xmit` in
//! drivers/net/tun.c, as long as the device's `txqueuelen`); if emu does not
//! read fast enough the ring is full and the kernel drops the packet,
//! counting it in the device's `tx_dropped`. A packet emu writes can still
//! be refused on the other device (`rx_dropped`). Both counters, and the
//! qdisc's drops, are read at exit with iproute2's JSON output.

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
    /// False if the counters could not be read (no iproute2).
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

/// Reads `device`'s counters in `ns`; None if iproute2 cannot tell.
pub fn read(ns: &NetNs, device: &str) -> Option<DeviceDrops> {
    let link = ns
        .query("ip", &["-s", "-j", "link", "show", "dev", device])
        .ok()?;
    let qdisc = ns
        .query("tc", &["-s", "-j", "qdisc", "show", "dev", device])
        .ok();
    parse(&link, qdisc.as_deref())
}

/// The counters from `ip -s -j link show` and `tc -s -j qdisc show`.
fn parse(link: &str, qdisc: Option<&str>) -> Option<DeviceDrops> {
    let link: serde_json::Value = serde_json::from_str(link).ok()?;
    let stats = &link.get(0)?["stats64"];
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let qdisc_dropped = qdisc
        .and_then(|q| serde_json::from_str::<serde_json::Value>(q).ok())
        .and_then(|q| {
            q.as_array()
                .map(|qs| qs.iter().map(|q| count(&q["drops"])).sum())
        })
        .unwrap_or(0);
    Some(DeviceDrops {
        tx_dropped: stats["tx"]["dropped"].as_u64()?,
        rx_dropped: stats["rx"]["dropped"].as_u64()?,
        qdisc_dropped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_come_from_iproute2_json() {
        let link = r#"[{"ifindex":5,"ifname":"ingress","flags":["POINTOPOINT","UP"],"mtu":1500,
            "stats64":{"rx":{"bytes":10,"packets":1,"errors":0,"dropped":3,"over_errors":0,"multicast":0},
                       "tx":{"bytes":20,"packets":2,"errors":0,"dropped":280066,"carrier_errors":0,"collisions":0}}}]"#;
        let qdisc = r#"[{"kind":"pfifo_fast","handle":"0:","bytes":0,"packets":0,"drops":7,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#;
        let drops = parse(link, Some(qdisc)).unwrap();
        assert_eq!(
            drops,
            DeviceDrops {
                tx_dropped: 280_066,
                rx_dropped: 3,
                qdisc_dropped: 7
            }
        );
        let k = KernelDrops::of(Some(drops), Some(drops));
        assert_eq!(
            (k.on_the_way_in(), k.after_write, k.known),
            (280_073, 3, true)
        );
        assert_eq!(parse(link, None).unwrap().qdisc_dropped, 0);
        assert_eq!(parse("not json", None), None);
        assert!(!KernelDrops::of(None, Some(drops)).known);
    }
}
