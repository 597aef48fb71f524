//! emu's DNS relay: listens on port 53 (UDP and TCP) of one or two
//! addresses of one namespace and asks the host's nameservers, from
//! sockets made in another, in the order the host lists them. It reads
//! nothing of a message but the two bytes of its id: a UDP query gets a
//! socket of its own towards a nameserver, so the answer that comes back
//! on it is the one to pass on; a TCP connection is joined byte for byte
//! to one to the nameserver.
//!
//! Control plane only: one thread waits on the listening sockets, and each
//! query or connection is served on a short-lived thread of its own
//! (lookups are a few per second, not the packet path's rates). The
//! sockets close when emu ends, however it ends; nothing outlives it.

use crate::error::{Result, ShellError};
use crate::sys::netns::NetNs;
use std::io::{Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket,
};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The port resolvers listen on.
pub const DNS_PORT: u16 = 53;

/// Queries and connections served at once; beyond it a query is dropped
/// (its client asks again) and a connection refused.
const MOST_IN_FLIGHT: usize = 128;

/// How long a TCP connection may stay silent both ways before the relay
/// closes it.
const TCP_IDLE: Duration = Duration::from_secs(30);

/// Where the relay asks: the nameservers in order, how long it waits for
/// each, and the namespace its sockets towards them are made in.
pub struct Upstream {
    pub namespace: Arc<NetNs>,
    pub nameservers: Vec<SocketAddr>,
    pub wait: Duration,
}

/// A listening socket the relay could not have: the address, and why.
pub struct Unbound {
    pub address: IpAddr,
    pub error: std::io::Error,
}

