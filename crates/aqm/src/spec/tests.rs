//! The specification grammar across all disciplines: what parses, what
//! each builds, and what every error says.

use super::catalogue::catalogue;
use super::*;

#[test]
fn builds_each_fifo() {
    assert_eq!(build_queue("infinite").unwrap().describe(), "infinite");
    assert_eq!(
        build_queue("droptail packets 100").unwrap().describe(),
        "droptail packets 100"
    );
    assert_eq!(
        build_queue("drophead bytes 64kb").unwrap().describe(),
        "drophead bytes 65536"
    );
    assert_eq!(
        build_queue("droptail packets 10 bytes 15000")
            .unwrap()
            .describe(),
        "droptail packets 10 bytes 15000"
    );
}

#[test]
fn builds_the_aqms_with_tc_keywords() {
    assert_eq!(
        build_queue("codel").unwrap().describe(),
        "codel limit 1000 target 5 ms interval 100 ms noecn".replace(" ms", "ms")
    );
    assert_eq!(
        build_queue("codel target 5ms ecn ce_threshold 2500 variant rfc")
            .unwrap()
            .describe(),
        "codel limit 1000 target 5ms interval 100ms ce_threshold 2.5ms ecn variant rfc"
    );
    assert!(build_queue("fq_codel flows 16 quantum 300 noecn")
        .unwrap()
        .describe()
        .starts_with("fq_codel limit 10240 flows 16 quantum 300"));
    assert_eq!(
        build_queue("pie limit 1000 target 20ms noecn")
            .unwrap()
            .describe(),
        "pie limit 1000 target 20ms tupdate 15ms alpha 2 beta 20 max_burst 150ms noecn"
    );
    let err = |s| build_queue(s).err().unwrap().0;
    assert!(err("codel target soon").contains("codel: target: 'soon'"));
    assert!(err("codel variant bsd").contains("'bsd' is not a variant"));
    assert!(err("pie frobs 3")
        .contains("unknown option 'frobs' (it accepts: limit, bytes, target, tupdate"));
}

/// What `emu queues` documents is what the parser takes: every keyword
/// of every discipline, with a value of its stated form.
#[test]
fn every_documented_option_is_accepted() {
    for d in catalogue() {
        for (keywords, form, _, _) in d.all_options() {
            let value = match *form {
                "" => "",
                "TIME" => "5ms",
                "linux|rfc" => "rfc",
                "RATE" | "RATE|unlimited" => "10mbit",
                "HZ" => "0.5",
                "P" => "0.1",
                "W" => "0.002",
                "PERCENT" | "K" | "U" => "2",
                "TIME|Np" => "2p",
                "red|pie" => "pie",
                "EXP" => "-1",
                "printed|inverse" => "inverse",
                _ => "1500",
            };
            for keyword in keywords.split(" | ") {
                // Values a discipline needs in a narrower range.
                let value = match (d.name, keyword) {
                    ("red", "limit") => "400kb",
                    ("red", "min") => "20kb",
                    ("red", "max") => "100kb",
                    ("cake" | "twin_codel_af" | "lfq_cobalt", "sce-thresh") => "4",
                    ("cake" | "twin_codel_af" | "lfq_cobalt", "overhead") => "38",
                    ("instant_red", "min") | ("dualq_uncoupled", "c_min") => "5",
                    _ => value,
                };
                let required = if d.name == "red" {
                    " limit 400kb min 30kb max 90kb"
                } else {
                    ""
                };
                let spec = format!("{}{required} {keyword} {value}", d.name);
                let spec =
                    if d.options.first() == Some(&crate::fifo::OPTIONS) && keyword != "packets" {
                        format!("{spec} packets 10")
                    } else {
                        spec
                    };
                assert!(
                    build_queue(&spec).is_ok(),
                    "'{spec}': {:?}",
                    build_queue(&spec).err()
                );
            }
        }
    }
}

#[test]
fn only_a_shaping_queue_has_a_shaper_rate() {
    let shaper = |s: &str| QueueSpec::parse(s).unwrap().shaper_bps();
    assert_eq!(shaper("cake bandwidth 500kbit"), Some(500_000));
    assert_eq!(shaper("cake bandwidth 10mbit diffserv4"), Some(10_000_000));
    assert_eq!(shaper("cake"), None, "unlimited cake does not pace");
    assert_eq!(
        shaper("red limit 400kb min 30kb max 90kb avpkt 1000 bandwidth 10mbit"),
        None,
        "RED's bandwidth is an estimate"
    );
    assert_eq!(shaper("fq_codel"), None);
}

