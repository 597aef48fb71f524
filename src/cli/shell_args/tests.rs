use super::*;

fn spec(s: &str) -> Result<ShellSpec, String> {
    let words: Vec<&str> = s.split_whitespace().collect();
    spec_words(&words)
}

fn spec_words(words: &[&str]) -> Result<ShellSpec, String> {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    match parse(&words) {
        Ok(Parsed::Spec(spec)) => Ok(*spec),
        Ok(Parsed::Printed) => Err("printed".into()),
        Err(SegmentError::Usage(e)) => Err(e.0),
        Err(SegmentError::Clap(e)) => Err(crate::cli::clap_error(&e, &words).0),
    }
}

#[test]
fn delay_forms() {
    let s = spec("delay 40").unwrap();
    assert_eq!(s.directions[0].delay, 40_000_000);
    assert_eq!(s.description, "delay 40 ms");
    let s = spec("delay 0.25ms --downlink 10").unwrap();
    assert_eq!(
        (s.directions[0].delay, s.directions[1].delay),
        (250_000, 10_000_000)
    );
    let s = spec("delay --uplink 1 --downlink 2").unwrap();
    assert_eq!(s.description, "delay up 1 ms down 2 ms");
    assert!(spec("delay")
        .unwrap_err()
        .contains("no time for the uplink"));
    assert!(spec("delay forty").unwrap_err().contains("'forty'"));
    assert!(spec("delay 40 link 10mbit")
        .unwrap_err()
        .contains("separate shells with --"));
}

#[test]
fn link_forms() {
    let s = spec("link 10mbit").unwrap();
    assert!(matches!(s.directions[0].server, Server::Rate(r) if r.bits_per_sec() == 10_000_000));
    assert_eq!(s.directions[0].queue, DEFAULT_LINK_QUEUE);
    let s = spec(
        "link --uplink 1mbit --downlink 5mbit --queue infinite --downlink-queue droptail_bytes",
    )
    .err()
    .unwrap();
    assert!(
        s.contains("unknown queue discipline 'droptail_bytes'"),
        "{s}"
    );
    assert!(spec("link").unwrap_err().contains("no rate for the uplink"));
    // A shaping queue alone needs no rate; a queue that does not shape
    // still does, in the direction without one.
    let s = spec("link --queue cake_bandwidth").unwrap_err();
    assert!(s.contains("unknown queue discipline"), "{s}");
    let s = spec_words(&["link", "--queue", "cake bandwidth 10mbit"]).unwrap();
    assert!(matches!(s.directions[0].server, Server::Unlimited));
    assert!(matches!(s.directions[1].server, Server::Unlimited));
    assert_eq!(s.directions[1].queue.shaper_bps(), Some(10_000_000));
    assert_eq!(s.description, "link unlimited");
    let s = spec_words(&["link", "--uplink-queue", "cake bandwidth 10mbit"]).unwrap_err();
    assert!(s.contains("no rate for the downlink"), "{s}");
    assert!(spec("link --queue fq_codel")
        .unwrap_err()
        .contains("a queue that shapes"));
    assert!(spec("link 10 mbit").is_err());
    assert!(spec("link tenmbit").unwrap_err().contains("'tenmbit'"));
    assert!(spec("link 10mbit --once")
        .unwrap_err()
        .contains("--once needs a trace"));
    assert!(spec("link 10mbit --queue").is_err());
    assert!(spec("link --uplink-trace /nonexistent/up --downlink 1mbit")
        .unwrap_err()
        .contains("/nonexistent/up: cannot read the trace"));
}

#[test]
fn loss_forms() {
    let s = spec("loss 0.1 --seed 5").unwrap();
    assert_eq!(
        (s.directions[0].loss, s.seed),
        (link::Pattern::Bernoulli(0.1), Some(5))
    );
    assert!(spec("loss 1.5")
        .unwrap_err()
        .contains("'1.5' is not a probability"));
    assert!(spec("loss 0.1 --seed x").is_err());
}

