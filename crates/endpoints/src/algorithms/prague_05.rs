//! Unit tests of TCP Prague 0.5's window rules (`bpf/arith/prague_05.h`,
//! exported by `bpf/host_prague_05.c`), each against the rule of the
//! reference module at L4STeam/linux e741f5ac, written again here: the
//! carry counter, slow start through a loss, the timeout, the CE
//! reduction, undo, growth while paced, pacing and the burst hook.

/// `struct emu_prague05_window`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Window {
    cnt: i64,
    cwnd: u32,
    ssthresh: u32,
    clamp: u32,
    pad: u32,
}

unsafe extern "C" {
    fn emu_alg_prague05_on_ack(w: *mut Window, acked: i64, may_grow: u32, ai: u64) -> u32;
    fn emu_alg_prague05_loss_cnt(cnt: i64, cwnd: u32) -> i64;
    fn emu_alg_prague05_cwr_cnt(cnt: i64, cwnd: u32, alpha: u64) -> i64;
    fn emu_alg_prague05_threshold(cwnd: u32, ssthresh: u32) -> u32;
    fn emu_alg_prague05_undo_cnt(cnt: i64, loss_cnt: i64) -> i64;
    fn emu_alg_prague05_pacing_rate(
        mtu: u32,
        cwnd: u32,
        in_flight: u32,
        ssthresh: u32,
        srtt8: u32,
    ) -> u64;
    fn emu_alg_prague05_may_grow(cwnd_limited: u32, internal_pacing: u32, queued: u32) -> u32;
    fn emu_alg_prague_max_tso_burst(rate: u64, mtu: u32, burst_shift: u32, max: u32) -> u32;
}

/// One segment in the carry's unit.
const ONE: i64 = 1 << 20;
/// The kernel's ssthresh before the first reduction.
const INFINITE: u32 = 0x7fff_ffff;

fn window(cwnd: u32, ssthresh: u32) -> Window {
    Window {
        cnt: 0,
        cwnd,
        ssthresh,
        clamp: 10_000,
        pad: 0,
    }
}

/// An ACK of `acked` unmarked segments that may grow the window, with the
/// unscaled increase (1/cwnd a segment).
fn ack(w: &mut Window, acked: i64) -> bool {
    unsafe { emu_alg_prague05_on_ack(w, acked, 1, ONE as u64) == 1 }
}

/// What a loss does (fast retransmit or the timeout's CA_EVENT_LOSS):
/// ssthresh() first, then the carry owes half the window.
fn lose(w: &mut Window) {
    w.ssthresh = unsafe { emu_alg_prague05_threshold(w.cwnd, w.ssthresh) };
    w.cnt = unsafe { emu_alg_prague05_loss_cnt(w.cnt, w.cwnd) };
}

#[test]
fn the_carry_moves_the_window_one_whole_segment_at_a_time() {
    // Congestion avoidance at 10 segments: each acknowledged segment adds
    // round(2^20 / 10) to the carry; the window grows only when a whole
    // segment has gathered, and what is over stays in the carry.
    let mut w = window(10, 10);
    let step = (ONE + 5) / 10;
    for i in 1..10 {
        assert!(!ack(&mut w, 1), "ACK {i}");
        assert_eq!((w.cwnd, w.cnt), (10, step * i), "ACK {i}");
    }
    assert!(ack(&mut w, 1));
    assert_eq!((w.cwnd, w.cnt), (11, 10 * step - ONE));
    // A carry owed downward takes one segment per ACK, and ssthresh with it.
    w.cnt = -3 * ONE;
    let mut seen = Vec::new();
    for _ in 0..4 {
        unsafe { emu_alg_prague05_on_ack(&mut w, 0, 1, ONE as u64) };
        seen.push((w.cwnd, w.ssthresh));
    }
    assert_eq!(seen, [(10, 10), (9, 9), (8, 8), (8, 8)]);
    // Never below two segments, and what is owed there is dropped.
    let mut w = window(3, 3);
    w.cnt = -5 * ONE;
    unsafe { emu_alg_prague05_on_ack(&mut w, 0, 1, ONE as u64) };
    assert_eq!((w.cwnd, w.cnt), (2, -4 * ONE));
    unsafe { emu_alg_prague05_on_ack(&mut w, 0, 1, ONE as u64) };
    assert_eq!((w.cwnd, w.cnt, w.ssthresh), (2, 0, 2));
}

