//! Bringing up one end of a shell's point-to-point link: a TUN device in a
//! namespace, with its MTU, its IPv4 peer address and IPv6 address, and
//! the kernel's own IPv6 chatter turned off; the namespaces such devices
//! go into, and the routes through them.

use crate::error::{Result, ShellError};
use crate::sys::guardian::Guardian;
use crate::sys::netlink::{LinkSettings, Netlink};
use crate::sys::netns::NetNs;
use crate::sys::tun::Tun;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The name of a shell's device inside its namespace.
pub(crate) const INNER_DEVICE: &str = "ingress";

/// Packets a TUN device holds for emu to read (its `txqueuelen`, the size
/// of the ring `tun_net_xmit` fills). The kernel's 500 is 6 ms of
/// MTU-sized packets at 1 Gbit/s; a reader that loses the core for longer
/// (2 cores shared by the command, emu and the kernel) would see the
/// kernel drop what it had not read yet. The ring only fills while emu is
/// behind, so the larger size costs nothing otherwise.
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

/// One end of a shell's point-to-point link: a TUN device in `ns`, up,
/// holding the `local` IPv4 and IPv6 addresses and facing `peer`. The
/// device, its settings and addresses are made on one thread in `ns`.
pub(crate) fn bring_up_end(
    ns: &NetNs,
    device: &str,
    mtu: u32,
    local: (Ipv4Addr, Ipv6Addr),
    peer: Ipv4Addr,
    offload: bool,
) -> Result<Tun> {
    ns.run(|| {
        let tun = Tun::create(device, offload)?;
        quiet_ipv6(device)?;
        let mut netlink = Netlink::open()?;
        netlink.set_link(
            device,
            LinkSettings {
                mtu: Some(mtu),
                txqueuelen: Some(TUN_QUEUE_PACKETS),
                up: true,
            },
        )?;
        netlink.add_address(
            device,
            IpAddr::V4(local.0),
            32,
            Some(IpAddr::V4(peer)),
            false,
        )?;
        netlink.add_address(device, IpAddr::V6(local.1), 64, None, true)?;
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
        let path = format!("/proc/sys/net/ipv6/conf/{device}/{setting}");
        // A kernel without IPv6 has none of these: nothing to quieten.
        if std::path::Path::new(&path).exists() {
            std::fs::write(&path, value)
                .map_err(|e| ShellError::os(&format!("writing {path}"), e))?;
        }
    }
    Ok(())
}