/// The running relay; dropping it stops listening (queries in flight are
/// answered or time out on their own threads).
pub struct Relay {
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    /// Listens on port 53 of each of `addresses` in `listen_ns`, UDP and
    /// TCP. An address whose port is taken (by a resolver listening on
    /// every address) is passed over and returned, one the namespace does
    /// not have (IPv6 turned off) passed over; any other failure fails
    /// the start.
    pub fn start(
        listen_ns: &NetNs,
        addresses: &[IpAddr],
        upstream: Upstream,
    ) -> Result<(Relay, Vec<Unbound>)> {
        let addresses = addresses.to_vec();
        let (listeners, unbound) = listen_ns.run(move || Ok(listen(&addresses)))?;
        let listeners = listeners?;
        let (stop_read, stop) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| ShellError::os("creating the DNS relay's stop pipe", e))?;
        let thread = std::thread::Builder::new()
            .name("emu-dns".into())
            .spawn(move || {
                // Every thread it starts is born in the namespace it is in.
                if nix::sched::setns(
                    upstream.namespace.fd(),
                    nix::sched::CloneFlags::CLONE_NEWNET,
                )
                .is_ok()
                {
                    serve(listeners, stop_read, Arc::new(upstream));
                }
            })
            .map_err(|e| ShellError::os("starting the DNS relay", e))?;
        Ok((
            Relay {
                stop,
                thread: Some(thread),
            },
            unbound,
        ))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // SAFETY: one byte from a valid buffer into our pipe.
        unsafe { libc::write(self.stop.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The listening sockets of one address.
struct Listener {
    udp: Arc<UdpSocket>,
    tcp: TcpListener,
}

/// Binds port 53 of every address; those that cannot be had for a reason
/// of the host's are passed over.
fn listen(addresses: &[IpAddr]) -> (Result<Vec<Listener>>, Vec<Unbound>) {
    let mut listeners = Vec::new();
    let mut unbound = Vec::new();
    for &address in addresses {
        let at = SocketAddr::new(address, DNS_PORT);
        match UdpSocket::bind(at).and_then(|udp| Ok((udp, TcpListener::bind(at)?))) {
            Ok((udp, tcp)) => listeners.push(Listener {
                udp: Arc::new(udp),
                tcp,
            }),
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                unbound.push(Unbound { address, error })
            }
            Err(error) if error.kind() == std::io::ErrorKind::AddrNotAvailable => {}
            Err(e) => {
                return (
                    Err(ShellError::os(
                        &format!("listening for DNS queries on {at}"),
                        e,
                    )),
                    unbound,
                )
            }
        }
    }
    (Ok(listeners), unbound)
}

/// Waits on the listening sockets until the stop pipe is written,
/// handing each query and connection to a thread of its own.
fn serve(listeners: Vec<Listener>, stop: OwnedFd, upstream: Arc<Upstream>) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    // The stop pipe, then each address's UDP and TCP socket (-1: none).
    let mut fds: [RawFd; 5] = [-1; 5];
    fds[0] = stop.as_raw_fd();
    for (k, listener) in listeners.iter().take(2).enumerate() {
        fds[1 + 2 * k] = listener.udp.as_raw_fd();
        fds[2 + 2 * k] = listener.tcp.as_raw_fd();
    }
    let mut datagram = vec![0u8; 65_536];
    loop {
        let (ready, events) = crate::sys::poll::wait(fds, None);
        if ready < 0 {
            continue;
        }
        if events[0] != 0 {
            return;
        }
        for (k, listener) in listeners.iter().take(2).enumerate() {
            if events[1 + 2 * k] != 0 {
                if let Ok((n, client)) = listener.udp.recv_from(&mut datagram) {
                    let query = datagram[..n].to_vec();
                    let (socket, upstream) = (listener.udp.clone(), upstream.clone());
                    hand_off(&in_flight, move || {
                        answer_datagram(&socket, client, &query, &upstream)
                    });
                }
            }
            if events[2 + 2 * k] != 0 {
                if let Ok((client, _)) = listener.tcp.accept() {
                    let upstream = upstream.clone();
                    hand_off(&in_flight, move || join_stream(client, &upstream));
                }
            }
        }
    }
}

/// Runs `work` on a thread of its own, unless too many already run.
fn hand_off(in_flight: &Arc<AtomicUsize>, work: impl FnOnce() + Send + 'static) {
    if in_flight.fetch_add(1, Ordering::SeqCst) >= MOST_IN_FLIGHT {
        in_flight.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let count = in_flight.clone();
    let started = std::thread::Builder::new()
        .name("emu-dns-query".into())
        .spawn(move || {
            work();
            count.fetch_sub(1, Ordering::SeqCst);
        });
    if started.is_err() {
        in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Asks the nameservers in turn until one answers `query`, and sends the
/// answer to `client` from the socket the query came in on. One that
/// refuses (nothing listens) or stays silent for the wait is passed over;
/// if none answers, neither does the relay, and the client asks again or
/// gives up as it would have.
fn answer_datagram(socket: &UdpSocket, client: SocketAddr, query: &[u8], upstream: &Upstream) {
    if query.len() < 2 {
        return;
    }
    let mut reply = vec![0u8; 65_536];
    for &server in &upstream.nameservers {
        let Ok(asking) = UdpSocket::bind(unspecified(server)) else {
            continue;
        };
        if asking.connect(server).is_err()
            || asking.set_read_timeout(Some(upstream.wait)).is_err()
            || asking.send(query).is_err()
        {
            continue;
        }
        // Until the wait runs out: anything but the answer is skipped.
        while let Ok(n) = asking.recv(&mut reply) {
            if n >= 2 && reply[..2] == query[..2] {
                let _ = socket.send_to(&reply[..n], client);
                return;
            }
        }
    }
}

/// Joins a client's TCP connection to the first nameserver that accepts
/// one, byte for byte both ways, until either side closes or both stay
/// silent for [`TCP_IDLE`].
fn join_stream(client: TcpStream, upstream: &Upstream) {
    let Some(server) = upstream
        .nameservers
        .iter()
        .find_map(|s| TcpStream::connect_timeout(s, upstream.wait).ok())
    else {
        return;
    };
    for stream in [&client, &server] {
        let _ = stream.set_read_timeout(Some(TCP_IDLE));
    }
    let (Ok(client_reader), Ok(server_writer)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let outwards = std::thread::Builder::new()
        .name("emu-dns-tcp".into())
        .spawn(move || copy_then_close(client_reader, server_writer));
    copy_then_close(server, client);
    if let Ok(thread) = outwards {
        let _ = thread.join();
    }
}

/// Copies until `from` ends (or fails, or stays silent too long), then
/// ends the writing half of `to` and the reading half of `from`.
fn copy_then_close(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16_384];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
}

/// The any-address of `server`'s family, to send from.
fn unspecified(server: SocketAddr) -> SocketAddr {
    match server {
        SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    }
}

/// Whether a UDP socket of the calling thread's namespace is bound to
/// `server`'s port on its address or on every address, as the kernel
/// lists them (`/proc/thread-self/net/udp`, `udp6`): known without
/// sending anything, which a resolver could take badly. Unknown (the
/// lists unreadable) counts as listening.
pub fn listens(server: SocketAddr) -> bool {
    let port = format!("{:04X}", server.port());
    let lists = ["udp", "udp6"]
        .map(|file| std::fs::read_to_string(format!("/proc/thread-self/net/{file}")));
    if lists.iter().all(|list| list.is_err()) {
        return true;
    }
    lists.iter().flatten().any(|list| {
        list.lines().skip(1).any(|line| {
            line.split_whitespace()
                .nth(1)
                .and_then(|local| local.split_once(':'))
                .is_some_and(|(address, bound_port)| {
                    bound_port == port
                        && decode_address(address)
                            .is_some_and(|a| a.is_unspecified() || same_address(a, server.ip()))
                })
        })
    })
}

/// An address as `/proc/net/udp*` print it: the bytes in memory order,
/// as hexadecimal 32-bit words of this machine's byte order.
fn decode_address(hex: &str) -> Option<IpAddr> {
    let words: Vec<[u8; 4]> = (0..hex.len() / 8)
        .map(|k| {
            u32::from_str_radix(&hex[8 * k..8 * k + 8], 16)
                .ok()
                .map(u32::to_ne_bytes)
        })
        .collect::<Option<_>>()?;
    match words.as_slice() {
        [v4] => Some(IpAddr::V4(Ipv4Addr::from(*v4))),
        [a, b, c, d] => {
            let bytes: Vec<u8> = [a, b, c, d]
                .iter()
                .flat_map(|w| w.iter().copied())
                .collect();
            Some(IpAddr::V6(Ipv6Addr::from(
                <[u8; 16]>::try_from(bytes).ok()?,
            )))
        }
        _ => None,
    }
}

/// The same address, an IPv4 one also when written IPv4-mapped.
fn same_address(bound: IpAddr, server: IpAddr) -> bool {
    let plain = |a: IpAddr| match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    };
    plain(bound) == plain(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A nameserver of the test's own on an unprivileged port: answers
    /// every query with the query's bytes and one more (so the relay's
    /// pass-through is seen), UDP once and TCP once.
    fn fake_nameserver() -> (SocketAddr, std::thread::JoinHandle<()>) {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let at = udp.local_addr().unwrap();
        let tcp = TcpListener::bind(at).unwrap();
        let thread = std::thread::spawn(move || {
            let mut buffer = [0u8; 512];
            let (n, from) = udp.recv_from(&mut buffer).unwrap();
            let mut answer = buffer[..n].to_vec();
            answer.push(0xaa);
            udp.send_to(&answer, from).unwrap();
            let (mut stream, _) = tcp.accept().unwrap();
            let mut length = [0u8; 2];
            stream.read_exact(&mut length).unwrap();
            let mut message = vec![0u8; u16::from_be_bytes(length) as usize];
            stream.read_exact(&mut message).unwrap();
            message.push(0xbb);
            stream
                .write_all(&(message.len() as u16).to_be_bytes())
                .unwrap();
            stream.write_all(&message).unwrap();
        });
        (at, thread)
    }

    /// Queries to the relay reach the nameserver, past one where nothing
    /// listens, and its answers come back, by UDP and by TCP; the
    /// kernel's lists tell the silent address from the one that listens.
    #[test]
    fn queries_cross_the_relay_both_ways() {
        let (server, nameserver) = fake_nameserver();
        let nobody: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert!(!listens(nobody));
        assert!(listens(server));
        let wildcard = UdpSocket::bind("[::]:0").unwrap();
        let on_every_address = wildcard.local_addr().unwrap().port();
        assert!(listens(SocketAddr::from((
            [127, 0, 0, 9],
            on_every_address
        ))));
        let here = Arc::new(NetNs::current().unwrap());
        // A port of our own: port 53 of the loopback address is the host's.
        let listen_at: IpAddr = "127.0.0.1".parse().unwrap();
        let udp = UdpSocket::bind((listen_at, 0)).unwrap();
        let relay_at = udp.local_addr().unwrap();
        let tcp = TcpListener::bind(relay_at).unwrap();
        let upstream = Upstream {
            namespace: here,
            nameservers: vec![nobody, server],
            wait: Duration::from_secs(2),
        };
        let (stop_read, stop) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
        let listeners = vec![Listener {
            udp: Arc::new(udp),
            tcp,
        }];
        let serving = std::thread::spawn(move || serve(listeners, stop_read, Arc::new(upstream)));
        let relay = Relay {
            stop,
            thread: Some(serving),
        };

        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client.send_to(&[0x12, 0x34, 1, 0], relay_at).unwrap();
        let mut buffer = [0u8; 64];
        let (n, from) = client.recv_from(&mut buffer).unwrap();
        assert_eq!(from, relay_at, "the answer comes from the address asked");
        assert_eq!(&buffer[..n], &[0x12, 0x34, 1, 0, 0xaa]);

        let mut stream = TcpStream::connect(relay_at).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(&[0, 3, 0x56, 0x78, 9]).unwrap();
        let mut answer = [0u8; 6];
        stream.read_exact(&mut answer).unwrap();
        assert_eq!(answer, [0, 4, 0x56, 0x78, 9, 0xbb]);
        nameserver.join().unwrap();
        drop(relay);
    }

    /// Addresses as the kernel lists them on this machine.
    #[test]
    fn listed_addresses_decode() {
        let word = |bytes: [u8; 4]| format!("{:08X}", u32::from_ne_bytes(bytes));
        let v4 = word([127, 0, 0, 53]);
        assert_eq!(decode_address(&v4), Some("127.0.0.53".parse().unwrap()));
        let loopback6 = [[0; 4], [0; 4], [0; 4], [0, 0, 0, 1]].map(word).concat();
        assert_eq!(decode_address(&loopback6), Some("::1".parse().unwrap()));
        let mapped = [[0; 4], [0; 4], [0, 0, 0xff, 0xff], [127, 0, 0, 53]]
            .map(word)
            .concat();
        let mapped = decode_address(&mapped).unwrap();
        assert!(same_address(mapped, "127.0.0.53".parse().unwrap()));
        assert!(!same_address(mapped, "127.0.0.1".parse().unwrap()));
        assert_eq!(decode_address("12"), None);
    }
}
