//! Bringing up one end of a shell's point-to-point link: a TUN device in a
//! namespace, with its MTU, its IPv4 peer address and IPv6 address, and
//! the kernel's own IPv6 chatter turned off; the namespaces such devices
//! go into, and the routes through them.

use crate::error::{Result, ShellError};
use crate::sys::guardian::Guardian;
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
    namespace.exec("ip", &["link", "set", "dev", "lo", "up"])?;
    Ok(namespace)
}

/// Routes `destination` (`default`, or `NETWORK/LENGTH`) of the family
/// of `family` out of `device`, through `via` where given.
pub(crate) fn add_route(
    ns: &NetNs,
    family: IpAddr,
    destination: &str,
    via: Option<IpAddr>,
    device: &str,
) -> Result<()> {
    let via = via.map(|v| v.to_string());
    let mut args = vec![
        if family.is_ipv4() { "-4" } else { "-6" },
        "route",
        "add",
        destination,
    ];
    if let Some(via) = &via {
        args.extend(["via", via.as_str()]);
    }
    args.extend(["dev", device]);
    ns.exec("ip", &args)?;
    Ok(())
}

/// One end of a shell's point-to-point link: a TUN device in `ns`, up,
/// holding the `local` IPv4 and IPv6 addresses and facing `peer`.
pub(crate) fn bring_up_end(
    ns: &NetNs,
    device: &str,
    mtu: &str,
    local: (Ipv4Addr, Ipv6Addr),
    peer: Ipv4Addr,
    offload: bool,
) -> Result<Tun> {
    let tun = ns.run(|| Tun::create(device, offload))?;
    quiet_ipv6(ns, device)?;
    ns.exec(
        "ip",
        &[
            "link",
            "set",
            "dev",
            device,
            "mtu",
            mtu,
            "txqueuelen",
            &TUN_QUEUE_PACKETS.to_string(),
            "up",
        ],
    )?;
    ns.exec(
        "ip",
        &[
            "addr",
            "add",
            &local.0.to_string(),
            "peer",
            &peer.to_string(),
            "dev",
            device,
        ],
    )?;
    ns.exec(
        "ip",
        &[
            "-6",
            "addr",
            "add",
            &format!("{}/64", local.1),
            "dev",
            device,
            "nodad",
        ],
    )?;
    Ok(tun)
}

/// Stops the kernel from sending its own IPv6 housekeeping (router
/// solicitations, MLD reports from a link-local address) over a new device,
/// so the path carries, and the log records, only the experiment's traffic.
/// Must run before the device comes up.
fn quiet_ipv6(ns: &NetNs, device: &str) -> Result<()> {
    let device = device.to_string();
    ns.run(move || {
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
    })
}