#[test]
fn delay_dynamics_forms() {
    let s =
        spec("delay 40ms --jitter 5ms --correlation 25% --distribution pareto --seed 3").unwrap();
    let jitter = s.directions[0].dynamics.delay.jitter.clone().unwrap();
    assert_eq!((jitter.sigma, jitter.correlation), (5_000_000, 0.25));
    assert_eq!(jitter.distribution.name(), "pareto");
    assert_eq!(s.directions[0].delay, 40_000_000);
    assert_eq!(s.seed, Some(3));
    assert!(
        s.description.contains("jitter 5 ms pareto 25%"),
        "{}",
        s.description
    );
    let s = spec("delay --square 40ms:190ms:10s").unwrap();
    assert_eq!(
        s.directions[1].dynamics.delay.schedule,
        Some(link::Schedule::square(
            40_000_000,
            190_000_000,
            10_000_000_000,
            0.5
        ))
    );
    let s = spec("delay --steps 0s=40ms,10s=190ms --once").unwrap();
    assert_eq!(
        s.directions[0].dynamics.delay.schedule,
        Some(link::Schedule::steps(
            vec![(0, 40_000_000), (10_000_000_000, 190_000_000)],
            false,
            false
        ))
    );
    assert!(matches!(
        spec("delay 50 --walk 20ms:100ms:1ms:10ms")
            .unwrap()
            .directions[0]
            .dynamics
            .delay
            .schedule,
        Some(link::Schedule::Walk {
            first: 50_000_000,
            ..
        })
    ));
    assert!(
        spec("delay 40 --reorder").unwrap().directions[0]
            .dynamics
            .delay
            .reorder
    );
    for (bad, message) in [
        ("delay -5ms", "'-5ms' is a negative delay"),
        (
            "delay 40 --jitter 5ms --correlation 101%",
            "--correlation: '101%' is not a probability: it is outside 0 to 100%",
        ),
        (
            "delay --steps 0s=1ms,2s=2ms,1s=3ms",
            "--steps: times must increase",
        ),
        ("delay --steps 1s=1ms", "first time must be 0"),
        (
            "delay 40 --jitter 5ms --distribution /nonexistent.dist",
            "/nonexistent.dist: cannot read it",
        ),
        ("delay --square 40ms:190ms", "is not LOW:HIGH:PERIOD"),
        ("delay --square 1:2:3 --steps 0s=1", "cannot be used with"),
        ("delay 40 --once", "--once needs --steps or --delay-trace"),
        ("delay 40 --correlation 5%", "--jitter"),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(message), "{bad}: {e}");
    }
}

