//! Malformed packets from inside a shell. A program in the shell may send
//! any bytes at all; emu must never crash a pump on them nor lose count:
//! each is forwarded, or dropped with a reason in the log.
//!
//! The packets are crafted with pnet's mutable views (a test-only
//! dependency: the packet path keeps its own parsing) and sent raw, with an
//! AF_PACKET socket on the shell's device, from a thread of this test that
//! joined the shell's network namespace. The same packets, and a grid of
//! variants of them, also cross-check emu's parsing against pnet's (the
//! fuzz targets' `packet` check, tests/fuzz_corpus.rs replays its corpus).
//!
//! The shell test needs root; see [`support`].

#[path = "../fuzz/checks.rs"]
mod checks;
mod support;

use emu_core::log::{Direction, Event};
use pnet_packet::ip::IpNextHeaderProtocols;
use pnet_packet::ipv4::{self, MutableIpv4Packet};
use pnet_packet::ipv6::{MutableExtensionPacket, MutableIpv6Packet};
use pnet_packet::tcp::MutableTcpPacket;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::*;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;

/// A well-formed IPv4 header of `ihl` 32-bit words (options are NOPs),
/// ECT(0), carrying `payload` bytes of `protocol`, valid checksum.
fn ipv4(ihl: u8, payload: usize, to: Ipv4Addr) -> Vec<u8> {
    let mut bytes = vec![0u8; ihl as usize * 4 + payload];
    let mut ip = MutableIpv4Packet::new(&mut bytes).unwrap();
    ip.set_version(4);
    ip.set_header_length(ihl);
    ip.set_ecn(2);
    ip.set_total_length((ihl as usize * 4 + payload) as u16);
    ip.set_ttl(64);
    ip.set_next_level_protocol(IpNextHeaderProtocols::Udp);
    ip.set_source(Ipv4Addr::new(100, 64, 0, 2));
    ip.set_destination(to);
    for option in &mut bytes[20..ihl as usize * 4] {
        *option = 1; // NOP
    }
    let mut ip = MutableIpv4Packet::new(&mut bytes).unwrap();
    ip.set_checksum(ipv4::checksum(&ip.to_immutable()));
    bytes
}

/// Sets the header checksum again after a field was broken on purpose,
/// so only the broken field is wrong.
fn fix_checksum(bytes: &mut [u8]) {
    if let Some(mut ip) = MutableIpv4Packet::new(bytes) {
        ip.set_checksum(0);
        let sum = ipv4::checksum(&ip.to_immutable());
        ip.set_checksum(sum);
    }
}