#[test]
fn builds_red_cake_dualpi2_and_fq_pie() {
    let describe = |s| build_queue(s).unwrap().describe();
    assert!(
        describe("red limit 400kb min 30kb max 90kb avpkt 1000 ecn gentle")
            .starts_with("red limit 409600 min 30720 max 92160 avpkt 1000 probability 0.02")
    );
    let cake =
        describe("cake bandwidth 10mbit triple-isolate sce diffserv4 rtt 50ms atm overhead 32");
    assert!(
        cake.starts_with("cake bandwidth 10mbit diffserv4 triple-isolate rtt 50ms target 2.5ms overhead 32 mpu 0 atm"),
        "{cake}"
    );
    assert!(cake.ends_with(" sce"), "{cake}");
    assert!(describe("cake sce-thresh 4 ethernet").contains("overhead 38 mpu 84"));
    assert!(describe("cake sce-single").ends_with("sce-single"));
    let dualpi2 = describe("dualpi2 target 15ms coupling_factor 2 step_thresh 1ms");
    assert!(dualpi2.starts_with("dualpi2 limit 10000 memlimit 30000000 target 15ms tupdate 16ms alpha 0.16015625 beta 3.19921875 coupling_factor 2 step_thresh 1ms"), "{dualpi2}");
    assert!(describe("dualpi2 step_thresh 5p any_ect overflow").contains("step_thresh 5packets min_qlen_step 0 overflow drop_dequeue classic_protection 10 any_ect"));
    assert!(describe("dualpi2 max_rtt 100ms typical_rtt 15ms")
        .contains("target 15ms tupdate 15ms alpha 0.1484375 beta 3"));
    assert!(describe("fq_pie ecn target 10ms").contains("target 10ms tupdate 15ms"));
    let err = |s| build_queue(s).err().unwrap().0;
    assert!(err("red min 30kb").contains("needs 'limit'"));
    assert!(err("red limit 100kb min 90kb max 30kb").contains("min (92160) must be below max"));
    assert!(err("cake nat").contains("connection tracking"));
    assert!(err("cake sce-thresh 0").contains("expected 1 to 1024"));
    assert!(err("cake bandwidth fast").contains("bandwidth: 'fast'"));
    assert!(err("dualpi2 coupling_factor 0").contains("coupling factor"));
    assert!(err("dualpi2 max_rtt 10ms typical_rtt 20ms")
        .contains("typical_rtt must be at most max_rtt"));
}

/// The AQM evaluation thesis's queues with the parameters of its runs.
#[test]
fn builds_the_thesis_queues() {
    let describe = |s| build_queue(s).unwrap().describe();
    assert_eq!(
        describe("instant_red"),
        "instant_red limit 1000 min 11.333333333333334 max 34 probability 0.02 ecn"
    );
    assert_eq!(
        describe("dualq_uncoupled l_flows 1 c_flows 5 l_max 34"),
        "dualq_uncoupled limit 1000 l_flows 1 c_flows 5 l: red min 1.89 max 5.67 probability 0.02 c: red min 100.00 max 300.00 probability 0.02"
    );
    assert_eq!(
        describe("dualq_uncoupled aqm pie"),
        "dualq_uncoupled limit 1000 l_flows 1 c_flows 1 l: pie target 5ms tupdate 5ms c: pie target 500ms tupdate 15ms"
    );
    assert!(describe("dualq_pi2").starts_with(
        "dualq_pi2 limit 1000 target 15ms tupdate 16ms alpha 10 beta 100 coupling 2 max_classic 0.25 tshift 30ms step 1ms step_packets 2"
    ));
    assert!(describe("dualq_cred").starts_with("dualq_cred limit 1000 coupling 2 s_c -1 unit 1s"));
    assert!(describe("dualq_pie").contains("target 15ms tupdate 15ms"));
    let err = |s| build_queue(s).err().unwrap().0;
    assert!(err("instant_red min 40").contains("min (40) must be below max (34)"));
    assert!(err("dualq_uncoupled aqm codel").contains("expected red or pie"));
    assert!(err("dualq_uncoupled l_flows 0").contains("not a flow count"));
    assert!(err("dualq_pie l4s_form sideways").contains("expected printed or inverse"));
    assert!(err("curvy_red curviness -1").contains("not a curviness"));
}

#[test]
fn errors_name_the_keyword() {
    let err = |s| build_queue(s).err().unwrap().0;
    assert!(err("droptail packets").contains("'packets' needs a value"));
    assert!(err("droptail packets ten").contains("packets: 'ten'"));
    assert!(err("droptail flows 3").contains("unknown option 'flows' (it accepts: packets, bytes)"));
    assert!(err("droptail").contains("needs a limit"));
    assert!(err("sfq").contains("unknown queue discipline 'sfq'"));
    assert!(err("").contains("empty"));
}

