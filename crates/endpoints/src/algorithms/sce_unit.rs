//! Unit tests of the SCE window counter's unit (`emu_sce_unit`,
//! `emu_sce_acked_bytes` in `bpf/arith/sce.h`): the references (chromi/sce
//! `tcp_reno_sce.c` 07bbe597, `tcp_dctcp_sce.c` 9fae76b9) step their
//! counter, and count a duplicate ACK, in `icsk_ack.rcv_mss` bytes while
//! adding the bytes acknowledged; on a host that only sends, rcv_mss stays
//! at 536 while a data segment carries 1448.

unsafe extern "C" {
    fn emu_alg_sce_unit(rcv_mss: u32, mss_cache: u32, sending_mss: u32) -> u32;
    fn emu_alg_sce_acked_bytes(snd_una_moved: u32, window_update: u32, unit: u32) -> u32;
    fn emu_alg_window_steps(cnt: *mut i64, unit: u64) -> i64;
    fn emu_alg_reno_sce_reduction(sce_bytes: u64, sqrt_cwnd: u32) -> u64;
}

const RCV_MSS: u32 = 536;
const MSS: u32 = 1448;

/// The window's steps for `bytes` in the counter at `cwnd`, with the unit
/// the setting chooses (0: the reference's rcv_mss, 1: the sending MSS).
fn steps(bytes: i64, cwnd: u64, sending_mss: u32) -> (i64, i64) {
    let unit = unsafe { emu_alg_sce_unit(RCV_MSS, MSS, sending_mss) };
    let mut cnt = bytes;
    let n = unsafe { emu_alg_window_steps(&mut cnt, u64::from(unit) * cwnd) };
    (n, cnt)
}

#[test]
fn the_unit_is_the_received_segments_size_unless_set() {
    assert_eq!(unsafe { emu_alg_sce_unit(RCV_MSS, MSS, 0) }, RCV_MSS);
    assert_eq!(unsafe { emu_alg_sce_unit(RCV_MSS, MSS, 1) }, MSS);
    assert_eq!(unsafe { emu_alg_sce_unit(0, 0, 0) }, 1, "never zero");
}

#[test]
fn a_window_of_acks_grows_the_window_by_1448_over_536() {
    // One round trip at 20 segments acknowledges 20 * 1448 bytes: with the
    // reference's unit, 2.7 steps of 20 * 536; with the sending MSS, one.
    let window = 20 * i64::from(MSS);
    assert_eq!(steps(window, 20, 0), (2, window - 2 * 20 * 536));
    assert_eq!(steps(window, 20, 1), (1, 0));
}

#[test]
fn a_window_of_sce_costs_as_much_more() {
    // Reno-SCE at 20 segments (floor sqrt 4): a whole window acknowledged
    // with SCE takes 20 * 1448 * 4 / 2 bytes off the counter: 5.4 steps
    // of the reference's unit, 2 of the sending MSS.
    let cost = unsafe { emu_alg_reno_sce_reduction(20 * u64::from(MSS), 4) } as i64;
    assert_eq!(cost, 57_920);
    assert_eq!(steps(-cost, 20, 0).0, -5);
    assert_eq!(steps(-cost, 20, 1).0, -2);
}

#[test]
fn a_duplicate_ack_counts_one_unit_and_a_window_update_none() {
    let unit = unsafe { emu_alg_sce_unit(RCV_MSS, MSS, 0) };
    assert_eq!(unsafe { emu_alg_sce_acked_bytes(0, 0, unit) }, 536);
    assert_eq!(unsafe { emu_alg_sce_acked_bytes(0, 1, unit) }, 0);
    assert_eq!(unsafe { emu_alg_sce_acked_bytes(2896, 0, unit) }, 2896);
    assert_eq!(unsafe { emu_alg_sce_acked_bytes(2896, 1, unit) }, 2896);
}

unsafe extern "C" {
    fn emu_alg_sce_keeps_ect(payload: u32, syn: u32, seq: u32, snd_nxt: u32) -> u32;
}

#[test]
fn only_new_data_and_syns_keep_ect() {
    let keeps = |payload, syn, seq, snd_nxt| unsafe { emu_alg_sce_keeps_ect(payload, syn, seq, snd_nxt) } != 0;
    assert!(keeps(1448, 0, 5000, 5000), "new data");
    assert!(!keeps(1448, 0, 3552, 5000), "a retransmission");
    assert!(!keeps(0, 0, 5000, 5000), "a pure ACK");
    assert!(!keeps(0, 1, 0, 0), "a SYN or SYN-ACK");
    assert!(keeps(1448, 0, 10, u32::MAX - 100), "new data past the wrap");
    assert!(
        !keeps(1448, 0, u32::MAX - 2000, 10),
        "a retransmission across the wrap"
    );
}
