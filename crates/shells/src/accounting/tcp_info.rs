//! The kernel's view of TCP connections, read over sock_diag netlink: a
//! `SOCK_DIAG_BY_FAMILY` dump (an `inet_diag_req_v2` asking for
//! `INET_DIAG_INFO` and `INET_DIAG_CONG`) per address family returns every
//! IPv4 and IPv6 TCP socket of a namespace with its `struct tcp_info`
//! (include/uapi/linux/tcp.h) and its congestion control's name. An IPv6
//! socket connected to an IPv4 address (a dual-stack server's) shows its
//! addresses as IPv4. This is what `ss -ti` prints, without
//! running `ss`: a query costs microseconds, so sampling every 10 ms is
//! cheap.

use crate::error::Result;
use crate::sys::netlink::NetlinkSocket;
use crate::sys::netns::NetNs;
use netlink_packet_core::{
    NetlinkDeserializable, NetlinkHeader, NetlinkSerializable, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_sys::protocols::NETLINK_SOCK_DIAG;
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_CONG: u16 = 4;
const TCP_LISTEN: u32 = 10;
/// `TCPI_OPT_ECN` and `TCPI_OPT_ECN_SEEN` in `tcpi_options`.
const TCPI_OPT_ECN: u8 = 8;
const TCPI_OPT_ECN_SEEN: u8 = 16;
const DIAG_MSG_LEN: usize = 72;

/// One socket's state at one moment. Times in microseconds, as the
/// kernel keeps them; rates in bytes per second.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TcpSample {
    pub src: String,
    pub sport: u16,
    pub dst: String,
    pub dport: u16,
    /// The kernel's socket inode: tells two sockets on one port pair apart
    /// over time.
    pub inode: u32,
    pub state: u8,
    pub congestion_control: String,
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub mss: u32,
    pub unacked: u32,
    pub lost: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub delivery_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub delivered: u32,
    /// Packets delivered with a CE echo (what the sender saw marked).
    pub delivered_ce: u32,
    /// ECN was negotiated for this connection.
    pub ecn: bool,
    /// A CE mark has been seen on it.
    pub ecn_seen: bool,
}

/// Columns of a TCP_INFO samples file (`tcp/*.csv` of an `emu run`
/// directory or of a shell's `--log` directory with `--tcp-info`): one row
/// per socket per sample, `time_s` from `flows_started_monotonic_ns` in the
/// directory's `clock.json`.
pub const CSV_HEADER: &str = "time_s,inode,src,sport,dst,dport,state,congestion_control,srtt_us,rttvar_us,min_rtt_us,cwnd,ssthresh,mss,unacked,lost,total_retrans,pacing_rate_Bps,delivery_rate_Bps,bytes_acked,bytes_received,bytes_sent,bytes_retrans,delivered,delivered_ce,ecn,ecn_seen";

/// Writes `DIR/clock.json`: the monotonic time the samples' `time_s`
/// counts from, so a report can place them beside the packet logs. The
/// one writer of that file, for shells and experiments alike.
pub fn write_clock(dir: &std::path::Path, started: emu_core::time::Nanos) -> std::io::Result<()> {
    let meta = serde_json::json!({ "flows_started_monotonic_ns": started });
    std::fs::write(dir.join("clock.json"), format!("{meta:#}\n"))
}

/// One row of [`CSV_HEADER`]'s columns.
pub fn csv_row(time: f64, s: &TcpSample) -> String {
    format!(
        "{time:.4},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        s.inode,
        s.src,
        s.sport,
        s.dst,
        s.dport,
        s.state,
        s.congestion_control,
        s.srtt_us,
        s.rttvar_us,
        s.min_rtt_us,
        s.cwnd,
        s.ssthresh,
        s.mss,
        s.unacked,
        s.lost,
        s.total_retrans,
        s.pacing_rate,
        s.delivery_rate,
        s.bytes_acked,
        s.bytes_received,
        s.bytes_sent,
        s.bytes_retrans,
        s.delivered,
        s.delivered_ce,
        u8::from(s.ecn),
        u8::from(s.ecn_seen),
    )
}

/// A sock_diag socket bound to one namespace.
pub struct DiagSocket {
    socket: NetlinkSocket,
}

impl DiagSocket {
    /// A socket for the namespace this thread is in.
    pub fn open_here() -> Result<DiagSocket> {
        Ok(DiagSocket {
            socket: NetlinkSocket::open(NETLINK_SOCK_DIAG)?,
        })
    }

    /// A socket that sees the sockets of `namespace` (a netlink socket
    /// belongs to the namespace it was created in).
    pub fn open_in(namespace: &NetNs) -> Result<DiagSocket> {
        namespace.run(DiagSocket::open_here)
    }

