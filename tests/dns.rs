//! Names resolve inside shells as on the host, through a resolver on a
//! loopback address the command's namespace cannot reach itself.
//!
//! Each test makes a scratch host of its own, so the machine is never
//! touched: a thread enters a new network namespace (loopback up) and a
//! new mount namespace whose `/etc/resolv.conf` names only a loopback
//! resolver and a search domain, as a systemd-resolved host's does; a small
//! DNS responder of the test's own listens there, and emu runs from that
//! thread, so the scratch namespaces are its host.
//!
//! They need root; see [`support`] for how they run.

mod support;

use emu_core::log::{Direction, Event, LogReader, Record};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Output, Stdio};
use support::*;

/// The name the responder knows (the command asks for its first label,
/// which only the search domain completes), and its addresses.
const DOMAIN: &str = "emu-test.example";
const NAME: &str = "dnstest";
const ANSWER4: [u8; 4] = [192, 0, 2, 7];
const ANSWER6: &str = "2001:db8::7";

/// Each shell's one-way delay, in ms.
const DELAY_MS: u64 = 10;

/// Answers A and AAAA queries for NAME.DOMAIN from `socket`, NXDOMAIN to
/// anything else, until the socket's read times out.
fn respond(socket: UdpSocket) {
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut query = [0u8; 1500];
    while let Ok((n, from)) = socket.recv_from(&mut query) {
        if let Some(answer) = answer(&query[..n]) {
            let _ = socket.send_to(&answer, from);
        }
    }
}

/// The answer to one query: the header and question copied, with one
/// record when the question is NAME.DOMAIN's A or AAAA.
fn answer(query: &[u8]) -> Option<Vec<u8>> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let length = *query.get(at)? as usize;
        at += 1;
        if length == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(query.get(at..at + length)?).to_lowercase());
        at += length;
    }
    let kind = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
    let question_end = at + 4;
    let asked = labels.join(".");
    let data: Option<Vec<u8>> = match (asked == format!("{NAME}.{DOMAIN}"), kind) {
        (true, 1) => Some(ANSWER4.to_vec()),
        (true, 28) => Some(
            ANSWER6
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets()
                .to_vec(),
        ),
        _ => None,
    };
    let mut answer = query.get(..question_end)?.to_vec();
    // Response, recursion desired and available; NXDOMAIN for other names.
    answer[2] = 0x81;
    answer[3] = if asked == format!("{NAME}.{DOMAIN}") {
        0x80
    } else {
        0x83
    };
    answer[6..12].copy_from_slice(&[0, data.is_some() as u8, 0, 0, 0, 0]);
    if let Some(data) = data {
        answer.extend_from_slice(&[0xc0, 0x0c]);
        answer.extend_from_slice(&kind.to_be_bytes());
        answer.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        answer.extend_from_slice(&(data.len() as u16).to_be_bytes());
        answer.extend_from_slice(&data);
    }
    Some(answer)
}

/// Runs emu with `args` on a scratch host whose resolv.conf is
/// `resolv_conf`, with the test's responder on `resolver` (none: the host
/// has no resolver). The scratch's resolv.conf must be as it was after.
fn on_scratch_host(resolv_conf: &str, resolver: Option<IpAddr>, args: &[&str]) -> Output {
    let dir = temp_dir("dns-host");
    let file = dir.join("resolv.conf");
    std::fs::write(&file, resolv_conf).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        // SAFETY: namespace calls on this thread alone (it has its own
        // file-system context once CLONE_NEWNS is unshared).
        unsafe {
            assert_eq!(libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWNS), 0);
        }
        mount(None, "/", libc::MS_REC | libc::MS_PRIVATE);
        mount(Some(&file), "/etc/resolv.conf", libc::MS_BIND);
        let up = std::process::Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .unwrap();
        assert!(up.success());
        if let Some(address) = resolver {
            let socket = UdpSocket::bind(SocketAddr::new(address, 53)).unwrap();
            std::thread::spawn(move || respond(socket));
        }
        let out = emu()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("running emu");
        assert_eq!(
            std::fs::read_to_string("/etc/resolv.conf").unwrap(),
            std::fs::read_to_string(&file).unwrap(),
            "the host's resolv.conf changed"
        );
        out
    })
    .join()
    .unwrap()
}

