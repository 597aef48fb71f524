//! Scalable TCP: a = 0.01 a segment acknowledged (0.02 an ACK, for
//! delayed ACKs) once the window is over 50, b = 1/8.

unsafe extern "C" {
    fn emu_alg_scalable_ai_cnt(cwnd: u32) -> u32;
    fn emu_alg_scalable_after_loss(cwnd: u32) -> u32;
}

#[test]
fn a_loss_takes_an_eighth_off() {
    for cwnd in 3..20_000u32 {
        let left = unsafe { emu_alg_scalable_after_loss(cwnd) };
        // cwnd less an eighth rounded down is 7/8 rounded up.
        let want = (f64::from(cwnd) * 7.0 / 8.0).ceil() as u32;
        assert_eq!(left, want.max(2), "cwnd {cwnd}");
    }
    assert_eq!(unsafe { emu_alg_scalable_after_loss(1) }, 2);
    assert_eq!(unsafe { emu_alg_scalable_after_loss(2) }, 2);
}

#[test]
fn growth_is_two_percent_a_round_trip_above_fifty_segments() {
    for cwnd in [2u32, 10, 49, 50, 51, 100, 1000, 40_000] {
        let every = unsafe { emu_alg_scalable_ai_cnt(cwnd) };
        // A round trip brings cwnd ACKs: cwnd / every segments of growth.
        let per_round = f64::from(cwnd) / f64::from(every);
        let want = (0.02 * f64::from(cwnd)).max(1.0);
        assert!(
            (per_round - want).abs() < 1e-9,
            "cwnd {cwnd}: {per_round} vs {want}"
        );
    }
}
