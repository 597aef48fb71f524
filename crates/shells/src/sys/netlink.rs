//! Devices, addresses, routes and counters over rtnetlink: the requests
//! `ip` and `tc` would make, sent from emu itself over one blocking socket.
//! The socket and its request-and-answers exchange ([`NetlinkSocket`])
//! also carry the TCP sampler's sock_diag dumps
//! (`crate::accounting::tcp_info`), whose messages that module encodes.
//!
//! A socket talks to the network namespace it was opened in, whatever
//! thread uses it later: open it with [`crate::sys::netns::NetNs::netlink`]
//! (a thread that enters the namespace), or [`Netlink::open`] where the
//! process itself is in it. Each request waits for the kernel's answer; a
//! refusal becomes an error naming the operation, the device and what the
//! errno means. A request costs two system calls, against a fork and exec
//! of a tool.

use crate::error::{Result, ShellError};
use netlink_packet_core::{
    NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload, NetlinkSerializable,
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::tc::{TcAttribute, TcMessage, TcStats2};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::net::IpAddr;

/// The largest answer read at once. The kernel sizes a dump's messages to
/// the reader's buffer, and one device's or route's message is far smaller.
const RECEIVE_BUFFER: usize = 64 * 1024;

/// A network prefix: an address and how many of its leading bits count.
pub type Network = (IpAddr, u8);

/// A device's drop counters as the kernel keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkDrops {
    pub tx_dropped: u64,
    pub rx_dropped: u64,
}

/// What to change on a device; `None` leaves a setting as it is.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkSettings {
    pub mtu: Option<u32>,
    pub txqueuelen: Option<u32>,
    /// `Some(false)` turns the device's multicast off (`ip link set ...
    /// multicast off`).
    pub multicast: Option<bool>,
    pub up: bool,
}

impl LinkSettings {
    /// The settings as `ip link set` would take them: `mtu 1500 up`.
    fn describe(&self) -> String {
        let mut words = Vec::new();
        if let Some(mtu) = self.mtu {
            words.push(format!("mtu {mtu}"));
        }
        if let Some(length) = self.txqueuelen {
            words.push(format!("txqueuelen {length}"));
        }
        if let Some(on) = self.multicast {
            words.push(format!("multicast {}", if on { "on" } else { "off" }));
        }
        if self.up {
            words.push("up".to_string());
        }
        words.join(" ")
    }
}

/// An open rtnetlink socket in one namespace.
pub struct Netlink {
    socket: NetlinkSocket,
}

impl Netlink {
    /// A socket in the calling thread's network namespace.
    pub fn open() -> Result<Netlink> {
        Ok(Netlink {
            socket: NetlinkSocket::open(NETLINK_ROUTE)?,
        })
    }

    /// The index of `device`, with its drop counters.
    fn link(&mut self, device: &str) -> Result<(u32, LinkDrops)> {
        let mut message = LinkMessage::default();
        message
            .attributes
            .push(LinkAttribute::IfName(device.to_string()));
        let operation = format!("looking up device '{device}'");
        let answers = self.exchange(
            RouteNetlinkMessage::GetLink(message),
            NLM_F_REQUEST,
            &operation,
            "",
        )?;
        answers
            .into_iter()
            .find_map(|answer| match answer {
                RouteNetlinkMessage::NewLink(link) => {
                    Some((link.header.index, link_drops(&link.attributes)))
                }
                _ => None,
            })
            .ok_or_else(|| ShellError::new(format!("{operation}: the kernel did not describe it")))
    }

    /// The index of `device` in this namespace.
    pub fn index_of(&mut self, device: &str) -> Result<u32> {
        Ok(self.link(device)?.0)
    }

    /// Sets `device`'s MTU, queue length and multicast flag where given,
    /// and brings it up.
    pub fn set_link(&mut self, device: &str, settings: LinkSettings) -> Result<()> {
        let index = self.index_of(device)?;
        let mut message = LinkMessage::default();
        message.header.index = index;
        if settings.up {
            message.header.flags |= LinkFlags::Up;
            message.header.change_mask |= LinkFlags::Up;
        }
        if let Some(on) = settings.multicast {
            if on {
                message.header.flags |= LinkFlags::Multicast;
            }
            message.header.change_mask |= LinkFlags::Multicast;
        }
        if let Some(mtu) = settings.mtu {
            message.attributes.push(LinkAttribute::Mtu(mtu));
        }
        if let Some(length) = settings.txqueuelen {
            message.attributes.push(LinkAttribute::TxQueueLen(length));
        }
        self.acknowledged(
            RouteNetlinkMessage::NewLink(message),
            0,
            &format!("configuring device '{device}' ({})", settings.describe()),
            "",
        )
    }