/// The hostile packets: name, bytes and the ethertype to send them as.
fn crafted(to4: Ipv4Addr, to6: Ipv6Addr) -> Vec<(&'static str, Vec<u8>, u16)> {
    let mut packets = Vec::new();

    // IHL below the minimum of 5 words.
    let mut p = ipv4(5, 40, to4);
    MutableIpv4Packet::new(&mut p).unwrap().set_header_length(3);
    fix_checksum(&mut p);
    packets.push(("ihl 3", p, ETH_P_IP));

    // IHL of 15 words (60 bytes) in a 28-byte packet.
    let mut p = ipv4(5, 8, to4);
    MutableIpv4Packet::new(&mut p)
        .unwrap()
        .set_header_length(15);
    fix_checksum(&mut p);
    packets.push(("ihl past the buffer", p, ETH_P_IP));

    // Total length far past the buffer, and below the header.
    for (name, length) in [
        ("total length past the buffer", 1500),
        ("total length 10", 10),
    ] {
        let mut p = ipv4(5, 40, to4);
        MutableIpv4Packet::new(&mut p)
            .unwrap()
            .set_total_length(length);
        fix_checksum(&mut p);
        packets.push((name, p, ETH_P_IP));
    }

    // TCP with a data offset past the segment, and below 5 words.
    for (name, offset) in [("tcp data offset 15", 15), ("tcp data offset 2", 2)] {
        let mut p = ipv4(5, 24, to4);
        let mut ip = MutableIpv4Packet::new(&mut p).unwrap();
        ip.set_next_level_protocol(IpNextHeaderProtocols::Tcp);
        let mut tcp = MutableTcpPacket::new(&mut p[20..]).unwrap();
        tcp.set_source(40000);
        tcp.set_destination(9);
        tcp.set_data_offset(offset);
        tcp.set_flags(0x18);
        fix_checksum(&mut p);
        packets.push((name, p, ETH_P_IP));
    }

    // A later fragment with TCP's protocol number: no TCP header in it.
    let mut p = ipv4(5, 32, to4);
    let mut ip = MutableIpv4Packet::new(&mut p).unwrap();
    ip.set_next_level_protocol(IpNextHeaderProtocols::Tcp);
    ip.set_fragment_offset(185);
    fix_checksum(&mut p);
    packets.push(("tcp fragment", p, ETH_P_IP));

    // IPv6, payload length 0 with a hop-by-hop jumbo payload option
    // (RFC 2675) claiming 70000 bytes, then a TCP header.
    let mut p = vec![0u8; 40 + 8 + 20];
    {
        let mut ip = MutableIpv6Packet::new(&mut p).unwrap();
        ip.set_version(6);
        ip.set_traffic_class(2); // ECT(0)
        ip.set_payload_length(0);
        ip.set_next_header(IpNextHeaderProtocols::Hopopt);
        ip.set_hop_limit(64);
        ip.set_source("fd65:6d75::2".parse().unwrap());
        ip.set_destination(to6);
    }
    {
        let mut hop = MutableExtensionPacket::new(&mut p[40..]).unwrap();
        hop.set_next_header(IpNextHeaderProtocols::Tcp);
        hop.set_hdr_ext_len(0);
    }
    p[42..48].copy_from_slice(&[0xc2, 4, 0, 1, 0x11, 0x70]);
    MutableTcpPacket::new(&mut p[48..])
        .unwrap()
        .set_data_offset(5);
    packets.push(("ipv6 jumbo", p.clone(), ETH_P_IPV6));

    // The same with an extension chain that runs off the end.
    let mut q = p[..44].to_vec();
    q[41] = 200; // a hop-by-hop header of 1608 bytes
    packets.push(("ipv6 chain past the buffer", q, ETH_P_IPV6));

    // IPv6 cut inside its fixed header.
    packets.push(("ipv6 truncated", p[..24].to_vec(), ETH_P_IPV6));

    // Not IP at all, with the bits where ECN would be set: version 7, and
    // an ARP-like packet, both "ECT(0)" and "CE" in the second byte.
    let mut not_ip = vec![0x70, 0x02, 0, 40];
    not_ip.resize(40, 0x5a);
    packets.push(("version 7 with ecn bits", not_ip.clone(), ETH_P_IP));
    not_ip[0] = 0x00;
    not_ip[1] = 0x03;
    packets.push(("version 0 with ce bits", not_ip, ETH_P_IP));
    packets.push(("one byte", vec![0x45], ETH_P_IP));
    packets
}

/// emu's packet views agree with pnet's on every crafted packet and on a
/// grid of variants: every IHL, every prefix, odd total lengths.
#[test]
fn emu_parsing_agrees_with_pnet_on_crafted_and_generated_packets() {
    let mut cases = 0;
    let to4 = Ipv4Addr::new(100, 64, 0, 1);
    let to6: Ipv6Addr = "fd65:6d75::1".parse().unwrap();
    for (_, bytes, _) in crafted(to4, to6) {
        for cut in 0..=bytes.len() {
            checks::packet(&bytes[..cut]);
            cases += 1;
        }
    }
    for protocol in [6u8, 17, 0, 41, 44] {
        for ihl in 0..=15u8 {
            for total in [0u16, 19, 20, 47, 48, 49, 1500, 65535] {
                for fragment in [0u16, 1, 8191] {
                    let mut p = ipv4(5, 28, to4);
                    let mut ip = MutableIpv4Packet::new(&mut p).unwrap();
                    ip.set_header_length(ihl);
                    ip.set_total_length(total);
                    ip.set_fragment_offset(fragment);
                    ip.set_next_level_protocol(pnet_packet::ip::IpNextHeaderProtocol(protocol));
                    if protocol == 6 {
                        MutableTcpPacket::new(&mut p[20..])
                            .unwrap()
                            .set_data_offset(ihl);
                    }
                    fix_checksum(&mut p);
                    checks::packet(&p);
                    cases += 1;
                }
            }
        }
    }
    // IPv6 chains: each extension type with each length byte.
    for next in [0u8, 43, 44, 51, 60, 6, 59] {
        for length in [0u8, 1, 2, 255] {
            let mut p = vec![0u8; 40 + 24];
            let mut ip = MutableIpv6Packet::new(&mut p).unwrap();
            ip.set_version(6);
            ip.set_payload_length(24);
            ip.set_next_header(pnet_packet::ip::IpNextHeaderProtocol(next));
            p[40] = 6;
            p[41] = length;
            for cut in [40, 41, 42, 48, 56, 64] {
                checks::packet(&p[..cut]);
                cases += 1;
            }
        }
    }
    assert!(cases > 2000, "{cases} cases");
}

