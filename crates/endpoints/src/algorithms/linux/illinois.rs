//! TCP Illinois against its paper: alpha = k1 / (k2 + da) from alpha_max
//! = 10 at d1 = dm / 100 to alpha_min = 0.3 at dm; beta = 1/8 up to d2 =
//! dm / 10, 1/2 from d3 = 8 dm / 10, linear between.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Alpha {
    alpha: u32,
    rtt_above: u32,
    rtt_low: u32,
}

unsafe extern "C" {
    fn emu_alg_illinois_alpha(a: *mut Alpha, da: u32, dm: u32, theta: u32) -> u32;
    fn emu_alg_illinois_beta(da: u32, dm: u32) -> u32;
    fn emu_alg_illinois_avg_delay(sum_rtt: u64, cnt_rtt: u32, base_rtt: u32) -> u32;
    fn emu_alg_illinois_grow(cwnd: *mut u32, cnt: *mut u32, acked: u32, alpha: u32, clamp: u32);
    fn emu_alg_illinois_after_loss(cwnd: u32, beta: u32) -> u32;
}

fn paper_alpha(da: f64, dm: f64) -> f64 {
    let (amax, amin) = (10.0, 0.3);
    let d1 = dm / 100.0;
    if da <= d1 {
        return amax;
    }
    let k1 = (dm - d1) * amin * amax / (amax - amin);
    let k2 = (dm - d1) * amin / (amax - amin) - d1;
    k1 / (k2 + da)
}

fn paper_beta(da: f64, dm: f64) -> f64 {
    let (bmin, bmax) = (0.125, 0.5);
    let (d2, d3) = (dm / 10.0, 8.0 * dm / 10.0);
    if da <= d2 {
        bmin
    } else if da >= d3 {
        bmax
    } else {
        (bmin * d3 - bmax * d2) / (d3 - d2) + (bmax - bmin) / (d3 - d2) * da
    }
}

#[test]
fn alpha_falls_from_ten_to_three_tenths_with_the_delay() {
    let dm = 100_000u32;
    for da in [0u32, 500, 1000, 1500, 5000, 20_000, 50_000, 80_000, 100_000] {
        let mut a = Alpha {
            alpha: 1280,
            rtt_above: 1,
            rtt_low: 0,
        };
        let got = f64::from(unsafe { emu_alg_illinois_alpha(&mut a, da, dm, 0) }) / 128.0;
        let want = paper_alpha(f64::from(da), f64::from(dm));
        assert!(
            (got - want).abs() <= 0.05 * want + 1.0 / 128.0,
            "da {da}: {got} vs {want}"
        );
    }
}

#[test]
fn alpha_returns_to_its_largest_only_after_theta_low_rounds() {
    let mut a = Alpha {
        alpha: 1280,
        ..Default::default()
    };
    assert_eq!(
        unsafe { emu_alg_illinois_alpha(&mut a, 0, 1000, 5) },
        1280,
        "never left"
    );
    a.alpha = unsafe { emu_alg_illinois_alpha(&mut a, 900, 1000, 5) };
    assert_eq!(a.rtt_above, 1);
    let high = a.alpha;
    for round in 1..5 {
        assert_eq!(
            unsafe { emu_alg_illinois_alpha(&mut a, 0, 1000, 5) },
            high,
            "round {round}"
        );
    }
    assert_eq!(
        unsafe { emu_alg_illinois_alpha(&mut a, 0, 1000, 5) },
        1280,
        "the fifth"
    );
}

#[test]
fn beta_is_an_eighth_then_linear_then_half() {
    let dm = 100_000u32;
    for da in [
        0u32, 10_000, 10_001, 30_000, 45_000, 60_000, 79_999, 80_000, 100_000,
    ] {
        let got = f64::from(unsafe { emu_alg_illinois_beta(da, dm) }) / 64.0;
        let want = paper_beta(f64::from(da), f64::from(dm));
        assert!((got - want).abs() <= 1.0 / 64.0, "da {da}: {got} vs {want}");
    }
}

#[test]
fn growth_is_alpha_a_round_trip_and_a_loss_takes_beta_off() {
    assert_eq!(
        unsafe { emu_alg_illinois_avg_delay(3 * 50_000 + 30, 3, 40_000) },
        10_010
    );
    for alpha in [128u32, 640, 1280, 38] {
        let (mut cwnd, mut cnt) = (200u32, 0u32);
        // Ten round trips of one ACK a segment.
        for _ in 0..10 {
            let acks = cwnd;
            for _ in 0..acks {
                unsafe { emu_alg_illinois_grow(&mut cwnd, &mut cnt, 1, alpha, 100_000) };
            }
        }
        let want = 10.0 * f64::from(alpha) / 128.0;
        let grown = f64::from(cwnd - 200);
        assert!(
            (grown - want).abs() <= want * 0.1 + 1.0,
            "alpha {alpha}: {grown} vs {want}"
        );
    }
    assert_eq!(unsafe { emu_alg_illinois_after_loss(1000, 8) }, 875);
    assert_eq!(unsafe { emu_alg_illinois_after_loss(1000, 32) }, 500);
    assert_eq!(unsafe { emu_alg_illinois_after_loss(3, 32) }, 2);
}
