//! Unit tests of the congestion controls' arithmetic. The code under test
//! is not here: it lives in `bpf/arith/` (through `bpf/algorithms.h`), runs in the kernel inside
//! the BPF congestion controls, and is compiled for the host through
//! `bpf/host.c` (each function exported as `emu_alg_*`). Every test checks
//! it against the references' formulas, written again here independently
//! in `f64`, so the kernel runs exactly the integer code these tests pass.

#[cfg(test)]
mod dctcp_versions;
#[cfg(test)]
mod linux;
#[cfg(test)]
mod prague_05;
#[cfg(test)]
mod reno_sce;
#[cfg(test)]
mod sce_unit;

#[cfg(test)]
mod tests {
    unsafe extern "C" {
        fn emu_alg_dctcp_alpha(alpha: u32, ce: u32, delivered: u32, shift_g: u32) -> u32;
        fn emu_alg_dctcp_initial_alpha(alpha_on_init: u32) -> u32;
        fn emu_alg_dctcp_alpha_on_timeout(alpha: u32, clamp: u32) -> u32;
        fn emu_alg_dctcp_ssthresh(cwnd: u32, alpha: u32) -> u32;
        fn emu_alg_prague_alpha(upscaled: u64, ce: u32, delivered: u32) -> u64;
        fn emu_alg_prague_reduction(frac_cwnd: u64, alpha: u64) -> u64;
        fn emu_alg_prague_frac_to_cwnd(frac_cwnd: u64) -> u32;
        fn emu_alg_prague_ai_increase(
            srtt_us: u32,
            scaling: u32,
            target: u32,
            round: u32,
            transition: u32,
        ) -> u64;
        fn emu_alg_prague_tso_segs(
            burst: u32,
            floor: u32,
            tso_floor: u32,
            max_tso_segs: u32,
        ) -> u32;
        fn emu_alg_prague_classic_start(c: *mut Classic, srtt_us: u32);
        fn emu_alg_prague_classic_sample(c: *mut Classic, rtt_us: u32);
        fn emu_alg_prague_classic_gains(c: *mut Classic, ssthresh: u32);
        fn emu_alg_prague_classic_detect(c: *mut Classic, min_rtt_us: u32);
        fn emu_alg_prague_classic_alpha(classic_ecn: u64, alpha: u64) -> u64;
        fn emu_alg_ilog2(v: u64) -> u32;
        fn emu_alg_prague_cwnd_increase(ai_increase: u64, acked: u32, cwnd: u32) -> u64;
        fn emu_alg_prague_pacing_rate(mtu: u32, frac_cwnd: u64, srtt8: u32, slow_start: u32)
            -> u64;
        fn emu_alg_prague_max_tso_burst(
            rate: u64,
            mtu: u32,
            burst_shift: u32,
            max_tso_segs: u32,
        ) -> u32;
        fn emu_alg_isqrt(a: u32) -> u32;
        fn emu_alg_icbrt(a: u64) -> u32;
        fn emu_alg_sce_sqrt_cwnd(cwnd: u32) -> u32;
        fn emu_alg_reno_sce_reduction(sce_bytes: u64, sqrt_cwnd: u32) -> u64;
        fn emu_alg_window_steps(cnt: *mut i64, unit: u64) -> i64;
        fn emu_alg_cubic_k(wmax: u32, cwnd: u32, bic_scale: u32) -> u32;
        fn emu_alg_cubic_target(origin: u32, k: u32, t: u32, bic_scale: u32) -> u32;
        fn emu_alg_cubic_sce_pull(
            t: u32,
            k: *mut u32,
            origin: *mut u32,
            segs: u32,
            sqrt_cwnd: u32,
            bic_scale: u32,
        ) -> u32;
        fn emu_alg_cubic_friendly_scale(beta: u32) -> u32;
        fn emu_alg_cubic_ssthresh(cwnd: u32, beta: u32, recent_sce: u32) -> u32;
        fn emu_alg_cubic_last_max(
            cwnd: u32,
            last_max: u32,
            beta: u32,
            fast_convergence: u32,
        ) -> u32;
        fn emu_alg_dctcp_sce_reduction(sce_bytes: u64, cwnd: u32) -> u64;
        fn emu_alg_dctcp_sce_cut(cwnd: u32, logdiv: u32) -> u32;
        fn emu_alg_dctcp_sce_ssthresh(ssthresh: u32, loss_cwnd: u32) -> u32;
        fn emu_alg_relentless_cut(cwnd: u32, ce: u32, halves: *mut u32) -> u32;
        fn emu_alg_vegas_sample(rtt_us: u32) -> u32;
        fn emu_alg_vegas_diff(cwnd: u32, base_rtt: u32, rtt: u32) -> u32;
        fn emu_alg_vegas_target_cwnd(cwnd: u32, base_rtt: u32, rtt: u32) -> u32;
        #[allow(clippy::too_many_arguments)]
        fn emu_alg_vegas_round(
            w: *mut VegasWindow,
            acked: u32,
            base_rtt: u32,
            rtt: u32,
            alpha: u32,
            beta: u32,
            gamma: u32,
            clamp: u32,
        );
    }