    /// Every TCP socket of the namespace, IPv4 and IPv6, that is not
    /// listening: one dump per family.
    pub fn tcp_sockets(&mut self) -> Result<Vec<TcpSample>> {
        let mut samples = Vec::new();
        for family in [libc::AF_INET, libc::AF_INET6] {
            let answers: Vec<DiagSocketAnswer> = self.socket.exchange(
                DumpRequest(family as u8),
                NLM_F_REQUEST | NLM_F_DUMP,
                "listing TCP sockets",
                "",
            )?;
            samples.extend(answers.into_iter().filter_map(|answer| answer.0));
        }
        Ok(samples)
    }
}

/// A sock_diag request to dump one address family's TCP sockets.
struct DumpRequest(u8);

/// One socket of a dump's answer (None: one this parser cannot read,
/// passed over).
#[derive(Debug)]
struct DiagSocketAnswer(Option<TcpSample>);

/// `struct inet_diag_req_v2`, in bytes.
const REQUEST_LEN: usize = 56;

impl NetlinkSerializable for DumpRequest {
    fn message_type(&self) -> u16 {
        SOCK_DIAG_BY_FAMILY
    }

    fn buffer_len(&self) -> usize {
        REQUEST_LEN
    }

    /// TCP sockets of the family in any state but listening, with
    /// `INET_DIAG_INFO` and `INET_DIAG_CONG`, any addresses and ports.
    fn serialize(&self, buffer: &mut [u8]) {
        buffer.fill(0);
        buffer[0] = self.0;
        buffer[1] = libc::IPPROTO_TCP as u8;
        buffer[2] = ((1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_CONG - 1))) as u8;
        let states: u32 = !(1 << TCP_LISTEN);
        buffer[4..8].copy_from_slice(&states.to_ne_bytes());
    }
}

impl NetlinkDeserializable for DiagSocketAnswer {
    type Error = std::convert::Infallible;

    fn deserialize(
        _: &NetlinkHeader,
        payload: &[u8],
    ) -> std::result::Result<DiagSocketAnswer, Self::Error> {
        Ok(DiagSocketAnswer(parse_socket(payload)))
    }
}

/// One `struct inet_diag_msg` and its attributes.
fn parse_socket(payload: &[u8]) -> Option<TcpSample> {
    if payload.len() < DIAG_MSG_LEN {
        return None;
    }
    let be16 = |at: usize| u16::from_be_bytes([payload[at], payload[at + 1]]);
    let family = payload[0];
    let address = |at: usize| -> IpAddr {
        if family == libc::AF_INET6 as u8 {
            let bytes: [u8; 16] = payload[at..at + 16].try_into().expect("16 bytes");
            let v6 = Ipv6Addr::from(bytes);
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        } else {
            IpAddr::V4(Ipv4Addr::new(
                payload[at],
                payload[at + 1],
                payload[at + 2],
                payload[at + 3],
            ))
        }
    };
    let mut sample = TcpSample {
        state: payload[1],
        sport: be16(4),
        dport: be16(6),
        src: address(8).to_string(),
        dst: address(24).to_string(),
        inode: u32::from_ne_bytes(payload[68..72].try_into().ok()?),
        ..TcpSample::default()
    };
    let mut attributes = &payload[DIAG_MSG_LEN..];
    while attributes.len() >= 4 {
        let len = u16::from_ne_bytes([attributes[0], attributes[1]]) as usize;
        let kind = u16::from_ne_bytes([attributes[2], attributes[3]]);
        if len < 4 || len > attributes.len() {
            break;
        }
        let value = &attributes[4..len];
        match kind {
            INET_DIAG_INFO => read_tcp_info(value, &mut sample),
            INET_DIAG_CONG => {
                let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
                sample.congestion_control = String::from_utf8_lossy(&value[..end]).into_owned();
            }
            _ => {}
        }
        let aligned = (len + 3) & !3;
        attributes = &attributes[aligned.min(attributes.len())..];
    }
    Some(sample)
}

