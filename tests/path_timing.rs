//! The path is exact through real shells: ping's round trip through
//! delays (nested too, over IPv6 as well), TCP goodput against a link's
//! rate, and the same with busy polling.
//!
//! They need root; see [`support`] for how they run.

mod support;

use support::*;

#[test]
fn ping_rtt_through_delay_20_is_40_ms() {
    let Some(_serial) = start() else { return };
    let ((min, avg, max), _) = ping_through(&["delay", "20"], "ping -c 30 -i 0.05 -q $EMU_BASE");
    eprintln!(
        "delay 20: ping RTT min {min:.3} avg {avg:.3} max {max:.3} ms; error of the mean {:+.3} ms",
        avg - 40.0
    );
    assert!(min >= 40.0, "a packet came back early: min RTT {min} ms");
    assert!(
        avg - 40.0 < 0.5,
        "mean RTT {avg} ms is more than 0.5 ms over 40 ms"
    );
}

#[test]
fn nested_shells_add_their_delays() {
    let Some(_serial) = start() else { return };
    let ((min, avg, _), stdout) = ping_through(
        &["delay", "5", "--", "delay", "10"],
        "ping -c 20 -i 0.05 -q $EMU_BASE; echo \"prefix=$EMU_SHELL_PREFIX\"",
    );
    eprintln!("delay 5 + delay 10: ping RTT min {min:.3} avg {avg:.3} ms (expected 30)");
    assert!(min >= 30.0 && avg < 30.8, "min {min} avg {avg}");
    assert!(
        stdout.contains("prefix=[delay 5 ms] [delay 10 ms] "),
        "{stdout}"
    );
}

#[test]
fn ipv6_crosses_the_shell_too() {
    let Some(_serial) = start() else { return };
    let ((min, _, _), _) = ping_through(&["delay", "3"], "ping -6 -c 5 -i 0.05 -q $EMU_BASE6");
    assert!(min >= 6.0, "{min}");
}

/// Goodput of one TCP flow through `link 10mbit`, against the rate net of
/// IP and TCP headers (20 + 20 + 12 bytes of timestamp option per 1500).
#[test]
fn tcp_goodput_through_link_10mbit_is_within_3_percent() {
    let Some(_serial) = start() else { return };
    let port = "5911";
    let mut server = iperf3_server(port);
    let out = run(&[
        "link",
        "10mbit",
        "--",
        "sh",
        "-c",
        &format!("iperf3 -c $EMU_BASE -p {port} -t 8 -O 2 -J"),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf3 JSON");
    let goodput = report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    let ceiling = 10e6 * 1448.0 / 1500.0;
    let error = goodput / ceiling - 1.0;
    eprintln!(
        "link 10mbit: TCP goodput {:.3} Mbit/s vs {:.3} Mbit/s net of headers ({:+.2}%)",
        goodput / 1e6,
        ceiling / 1e6,
        error * 100.0
    );
    assert!(
        error.abs() < 0.03,
        "goodput {goodput} is {:.2}% off",
        error * 100.0
    );
}

/// Busy polling changes how the threads wait, not what the path does.
#[test]
fn busy_poll_keeps_the_path_exact() {
    let Some(_serial) = start() else { return };
    let ((min, avg, _), _) = ping_through(
        &["--busy-poll", "delay", "5"],
        "ping -c 20 -i 0.02 -q $EMU_BASE",
    );
    eprintln!("busy-poll delay 5: ping RTT min {min:.3} avg {avg:.3} ms");
    // Never early; the upper bound only catches a delay applied twice.
    assert!(min >= 10.0 && avg < 15.0, "min {min} avg {avg}");
}
