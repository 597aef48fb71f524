/* BIC TCP's arithmetic, as Linux 4.19's net/ipv4/tcp_bic.c has it
 * (cc/bic.c). Part of algorithms.h, which gives the includer's types.
 * Times are in milliseconds: the module's jiffies with HZ = 1000.
 *
 * Below the window of the last loss (last_max), BIC searches for it
 * binarily: each round trip the window goes a quarter of the way there
 * (B = 4), at most max_increment segments and at least a slow creep near
 * it; above it, it probes slowly, then faster, then linearly. The result
 * is cnt, the ACKs per segment of growth. */

#define EMU_BIC_BETA_SCALE 1024U
#define EMU_BIC_B 4U
#define EMU_BIC_ACK_RATIO_SHIFT 4
/* A window recomputed at most every HZ / 32 (31 ms at HZ = 1000). */
#define EMU_BIC_UPDATE_MS 31

struct emu_bic {
	__u32 cnt;		/* ACKs per segment of growth */
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 last_time;	/* ms */
	__u32 epoch_start;	/* ms; 0: none */
	__u32 delayed_ack;	/* segments per ACK, in 1/16, averaged */
	/* The module's parameters. */
	__u32 fast_convergence;
	__u32 max_increment;
	__u32 low_window;
	__u32 beta;
	__u32 smooth_part;
};

EMU_ALG_INLINE void emu_bic_reset(struct emu_bic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << EMU_BIC_ACK_RATIO_SHIFT;
}

/* cnt for the window `cwnd` at `now_ms` (the module's bictcp_update). */
EMU_ALG_INLINE void emu_bic_update(struct emu_bic *ca, __u32 cwnd, __u32 now_ms)
{
	__u32 max_inc = ca->max_increment ? ca->max_increment : 1;

	if (ca->last_cwnd == cwnd && (int)(now_ms - ca->last_time) <= EMU_BIC_UPDATE_MS)
		return;
	ca->last_cwnd = cwnd;
	ca->last_time = now_ms;
	if (ca->epoch_start == 0)
		ca->epoch_start = now_ms;
	if (cwnd <= ca->low_window) {
		ca->cnt = cwnd;
		return;
	}
	if (cwnd < ca->last_max_cwnd) {
		__u32 dist = (ca->last_max_cwnd - cwnd) / EMU_BIC_B;

		if (dist > max_inc)
			ca->cnt = cwnd / max_inc;
		else if (dist <= 1U)
			ca->cnt = (cwnd * ca->smooth_part) / EMU_BIC_B;
		else
			ca->cnt = cwnd / dist;
	} else {
		if (cwnd < ca->last_max_cwnd + EMU_BIC_B)
			ca->cnt = (cwnd * ca->smooth_part) / EMU_BIC_B;
		else if (cwnd < ca->last_max_cwnd + max_inc * (EMU_BIC_B - 1))
			ca->cnt = (cwnd * (EMU_BIC_B - 1)) / (cwnd - ca->last_max_cwnd);
		else
			ca->cnt = cwnd / max_inc;
	}
	/* No loss yet: at most 20 ACKs a segment, 5% a round trip. */
	if (ca->last_max_cwnd == 0 && ca->cnt > 20)
		ca->cnt = 20;
	ca->cnt = (ca->cnt << EMU_BIC_ACK_RATIO_SHIFT) /
		  (ca->delayed_ack ? ca->delayed_ack : 1);
	if (ca->cnt == 0)
		ca->cnt = 1;
}

/* At a loss: the epoch ends, last_max becomes the window (or, with fast
 * convergence, (1 + beta) / 2 of it when below the last one), and the
 * threshold is half the window up to low_window, beta of it above. */
EMU_ALG_INLINE __u32 emu_bic_after_loss(struct emu_bic *ca, __u32 cwnd)
{
	__u32 left;

	ca->epoch_start = 0;
	if (cwnd < ca->last_max_cwnd && ca->fast_convergence)
		ca->last_max_cwnd = (cwnd * (EMU_BIC_BETA_SCALE + ca->beta)) /
				    (2 * EMU_BIC_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;
	if (cwnd <= ca->low_window)
		left = cwnd >> 1U;
	else
		left = (cwnd * ca->beta) / EMU_BIC_BETA_SCALE;
	return left > 2 ? left : 2;
}

/* Segments per ACK, in 1/16, as a moving average: 15/16 old, 1/16 new. */
EMU_ALG_INLINE void emu_bic_acked(struct emu_bic *ca, __u32 pkts_acked)
{
	ca->delayed_ack += pkts_acked - (ca->delayed_ack >> EMU_BIC_ACK_RATIO_SHIFT);
}