    const G: f64 = 1.0 / 16.0;
    const ONE: f64 = (1u64 << 20) as f64;

    fn dctcp_alpha(alpha: u32, ce: u32, delivered: u32) -> u32 {
        unsafe { emu_alg_dctcp_alpha(alpha, ce, delivered, 4) }
    }

    /// `struct emu_prague_classic` of `bpf/algorithms.h`.
    #[repr(C)]
    #[derive(Default, Clone, Copy, Debug)]
    struct Classic {
        srtt_pace: u64,
        mdev_pace: u64,
        classic_ecn: u64,
        rest_depth: u32,
        rest_mdev: u32,
        g_srtt_shift: u32,
        g_mdev_shift: u32,
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

    /// dctcp_shift_g: every gain from 1/1 to 1/1024 is the EWMA with
    /// g = 2^-shift_g, as the module computes it (decay of at least one
    /// unit, the marked share in 2^(10 - g) units); out of range is 10.
    #[test]
    fn dctcp_alpha_follows_its_gain_setting() {
        for shift_g in 0..=10u32 {
            let g = 1.0 / f64::from(1u32 << shift_g);
            for &(alpha, ce, delivered) in &[(1024, 10, 100), (600, 0, 50), (300, 7, 9)] {
                let got = unsafe { emu_alg_dctcp_alpha(alpha, ce, delivered, shift_g) };
                let decay = (alpha >> shift_g).max(if alpha >> shift_g == 0 { alpha } else { 0 });
                let want = (alpha - decay + ((ce << (10 - shift_g)) / delivered)).min(1024);
                assert_eq!(
                    got, want,
                    "shift_g {shift_g}: alpha {alpha} F {ce}/{delivered}"
                );
                // Where alpha >> shift_g is 0 the module's decay takes all
                // of alpha (min_not_zero), and the EWMA does not apply.
                if alpha >> shift_g == 0 {
                    continue;
                }
                let ewma = f64::from(alpha) / 1024.0 * (1.0 - g)
                    + g * f64::from(ce) / f64::from(delivered);
                assert!(
                    (f64::from(got) / 1024.0 - ewma).abs() <= 2.0 / 1024.0 + g,
                    "shift_g {shift_g}: {got} vs the EWMA {ewma}"
                );
            }
        }
        assert_eq!(
            unsafe { emu_alg_dctcp_alpha(1024, 0, 100, 99) },
            unsafe { emu_alg_dctcp_alpha(1024, 0, 100, 10) },
            "a gain beyond 2^-10 is 2^-10"
        );
    }

