//! H-TCP against its paper: alpha(Delta) = 1 + 10 (Delta - 1) +
//! ((Delta - 1) / 2)^2 for Delta > 1 s since the last congestion event,
//! times 2 (1 - beta) and, with RTT scaling, RTT / 100 ms (held in
//! [0.1, 2]); beta = RTTmin / RTTmax within [0.5, 0.8], and 0.5 after a
//! throughput change of more than a fifth.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Htcp {
    alpha: u32,
    beta: u32,
    modeswitch: u32,
    pkts_acked: u32,
    packetcount: u32,
    min_rtt: u32,
    max_rtt: u32,
    last_cong: u32,
    undo_last_cong: u32,
    undo_max_rtt: u32,
    undo_old_max_b: u32,
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    lasttime: u32,
    use_rtt_scaling: u32,
    use_bandwidth_switch: u32,
}

unsafe extern "C" {
    fn emu_alg_htcp_start(ca: *mut Htcp, now_ms: u32);
    fn emu_alg_htcp_reset(ca: *mut Htcp, now_ms: u32);
    fn emu_alg_htcp_undo(ca: *mut Htcp);
    fn emu_alg_htcp_measure_rtt(ca: *mut Htcp, srtt: u32, open: u32);
    fn emu_alg_htcp_throughput(ca: *mut Htcp, pkts: u32, cwnd: u32, now_ms: u32, counting: u32);
    fn emu_alg_htcp_alpha_update(ca: *mut Htcp, now_ms: u32);
    fn emu_alg_htcp_after_loss(ca: *mut Htcp, cwnd: u32, now_ms: u32) -> u32;
}

fn htcp(scaling: u32, bandwidth: u32) -> Htcp {
    let mut ca = Htcp {
        use_rtt_scaling: scaling,
        use_bandwidth_switch: bandwidth,
        ..Default::default()
    };
    unsafe { emu_alg_htcp_start(&mut ca, 10_000) };
    ca
}

/// The paper's alpha for `delta` s since the congestion event, with beta.
fn alpha(delta: f64, beta: f64, rtt_ratio: f64) -> f64 {
    let d = (delta - 1.0).max(0.0);
    let base = if delta > 1.0 {
        1.0 + 10.0 * d + (d / 2.0).powi(2)
    } else {
        1.0
    };
    2.0 * (1.0 - beta) * base * rtt_ratio
}

#[test]
fn alpha_rises_with_the_time_since_the_last_congestion_event() {
    let mut ca = htcp(0, 0);
    for delta in [0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0] {
        unsafe { emu_alg_htcp_alpha_update(&mut ca, 10_000 + (delta * 1000.0) as u32) };
        let got = f64::from(ca.alpha) / 128.0;
        let want = alpha(delta, 0.5, 1.0);
        // The factor is whole: at most one less than the paper's.
        assert!(
            got <= want + 1e-9 && got > want - 1.0,
            "{delta} s: {got} vs {want}"
        );
    }
}

#[test]
fn rtt_scaling_makes_alpha_proportional_to_the_rtt() {
    for (min_rtt, ratio) in [(100u32, 1.0), (200, 2.0), (50, 0.5), (400, 2.0), (5, 0.1)] {
        let mut ca = htcp(1, 0);
        ca.min_rtt = min_rtt;
        unsafe { emu_alg_htcp_alpha_update(&mut ca, 10_000 + 11_000) };
        let got = f64::from(ca.alpha) / 128.0;
        let want = alpha(11.0, 0.5, ratio);
        assert!(
            (got - want).abs() <= want * 0.02 + 1.0,
            "{min_rtt} ms: {got} vs {want}"
        );
    }
}

#[test]
fn beta_is_the_rtt_ratio_within_half_and_four_fifths() {
    for (min_rtt, max_rtt, want) in [
        (60u32, 100u32, 0.6),
        (90, 100, 0.8),
        (20, 100, 0.5),
        (75, 100, 0.75),
    ] {
        let mut ca = htcp(0, 0);
        ca.min_rtt = min_rtt;
        ca.max_rtt = max_rtt;
        // The first event switches the mode on; the second uses it.
        unsafe { emu_alg_htcp_after_loss(&mut ca, 1000, 20_000) };
        ca.min_rtt = min_rtt;
        ca.max_rtt = max_rtt;
        let left = unsafe { emu_alg_htcp_after_loss(&mut ca, 1000, 30_000) };
        let got = f64::from(ca.beta) / 128.0;
        assert!(
            (got - want).abs() < 1.0 / 128.0 + 1e-9,
            "{min_rtt}/{max_rtt}: {got}"
        );
        assert_eq!(left, (1000 * ca.beta) >> 7);
        // maxRTT fades 5% toward minRTT.
        let faded = min_rtt + (max_rtt - min_rtt) * 95 / 100;
        assert_eq!(ca.max_rtt, faded);
    }
}

#[test]
fn a_throughput_change_over_a_fifth_resets_beta_to_half() {
    let mut ca = htcp(0, 1);
    ca.modeswitch = 1;
    ca.min_rtt = 60;
    ca.max_rtt = 100;
    ca.old_max_b = 1000;
    ca.max_b = 1150;
    unsafe { emu_alg_htcp_after_loss(&mut ca, 1000, 20_000) };
    assert_eq!(ca.beta, 76, "within a fifth: the RTT ratio, 0.6");
    ca.max_b = 1400;
    unsafe { emu_alg_htcp_after_loss(&mut ca, 1000, 30_000) };
    assert_eq!((ca.beta, ca.modeswitch), (64, 0), "past a fifth: 0.5");
}

#[test]
fn throughput_is_segments_a_second_averaged() {
    let mut ca = htcp(0, 1);
    ca.min_rtt = 100;
    ca.lasttime = 10_000;
    // Just after the event: the sample restarts the estimate.
    unsafe { emu_alg_htcp_throughput(&mut ca, 100, 100, 10_100, 1) };
    assert_eq!((ca.bi, ca.max_b, ca.min_b), (1000, 1000, 1000));
    // Later: a 3/4 moving average, the maximum kept.
    unsafe { emu_alg_htcp_throughput(&mut ca, 200, 100, 11_000, 1) };
    assert_eq!(ca.bi, (3 * 1000 + 200 * 1000 / 900) / 4);
    assert_eq!(ca.max_b, 1000);
    unsafe { emu_alg_htcp_throughput(&mut ca, 5, 100, 11_500, 0) };
    assert_eq!(
        (ca.packetcount, ca.lasttime),
        (0, 11_500),
        "outside Open and Disorder"
    );
}

#[test]
fn rtts_are_filtered_and_an_undo_restores_the_event_before() {
    let mut ca = htcp(0, 0);
    unsafe { emu_alg_htcp_measure_rtt(&mut ca, 50, 1) };
    unsafe { emu_alg_htcp_measure_rtt(&mut ca, 65, 1) };
    unsafe { emu_alg_htcp_measure_rtt(&mut ca, 200, 1) };
    assert_eq!(
        (ca.min_rtt, ca.max_rtt),
        (50, 65),
        "a jump of over 20 ms is an outlier"
    );
    unsafe { emu_alg_htcp_measure_rtt(&mut ca, 80, 0) };
    assert_eq!(ca.max_rtt, 65, "outside Open maxRTT is kept");
    unsafe { emu_alg_htcp_reset(&mut ca, 50_000) };
    assert_eq!((ca.last_cong, ca.undo_last_cong), (50_000, 10_000));
    unsafe { emu_alg_htcp_undo(&mut ca) };
    assert_eq!((ca.last_cong, ca.undo_last_cong), (10_000, 0));
}