    /// Adds `local` to `device`: with `peer` at the other end of a
    /// point-to-point link (a host route to it), else as `local/prefix`.
    /// `nodad` skips IPv6 duplicate address detection, so the address is
    /// usable at once.
    pub fn add_address(
        &mut self,
        device: &str,
        local: IpAddr,
        prefix: u8,
        peer: Option<IpAddr>,
        nodad: bool,
    ) -> Result<()> {
        let index = self.index_of(device)?;
        let mut message = AddressMessage::default();
        message.header.family = family_of(local);
        message.header.index = index;
        message.header.prefix_len = if peer.is_some() {
            host_length(local)
        } else {
            prefix
        };
        message.attributes.push(AddressAttribute::Local(local));
        message
            .attributes
            .push(AddressAttribute::Address(peer.unwrap_or(local)));
        if nodad {
            message.header.flags = AddressHeaderFlags::Nodad;
            message
                .attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        let shown = match peer {
            Some(peer) => format!("{local} peer {peer}"),
            None => format!("{local}/{prefix}"),
        };
        self.acknowledged(
            RouteNetlinkMessage::NewAddress(message),
            NLM_F_CREATE | NLM_F_EXCL,
            &format!("adding address {shown} to device '{device}'"),
            "the address is already on the device",
        )
    }

    /// Routes `destination` (prefix length 0: the default route) out of
    /// `device` in the main table, through `via` where given.
    pub fn add_route(
        &mut self,
        destination: Network,
        via: Option<IpAddr>,
        device: &str,
    ) -> Result<()> {
        let index = self.index_of(device)?;
        let (network, length) = destination;
        let mut message = RouteMessage::default();
        message.header.address_family = family_of(network);
        message.header.destination_prefix_length = length;
        message.header.table = RouteHeader::RT_TABLE_MAIN;
        message.header.protocol = RouteProtocol::Boot;
        message.header.kind = RouteType::Unicast;
        // An IPv4 route straight out of a device reaches only its link.
        message.header.scope = if via.is_none() && network.is_ipv4() {
            RouteScope::Link
        } else {
            RouteScope::Universe
        };
        if length > 0 {
            message
                .attributes
                .push(RouteAttribute::Destination(RouteAddress::from(network)));
        }
        if let Some(via) = via {
            message
                .attributes
                .push(RouteAttribute::Gateway(RouteAddress::from(via)));
        }
        message.attributes.push(RouteAttribute::Oif(index));
        let shown = if length == 0 {
            "default".to_string()
        } else {
            format!("{network}/{length}")
        };
        let via_shown = via.map(|v| format!(" via {v}")).unwrap_or_default();
        self.acknowledged(
            RouteNetlinkMessage::NewRoute(message),
            NLM_F_CREATE | NLM_F_EXCL,
            &format!("adding the route {shown}{via_shown} on device '{device}'"),
            "the route already exists",
        )
    }

    /// Every network an address of this namespace occupies (each address
    /// with its prefix, and a point-to-point peer's), both families.
    pub fn address_networks(&mut self) -> Result<Vec<Network>> {
        self.networks(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            "listing the addresses",
        )
    }

    /// Every network a route of this namespace names (its destination, its
    /// gateway and preferred source as single hosts), in all tables and
    /// both families; default routes name none.
    pub fn route_networks(&mut self) -> Result<Vec<Network>> {
        self.networks(
            RouteNetlinkMessage::GetRoute(RouteMessage::default()),
            "listing the routes",
        )
    }

    /// The networks named by the answers to the dump `request`.
    fn networks(&mut self, request: RouteNetlinkMessage, operation: &str) -> Result<Vec<Network>> {
        let answers = self.dump(request, operation)?;
        Ok(answers
            .iter()
            .flat_map(|answer| match answer {
                RouteNetlinkMessage::NewAddress(address) => address_networks(address),
                RouteNetlinkMessage::NewRoute(route) => route_networks(route),
                _ => Vec::new(),
            })
            .collect())
    }

    /// `device`'s drop counters (64-bit where the kernel gives them).
    pub fn link_drops(&mut self, device: &str) -> Result<LinkDrops> {
        Ok(self.link(device)?.1)
    }

    /// Drops counted by the qdiscs of `device`, summed.
    pub fn qdisc_drops(&mut self, device: &str) -> Result<u64> {
        let index = self.index_of(device)?;
        let answers = self.dump(
            RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default()),
            &format!("listing the qdiscs of device '{device}'"),
        )?;
        Ok(qdisc_drops(&answers, index))
    }

