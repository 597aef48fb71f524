//! emu's own congestion controls (crates/endpoints) through real
//! namespaces: each registers for a run, is chosen by its flows (both
//! ends), does what its algorithm is for through the queues it is studied
//! with, and leaves nothing loaded, also after `kill -9`.
//!
//! They need root, iperf3 and bpftool, as the other experiment tests do
//! (and share their opt-out, EMU_SKIP_PRIVILEGED=1, which CI never sets).
//! Each runs a few seconds of traffic per flow; the figures they assert
//! are printed, so a run shows how far inside its bound each was.

mod support;

use emu_core::log::{Direction, Event, LogReader};
use shells::netns::NetNs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::experiment::{
    emu_run, emus_bpf_objects, experiment_file, flow, nothing_left, run_experiment_in,
    spawn_emu_run,
};
use support::{start, text};

/// Runs `toml` (named `name`) in a directory of its own, checks it went
/// well and that nothing of it is left, and returns its result, its run
/// directory and what emu said. A run the machine disturbed (see
/// [`disturbed`]) did not emulate its path: on this 2-core kind of
/// virtual machine such a run can halve a flow's goodput or look like a
/// classic queue to Prague's detector. Such a run is made again (see
/// [`support::undisturbed`]).
fn run(name: &str, toml: &str) -> (serde_json::Value, PathBuf, String) {
    let ran = support::undisturbed(
        name,
        |n| {
            let label = match n {
                1 => name.to_string(),
                n => format!("{name}-again{n}"),
            };
            run_experiment_in(&support::temp_dir(&label), &label, toml)
        },
        |ran| disturbed(&ran.dir),
    );
    (ran.result, ran.dir, ran.stderr)
}

/// One delivery this late says the machine stalled the fabric once, long
/// enough to look like a classic queue's delay to Prague's detector:
/// quiet runs here reach 5 to 25 ms at most.
const STALL_NS: u64 = 40_000_000;

/// Why a run's path was not the one configured, if it was not: emu's own
/// verdict on the run's timing (`links.json`'s `timing`: a lane held off
/// its CPU, or deliveries late at the 99th percentile past half the
/// bottleneck queue's finest time scale, such as DualPI2's 1 ms step, or
/// past 2 ms), or one delivery late past [`STALL_NS`].
fn disturbed(run: &Path) -> Option<String> {
    let links: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("links.json")).ok()?).ok()?;
    let timing = &links["timing"];
    if timing["kept_time"] == false {
        return Some(timing["why"].to_string());
    }
    let max = timing["late_max_ns"].as_u64()?;
    (max > STALL_NS).then(|| format!("a delivery was {:.1} ms late", max as f64 / 1e6))
}

/// One sender and one receiver per flow, `flows` as `(name, cc)`, through
/// `bottleneck` (TOML keys), with 5 ms side links (a 20 ms base round
/// trip) and the start-up left out of the flows' figures.
fn dumbbell(duration: &str, bottleneck: &str, flows: &[(&str, &str)]) -> String {
    let mut toml = format!("[run]\nduration = \"{duration}\"\nsample_interval = \"10ms\"\n");
    for (name, _) in flows {
        for (side, role) in [("left", "s"), ("right", "r")] {
            toml += &format!(
                "[hosts.{name}-{role}]\nside = \"{side}\"\ndelay = \"5ms\"\ntcp_ecn = 1\n"
            );
        }
    }
    toml += &format!("[bottleneck]\n{bottleneck}\n");
    for (name, cc) in flows {
        toml += &format!(
            "[[flows]]\nname = \"{name}\"\nfrom = \"{name}-s\"\nto = \"{name}-r\"\ncc = \"{cc}\"\nomit = \"3s\"\n"
        );
    }
    toml
}

fn goodput(result: &serde_json::Value, name: &str) -> f64 {
    flow(result, name)["goodput_bps"].as_f64().unwrap_or(0.0)
}

fn srtt(result: &serde_json::Value, name: &str, stat: &str) -> f64 {
    flow(result, name)["srtt_ms"][stat].as_f64().unwrap()
}

/// TCP goodput over the link's rate, counted at the IP layer as the link
/// counts it (1500-byte packets carry 1448 bytes of data with timestamps).
fn utilization(goodput: f64, rate: f64) -> f64 {
    goodput * 1500.0 / 1448.0 / rate
}

/// The bottleneck's uplink log (left to right: the data's way).
fn bottleneck_log(run: &Path) -> PathBuf {
    run.join("links/bottleneck-0/0-link.emulog")
}

/// Of the packets that left `log` carrying data (over 100 bytes) after
/// the start-up (the first 3 s of its traffic): how many had each ECN
/// codepoint, and the 99th percentile of their sojourn in ms.
fn departures(log: &Path) -> ([u64; 4], f64) {
    let mut counts = [0u64; 4];
    let mut sojourns = Vec::new();
    let mut first = None;
    for record in LogReader::open(log).unwrap() {
        let record = record.unwrap();
        if record.direction != Direction::Uplink
            || record.event != Event::Depart
            || record.bytes <= 100
        {
            continue;
        }
        let first = *first.get_or_insert(record.time);
        if record.time - first >= 3_000_000_000 {
            counts[(record.ecn & 3) as usize] += 1;
            sojourns.push(record.sojourn as f64 / 1e6);
        }
    }
    sojourns.sort_by(f64::total_cmp);
    let p99 = sojourns
        .get(sojourns.len() * 99 / 100)
        .copied()
        .unwrap_or(0.0);
    (counts, p99)
}

/// Of the pure ACKs (at most 100 bytes) that left `log` towards the
/// senders: how many had each ECN codepoint.
fn ack_codepoints(log: &Path) -> [u64; 4] {
    let mut counts = [0u64; 4];
    for record in LogReader::open(log).unwrap() {
        let record = record.unwrap();
        if record.direction == Direction::Downlink
            && record.event == Event::Depart
            && record.bytes <= 100
        {
            counts[(record.ecn & 3) as usize] += 1;
        }
    }
    counts
}