/// The shell's namespace as the command's process has it.
fn command_pid(pid_file: &std::path::Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(pid_file) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends every packet `copies` times on the one non-loopback device of
/// process `pid`'s network namespace, from a thread that joins it.
fn send_raw(pid: u32, packets: Vec<(&'static str, Vec<u8>, u16)>, copies: usize) -> usize {
    std::thread::spawn(move || {
        let ns = std::fs::File::open(format!("/proc/{pid}/ns/net")).unwrap();
        // SAFETY: setns on a descriptor we own; only this thread moves.
        assert_eq!(
            unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) },
            0,
            "joining the shell's namespace: {}",
            std::io::Error::last_os_error()
        );
        let ifindex = device_index();
        // SAFETY: a packet socket; closed below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, 0) };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        let mut sent = 0;
        for _ in 0..copies {
            for (name, bytes, ethertype) in &packets {
                // SAFETY: a zeroed sockaddr_ll is valid; we fill it in.
                let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                to.sll_family = libc::AF_PACKET as u16;
                to.sll_protocol = ethertype.to_be();
                to.sll_ifindex = ifindex;
                // SAFETY: sending our buffer to the address we built.
                let n = unsafe {
                    libc::sendto(
                        fd,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        0,
                        (&to as *const libc::sockaddr_ll).cast(),
                        std::mem::size_of::<libc::sockaddr_ll>() as u32,
                    )
                };
                assert_eq!(
                    n,
                    bytes.len() as isize,
                    "sending {name}: {}",
                    std::io::Error::last_os_error()
                );
                sent += 1;
            }
        }
        // SAFETY: closing the socket we opened.
        unsafe { libc::close(fd) };
        sent
    })
    .join()
    .unwrap()
}

/// The index of the namespace's one device that is not loopback.
fn device_index() -> i32 {
    // SAFETY: if_nameindex returns an array ending in a zero entry, which
    // we free.
    unsafe {
        let list = libc::if_nameindex();
        let mut at = list;
        let mut found = 0;
        while (*at).if_index != 0 {
            let name = std::ffi::CStr::from_ptr((*at).if_name).to_string_lossy();
            if name != "lo" {
                found = (*at).if_index as i32;
            }
            at = at.add(1);
        }
        libc::if_freenameindex(list);
        assert!(found > 0, "no device in the shell");
        found
    }
}

#[test]
fn malformed_packets_from_inside_a_shell_are_forwarded_or_dropped_with_a_reason() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("raw-packets");
    let logs = dir.join("logs");
    let pid_file = dir.join("pid");
    let go_on = dir.join("go-on");
    // The command waits while the packets are sent, then pings: the pumps
    // must still be working.
    let script = format!(
        "echo $$ > {pid}; while [ ! -e {go} ]; do sleep 0.05; done; \
         ping -c 3 -i 0.2 -W 2 $EMU_BASE",
        pid = pid_file.display(),
        go = go_on.display()
    );
    let child = emu()
        .arg("--log")
        .arg(&logs)
        .args([
            "delay",
            "2",
            "--",
            "link",
            "1mbit",
            "--queue",
            "codel ecn target 1ms interval 5ms",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = command_pid(&pid_file);
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let variable = |name: &str| {
        environ
            .split(|b| *b == 0)
            .find_map(|v| v.strip_prefix(format!("{name}=").as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_else(|| panic!("no {name} in the command's environment"))
    };
    let base: Ipv4Addr = variable("EMU_BASE").parse().unwrap();
    let base6: Ipv6Addr = variable("EMU_BASE6").parse().unwrap();
    let packets = crafted(base, base6);
    let kinds = packets.len();
    let sent = send_raw(pid, packets, 20);
    assert_eq!(sent, kinds * 20);
    std::fs::write(&go_on, b"").unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("3 received"), "the path broke: {stdout}");

    for d in assert_accounting_balances(&logs, &["delay", "link"]) {
        assert!(
            d.records
                .iter()
                .filter(|r| r.event == Event::Drop)
                .all(|r| r.drop_reason().is_some()),
            "a drop without a reason"
        );
        if d.direction == Direction::Uplink && d.shell == 1 {
            // Every crafted packet was read by the innermost shell (the
            // pings come on top).
            assert!(d.read >= sent as u64, "read {} of {sent} sent", d.read);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