    /// Sends a request the kernel only acknowledges.
    fn acknowledged(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
        operation: &str,
        exists: &str,
    ) -> Result<()> {
        self.exchange(
            message,
            NLM_F_REQUEST | NLM_F_ACK | flags,
            operation,
            exists,
        )
        .map(drop)
    }

    /// Sends a dump request and gathers every answer.
    fn dump(
        &mut self,
        message: RouteNetlinkMessage,
        operation: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.exchange(message, NLM_F_REQUEST | NLM_F_DUMP, operation, "")
    }

    /// Sends `message` and reads the kernel's answers (see
    /// [`NetlinkSocket::exchange`]).
    fn exchange(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
        operation: &str,
        exists: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.socket.exchange(message, flags, operation, exists)
    }
}

/// A netlink socket of one protocol (rtnetlink, sock_diag) in the
/// namespace it was opened in, that sends a request and gathers the
/// kernel's answers to it. A protocol's requests are a type that
/// serializes, its answers one that decodes (rtnetlink's are one type).
pub struct NetlinkSocket {
    socket: Socket,
    sequence: u32,
    buffer: Vec<u8>,
}

impl NetlinkSocket {
    /// A socket of `protocol` (`netlink_sys::protocols`) in the calling
    /// thread's network namespace.
    pub fn open(protocol: isize) -> Result<NetlinkSocket> {
        let mut socket =
            Socket::new(protocol).map_err(|e| ShellError::os("opening a netlink socket", e))?;
        socket
            .bind_auto()
            .map_err(|e| ShellError::os("binding a netlink socket", e))?;
        socket
            .connect(&SocketAddr::new(0, 0))
            .map_err(|e| ShellError::os("connecting a netlink socket to the kernel", e))?;
        Ok(NetlinkSocket {
            socket,
            sequence: 0,
            buffer: Vec::with_capacity(RECEIVE_BUFFER),
        })
    }

    /// Sends `message` and reads the kernel's answers to it until the
    /// acknowledgement, the end of a dump, or the single answer of a plain
    /// request. Answers that do not decode (kinds of route or address this
    /// crate version does not know) are passed over. `exists` is what
    /// EEXIST means for this request.
    pub fn exchange<Request, Answer>(
        &mut self,
        message: Request,
        flags: u16,
        operation: &str,
        exists: &str,
    ) -> Result<Vec<Answer>>
    where
        Request: NetlinkSerializable,
        Answer: NetlinkDeserializable,
    {
        self.sequence = self.sequence.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = self.sequence;
        let mut request = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
        request.finalize();
        let mut bytes = vec![0; request.buffer_len()];
        request.serialize(&mut bytes);
        self.socket
            .send(&bytes, 0)
            .map_err(|e| ShellError::os(&format!("{operation}: sending to the kernel"), e))?;
        let mut answers = Vec::new();
        loop {
            self.buffer.clear();
            let length = self
                .socket
                .recv(&mut self.buffer, libc::MSG_TRUNC)
                .map_err(|e| {
                    ShellError::os(&format!("{operation}: reading the kernel's answer"), e)
                })?;
            if length > self.buffer.len() {
                return Err(ShellError::new(format!(
                    "{operation}: the kernel's answer ({length} bytes) is larger than emu's buffer ({RECEIVE_BUFFER} bytes)"
                )));
            }
            let mut offset = 0;
            while offset + 16 <= self.buffer.len() {
                let rest = &self.buffer[offset..];
                let size = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                if size < 16 || size > rest.len() {
                    return Err(ShellError::new(format!(
                        "{operation}: the kernel's answer is cut short"
                    )));
                }
                offset += (size + 3) & !3;
                let Ok(answer) = NetlinkMessage::<Answer>::deserialize(rest) else {
                    continue;
                };
                if answer.header.sequence_number != self.sequence {
                    continue;
                }
                match answer.payload {
                    NetlinkPayload::InnerMessage(inner) => {
                        answers.push(inner);
                        if flags & NLM_F_DUMP != NLM_F_DUMP && flags & NLM_F_ACK == 0 {
                            return Ok(answers);
                        }
                    }
                    NetlinkPayload::Error(error) => match error.code {
                        None => return Ok(answers),
                        Some(code) => return Err(refusal(operation, -code.get(), exists)),
                    },
                    NetlinkPayload::Done(done) if done.code < 0 => {
                        return Err(refusal(operation, -done.code, exists))
                    }
                    NetlinkPayload::Done(_) => return Ok(answers),
                    _ => {}
                }
            }
        }
    }
}