    /// dctcp_alpha_on_init (at most 1024) and dctcp_clamp_alpha_on_loss
    /// (a timeout sets alpha to 1024), as the module applies them.
    #[test]
    fn dctcp_initial_alpha_and_its_clamp_on_loss() {
        for (given, want) in [(0, 0), (512, 512), (1024, 1024), (5000, 1024)] {
            assert_eq!(unsafe { emu_alg_dctcp_initial_alpha(given) }, want);
        }
        assert_eq!(unsafe { emu_alg_dctcp_alpha_on_timeout(100, 0) }, 100);
        assert_eq!(unsafe { emu_alg_dctcp_alpha_on_timeout(100, 1) }, 1024);
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

    /// The RTT scaling heuristics (prague_rtt_scaling), with the target in
    /// units of 128 us as the reference keeps it (25 ms is 195 units).
    const NONE: u32 = 0;
    const RATE: u32 = 1;
    const SCALABLE: u32 = 2;
    const ADDITIVE: u32 = 3;

    fn ai_increase(rtt_us: u32, scaling: u32, target: u32, round: u32) -> f64 {
        unsafe { emu_alg_prague_ai_increase(rtt_us, scaling, target, round, 500) as f64 / ONE }
    }

    #[test]
    fn prague_increase_is_scaled_by_rtt_ratio_squared() {
        let target = 25_000 >> 7;
        for &rtt_ms in &[1.0, 5.0, 12.5, 20.0] {
            let rtt_us = (rtt_ms * 1000.0) as u32;
            let got = ai_increase(rtt_us, RATE, target, 1000);
            // As in the reference, RTTs are counted in whole 128 us units,
            // so the RTT used lies within 128 us below the true one.
            let low = ((rtt_ms - 0.128) / 24.96_f64).powi(2) * 0.999;
            let high = (rtt_ms / 24.96_f64).powi(2) * 1.001;
            assert!(
                got >= low && got <= high,
                "rtt {rtt_ms} ms: {got} not in [{low}, {high}]"
            );
        }
        // Unscaled: before the transition rounds, at or above the target,
        // above 100 ms, and without a heuristic.
        for (rtt_us, scaling, round) in [
            (5_000, RATE, 499),
            (30_000, RATE, 1000),
            (150_000, RATE, 1000),
            (5_000, NONE, 1000),
        ] {
            assert_eq!(
                ai_increase(rtt_us, scaling, target, round),
                1.0,
                "{rtt_us} us"
            );
        }
        // prague_rtt_target: a 10 ms target scales a 5 ms RTT by a quarter.
        let ten = ai_increase(5_000, RATE, 10_000 >> 7, 1000);
        assert!((ten - (39.0_f64 / 78.0).powi(2)).abs() < 1e-3, "{ten}");
        // prague_rtt_transition: the rounds before it are unscaled.
        let early = unsafe { emu_alg_prague_ai_increase(5_000, RATE, target, 9, 10) };
        let late = unsafe { emu_alg_prague_ai_increase(5_000, RATE, target, 10, 10) };
        assert_eq!(early, 1 << 20);
        assert!(late < 1 << 18, "{late}");
    }

    /// The scalable heuristic: (R0/8 + min(max(rtt - R1, 0), R0)) rtt / R0^2
    /// with R0 = 2^14 us and R1 = 1.5 ms in 128 us units (128 and 12).
    #[test]
    fn prague_scalable_increase_floors_at_an_eighth() {
        for &rtt_ms in &[0.5, 1.0, 2.0, 8.0, 16.0, 30.0, 90.0] {
            let rtt = ((rtt_ms * 1000.0) as u32 >> 7) as f64;
            let (r0, r1) = (128.0, 12.0);
            let want = (r0 / 8.0 + (rtt - r1).clamp(0.0, r0)) * rtt / (r0 * r0);
            let got = ai_increase((rtt_ms * 1000.0) as u32, SCALABLE, 195, 1000);
            assert!(
                (got - want).abs() <= 1.0 / ONE + want * 1e-6,
                "rtt {rtt_ms} ms: {got} vs {want}"
            );
        }
    }

    /// The additive heuristic: the rate formula toward a target of the
    /// configured one plus the flow's own RTT.
    #[test]
    fn prague_additive_increase_targets_its_rtt_plus_the_target() {
        for &rtt_ms in &[1.0, 10.0, 25.0, 60.0] {
            let rtt_us = (rtt_ms * 1000.0) as u32;
            let rtt = f64::from(rtt_us >> 7);
            let target = 195.0 + rtt;
            let want = (rtt / target).powi(2);
            let got = ai_increase(rtt_us, ADDITIVE, 195, 1000);
            assert!(
                (got - want).abs() < 1e-5,
                "rtt {rtt_ms} ms: {got} vs {want}"
            );
        }
    }

    #[test]
    fn integer_log2_is_the_floor() {
        assert_eq!(unsafe { emu_alg_ilog2(0) }, 0);
        for shift in 0..64u32 {
            let v = 1u64 << shift;
            assert_eq!(unsafe { emu_alg_ilog2(v) }, shift);
            assert_eq!(unsafe { emu_alg_ilog2(v | (v >> 1)) }, shift);
            if shift > 0 {
                assert_eq!(unsafe { emu_alg_ilog2(v - 1) }, shift - 1);
            }
        }
    }

    /// Detection after `rounds` rounds of RTT samples drawn around
    /// `base_us + depth_us` with +-`jitter_us`, at a window of 40.
    fn detect(base_us: u32, depth_us: u32, jitter_us: u32, rounds: u32) -> Classic {
        let mut c = Classic::default();
        unsafe {
            emu_alg_prague_classic_start(&mut c, base_us + depth_us);
            emu_alg_prague_classic_gains(&mut c, 40);
        }
        let mut x = 12345u64;
        for _ in 0..rounds {
            for _ in 0..40 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let spread = if jitter_us == 0 {
                    0
                } else {
                    (x >> 33) as u32 % (2 * jitter_us + 1)
                };
                let rtt = base_us + depth_us + spread - jitter_us.min(depth_us + base_us);
                unsafe { emu_alg_prague_classic_sample(&mut c, rtt) };
            }
            unsafe { emu_alg_prague_classic_detect(&mut c, base_us) };
        }
        c
    }