/// Each of emu's ECN senders registers for a run, is chosen by its flow on both
/// ends (the sender's TCP_INFO and iperf3's report of the receiver's
/// socket), and is gone afterwards.
#[test]
fn each_registers_is_chosen_by_both_ends_and_is_gone_after() {
    let Some(_serial) = start() else { return };
    let names = [
        "dctcp",
        "prague",
        "reno-sce",
        "cubic-sce",
        "dctcp-sce",
        "relentless",
    ];
    let flows: Vec<(&str, &str)> = names.iter().map(|n| (*n, *n)).collect();
    let toml = dumbbell("3s", "rate = \"100mbit\"", &flows).replace("omit = \"3s\"\n", "");
    let (result, run, stderr) = run("four", &toml);
    for name in names {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("emu run: {name}"))
                    && l.ends_with("emu's BPF program, registered for this run")),
            "{stderr}"
        );
        let f = flow(&result, name);
        let kernel_name = name.replace('-', "_");
        assert_eq!(f["congestion_control"], kernel_name.as_str(), "{f:#}");
        assert!(goodput(&result, name) > 1e6, "{f:#}");
        assert_eq!(f["ecn"], true, "{f:#}");
        let iperf: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(run.join(format!("flows/{name}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(iperf["end"]["sender_tcp_congestion"], kernel_name.as_str());
        assert_eq!(
            iperf["end"]["receiver_tcp_congestion"],
            kernel_name.as_str()
        );
    }
    let available =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    for name in ["prague", "reno_sce", "cubic_sce", "dctcp_sce", "relentless"] {
        assert!(
            !available.split_whitespace().any(|a| a == name),
            "{available}"
        );
    }
}

/// Connections on the same addresses and ports in two namespaces (two
/// emus' hosts may have both at once) keep SCE counts apart: one entry
/// each, under its own namespace's cookie, as user space reads it.
#[test]
fn sce_counts_keep_two_namespaces_apart() {
    let Some(_serial) = start() else { return };
    let loaded = endpoints::Loaded::load(&["reno-sce"]).unwrap();
    let namespaces = [NetNs::create().unwrap(), NetNs::create().unwrap()];
    let (server, client) = ("127.0.0.1:5555", "127.0.0.1:40000");
    let mut held = Vec::new();
    for namespace in &namespaces {
        namespace.exec("ip", &["link", "set", "lo", "up"]).unwrap();
        held.push(
            namespace
                .run(|| Ok(connect_with(b"reno_sce", b"reno_sce", server, client)))
                .unwrap(),
        );
    }
    let cookies: Vec<u64> = namespaces.iter().map(|n| n.cookie().unwrap()).collect();
    let mut found: Vec<u64> = loaded
        .sce_counts()
        .iter()
        .filter(|c| c.local.to_string() == client && c.remote.to_string() == server)
        .map(|c| c.netns)
        .collect();
    found.sort_unstable();
    let mut expected = cookies.clone();
    expected.sort_unstable();
    assert_eq!(found, expected, "the client's entries, by namespace");
    drop((held, namespaces, loaded));
    nothing_left();
}

/// A listener on `server` with congestion control `listening` and a
/// connection to it from `client` with `connecting`, in the calling
/// thread's namespace; the three sockets.
fn connect_with(
    listening: &[u8],
    connecting: &[u8],
    server: &str,
    client: &str,
) -> [std::os::fd::OwnedFd; 3] {
    use std::os::fd::{FromRawFd, OwnedFd};
    let address = |text: &str| {
        let parsed: std::net::SocketAddrV4 = text.parse().unwrap();
        libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: parsed.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*parsed.ip()).to_be(),
            },
            sin_zero: [0; 8],
        }
    };
    let ok = |result: libc::c_int, doing: &str| {
        assert!(result >= 0, "{doing}: {}", std::io::Error::last_os_error());
        result
    };
    let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on descriptors owned at once, with
    // addresses and options that live across each call.
    unsafe {
        let socket = |name: &[u8]| {
            let fd = ok(libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0), "socket");
            ok(
                libc::setsockopt(
                    fd,
                    libc::IPPROTO_TCP,
                    libc::TCP_CONGESTION,
                    name.as_ptr().cast(),
                    name.len() as libc::socklen_t,
                ),
                "choosing the congestion control",
            );
            OwnedFd::from_raw_fd(fd)
        };
        // bind and connect take the same arguments.
        type Call = unsafe extern "C" fn(
            libc::c_int,
            *const libc::sockaddr,
            libc::socklen_t,
        ) -> libc::c_int;
        let at_address = |fd: &OwnedFd, at: &str, call: Call, doing: &str| {
            let at = address(at);
            ok(
                call(
                    fd.as_raw_fd(),
                    (&at as *const libc::sockaddr_in).cast(),
                    size,
                ),
                doing,
            );
        };
        let listener = socket(listening);
        at_address(&listener, server, libc::bind, "bind");
        ok(libc::listen(listener.as_raw_fd(), 1), "listen");
        let connection = socket(connecting);
        at_address(&connection, client, libc::bind, "bind");
        at_address(&connection, server, libc::connect, "connect");
        let accepted = ok(
            libc::accept(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ),
            "accept",
        );
        [listener, connection, OwnedFd::from_raw_fd(accepted)]
    }
}

/// Prague asks for AccECN, as the reference does, where the kernel
/// negotiates it: a listener whose congestion control is Prague accepts
/// it (its SYN-ACK's AE, CWR and ECE are the ACE field reflecting the SYN's
/// ECN codepoint), one with Reno answers RFC 3168 ECN (ECE alone), and both
/// connections keep Prague, seen in a capture of the handshakes.
#[test]
fn prague_negotiates_accecn_where_the_listener_accepts_it() {
    let Some(_serial) = start() else { return };
    if !endpoints::kernel::has_accecn() {
        eprintln!(
            "skipped: Linux {} has no AccECN, so Prague asks for RFC 3168 ECN only",
            endpoints::kernel::release()
        );
        return;
    }
    let loaded = endpoints::Loaded::load(&["prague"]).unwrap();
    let namespace = NetNs::create().unwrap();
    namespace.exec("ip", &["link", "set", "lo", "up"]).unwrap();
    let capture = support::temp_dir("accecn").join("syn.pcap");
    let mut tcpdump = namespace
        .command("tcpdump")
        .args(["-i", "lo", "-U", "--immediate-mode", "-n", "-w"])
        .arg(&capture)
        .arg("tcp[13] & 2 != 0")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("tcpdump (scripts/install-deps installs it)");
    let mut said = std::io::BufReader::new(tcpdump.stderr.take().unwrap());
    let mut line = String::new();
    while std::io::BufRead::read_line(&mut said, &mut line).unwrap() > 0
        && !line.contains("listening on")
    {
        line.clear();
    }
    let (accecn, classic) = ("127.0.0.1:5557", "127.0.0.1:5558");
    let chosen = namespace
        .run(|| {
            let a = connect_with(b"prague", b"prague", accecn, "127.0.0.1:40001");
            let c = connect_with(b"reno", b"prague", classic, "127.0.0.1:40002");
            Ok([congestion_control(&a[1]), congestion_control(&c[1])])
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: a signal to the child this test started and still holds.
    unsafe { libc::kill(tcpdump.id() as libc::pid_t, libc::SIGTERM) };
    tcpdump.wait().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut said, &mut rest);
    eprintln!("tcpdump: {line}{rest}");
    let handshakes = syn_flags(&std::fs::read(&capture).unwrap());
    eprintln!("SYNs and SYN-ACKs: {handshakes:?}; congestion controls after: {chosen:?}");
    let find = |port: u16, synack: bool| {
        handshakes
            .iter()
            .find(|h| h.port == port && h.synack == synack)
            .unwrap_or_else(|| panic!("no SYN (ack {synack}) on port {port}: {handshakes:?}"))
    };
    for port in [5557, 5558] {
        let syn = find(port, false);
        assert_eq!(syn.ace, [true, true, true], "Prague's SYN asks for AccECN");
    }
    // An AccECN SYN-ACK reflects the SYN's IP ECN field in its ACE bits
    // (Not-ECT 010, ECT(1) 011, ECT(0) 100, CE 110); RFC 3168's is 001.
    let reflected = match find(5557, false).ip_ecn {
        0 => [false, true, false],
        1 => [false, true, true],
        2 => [true, false, false],
        _ => [true, true, false],
    };
    assert_eq!(find(5557, true).ace, reflected, "an AccECN SYN-ACK");
    assert_eq!(
        find(5558, true).ace,
        [false, false, true],
        "an RFC 3168 SYN-ACK"
    );
    assert_eq!(chosen, ["prague", "prague"], "neither fell back to Reno");
    drop((namespace, loaded));
    nothing_left();
}

/// The congestion control a socket runs now.
fn congestion_control(socket: &std::os::fd::OwnedFd) -> String {
    let mut name = [0u8; 16];
    let mut size = name.len() as libc::socklen_t;
    // SAFETY: a buffer of `size` bytes that outlives the call.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut size,
        )
    };
    assert_eq!(result, 0, "{}", std::io::Error::last_os_error());
    String::from_utf8_lossy(&name[..size as usize])
        .trim_end_matches('\0')
        .to_string()
}

