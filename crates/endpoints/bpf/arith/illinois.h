/* TCP Illinois's arithmetic, as Linux 4.19's net/ipv4/tcp_illinois.c has
 * it (cc/illinois.c). Part of algorithms.h, which gives the includer's
 * types.
 *
 * Once a round trip, from the average queueing delay da (the round's
 * mean RTT over the least ever) against the most seen, dm: alpha, the
 * segments of growth a round trip, is 10 while da stays within 1% of dm
 * and falls as k1 / (k2 + da) to 0.3 at dm; beta, the share a loss takes
 * off, is 1/8 up to 10% of dm, 1/2 from 80%, linear between. Windows
 * below win_thresh use Reno's 1 and 1/2. */

#define EMU_ILLINOIS_ALPHA_SHIFT 7
#define EMU_ILLINOIS_ALPHA_SCALE (1U << EMU_ILLINOIS_ALPHA_SHIFT)
#define EMU_ILLINOIS_ALPHA_MIN ((3 * EMU_ILLINOIS_ALPHA_SCALE) / 10)	/* ~0.3 */
#define EMU_ILLINOIS_ALPHA_MAX (10 * EMU_ILLINOIS_ALPHA_SCALE)		/* 10.0 */
#define EMU_ILLINOIS_ALPHA_BASE EMU_ILLINOIS_ALPHA_SCALE		/* 1.0 */
#define EMU_ILLINOIS_RTT_MAX (0xffffffffU / EMU_ILLINOIS_ALPHA_MAX)	/* 3.3 s */
#define EMU_ILLINOIS_BETA_SHIFT 6
#define EMU_ILLINOIS_BETA_SCALE (1U << EMU_ILLINOIS_BETA_SHIFT)
#define EMU_ILLINOIS_BETA_MIN (EMU_ILLINOIS_BETA_SCALE / 8)	/* 0.125 */
#define EMU_ILLINOIS_BETA_MAX (EMU_ILLINOIS_BETA_SCALE / 2)	/* 0.5 */
#define EMU_ILLINOIS_BETA_BASE EMU_ILLINOIS_BETA_MAX

/* What alpha remembers between rounds. */
struct emu_illinois_alpha {
	__u32 alpha;
	__u32 rtt_above;	/* the average delay has left the low zone */
	__u32 rtt_low;		/* rounds back in the low zone since */
};

/* alpha for the round (da, dm in us): in the low zone (da <= dm / 100)
 * the largest, but after leaving it only once theta rounds are back in
 * it; above, k1 / (k2 + da). */
EMU_ALG_INLINE __u32 emu_illinois_alpha(struct emu_illinois_alpha *a, __u32 da, __u32 dm,
					__u32 theta)
{
	__u32 d1 = dm / 100;

	if (da <= d1) {
		if (!a->rtt_above)
			return EMU_ILLINOIS_ALPHA_MAX;
		if (++a->rtt_low < theta)
			return a->alpha;
		a->rtt_low = 0;
		a->rtt_above = 0;
		return EMU_ILLINOIS_ALPHA_MAX;
	}
	a->rtt_above = 1;
	dm -= d1;
	da -= d1;
	return (dm * EMU_ILLINOIS_ALPHA_MAX) /
	       (dm + (da * (EMU_ILLINOIS_ALPHA_MAX - EMU_ILLINOIS_ALPHA_MIN)) / EMU_ILLINOIS_ALPHA_MIN);
}

/* beta for the round, in 1/64. */
EMU_ALG_INLINE __u32 emu_illinois_beta(__u32 da, __u32 dm)
{
	__u32 d2 = dm / 10, d3;

	if (da <= d2)
		return EMU_ILLINOIS_BETA_MIN;
	d3 = (8 * dm) / 10;
	if (da >= d3 || d3 <= d2)
		return EMU_ILLINOIS_BETA_MAX;
	return (EMU_ILLINOIS_BETA_MIN * d3 - EMU_ILLINOIS_BETA_MAX * d2 +
		(EMU_ILLINOIS_BETA_MAX - EMU_ILLINOIS_BETA_MIN) * da) /
	       (d3 - d2);
}

/* The average queueing delay: the round's mean RTT less the least. */
EMU_ALG_INLINE __u32 emu_illinois_avg_delay(__u64 sum_rtt, __u32 cnt_rtt, __u32 base_rtt)
{
	return (__u32)(sum_rtt / (cnt_rtt ? cnt_rtt : 1)) - base_rtt;
}

/* One ACK of congestion avoidance: acked segments counted, and
 * cnt * alpha / cwnd whole segments (the module's approximation of
 * alpha / cwnd an ACK) go on the window once there is at least one. */
EMU_ALG_INLINE void emu_illinois_grow(__u32 *cwnd, __u32 *cwnd_cnt, __u32 acked, __u32 alpha,
				      __u32 clamp)
{
	__u32 delta;

	*cwnd_cnt += acked;
	delta = (*cwnd_cnt * alpha) >> EMU_ILLINOIS_ALPHA_SHIFT;
	if (delta >= *cwnd) {
		__u32 grown = *cwnd + delta / *cwnd;

		*cwnd = grown < clamp ? grown : clamp;
		*cwnd_cnt = 0;
	}
}

/* The window after a loss: beta of it off, at least 2. */
EMU_ALG_INLINE __u32 emu_illinois_after_loss(__u32 cwnd, __u32 beta)
{
	__u32 left = cwnd - ((cwnd * beta) >> EMU_ILLINOIS_BETA_SHIFT);

	return left > 2 ? left : 2;
}
