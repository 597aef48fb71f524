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