#[test]
fn link_dynamics_forms() {
    let s =
        spec("link --rate-steps 0s=100mbit,10s=20mbit,20s=100mbit --outage 5s:1s --aggregate 4ms")
            .unwrap();
    assert!(matches!(
        s.directions[0].server,
        Server::Schedule(link::Schedule::Steps { repeat: true, .. })
    ));
    assert!(s.directions[1].dynamics.outages.is_some());
    assert_eq!(s.directions[0].dynamics.delay.aggregate, Some(4_000_000));
    assert_eq!(s.directions[0].dynamics.delay.aggregate, Some(4_000_000));
    let s = spec_words(&["link", "50mbit", "--slot", "800us 10ms packets 42"]).unwrap();
    let slot = s.directions[1]
        .dynamics
        .delay
        .slot
        .as_ref()
        .expect("a slot");
    assert_eq!(slot.packets, Some(42));
    assert!(
        s.description.contains("slot 800us 10ms packets 42"),
        "{}",
        s.description
    );
    assert_eq!(s.seed, None, "slots draw from the shell's seed");
    let e = spec_words(&["link", "50mbit", "--slot", "10ms 1ms"]).unwrap_err();
    assert!(
        e.contains("link: --slot: MIN 10 ms is above MAX 1 ms"),
        "{e}"
    );
    assert!(spec("link 50mbit --slot 1ms --aggregate 4ms").is_err());
    let s = spec_words(&[
        "link",
        "50mbit",
        "--queue-steps",
        "0s=dualpi2,20s=pie noecn",
        "--dynamics-on",
        "uplink",
    ])
    .unwrap();
    let pie = aqm::QueueSpec::parse("pie noecn").unwrap();
    assert_eq!(
        s.directions[0].queue,
        aqm::QueueSpec::parse("dualpi2").unwrap()
    );
    assert_eq!(s.directions[0].dynamics.queue_steps[0].queue, pie);
    assert_eq!(s.directions[1].queue, s.directions[0].queue);
    assert!(
        s.directions[1].dynamics.queue_steps.is_empty(),
        "uplink only"
    );
    let e = spec_words(&[
        "link",
        "50mbit",
        "--queue",
        "pie",
        "--queue-steps",
        "0s=pie",
    ])
    .unwrap_err();
    assert!(e.contains("leave out --queue"), "{e}");
    let e = spec_words(&["link", "50mbit", "--queue-steps", "5s=pie"]).unwrap_err();
    assert!(
        e.contains("link: --queue-steps: the first time must be 0"),
        "{e}"
    );
    let s = spec_words(&["link", "5mbit", "--shaper", "htb burst 3000"]).unwrap();
    let shaper = link::ShaperSpec::parse("htb burst 3000").unwrap();
    assert_eq!(s.directions[0].dynamics.shaper, Some(shaper));
    assert_eq!(s.directions[1].dynamics.shaper, Some(shaper), "both ways");
    let e = spec_words(&["link", "--queue", "cake bandwidth 5mbit", "--shaper", "htb"]);
    assert!(e.unwrap_err().contains("link: --shaper shapes a rate"));
    let s = spec("link --rate-steps 0s=100mbit,10s=20mbit --once").unwrap();
    assert!(matches!(
        s.directions[0].server,
        Server::Schedule(link::Schedule::Steps { repeat: false, .. })
    ));
    let s = spec("link 10mbit --onoff-exp 1s:200ms --seed 4").unwrap();
    assert!(matches!(
        s.directions[0].dynamics.outages,
        Some(link::Outages::Exponential { .. })
    ));
    assert_eq!(s.seed, Some(4), "the outages draw from the shell's seed");
    assert_eq!(
        spec("link 10mbit --onoff-exp 1s:200ms").unwrap().seed,
        None,
        "no seed given: the shells pick one and log it"
    );
    for (bad, message) in [
        (
            "link --rate-steps 0s=1mbit,5s=2mbit,5s=3mbit",
            "times must increase",
        ),
        ("link 10mbit --rate-steps 0s=1mbit", "leave out RATE"),
        ("link --rate-steps 0s=0mbit", "above zero"),
        ("link 10mbit --outage 10s", "is not two times"),
        (
            "link 10mbit --outage 1s:1s --onoff 1s:1s",
            "cannot be used with",
        ),
        (
            "link 5mbit --shaper tbf",
            "link: --shaper: 'tbf' is not a shaper",
        ),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(message), "{bad}: {e}");
    }
}

#[test]
fn loss_dynamics_forms() {
    assert_eq!(
        spec("loss 1%").unwrap().directions[0].loss,
        link::Pattern::Bernoulli(0.01)
    );
    assert_eq!(
        spec("loss --gemodel 1% 30%").unwrap().directions[0].loss,
        link::Pattern::GilbertElliott {
            p: 0.01,
            r: 0.3,
            bad_loss: 1.0,
            good_loss: 0.0
        }
    );
    // netem's defaults: r = 1 - p.
    assert_eq!(
        spec("loss --gemodel 0.1").unwrap().directions[0].loss,
        link::Pattern::GilbertElliott {
            p: 0.1,
            r: 0.9,
            bad_loss: 1.0,
            good_loss: 0.0
        }
    );
    assert_eq!(
        spec("loss --state 1%").unwrap().directions[0].loss,
        link::Pattern::FourState {
            p13: 0.01,
            p31: 0.99,
            p32: 0.0,
            p23: 1.0,
            p14: 0.0
        }
    );
    // --burst 4 at 1% mean loss: r = 1/4, p = 0.01 * 0.25 / 0.99.
    match spec("loss 1% --burst 4").unwrap().directions[0].loss {
        link::Pattern::GilbertElliott { p, r, .. } => {
            assert_eq!(r, 0.25);
            assert!((p / (p + r) - 0.01).abs() < 1e-12);
        }
        other => panic!("{other:?}"),
    }
    let s = spec("loss --duplicate 1% --corrupt 0.001").unwrap();
    assert_eq!(
        (
            s.directions[0].dynamics.duplicate,
            s.directions[0].dynamics.corrupt
        ),
        (0.01, 0.001)
    );
    assert_eq!(s.directions[0].loss, link::Pattern::Bernoulli(0.0));
    for (bad, message) in [
        (
            "loss 120%",
            "'120%' is not a probability: it is outside 0 to 100%",
        ),
        ("loss --gemodel 1% 2% 3% 4% 5%", "'5%' is left over"),
        ("loss 1% --gemodel 1%", "'1%' is left over"),
        ("loss --burst 4", "needs PROB"),
        ("loss --state 60% 10% 10% 10% 50%", "at most 100%"),
        ("loss 1% --duplicate x", "'x' is not a probability"),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(message), "{bad}: {e}");
    }
}

