/* DCTCP (RFC 8257), the kernel module's fixed point: the arithmetic of cc/dctcp.c.
 * Part of algorithms.h, which gives the includer's types. */

/* alpha is kept in [0, EMU_DCTCP_ALPHA_ONE]; g = 1/2^shift_g, 4 by default
 * (the module's dctcp_shift_g, 0 to 10). */
#define EMU_DCTCP_ALPHA_ONE 1024U
#define EMU_DCTCP_SHIFT_G 4U
#define EMU_DCTCP_MAX_SHIFT_G 10U

/* One round's update: alpha <- alpha * (1 - g) + g * ce / delivered.
 * The decay removes at least one unit, so alpha reaches 0 without marks. */
EMU_ALG_INLINE __u32 emu_dctcp_alpha(__u32 alpha, __u32 ce, __u32 delivered, __u32 shift_g)
{
	__u32 decay;

	shift_g = shift_g > EMU_DCTCP_MAX_SHIFT_G ? EMU_DCTCP_MAX_SHIFT_G : shift_g;
	decay = alpha >> shift_g;
	alpha -= decay ? decay : alpha;
	if (ce) {
		__u64 frac = (__u64)ce << (10 - shift_g);

		frac /= delivered ? delivered : 1;
		alpha = (__u64)alpha + frac > EMU_DCTCP_ALPHA_ONE ?
				EMU_DCTCP_ALPHA_ONE :
				alpha + (__u32)frac;
	}
	return alpha;
}

/* alpha at the start: dctcp_alpha_on_init, at most 1. */
EMU_ALG_INLINE __u32 emu_dctcp_initial_alpha(__u32 alpha_on_init)
{
	return alpha_on_init < EMU_DCTCP_ALPHA_ONE ? alpha_on_init : EMU_DCTCP_ALPHA_ONE;
}

/* alpha after a retransmission timeout: 1 with dctcp_clamp_alpha_on_loss,
 * else unchanged. */
EMU_ALG_INLINE __u32 emu_dctcp_alpha_on_timeout(__u32 alpha, __u32 clamp_alpha_on_loss)
{
	return clamp_alpha_on_loss ? EMU_DCTCP_ALPHA_ONE : alpha;
}

/* The window after a CE reduction: cwnd * (1 - alpha / 2), at least 2. */
EMU_ALG_INLINE __u32 emu_dctcp_reduced_cwnd(__u32 cwnd, __u32 alpha)
{
	__u32 cut = (__u32)(((__u64)cwnd * alpha) >> 11);

	return cwnd - cut > 2 ? cwnd - cut : 2;
}

/* The versions cc/dctcp.c follows (its `version` setting; src/versions.rs
 * names their commits). */
#define EMU_DCTCP_V_LINUX 0	/* Linux 5.1 and later: alpha from delivered_ce */
#define EMU_DCTCP_V_SCE_2019 1	/* the SCE tree's of 2019: alpha from ECE bytes */

/* The 2019 module's round counts: each ACK adds the bytes it acknowledged
 * (a duplicate ACK counts as one received segment, rcv_mss; a pure window
 * update as none: emu_sce_acked_bytes) to *total, and to *ecn where it
 * carried ECE. alpha's update then takes ecn / total as the marked share,
 * a share of bytes over ACKs flagged ECE, where the later module counts
 * CE-marked segments delivered. */
EMU_ALG_INLINE void emu_dctcp_count_bytes(__u32 *ecn, __u32 *total, __u32 acked, __u32 ece)
{
	*total += acked;
	if (ece)
		*ecn += acked;
}

/* ssthresh once the kernel enters recovery on a fast retransmit, given
 * what `ssthresh()` (cwnd * (1 - alpha / 2)) or an earlier CWR round left:
 * Linux 5.1 and later halve the window, the 2019 module keeps the cut by
 * alpha. (Both halve on a timeout, in CA_EVENT_LOSS.) */
EMU_ALG_INLINE __u32 emu_dctcp_recovery_ssthresh(__u32 ssthresh, __u32 cwnd, __u32 version)
{
	if (version == EMU_DCTCP_V_SCE_2019)
		return ssthresh;
	return cwnd >> 1 > 2 ? cwnd >> 1 : 2;
}
