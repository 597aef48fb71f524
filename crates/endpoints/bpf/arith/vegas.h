/* TCP Vegas's arithmetic, as the kernel's tcp_vegas (cc/vegas.c).
 * Part of algorithms.h, which gives the includer's types. */

/* The module's defaults: alpha and beta bound the segments a flow keeps
 * queued in the network; gamma is the queue at which slow start ends. */
#define EMU_VEGAS_ALPHA 2U
#define EMU_VEGAS_BETA 4U
#define EMU_VEGAS_GAMMA 1U
/* "No sample yet" for the minimum RTTs. */
#define EMU_VEGAS_NO_RTT 0x7fffffffU

/* An RTT sample as the filters take it: never 0. */
EMU_ALG_INLINE __u32 emu_vegas_sample(__u32 rtt_us)
{
	return rtt_us + 1;
}

/* Diff, the segments this flow keeps queued: cwnd * (rtt - base) / base,
 * where rtt is the round's smallest RTT and base the smallest ever. */
EMU_ALG_INLINE __u32 emu_vegas_diff(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	__u64 queued = rtt > base_rtt ? (__u64)cwnd * (rtt - base_rtt) : 0;

	base_rtt = base_rtt ? base_rtt : 1;
	queued /= base_rtt;
	return queued > 0xffffffffULL ? 0xffffffffU : (__u32)queued;
}

/* The window that sends at the rate the ACKs come back at over base_rtt:
 * cwnd * base / rtt. */
EMU_ALG_INLINE __u32 emu_vegas_target_cwnd(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	return (__u32)((__u64)cwnd * base_rtt / (rtt ? rtt : 1));
}

/* A window and its slow-start threshold, in segments. */
struct emu_vegas_window {
	__u32 cwnd;
	__u32 ssthresh;
};

/* The once-per-round adjustment, from the round's smallest RTT (rtt):
 * - in slow start with diff > gamma, slow start ends at the window the
 *   ACK rate supports (target + 1, never above cwnd);
 * - in slow start otherwise, Reno's slow start: acked segments more,
 *   up to ssthresh;
 * - after it, one segment less where diff > beta, one more where
 *   diff < alpha, the same in between.
 * Then the window is held in [2, clamp] and ssthresh raised to 3/4 of it
 * (the kernel's tcp_current_ssthresh outside a reduction), so that a
 * later slow start stops near here. */
EMU_ALG_INLINE void emu_vegas_round(struct emu_vegas_window *w, __u32 acked, __u32 base_rtt,
				    __u32 rtt, __u32 alpha, __u32 beta, __u32 gamma, __u32 clamp)
{
	__u32 diff = emu_vegas_diff(w->cwnd, base_rtt, rtt);
	int slow_start = w->cwnd < w->ssthresh;
	__u32 floor;

	if (slow_start && diff > gamma) {
		__u32 target = emu_vegas_target_cwnd(w->cwnd, base_rtt, rtt) + 1;

		w->cwnd = w->cwnd < target ? w->cwnd : target;
		w->ssthresh = w->ssthresh < w->cwnd ? w->ssthresh : w->cwnd;
	} else if (slow_start) {
		__u64 grown = (__u64)w->cwnd + acked;

		w->cwnd = grown < w->ssthresh ? (__u32)grown : w->ssthresh;
	} else if (diff > beta) {
		w->cwnd--;
		w->ssthresh = w->ssthresh < w->cwnd ? w->ssthresh : w->cwnd;
	} else if (diff < alpha) {
		w->cwnd++;
	}
	if (w->cwnd < 2)
		w->cwnd = 2;
	else if (w->cwnd > clamp)
		w->cwnd = clamp;
	floor = (w->cwnd >> 1) + (w->cwnd >> 2);
	w->ssthresh = w->ssthresh > floor ? w->ssthresh : floor;
}