    const L_STICKY: u64 = 16 << 19;
    const CLASSIC: u64 = L_STICKY + (1 << 20);
    const C_STICKY: u64 = CLASSIC + L_STICKY;

    /// prague_ecn_fallback's detection: a shallow, steady queue (an L4S
    /// AQM's, under a millisecond) keeps the score at 0; a classic AQM's
    /// (a standing 15 ms with jitter of a few ms) drives it to its ceiling.
    #[test]
    fn classic_ecn_detection_tells_a_classic_queue_from_an_l4s_one() {
        let l4s = detect(20_000, 500, 200, 400);
        assert_eq!(l4s.classic_ecn, 0, "{l4s:?}");
        let classic = detect(20_000, 15_000, 4_000, 400);
        assert_eq!(classic.classic_ecn, C_STICKY, "{classic:?}");
    }

    /// Each round adds V lg(mdev / 750 us) + D lg(max(depth / 2 ms, 1)),
    /// V = D = 1/2: the carried remainders make the integer logarithms
    /// add up to the real ones over rounds.
    #[test]
    fn classic_ecn_score_moves_by_the_logarithms() {
        let mut c = Classic::default();
        unsafe {
            emu_alg_prague_classic_start(&mut c, 28_000);
            emu_alg_prague_classic_gains(&mut c, 40);
        }
        // A fixed mdev of 3 ms and depth of 8 ms, set in the estimator.
        let (gs, gm) = (c.g_srtt_shift, c.g_mdev_shift);
        // Eight rounds of 2 each stay under the ceiling (17).
        let rounds = 8;
        for _ in 0..rounds {
            c.srtt_pace = 28_000u64 << gs;
            c.mdev_pace = 3_000u64 << gm;
            unsafe { emu_alg_prague_classic_detect(&mut c, 20_000) };
        }
        let per_round = 0.5 * (3_000f64 / 750.0).log2() + 0.5 * (8_000f64 / 2_000.0).log2();
        let got = c.classic_ecn as f64 / ONE / f64::from(rounds);
        assert!(
            (got - per_round).abs() < 0.1,
            "{got} per round vs {per_round}"
        );
    }

