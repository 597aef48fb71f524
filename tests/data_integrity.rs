//! Bytes cross the emulated path intact: segmentation offload, loss and
//! rate limits must not corrupt or stall a TCP stream.
//!
//! They need root; see [`support`] for how they run.

mod support;

use std::process::{Command, Stdio};
use support::*;

/// Bytes arrive intact in both directions, over IPv4 and IPv6, through a
/// lossy, rate-limited path, with offload and with `--no-offload`: cutting
/// super-packets and merging due segments (which happens either way) must
/// not corrupt or stall anything. And through three nested zero-delay
/// shells at full speed, where the two reader threads (one per direction)
/// race for the same devices: each takes the answers its writes cause on
/// the other's. Every shell's accounting balances against its log.
#[test]
fn tcp_data_arrives_intact_both_ways_over_ipv4_and_ipv6() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("integrity");
    // The host side: accepts one connection, sends 20 MB derived from a seed,
    // and hashes what it receives back.
    let server = dir.join("server.py");
    std::fs::write(
        &server,
        r#"
import hashlib, socket, sys, threading
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
s.settimeout(60)
print("ready", flush=True)
c, _ = s.accept()
c.settimeout(60)
def send():
    for i in range(320):
        c.sendall(hashlib.sha256(b"down%d" % i).digest() * 2048)
t = threading.Thread(target=send); t.start()
h = hashlib.sha256()
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b)
t.join()
# Close our side only once the whole upload is in: the client waits for
# this end of stream, so it cannot exit (and end the shell) with upload
# bytes still in its socket's send buffer.
c.shutdown(socket.SHUT_WR)
print(h.hexdigest(), flush=True)
"#,
    )
    .unwrap();
    let client = dir.join("client.py");
    std::fs::write(
        &client,
        r#"
import hashlib, socket, sys, threading
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=60)
def send():
    for i in range(320):
        c.sendall(hashlib.sha256(b"up%d" % i).digest() * 2048)
    c.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send); t.start()
h = hashlib.sha256()
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b)
t.join()
print(h.hexdigest())
"#,
    )
    .unwrap();
    let expected = |tag: &str| {
        let out = Command::new("python3")
            .args(["-c", &format!("import hashlib\nh=hashlib.sha256()\nfor i in range(320): h.update(hashlib.sha256(b'{tag}%d' % i).digest() * 2048)\nprint(h.hexdigest())")])
            .output()
            .unwrap();
        text(&out.stdout).trim().to_string()
    };
    let lossy: &[&str] = &["loss", "0.01", "--seed", "3", "--", "link", "200mbit"];
    let nested: &[&str] = &["delay", "0", "--", "delay", "0", "--", "delay", "0"];
    for (port, base, listen, offload, shells) in [
        ("5921", "$EMU_BASE", "0.0.0.0", "--offload", lossy),
        ("5922", "$EMU_BASE6", "::", "--offload", lossy),
        ("5923", "$EMU_BASE", "0.0.0.0", "--no-offload", lossy),
        ("5924", "$EMU_BASE6", "::", "--no-offload", lossy),
        ("5925", "$EMU_BASE", "0.0.0.0", "--offload", nested),
    ] {
        let host = host_side(&server, &[listen, port]);
        let command = format!("python3 {} {base} {port}", client.display());
        let log = dir.join(port);
        let (out, host_out) = run_beside_host(host, &log, offload, shells, &command);
        assert_eq!(
            text(&out.stdout).trim(),
            expected("down"),
            "{base} {offload}: downloaded bytes differ"
        );
        assert_eq!(
            text(&host_out.stdout).trim(),
            expected("up"),
            "{base} {offload}: uploaded bytes differ"
        );
        let kinds: Vec<&str> = shells.split(|&a| a == "--").map(|shell| shell[0]).collect();
        assert_eq!(
            assert_accounting_balances(&log, &kinds).len(),
            2 * kinds.len()
        );
    }
}

