//! TCP Prague's versions through real namespaces: a flow that chooses
//! `version=0.5` runs emu's `prague` on its socket with 0.5's rules (its
//! pacing, which the socket's samples show), moves data through DualPI2,
//! and leaves nothing loaded. Needs root, iperf3 and bpftool, as the other
//! experiment tests (opt-out: EMU_SKIP_PRIVILEGED=1).

mod support;

use std::path::Path;
use support::experiment::{flow, run_experiment_in};
use support::start;

/// One flow `p` with `cc` through DualPI2 at 50 Mbit/s, 20 ms base RTT.
fn one_flow(cc: &str) -> String {
    let mut toml = String::from("[run]\nduration = \"10s\"\nsample_interval = \"10ms\"\n");
    for (host, side) in [("p-s", "left"), ("p-r", "right")] {
        toml += &format!("[hosts.{host}]\nside = \"{side}\"\ndelay = \"5ms\"\ntcp_ecn = 1\n");
    }
    toml += "[bottleneck]\nrate = \"50mbit\"\nqueue = \"dualpi2\"\n";
    toml += &format!(
        "[[flows]]\nname = \"p\"\nfrom = \"p-s\"\nto = \"p-r\"\ncc = \"{cc}\"\nomit = \"3s\"\n"
    );
    toml
}

/// Of the sender's samples once it has sent 100 kB: how many there were,
/// how many ran `prague`, and how many paced at a whole number of packets
/// per smoothed RTT, max(cwnd, unacked) of them, as 0.5 paces (0.6 paces
/// its fractional window). The socket reports srtt in whole µs, so each
/// of the eight srtt values (µs times 8) it stands for is tried.
fn pacing_samples(samples: &Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(samples).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (cc, srtt, cwnd, unacked, mss, rate, sent) = (
        col("congestion_control"),
        col("srtt_us"),
        col("cwnd"),
        col("unacked"),
        col("mss"),
        col("pacing_rate_Bps"),
        col("bytes_sent"),
    );
    let (mut all, mut prague, mut whole) = (0, 0, 0);
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let num = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        if num(sent) < 100_000 || num(srtt) == 0 {
            continue;
        }
        all += 1;
        prague += usize::from(f[cc] == "prague");
        // The IP packet of a full segment: MSS, 12 bytes of timestamps,
        // 20 of TCP, 20 of IPv4.
        let mtu = num(mss) + 52;
        let packets = num(cwnd).max(num(unacked));
        let paced = (0..8).any(|extra| {
            [1, 2].iter().any(|slow_start| {
                let per_packet = 8_000_000 * mtu * slow_start / (8 * num(srtt) + extra);
                per_packet > 0 && num(rate) == per_packet * packets
            })
        });
        whole += usize::from(paced);
    }
    (all, prague, whole)
}

#[test]
fn prague_05_runs_its_own_rules_through_dualpi2_and_leaves_nothing() {
    let Some(_serial) = start() else { return };
    let dir = support::temp_dir("prague05");
    let ran = run_experiment_in(&dir, "prague05", &one_flow("prague version=0.5"));
    let p = flow(&ran.result, "p");
    let goodput = p["goodput_bps"].as_f64().unwrap();
    let (all, prague, whole) = pacing_samples(&ran.dir.join("tcp/p.csv"));
    eprintln!(
        "prague 0.5 through dualpi2, 50 Mbit/s 20 ms: {:.1} Mbit/s; of {all} samples, {prague} \
         ran prague, {whole} paced at whole packets per srtt",
        goodput / 1e6
    );
    assert_eq!(p["cc_settings"]["version"], "0.5", "{p:#}");
    assert_eq!(p["congestion_control"], "prague", "{p:#}");
    // 41.3 Mbit/s on the machine this was written on (0.6: 42.6).
    assert!(goodput > 25e6, "goodput {goodput}");
    assert!(
        all > 100 && prague == all,
        "{prague} of {all} samples ran prague"
    );
    // 200 of 200 with 0.5 on that machine, 0 of 200 with 0.6.
    assert!(whole * 10 >= all * 9, "{whole} of {all} paced as 0.5");
    // run_experiment_in checked that nothing of the run is left.
}
