//! Unit tests of the congestion controls' arithmetic. The code under test
//! is not here: it lives in `bpf/algorithms.h`, runs in the kernel inside
//! the BPF congestion controls, and is compiled for the host through
//! `bpf/host.c` (each function exported as `emu_alg_*`). Every test checks
//! it against the references' formulas, written again here independently
//! in `f64`, so the kernel runs exactly the integer code these tests pass.

#[cfg(test)]
mod tests {
    unsafe extern "C" {
        fn emu_alg_dctcp_alpha(alpha: u32, ce: u32, delivered: u32) -> u32;
        fn emu_alg_dctcp_ssthresh(cwnd: u32, alpha: u32) -> u32;
        fn emu_alg_prague_alpha(upscaled: u64, ce: u32, delivered: u32) -> u64;
        fn emu_alg_prague_reduction(frac_cwnd: u64, alpha: u64) -> u64;
        fn emu_alg_prague_frac_to_cwnd(frac_cwnd: u64) -> u32;
        fn emu_alg_prague_ai_increase(
            srtt_us: u32,
            target_us: u32,
            round: u32,
            transition: u32,
        ) -> u64;
        fn emu_alg_prague_cwnd_increase(ai_increase: u64, acked: u32, cwnd: u32) -> u64;
        fn emu_alg_prague_pacing_rate(mss: u32, frac_cwnd: u64, srtt8: u32, slow_start: u32)
            -> u64;
        fn emu_alg_isqrt(a: u32) -> u32;
        fn emu_alg_icbrt(a: u64) -> u32;
        fn emu_alg_sce_sqrt_cwnd(cwnd: u32) -> u32;
        fn emu_alg_reno_sce_reduction(sce_bytes: u64, sqrt_cwnd: u32) -> u64;
        fn emu_alg_window_steps(cnt: *mut i64, unit: u64) -> i64;
        fn emu_alg_cubic_k(wmax: u32, cwnd: u32) -> u32;
        fn emu_alg_cubic_target(origin: u32, k: u32, t: u32) -> u32;
        fn emu_alg_cubic_sce_pull(
            t: u32,
            k: *mut u32,
            origin: *mut u32,
            segs: u32,
            sqrt_cwnd: u32,
        ) -> u32;
        fn emu_alg_dctcp_sce_reduction(sce_bytes: u64, cwnd: u32) -> u64;
        fn emu_alg_dctcp_sce_cut(cwnd: u32, logdiv: u32) -> u32;
        fn emu_alg_dctcp_sce_ssthresh(ssthresh: u32, loss_cwnd: u32) -> u32;
    }

    const G: f64 = 1.0 / 16.0;
    const ONE: f64 = (1u64 << 20) as f64;

    fn dctcp_alpha(alpha: u32, ce: u32, delivered: u32) -> u32 {
        unsafe { emu_alg_dctcp_alpha(alpha, ce, delivered) }
    }

    fn prague_alpha(up: u64, ce: u32, delivered: u32) -> u64 {
        unsafe { emu_alg_prague_alpha(up, ce, delivered) }
    }

