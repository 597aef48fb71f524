//! An experiment's links get the shells' path dynamics from the file, with
//! the shells' spelling: the plan is built from TOML and its fabric (the
//! same links a run builds) is driven in virtual time.

use emu_core::packet::build::ipv4_udp;
use emu_core::time::{NS_PER_MS, NS_PER_SEC};
use emu_core::Nanos;
use emu_core::Packet;
use experiment::file::{self, CongestionControls, Source};
use std::path::Path;

fn plan_of(text: &str) -> Result<file::Plan, String> {
    let source = Source {
        file: "dynamics.toml",
        text,
    };
    let experiment = file::parse(&source).map_err(|e| e.0)?;
    file::plan(
        &experiment,
        &source,
        "dynamics",
        Path::new("."),
        &CongestionControls::default(),
        &experiment::run::system::run_first,
    )
    .map_err(|e| e.0)
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

/// When a packet of `len` bytes that A sends at `at` reaches B.
fn arrival(fabric: &mut fabric::Fabric, len: usize, at: Nanos) -> Nanos {
    let mut out = Vec::new();
    assert!(fabric.send(
        0,
        Packet::new(ipv4_udp(A, B, 1000, 9, 0, len), at),
        &mut out
    ));
    fabric.run_until(at + 10 * NS_PER_SEC, &mut out);
    assert_eq!(out.len(), 1, "one delivery");
    assert_eq!(out[0].host, 1);
    out[0].due
}

/// A's side link follows a delay square wave (10 ms, then 60 ms, every
/// 2 s) on its uplink only, and the bottleneck's rate steps from 12 to
/// 1.2 Mbit/s at 1 s: a 1500-byte packet pays both as they are when it
/// crosses.
#[test]
fn a_side_links_square_wave_and_a_bottlenecks_rate_step_show() {
    let plan = plan_of(
        r#"
[hosts.a]
side = "left"
up = { square = "10ms:60ms:2s" }

[hosts.b]
side = "right"

[bottleneck]
rate-steps = "0s=12mbit,1s=1.2mbit"
once = true

[[flows]]
kind = "ping"
from = "a"
to = "b"
"#,
    )
    .unwrap();
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    // 1500 bytes: 1 ms at 12 Mbit/s, 10 ms at 1.2 Mbit/s.
    assert_eq!(arrival(&mut fabric, 1500, 0), 11 * NS_PER_MS);
    assert_eq!(arrival(&mut fabric, 1500, 500 * NS_PER_MS), 511 * NS_PER_MS);
    // The square wave is high in the second half of each period; the
    // rate has stepped down by then (played once, it stays down).
    assert_eq!(
        arrival(&mut fabric, 1500, 1500 * NS_PER_MS),
        1570 * NS_PER_MS
    );
    assert_eq!(
        arrival(&mut fabric, 1500, 2500 * NS_PER_MS),
        2520 * NS_PER_MS
    );
    // The downlink of A's side link has no wave: the bottleneck's reverse
    // direction alone (its rate step too).
    let mut out = Vec::new();
    let back = Packet::new(ipv4_udp(B, A, 9, 1000, 0, 1500), 3 * NS_PER_SEC);
    assert!(fabric.send(1, back, &mut out));
    fabric.run_until(4 * NS_PER_SEC, &mut out);
    assert_eq!(out[0].due, 3 * NS_PER_SEC + 10 * NS_PER_MS);
}

/// Dynamics errors name the key and its line, as the other keys' do.
#[test]
fn a_bad_dynamic_is_reported_at_its_key_and_line() {
    let error = plan_of(
        "[hosts.a]\nside = \"left\"\njitter = \"5ms\"\ncorrelation = \"150%\"\n[hosts.b]\nside = \"right\"\n\
         [[flows]]\nkind = \"ping\"\nfrom = \"a\"\nto = \"b\"\n",
    )
    .unwrap_err();
    assert!(
        error.contains("line 4") && error.contains("hosts.a.up.correlation"),
        "{error}"
    );
    assert!(error.contains("not a probability"), "{error}");
    let error = plan_of(
        "[hosts.a]\nside = \"left\"\nrate = \"10mbit\"\nrate_steps = \"0s=1mbit\"\n[hosts.b]\nside = \"right\"\n\
         [[flows]]\nkind = \"ping\"\nfrom = \"a\"\nto = \"b\"\n",
    )
    .unwrap_err();
    assert!(error.contains("leave out rate"), "{error}");
    // A loss model with the shells' spelling, and duplication.
    let plan = plan_of(
        "[hosts.a]\nside = \"left\"\ngemodel = \"1% 30%\"\nduplicate = \"2%\"\n[hosts.b]\nside = \"right\"\n\
         [[flows]]\nkind = \"ping\"\nfrom = \"a\"\nto = \"b\"\n",
    )
    .unwrap();
    assert!(matches!(
        plan.hosts[0].up.loss,
        link::Pattern::GilbertElliott { p, r, .. } if p == 0.01 && r == 0.3
    ));
    assert_eq!(plan.hosts[0].down.dynamics.duplicate, 0.02);
}
