/* The SCE responses' arithmetic (cc/reno_sce.c, cc/dctcp_sce.c, and the SCE window counter of sce_window.h).
 * Part of algorithms.h, which gives the includer's types. */

/* The square root the SCE responses scale by: the largest s with s*s <
 * cwnd (what the reference maintains incrementally), at least 1. */
EMU_ALG_INLINE __u32 emu_sce_sqrt_cwnd(__u32 cwnd)
{
	__u32 s = cwnd > 1 ? emu_isqrt(cwnd - 1) : 1;

	return s ? s : 1;
}

/* Reno-SCE: the window-counter reduction, in bytes, for `sce_bytes`
 * acknowledged with SCE feedback: sce_bytes * sqrt(cwnd) / 2. The counter
 * loses one segment per cwnd * mss, so a whole window of SCE feedback
 * costs sqrt(cwnd) / 2 segments. */
EMU_ALG_INLINE __u64 emu_reno_sce_reduction(__u64 sce_bytes, __u32 sqrt_cwnd)
{
	return sce_bytes * sqrt_cwnd / 2;
}

/* The byte unit of the SCE senders' window counter (its step is unit *
 * cwnd, and a duplicate ACK counts as one unit): the references'
 * icsk_ack.rcv_mss, the size of the segments the host receives (536 on a
 * host that only sends, while a full data segment acknowledged adds 1448
 * bytes), or mss_cache, the sending MSS, where `sending_mss` is set. At
 * least 1. */
EMU_ALG_INLINE __u32 emu_sce_unit(__u32 rcv_mss, __u32 mss_cache, __u32 sending_mss)
{
	__u32 unit = sending_mss ? mss_cache : rcv_mss;

	return unit ? unit : 1;
}

/* The bytes an ACK acknowledged, for the window counter: those snd_una
 * moved over; a duplicate ACK counts as one unit, a pure window update
 * as none. */
EMU_ALG_INLINE __u32 emu_sce_acked_bytes(__u32 snd_una_moved, __u32 window_update, __u32 unit)
{
	if (snd_una_moved || window_update)
		return snd_una_moved;
	return unit;
}

/* Whole-segment steps held in a signed window counter of `unit` per
 * segment: returns +n (grow) or -n (shrink) and leaves the remainder in
 * *cnt, which ends strictly between -unit and unit. */
EMU_ALG_INLINE __s64 emu_window_steps(__s64 *cnt, __u64 unit)
{
	__u64 n;

	if (!unit)
		return 0;
	if (*cnt >= 0) {
		n = (__u64)*cnt / unit;
		*cnt -= (__s64)(n * unit);
		return (__s64)n;
	}
	n = (__u64)(-*cnt) / unit;
	*cnt += (__s64)(n * unit);
	return -(__s64)n;
}

/* ---- DCTCP-SCE -------------------------------------------------------------- */

/* The window-counter reduction, in bytes, for `sce_bytes` acknowledged with
 * SCE feedback: sce_bytes * cwnd / 2. The counter loses one segment per
 * cwnd * mss, so a whole window of SCE feedback costs cwnd / 2 segments and
 * a marked share F of a window costs F * cwnd / 2: DCTCP's response with
 * the marked share of each window in place of its moving average. */
EMU_ALG_INLINE __u64 emu_dctcp_sce_reduction(__u64 sce_bytes, __u32 cwnd)
{
	return sce_bytes * cwnd / 2;
}

/* The window after a CE round (cut 1/2^logdiv: 2 for a quarter, 3 for an
 * eighth after recent SCE feedback) or a loss (1, a half): at least one
 * segment less, at least 2. Reno-SCE uses it on RTO alone. */
EMU_ALG_INLINE __u32 emu_dctcp_sce_cut(__u32 cwnd, __u32 logdiv)
{
	__u32 cut = cwnd >> logdiv;

	if (!cut)
		cut = 1;
	return cwnd > cut + 2 ? cwnd - cut : 2;
}

/* ssthresh() and the ssthresh SCE feedback sets: never lower than it was,
 * at least half the window before the last reduction, at least 2. While
 * ssthresh is still infinite (slow start) it stays so: only CE or loss
 * ends slow start. */
EMU_ALG_INLINE __u32 emu_dctcp_sce_threshold(__u32 ssthresh, __u32 loss_cwnd)
{
	__u32 half = loss_cwnd >> 1;

	if (half < 2)
		half = 2;
	return ssthresh > half ? ssthresh : half;
}

/* ---- The SCE senders' packets on the wire ----------------------------------- */

/* Whether a segment of an SCE sender keeps the ECT its socket gives it.
 * The reference modules do not ask the kernel for ECN (no
 * TCP_CONG_NEEDS_ECN), so their kernel sends ECT only on new data (a
 * payload whose first byte is not below snd_nxt); a pure ACK, a FIN or RST
 * without data, a retransmission, a SYN and a SYN-ACK leave Not-ECT.
 * `seq` and `snd_nxt` are compared modulo 2^32. */
EMU_ALG_INLINE __u32 emu_sce_keeps_ect(__u32 payload, __u32 syn, __u32 seq, __u32 snd_nxt)
{
	return !syn && payload && seq - snd_nxt < 0x80000000U;
}
