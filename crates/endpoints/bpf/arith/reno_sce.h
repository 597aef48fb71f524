/* Reno-SCE's own rules (cc/reno_sce.c), as chromi/sce 07bbe597's
 * net/ipv4/tcp_reno_sce.c has them, over the SCE window counter (sce.h).
 * Part of algorithms.h, which gives the includer's types. */

/* ssthresh(), whenever the kernel asks (CWR on ECE, fast retransmit, RTO)
 * and after each marked ACK: half the window the module last recorded
 * (the window at the last mark, or the largest since it grew), at least
 * 2. Before any mark or growth after slow start that record is 0, so a
 * loss in the first slow start leaves 2. */
EMU_ALG_INLINE __u32 emu_reno_sce_threshold(__u32 loss_cwnd)
{
	__u32 half = loss_cwnd >> 1;

	return half > 2 ? half : 2;
}

/* The counter's cut, in bytes, for `acked` bytes acknowledged with ECE at
 * `cwnd`: acked * cwnd / 4, or / 8 while SCE feedback is recent, so a
 * whole window of CE costs a quarter (an eighth) of it, on top of the
 * kernel's CWR towards ssthresh. */
EMU_ALG_INLINE __u64 emu_reno_sce_ce_reduction(__u64 acked, __u32 cwnd, __u32 recent_sce)
{
	return acked * cwnd / (recent_sce ? 8 : 4);
}

/* One ACK's answer to its marks: SCE feedback (which wins over ECE on the
 * same ACK) takes sce * sqrt_cwnd / 2 off the counter and makes SCE
 * recent for cwnd + 1 ACKs; ECE alone takes emu_reno_sce_ce_reduction.
 * Either records cwnd in *loss_cwnd (the caller then sets ssthresh to
 * emu_reno_sce_threshold) and returns 1; an unmarked ACK returns 0 and
 * may grow the counter instead. */
EMU_ALG_INLINE __u32 emu_reno_sce_marked(__s64 *cnt, __u32 *loss_cwnd, __u32 *recent_sce,
					 __u32 cwnd, __u32 acked, __u32 sce, __u32 ece,
					 __u32 sqrt_cwnd)
{
	if (sce) {
		*cnt -= (__s64)emu_reno_sce_reduction(sce, sqrt_cwnd);
		*recent_sce = cwnd + 1;
	} else if (ece) {
		*cnt -= (__s64)emu_reno_sce_ce_reduction(acked, cwnd, *recent_sce);
	} else {
		return 0;
	}
	*loss_cwnd = cwnd;
	return 1;
}

/* The smallest s with s * s >= cwnd. */
EMU_ALG_INLINE __u32 emu_ceil_sqrt(__u32 cwnd)
{
	return cwnd > 1 ? emu_isqrt(cwnd - 1) + 1 : cwnd;
}

/* The module's sqrt(cwnd) term after the counter moved the window from
 * `from` to `to`. It is kept, not computed: it starts at 1, and each step
 * of one segment moves it by at most one, up while its square is below the
 * grown window, down while its square is at least the shrunk one. So it
 * lags wherever the window moved otherwise (slow start, the kernel's CWR
 * and recovery) and catches up one step at a time. Closed form of those
 * steps: cost a square root, not a loop. */
EMU_ALG_INLINE __u32 emu_reno_sce_sqrt_stepped(__u32 sqrt_cwnd, __u32 from, __u32 to)
{
	__u32 target;

	if (to > from) {
		/* Up by one a step while below ceil(sqrt) of the window. */
		target = emu_ceil_sqrt(to);
		if (sqrt_cwnd >= target)
			return sqrt_cwnd;
		return to - from < target - sqrt_cwnd ? sqrt_cwnd + (to - from) : target;
	}
	/* Down by one a step while above the largest root below the window. */
	target = emu_ceil_sqrt(to) - 1;
	if (sqrt_cwnd <= target)
		return sqrt_cwnd;
	return from - to < sqrt_cwnd - target ? sqrt_cwnd - (from - to) : target;
}

/* The term after an RTO's cut to `cwnd`: down until its square is below
 * the window. */
EMU_ALG_INLINE __u32 emu_reno_sce_sqrt_after_loss(__u32 sqrt_cwnd, __u32 cwnd)
{
	__u32 below = emu_ceil_sqrt(cwnd) - 1;

	return sqrt_cwnd > below ? below : sqrt_cwnd;
}