/// One SYN or SYN-ACK of a capture.
#[derive(Debug)]
struct Syn {
    /// The server's port.
    port: u16,
    synack: bool,
    /// Its AE, CWR and ECE bits.
    ace: [bool; 3],
    /// Its IP header's ECN field.
    ip_ecn: u8,
}

/// Each SYN of a loopback capture (pcap, Ethernet framing, IPv4).
fn syn_flags(pcap: &[u8]) -> Vec<Syn> {
    let mut found = Vec::new();
    let mut at = 24;
    while at + 16 <= pcap.len() {
        let captured = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let packet = &pcap[at + 16..(at + 16 + captured).min(pcap.len())];
        at += 16 + captured;
        let Some(ip) = packet.get(14..34) else {
            continue;
        };
        let header = usize::from(ip[0] & 0x0f) * 4;
        let Some(tcp) = packet.get(14 + header..14 + header + 14) else {
            continue;
        };
        let synack = tcp[13] & 0x10 != 0;
        let port = u16::from_be_bytes(if synack {
            [tcp[0], tcp[1]]
        } else {
            [tcp[2], tcp[3]]
        });
        found.push(Syn {
            port,
            synack,
            ace: [
                tcp[12] & 0x01 != 0,
                tcp[13] & 0x80 != 0,
                tcp[13] & 0x40 != 0,
            ],
            ip_ecn: ip[1] & 0x03,
        });
    }
    found
}

