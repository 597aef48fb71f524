/* YeAH-TCP's arithmetic, as Linux 4.19's net/ipv4/tcp_yeah.c has it
 * (cc/yeah.c). Part of algorithms.h, which gives the includer's types.
 *
 * YeAH runs Scalable TCP's growth while the queue it estimates (Vegas's
 * way, once a round trip) is short, and Reno's otherwise ("slow" mode);
 * in slow mode with more than alpha = 80 segments queued it gives the
 * queue back at once (precautionary decongestion). At a loss it takes
 * off the queue it saw (at least 1/8, at most half) unless it has been
 * in slow mode for rho = 16 rounds or more, when it halves. */

#define EMU_YEAH_ALPHA 80U	/* segments queued at the bottleneck */
#define EMU_YEAH_GAMMA 1U	/* share of the queue removed a round */
#define EMU_YEAH_DELTA 3	/* log2 of the least share a loss removes */
#define EMU_YEAH_EPSILON 1	/* log2 of the most decongestion removes */
#define EMU_YEAH_PHY 8U		/* queueing delay above base / 8 is slow */
#define EMU_YEAH_RHO 16U	/* slow rounds before a loss halves */
#define EMU_YEAH_ZETA 50U	/* fast rounds before reno_count resets */
#define EMU_YEAH_SCALABLE_AI_CNT 100U
#define EMU_YEAH_CLAMP (0xffffffffU / 128)

struct emu_yeah {
	__u32 last_q;
	__u32 doing_reno_now;	/* slow rounds in a row */
	__u32 reno_count;	/* the window decongestion stops at */
	__u32 fast_count;
};

/* The queue, in segments: cwnd * (rtt - base) / rtt. */
EMU_ALG_INLINE __u32 emu_yeah_queue(__u32 cwnd, __u32 rtt, __u32 base_rtt)
{
	__u64 bw = (__u64)cwnd * (rtt - base_rtt);

	return (__u32)(bw / (rtt ? rtt : 1));
}

/* A window and its threshold, in segments. */
struct emu_yeah_window {
	__u32 cwnd;
	__u32 ssthresh;
};

/* The once-a-round decision, from the round's least RTT (rtt) and the
 * least ever (base): slow when the queue is above alpha or the delay
 * above base / 8; then, with the queue above alpha and the window above
 * reno_count, the window loses the queue (at most half of it, never below
 * reno_count) and ssthresh comes down to it. Fast otherwise. */
EMU_ALG_INLINE void emu_yeah_round(struct emu_yeah *y, struct emu_yeah_window *w, __u32 rtt,
				   __u32 base_rtt)
{
	__u32 queue = emu_yeah_queue(w->cwnd, rtt, base_rtt);

	if (queue > EMU_YEAH_ALPHA || rtt - base_rtt > (base_rtt / EMU_YEAH_PHY)) {
		if (queue > EMU_YEAH_ALPHA && w->cwnd > y->reno_count) {
			__u32 reduction = queue / EMU_YEAH_GAMMA;
			__u32 most = w->cwnd >> EMU_YEAH_EPSILON;

			if (reduction > most)
				reduction = most;
			w->cwnd -= reduction;
			if (w->cwnd < y->reno_count)
				w->cwnd = y->reno_count;
			w->ssthresh = w->cwnd;
		}
		if (y->reno_count <= 2) {
			__u32 half = w->cwnd >> 1;

			y->reno_count = half > 2 ? half : 2;
		} else {
			y->reno_count++;
		}
		y->doing_reno_now = y->doing_reno_now + 1 < 0xffffffU ? y->doing_reno_now + 1
								       : 0xffffffU;
	} else {
		y->fast_count++;
		if (y->fast_count > EMU_YEAH_ZETA) {
			y->reno_count = 2;
			y->fast_count = 0;
		}
		y->doing_reno_now = 0;
	}
	y->last_q = queue;
}

/* Scalable growth: `pkts` segments counted, a segment more once over
 * min(cwnd, 100) (below the clamp). */
EMU_ALG_INLINE void emu_yeah_scalable(__u32 *cwnd, __u32 *cwnd_cnt, __u32 pkts, __u32 clamp)
{
	__u32 every = *cwnd < EMU_YEAH_SCALABLE_AI_CNT ? *cwnd : EMU_YEAH_SCALABLE_AI_CNT;

	*cwnd_cnt += pkts;
	if (*cwnd_cnt > every) {
		if (*cwnd < clamp)
			(*cwnd)++;
		*cwnd_cnt = 0;
	}
}

/* The threshold after a loss. */
EMU_ALG_INLINE __u32 emu_yeah_after_loss(struct emu_yeah *y, __u32 cwnd)
{
	__u32 half = cwnd >> 1, reduction;

	half = half > 2 ? half : 2;
	if (y->doing_reno_now < EMU_YEAH_RHO) {
		reduction = y->last_q < half ? y->last_q : half;
		if (reduction < (cwnd >> EMU_YEAH_DELTA))
			reduction = cwnd >> EMU_YEAH_DELTA;
	} else {
		reduction = half;
	}
	y->fast_count = 0;
	y->reno_count = (y->reno_count >> 1) > 2 ? y->reno_count >> 1 : 2;
	/* The module takes the difference as a signed int. */
	return (int)(cwnd - reduction) > 2 ? cwnd - reduction : 2;
}