    /// The gains follow the window: 2^-(1.5 lg ssthresh + 1), at most 2^-18.
    #[test]
    fn classic_ecn_gains_follow_the_window() {
        for &(ssthresh, want) in &[(1u32, 1u32), (4, 4), (40, 8), (1000, 14), (0x7fff_ffff, 18)] {
            let mut c = Classic::default();
            unsafe {
                emu_alg_prague_classic_start(&mut c, 20_000);
                emu_alg_prague_classic_gains(&mut c, ssthresh);
            }
            assert_eq!(
                (c.g_srtt_shift, c.g_mdev_shift),
                (want, want + 1),
                "ssthresh {ssthresh}"
            );
            assert_eq!(
                c.srtt_pace >> c.g_srtt_shift,
                20_000,
                "rescaled with the gain"
            );
        }
    }

    /// With fallback on, a reduction uses alpha no lower than 0.625 times
    /// the score's part above L_STICKY (at most 1).
    #[test]
    fn classic_ecn_fallback_floors_alpha() {
        let alpha = |score, a| unsafe { emu_alg_prague_classic_alpha(score, a) };
        assert_eq!(alpha(L_STICKY, 1000), 1000, "not at or below L_STICKY");
        assert_eq!(alpha(L_STICKY + (1 << 19), 1000), (1 << 18) + (1 << 16));
        assert_eq!(
            alpha(C_STICKY, 1000),
            (1 << 19) + (1 << 17),
            "the part is at most 1"
        );
        assert_eq!(alpha(C_STICKY, 1 << 20), 1 << 20, "never lowers alpha");
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
    fn prague_pacing_is_window_of_mtus_over_rtt() {
        let (mtu, cwnd, srtt_s) = (1500u32, 20.0, 0.010);
        let frac = (cwnd * ONE) as u64;
        let srtt8 = (srtt_s * 1e6 * 8.0) as u32;
        let want = mtu as f64 * cwnd / srtt_s;
        let ca = unsafe { emu_alg_prague_pacing_rate(mtu, frac, srtt8, 0) } as f64;
        let ss = unsafe { emu_alg_prague_pacing_rate(mtu, frac, srtt8, 1) } as f64;
        assert!((ca - want).abs() / want < 1e-3, "{ca} vs {want}");
        assert!(
            (ss - 2.0 * want).abs() / want < 2e-3,
            "{ss} vs {}",
            2.0 * want
        );
    }

    /// The reference's burst: the packets of 2^-burst_shift s at the pacing
    /// rate, rounded down, at least one, at most `max_tso_segs` where set.
    fn reference_burst(rate: f64, mtu: f64, shift: u32, max_segs: u32) -> u32 {
        let segs = ((rate / mtu) / f64::from(1u32 << shift)).floor().max(1.0) as u32;
        if max_segs > 0 {
            segs.min(max_segs)
        } else {
            segs
        }
    }

    #[test]
    fn prague_bursts_last_a_quarter_millisecond_of_the_pacing_rate() {
        let mtu = 1500u32;
        for &mbit in &[0.1, 1.0, 5.0, 12.0, 50.0, 100.0, 250.0, 1000.0, 10_000.0] {
            for &(shift, max_segs) in &[(12, 0), (10, 0), (14, 0), (12, 4), (12, 1)] {
                let rate = mbit * 1e6 / 8.0;
                let got =
                    unsafe { emu_alg_prague_max_tso_burst(rate as u64, mtu, shift, max_segs) };
                let want = reference_burst(rate, f64::from(mtu), shift, max_segs);
                assert_eq!(got, want, "{mbit} Mbit/s, shift {shift}, max {max_segs}");
            }
        }
        // At 5 Mbit/s a burst is one segment: two would last 4.8 ms.
        assert_eq!(
            unsafe { emu_alg_prague_max_tso_burst(625_000, mtu, 12, 0) },
            1
        );
        // At 250 Mbit/s, five segments are 240 us on the wire.
        assert_eq!(
            unsafe { emu_alg_prague_max_tso_burst(31_250_000, mtu, 12, 0) },
            5
        );
    }

    /// tso_floor and max_tso_segs on the burst: version 0.6's tso_segs hook
    /// took max(burst, tcp_min_tso_segs), then capped it at max_tso_segs;
    /// the current reference drops the floor.
    #[test]
    fn prague_burst_floor_and_cap() {
        let segs =
            |burst, floor, on, cap| unsafe { emu_alg_prague_tso_segs(burst, floor, on, cap) };
        assert_eq!(segs(1, 2, 0, 0), 1, "no floor by default");
        assert_eq!(segs(1, 2, 1, 0), 2, "0.6's floor");
        assert_eq!(segs(5, 2, 1, 0), 5, "the floor never lowers");
        assert_eq!(segs(5, 2, 0, 3), 3, "the cap");
        assert_eq!(segs(1, 4, 1, 3), 3, "the cap after the floor");
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

    /// The cubic window function of RFC 9438 with constant `c`.
    fn cubic_w(t: f64, wmax: f64, cwnd: f64, c: f64) -> (f64, f64) {
        let k = ((wmax - cwnd) / c).cbrt();
        (c * (t - k).powi(3) + wmax, k)
    }

    /// The module's default bic_scale (C = 0.4).
    const BIC: u32 = 41;

    #[test]
    fn cubic_k_and_window_follow_the_rfc() {
        // bic_scale 41 is C = 0.4 (410/1024); 82 doubles C, as the module's
        // cube_rtt_scale and cube_factor follow bic_scale.
        for &(bic_scale, c) in &[(BIC, 410.0 / 1024.0), (82, 820.0 / 1024.0)] {
            for &wmax in &[20u32, 100, 1000, 10_000] {
                let cwnd = (wmax as f64 * 0.7) as u32;
                let (_, k_want) = cubic_w(0.0, wmax as f64, cwnd as f64, c);
                let k = unsafe { emu_alg_cubic_k(wmax, cwnd, bic_scale) };
                let k_s = k as f64 / 1024.0;
                assert!(
                    (k_s - k_want).abs() <= k_want * 0.005 + 0.002,
                    "bic_scale {bic_scale} wmax {wmax}: K {k_s} vs {k_want}"
                );
                for step in 0..40 {
                    let t = step as f64 * k_want / 10.0;
                    let (want, _) = cubic_w(t, wmax as f64, cwnd as f64, c);
                    let got =
                        unsafe { emu_alg_cubic_target(wmax, k, (t * 1024.0) as u32, bic_scale) }
                            as f64;
                    assert!(
                        (got - want).abs() <= 1.0 + want.abs() * 0.005,
                        "bic_scale {bic_scale} wmax {wmax} t {t}: W {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn cubic_beta_sets_the_cut_and_the_reno_friendly_growth() {
        // The module: beta_scale = 8 (1024 + beta) / 3 / (1024 - beta).
        for &beta in &[512u32, 717, 900] {
            let want = 8 * (1024 + beta) / 3 / (1024 - beta);
            assert_eq!(unsafe { emu_alg_cubic_friendly_scale(beta) }, want);
        }
        assert_eq!(unsafe { emu_alg_cubic_friendly_scale(717) }, 15);
        let cut = |cwnd, beta, sce| unsafe { emu_alg_cubic_ssthresh(cwnd, beta, sce) };
        assert_eq!(cut(1000, 717, 0), 700);
        assert_eq!(cut(1000, 512, 0), 500);
        assert_eq!(
            cut(1000, 512, 5),
            875,
            "after recent SCE: 7/8 whatever beta"
        );
        assert_eq!(cut(2, 717, 0), 2);
    }

    #[test]
    fn cubic_fast_convergence_remembers_less_below_the_last_maximum() {
        let last = |cwnd, max, beta, fc| unsafe { emu_alg_cubic_last_max(cwnd, max, beta, fc) };
        // (1 + beta) / 2 of the window, below the previous maximum.
        assert_eq!(last(800, 1000, 717, 1), 800 * (1024 + 717) / 2048);
        assert_eq!(last(800, 1000, 512, 1), 600);
        assert_eq!(last(800, 1000, 717, 0), 800, "off: the window itself");
        assert_eq!(last(1200, 1000, 717, 1), 1200, "above it: the window");
    }

    #[test]
    fn cubic_sce_pull_keeps_the_window_and_moves_the_origin() {
        let (wmax, cwnd) = (1000u32, 700u32);
        let k0 = unsafe { emu_alg_cubic_k(wmax, cwnd, BIC) };
        for &(t, segs, sqrt) in &[
            (k0 / 4, 3u32, 30u32),
            (k0 / 2, 30, 30),
            (k0 + 2048, 10, 30),
            (k0 + 2048, 40, 30),
        ] {
            let (mut k, mut origin) = (k0, wmax);
            let before = unsafe { emu_alg_cubic_target(origin, k, t, BIC) };
            let adv = unsafe { emu_alg_cubic_sce_pull(t, &mut k, &mut origin, segs, sqrt, BIC) };
            let after = unsafe { emu_alg_cubic_target(origin, k, t - adv, BIC) };
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

    /// `struct emu_vegas_window`.
    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct VegasWindow {
        cwnd: u32,
        ssthresh: u32,
    }

    const VEGAS: (u32, u32, u32) = (2, 4, 1);

    /// One Vegas round of the kernel module, written from its formulas.
    fn vegas_reference(w: VegasWindow, acked: u32, base: u32, rtt: u32) -> VegasWindow {
        let (alpha, beta, gamma) = VEGAS;
        let cwnd = w.cwnd as f64;
        let diff = (cwnd * (rtt as f64 - base as f64) / base as f64).floor();
        let target = (cwnd * base as f64 / rtt as f64).floor();
        let (mut cwnd, mut ssthresh) = (w.cwnd, w.ssthresh);
        let slow_start = cwnd < ssthresh;
        if slow_start && diff > gamma as f64 {
            cwnd = cwnd.min(target as u32 + 1);
            ssthresh = ssthresh.min(cwnd);
        } else if slow_start {
            cwnd = (cwnd + acked).min(ssthresh);
        } else if diff > beta as f64 {
            cwnd -= 1;
            ssthresh = ssthresh.min(cwnd);
        } else if diff < alpha as f64 {
            cwnd += 1;
        }
        let cwnd = cwnd.clamp(2, 10_000);
        // tcp_current_ssthresh: half plus a quarter, each rounded down.
        VegasWindow {
            cwnd,
            ssthresh: ssthresh.max(cwnd / 2 + cwnd / 4),
        }
    }

    fn vegas_round(mut w: VegasWindow, acked: u32, base: u32, rtt: u32) -> VegasWindow {
        let (alpha, beta, gamma) = VEGAS;
        unsafe { emu_alg_vegas_round(&mut w, acked, base, rtt, alpha, beta, gamma, 10_000) };
        w
    }

    #[test]
    fn vegas_diff_is_the_queued_segments() {
        // 40 segments, 40 ms base, 44 ms now: 10% of the window is queued.
        assert_eq!(unsafe { emu_alg_vegas_diff(40, 40_000, 44_000) }, 4);
        assert_eq!(unsafe { emu_alg_vegas_target_cwnd(40, 40_000, 44_000) }, 36);
        for &(cwnd, base, rtt) in &[(10u32, 1000u32, 1000u32), (100, 80_001, 95_000), (7, 3, 9)] {
            let want = (cwnd as f64 * (rtt - base) as f64 / base as f64).floor() as u32;
            assert_eq!(unsafe { emu_alg_vegas_diff(cwnd, base, rtt) }, want);
            let want = (cwnd as f64 * base as f64 / rtt as f64).floor() as u32;
            assert_eq!(unsafe { emu_alg_vegas_target_cwnd(cwnd, base, rtt) }, want);
        }
        // A sample is never 0, so neither RTT divides by zero.
        assert_eq!(unsafe { emu_alg_vegas_sample(0) }, 1);
    }

    #[test]
    fn vegas_slow_start_ends_at_the_ack_rate_when_a_segment_queues() {
        let open = VegasWindow {
            cwnd: 40,
            ssthresh: u32::MAX / 2,
        };
        // No queue: Reno's slow start, by the segments acknowledged.
        let w = vegas_round(open, 20, 40_000, 40_000);
        assert_eq!(w.cwnd, 60);
        // diff 4 > gamma: the window the ACK rate supports, plus one.
        let w = vegas_round(open, 20, 40_000, 44_000);
        assert_eq!(
            w,
            VegasWindow {
                cwnd: 37,
                ssthresh: 37
            }
        );
        assert_eq!(w, vegas_reference(open, 20, 40_000, 44_000));
        // diff exactly gamma: still slow start.
        assert_eq!(vegas_round(open, 20, 40_000, 41_000).cwnd, 60);
    }

    #[test]
    fn vegas_holds_between_alpha_and_beta_segments_queued() {
        let base = 40_000;
        let steady = VegasWindow {
            cwnd: 100,
            ssthresh: 50,
        };
        assert_eq!(
            vegas_round(steady, 1, base, base).cwnd,
            101,
            "diff 0 < alpha"
        );
        assert_eq!(vegas_round(steady, 1, base, 41_200).cwnd, 100, "diff 3");
        let w = vegas_round(steady, 1, base, 42_000);
        assert_eq!(w.cwnd, 99, "diff 5 > beta");
        assert_eq!(w.ssthresh, 49 + 24, "half plus a quarter of the window");
        // Every queue depth, against the module's formulas.
        for rtt in (base..base * 2).step_by(97) {
            for w in [
                steady,
                VegasWindow {
                    cwnd: 3,
                    ssthresh: 2,
                },
                VegasWindow {
                    cwnd: 8,
                    ssthresh: 1000,
                },
            ] {
                assert_eq!(
                    vegas_round(w, 2, base, rtt),
                    vegas_reference(w, 2, base, rtt),
                    "rtt {rtt}"
                );
            }
        }
        // Never below two segments.
        let small = VegasWindow {
            cwnd: 2,
            ssthresh: 2,
        };
        assert_eq!(vegas_round(small, 1, base, base * 3).cwnd, 2);
    }

    /// Relentless's cut for an ACK that acknowledged `ce` marked
    /// segments, with the half segment it carried before.
    fn relentless(cwnd: u32, ce: u32, halves: &mut u32) -> u32 {
        unsafe { emu_alg_relentless_cut(cwnd, ce, halves) }
    }

    /// Half a segment per mark: one mark owes half a segment, the
    /// second takes a whole one off; an ACK for several takes their
    /// halves at once.
    #[test]
    fn relentless_takes_half_a_segment_per_marked_segment() {
        let mut halves = 0;
        assert_eq!(relentless(100, 1, &mut halves), 100);
        assert_eq!(halves, 1, "half a segment owed");
        assert_eq!(relentless(100, 1, &mut halves), 99);
        assert_eq!(halves, 0);
        assert_eq!(relentless(99, 4, &mut halves), 97, "an ACK for 4 marks");
        assert_eq!(relentless(97, 5, &mut halves), 95);
        assert_eq!(halves, 1, "2.5 segments: 2 off, half owed");
        assert_eq!(relentless(95, 0, &mut halves), 95, "no marks, no cut");
        assert_eq!(halves, 1);
    }

    /// A window whose every segment is marked, one ACK per segment or
    /// one per two (delayed ACKs), comes out halved, as DCTCP's at alpha
    /// = 1; a window of 10% marks loses 5%.
    #[test]
    fn relentless_halves_a_fully_marked_window() {
        for per_ack in [1, 2] {
            for (cwnd, marked, want) in [(100u32, 100u32, 50.0), (64, 64, 32.0), (200, 20, 190.0)] {
                let (mut w, mut halves) = (cwnd, 0);
                for _ in 0..marked / per_ack {
                    w = relentless(w, per_ack, &mut halves);
                }
                let got = w as f64 + halves as f64 / 2.0;
                assert_eq!(got, want, "{marked} of {cwnd} marked, {per_ack} per ACK");
                let f = marked as f64 / cwnd as f64;
                assert_eq!(got, cwnd as f64 * (1.0 - f / 2.0));
            }
        }
    }

    #[test]
    fn relentless_keeps_two_segments() {
        let mut halves = 0;
        assert_eq!(relentless(3, 10, &mut halves), 2);
        assert_eq!(relentless(2, 1_000_000, &mut halves), 2);
        assert_eq!(
            relentless(u32::MAX, u32::MAX, &mut 1),
            u32::MAX - (u32::MAX / 2 + 1)
        );
    }
}