/// A spec survives a trip through serde (experiment files and log
/// headers carry it as JSON) and builds the same queue afterwards.
#[test]
fn a_spec_round_trips_through_json() {
    for text in [
        "infinite",
        "droptail packets 10 bytes 15000",
        "codel target 5ms ecn ce_threshold 2500 variant rfc",
        "fq_codel flows 16 quantum 300 noecn",
        "pie limit 1000 target 20ms noecn",
        "fq_pie ecn target 10ms",
        "red limit 400kb min 30kb max 90kb avpkt 1000 ecn gentle",
        "cake bandwidth 10mbit triple-isolate sce diffserv4 rtt 50ms atm overhead 32",
        "dualpi2 step_thresh 5p any_ect overflow tshift 2ms",
        "instant_red max 17 min 5.67 noecn",
        "instant_red",
        "curvy_red dq 100ms curviness 3",
        "dualq_uncoupled aqm red l_flows 5 c_flows 10 l_max 34",
        "dualq_uncoupled aqm pie l_target 4ms",
        "dualq_pi2 tshift 20ms step_packets 3",
        "dualq_cred s_c -2 coupling 4",
        "dualq_pie l4s_form inverse target 20ms",
    ] {
        let spec = QueueSpec::parse(text).unwrap();
        let json = serde_json::to_string(&spec).unwrap();
        assert!(
            json.contains(&format!("\"discipline\":\"{}\"", spec.name())),
            "{json}"
        );
        let back: QueueSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec, "{text}");
        assert_eq!(
            back.build().describe(),
            build_queue(text).unwrap().describe()
        );
    }
}

/// Found by fuzzing: `quantum 300g` wrapped to a zero quantum, and a DRR
/// round that adds zero credit never ends.
#[test]
fn a_quantum_beyond_linux_limit_is_refused_not_wrapped() {
    for discipline in ["fq_codel", "fq_pie"] {
        for size in ["300g", "4g", "1049000"] {
            let err = QueueSpec::parse(&format!("{discipline} quantum {size}")).unwrap_err();
            assert!(err.0.contains(size) && err.0.contains("quantum"), "{err}");
        }
        let spec = QueueSpec::parse(&format!("{discipline} quantum 1mb")).unwrap();
        let mut queue = spec.build();
        let mut outcome = crate::Outcome::default();
        let packet = emu_core::packet::build::ipv4_udp([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 0, 1500);
        assert!(queue.enqueue(emu_core::Packet::new(packet, 0), 0, &mut outcome));
        assert!(queue.dequeue(0, &mut outcome).is_some());
    }
}

/// As Linux refuses them: no flow queues, or more than 65536, is an
/// error naming the value, never quietly made 1 or 65536.
#[test]
fn a_count_of_flow_queues_outside_linux_range_is_refused() {
    for discipline in ["fq_codel", "fq_pie"] {
        for flows in ["0", "65537", "99999999999"] {
            let err = QueueSpec::parse(&format!("{discipline} flows {flows}")).unwrap_err();
            assert!(err.0.contains(flows) && err.0.contains("65536"), "{err}");
        }
        for flows in ["1", "65536"] {
            assert!(QueueSpec::parse(&format!("{discipline} flows {flows}")).is_ok());
        }
    }
}

/// Every queue of the SCE–L4S two-flow scenarios, in the spelling
/// docs/guide.md gives for it (tc's, as the scenarios ran them), builds.
#[test]
fn the_bakeoff_queues_parse() {
    for (spec, described) in [
        ("pfifo limit 50", "droptail packets 50"),
        ("pfifo limit 1000", "droptail packets 1000"),
        ("fq_codel flows 1 ecn", "fq_codel limit 10240 flows 1"),
        (
            "fq_codel flows 1 target 1ms interval 20ms ecn",
            "target 1ms interval 20ms",
        ),
        (
            "fq_codel flows 1 target 3ms interval 40ms ecn",
            "target 3ms interval 40ms",
        ),
        ("pie ecn", "pie limit 1000 target 15ms"),
        ("pie noecn", "noecn"),
        (
            "pie limit 100 target 5ms tupdate 32ms alpha 2 beta 20 ecn",
            "pie limit 100 target 5ms tupdate 32ms alpha 2 beta 20",
        ),
        (
            "pie limit 100 target 20ms tupdate 32ms alpha 2 beta 20 ecn",
            "pie limit 100 target 20ms",
        ),
        (
            "pie limit 1000 target 20ms tupdate 32ms alpha 2 beta 20 ecn",
            "pie limit 1000 target 20ms",
        ),
        (
            "red limit 150000 avpkt 1000 adaptive bandwidth 50Mbit ecn",
            "red limit 150000 min 12500 max 37500",
        ),
        (
            "red limit 400000 avpkt 1000 adaptive bandwidth 50Mbit ecn",
            "red limit 400000 min 33333 max 100000",
        ),
        (
            "lfq_cobalt bandwidth 50Mbit sce-thresh 8",
            "lfq_cobalt bandwidth 50mbit",
        ),
        (
            "twin_codel_af bandwidth 50Mbit sce-thresh 4",
            "twin_codel_af bandwidth 50mbit",
        ),
        ("dualpi2", "dualpi2 limit 10000"),
    ] {
        let text = build_queue(spec).unwrap().describe();
        assert!(text.contains(described), "'{spec}' built '{text}'");
    }
}
