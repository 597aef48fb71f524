//! TCP-NV against its rules: the rate's slope over the least RTT predicts
//! the window the rate needs (cwnd_by_slope = rate * minRTT / mss); above
//! it plus nv_pad the window loses 30% of the excess, well below it grows;
//! a loss keeps 80%; after timeouts growth slows to a segment every 2^k
//! round trips and recovers after nv_cwnd_growth_rate_neg good rounds.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Nv {
    min_rtt_reset: u32,
    growth_factor: i32,
    allow_cwnd_growth: u32,
    reset: u32,
    catchup: u32,
    eval_call_cnt: u32,
    min_cwnd: u32,
    rtt_cnt: u32,
    last_rtt: u32,
    min_rtt: u32,
    min_rtt_new: u32,
    rtt_max_rate: u32,
    rtt_start_seq: u32,
    last_snd_una: u32,
    no_cong_cnt: u32,
    pad: u32,
    reset_period: u32,
    min_cwnd_param: u32,
}

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Window {
    cwnd: u32,
    ssthresh: u32,
    snd_una: u32,
    snd_nxt: u32,
    mss: u32,
}

unsafe extern "C" {
    fn emu_alg_nv_start(ca: *mut Nv, snd_una: u32, now_ms: u32);
    fn emu_alg_nv_ai_cnt(ca: *const Nv, cwnd: u32) -> u32;
    fn emu_alg_nv_after_loss(cwnd: u32) -> u32;
    fn emu_alg_nv_state(ca: *mut Nv, state: u32, snd_una: u32);
    fn emu_alg_nv_sample(ca: *mut Nv, rtt_us: u32, in_flight: u32, now_ms: u32, rand: u32);
    fn emu_alg_nv_round(ca: *mut Nv, w: *mut Window, bytes_acked: u32);
}

const MSS: u32 = 1000;
const LOSS: u32 = 4;

fn nv() -> Nv {
    let mut ca = Nv {
        pad: 10,
        reset_period: 5,
        min_cwnd_param: 2,
        ..Default::default()
    };
    unsafe { emu_alg_nv_start(&mut ca, 0, 0) };
    ca
}

/// `n` samples at `rtt_us` with `in_flight` bytes, 1 ms apart from `t`.
fn samples(ca: &mut Nv, n: u32, rtt_us: u32, in_flight: u32, t: u32) {
    for i in 0..n {
        unsafe { emu_alg_nv_sample(ca, rtt_us, in_flight, t + i, 0) };
    }
}

#[test]
fn growth_is_renos_and_slows_after_timeouts() {
    let mut ca = nv();
    assert_eq!(
        unsafe { emu_alg_nv_ai_cnt(&ca, 100) },
        100,
        "a segment a round trip"
    );
    assert_eq!(
        unsafe { emu_alg_nv_ai_cnt(&ca, 2) },
        4,
        "at least 4 ACKs a segment"
    );
    unsafe { emu_alg_nv_state(&mut ca, LOSS, 0) };
    assert_eq!(ca.growth_factor, -1);
    assert_eq!(
        unsafe { emu_alg_nv_ai_cnt(&ca, 100) },
        200,
        "a segment every 2 round trips"
    );
    for _ in 0..20 {
        unsafe { emu_alg_nv_state(&mut ca, LOSS, 0) };
    }
    assert_eq!(ca.growth_factor, -8, "at most 2^8 round trips a segment");
    assert_eq!((ca.reset, ca.allow_cwnd_growth), (1, 0));
    assert_eq!(
        unsafe { emu_alg_nv_after_loss(1000) },
        799,
        "80% (819/1024)"
    );
    assert_eq!(unsafe { emu_alg_nv_after_loss(2) }, 2);
}

#[test]
fn the_rtt_is_averaged_and_the_rate_is_in_flight_over_it() {
    let mut ca = nv();
    samples(&mut ca, 1, 20_000, 100_000, 10);
    assert_eq!(
        (ca.last_rtt, ca.min_rtt),
        (20_000, 20_000),
        "the first: min 2 rtt, then itself"
    );
    samples(&mut ca, 1, 30_000, 100_000, 11);
    assert_eq!(ca.last_rtt, 25_000, "half old, half new");
    // 100 kB over 20 ms is 40 Mbit/s: 400000 in 100 bit/s.
    assert_eq!(ca.rtt_max_rate, 400_000);
    assert_eq!(ca.eval_call_cnt, 2);
}