/// Fields of `struct tcp_info` by their offsets; an older kernel's shorter
/// struct leaves the later ones at zero.
fn read_tcp_info(info: &[u8], s: &mut TcpSample) {
    let u32_at = |at: usize| {
        info.get(at..at + 4)
            .map_or(0, |b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
    };
    let u64_at = |at: usize| {
        info.get(at..at + 8)
            .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    let options = info.get(5).copied().unwrap_or(0);
    s.ecn = options & TCPI_OPT_ECN != 0;
    s.ecn_seen = options & TCPI_OPT_ECN_SEEN != 0;
    s.mss = u32_at(16);
    s.unacked = u32_at(24);
    s.lost = u32_at(32);
    s.srtt_us = u32_at(68);
    s.rttvar_us = u32_at(72);
    s.ssthresh = u32_at(76);
    s.cwnd = u32_at(80);
    s.total_retrans = u32_at(100);
    s.pacing_rate = u64_at(104);
    s.bytes_acked = u64_at(120);
    s.bytes_received = u64_at(128);
    s.min_rtt_us = u32_at(148);
    s.delivery_rate = u64_at(160);
    s.delivered = u32_at(192);
    s.delivered_ce = u32_at(196);
    s.bytes_sent = u64_at(200);
    s.bytes_retrans = u64_at(208);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A loopback connection that carried 1 MB shows up with its ports,
    /// its bytes acknowledged, an RTT and a congestion control.
    #[test]
    fn a_loopback_connection_is_seen_with_its_tcp_info() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let receiver = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut sink = Vec::new();
            stream.read_to_end(&mut sink).unwrap();
            sink.len()
        });
        let mut sender = TcpStream::connect(("127.0.0.1", port)).unwrap();
        sender.write_all(&vec![7u8; 1_000_000]).unwrap();
        sender.flush().unwrap();
        let local = sender.local_addr().unwrap().port();
        let mut diag = DiagSocket::open_here().unwrap();
        let mut seen = None;
        for _ in 0..100 {
            let samples = diag.tcp_sockets().unwrap();
            if let Some(s) = samples
                .into_iter()
                .find(|s| s.sport == local && s.dport == port && s.bytes_acked >= 1_000_000)
            {
                seen = Some(s);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(sender);
        assert_eq!(receiver.join().unwrap(), 1_000_000);
        let s = seen.expect("the sending socket is listed with all its bytes acknowledged");
        assert_eq!(s.src, "127.0.0.1");
        assert_eq!(s.dst, "127.0.0.1");
        assert!(s.bytes_acked >= 1_000_000 && s.bytes_acked <= 1_000_001);
        assert!(s.srtt_us > 0);
        assert!(s.cwnd > 0);
        assert!(s.mss > 0);
        assert!(!s.congestion_control.is_empty());
    }

    /// IPv6 sockets are listed too, and a dual-stack socket connected to
    /// an IPv4 address shows it as IPv4.
    #[test]
    fn ipv6_and_dual_stack_connections_are_seen() {
        let listener = TcpListener::bind("[::]:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepting = std::thread::spawn(move || {
            let first = listener.accept().unwrap().0;
            let second = listener.accept().unwrap().0;
            (first, second)
        });
        let six = TcpStream::connect(("::1", port)).unwrap();
        let four = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _accepted = accepting.join().unwrap();
        let samples = DiagSocket::open_here().unwrap().tcp_sockets().unwrap();
        let local6 = six.local_addr().unwrap().port();
        let seen6 = samples
            .iter()
            .find(|s| s.sport == local6 && s.dport == port)
            .expect("the IPv6 client socket is listed");
        assert_eq!((seen6.src.as_str(), seen6.dst.as_str()), ("::1", "::1"));
        // The server's side of the IPv4 connection is an IPv6 socket.
        let local4 = four.local_addr().unwrap().port();
        let server_side = samples
            .iter()
            .find(|s| s.sport == port && s.dport == local4)
            .expect("the dual-stack server socket is listed");
        assert_eq!(server_side.src, "127.0.0.1");
        assert_eq!(server_side.dst, "127.0.0.1");
    }

    /// The dump request is the kernel's `struct inet_diag_req_v2`: family,
    /// TCP, the two extensions' bits, every state but listening, and a
    /// socket id of zeros (any socket); an answer too short to be a socket
    /// is passed over, not misread.
    #[test]
    fn the_request_is_the_kernels_and_short_answers_are_passed_over() {
        let request = DumpRequest(libc::AF_INET6 as u8);
        assert_eq!(request.message_type(), 20);
        let mut bytes = vec![0xffu8; request.buffer_len()];
        request.serialize(&mut bytes);
        assert_eq!(bytes.len(), 56);
        assert_eq!(&bytes[..4], &[10, 6, 0b1010, 0]);
        assert_eq!(
            u32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
            !(1 << 10)
        );
        assert!(bytes[8..].iter().all(|&b| b == 0));
        let header = NetlinkHeader::default();
        let short = DiagSocketAnswer::deserialize(&header, &[0u8; DIAG_MSG_LEN - 1]).unwrap();
        assert!(short.0.is_none(), "{short:?}");
    }
}
