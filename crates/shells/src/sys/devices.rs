//! Bringing up a TUN device emu reads, the one way for a shell's two ends
//! and an experiment's hosts: in a namespace, with its MTU, its ring, its
//! addresses, and no IPv6 chatter of the kernel's own; and the namespaces
//! such devices go into.

use crate::error::Result;
use crate::sys::guardian::Guardian;
use crate::sys::netlink::{LinkSettings, Netlink};
use crate::sys::netns::NetNs;
use crate::sys::sysctl;
use crate::sys::tun::Tun;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The name of a shell's device inside its namespace.
pub(crate) const INNER_DEVICE: &str = "ingress";

/// Packets a TUN device holds for emu to read (its `txqueuelen`, the size
/// of the ring `tun_net_xmit` fills; past it the kernel drops, counting
/// the device's `tx_dropped`), on a shell's devices and an experiment's
/// hosts' alike. The kernel's 500 is 6 ms of MTU-sized packets at
/// 1 Gbit/s and 0.6 ms at 10 Gbit/s: a reader that loses the core for
/// longer (2 cores shared by the programs, emu and the kernel) sees the
/// kernel drop what it had not read yet, a loss the path never modelled.
/// Measured on an experiment's hosts (4 cubic flows through a 10 Gbit/s
/// bottleneck on a 2-core machine, see docs/performance-history.md):
/// with 500 the receivers' devices dropped hundreds to two thousand ACKs
/// a run, with 8192 none; at 1 Gbit/s neither dropped. The ring only
/// fills while emu is behind, so the larger size costs nothing otherwise
/// (8192 pointers of memory per device).
pub(crate) const TUN_QUEUE_PACKETS: u32 = 8192;

/// A fresh network namespace with its loopback up, known to the guardian
/// before anything can run in it: a shell's, or an experiment's host's.
pub(crate) fn new_namespace(guardian: &mut Guardian) -> Result<Arc<NetNs>> {
    let namespace = Arc::new(NetNs::create()?);
    guardian.watch_namespace(namespace.identity()?);
    namespace.netlink()?.set_link(
        "lo",
        LinkSettings {
            up: true,
            ..LinkSettings::default()
        },
    )?;
    Ok(namespace)
}

/// A TUN device as a shell's end of its link or an experiment's host
/// wants it.
pub(crate) struct DeviceEnd<'a> {
    pub name: &'a str,
    pub mtu: u32,
    /// TCP super-packets handed over (see [`Tun::create`]).
    pub offload: bool,
    /// Its IPv4 address, the prefix length, and the peer of a
    /// point-to-point link.
    pub ipv4: (Ipv4Addr, u8, Option<Ipv4Addr>),
    /// Its IPv6 address (a /64); None turns IPv6 off on the device (an
    /// experiment's IPv4-only host).
    pub ipv6: Option<Ipv6Addr>,
}

/// Brings up `end` in `ns`, the one bring-up of every TUN device emu
/// reads: created, the kernel's own IPv6 chatter stopped (or IPv6 turned
/// off), its MTU and [`TUN_QUEUE_PACKETS`] set, multicast off, up, its
/// addresses added. All on one thread in `ns`.
///
/// Multicast off keeps the kernel's group reports off the path: when a
/// namespace between two shells turns IPv6 forwarding on, its devices
/// join the all-routers groups, and a multicast device would announce
/// that with MLD reports into both shells' logs. Cost: the kernel sends
/// no group reports or joins over emu's devices; a command's multicast
/// is still routed out through them as any other packet.
pub(crate) fn bring_up(ns: &NetNs, end: DeviceEnd) -> Result<Tun> {
    ns.run(|| {
        let device = end.name;
        let tun = Tun::create(device, end.offload)?;
        match end.ipv6 {
            Some(_) => quiet_ipv6(device)?,
            // An IPv4 host: no IPv6 housekeeping packets on the path. A
            // kernel that refuses it sends none it would stop.
            None => {
                let _ =
                    sysctl::write_if_present(&format!("net.ipv6.conf.{device}.disable_ipv6"), "1");
            }
        }
        let mut netlink = Netlink::open()?;
        netlink.set_link(
            device,
            LinkSettings {
                mtu: Some(end.mtu),
                txqueuelen: Some(TUN_QUEUE_PACKETS),
                multicast: Some(false),
                up: true,
            },
        )?;
        let (address, prefix, peer) = end.ipv4;
        netlink.add_address(
            device,
            IpAddr::V4(address),
            prefix,
            peer.map(IpAddr::V4),
            false,
        )?;
        if let Some(address) = end.ipv6 {
            netlink.add_address(device, IpAddr::V6(address), 64, None, true)?;
        }
        Ok(tun)
    })
}

/// Stops the kernel from sending its own IPv6 housekeeping (router
/// solicitations, MLD reports from a link-local address) over a new device,
/// so the path carries, and the log records, only the experiment's traffic.
/// Must run before the device comes up, on a thread in the device's
/// namespace.
fn quiet_ipv6(device: &str) -> Result<()> {
    for (setting, value) in [
        ("addr_gen_mode", "1"),
        ("router_solicitations", "0"),
        ("accept_ra", "0"),
    ] {
        // A kernel without IPv6 has none of these: nothing to quieten.
        sysctl::write_if_present(&format!("net.ipv6.conf.{device}.{setting}"), value)?;
    }
    Ok(())
}