/// `--l2` picks the link layer of both directions, names it in the
/// description, and refuses anything but none and ethernet.
#[test]
fn link_layer_forms() {
    use emu_core::size::LinkLayer;
    let s = spec("link 10mbit --l2 ethernet").unwrap();
    assert!(s
        .directions
        .iter()
        .all(|d| d.link_layer == LinkLayer::Ethernet));
    assert!(s.description.ends_with("l2 ethernet"), "{}", s.description);
    let s = spec("link 10mbit").unwrap();
    assert!(s.directions.iter().all(|d| d.link_layer == LinkLayer::None));
    let e = spec("link 10mbit --l2 atm").unwrap_err();
    assert!(e.contains("'atm'") && e.contains("ethernet"), "{e}");
}

/// Duplication and corruption on `delay` and `link` as on `loss`.
#[test]
fn delay_and_link_duplicate_and_corrupt() {
    for line in [
        "delay 40 --duplicate 1% --corrupt 0.1% --seed 7",
        "link 10mbit --duplicate 1% --corrupt 0.1% --seed 7",
    ] {
        let s = spec(line).unwrap();
        for d in &s.directions {
            assert_eq!(
                (d.dynamics.duplicate, d.dynamics.corrupt),
                (0.01, 0.001),
                "{line}"
            );
        }
        assert_eq!(s.seed, Some(7), "{line}: the draws are seeded");
        assert!(s.description.contains("duplicate 1%"), "{}", s.description);
    }
    let e = spec("delay 40 --corrupt 2").unwrap_err();
    assert!(
        e.contains("delay: --corrupt: '2' is not a probability"),
        "{e}"
    );
}

/// `--dynamics-on` gives one direction the dynamics; the other keeps
/// the constant part: its delay, independent loss at PROB, its rate.
#[test]
fn dynamics_on_one_direction() {
    let s = spec("delay 40 --jitter 5ms --dynamics-on uplink").unwrap();
    assert!(s.directions[0].dynamics.delay.jitter.is_some());
    assert!(s.directions[1].dynamics.is_none());
    assert_eq!(s.directions[1].delay, 40_000_000);
    assert!(s.description.ends_with("on uplink"), "{}", s.description);
    let s = spec("loss 1% --burst 4 --dynamics-on downlink").unwrap();
    assert_eq!(s.directions[0].loss, link::Pattern::Bernoulli(0.01));
    assert!(matches!(
        s.directions[1].loss,
        link::Pattern::GilbertElliott { .. }
    ));
    let s = spec("link --rate-steps 0s=10mbit,1s=5mbit --downlink 20mbit --dynamics-on uplink")
        .unwrap();
    assert!(matches!(s.directions[0].server, Server::Schedule(_)));
    assert!(matches!(s.directions[1].server, Server::Rate(r) if r.bits_per_sec() == 20_000_000));
    let s = spec("link 10mbit --outage 1s:1s --dynamics-on downlink").unwrap();
    assert!(s.directions[0].dynamics.outages.is_none());
    assert!(s.directions[1].dynamics.outages.is_some());
    for (bad, message) in [
        (
            "link --rate-steps 0s=10mbit --uplink 5mbit --dynamics-on uplink",
            "leave out --uplink",
        ),
        (
            "link --rate-steps 0s=10mbit --dynamics-on uplink",
            "no rate for the downlink",
        ),
        ("delay 40 --dynamics-on sideways", "sideways"),
    ] {
        let e = spec(bad).unwrap_err();
        assert!(e.contains(message), "{bad}: {e}");
    }
}
