//! Unit tests of DCTCP's two versions (`bpf/arith/dctcp.h`): the SCE
//! tree's module of 2019 (chromi/sce c54f3c5a `net/ipv4/tcp_dctcp.c`, as
//! Linux before 5.1) takes alpha's marked share from the bytes of ACKs
//! flagged ECE, and cuts by alpha on a fast retransmit; Linux 5.1 and later
//! count CE-marked segments delivered and halve on any loss.

unsafe extern "C" {
    fn emu_alg_dctcp_count_bytes(ecn: *mut u32, total: *mut u32, acked: u32, ece: u32);
    fn emu_alg_dctcp_recovery_ssthresh(ssthresh: u32, cwnd: u32, version: u32) -> u32;
    fn emu_alg_dctcp_alpha(alpha: u32, ce: u32, delivered: u32, shift_g: u32) -> u32;
    fn emu_alg_dctcp_ssthresh(cwnd: u32, alpha: u32) -> u32;
    fn emu_alg_sce_acked_bytes(snd_una_moved: u32, window_update: u32, unit: u32) -> u32;
}

const LINUX: u32 = 0;
const SCE_2019: u32 = 1;
const RCV_MSS: u32 = 536;

/// One round of ACKs, each (bytes snd_una moved, window update, ECE):
/// the bytes flagged ECE and all bytes, as the 2019 module counts them.
fn round(acks: &[(u32, bool, bool)]) -> (u32, u32) {
    let (mut ecn, mut total) = (0, 0);
    for &(moved, update, ece) in acks {
        let acked = unsafe { emu_alg_sce_acked_bytes(moved, u32::from(update), RCV_MSS) };
        unsafe { emu_alg_dctcp_count_bytes(&mut ecn, &mut total, acked, u32::from(ece)) };
    }
    (ecn, total)
}

#[test]
fn the_marked_share_is_of_bytes_under_ece() {
    // Two full ACKs of 2896 bytes, one with ECE; a small one of 100 with
    // ECE; a duplicate ACK (536) with ECE; a window update (none).
    let (ecn, total) = round(&[
        (2896, false, false),
        (2896, false, true),
        (100, false, true),
        (0, false, true),
        (0, true, true),
    ]);
    assert_eq!((ecn, total), (2896 + 100 + 536, 2896 * 2 + 100 + 536));
    // alpha 0 takes g times the share: 3532 / 6428 of 1024, over 16.
    let alpha = unsafe { emu_alg_dctcp_alpha(0, ecn, total, 4) };
    let want = (f64::from(ecn) / f64::from(total) * 1024.0 / 16.0).floor() as u32;
    assert_eq!(alpha, want);
    assert_eq!(alpha, 35);
}

#[test]
fn a_round_of_all_ece_bytes_converges_alpha_to_one() {
    let (ecn, total) = round(&[(1448, false, true); 10]);
    let mut alpha = 0;
    for _ in 0..200 {
        alpha = unsafe { emu_alg_dctcp_alpha(alpha, ecn, total, 4) };
    }
    assert!(alpha >= 1024 - 16, "alpha {alpha}");
}

#[test]
fn a_fast_retransmit_cuts_by_alpha_in_2019_and_halves_later() {
    // ssthresh() at 100 segments with alpha 1/4: 100 - 100 * 256 / 2048.
    let by_alpha = unsafe { emu_alg_dctcp_ssthresh(100, 256) };
    assert_eq!(by_alpha, 88);
    let recovery = |version| unsafe { emu_alg_dctcp_recovery_ssthresh(by_alpha, 100, version) };
    assert_eq!(recovery(SCE_2019), 88);
    assert_eq!(recovery(LINUX), 50);
    assert_eq!(unsafe { emu_alg_dctcp_recovery_ssthresh(2, 3, LINUX) }, 2);
}
