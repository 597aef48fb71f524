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
    let ((min, avg, max), _) =
        ping_through_unstalled(&["delay", "20"], "ping -c 30 -i 0.05 -q $EMU_BASE", 40.0);
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
    let ((min, avg, _), stdout) = ping_through_unstalled(
        &["delay", "5", "--", "delay", "10"],
        "ping -c 20 -i 0.05 -q $EMU_BASE; echo \"prefix=$EMU_SHELL_PREFIX\"",
        30.0,
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
    let goodput = tcp_goodput(&["link", "10mbit"], "5911", "-t 8 -O 2");
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
    let ((min, avg, _), _) = ping_through_unstalled(
        &["--busy-poll", "delay", "5"],
        "ping -c 20 -i 0.02 -q $EMU_BASE",
        10.0,
    );
    eprintln!("busy-poll delay 5: ping RTT min {min:.3} avg {avg:.3} ms");
    // Never early; the upper bound only catches a delay applied twice.
    assert!(min >= 10.0 && avg < 15.0, "min {min} avg {avg}");
}

/// At 1 Gbit/s a departure is due every 12 µs. The pump then ticks: it
/// waits on a timer kept set a slack after the next departure and writes
/// what is due, merged, instead of spinning to each. The rate stays
/// exact, every packet is accounted for, the spin the summary reports is
/// all but none, and most waits ticked. `--slack 0` asks for exact
/// writes: spun for, never ticked.
#[test]
fn dense_departures_tick_and_keep_the_rate() {
    let Some(_serial) = start() else { return };
    let port = "5912";
    for (slack, ticks) in [(None, true), (Some("0"), false)] {
        let dir = temp_dir("tick");
        let log = dir.display().to_string();
        let mut args = vec!["--log", log.as_str()];
        if let Some(slack) = slack {
            args.extend(["--slack", slack]);
        }
        args.extend(["link", "1gbit"]);
        let goodput = tcp_goodput(&args, port, "-t 4 -O 1");
        let ceiling = 1e9 * 1448.0 / 1500.0;
        eprintln!(
            "link 1gbit, slack {slack:?}: TCP goodput {:.1} Mbit/s against {:.1}",
            goodput / 1e6,
            ceiling / 1e6
        );
        assert!(
            (goodput / ceiling - 1.0).abs() < 0.05,
            "goodput {goodput} against {ceiling}"
        );
        assert_accounting_balances(&dir, &["link"]);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
                .unwrap();
        let uplink = summary["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["direction"] == "uplink")
            .unwrap();
        let spin = uplink["spin_ns"].as_u64().unwrap();
        let ticked = uplink["ticked_share"].as_f64().unwrap();
        if ticks {
            assert!(
                spin < 2_000,
                "the pump spun {spin} ns a departure: {uplink}"
            );
            assert!(ticked > 0.5, "the pump ticked for {ticked} of its waits");
        } else {
            assert!(spin >= 2_000, "the pump did not spin: {uplink}");
            assert_eq!(ticked, 0.0, "the pump ticked with --slack 0: {uplink}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The goodput (bit/s) of one iperf3 TCP flow from inside `emu ARGS`
/// to a server on the host at `port`, run with `options`.
fn tcp_goodput(args: &[&str], port: &str, options: &str) -> f64 {
    let command = format!("iperf3 -c $EMU_BASE -p {port} {options} -J");
    let mut all = args.to_vec();
    all.extend(["--", "sh", "-c", command.as_str()]);
    let mut server = iperf3_server(port);
    let out = run(&all);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("iperf3 JSON");
    report["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
}

/// Real-time threads of a higher priority than the fabric's lanes, one
/// pinned to each CPU, that spin `busy` then sleep `idle` until dropped:
/// while they spin, a lane with packets due waits, as on a machine whose
/// host holds its CPUs.
struct LaneHog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl LaneHog {
    fn start(busy: std::time::Duration, idle: std::time::Duration) -> LaneHog {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        // SAFETY: sysconf has no preconditions.
        let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
        let threads = (0..cpus)
            .map(|cpu| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    // SAFETY: a zeroed cpu_set_t is valid and CPU_SET stays
                    // within it; sched_setscheduler takes a valid param.
                    unsafe {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                        let param = libc::sched_param { sched_priority: 2 };
                        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param);
                    }
                    while !stop.load(Ordering::Relaxed) {
                        let end = std::time::Instant::now() + busy;
                        while std::time::Instant::now() < end {
                            std::hint::spin_loop();
                        }
                        std::thread::sleep(idle);
                    }
                })
            })
            .collect();
        LaneHog { stop, threads }
    }
}

impl Drop for LaneHog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A run whose deliveries the machine made late past half its bottleneck
/// queue's finest time scale (DualPI2's 1 ms step) says, in its verdict
/// (`links.json`'s `timing`) and its warnings, that it did not keep time
/// for that queue: real-time threads above the lanes' priority take each
/// CPU for 3 ms in 4 while a flow crosses 50 Mbit/s.
#[test]
fn a_run_made_late_past_its_queues_step_says_it_did_not_keep_time() {
    let Some(_serial) = start() else { return };
    let toml = "[run]\nduration = \"4s\"\n\
        [hosts.s]\nside = \"left\"\ndelay = \"5ms\"\n\
        [hosts.r]\nside = \"right\"\ndelay = \"5ms\"\n\
        [bottleneck]\nrate = \"50mbit\"\nqueue = \"dualpi2\"\n\
        [[flows]]\nname = \"f\"\nfrom = \"s\"\nto = \"r\"\ncc = \"cubic\"\n";
    let hog = LaneHog::start(
        std::time::Duration::from_millis(3),
        std::time::Duration::from_millis(1),
    );
    let ran = experiment::run_experiment_in(&temp_dir("late-dualpi2"), "late", toml);
    drop(hog);
    let links: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ran.dir.join("links.json")).unwrap())
            .unwrap();
    let timing = &links["timing"];
    eprintln!("verdict: {timing}");
    assert_eq!(timing["kept_time"], false, "{timing}");
    assert_eq!(timing["bar_ns"], 500_000, "{timing}");
    assert!(
        timing["late_p99_ns"].as_u64().unwrap() > 1_000_000,
        "{timing}"
    );
    assert!(
        timing["why"]
            .to_string()
            .contains("past half of dualpi2's L-queue marking step on bottleneck-0 (0.50 ms)"),
        "{timing}"
    );
    let said = ran.result["timing_warnings"].to_string();
    assert!(
        said.contains("passed half of dualpi2's L-queue marking step (0.50 ms) on bottleneck-0"),
        "{said}"
    );
}