#[test]
fn the_least_rtt_is_renewed_every_reset_period() {
    let mut ca = nv();
    samples(&mut ca, 3, 20_000, 100_000, 10);
    samples(&mut ca, 1, 40_000, 100_000, 1999);
    assert_eq!(ca.min_rtt, 20_000);
    // Two seconds after the start the least since then replaces it, and
    // the next renewal is 3/4 to 5/4 of 5 s away (rand 0: 3/4).
    unsafe { emu_alg_nv_sample(&mut ca, 40_000, 100_000, 2000, 0) };
    assert_eq!(ca.min_rtt_reset, 2000 + 3750);
    assert_eq!(ca.min_rtt_new, u32::MAX);
}

/// A congestion-avoidance state at a round's end: `rate` in 100 bit/s,
/// the least RTT 20 ms, `calls` samples and `rounds` round trips.
fn at_round(rate: u32, calls: u32, rounds: u32) -> Nv {
    Nv {
        rtt_max_rate: rate,
        min_rtt: 20_000,
        eval_call_cnt: calls,
        rtt_cnt: rounds,
        ..nv()
    }
}

#[test]
fn above_the_predicted_window_it_gives_back_30_percent_of_the_excess() {
    // 40 Mbit/s over 20 ms is 100 segments of 1000 bytes; max_win 110.
    let mut ca = at_round(400_000, 60, 2);
    let mut w = Window {
        cwnd: 150,
        ssthresh: 1000,
        snd_una: 1,
        snd_nxt: 9,
        mss: MSS,
    };
    unsafe { emu_alg_nv_round(&mut ca, &mut w, 50_000) };
    let excess = 40.0;
    assert_eq!(w.cwnd, 150 - (excess * 38.0 / 128.0f64).floor() as u32);
    assert_eq!(w.ssthresh, 110);
    assert_eq!(
        (ca.allow_cwnd_growth, ca.eval_call_cnt, ca.rtt_cnt),
        (0, 0, 0)
    );
    // Within 2 of it: down to it.
    let mut ca = at_round(400_000, 60, 2);
    let mut w = Window { cwnd: 112, ..w };
    unsafe { emu_alg_nv_round(&mut ca, &mut w, 50_000) };
    assert_eq!(w.cwnd, 110);
}

#[test]
fn decisions_wait_for_enough_rounds_and_samples() {
    let w = Window {
        cwnd: 150,
        ssthresh: 1000,
        snd_una: 1,
        snd_nxt: 9,
        mss: MSS,
    };
    for (calls, rounds, ssthresh) in [(60, 0, 1000), (59, 2, 1000), (29, 2, 0x7fff_ffff)] {
        let mut ca = at_round(400_000, calls, rounds);
        let mut after = Window { ssthresh, ..w };
        unsafe { emu_alg_nv_round(&mut ca, &mut after, 50_000) };
        assert_eq!(
            after.cwnd, 150,
            "{calls} samples, {rounds} rounds: no decision"
        );
    }
    // Well below the prediction: growth allowed, after 20 samples.
    let mut ca = at_round(400_000, 20, 2);
    ca.allow_cwnd_growth = 0;
    let mut below = Window { cwnd: 100, ..w };
    unsafe { emu_alg_nv_round(&mut ca, &mut below, 50_000) };
    assert_eq!((ca.allow_cwnd_growth, ca.no_cong_cnt), (1, 1));
}

#[test]
fn a_round_of_one_sample_raises_the_least_window_for_decisions() {
    let mut ca = at_round(400_000, 1, 0);
    let mut w = Window {
        cwnd: 150,
        ssthresh: 1000,
        snd_una: 1,
        snd_nxt: 9000,
        mss: MSS,
    };
    unsafe { emu_alg_nv_round(&mut ca, &mut w, 3 * MSS) };
    assert_eq!(ca.min_cwnd, 6);
    assert_eq!(ca.rtt_start_seq, 9000 + 6 * MSS);
    assert_eq!(w.cwnd, 150, "no decision that round");
}