/// mount(2) with no file system type or data, failing the test on error.
fn mount(source: Option<&Path>, target: &str, flags: libc::c_ulong) {
    let source = source.map(|s| std::ffi::CString::new(s.as_os_str().as_encoded_bytes()).unwrap());
    let target = std::ffi::CString::new(target).unwrap();
    // SAFETY: NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::mount(
            source.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    assert_eq!(
        done,
        0,
        "mount {target:?}: {}",
        std::io::Error::last_os_error()
    );
}

/// A resolv.conf as systemd-resolved writes it, naming `server`.
fn resolved_style(server: &str) -> String {
    format!(
        "# This is a scratch host's stub-resolv.conf\nnameserver {server}\noptions edns0 trust-ad\nsearch {DOMAIN}\n"
    )
}

/// The flows to or from port 53 a shell's log names in `direction`, with
/// whether their tuple is IPv6.
fn dns_flows(records: &[Record], direction: Direction) -> Vec<(u32, bool)> {
    records
        .iter()
        .filter(|r| r.event == Event::Flow && r.direction == direction && r.ecn == 17)
        .filter(|r| {
            let (source, destination) = (r.queue_bytes >> 16, r.queue_bytes & 0xffff);
            source == 53 || destination == 53
        })
        .map(|r| (r.flow, r.detail != 4))
        .collect()
}

/// Shell `shell`'s log in `dir`, every record.
fn shell_log(dir: &Path, shell: usize) -> Vec<Record> {
    LogReader::open(&dir.join(format!("{shell}-delay.emulog")))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Each shell's log holds the lookup in both directions, in the family
/// `ipv6` says, and every such packet left the shell its delay after it
/// came.
fn assert_lookups_cross_the_path(dir: &Path, ipv6: bool) {
    for shell in 0..2 {
        let records = shell_log(dir, shell);
        for direction in Direction::BOTH {
            let flows = dns_flows(&records, direction);
            assert!(
                !flows.is_empty(),
                "shell {shell} {direction:?}: no DNS packet in the log"
            );
            assert!(
                flows.iter().all(|(_, v6)| *v6 == ipv6),
                "shell {shell} {direction:?}: lookups in the wrong family: {flows:?}"
            );
            let mut crossed = 0;
            for arrival in records.iter().filter(|r| {
                r.event == Event::Arrive
                    && r.direction == direction
                    && flows.iter().any(|(f, _)| *f == r.flow)
            }) {
                let departure = records
                    .iter()
                    .find(|r| {
                        r.event == Event::Depart
                            && r.direction == direction
                            && r.fingerprint == arrival.fingerprint
                            && r.time >= arrival.time
                    })
                    .expect("a lookup packet left the shell");
                let held = departure.time - arrival.time;
                assert!(
                    held >= DELAY_MS * 1_000_000,
                    "shell {shell} {direction:?}: a lookup packet was held {held} ns, less than the shell's delay"
                );
                crossed += 1;
            }
            assert!(crossed > 0, "shell {shell} {direction:?}");
        }
    }
}

/// `emu --log DIR delay 10 -- delay 10 -- getent ahosts NAME` plus `extra`
/// options, on a scratch host with `resolv_conf` and a resolver at
/// `resolver`: emu's output, and the log directory.
fn look_up_through_two_shells(
    resolv_conf: &str,
    resolver: Option<IpAddr>,
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let dir = temp_dir("dns-logs");
    let d = dir.display().to_string();
    let delay = DELAY_MS.to_string();
    let mut args = vec!["--log", &d];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[
        "delay", &delay, "--", "delay", &delay, "--", "getent", "ahosts", NAME,
    ]);
    (on_scratch_host(resolv_conf, resolver, &args), dir)
}

/// [`look_up_through_two_shells`] on a host whose resolver is
/// systemd-resolved's stub on 127.0.0.53.
fn look_up_through_the_stub(extra: &[&str]) -> (Output, std::path::PathBuf) {
    look_up_through_two_shells(
        &resolved_style("127.0.0.53"),
        Some("127.0.0.53".parse().unwrap()),
        extra,
    )
}

/// The answer holds both the name's addresses, found through the search
/// domain.
fn assert_resolved(out: &Output) {
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("192.0.2.7"), "{stdout}");
    assert!(stdout.contains(ANSWER6), "{stdout}");
    assert!(stdout.contains(&format!("{NAME}.{DOMAIN}")), "{stdout}");
}