/// UDP datagrams cross whole and in order where emu cuts them: a sender
/// that batches with UDP_SEGMENT hands emu, with offload on, one
/// super-packet per batch, which emu cuts into the datagrams the kernel
/// would have sent. Every datagram must reach the host's socket with its
/// own length and bytes, over IPv4 and IPv6, with offload and without
/// (where the kernel cuts), and the accounting must balance.
#[test]
fn udp_segment_batches_arrive_as_whole_datagrams() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("udp-integrity");
    // Datagram i: 1200 bytes, every 41st 500 (a batch's short last one),
    // starting with i and filled from it.
    let datagram = r#"
def datagram(i):
    n = 500 if i % 41 == 40 else 1200
    return i.to_bytes(4, "big") + bytes((i * 7 + j) % 251 for j in range(n - 4))
"#;
    let receiver = dir.join("receiver.py");
    std::fs::write(
        &receiver,
        format!(
            r#"
import socket, sys
{datagram}
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 1 << 24)  # SO_RCVBUFFORCE: none lost here
s.bind((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
expected = int(sys.argv[3])
got = []
s.settimeout(30)
try:
    while len(got) < expected:
        got.append(s.recv(65536))
        s.settimeout(3)
except socket.timeout:
    pass
print(len(got), sum(d != datagram(i) for i, d in enumerate(got)), flush=True)
"#
        ),
    )
    .unwrap();
    let sender = dir.join("sender.py");
    std::fs::write(
        &sender,
        format!(
            r#"
import socket, sys, time
{datagram}
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
c = socket.socket(family, socket.SOCK_DGRAM)
c.setsockopt(17, 103, 1200)  # SOL_UDP, UDP_SEGMENT: batches of 1200-byte datagrams
c.connect((sys.argv[1], int(sys.argv[2])))
for b in range(int(sys.argv[3]) // 41):
    c.send(b"".join(datagram(b * 41 + k) for k in range(41)))
    time.sleep(0.002)
"#
        ),
    )
    .unwrap();
    let count = 41 * 100;
    for (port, base, listen, offload) in [
        ("5931", "$EMU_BASE", "0.0.0.0", "--offload"),
        ("5932", "$EMU_BASE6", "::", "--offload"),
        ("5933", "$EMU_BASE", "0.0.0.0", "--no-offload"),
    ] {
        let host = host_side(&receiver, &[listen, port, &count.to_string()]);
        let command = format!("python3 {} {base} {port} {count}", sender.display());
        let log = dir.join(port);
        let (_, host_out) = run_beside_host(host, &log, offload, &["delay", "1"], &command);
        assert_eq!(
            text(&host_out.stdout).trim(),
            format!("{count} 0"),
            "{base} {offload}: datagrams received and how many differ"
        );
        assert_eq!(assert_accounting_balances(&log, &["delay"]).len(), 2);
    }
}

/// Starts a Python script on the host and waits until it prints "ready"
/// (its socket is bound); the rest of its output is left to read.
fn host_side(script: &std::path::Path, args: &[&str]) -> std::process::Child {
    use std::io::Read;
    let mut host = Command::new("python3")
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = [0u8; 6];
    host.stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut ready)
        .unwrap();
    host
}

/// Runs `command` through `shells` (with `--no-offload` if `offload` says
/// so, logging to `log`) while `host` serves it; asserts that emu
/// succeeded and returns emu's output and the host's.
fn run_beside_host(
    mut host: std::process::Child,
    log: &std::path::Path,
    offload: &str,
    shells: &[&str],
    command: &str,
) -> (std::process::Output, std::process::Output) {
    let log_arg = log.display().to_string();
    let mut args = vec!["--log", &log_arg];
    if offload == "--no-offload" {
        args.insert(0, offload);
    }
    args.extend(shells);
    args.extend(["--", "sh", "-c", command]);
    let out = run(&args);
    if !out.status.success() {
        let _ = host.kill();
    }
    let host_out = host.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{offload} {command}: {}",
        text(&out.stderr)
    );
    (out, host_out)
}