#[test]
fn a_loss_in_slow_start_halves_nothing() {
    // ssthresh() returns max(cwnd, ssthresh): slow start goes on, and an
    // ACK that slow start uses up returns before the carry is looked at.
    let mut w = window(20, INFINITE);
    lose(&mut w);
    assert_eq!(w.ssthresh, INFINITE);
    assert_eq!(w.cnt, -10 * ONE, "half the window owed");
    for _ in 0..10 {
        assert!(ack(&mut w, 2));
    }
    assert_eq!((w.cwnd, w.cnt, w.ssthresh), (40, -10 * ONE, INFINITE));
    // Once growth stops (not the window's limit, not paced), the debt is
    // paid a segment per ACK, and that ends slow start.
    unsafe { emu_alg_prague05_on_ack(&mut w, 2, 0, ONE as u64) };
    assert_eq!((w.cwnd, w.ssthresh, w.cnt), (39, 39, -9 * ONE));
}

#[test]
fn after_a_timeout_it_slow_starts_back_to_the_window_it_had() {
    // In congestion avoidance at 40 with ssthresh 30: the timeout keeps
    // ssthresh at 40, the kernel sets the window to one segment, and slow
    // start climbs back to 40 before the owed half is taken.
    let mut w = window(40, 30);
    lose(&mut w);
    assert_eq!(w.ssthresh, 40);
    w.cwnd = 1;
    for i in 2..=40 {
        assert!(ack(&mut w, 1));
        assert_eq!(w.cwnd, i);
    }
    assert_eq!(w.cnt, -20 * ONE);
    assert!(ack(&mut w, 1));
    assert_eq!((w.cwnd, w.ssthresh), (39, 39));
}

#[test]
fn a_ce_reduction_owes_alpha_half_the_integer_window() {
    let alpha_one = 1u64 << 20;
    // alpha 1: half the window; alpha 1/4 of 100: 12.5 segments.
    assert_eq!(
        unsafe { emu_alg_prague05_cwr_cnt(0, 100, alpha_one) },
        -50 * ONE
    );
    assert_eq!(
        unsafe { emu_alg_prague05_cwr_cnt(7, 100, alpha_one / 4) },
        7 - (25 * ONE / 2)
    );
    // Rounded to nearest: 3 * 2^-20 / 2 of a segment is 1.5 units, taken as 2.
    assert_eq!(unsafe { emu_alg_prague05_cwr_cnt(0, 1, 3) }, -2);
}

#[test]
fn undo_counts_the_progress_since_the_loss_twice() {
    let before = 3 * ONE / 4;
    let after_loss = unsafe { emu_alg_prague05_loss_cnt(before, 10) };
    assert_eq!(after_loss, before - 5 * ONE - before / 2);
    let later = after_loss + 1000;
    assert_eq!(
        unsafe { emu_alg_prague05_undo_cnt(later, before) },
        later + (later - before)
    );
}

#[test]
fn it_grows_while_pacing_holds_queued_data_back() {
    let may = |limited, paced, queued| unsafe { emu_alg_prague05_may_grow(limited, paced, queued) };
    assert_eq!(may(1, 0, 0), 1);
    assert_eq!(may(0, 1, 1), 1, "paced with data queued");
    assert_eq!(
        may(0, 1, 0),
        0,
        "nothing queued: the application is the limit"
    );
    assert_eq!(may(0, 0, 1), 0, "not paced by the kernel");
    let mut w = window(10, 10);
    unsafe { emu_alg_prague05_on_ack(&mut w, 10, may(0, 1, 1), ONE as u64) };
    assert_eq!((w.cwnd, w.cnt), (11, 0));
}

#[test]
fn pacing_and_the_burst_hook_follow_the_packets_in_flight() {
    // 1500-byte packets over 20 ms (srtt8 = 160000): 75 kB/s a packet.
    let rate = |cwnd, in_flight, ssthresh| unsafe {
        emu_alg_prague05_pacing_rate(1500, cwnd, in_flight, ssthresh, 160_000)
    };
    assert_eq!(rate(100, 200, 100), 75_000 * 200, "max(cwnd, in flight)");
    assert_eq!(rate(100, 50, 100), 75_000 * 100);
    assert_eq!(rate(10, 0, INFINITE), 150_000 * 10, "doubled in slow start");
    assert_eq!(rate(10, 0, 22), 150_000 * 10, "while cwnd < ssthresh / 2");
    assert_eq!(rate(10, 0, 20), 75_000 * 10);
    // Truncated per packet before the multiplication: 8e6 * 1500 / 7 us.
    assert_eq!(
        unsafe { emu_alg_prague05_pacing_rate(1500, 3, 0, 3, 7) },
        (8_000_000u64 * 1500 / 7) * 3
    );
    // The hook: max(1, rate * 2^-burst_shift / MTU), here 10000 packets/s
    // over 2^12 s^-1.
    let burst = |r| unsafe { emu_alg_prague_max_tso_burst(r, 1500, 12, 0) };
    assert_eq!(burst(rate(100, 200, 100)), 2);
    assert_eq!(burst(rate(100, 50, 100)), 1);
    assert_eq!(burst(0), 1);
}