/// A host whose resolver is systemd-resolved's stub on 127.0.0.53: a name
/// resolves two shells deep (A and AAAA, with the search domain), and the
/// lookup crossed both shells over IPv4 with their delay.
#[test]
fn a_loopback_resolver_answers_two_shells_deep() {
    let Some(_serial) = start() else { return };
    let (out, dir) = look_up_through_the_stub(&[]);
    assert_resolved(&out);
    assert_lookups_cross_the_path(&dir, false);
}

/// A host whose only resolver listens on ::1: the command asks over IPv6,
/// and the lookup crosses both shells that way.
#[test]
fn a_resolver_on_ipv6_loopback_is_asked_over_ipv6() {
    let Some(_serial) = start() else { return };
    let (out, dir) =
        look_up_through_two_shells(&resolved_style("::1"), Some("::1".parse().unwrap()), &[]);
    assert_resolved(&out);
    assert_lookups_cross_the_path(&dir, true);
}

/// An emu inside an emu's shell (two processes): the inner one's relay
/// asks the outer one's, so the name resolves and the lookup crosses the
/// outer shell too, with its delay.
#[test]
fn an_emu_nested_in_an_emu_resolves_through_both() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("dns-nested");
    let d = dir.display().to_string();
    let delay = DELAY_MS.to_string();
    let out = on_scratch_host(
        &resolved_style("127.0.0.53"),
        Some("127.0.0.53".parse().unwrap()),
        &[
            "--log",
            &d,
            "delay",
            &delay,
            "--",
            env!("CARGO_BIN_EXE_emu"),
            "delay",
            &delay,
            "--",
            "getent",
            "ahosts",
            NAME,
        ],
    );
    assert_resolved(&out);
    let records = shell_log(&dir, 0);
    for direction in Direction::BOTH {
        assert!(
            !dns_flows(&records, direction).is_empty(),
            "{direction:?}: no DNS packet in the outer emu's log"
        );
    }
}

/// `--dns host`: the name resolves, and no lookup crosses the path.
#[test]
fn with_dns_host_lookups_skip_the_path() {
    let Some(_serial) = start() else { return };
    let (out, dir) = look_up_through_the_stub(&["--dns", "host"]);
    assert_resolved(&out);
    for shell in 0..2 {
        let records = shell_log(&dir, shell);
        assert!(
            dns_flows(&records, Direction::Uplink).is_empty(),
            "shell {shell}: a lookup crossed the path"
        );
    }
}

/// A host whose resolv.conf names a stub nobody runs: emu says at start
/// that names will not resolve, and the lookup fails inside as outside.
#[test]
fn without_a_resolver_emu_says_so_and_lookups_fail() {
    let Some(_serial) = start() else { return };
    let (out, _) = look_up_through_two_shells(&resolved_style("127.0.0.53"), None, &[]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("names will not resolve"), "{stderr}");
    assert!(stderr.contains("127.0.0.53"), "{stderr}");
    assert!(!out.status.success(), "{}{stderr}", text(&out.stdout));
    assert!(!text(&out.stdout).contains("192.0.2.7"));
}

/// The files named `name` anywhere under `dir`.
fn find(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(find(&path, name));
        } else if path.file_name().is_some_and(|n| n == name) {
            found.push(path);
        }
    }
    found
}

/// `emu run`: a host's command resolves a name through the same loopback
/// resolver (its path leads only to the other hosts, so the lookup
/// crosses none).
#[test]
fn an_experiments_host_resolves_names_too() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("dns-run");
    let file = dir.join("lookup.toml");
    std::fs::write(
        &file,
        format!(
            "[run]\nduration = \"1s\"\n\n[hosts.a]\nside = \"left\"\n\n[hosts.b]\nside = \"right\"\n\n\
             [[flows]]\nname = \"lookup\"\nkind = \"command\"\nfrom = \"a\"\ncommand = \"getent ahosts {NAME}\"\n"
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let ran = on_scratch_host(
        &resolved_style("127.0.0.53"),
        Some("127.0.0.53".parse().unwrap()),
        &[
            "run",
            &file.display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
    );
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    let outputs = find(&out, "lookup.out");
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    let looked_up = std::fs::read_to_string(&outputs[0]).unwrap();
    assert!(looked_up.contains("192.0.2.7"), "{looked_up}");
    assert!(
        looked_up.contains(&format!("{NAME}.{DOMAIN}")),
        "{looked_up}"
    );
}
