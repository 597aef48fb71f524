//! The per-packet log through real shells: it agrees with the counters,
//! and `emu report` follows packets across shells with the trace's
//! capacity.
//!
//! They need root; see [`support`] for how they run.

mod support;

use emu_core::log::{Event, LogReader};
use support::*;

/// The per-packet log agrees with the counters: for every shell and
/// direction, arrivals, departures and drops in the log match the summary,
/// and read = delivered + dropped + queued.
#[test]
fn the_log_agrees_with_the_counters() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("log");
    let d = dir.display().to_string();
    let out = run(&[
        "--log",
        &d,
        "--stats",
        "delay",
        "2",
        "--",
        "loss",
        "0.2",
        "--seed",
        "9",
        "--",
        "link",
        "2mbit",
        "--queue",
        "droptail packets 5",
        "--",
        "sh",
        "-c",
        "ping -c 60 -i 0.01 -s 1400 -q $EMU_BASE; exit 0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let kinds = ["delay", "loss", "link"];
    let balanced = assert_accounting_balances(&dir, &kinds);
    assert_eq!(balanced.len(), 6);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    let directions = summary["directions"].as_array().unwrap();
    let mut total_drops = 0;
    for (entry, logged) in directions.iter().zip(&balanced) {
        let (shell, direction) = (logged.shell, logged.direction);
        let kind = kinds[shell];
        let dropped = logged
            .records
            .iter()
            .filter(|r| r.event == Event::Drop)
            .count() as u64;
        total_drops += dropped;
        // The kernel's own drops around emu's devices are read at exit and
        // accounted beside emu's: a ping at 100/s overflows no TUN ring.
        let kernel = &entry["kernel"];
        assert!(kernel.is_object(), "kernel counters missing: {entry}");
        assert_eq!(
            kernel["dropped_before_read"].as_u64().unwrap(),
            kernel["tun_ring_dropped"].as_u64().unwrap()
                + kernel["qdisc_dropped"].as_u64().unwrap(),
            "{entry}"
        );
        assert_eq!(kernel["dropped_before_read"], 0, "{entry}");
        assert_eq!(kernel["dropped_after_write"], 0, "{entry}");
        // And the log's header carries the same count.
        let header = LogReader::open(&dir.join(format!("{shell}-{kind}.emulog")))
            .unwrap()
            .header;
        assert_eq!(
            header.kernel_dropped.map(|k| k[direction as usize]),
            kernel["dropped_before_read"].as_u64(),
            "{entry}"
        );
    }
    assert!(total_drops > 0, "the run should have lost packets");
    assert!(
        text(&out.stderr).contains("read "),
        "--stats prints the accounting"
    );
    assert!(
        text(&out.stderr).contains("the kernel dropped 0 on the way in"),
        "--stats prints the kernel's drops: {}",
        text(&out.stderr)
    );
    let dump = emu()
        .args(["log", "dump", &format!("{d}/2-link.emulog")])
        .output()
        .unwrap();
    assert!(text(&dump.stdout).starts_with("time_ns,shell,direction,event"));
}

/// Datagrams a receiver had no room for were delivered by emu and lost
/// past the path: the accounting still balances with every one delivered,
/// and the summary counts them where they were lost (the receiver's
/// namespace), so a receiver's loss is not taken for the path's.
#[test]
fn datagrams_a_full_receiver_drops_are_counted_past_the_path() {
    use std::os::fd::AsRawFd;
    let Some(_serial) = start() else { return };
    // Outside the shell, in this test's namespace: a socket with the
    // smallest buffer the kernel allows, never read.
    let receiver = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let smallest: libc::c_int = 1;
    // SAFETY: setting an int option on a socket we own.
    let set = unsafe {
        libc::setsockopt(
            receiver.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&smallest as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(set, 0);
    let port = receiver.local_addr().unwrap().port().to_string();
    let sent = 300;
    let dir = temp_dir("receivers");
    let d = dir.display().to_string();
    let send = format!(
        "import os, socket, sys\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         for _ in range({sent}): s.sendto(b'x' * 1000, (os.environ['EMU_BASE'], int(sys.argv[1])))\n"
    );
    let out = run(&[
        "--log", &d, "--stats", "--spin", "25us", "delay", "0", "--", "python3", "-c", &send, &port,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let balanced = assert_accounting_balances(&dir, &["delay"]);
    let uplink = balanced
        .iter()
        .find(|b| b.direction == emu_core::log::Direction::Uplink)
        .unwrap();
    assert_eq!(uplink.read, sent, "emu read every datagram");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    let receivers = &summary["receivers"];
    // A buffer of a few kilobytes holds a handful; other programs here
    // can only add to the count outside.
    let outside = receivers["udp_buffer_drops_outside"].as_u64().unwrap();
    assert!((sent - 10..=sent * 2).contains(&outside), "{summary}");
    assert_eq!(receivers["udp_buffer_drops_inside"], 0, "{summary}");
    // A spin the user fixed is the spin reported, budget or not.
    for direction in summary["directions"].as_array().unwrap() {
        assert_eq!(direction["spin_ns"], 25_000, "{direction}");
        // Nor does slack apply to it.
        assert!(direction["slack_ns"].is_null(), "{direction}");
    }
    assert!(
        text(&out.stderr).contains(&format!(
            "receiving sockets dropped {outside} UDP datagrams"
        )),
        "{}",
        text(&out.stderr)
    );
    drop(receiver);
}

/// A chain of shells whose command sends nothing carries nothing: the
/// kernel's own packets stay off the path, even where the namespace
/// between two shells turns IPv6 forwarding on (which joins the
/// all-routers groups, and would announce them with MLD reports).
#[test]
fn a_chain_of_shells_carries_only_the_commands_packets() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("quiet");
    let d = dir.display().to_string();
    let out = run(&[
        "--log", &d, "delay", "1", "--", "delay", "1", "--", "sleep", "3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    let directions = summary["directions"].as_array().unwrap();
    assert_eq!(directions.len(), 4, "{summary}");
    for entry in directions {
        assert_eq!(
            entry["read"], 0,
            "a packet the command did not send: {entry}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_report_follows_packets_across_shells_and_reads_capacity_from_the_trace() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("report");
    let trace = dir.join("12mbps.trace");
    std::fs::write(&trace, "1\n").unwrap();
    let logs = dir.join("logs");
    let t = trace.display().to_string();
    let out = run(&[
        "--log",
        &logs.display().to_string(),
        "delay",
        "15",
        "--",
        "link",
        "--uplink-trace",
        &t,
        "--downlink-trace",
        &t,
        "--",
        "sh",
        "-c",
        "ping -c 20 -i 0.05 -q $EMU_BASE",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The trace travels with the logs.
    assert!(logs.join("1-uplink.trace").exists());
    let report_dir = dir.join("report");
    let out = run(&[
        "report",
        &logs.display().to_string(),
        "--json",
        "--out",
        &report_dir.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Departures are logged when the pump wrote them: each shell may add
    // its lateness (how long after its due time it wrote), which emu's
    // own summary measures.
    let shells: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(logs.join("summary-0.json")).unwrap())
            .unwrap();
    let late_ms = |direction: &str| -> f64 {
        shells["directions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["direction"] == direction)
            .map(|d| d["departure_lateness"]["max_ns"].as_f64().unwrap_or(0.0) / 1e6)
            .sum()
    };
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let directions = summary["runs"][0]["directions"].as_array().unwrap();
    assert_eq!(directions.len(), 2);
    for d in directions {
        let path = &d["path"];
        // Echo requests go up (link first), replies come down (delay first).
        let ends = (path["entry_shell"].as_u64(), path["exit_shell"].as_u64());
        match d["direction"].as_str() {
            Some("uplink") => assert_eq!(ends, (Some(1), Some(0))),
            _ => assert_eq!(ends, (Some(0), Some(1))),
        }
        assert!(path["delivered"].as_u64().unwrap() >= 20, "{path}");
        assert_eq!(path["arrivals"], path["delivered"], "{path}");
        // 15 ms of delay plus up to 1 ms waiting for the trace, plus
        // the pumps' lateness.
        let delay = &path["one_way_delay"];
        let (min, max) = (
            delay["min_ms"].as_f64().unwrap(),
            delay["max_ms"].as_f64().unwrap(),
        );
        let late = late_ms(d["direction"].as_str().unwrap());
        assert!(
            min >= 15.0 && max < 17.0 + late,
            "one-way delay {min}..{max} ms, pumps up to {late} ms late"
        );
        let capacity = path["capacity_mbps"].as_f64().unwrap();
        assert!((capacity - 12.0).abs() < 0.12, "capacity {capacity} Mbit/s");
        assert_eq!(d["bottleneck_shell"], 1);
    }
    let page = std::fs::read_to_string(report_dir.join("index.html")).unwrap();
    assert!(page.matches("<svg").count() >= 8);

    // Bad input: one message naming it, a nonzero status.
    let out = run(&["report", &dir.join("nothing").display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nothing: cannot open"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["report", &logs.display().to_string(), "--bin", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--bin"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `link --queue "cake bandwidth 4mbit"` with no rate: cake's shaper alone
/// is the bottleneck. The report takes its capacity from the shaper, says
/// so, and names the iperf3 flow by its port.
#[test]
fn a_shaping_queue_alone_is_the_bottleneck_and_the_report_names_the_flow() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("shaper");
    let logs = dir.join("logs");
    let mut server = iperf3_server("5934");
    let out = run(&[
        "--log",
        &logs.display().to_string(),
        "link",
        "--queue",
        "cake bandwidth 4mbit besteffort",
        "--",
        "sh",
        "-c",
        "iperf3 -c $EMU_BASE -p 5934 -t 2 >/dev/null",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(&[
        "report",
        &logs.display().to_string(),
        "--json",
        "--flows",
        "port:5934",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let directions = summary["runs"][0]["directions"].as_array().unwrap();
    let up = directions
        .iter()
        .find(|d| d["direction"] == "uplink")
        .unwrap();
    let path = &up["path"];
    let capacity = path["capacity_mbps"].as_f64().unwrap();
    assert!((capacity - 4.0).abs() < 0.01, "capacity {capacity} Mbit/s");
    assert_eq!(path["capacity_source"], "queue shaper", "{path}");
    assert_eq!(up["bottleneck_shell"], 0);
    // iperf3's two connections to the port (control, then data, the
    // bigger), selected by it and named by it.
    let flows = up["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{flows:?}");
    for flow in flows {
        let name = flow["name"].as_str().unwrap();
        assert!(
            name.starts_with("tcp ") && name.ends_with(":5934"),
            "flow named {name}"
        );
        assert_eq!(flow["tuple"]["destination_port"], 5934);
    }
    // Cake paces it to its bandwidth (IP bytes; cake charges no MAC header
    // here), and the shaped flow fills most of it.
    let own_span = flows[0]["throughput_mbps"].as_f64().unwrap();
    assert!(
        own_span > 3.0 && own_span < 4.0 * 1.01,
        "throughput {own_span} Mbit/s through a 4 Mbit/s shaper"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--tcp-info` samples the command's TCP sockets into the log directory
/// in `emu run`'s format, and the report sets each connection's srtt and
/// cwnd beside its packets: the table matches the socket to the flows the
/// log names by port, srtt sits at or above the 40 ms round trip the
/// path gave it, and the page draws and explains it.
#[test]
fn tcp_info_samples_sit_beside_the_packets_in_the_report() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("tcp-info");
    let logs = dir.join("logs");
    let mut server = iperf3_server("5936");
    let out = run(&[
        "--log",
        &logs.display().to_string(),
        "--tcp-info=5ms",
        "delay",
        "20ms",
        "--",
        "link",
        "20mbit",
        "--",
        "sh",
        "-c",
        "iperf3 -c $EMU_BASE -p 5936 -t 1 >/dev/null",
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let samples = std::fs::read_to_string(logs.join("tcp/tcp_info.csv")).unwrap();
    assert!(samples.starts_with("time_s,inode,src,sport,dst,dport,"));
    assert!(samples.lines().count() > 20, "{samples}");
    let report_dir = dir.join("report");
    let out = run(&[
        "report",
        &logs.display().to_string(),
        "--json",
        "--out",
        &report_dir.display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tcp = summary["runs"][0]["tcp"].as_array().unwrap();
    // iperf3's data connection: the one with the most bytes acknowledged.
    let data = tcp
        .iter()
        .max_by_key(|t| t["bytes_acked"].as_u64().unwrap())
        .unwrap();
    assert!(
        data["socket"].as_str().unwrap().ends_with(":5936"),
        "{data}"
    );
    let flows = data["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "both directions of the connection: {data}");
    assert!(flows.iter().all(|f| f.as_str().unwrap().contains(":5936")));
    let srtt = data["srtt"]["p50_ms"].as_f64().unwrap();
    let path_rtt = data["path_rtt_p50_ms"].as_f64().unwrap();
    let min_rtt = data["min_rtt_ms"].as_f64().unwrap();
    // The kernel's least RTT is the path's 40 ms (a delay applied twice
    // would make it 80); the medians add what queued at 20 Mbit/s, 40 to
    // 90 ms in a second of iperf3, and the packets' round trip and the
    // socket's srtt tell the same story.
    assert!(
        (40.0..42.0).contains(&min_rtt),
        "least RTT {min_rtt} ms against the path's 40"
    );
    assert!(
        path_rtt >= 40.0 && (0.6..1.6).contains(&(path_rtt / srtt)),
        "path round trip {path_rtt} ms against srtt {srtt} ms"
    );
    assert!(srtt >= 40.0, "srtt {srtt} ms below the 40 ms the path adds");
    assert!(data["cwnd_max"].as_u64().unwrap() > 2, "{data}");
    let page = std::fs::read_to_string(report_dir.join("index.html")).unwrap();
    assert!(page.contains("TCP smoothed RTT (srtt) per connection"));
    assert!(
        page.contains("delayed ACKs"),
        "the page says how srtt differs"
    );
    assert!(page.contains(data["socket"].as_str().unwrap().split(' ').nth(1).unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}
