//! TCP Hybla against its model: with rho = RTT / RTT0 (at least 1), slow
//! start grows 2^rho - 1 segments an ACK and congestion avoidance rho^2 /
//! cwnd, so a window grows in time as an RTT0 flow's does.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Rho {
    rho: u32,
    rho2: u32,
    rho_3ls: u32,
    rho2_7ls: u32,
}

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Window {
    cwnd: u32,
    ssthresh: u32,
    cwnd_cnt: u32,
    cents: u32,
    clamp: u32,
}

unsafe extern "C" {
    fn emu_alg_hybla_rho(r: *mut Rho, srtt_us: u32, rtt0_ms: u32);
    fn emu_alg_hybla_fraction(odds: u32) -> u32;
    fn emu_alg_hybla_grow(w: *mut Window, r: *const Rho);
}

/// rho for a smoothed RTT of `rtt_ms` (the kernel keeps 8 times it in us).
fn rho(rtt_ms: f64, rtt0_ms: u32) -> Rho {
    let mut r = Rho::default();
    unsafe { emu_alg_hybla_rho(&mut r, (rtt_ms * 8000.0) as u32, rtt0_ms) };
    r
}

fn grow(w: &mut Window, r: &Rho, acks: u32) {
    for _ in 0..acks {
        unsafe { emu_alg_hybla_grow(w, r) };
    }
}

#[test]
fn rho_is_the_rtt_over_rtt0_in_eighths_at_least_one() {
    for (rtt, rtt0) in [
        (200.0, 25),
        (100.0, 25),
        (62.5, 25),
        (10.0, 25),
        (600.0, 50),
    ] {
        let r = rho(rtt, rtt0);
        let want = (rtt / f64::from(rtt0)).max(1.0);
        assert!(
            (f64::from(r.rho_3ls) / 8.0 - want).abs() <= 0.125,
            "{rtt} ms: {r:?}"
        );
        assert_eq!(r.rho, r.rho_3ls / 8);
        let square = (f64::from(r.rho_3ls) / 8.0).powi(2);
        assert!(
            (f64::from(r.rho2_7ls) / 128.0 - square).abs() < 1e-9,
            "{rtt} ms: {r:?}"
        );
    }
}

#[test]
fn the_fractions_are_two_to_the_eighths() {
    for odds in 0..8 {
        let want = 128.0 * 2f64.powf(f64::from(odds) / 8.0);
        let got = f64::from(unsafe { emu_alg_hybla_fraction(odds) });
        assert!((got - want).abs() < 1.0, "2^({odds}/8): {got} vs {want}");
    }
}

#[test]
fn slow_start_grows_two_to_the_rho_less_one_an_ack() {
    for rtt in [25.0, 75.0, 62.5, 100.0] {
        let r = rho(rtt, 25);
        let mut w = Window {
            cwnd: 2,
            ssthresh: u32::MAX / 2,
            clamp: 65_535,
            ..Default::default()
        };
        let acks = 64;
        grow(&mut w, &r, acks);
        let per_ack = 2f64.powf(f64::from(r.rho_3ls) / 8.0) - 1.0;
        let want = 2.0 + per_ack * f64::from(acks);
        // The fraction table is 2^(k/8) to within 1/128 of a segment.
        let tolerance = f64::from(acks) * 2f64.powi(r.rho as i32) / 128.0 + 1.0;
        assert!(
            (f64::from(w.cwnd) - want).abs() <= tolerance,
            "{rtt} ms: {} vs {want}",
            w.cwnd
        );
    }
}

#[test]
fn congestion_avoidance_grows_rho_squared_a_round_trip() {
    for rtt in [25.0, 50.0, 100.0, 200.0] {
        let r = rho(rtt, 25);
        let mut w = Window {
            cwnd: 400,
            ssthresh: 400,
            clamp: 65_535,
            ..Default::default()
        };
        // A round trip: a window's worth of ACKs.
        grow(&mut w, &r, 400);
        let want = (rtt / 25.0f64).powi(2);
        let grown = f64::from(w.cwnd - 400);
        assert!(
            (grown - want).abs() <= want * 0.1 + 1.0,
            "{rtt} ms: {grown} vs {want}"
        );
    }
}

#[test]
fn slow_start_stops_at_ssthresh_and_the_window_at_the_clamp() {
    let r = rho(200.0, 25);
    let mut w = Window {
        cwnd: 10,
        ssthresh: 100,
        clamp: 65_535,
        ..Default::default()
    };
    grow(&mut w, &r, 1);
    assert_eq!(w.cwnd, 100, "2^8 - 1 an ACK, cut at ssthresh");
    let mut w = Window {
        cwnd: 1000,
        ssthresh: 1000,
        clamp: 1001,
        ..Default::default()
    };
    grow(&mut w, &r, 5000);
    assert_eq!(w.cwnd, 1001);
}
