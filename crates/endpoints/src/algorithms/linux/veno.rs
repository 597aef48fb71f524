//! TCP Veno against its paper: N = cwnd (RTT - BaseRTT) / RTT segments
//! queued; below beta = 3 a loss is random and leaves 4/5 of the window,
//! otherwise half; congested, the window grows every other round trip.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    cwnd: u32,
    cwnd_cnt: u32,
    clamp: u32,
    inc: u32,
}

unsafe extern "C" {
    fn emu_alg_veno_diff(cwnd: u32, base_rtt: u32, rtt: u32) -> u32;
    fn emu_alg_veno_congestive(w: *mut Window);
    fn emu_alg_veno_after_loss(cwnd: u32, diff: u32) -> u32;
}

#[test]
fn diff_is_the_queued_segments_in_halves() {
    for (cwnd, base, rtt) in [
        (100u32, 40_000u32, 40_000u32),
        (100, 40_000, 42_000),
        (50, 10_000, 20_000),
        (1000, 30_001, 30_500),
    ] {
        let diff = unsafe { emu_alg_veno_diff(cwnd, base, rtt) };
        let queued = f64::from(cwnd) * f64::from(rtt - base) / f64::from(rtt);
        assert!(
            (f64::from(diff) / 2.0 - queued).abs() <= 0.5,
            "{cwnd} {base} {rtt}: {diff}"
        );
    }
}

#[test]
fn a_random_loss_leaves_four_fifths_a_congestive_one_half() {
    for cwnd in [2u32, 3, 10, 99, 1000] {
        let random = unsafe { emu_alg_veno_after_loss(cwnd, 5) };
        let congestive = unsafe { emu_alg_veno_after_loss(cwnd, 6) };
        assert_eq!(
            random,
            ((f64::from(cwnd) * 0.8).floor() as u32).max(2),
            "cwnd {cwnd}"
        );
        assert_eq!(congestive, (cwnd / 2).max(2), "cwnd {cwnd}");
    }
}

#[test]
fn congested_it_grows_a_segment_every_other_round_trip() {
    let mut w = Window {
        cwnd: 100,
        cwnd_cnt: 0,
        clamp: 10_000,
        inc: 1,
    };
    let mut rounds = 0;
    while rounds < 10 {
        // A round trip: a window's worth of ACKs and one more ends it.
        for _ in 0..=w.cwnd {
            unsafe { emu_alg_veno_congestive(&mut w) };
        }
        rounds += 1;
    }
    assert_eq!(w.cwnd, 105, "ten rounds, five segments");
    let mut clamped = Window {
        cwnd: 100,
        cwnd_cnt: 100,
        clamp: 100,
        inc: 1,
    };
    unsafe { emu_alg_veno_congestive(&mut clamped) };
    assert_eq!((clamped.cwnd, clamped.inc), (100, 1));
}
