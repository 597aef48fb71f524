//! YeAH-TCP against its rules: Q = cwnd (RTT - base) / RTT segments
//! queued; slow when Q > 80 or the delay over base is above base / 8, and
//! then Q comes off the window at once (at most half); a loss takes off Q
//! (between 1/8 and 1/2 of the window), or half after 16 slow rounds.

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Yeah {
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
}

#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    cwnd: u32,
    ssthresh: u32,
}

unsafe extern "C" {
    fn emu_alg_yeah_queue(cwnd: u32, rtt: u32, base_rtt: u32) -> u32;
    fn emu_alg_yeah_round(y: *mut Yeah, w: *mut Window, rtt: u32, base_rtt: u32);
    fn emu_alg_yeah_scalable(cwnd: *mut u32, cnt: *mut u32, pkts: u32, clamp: u32);
    fn emu_alg_yeah_after_loss(y: *mut Yeah, cwnd: u32) -> u32;
}

fn fresh() -> Yeah {
    Yeah {
        reno_count: 2,
        ..Default::default()
    }
}

#[test]
fn the_queue_is_the_windows_share_of_the_delay() {
    for (cwnd, rtt, base) in [
        (1000u32, 50_000u32, 40_000u32),
        (100, 40_000, 40_000),
        (300, 90_000, 30_000),
    ] {
        let q = unsafe { emu_alg_yeah_queue(cwnd, rtt, base) };
        let want = f64::from(cwnd) * f64::from(rtt - base) / f64::from(rtt);
        assert!(
            (f64::from(q) - want).abs() < 1.0,
            "{cwnd} {rtt} {base}: {q}"
        );
    }
}

#[test]
fn a_long_queue_is_given_back_at_once() {
    let mut y = fresh();
    let mut w = Window {
        cwnd: 1000,
        ssthresh: 5000,
    };
    // Q = 200 > 80: slow, and 200 segments off.
    unsafe { emu_alg_yeah_round(&mut y, &mut w, 50_000, 40_000) };
    assert_eq!(
        w,
        Window {
            cwnd: 800,
            ssthresh: 800
        }
    );
    assert_eq!((y.last_q, y.doing_reno_now, y.reno_count), (200, 1, 400));
    // Small queue but delay above base / 8: slow, the window kept.
    let mut w = Window {
        cwnd: 100,
        ssthresh: 5000,
    };
    let mut y = fresh();
    unsafe { emu_alg_yeah_round(&mut y, &mut w, 46_000, 40_000) };
    assert_eq!(
        w,
        Window {
            cwnd: 100,
            ssthresh: 5000
        }
    );
    assert_eq!(y.doing_reno_now, 1);
    // Neither: fast.
    unsafe { emu_alg_yeah_round(&mut y, &mut w, 41_000, 40_000) };
    assert_eq!((y.doing_reno_now, y.fast_count), (0, 1));
}

#[test]
fn decongestion_takes_at_most_half_and_stops_at_reno_count() {
    let mut y = fresh();
    let mut w = Window {
        cwnd: 1000,
        ssthresh: 5000,
    };
    unsafe { emu_alg_yeah_round(&mut y, &mut w, 400_000, 40_000) };
    assert_eq!(w.cwnd, 500, "Q = 900: half");
    let mut y = Yeah {
        reno_count: 950,
        ..fresh()
    };
    let mut w = Window {
        cwnd: 1000,
        ssthresh: 5000,
    };
    unsafe { emu_alg_yeah_round(&mut y, &mut w, 50_000, 40_000) };
    assert_eq!(w.cwnd, 950);
}

#[test]
fn a_loss_takes_the_queue_off_between_an_eighth_and_half() {
    let mut y = Yeah {
        last_q: 300,
        ..fresh()
    };
    assert_eq!(unsafe { emu_alg_yeah_after_loss(&mut y, 1000) }, 700);
    let mut y = Yeah {
        last_q: 10,
        ..fresh()
    };
    assert_eq!(
        unsafe { emu_alg_yeah_after_loss(&mut y, 1000) },
        875,
        "at least 1/8"
    );
    let mut y = Yeah {
        last_q: 200,
        ..fresh()
    };
    assert_eq!(
        unsafe { emu_alg_yeah_after_loss(&mut y, 1000) },
        800,
        "the queue, over 1/8"
    );
    let mut y = Yeah {
        last_q: 900,
        ..fresh()
    };
    assert_eq!(
        unsafe { emu_alg_yeah_after_loss(&mut y, 1000) },
        500,
        "at most half"
    );
    let mut y = Yeah {
        last_q: 10,
        doing_reno_now: 16,
        reno_count: 40,
        fast_count: 3,
    };
    assert_eq!(
        unsafe { emu_alg_yeah_after_loss(&mut y, 1000) },
        500,
        "slow 16 rounds: half"
    );
    assert_eq!((y.reno_count, y.fast_count), (20, 0));
}

#[test]
fn fast_mode_grows_as_scalable_tcp() {
    let (mut cwnd, mut cnt) = (1000u32, 0u32);
    // A round trip of ACKs of one segment each: min(cwnd, 100) + 1 ACKs a
    // segment.
    for _ in 0..1000 {
        unsafe { emu_alg_yeah_scalable(&mut cwnd, &mut cnt, 1, u32::MAX / 128) };
    }
    assert_eq!(cwnd, 1009);
    let (mut cwnd, mut cnt) = (50u32, 0u32);
    for _ in 0..51 {
        unsafe { emu_alg_yeah_scalable(&mut cwnd, &mut cnt, 1, u32::MAX / 128) };
    }
    assert_eq!(cwnd, 51, "a small window: one a round trip");
}
