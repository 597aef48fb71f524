//! TCP Westwood+ against its estimator: the bytes acknowledged over each
//! sample window (at least an RTT and 50 ms), filtered twice with gain
//! 1/8, times the least RTT, give the window a loss leaves.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Westwood {
    bw_ns_est: u32,
    bw_est: u32,
    rtt_win_sx: u32,
    bk: u32,
    snd_una: u32,
    cumul_ack: u32,
    accounted: u32,
    rtt: u32,
    rtt_min: u32,
    first_ack: u32,
    reset_rtt_min: u32,
}

unsafe extern "C" {
    fn emu_alg_westwood_start(w: *mut Westwood, now_ms: u32, snd_una: u32);
    fn emu_alg_westwood_ack(w: *mut Westwood, now_ms: u32, snd_una: u32, mss: u32, slow: u32);
    fn emu_alg_westwood_bw_rttmin(w: *const Westwood, mss: u32) -> u32;
    fn emu_alg_westwood_filter(old: u32, sample: u32) -> u32;
    fn emu_alg_usecs_to_ms(us: u32) -> u32;
}

const MSS: u32 = 1448;

/// `ms` milliseconds of ACKs, one every ms for `per_ms` segments, with
/// an RTT of `rtt` ms; returns the time and snd_una reached.
fn steady(w: &mut Westwood, from: (u32, u32), ms: u32, per_ms: u32, rtt: u32) -> (u32, u32) {
    let (mut now, mut una) = from;
    for _ in 0..ms {
        now += 1;
        una = una.wrapping_add(per_ms * MSS);
        w.rtt = rtt;
        unsafe { emu_alg_westwood_ack(w, now, una, MSS, 0) };
    }
    (now, una)
}

#[test]
fn the_filter_keeps_seven_eighths() {
    for (old, new) in [(0u32, 800u32), (800, 0), (1000, 1000), (12_345, 99)] {
        let want = ((7.0 * f64::from(old) + f64::from(new)) / 8.0).floor() as u32;
        assert_eq!(unsafe { emu_alg_westwood_filter(old, new) }, want);
    }
    assert_eq!(unsafe { emu_alg_usecs_to_ms(1) }, 1, "jiffies round up");
    assert_eq!(unsafe { emu_alg_usecs_to_ms(40_000) }, 40);
    assert_eq!(unsafe { emu_alg_usecs_to_ms(40_001) }, 41);
}

#[test]
fn a_steady_rate_gives_its_bandwidth_delay_product() {
    let mut w = Westwood::default();
    unsafe { emu_alg_westwood_start(&mut w, 1000, 5) };
    assert_eq!(w.rtt, 20_000, "a conservative RTT until a sample");
    // 10 segments a ms (about 116 Mbit/s) over 80 ms: 800 segments.
    steady(&mut w, (1000, 5), 3000, 10, 80);
    let bw = f64::from(w.bw_est) / f64::from(MSS);
    assert!((bw - 10.0).abs() < 0.2, "segments a ms: {bw}");
    assert_eq!(w.rtt_min, 80);
    let window = unsafe { emu_alg_westwood_bw_rttmin(&w, MSS) };
    assert!((f64::from(window) - 800.0).abs() < 16.0, "{window}");
}

#[test]
fn samples_last_at_least_50_ms_and_the_window_at_least_2() {
    let mut w = Westwood::default();
    unsafe { emu_alg_westwood_start(&mut w, 0, 0) };
    let (now, una) = steady(&mut w, (0, 0), 40, 1, 5);
    assert_eq!(
        (w.bw_est, w.bw_ns_est),
        (0, 0),
        "no sample within 50 ms of a 5 ms RTT"
    );
    steady(&mut w, (now, una), 20, 1, 5);
    // At 51 ms the window ends with the bytes of 2..50 ms (the first ACK
    // only marks where counting starts); that first sample fills both
    // filters.
    assert_eq!((w.bw_est, w.bw_ns_est), (49 * MSS / 51, 49 * MSS / 51));
    assert_eq!(w.rtt_win_sx, 51);
    let empty = Westwood::default();
    assert_eq!(unsafe { emu_alg_westwood_bw_rttmin(&empty, MSS) }, 2);
}

#[test]
fn duplicate_acks_count_a_segment_each_and_are_paid_back() {
    let mut w = Westwood::default();
    unsafe { emu_alg_westwood_start(&mut w, 0, 0) };
    w.rtt = 1000;
    // The first ACK sets the count's start; three duplicates follow.
    unsafe { emu_alg_westwood_ack(&mut w, 1, 0, MSS, 1) };
    for t in 2..5 {
        unsafe { emu_alg_westwood_ack(&mut w, t, 0, MSS, 1) };
    }
    assert_eq!(
        w.bk,
        4 * MSS,
        "a segment for each, the first ACK's included"
    );
    // A cumulative ACK of five segments: four were counted already, so
    // the count ends at what was acknowledged.
    unsafe { emu_alg_westwood_ack(&mut w, 5, 5 * MSS, MSS, 1) };
    assert_eq!(w.bk, 5 * MSS);
    assert_eq!(w.accounted, 0);
}
