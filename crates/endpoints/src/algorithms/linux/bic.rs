//! BIC TCP against its rules: below the last maximum the window moves a
//! quarter of the way there a round trip (at most max_increment, at
//! least a creep of B / smooth_part); above it probes slowly, then
//! faster, then linearly; a loss keeps beta of the window.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Bic {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    epoch_start: u32,
    delayed_ack: u32,
    fast_convergence: u32,
    max_increment: u32,
    low_window: u32,
    beta: u32,
    smooth_part: u32,
}

unsafe extern "C" {
    fn emu_alg_bic_reset(ca: *mut Bic);
    fn emu_alg_bic_update(ca: *mut Bic, cwnd: u32, now_ms: u32);
    fn emu_alg_bic_after_loss(ca: *mut Bic, cwnd: u32) -> u32;
    fn emu_alg_bic_acked(ca: *mut Bic, pkts_acked: u32);
}

fn bic(last_max: u32) -> Bic {
    let mut ca = Bic {
        fast_convergence: 1,
        max_increment: 16,
        low_window: 14,
        beta: 819,
        smooth_part: 20,
        ..Default::default()
    };
    unsafe { emu_alg_bic_reset(&mut ca) };
    // One segment an ACK, in 1/16.
    ca.delayed_ack = 16;
    ca.last_max_cwnd = last_max;
    ca
}

/// Segments of growth a round trip (cwnd ACKs) at `cwnd`.
fn per_round(last_max: u32, cwnd: u32) -> f64 {
    let mut ca = bic(last_max);
    unsafe { emu_alg_bic_update(&mut ca, cwnd, 1000) };
    f64::from(cwnd) / f64::from(ca.cnt)
}

#[test]
fn below_the_last_maximum_it_searches_binarily() {
    // A quarter of the distance a round trip, at most 16.
    for (last_max, cwnd) in [(1400u32, 1000u32), (1040, 1000), (1012, 1000), (1100, 1000)] {
        let want = (f64::from(last_max - cwnd) / 4.0).floor().min(16.0);
        let got = per_round(last_max, cwnd);
        assert!(
            (got - want).abs() <= want * 0.02 + 0.05,
            "{cwnd} below {last_max}: {got} vs {want}"
        );
    }
    // Within B of it: B / smooth_part = 0.2 segments a round trip.
    assert!((per_round(1003, 1000) - 0.2).abs() < 0.01);
}

#[test]
fn above_the_last_maximum_it_probes_slowly_then_faster_then_linearly() {
    assert!(
        (per_round(1000, 1002) - 0.2).abs() < 0.01,
        "within B: the creep"
    );
    // Within max_increment * (B - 1): (cwnd - last_max) / 3 a round trip.
    let got = per_round(1000, 1030);
    assert!((got - 10.0).abs() < 0.1, "{got}");
    assert!(
        (per_round(1000, 1100) - 16.0).abs() < 0.3,
        "beyond: max_increment"
    );
}

#[test]
fn before_a_loss_it_grows_at_least_five_percent_a_round_trip() {
    let got = per_round(0, 1000);
    assert!((got - 50.0).abs() < 1.0, "{got}");
    // Up to low_window, Reno's one a round trip.
    assert!((per_round(0, 14) - 1.0).abs() < 1e-9);
}

#[test]
fn delayed_acks_keep_the_growth_a_round_trip() {
    // The ratio's moving average (15/16 old) settles within its 1/16
    // rounding: at 16 r up to 16 r + 15 for r segments an ACK.
    for r in 1..6u32 {
        let mut ca = bic(0);
        for _ in 0..400 {
            unsafe { emu_alg_bic_acked(&mut ca, r) };
        }
        assert!(
            (16 * r..16 * r + 16).contains(&ca.delayed_ack),
            "{r}: {}",
            ca.delayed_ack
        );
    }
    let mut ca = bic(1400);
    ca.delayed_ack = 32;
    unsafe { emu_alg_bic_update(&mut ca, 1000, 1000) };
    // Half the ACKs a round trip, each worth twice as much.
    let got = 500.0 / f64::from(ca.cnt);
    assert!((got - 16.0).abs() < 0.3, "{got}");
}

#[test]
fn cnt_is_recomputed_at_most_every_31_ms_for_one_window() {
    let mut ca = bic(1400);
    unsafe { emu_alg_bic_update(&mut ca, 1000, 1000) };
    let before = ca.cnt;
    ca.last_max_cwnd = 1020;
    unsafe { emu_alg_bic_update(&mut ca, 1000, 1031) };
    assert_eq!(ca.cnt, before, "31 ms later: kept");
    unsafe { emu_alg_bic_update(&mut ca, 1000, 1032) };
    assert_ne!(ca.cnt, before, "32 ms later: anew");
}

#[test]
fn a_loss_keeps_beta_and_fast_convergence_lowers_the_maximum() {
    let mut ca = bic(0);
    let left = unsafe { emu_alg_bic_after_loss(&mut ca, 1000) };
    assert_eq!(left, (1000.0f64 * 819.0 / 1024.0).floor() as u32);
    assert_eq!(ca.last_max_cwnd, 1000);
    // A loss below it: (1 + beta) / 2 of the window.
    let left = unsafe { emu_alg_bic_after_loss(&mut ca, 900) };
    assert_eq!(
        ca.last_max_cwnd,
        (900.0f64 * (1024.0 + 819.0) / 2048.0).floor() as u32
    );
    assert_eq!(left, 719);
    // Up to low_window: half.
    assert_eq!(unsafe { emu_alg_bic_after_loss(&mut ca, 14) }, 7);
    assert_eq!(unsafe { emu_alg_bic_after_loss(&mut ca, 3) }, 2);
}
