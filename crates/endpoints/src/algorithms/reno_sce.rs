//! Unit tests of Reno-SCE's own rules (`bpf/arith/reno_sce.h`) against
//! chromi/sce 07bbe597's `net/ipv4/tcp_reno_sce.c`: its `ssthresh()` is
//! half the window it last recorded; an ACK with ECE cuts the counter by a
//! quarter (an eighth after recent SCE) of the window per window of such
//! ACKs, beside the kernel's CWR; its sqrt(cwnd) term starts at 1 and moves
//! only with the counter's one-segment steps.

unsafe extern "C" {
    fn emu_alg_reno_sce_threshold(loss_cwnd: u32) -> u32;
    fn emu_alg_reno_sce_marked(
        cnt: *mut i64,
        loss_cwnd: *mut u32,
        recent_sce: *mut u32,
        cwnd: u32,
        acked: u32,
        sce: u32,
        ece: u32,
        sqrt_cwnd: u32,
    ) -> u32;
    fn emu_alg_reno_sce_sqrt_stepped(sqrt_cwnd: u32, from: u32, to: u32) -> u32;
    fn emu_alg_reno_sce_sqrt_after_loss(sqrt_cwnd: u32, cwnd: u32) -> u32;
    fn emu_alg_window_steps(cnt: *mut i64, unit: u64) -> i64;
}

const MSS: u32 = 1448;

/// The counter and the records one ACK's marks touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marks {
    cnt: i64,
    loss_cwnd: u32,
    recent_sce: u32,
    answered: bool,
}

/// One ACK of `acked` bytes, `sce` of them with SCE feedback, with ECE or
/// not, at `cwnd` and `sqrt_cwnd`, from `start`.
fn ack(start: Marks, cwnd: u32, acked: u32, sce: u32, ece: bool, sqrt_cwnd: u32) -> Marks {
    let mut m = start;
    let answered = unsafe {
        emu_alg_reno_sce_marked(
            &mut m.cnt,
            &mut m.loss_cwnd,
            &mut m.recent_sce,
            cwnd,
            acked,
            sce,
            u32::from(ece),
            sqrt_cwnd,
        )
    };
    m.answered = answered != 0;
    m
}

const CLEAR: Marks = Marks {
    cnt: 0,
    loss_cwnd: 0,
    recent_sce: 0,
    answered: false,
};

/// The reference's term, one segment at a time: up while its square is
/// below the grown window, down while its square is at least the shrunk
/// one.
fn stepped(mut sqrt: u32, from: u32, to: u32) -> u32 {
    let mut cwnd = from;
    while cwnd < to {
        cwnd += 1;
        if sqrt * sqrt < cwnd {
            sqrt += 1;
        }
    }
    while cwnd > to {
        cwnd -= 1;
        if sqrt * sqrt >= cwnd {
            sqrt -= 1;
        }
    }
    sqrt
}

#[test]
fn ssthresh_is_half_the_recorded_window_at_least_two() {
    let threshold = |loss| unsafe { emu_alg_reno_sce_threshold(loss) };
    assert_eq!(threshold(40), 20);
    assert_eq!(threshold(41), 20);
    assert_eq!(threshold(5), 2);
    assert_eq!(threshold(0), 2, "a loss before any record leaves 2");
}

#[test]
fn an_ece_ack_records_the_window_so_cwr_aims_at_half_of_it() {
    let m = ack(CLEAR, 40, MSS, 0, true, 6);
    assert!(m.answered);
    assert_eq!(m.loss_cwnd, 40);
    assert_eq!(unsafe { emu_alg_reno_sce_threshold(m.loss_cwnd) }, 20);
}

/// The window's steps after a whole window of `cwnd` ACKs of one segment,
/// each with ECE, counted in segments of the sending MSS.
fn window_of_ce(cwnd: u32, recent_sce: u32) -> i64 {
    let mut m = Marks {
        recent_sce,
        ..CLEAR
    };
    for _ in 0..cwnd {
        m = ack(m, cwnd, MSS, 0, true, 6);
    }
    let mut cnt = m.cnt;
    unsafe { emu_alg_window_steps(&mut cnt, u64::from(MSS) * u64::from(cwnd)) }
}

#[test]
fn a_window_of_ce_cuts_a_quarter_through_the_counter_or_an_eighth_after_sce() {
    assert_eq!(window_of_ce(40, 0), -10);
    assert_eq!(window_of_ce(40, 1_000), -5);
    assert_eq!(window_of_ce(100, 0), -25);
}

#[test]
fn sce_feedback_wins_over_ece_on_one_ack() {
    let m = ack(CLEAR, 40, 2 * MSS, 2 * MSS, true, 6);
    assert!(m.answered);
    assert_eq!(m.cnt, -i64::from(2 * MSS * 6 / 2));
    assert_eq!(m.recent_sce, 41);
    assert_eq!(m.loss_cwnd, 40);
}

#[test]
fn an_unmarked_ack_is_left_to_grow() {
    let start = Marks {
        cnt: 7,
        loss_cwnd: 30,
        recent_sce: 3,
        answered: false,
    };
    assert_eq!(ack(start, 40, MSS, 0, false, 6), start);
}

#[test]
fn the_sqrt_term_moves_as_the_references_steps() {
    for sqrt in 1..=40u32 {
        for from in 2..=200u32 {
            for to in [
                2,
                from / 2,
                from.saturating_sub(7),
                from,
                from + 1,
                from + 9,
                2 * from,
                400,
            ] {
                let to = to.max(2);
                assert_eq!(
                    unsafe { emu_alg_reno_sce_sqrt_stepped(sqrt, from, to) },
                    stepped(sqrt, from, to),
                    "sqrt {sqrt}, window {from} to {to}"
                );
            }
        }
    }
}

#[test]
fn the_sqrt_term_lags_after_slow_start() {
    // Slow start took the window to 100 with the term still at 1: each
    // step of growth adds one, until its square reaches the window.
    assert_eq!(unsafe { emu_alg_reno_sce_sqrt_stepped(1, 100, 101) }, 2);
    assert_eq!(unsafe { emu_alg_reno_sce_sqrt_stepped(1, 100, 105) }, 6);
    assert_eq!(unsafe { emu_alg_reno_sce_sqrt_stepped(1, 100, 120) }, 11);
    // Shrinking steps leave a lagging term alone.
    assert_eq!(unsafe { emu_alg_reno_sce_sqrt_stepped(1, 100, 90) }, 1);
}

#[test]
fn an_rto_brings_the_term_below_the_root_of_the_cut_window() {
    let after = |sqrt, cwnd| unsafe { emu_alg_reno_sce_sqrt_after_loss(sqrt, cwnd) };
    assert_eq!(after(10, 50), 7);
    assert_eq!(after(10, 49), 6);
    assert_eq!(after(3, 50), 3, "a lagging term stays");
    assert_eq!(after(1, 2), 1);
}
