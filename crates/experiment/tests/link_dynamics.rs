//! An experiment's links get the shells' path dynamics from the file, with
//! the shells' spelling: the plan is built from TOML and its fabric (the
//! same links a run builds) is driven in virtual time.

use emu_core::packet::build::ipv4_udp;
use emu_core::time::{NS_PER_MS, NS_PER_SEC};
use emu_core::Nanos;
use emu_core::Packet;
use experiment::file;

mod support;

fn plan_of(text: &str) -> Result<file::Plan, String> {
    support::plan_of("dynamics.toml", text)
}

/// A file of hosts a (left, with `a_keys`) and b (right), a bottleneck
/// with `bottleneck_keys`, and a ping from a to b. The bottleneck's first
/// key is on line 7.
fn a_to_b(a_keys: &str, bottleneck_keys: &str) -> String {
    format!(
        "[hosts.a]\nside = \"left\"\n{a_keys}\n[hosts.b]\nside = \"right\"\n[bottleneck]\n\
         {bottleneck_keys}\n[[flows]]\nkind = \"ping\"\nfrom = \"a\"\nto = \"b\"\n"
    )
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

/// A bottleneck with netem's slots (`slot = "..."`, the `link` shell's
/// `--slot`): a packet that has served its 200 µs waits for a slot drawn
/// when it came in, here always 2 ms later.
#[test]
fn a_bottlenecks_slots_hold_packets_until_a_slot_opens() {
    let plan = plan_of(&a_to_b("", "delay = \"200us\"\nslot = \"2ms packets 2\"")).unwrap();
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    assert_eq!(arrival(&mut fabric, 1500, 0), 2 * NS_PER_MS);
    assert_eq!(arrival(&mut fabric, 1500, 10 * NS_PER_MS), 12 * NS_PER_MS);
    let error = plan_of(&a_to_b("", "slot = \"10ms 1ms\"")).unwrap_err();
    assert!(
        error.contains("line 7") && error.contains("slot") && error.contains("above MAX"),
        "{error}"
    );
}

/// A bottleneck's queue steps (`queue_steps`, the `link` shell's
/// `--queue-steps`): at 20 ms the droptail queue is replaced and what it
/// holds is dropped, as `tc qdisc replace` drops it.
#[test]
fn a_bottlenecks_queue_steps_replace_its_queue_and_drop_what_it_held() {
    let steps = "rate = \"10mbit\"\nqueue_steps = \"0s=droptail packets 1000,20ms=pie noecn\"";
    let plan = plan_of(&a_to_b("", steps)).unwrap();
    let bottleneck = &plan.bottlenecks[0][0];
    assert_eq!(
        bottleneck.queue,
        aqm::QueueSpec::parse("droptail packets 1000").unwrap()
    );
    assert_eq!(bottleneck.dynamics.queue_steps.len(), 1);
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    let mut out = Vec::new();
    for i in 0..100 {
        let packet = Packet::new(ipv4_udp(A, B, 1000 + i, 9, 0, 1000), 0);
        assert!(fabric.send(0, packet, &mut out));
    }
    fabric.run_until(NS_PER_SEC, &mut out);
    // 0.8 ms a packet: 25 served by 20 ms and the 26th on the wire.
    assert_eq!(out.len(), 26);
    let error = plan_of(&a_to_b(
        "",
        "queue = \"pie\"\nqueue_steps = \"0s=pie,1s=pfifo\"",
    ))
    .unwrap_err();
    assert!(error.contains("leave out queue"), "{error}");
}

/// netem's `delay 2ms 1ms 10%` on both directions of a side link, as the
/// keys spell it: uniform jitter of ±1 ms around 2 ms, and packets
/// overtake each other in both directions (netem's tfifo sorts by due
/// time), never leaving the 1-3 ms band.
#[test]
fn netems_jitter_reorders_on_both_directions_of_a_link() {
    let netem = "delay = \"2ms\"\njitter = \"1ms\"\ncorrelation = \"10%\"\n\
                 distribution = \"uniform\"\nreorder = true";
    let plan = plan_of(&a_to_b(netem, "")).unwrap();
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    for (from, to, host) in [(A, B, 0), (B, A, 1)] {
        let start = host as Nanos * NS_PER_SEC;
        let mut out = Vec::new();
        for i in 0..2000u16 {
            let mut data = ipv4_udp(from, to, 1000, 9, 0, 100);
            data[4..6].copy_from_slice(&i.to_be_bytes());
            let sent = start + i as Nanos * 100_000;
            assert!(fabric.send(host, Packet::new(data, sent), &mut out));
        }
        fabric.run_until(start + NS_PER_SEC / 2, &mut out);
        assert_eq!(out.len(), 2000);
        let ids: Vec<u16> = out
            .iter()
            .map(|d| u16::from_be_bytes([d.packet.data[4], d.packet.data[5]]))
            .collect();
        let overtaken = ids.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(overtaken > 200, "host {host}: {overtaken} inversions");
        for (d, id) in out.iter().zip(&ids) {
            let delay = d.due - (start + *id as Nanos * 100_000);
            assert!(
                (NS_PER_MS..=3 * NS_PER_MS).contains(&delay),
                "host {host}: packet {id} took {delay} ns"
            );
        }
    }
}

/// A bottleneck shaped as htb (`shaper = "htb"`, the `link` shell's
/// `--shaper`): a lone 1500-byte packet at 1.2 Mbit/s arrives after the
/// delay alone, where the serializing link adds its 10 ms; a shaper on a
/// direction without a rate is refused on its key.
#[test]
fn a_bottleneck_shaped_as_htb_adds_no_serialization_and_needs_a_rate() {
    let keys = "rate = \"1.2mbit\"\ndelay = \"5ms\"";
    let plan = plan_of(&a_to_b("", &format!("{keys}\nshaper = \"htb\""))).unwrap();
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    assert_eq!(arrival(&mut fabric, 1500, 0), 5 * NS_PER_MS);
    let plan = plan_of(&a_to_b("", keys)).unwrap();
    let mut fabric = experiment::run::links::virtual_fabric(&plan, 1, 0).unwrap();
    assert_eq!(arrival(&mut fabric, 1500, 0), 15 * NS_PER_MS);
    let error = plan_of(&a_to_b("", "delay = \"5ms\"\nshaper = \"htb\"")).unwrap_err();
    assert!(
        error.contains("line 8")
            && error.contains("shaper")
            && error.contains("give this direction a rate"),
        "{error}"
    );
    let error = plan_of(&a_to_b("", "rate = \"5mbit\"\nshaper = \"tbf\"")).unwrap_err();
    assert!(
        error.contains("line 8") && error.contains("htb burst BYTES"),
        "{error}"
    );
}