    #[test]
    fn dctcp_alpha_update_is_the_ewma() {
        for &(alpha, ce, delivered) in &[(1024, 10, 100), (512, 0, 50), (300, 7, 9), (1024, 40, 40)]
        {
            let want = (alpha as f64 / 1024.0) * (1.0 - G) + G * ce as f64 / delivered as f64;
            let got = dctcp_alpha(alpha, ce, delivered) as f64 / 1024.0;
            assert!(
                (got - want).abs() <= 2.0 / 1024.0,
                "alpha {alpha} F {ce}/{delivered}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn dctcp_alpha_converges_to_the_marked_fraction() {
        for &f in &[0.02, 0.1, 0.5, 1.0] {
            let delivered = 1000;
            let ce = (f * delivered as f64) as u32;
            let mut alpha = 1024;
            for _ in 0..300 {
                alpha = dctcp_alpha(alpha, ce, delivered);
            }
            let got = alpha as f64 / 1024.0;
            assert!((got - f).abs() < 0.02, "F {f}: alpha {got}");
        }
        let mut alpha = 1024;
        for _ in 0..300 {
            alpha = dctcp_alpha(alpha, 0, 100);
        }
        assert_eq!(alpha, 0, "without marks alpha decays to zero");
    }

    #[test]
    fn dctcp_reduction_is_half_alpha() {
        for &(cwnd, alpha) in &[
            (100u32, 1024u32),
            (100, 512),
            (1000, 100),
            (7, 1024),
            (3, 1024),
        ] {
            let want = (cwnd as f64 * (1.0 - alpha as f64 / 2048.0)).max(2.0);
            let got = unsafe { emu_alg_dctcp_ssthresh(cwnd, alpha) } as f64;
            assert!(
                (got - want).abs() <= 1.0,
                "cwnd {cwnd} alpha {alpha}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn prague_alpha_update_is_the_ewma() {
        for &(alpha, ce, delivered) in
            &[(1.0, 10, 100), (0.3, 0, 50), (0.01, 1, 1000), (0.5, 40, 40)]
        {
            let up = (alpha * ONE * 16.0) as u64;
            let want = alpha * (1.0 - G) + G * ce as f64 / delivered as f64;
            let got = prague_alpha(up, ce, delivered) as f64 / 16.0 / ONE;
            assert!(
                (got - want).abs() < 1e-5,
                "alpha {alpha} F {ce}/{delivered}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn prague_alpha_converges_to_the_marked_fraction() {
        for &f in &[0.001, 0.05, 0.3, 1.0] {
            let delivered = 10_000;
            let ce = (f * delivered as f64) as u32;
            let mut up = 1u64 << 24;
            for _ in 0..400 {
                up = prague_alpha(up, ce, delivered);
            }
            let got = up as f64 / 16.0 / ONE;
            assert!((got - f).abs() < f * 0.01 + 1e-5, "F {f}: alpha {got}");
        }
    }

    #[test]
    fn prague_reduction_is_cwnd_times_half_alpha() {
        for &(cwnd, alpha) in &[(10.0, 1.0), (100.5, 0.25), (3.25, 0.01), (5000.0, 0.5)] {
            let frac = (cwnd * ONE) as u64;
            let a = (alpha * ONE) as u64;
            // Alpha in fixed point is a little below the decimal one.
            let want = cwnd * (a as f64 / ONE) / 2.0;
            let got = unsafe { emu_alg_prague_reduction(frac, a) } as f64 / ONE;
            assert!(
                (got - want).abs() <= 1.0 / ONE,
                "cwnd {cwnd} alpha {alpha}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn prague_window_rounds_up() {
        let cwnd = |w: f64| unsafe { emu_alg_prague_frac_to_cwnd((w * ONE) as u64) };
        assert_eq!(cwnd(10.0), 10);
        assert_eq!(cwnd(10.001), 11);
        assert_eq!(cwnd(9.999), 10);
        assert_eq!(cwnd(0.0), 1);
    }

    #[test]
    fn prague_increase_is_scaled_by_rtt_ratio_squared() {
        let target = 25_000;
        for &rtt_ms in &[1.0, 5.0, 12.5, 20.0] {
            let rtt_us = (rtt_ms * 1000.0) as u32;
            let got = unsafe { emu_alg_prague_ai_increase(rtt_us, target, 1000, 500) } as f64 / ONE;
            // As in the reference, RTTs are counted in whole 128 us units,
            // so the RTT used lies within 128 us below the true one.
            let low = ((rtt_ms - 0.128) / 25.0_f64).powi(2) * 0.999;
            let high = (rtt_ms / 24.96_f64).powi(2) * 1.001;
            assert!(
                got >= low && got <= high,
                "rtt {rtt_ms} ms: {got} not in [{low}, {high}]"
            );
        }
        let unscaled = |rtt, round| unsafe { emu_alg_prague_ai_increase(rtt, target, round, 500) };
        assert_eq!(
            unscaled(5_000, 499),
            1 << 20,
            "not before the transition rounds"
        );
        assert_eq!(unscaled(30_000, 1000), 1 << 20, "not above the target");
        assert_eq!(unscaled(150_000, 1000), 1 << 20, "not above 100 ms");
    }

    #[test]
    fn prague_window_of_acks_adds_one_segment() {
        for &cwnd in &[10u32, 100, 1234] {
            let mut frac = (cwnd as u64) << 20;
            for _ in 0..cwnd {
                frac += unsafe { emu_alg_prague_cwnd_increase(1 << 20, 1, cwnd) };
            }
            let grown = frac as f64 / ONE - cwnd as f64;
            assert!((grown - 1.0).abs() < 0.01, "cwnd {cwnd}: grew {grown}");
        }
    }

    #[test]
    fn prague_pacing_is_window_over_rtt() {
        let (mss, cwnd, srtt_s) = (1448u32, 20.0, 0.010);
        let frac = (cwnd * ONE) as u64;
        let srtt8 = (srtt_s * 1e6 * 8.0) as u32;
        let want = mss as f64 * cwnd / srtt_s;
        let ca = unsafe { emu_alg_prague_pacing_rate(mss, frac, srtt8, 0) } as f64;
        let ss = unsafe { emu_alg_prague_pacing_rate(mss, frac, srtt8, 1) } as f64;
        assert!((ca - want).abs() / want < 1e-3, "{ca} vs {want}");
        assert!(
            (ss - 2.0 * want).abs() / want < 2e-3,
            "{ss} vs {}",
            2.0 * want
        );
    }

    #[test]
    fn integer_roots_are_exact_floors() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..100_000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let a32 = if i < 5000 {
                i as u32
            } else {
                (x >> (32 + i % 32)) as u32
            };
            let s = unsafe { emu_alg_isqrt(a32) } as u128;
            assert!(
                s * s <= a32 as u128 && (s + 1) * (s + 1) > a32 as u128,
                "sqrt {a32} -> {s}"
            );
            let a64 = if i < 5000 { i } else { x >> (1 + i % 63) };
            let c = unsafe { emu_alg_icbrt(a64) } as u128;
            assert!(
                c * c * c <= a64 as u128 && (c + 1) * (c + 1) * (c + 1) > a64 as u128,
                "cbrt {a64} -> {c}"
            );
            let f = (a64 as f64).cbrt();
            assert!((c as f64 - f).abs() <= 1.0, "cbrt {a64}: {c} vs {f}");
        }
    }

    #[test]
    fn sce_square_root_of_the_window() {
        for cwnd in 2..10_000u32 {
            let s = unsafe { emu_alg_sce_sqrt_cwnd(cwnd) };
            assert!(
                s * s < cwnd && (s + 1) * (s + 1) >= cwnd,
                "cwnd {cwnd}: {s}"
            );
        }
    }

    #[test]
    fn window_steps_carry_the_remainder() {
        let steps = |mut cnt: i64, unit| {
            let n = unsafe { emu_alg_window_steps(&mut cnt, unit) };
            (n, cnt)
        };
        assert_eq!(steps(2500, 1000), (2, 500));
        assert_eq!(steps(-2500, 1000), (-2, -500));
        assert_eq!(steps(999, 1000), (0, 999));
        assert_eq!(steps(-1000, 1000), (-1, 0));
        assert_eq!(steps(5, 0), (0, 5));
    }

    #[test]
    fn reno_sce_window_of_marks_costs_half_sqrt_cwnd() {
        // The reference: each byte acknowledged with SCE feedback takes
        // sqrt(cwnd)/2 bytes off a counter worth mss * cwnd per segment.
        let mss = 1448u64;
        for &cwnd in &[4u32, 16, 50, 100, 400, 2500] {
            let sqrt = unsafe { emu_alg_sce_sqrt_cwnd(cwnd) };
            let mut cnt = -(unsafe { emu_alg_reno_sce_reduction(mss * cwnd as u64, sqrt) } as i64);
            let n = -unsafe { emu_alg_window_steps(&mut cnt, mss * cwnd as u64) };
            let want = (cwnd as f64).sqrt() / 2.0;
            assert!(
                (n as f64 - want).abs() <= 1.0,
                "cwnd {cwnd}: {n} segments vs {want}"
            );
        }
    }

    #[test]
    fn dctcp_sce_marked_share_of_a_window_costs_half_of_it() {
        // The reference: each byte acknowledged with SCE feedback takes
        // cwnd/2 bytes off a counter worth mss * cwnd per segment, so a
        // share F of a window marked costs F * cwnd / 2 segments.
        let mss = 1448u64;
        for &cwnd in &[4u32, 16, 50, 100, 400, 2500] {
            for &share in &[1.0, 0.5, 0.1] {
                let unit = mss * cwnd as u64;
                let marked = (unit as f64 * share) as u64;
                let mut cnt = -(unsafe { emu_alg_dctcp_sce_reduction(marked, cwnd) } as i64);
                let n = -unsafe { emu_alg_window_steps(&mut cnt, unit) };
                let want = share * cwnd as f64 / 2.0;
                assert!(
                    (n as f64 - want).abs() <= 1.0,
                    "cwnd {cwnd} share {share}: {n} segments vs {want}"
                );
            }
        }
    }

    #[test]
    fn dctcp_sce_cuts_a_quarter_an_eighth_or_a_half() {
        let cut = |cwnd, logdiv| unsafe { emu_alg_dctcp_sce_cut(cwnd, logdiv) };
        for &cwnd in &[5u32, 16, 100, 1001, 40_000] {
            for &(logdiv, keep) in &[(2u32, 0.75), (3, 0.875), (1, 0.5)] {
                // cwnd - max(floor(cwnd / 2^logdiv), 1), at least 2.
                let want = (cwnd as f64 - (cwnd as f64 / (1u32 << logdiv) as f64).floor().max(1.0))
                    .max(2.0);
                let got = cut(cwnd, logdiv) as f64;
                assert_eq!(got, want, "cwnd {cwnd} logdiv {logdiv}");
                assert!((got / cwnd as f64 - keep).abs() < 0.21, "cwnd {cwnd}");
            }
        }
        assert_eq!(cut(4, 3), 3, "at least one segment");
        assert_eq!(cut(3, 2), 2, "never below 2");
        assert_eq!(cut(1, 1), 2, "never below 2");
    }

    #[test]
    fn dctcp_sce_ssthresh_never_falls_and_keeps_slow_start() {
        let ss = |ssthresh, loss| unsafe { emu_alg_dctcp_sce_ssthresh(ssthresh, loss) };
        assert_eq!(ss(0x7fff_ffff, 100), 0x7fff_ffff, "slow start continues");
        assert_eq!(ss(20, 100), 50);
        assert_eq!(ss(70, 100), 70);
        assert_eq!(ss(0, 3), 2);
    }

    /// The cubic window function of RFC 9438 with C = 0.4 and beta = 0.7.
    fn cubic_w(t: f64, wmax: f64, cwnd: f64) -> (f64, f64) {
        let c = 0.4;
        let k = ((wmax - cwnd) / c).cbrt();
        (c * (t - k).powi(3) + wmax, k)
    }

    #[test]
    fn cubic_k_and_window_follow_the_rfc() {
        for &wmax in &[20u32, 100, 1000, 10_000] {
            let cwnd = (wmax as f64 * 0.7) as u32;
            let (_, k_want) = cubic_w(0.0, wmax as f64, cwnd as f64);
            let k = unsafe { emu_alg_cubic_k(wmax, cwnd) };
            let k_s = k as f64 / 1024.0;
            assert!(
                (k_s - k_want).abs() <= k_want * 0.005 + 0.002,
                "wmax {wmax}: K {k_s} vs {k_want}"
            );
            for step in 0..40 {
                let t = step as f64 * k_want / 10.0;
                let (want, _) = cubic_w(t, wmax as f64, cwnd as f64);
                let got = unsafe { emu_alg_cubic_target(wmax, k, (t * 1024.0) as u32) } as f64;
                assert!(
                    (got - want).abs() <= 1.0 + want.abs() * 0.005,
                    "wmax {wmax} t {t}: W {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn cubic_sce_pull_keeps_the_window_and_moves_the_origin() {
        let (wmax, cwnd) = (1000u32, 700u32);
        let k0 = unsafe { emu_alg_cubic_k(wmax, cwnd) };
        for &(t, segs, sqrt) in &[
            (k0 / 4, 3u32, 30u32),
            (k0 / 2, 30, 30),
            (k0 + 2048, 10, 30),
            (k0 + 2048, 40, 30),
        ] {
            let (mut k, mut origin) = (k0, wmax);
            let before = unsafe { emu_alg_cubic_target(origin, k, t) };
            let adv = unsafe { emu_alg_cubic_sce_pull(t, &mut k, &mut origin, segs, sqrt) };
            let after = unsafe { emu_alg_cubic_target(origin, k, t - adv) };
            assert!(
                before.abs_diff(after) <= 1,
                "t {t}: W {before} then {after}"
            );
            let share = (segs as f64 / sqrt as f64).min(1.0);
            let (k_s, k0_s, t_s) = (k as f64, k0 as f64, t as f64);
            if t < k0 {
                let want = (k0_s - t_s) * (1.0 - share);
                assert_eq!(adv, t, "the new epoch is now");
                assert!((k_s - want).abs() <= 1.0, "t {t}: K {k_s} vs {want}");
                assert!(origin < wmax, "the plateau comes down");
            } else {
                let want = (t_s - k0_s) * share;
                assert_eq!(adv, k0, "the new epoch is the old origin");
                assert!((k_s - want).abs() <= 1.0, "t {t}: K {k_s} vs {want}");
                assert!(origin >= wmax, "the origin moves up the curve toward now");
            }
        }
    }
}