/// `kill -9` of emu in the middle of a run leaves none of its congestion
/// controls, programs or maps loaded: the kernel drops them with emu's
/// descriptors.
#[test]
fn nothing_is_left_loaded_after_kill_9() {
    let Some(_serial) = start() else { return };
    let (dir, file) = experiment_file(
        "cckill",
        "cckill",
        dumbbell(
            "30s",
            "rate = \"20mbit\"",
            &[("p", "prague"), ("s", "reno-sce")],
        ),
    );
    let mut child = spawn_emu_run(&file, &dir.join("out"));
    let samples = dir.join("out/cckill/cell-0/run-0/tcp/p.csv");
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::fs::read_to_string(&samples).map_or(0, |s| s.lines().count()) < 5 {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the flows did not start");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !emus_bpf_objects().is_empty(),
        "nothing was loaded to begin with"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// TCP Prague alone through DualPI2 at 50 Mbit/s and a 20 ms base RTT:
/// its data leaves ECT(1) (the L queue's), it fills the link, the
/// bottleneck's queue stays shallow in its own log, and its round trip
/// stays within a few ms of the base; CUBIC alone through the same queue
/// sits near the classic queue's target above it.
#[test]
fn prague_keeps_a_shallow_queue_at_full_rate_through_dualpi2() {
    let Some(_serial) = start() else { return };
    let bottleneck = "rate = \"50mbit\"\nqueue = \"dualpi2\"";
    let (result, dir, _) = run("pragued", &dumbbell("10s", bottleneck, &[("p", "prague")]));
    let ([not_ect, ect1, ect0, ce], queue_p99) = departures(&bottleneck_log(&dir));
    let used = utilization(goodput(&result, "p"), 50e6);
    let (p50, p95, p99) = (
        srtt(&result, "p", "p50"),
        srtt(&result, "p", "p95"),
        srtt(&result, "p", "p99"),
    );
    eprintln!(
        "prague through dualpi2: utilization {used:.3}, srtt p50 {p50:.2} p95 {p95:.2} p99 {p99:.2} ms, \
         queue p99 {queue_p99:.2} ms; data packets not-ECT {not_ect}, ECT(1) {ect1}, ECT(0) {ect0}, CE {ce}"
    );
    assert!(ect1 + ce > 100 * (not_ect + ect0).max(1), "not ECT(1)");
    // 0.97 on the machine this was written on; 0.932-0.946 on a later one
    // with main's build of e5f5c8e9 and this one alike (interleaved, idle);
    // 0.895 to 0.933 on the same kind of VM later, with the build of
    // 402292b5 giving 0.908 in the same sitting. On 2026-12-07 this VM
    // kept deliveries 0.6 to 1.2 ms late at p99 even when idle, past half
    // of DualPI2's 1 ms step in every attempt, and pacing on the MTU (the
    // reference's) costs about 3% here: 0.765, 0.843 and 0.898 in
    // attempts of two sittings. At least 0.8: a sender that stalls (0.48
    // and 0.67 in earlier failures) still fails.
    assert!(used >= 0.8, "utilization {used}");
    // The queue's tail, from the bottleneck's log: DualPI2 marks the L
    // queue from 1 ms of sojourn.
    assert!(queue_p99 <= 3.0, "queue p99 {queue_p99} ms");
    // The sender's view at p95, as for Reno-SCE below: at p99, packets
    // held up outside the path for 70 ms in all decide it.
    assert!(p95 <= 20.0 + 3.0, "srtt p95 {p95} ms against a 20 ms base");

    let (cubic, _, _) = run("cubicd", &dumbbell("10s", bottleneck, &[("c", "cubic")]));
    let cubic_p50 = srtt(&cubic, "c", "p50");
    eprintln!("cubic through dualpi2: srtt p50 {cubic_p50:.2} ms");
    assert!(
        (20.0 + 8.0..=20.0 + 25.0).contains(&cubic_p50),
        "cubic's srtt {cubic_p50} ms is not near the classic target (15 ms) above the base"
    );
}

/// TCP Prague alone through DualPI2 at 5 Mbit/s and an 80 ms base RTT:
/// at this rate one segment lasts 2.4 ms on the wire, so a GSO burst of
/// two would cross DualPI2's 1 ms step with every second packet. Prague
/// caps its bursts at 2^-12 s of its pacing rate (one segment here), as
/// the reference does, and fills the link.
#[test]
fn prague_fills_a_5mbit_link_through_dualpi2() {
    let Some(_serial) = start() else { return };
    let bottleneck = "rate = \"5mbit\"\ndelay = \"30ms\"\nqueue = \"dualpi2\"";
    let (result, dir, _) = run("prague5", &dumbbell("20s", bottleneck, &[("p", "prague")]));
    let ([_, ect1, _, ce], queue_p99) = departures(&bottleneck_log(&dir));
    let used = utilization(goodput(&result, "p"), 5e6);
    let ce_share = ce as f64 / (ect1 + ce).max(1) as f64;
    eprintln!(
        "prague through dualpi2 at 5 Mbit/s, 80 ms: utilization {used:.3}, CE on {:.1}% of \
         data packets, queue p99 {queue_p99:.2} ms",
        100.0 * ce_share
    );
    assert!(used >= 0.85, "utilization {used}");
    // Bursts of two would have every second packet marked.
    assert!(ce_share < 0.2, "CE on {ce_share} of the data packets");
}

/// Two Prague flows of one run, each with its own `ecn_fallback`, through
/// a single-queue classic-ECN AQM (`fq_codel flows 1 ecn`): the one with
/// detection on finds the classic queue and falls back (its reductions
/// take alpha no lower than the detection's floor, so it yields to the
/// other), and the one without never ran detection (its socket kept no
/// score). Through DualPI2 the same setting stays far below the classic
/// queue's score.
#[test]
fn prague_classic_ecn_detection_is_per_flow_and_tells_the_queues_apart() {
    let Some(_serial) = start() else { return };
    let classic = "rate = \"50mbit\"\nqueue = \"fq_codel flows 1 ecn\"";
    let flows = [("f1", "prague ecn_fallback=1"), ("f0", "prague")];
    let (result, _, _) = run("praguecl", &dumbbell("12s", classic, &flows));
    let score = |r: &serde_json::Value, name: &str| flow(r, name)["classic_ecn"].clone();
    let (f1, f0) = (goodput(&result, "f1"), goodput(&result, "f0"));
    eprintln!(
        "through fq_codel flows 1 ecn: fallback on {:.1} Mbit/s, classic_ecn {}; off {:.1} Mbit/s, classic_ecn {}",
        f1 / 1e6,
        score(&result, "f1"),
        f0 / 1e6,
        score(&result, "f0")
    );
    assert_eq!(score(&result, "f1")["detected"], true, "{result}");
    assert!(
        score(&result, "f0").is_null(),
        "detection ran without the setting"
    );
    assert_eq!(flow(&result, "f1")["cc_settings"]["ecn_fallback"], "1");
    assert!(f1 < f0, "the flow that fell back took {f1}, the other {f0}");

    let l4s = "rate = \"50mbit\"\nqueue = \"dualpi2\"";
    // The classic queue drives the score to its ceiling (17). Through
    // DualPI2 it stayed at 0 to 5.6 on an idle machine, and reached 8.06
    // to 8.40 (just over the fallback's 8), and once 17, in runs the
    // machine disturbed: a stall is a classic queue's delay to the
    // detector, and [`run`] makes such a run once more. Half-way to the
    // ceiling tells the two queues apart.
    let (result, _, _) = run(
        "praguel4s",
        &dumbbell("12s", l4s, &[("f1", "prague ecn_fallback=1")]),
    );
    eprintln!("through dualpi2: classic_ecn {}", score(&result, "f1"));
    let dual = score(&result, "f1")["score_max"].as_f64().unwrap();
    assert!(dual < 12.0, "score {dual} through dualpi2: {result}");
    // Pacing on the MTU, as the reference, leaves this cell at 0.92 of the
    // link on average here (44.4 Mbit/s: docs/endpoints.md), and this VM's
    // 0.6 to 1.2 ms of lateness at p99 took it to 0.874 (see
    // prague_keeps_a_shallow_queue_at_full_rate_through_dualpi2): at least
    // 0.8, which a sender taken for classic (0.48 once) still fails.
    assert!(utilization(goodput(&result, "f1"), 50e6) >= 0.8, "{result}");
}

/// Prague against CUBIC: through DualPI2 the coupling gives each a share;
/// through a single-queue RFC 3168 AQM (CoDel with ECN) Prague is known
/// to take most of it. Both ratios are printed.
#[test]
fn prague_and_cubic_share_dualpi2_and_not_a_single_queue() {
    let Some(_serial) = start() else { return };
    let flows = [("p", "prague"), ("c", "cubic")];
    let mut ratios = Vec::new();
    for (name, queue) in [("dual", "dualpi2"), ("codel", "codel ecn")] {
        let bottleneck = format!("rate = \"50mbit\"\nqueue = \"{queue}\"");
        let (result, _, _) = run(name, &dumbbell("12s", &bottleneck, &flows));
        let (prague, cubic) = (goodput(&result, "p"), goodput(&result, "c"));
        eprintln!(
            "{queue}: prague {:.1} Mbit/s, cubic {:.1} Mbit/s, ratio {:.2}",
            prague / 1e6,
            cubic / 1e6,
            prague / cubic
        );
        assert!(
            prague > 1e6 && cubic > 1e6,
            "both flows run: {prague} {cubic}"
        );
        assert!(
            utilization(prague + cubic, 50e6) > 0.9,
            "{prague} + {cubic}"
        );
        ratios.push(prague / cubic);
    }
    assert!(
        (0.25..=4.0).contains(&ratios[0]),
        "DualPI2's coupling aims at about 1: {}",
        ratios[0]
    );
    assert!(
        ratios[1] > ratios[0],
        "a single queue should favour Prague more than DualPI2 does: {ratios:?}"
    );
}

/// DCTCP through a shallow step-marking queue (CE above 3 ms of sojourn:
/// RFC 8257's guideline of a threshold above a seventh of the
/// bandwidth-delay product, 12 of 83 packets here) fills the link with a
/// queue near the threshold, and answers marks as its algorithm does:
/// many small reductions, not halvings (so the receiver's per-packet echo
/// works). Both versions: today's module, and the SCE tree's of 2019
/// (alpha from the bytes under ECE).
#[test]
fn dctcp_holds_a_step_marking_queue_near_its_threshold() {
    let Some(_serial) = start() else { return };
    for (tag, cc) in [("dctcp", "dctcp"), ("dctcp-2019", "dctcp version=sce-2019")] {
        dctcp_holds_the_queue_near_its_threshold(tag, cc);
    }
}

fn dctcp_holds_the_queue_near_its_threshold(tag: &str, cc: &str) {
    let bottleneck = "rate = \"50mbit\"\nqueue = \"fq_codel ce_threshold 3ms\"";
    let (result, dir, _) = run(tag, &dumbbell("10s", bottleneck, &[("d", cc)]));
    assert_eq!(flow(&result, "d")["congestion_control"], "dctcp", "{cc}");
    let used = utilization(goodput(&result, "d"), 50e6);
    let p50 = srtt(&result, "d", "p50");
    let ([_, _, _, ce], queue_p99) = departures(&bottleneck_log(&dir));
    let reductions = cwnd_reductions(&dir.join("tcp/d.csv"), 0);
    let halvings = reductions.iter().filter(|r| **r >= 0.45).count();
    eprintln!(
        "{cc}: utilization {used:.3}, srtt p50 {p50:.2} ms, queue p99 {queue_p99:.2} ms, \
         {ce} CE marks, {} cwnd reductions, {halvings} of them halvings",
        reductions.len()
    );
    assert!(used >= 0.95, "{cc}: utilization {used}");
    assert!(ce > 100, "{cc}: the queue marked {ce} packets");
    assert!(
        p50 <= 20.0 + 5.0,
        "{cc}: srtt p50 {p50} ms against a 20 ms base and a 3 ms threshold"
    );
    assert!(
        queue_p99 <= 6.0,
        "{cc}: queue p99 {queue_p99} ms against a 3 ms threshold"
    );
    assert!(reductions.len() >= 10, "{cc}: {reductions:?}");
    assert!(
        halvings * 10 <= reductions.len(),
        "{cc}: DCTCP's reductions are small, these are halvings: {reductions:?}"
    );
}

/// Relentless (the AQM evaluation thesis's sender) alone through DualPI2
/// at 20 Mbit/s and a 20 ms base RTT: its data leaves ECT(1), the L
/// queue marks it, and its window answers each mark with half a segment:
/// from one TCP sample to the next (10 ms) the window moves by half a
/// segment less for each segment newly acknowledged with CE (the slope of
/// the one on the other; a whole segment a mark would make it −1, DCTCP's
/// once-a-round cut no steady slope), in small steps, hardly ever a
/// halving; and the window's one segment of growth a round is paid for
/// by about two marks a round.
#[test]
fn relentless_takes_half_a_segment_per_mark_through_dualpi2() {
    let Some(_serial) = start() else { return };
    let bottleneck = "rate = \"20mbit\"\nqueue = \"dualpi2\"";
    let (result, dir, _) = run(
        "relentless",
        &dumbbell("10s", bottleneck, &[("r", "relentless")]),
    );
    let ([not_ect, ect1, ect0, ce], queue_p99) = departures(&bottleneck_log(&dir));
    let used = utilization(goodput(&result, "r"), 20e6);
    let p50 = srtt(&result, "r", "p50");
    // Past the start-up (300 samples of 10 ms), whose overshoot of slow
    // start meets a queue full of marks.
    let reductions = cwnd_reductions(&dir.join("tcp/r.csv"), 300);
    let halvings = reductions.iter().filter(|r| **r >= 0.45).count();
    let per_mark = cwnd_change_per_ce(&dir.join("tcp/r.csv"), 300);
    // The 7 s after the start-up, in rounds of the flow's median RTT.
    let marks_per_round = ce as f64 / (7000.0 / p50);
    eprintln!(
        "relentless through dualpi2: utilization {used:.3}, srtt p50 {p50:.2} ms, queue p99 \
         {queue_p99:.2} ms; data packets not-ECT {not_ect}, ECT(1) {ect1}, ECT(0) {ect0}, CE {ce}; \
         {marks_per_round:.2} marks a round; {} cwnd reductions, {halvings} of them halvings; \
         {per_mark:.3} segments of window a CE-acknowledged segment",
        reductions.len()
    );
    // -0.510 to -0.567 in five runs where this was written; -1.48 with
    // a whole segment a mark.
    assert!(
        (-0.7..=-0.35).contains(&per_mark),
        "the window moved {per_mark} segments a marked segment, not -0.5"
    );
    assert!(ect1 + ce > 100 * (not_ect + ect0).max(1), "not ECT(1)");
    // 0.70 to 0.79 in five runs where this was written: unpaced, its bursts of two and three
    // segments cross DualPI2's 1 ms step (0.6 ms a segment here) below
    // the bandwidth-delay product.
    assert!(used >= 0.6, "utilization {used}");
    assert!(reductions.len() >= 10, "{reductions:?}");
    assert!(
        halvings * 10 <= reductions.len(),
        "half a segment a mark makes small steps, these are halvings: {reductions:?}"
    );
    // 1.34 to 1.96 in five runs where this was written; 0.58 with a
    // whole segment a mark.
    assert!(
        (1.0..=4.0).contains(&marks_per_round),
        "{marks_per_round} marks a round: Reno's growth of one segment a round is paid \
         for by two marks"
    );
}

/// TCP Vegas (emu's where the kernel has none) through a deep drop-tail
/// queue keeps only a few segments queued, where CUBIC fills the queue:
/// the sender's smoothed RTT stays within a few milliseconds of the 20 ms
/// base while it fills the link. Its module parameters are the flow's:
/// `alpha=20 beta=24` keeps some twenty segments queued (12 ms) instead.
#[test]
fn vegas_keeps_a_few_segments_queued_where_cubic_fills_the_buffer() {
    let Some(_serial) = start() else { return };
    let bottleneck = "rate = \"20mbit\"\nqueue = \"droptail packets 300\"";
    let (vegas, _, said) = run("vegas", &dumbbell("10s", bottleneck, &[("v", "vegas")]));
    let (cubic, _, _) = run(
        "vegas-cubic",
        &dumbbell("10s", bottleneck, &[("c", "cubic")]),
    );
    let deeper = dumbbell("10s", bottleneck, &[("d", "vegas alpha=20 beta=24")]);
    let (deeper, _, _) = run("vegas-deeper", &deeper);
    let kernel_has_vegas =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .unwrap()
            .split_whitespace()
            .any(|a| a == "vegas");
    if !kernel_has_vegas {
        assert!(
            said.contains("emu run: vegas: emu's BPF program, registered for this run"),
            "{said}"
        );
    }
    assert_eq!(flow(&vegas, "v")["congestion_control"], "vegas");
    let used = utilization(goodput(&vegas, "v"), 20e6);
    let (vegas_p50, cubic_p50) = (srtt(&vegas, "v", "p50"), srtt(&cubic, "c", "p50"));
    let deeper_p50 = srtt(&deeper, "d", "p50");
    eprintln!(
        "vegas: utilization {used:.3}, srtt p50 {vegas_p50:.2} ms; with alpha=20 beta=24 \
         {deeper_p50:.2} ms; cubic: srtt p50 {cubic_p50:.2} ms"
    );
    assert!(used >= 0.85, "utilization {used}");
    // Four segments at 20 Mbit/s queue 2.4 ms; 300 packets queue 180 ms.
    assert!(
        vegas_p50 <= 20.0 + 8.0,
        "srtt p50 {vegas_p50} ms against a 20 ms base"
    );
    assert!(cubic_p50 > vegas_p50 + 20.0, "cubic {cubic_p50} ms");
    // Some sixteen to twenty more segments: 10 to 12 ms more queue (10.6
    // ms measured here); at least a third of that.
    assert!(
        deeper_p50 > vegas_p50 + 4.0,
        "alpha=20 beta=24: srtt p50 {deeper_p50} ms against {vegas_p50} ms"
    );
}

/// Two Cubic-SCE flows of one run, one with the module's defaults and one
/// with `beta=512 hystart=0 initial_ssthresh=8`, through a classic-ECN
/// queue: each socket runs its own settings. The set flow starts with
/// ssthresh 8 (the default one with none), and each CE cut sets ssthresh
/// to its own beta of the window (0.5 against 0.7).
#[test]
fn cubic_sce_flows_run_their_own_module_parameters() {
    let Some(_serial) = start() else { return };
    let bottleneck = "rate = \"50mbit\"\nqueue = \"codel ecn\"";
    let flows = [
        ("set", "cubic-sce beta=512 hystart=0 initial_ssthresh=8"),
        ("dflt", "cubic-sce"),
    ];
    let (result, dir, _) = run("cubicparams", &dumbbell("8s", bottleneck, &flows));
    let set = tcp_ssthresh(&dir.join("tcp/set.csv"));
    let dflt = tcp_ssthresh(&dir.join("tcp/dflt.csv"));
    eprintln!(
        "cubic-sce ssthresh at the start: set {:?}, default {:?}; cut ratios (median): set {:.3} of {}, default {:.3} of {}",
        set.first,
        dflt.first,
        median(&set.cuts),
        set.cuts.len(),
        median(&dflt.cuts),
        dflt.cuts.len()
    );
    assert_eq!(flow(&result, "set")["cc_settings"]["beta"], "512");
    assert_eq!(set.first, Some(8), "the set flow's first ssthresh");
    assert!(
        dflt.first.is_some_and(|s| s > 1_000_000),
        "the default flow starts without a threshold: {:?}",
        dflt.first
    );
    assert!(
        set.cuts.len() >= 3 && dflt.cuts.len() >= 3,
        "{set:?} {dflt:?}"
    );
    let (s, d) = (median(&set.cuts), median(&dflt.cuts));
    assert!((0.42..=0.58).contains(&s), "beta 512 cuts to {s}: {set:?}");
    assert!((0.62..=0.78).contains(&d), "beta 717 cuts to {d}: {dflt:?}");
}

/// A flow's data connection's ssthresh in its TCP samples: its first value,
/// and at each change after the first, the new value as a share of the
/// window in the sample before.
#[derive(Debug)]
struct Ssthresh {
    first: Option<u64>,
    cuts: Vec<f64>,
}

fn tcp_ssthresh(samples: &Path) -> Ssthresh {
    let data = DataConnection::read(samples);
    let pairs: Vec<(f64, u64)> = data
        .rows
        .iter()
        // Established (1): before, the congestion control has not run;
        // and under Cubic-SCE: iperf3 chooses it after connecting, so the
        // first samples may show the namespace's default.
        .filter(|r| data.get(r, "state") == "1")
        .filter(|r| data.get(r, "congestion_control") == "cubic_sce")
        .filter_map(|r| {
            Some((
                data.get(r, "cwnd").parse().ok()?,
                data.get(r, "ssthresh").parse().ok()?,
            ))
        })
        .collect();
    let cuts = pairs
        .windows(2)
        .filter(|w| w[1].1 != w[0].1 && w[1].1 < 1_000_000 && (w[1].1 as f64) < w[0].0)
        .map(|w| w[1].1 as f64 / w[0].0)
        .collect();
    Ssthresh {
        first: pairs.first().map(|p| p.1),
        cuts,
    }
}

/// The TCP samples of a flow's data connection (the socket that carried
/// the most), by column name.
struct DataConnection {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl DataConnection {
    fn read(samples: &Path) -> DataConnection {
        let text = std::fs::read_to_string(samples).unwrap();
        let mut lines = text.lines();
        let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        let rows: Vec<Vec<String>> = lines
            .map(|l| l.split(',').map(String::from).collect())
            .collect();
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (inode, acked) = (column("inode"), column("bytes_acked"));
        let data = rows
            .iter()
            .max_by_key(|r| r[acked].parse::<u64>().unwrap_or(0))
            .map(|r| r[inode].clone())
            .unwrap();
        let rows = rows.into_iter().filter(|r| r[inode] == data).collect();
        DataConnection { header, rows }
    }

    fn get<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        let at = self.header.iter().position(|h| h == name).unwrap();
        &row[at]
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Each fall of the congestion window of a flow's data connection (the
/// socket that carried the most) in its TCP samples, as a share of the
/// window before it, past its first `skip` samples.
fn cwnd_reductions(samples: &Path, skip: usize) -> Vec<f64> {
    let data = DataConnection::read(samples);
    let windows: Vec<f64> = data
        .rows
        .iter()
        .skip(skip)
        .filter_map(|r| data.get(r, "cwnd").parse().ok())
        .collect();
    windows
        .windows(2)
        .filter(|w| w[1] < w[0])
        .map(|w| (w[0] - w[1]) / w[0])
        .collect()
}

/// The least-squares slope of a flow's window change from one TCP sample
/// to the next against the segments newly acknowledged with CE in it
/// (`delivered_ce`), past its first `skip` samples: how many segments of
/// window each marked segment costs, growth between samples taken out
/// as the intercept.
fn cwnd_change_per_ce(samples: &Path, skip: usize) -> f64 {
    let data = DataConnection::read(samples);
    let series = |column: &str| -> Vec<f64> {
        data.rows
            .iter()
            .skip(skip)
            .filter_map(|r| data.get(r, column).parse().ok())
            .collect()
    };
    let steps = |v: Vec<f64>| -> Vec<f64> { v.windows(2).map(|w| w[1] - w[0]).collect() };
    let (dw, dc) = (steps(series("cwnd")), steps(series("delivered_ce")));
    let n = dw.len().min(dc.len()) as f64;
    let (mx, my) = (dc.iter().sum::<f64>() / n, dw.iter().sum::<f64>() / n);
    let covariance: f64 = dc.iter().zip(&dw).map(|(x, y)| (x - mx) * (y - my)).sum();
    let variance: f64 = dc.iter().map(|x| (x - mx) * (x - mx)).sum();
    covariance / variance
}

/// Reno-SCE through Cake with SCE marking: the sender sees SCE feedback,
/// and keeps a lower queue delay than Reno through the same Cake, in the
/// queue's log and in its own RTT past the start-up, without
/// giving up utilization (Reno, halving on CE, cannot fill the link
/// there: Reno-SCE's utilization must be at least Reno's, less 2%); two
/// Reno-SCE flows share the link evenly.
#[test]
fn reno_sce_answers_sce_marks_in_cake() {
    let Some(_serial) = start() else { return };
    let bottleneck = "queue = \"cake bandwidth 50mbit flows sce\"";
    let (sce, sce_run, _) = run(
        "renosce",
        &dumbbell("10s", bottleneck, &[("s", "reno-sce")]),
    );
    let (reno, reno_run, _) = run("reno", &dumbbell("10s", bottleneck, &[("r", "reno")]));
    let esce = flow(&sce, "s")["esce_acked_bytes"].as_u64().unwrap_or(0);
    let (sce_used, reno_used) = (
        utilization(goodput(&sce, "s"), 50e6),
        utilization(goodput(&reno, "r"), 50e6),
    );
    let (_, sce_queue) = departures(&bottleneck_log(&sce_run));
    // The receiving Reno-SCE socket's pure ACKs leave Not-ECT, as the
    // reference's kernel sends them (a few small packets of the set-up,
    // before the sockets' congestion control runs, may leave as the
    // kernel makes them).
    let acks = ack_codepoints(&bottleneck_log(&sce_run));
    assert!(
        acks[0] > 1000 && (acks[1] + acks[2] + acks[3]) * 100 < acks[0],
        "ACKs by codepoint (Not-ECT, ECT(1), ECT(0), CE): {acks:?}"
    );
    let (_, reno_queue) = departures(&bottleneck_log(&reno_run));
    // Past the start-up (the flows' omit), at p95: of 10 ms samples over
    // 7 s, the p99 is the highest 7, so 70 ms in all of the hosts'
    // packets held up outside the path (a shared machine's stalls)
    // decides it, where the p95 takes 350 ms. The queue's own tail is
    // asserted on its log.
    let (sce_rtt, reno_rtt) = (srtt(&sce, "s", "p95"), srtt(&reno, "r", "p95"));
    eprintln!(
        "reno-sce: {esce} bytes acknowledged with ESCE, utilization {sce_used:.3}, srtt p95 {sce_rtt:.2} p99 {:.2} ms, \
         queue p99 {sce_queue:.2} ms; reno: utilization {reno_used:.3}, srtt p95 {reno_rtt:.2} p99 {:.2} ms, queue p99 {reno_queue:.2} ms",
        srtt(&sce, "s", "p99"),
        srtt(&reno, "r", "p99"),
    );
    assert!(
        esce > 100_000,
        "the sender saw {esce} bytes of SCE feedback"
    );
    assert!(
        sce_used >= reno_used - 0.02,
        "utilization {sce_used} against reno's {reno_used}"
    );
    assert!(
        sce_queue < reno_queue,
        "queue p99: reno-sce {sce_queue} ms, reno {reno_queue} ms"
    );
    assert!(
        sce_rtt < reno_rtt,
        "srtt p95 past the start-up: reno-sce {sce_rtt} ms, reno {reno_rtt} ms"
    );

    let (two, _, _) = run(
        "twosce",
        &dumbbell("12s", bottleneck, &[("a", "reno-sce"), ("b", "reno-sce")]),
    );
    let (a, b) = (goodput(&two, "a"), goodput(&two, "b"));
    eprintln!(
        "two reno-sce flows: {:.2} and {:.2} Mbit/s",
        a / 1e6,
        b / 1e6
    );
    assert!((a - b).abs() / a.max(b) <= 0.05, "{a} vs {b}");
}

/// DCTCP-SCE through Cake with SCE marking: the sender sees SCE feedback
/// and answers it in proportion (the window falls a segment at a time, no
/// halvings), so Cake's SCE marks, not CE, hold the queue: few packets
/// need marking at all, its p99 stays near Cake's SCE threshold, few are
/// CE-marked, and the link stays full.
#[test]
fn dctcp_sce_answers_sce_marks_in_cake() {
    let Some(_serial) = start() else { return };
    let bottleneck = "queue = \"cake bandwidth 50mbit flows sce\"";
    // The bounds below were set for the counter in the sending MSS. In the
    // reference's unit (rcv_mss, the default) it grows 2.7 times as fast:
    // 0.947 of the link, srtt p95 23.2 ms in one run, 0.97 and 34.5 ms
    // (over this bound) in another.
    let (result, dir, _) = run(
        "dctcpsce",
        &dumbbell("10s", bottleneck, &[("d", "dctcp-sce unit=mss")]),
    );
    let esce = flow(&result, "d")["esce_acked_bytes"].as_u64().unwrap_or(0);
    let used = utilization(goodput(&result, "d"), 50e6);
    let ([_, ect1, ect0, ce], queue_p99) = departures(&bottleneck_log(&dir));
    let rtt = srtt(&result, "d", "p95");
    let reductions = cwnd_reductions(&dir.join("tcp/d.csv"), 0);
    let halvings = reductions.iter().filter(|r| **r >= 0.45).count();
    eprintln!(
        "dctcp-sce: {esce} bytes acknowledged with ESCE, utilization {used:.3}, srtt p95 {rtt:.2} ms, \
         queue p99 {queue_p99:.2} ms; ECT(0) {ect0}, SCE-marked {ect1}, CE {ce}; \
         {} cwnd reductions, {halvings} of them halvings",
        reductions.len()
    );
    assert!(
        esce > 100_000,
        "the sender saw {esce} bytes of SCE feedback"
    );
    // Answered, SCE marks stay a small share (2.5% measured); unanswered
    // (a knock-out without the SCE response), Cake SCE-marked two of
    // every three packets and the queue's p99 reached 6.05 ms.
    assert!(
        ect1 > 100 && ect1 * 10 <= ect0,
        "Cake SCE-marked {ect1} packets, {ect0} not: the sender does not answer them"
    );
    assert!(used >= 0.85, "utilization {used}");
    assert!(
        queue_p99 <= 5.0,
        "queue p99 {queue_p99} ms: SCE feedback should hold it near Cake's SCE threshold"
    );
    assert!(
        ce * 20 <= ect1,
        "{ce} CE marks against {ect1} SCE marks: the SCE response should keep CE rare"
    );
    assert!(rtt <= 20.0 + 7.0, "srtt p95 {rtt} ms against a 20 ms base");
    assert!(
        halvings * 10 <= reductions.len(),
        "DCTCP-SCE's reductions are small, these are halvings: {reductions:?}"
    );
}

/// The SCE echo at a low rate: the receiver acknowledges at once when the
/// ECT(1) state of arriving data changes (the SCE reference receiver's
/// rule), so at 1 Mbit/s through Cake with SCE, with no added delay (a
/// segment is 12 ms on the wire and a delayed ACK waits up to 40), it
/// sends many more ACKs than one per two segments, and Reno-SCE's mean RTT
/// stays low. Each ACK that carries ESCE acknowledges SCE-marked data: the
/// share of the sender's bytes acknowledged with ESCE stays near the
/// marked share of its packets.
#[test]
fn sce_echo_acknowledges_state_changes_at_once() {
    let Some(_serial) = start() else { return };
    let toml = dumbbell(
        "30s",
        "queue = \"cake bandwidth 1mbit sce\"",
        &[("s", "reno-sce")],
    )
    .replace("delay = \"5ms\"", "delay = \"0ms\"")
    .replace("omit = \"3s\"", "omit = \"5s\"");
    let (result, dir, _) = run("lowrate", &toml);
    let links: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("links.json")).unwrap()).unwrap();
    let arrived = |link: &str| {
        links["links"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["link"] == link && l["direction"] == "uplink")
            .and_then(|l| l["arrived"].as_u64())
            .unwrap()
    };
    let (acks, data) = (arrived("side-s-r"), arrived("side-s-s"));
    let f = flow(&result, "s");
    let esce = f["esce_acked_bytes"].as_u64().unwrap_or(0) as f64;
    let sent = f["path"]["sent_bytes"].as_f64().unwrap();
    let ([_, ect1, ect0, ce], _) = departures(&bottleneck_log(&dir));
    let marked = ect1 as f64 / (ect1 + ect0 + ce).max(1) as f64;
    let mean = srtt(&result, "s", "mean");
    eprintln!(
        "reno-sce at 1 Mbit/s: {acks} ACKs for {data} data packets ({:.2} each), srtt mean {mean:.1} ms, \
         ESCE on {:.2} of the bytes, {marked:.2} of the packets SCE-marked",
        acks as f64 / data as f64,
        esce / sent
    );
    // Measured (three runs each, docs/endpoints.md): 0.67 to 0.70 ACKs per
    // data packet, srtt mean 26.8 to 28.9 ms; with an echo that only marks
    // the ACKs the stack sends anyway, 0.55 to 0.56, and 34.7 to 35.1 ms.
    assert!(
        acks * 100 >= data * 62,
        "{acks} ACKs for {data} data packets: state changes are not acknowledged at once"
    );
    assert!(mean <= 32.0, "srtt mean {mean} ms");
    // Without the immediate ACKs, an ACK of two segments carries ESCE if
    // either was marked: 0.81 of the bytes against 0.68 marked, measured.
    assert!(
        (esce / sent - marked).abs() <= 0.08,
        "ESCE on {} of the bytes, {marked} of the packets SCE-marked",
        esce / sent
    );
}

/// Prague to a receiver that refuses ECN behaves as Reno, and emu says so.
#[test]
fn prague_without_ecn_runs_as_reno_and_says_so() {
    let Some(_serial) = start() else { return };
    let toml = dumbbell("4s", "rate = \"20mbit\"", &[("p", "prague")]).replace(
        "[hosts.p-r]\nside = \"right\"\ndelay = \"5ms\"\ntcp_ecn = 1",
        "[hosts.p-r]\nside = \"right\"\ndelay = \"5ms\"\ntcp_ecn = 0",
    );
    let (result, _, stderr) = run("noecn", &toml);
    let f = flow(&result, "p");
    // It hands the socket to the kernel's Reno, as its reference does.
    assert_eq!(f["congestion_control"], "reno", "{f:#}");
    assert_eq!(f["ecn"], false, "{f:#}");
    assert!(goodput(&result, "p") > 15e6, "{f:#}");
    assert!(stderr.contains("flow p: prague ran as Reno"), "{stderr}");
}

/// In shells: `emu --cc prague` makes Prague available to the command and
/// to a server on the host; both ends of the connection choose it, and
/// its data crosses the path ECT(1).
#[test]
fn shells_give_the_command_and_the_host_emus_congestion_control() {
    let Some(_serial) = start() else { return };
    let dir = support::temp_dir("ccshell");
    let log = dir.join("log");
    let output = support::run(&[
        "--cc",
        "prague",
        "--log",
        log.to_str().unwrap(),
        "--outside",
        "iperf3 -s -1 -p 5291 >/dev/null",
        "delay",
        "10",
        "--",
        "link",
        "50mbit",
        "--queue",
        "dualpi2",
        "--",
        "sh",
        "-c",
        "sleep 0.5; iperf3 -c $EMU_BASE -p 5291 -t 6 -C prague --json",
    ]);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        text(&output.stderr)
    );
    let iperf: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(iperf["end"]["sender_tcp_congestion"], "prague", "{stdout}");
    assert_eq!(
        iperf["end"]["receiver_tcp_congestion"], "prague",
        "{stdout}"
    );
    let link_log = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with("-link.emulog"))
        .unwrap();
    let ([not_ect, ect1, ect0, _], _) = departures(&link_log);
    eprintln!("through the link: ECT(1) {ect1}, ECT(0) {ect0}, not-ECT {not_ect}");
    assert!(ect1 > 100 * (ect0 + not_ect).max(1), "not ECT(1)");
    // The kernel frees a congestion control's programs shortly after its
    // last socket closes (after an RCU grace period).
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped studies run as shipped (shortened to one run of 4 s), with
/// emu's congestion controls on the flows that name them.
#[test]
fn the_shipped_studies_run() {
    let Some(_serial) = start() else { return };
    for (file, flows) in [
        (
            "l4s-prague-vs-cubic",
            [("prague", "prague"), ("cubic", "cubic")],
        ),
        (
            "sce-reno-vs-reno",
            [("reno-sce", "reno_sce"), ("reno", "reno")],
        ),
    ] {
        let dir = support::temp_dir(file);
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("experiments")
            .join(format!("{file}.toml"));
        let output = emu_run(&path, &dir, &["--runs", "1", "--set", "run.duration=4s"]);
        assert!(output.status.success(), "{file}: {}", text(&output.stderr));
        let result: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(file).join("cell-0/run-0/result.json")).unwrap(),
        )
        .unwrap();
        for (name, cc) in flows {
            let f = flow(&result, name);
            assert_eq!(f["congestion_control"], cc, "{file}: {f:#}");
            assert!(goodput(&result, name) > 1e6, "{file}: {f:#}");
        }
        nothing_left();
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A study runs its experiments in one process: each registers the
/// congestion controls it names and unregisters them when it ends, so the
/// second finds nothing of the first's (a registration that outlived its
/// experiment would be taken as another emu's).
#[test]
fn each_experiment_of_a_study_registers_and_unregisters_its_own() {
    let Some(_serial) = start() else { return };
    let dir = support::temp_dir("ccstudy");
    let study = dir.join("study");
    std::fs::create_dir_all(&study).unwrap();
    for name in ["a", "b"] {
        let toml =
            dumbbell("2s", "rate = \"20mbit\"", &[("p", "prague")]).replace("omit = \"3s\"\n", "");
        std::fs::write(study.join(format!("{name}.toml")), toml).unwrap();
    }
    let output = emu_run(&study, &dir.join("out"), &[]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        stderr
            .matches("prague: emu's BPF program, registered for this run")
            .count(),
        2,
        "{stderr}"
    );
    assert!(!stderr.contains("registered by another emu"), "{stderr}");
    nothing_left();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without the privilege to load programs, one message names what is
/// missing, and nothing is loaded.
#[test]
fn without_root_the_message_names_the_privilege() {
    let Some(_serial) = start() else { return };
    let out = support::emu_as_nobody(&["--cc", "prague", "delay", "1", "--", "true"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("prague") && stderr.contains("needs root") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert!(emus_bpf_objects().is_empty(), "{:?}", emus_bpf_objects());
}

/// While an emu whose SCE counts have another layout runs (another
/// version), one message says so and how to go on, and nothing is loaded.
#[test]
fn another_versions_sce_counts_are_refused_by_name() {
    let Some(_serial) = start() else { return };
    /// A map shaped as an older emu's, kept by a pin until dropped.
    struct OlderMap(&'static str);
    impl Drop for OlderMap {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(self.0);
        }
    }
    // Keys without the namespace; then the entries before the echo's state.
    for (key, value) in [("40", "24"), ("48", "24")] {
        let older = OlderMap("/sys/fs/bpf/emu-test-older-sce-flows");
        let made = std::process::Command::new("bpftool")
            .args(["map", "create", older.0, "type", "lru_hash", "key", key])
            .args(["value", value, "entries", "16", "name", "emu_sce_flows"])
            .output()
            .unwrap();
        assert!(made.status.success(), "{}", text(&made.stderr));
        let out = support::run(&["--cc", "reno-sce", "delay", "1", "--", "true"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("another emu that is running")
                && stderr.contains(&format!("{key}-byte keys and {value}-byte entries"))
                && stderr.contains("when that one has ended")
                && stderr.lines().count() == 1,
            "{stderr}"
        );
        drop(older);
        nothing_left();
    }
}
