//! The shells of one emu forward between them as routers would, in memory:
//! the TTL and hop limit fall by one in each namespace between two shells,
//! a packet whose TTL ends there gets that namespace's time-exceeded from
//! the kernel, and everything else goes from one shell's model to the next
//! without crossing the kernel, with every shell's accounting intact.
//!
//! They need root; see [`support`] for how they run.

mod support;

use emu_core::log::Direction;
use support::*;

/// Echo requests from inside three nested shells to the host: five over
/// IPv4, five over IPv6, then one of each that runs out of hops in the
/// outermost namespace between shells.
const SCRIPT: &str = "ping -c 5 -i 0.05 $EMU_BASE; ping -6 -c 5 -i 0.05 $EMU_BASE6; \
                      ping -c 1 -W 2 -t 2 $EMU_BASE; ping -6 -c 1 -W 2 -t 2 $EMU_BASE6; true";

#[test]
fn nested_shells_forward_like_routers_in_memory() {
    let Some(_serial) = start() else { return };
    let dir = temp_dir("nesting");
    let out = run(&[
        "--log",
        dir.to_str().unwrap(),
        "delay",
        "1",
        "--",
        "delay",
        "1",
        "--",
        "delay",
        "1",
        "--",
        "sh",
        "-c",
        SCRIPT,
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));

    // The host answers with 64; the answer crosses the two namespaces
    // between the three shells on its way in.
    let replies = |family: &str| {
        stdout
            .lines()
            .filter(|l| l.contains("bytes from") && l.contains(family))
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
    };
    let v4 = replies("100.64.");
    let v6 = replies("fd65:");
    assert_eq!(v4.len(), 5, "{stdout}");
    assert_eq!(v6.len(), 5, "{stdout}");
    for reply in v4.iter().chain(&v6) {
        assert!(
            reply.contains("ttl=62"),
            "one hop per namespace between shells: {reply}"
        );
    }
    // A TTL of 2 is spent in the middle namespace (one) and runs out in the
    // outer one, whose kernel says so.
    assert!(stdout.contains("Time to live exceeded"), "{stdout}");
    assert!(stdout.contains("Time exceeded: Hop limit"), "{stdout}");

    let directions = assert_accounting_balances(&dir, &["delay", "delay", "delay"]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary-0.json")).unwrap())
            .unwrap();
    let handed_in = |shell: usize, direction: Direction| {
        summary["directions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["shell"] == shell && e["direction"] == direction.name())
            .and_then(|e| e["handed_in"].as_u64())
            .unwrap()
    };
    // Outwards, the middle shell was handed every request (the last two
    // too), the outer one every request that outlived the middle namespace.
    assert!(handed_in(1, Direction::Uplink) >= 12, "{summary}");
    assert!(handed_in(0, Direction::Uplink) >= 10, "{summary}");
    // Inwards, every reply, and the two time-exceeded messages from the
    // outer namespace once the middle shell had them.
    assert!(handed_in(1, Direction::Downlink) >= 10, "{summary}");
    assert!(handed_in(2, Direction::Downlink) >= 12, "{summary}");
    // The innermost shell reads only from its devices, uplink, and the
    // outermost likewise downlink.
    assert_eq!(handed_in(2, Direction::Uplink), 0, "{summary}");
    assert_eq!(handed_in(0, Direction::Downlink), 0, "{summary}");
    assert_eq!(directions.len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}