/// The default route of `address`'s family, as [`Netlink::add_route`]
/// takes it.
pub fn default_route(address: IpAddr) -> Network {
    let any = match address {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    };
    (any, 0)
}

fn family_of(address: IpAddr) -> AddressFamily {
    if address.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

fn host_length(address: IpAddr) -> u8 {
    if address.is_ipv4() {
        32
    } else {
        128
    }
}

/// The kernel's refusal of `operation` with `errno`, said plainly.
pub(crate) fn refusal(operation: &str, errno: i32, exists: &str) -> ShellError {
    let error = std::io::Error::from_raw_os_error(errno);
    let meaning = match errno {
        libc::EEXIST if !exists.is_empty() => exists,
        libc::EEXIST => "it already exists",
        libc::EPERM | libc::EACCES => {
            "it needs CAP_NET_ADMIN in the namespace: run emu as root, setuid root, or with --rootless"
        }
        libc::ENODEV => "there is no such device in the namespace",
        libc::ENETUNREACH => "the gateway is not reachable through the device",
        libc::EADDRNOTAVAIL => "the address is not available on the device",
        libc::EAFNOSUPPORT | libc::EOPNOTSUPP => {
            "this kernel does not support it (is IPv6 turned off?)"
        }
        libc::EINVAL | libc::ERANGE => {
            "the kernel refused a value as out of range (an MTU the device cannot take?)"
        }
        libc::ENOBUFS | libc::ENOMEM => "the kernel is out of memory",
        _ => "the kernel refused it",
    };
    ShellError::new(format!("{operation}: {meaning} ({error})"))
}

/// A link's drop counters from its attributes: the 64-bit ones, else the
/// 32-bit ones, else none.
pub(crate) fn link_drops(attributes: &[LinkAttribute]) -> LinkDrops {
    let wide = attributes.iter().find_map(|a| match a {
        LinkAttribute::Stats64(s) => Some(LinkDrops {
            tx_dropped: s.tx_dropped,
            rx_dropped: s.rx_dropped,
        }),
        _ => None,
    });
    let narrow = || {
        attributes.iter().find_map(|a| match a {
            LinkAttribute::Stats(s) => Some(LinkDrops {
                tx_dropped: s.tx_dropped.into(),
                rx_dropped: s.rx_dropped.into(),
            }),
            _ => None,
        })
    };
    wide.or_else(narrow).unwrap_or_default()
}

/// The drops of every qdisc in `answers` that sits on device `index`:
/// each qdisc's queue statistics, or its old-style counters when it has
/// no others.
pub(crate) fn qdisc_drops(answers: &[RouteNetlinkMessage], index: u32) -> u64 {
    answers
        .iter()
        .filter_map(|answer| match answer {
            RouteNetlinkMessage::NewQueueDiscipline(q) if q.header.index as u32 == index => Some(q),
            _ => None,
        })
        .map(|q| {
            let queue = q.attributes.iter().find_map(|a| match a {
                TcAttribute::Stats2(stats) => stats.iter().find_map(|s| match s {
                    TcStats2::Queue(queue) => Some(queue.drops),
                    _ => None,
                }),
                _ => None,
            });
            let old = || {
                q.attributes.iter().find_map(|a| match a {
                    TcAttribute::Stats(stats) => Some(stats.drops),
                    _ => None,
                })
            };
            u64::from(queue.or_else(old).unwrap_or(0))
        })
        .sum()
}

/// The networks one address occupies.
fn address_networks(address: &AddressMessage) -> Vec<Network> {
    let prefix = address.header.prefix_len;
    address
        .attributes
        .iter()
        .filter_map(|a| match a {
            AddressAttribute::Local(ip) | AddressAttribute::Address(ip) => Some((*ip, prefix)),
            _ => None,
        })
        .collect()
}

/// The networks one route names.
fn route_networks(route: &RouteMessage) -> Vec<Network> {
    let length = route.header.destination_prefix_length;
    let ip = |address: &RouteAddress| match address {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    };
    route
        .attributes
        .iter()
        .filter_map(|a| match a {
            RouteAttribute::Destination(d) if length > 0 => ip(d).map(|d| (d, length)),
            RouteAttribute::Gateway(g) | RouteAttribute::PrefSource(g) => {
                ip(g).map(|g| (g, host_length(g)))
            }
            _ => None,
        })
        .filter(|(address, _)| !address.is_unspecified())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::Stats64;
    use netlink_packet_route::tc::{TcStats, TcStatsQueue};

    /// `message` as the kernel would send it, decoded as emu decodes it.
    fn through_the_wire(message: RouteNetlinkMessage) -> RouteNetlinkMessage {
        let mut packet = NetlinkMessage::new(
            NetlinkHeader::default(),
            NetlinkPayload::InnerMessage(message),
        );
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes)
            .unwrap()
            .payload
        {
            NetlinkPayload::InnerMessage(inner) => inner,
            other => panic!("not a route message: {other:?}"),
        }
    }

    #[test]
    fn link_drops_come_from_the_64_bit_counters() {
        let mut link = LinkMessage::default();
        link.header.index = 5;
        let mut stats = Stats64::default();
        stats.tx_dropped = 280_066;
        stats.rx_dropped = 3;
        link.attributes
            .push(LinkAttribute::IfName("ingress".into()));
        link.attributes.push(LinkAttribute::Stats64(stats));
        let RouteNetlinkMessage::NewLink(decoded) =
            through_the_wire(RouteNetlinkMessage::NewLink(link))
        else {
            panic!("not a link");
        };
        assert_eq!(
            link_drops(&decoded.attributes),
            LinkDrops {
                tx_dropped: 280_066,
                rx_dropped: 3
            }
        );
        assert_eq!(link_drops(&[]), LinkDrops::default());
    }

    #[test]
    fn qdisc_drops_are_summed_over_the_device_only() {
        let qdisc = |index: i32, drops: u32, old: Option<u32>| {
            let mut q = TcMessage::default();
            q.header.index = index;
            q.attributes.push(TcAttribute::Kind("pfifo_fast".into()));
            match old {
                None => {
                    let mut queue = TcStatsQueue::default();
                    queue.drops = drops;
                    q.attributes
                        .push(TcAttribute::Stats2(vec![TcStats2::Queue(queue)]));
                }
                Some(old) => {
                    let mut stats = TcStats::default();
                    stats.drops = old;
                    q.attributes.push(TcAttribute::Stats(stats));
                }
            }
            through_the_wire(RouteNetlinkMessage::NewQueueDiscipline(q))
        };
        let answers = [
            qdisc(5, 7, None),
            qdisc(5, 0, Some(4)),
            qdisc(6, 1000, None),
        ];
        assert_eq!(qdisc_drops(&answers, 5), 11);
        assert_eq!(qdisc_drops(&answers, 6), 1000);
        assert_eq!(qdisc_drops(&answers, 9), 0);
    }

    #[test]
    fn addresses_and_routes_name_their_networks() {
        let mut address = AddressMessage::default();
        address.header.family = AddressFamily::Inet;
        address.header.prefix_len = 32;
        address
            .attributes
            .push(AddressAttribute::Local("100.64.0.2".parse().unwrap()));
        address
            .attributes
            .push(AddressAttribute::Address("100.64.0.1".parse().unwrap()));
        let RouteNetlinkMessage::NewAddress(address) =
            through_the_wire(RouteNetlinkMessage::NewAddress(address))
        else {
            panic!("not an address");
        };
        let nets = address_networks(&address);
        assert!(nets.contains(&("100.64.0.2".parse().unwrap(), 32)));
        assert!(nets.contains(&("100.64.0.1".parse().unwrap(), 32)));

        let route = |family: AddressFamily, length: u8, attribute: RouteAttribute| {
            let mut route = RouteMessage::default();
            route.header.address_family = family;
            route.header.destination_prefix_length = length;
            route.attributes.push(attribute);
            match through_the_wire(RouteNetlinkMessage::NewRoute(route)) {
                RouteNetlinkMessage::NewRoute(route) => route_networks(&route),
                other => panic!("not a route: {other:?}"),
            }
        };
        // A default route names its gateway, never 0.0.0.0/0.
        let gateway = RouteAddress::Inet("192.0.2.1".parse().unwrap());
        assert_eq!(
            route(AddressFamily::Inet, 0, RouteAttribute::Gateway(gateway)),
            vec![("192.0.2.1".parse().unwrap(), 32)]
        );
        let destination = RouteAddress::Inet6("fd00::".parse().unwrap());
        assert_eq!(
            route(
                AddressFamily::Inet6,
                64,
                RouteAttribute::Destination(destination)
            ),
            vec![("fd00::".parse().unwrap(), 64)]
        );
    }

    #[test]
    fn a_refusal_names_the_operation_and_what_the_errno_means() {
        let e = refusal(
            "adding address 10.0.0.1/24 to device 'eth9'",
            libc::EEXIST,
            "the address is already on the device",
        )
        .to_string();
        assert!(
            e.contains("eth9") && e.contains("already on the device"),
            "{e}"
        );
        let e = refusal("configuring device 'lo'", libc::EPERM, "").to_string();
        assert!(e.contains("CAP_NET_ADMIN"), "{e}");
    }

    /// Needs root (a network namespace of its own): without it the test
    /// fails, unless EMU_SKIP_PRIVILEGED=1 asks to skip it.
    fn privileged() -> bool {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return true;
        }
        if std::env::var("EMU_SKIP_PRIVILEGED").as_deref() == Ok("1") {
            return false;
        }
        panic!("this test needs root (a network namespace); set EMU_SKIP_PRIVILEGED=1 to skip it");
    }

    /// In a fresh namespace: a device comes up, an address and a route go
    /// on, the dumps show them, the counters read, and the kernel's
    /// refusals name the device and what went wrong.
    #[test]
    fn requests_configure_a_fresh_namespace_and_refusals_say_why() {
        if !privileged() {
            return;
        }
        let ns = crate::sys::netns::NetNs::create().unwrap();
        let mut netlink = ns.netlink().unwrap();
        let up = LinkSettings {
            up: true,
            mtu: Some(1400),
            txqueuelen: Some(777),
            multicast: Some(false),
        };
        netlink.set_link("lo", up).unwrap();
        let address: IpAddr = "10.9.8.1".parse().unwrap();
        netlink.add_address("lo", address, 24, None, false).unwrap();
        let again = netlink
            .add_address("lo", address, 24, None, false)
            .unwrap_err()
            .to_string();
        assert!(
            again.contains("'lo'") && again.contains("already on the device"),
            "{again}"
        );
        let v6: IpAddr = "fd00:9::1".parse().unwrap();
        netlink.add_address("lo", v6, 64, None, true).unwrap();
        netlink
            .add_route(("10.77.0.0".parse().unwrap(), 16), Some(address), "lo")
            .unwrap();
        let route_again = netlink
            .add_route(("10.77.0.0".parse().unwrap(), 16), Some(address), "lo")
            .unwrap_err()
            .to_string();
        assert!(
            route_again.contains("route already exists"),
            "{route_again}"
        );

        let addresses = netlink.address_networks().unwrap();
        assert!(addresses.contains(&(address, 24)), "{addresses:?}");
        assert!(addresses.contains(&(v6, 64)), "{addresses:?}");
        let routes = netlink.route_networks().unwrap();
        assert!(
            routes.contains(&("10.77.0.0".parse().unwrap(), 16)),
            "{routes:?}"
        );
        // Another namespace sees none of it.
        let other = crate::sys::netns::NetNs::create().unwrap();
        let elsewhere = other.netlink().unwrap().address_networks().unwrap();
        assert!(!elsewhere.contains(&(address, 24)), "{elsewhere:?}");

        assert_eq!(netlink.link_drops("lo").unwrap(), LinkDrops::default());
        assert_eq!(netlink.qdisc_drops("lo").unwrap(), 0);
        let unreachable = netlink
            .add_route(
                ("10.88.0.0".parse().unwrap(), 16),
                Some("192.0.2.1".parse().unwrap()),
                "lo",
            )
            .unwrap_err()
            .to_string();
        assert!(
            unreachable.contains("via 192.0.2.1 on device 'lo'")
                && unreachable.contains("not reachable"),
            "{unreachable}"
        );
        let missing = netlink.index_of("emu-nothing").unwrap_err().to_string();
        assert!(
            missing.contains("'emu-nothing'") && missing.contains("no such device"),
            "{missing}"
        );
    }
}
