/* TCP Prague 0.5's window arithmetic (cc/prague_05.c): the reference module
 * as L4STeam/linux had it at commit e741f5ac (2020-04-08, MODULE_VERSION
 * "0.5"), the kernel the SCE-L4S bakeoff ran. Its alpha, RTT scaling and
 * classic-ECN detection are the later version's (arith/prague.h); what
 * differs is here: a signed carry counter beside the kernel's integer
 * window instead of a fractional window, and pacing on the packets in
 * flight. Part of algorithms.h, which gives the includer's types. */

#define EMU_PRAGUE05_MIN_CWND 2U

/* The kernel's window as the 0.5 rules move it, with the carry counter
 * (2^20 = one segment; negative: reductions still owed). */
struct emu_prague05_window {
	__s64 cnt;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 clamp;
	__u32 pad;
};

/* The kernel's tcp_slow_start(): the window grows by the acknowledged
 * segments up to ssthresh (and the clamp); returns the segments left over. */
EMU_ALG_INLINE __u32 emu_prague05_slow_start(struct emu_prague05_window *w, __u32 acked)
{
	__u64 grown = (__u64)w->cwnd + acked;
	__u32 cwnd = grown < w->ssthresh ? (__u32)grown : w->ssthresh;

	acked -= cwnd - w->cwnd;
	w->cwnd = cwnd < w->clamp ? cwnd : w->clamp;
	return acked;
}

/* At most one whole-segment step of the window toward the carry: down
 * (never below 2, dropping what is still owed there, and ssthresh with
 * it) or up (never above the clamp). Returns 1 if the window moved. */
EMU_ALG_INLINE __u32 emu_prague05_adjust(struct emu_prague05_window *w)
{
	const __s64 one = (__s64)EMU_PRAGUE_ONE_CWND;

	if (w->cnt <= -one) {
		w->cnt += one;
		w->cwnd = w->cwnd > EMU_PRAGUE05_MIN_CWND ? w->cwnd - 1 : 0;
		if (w->cwnd < EMU_PRAGUE05_MIN_CWND) {
			w->cwnd = EMU_PRAGUE05_MIN_CWND;
			w->cnt = 0;
		}
		w->ssthresh = w->cwnd;
		return 1;
	}
	if (w->cnt >= one) {
		w->cnt -= one;
		w->cwnd = w->cwnd + 1 < w->clamp ? w->cwnd + 1 : w->clamp;
		return 1;
	}
	return 0;
}

/* Whether an ACK may grow the window: the window was the limit, or the
 * kernel's own pacing holds back data that is queued (the reference's way
 * past pacing hiding the window limit). */
EMU_ALG_INLINE __u32 emu_prague05_may_grow(__u32 cwnd_limited, __u32 internal_pacing,
					    __u32 queued)
{
	return cwnd_limited || (internal_pacing && queued);
}

/* One ACK: `acked` unmarked segments (CE-marked ones already taken off;
 * zero or less grows nothing), growth allowed where `may_grow` (the window
 * was the limit, or pacing held back queued data). In slow start the
 * window itself grows, and an ACK that slow start used up ends there: a
 * reduction still owed in the carry waits for congestion avoidance. Else
 * the carry gains ai_increase/cwnd per segment (at least 2^-20 each) and
 * the window takes at most one step. Returns 1 if the window changed. */
EMU_ALG_INLINE __u32 emu_prague05_on_ack(struct emu_prague05_window *w, __s64 acked,
					  __u32 may_grow, __u64 ai_increase)
{
	if (acked > 0 && may_grow) {
		if (w->cwnd < w->ssthresh) {
			acked = emu_prague05_slow_start(w, (__u32)acked);
			if (!acked)
				return 1;
		}
		w->cnt += (__s64)emu_prague_cwnd_increase(ai_increase, (__u32)acked, w->cwnd);
	}
	return emu_prague05_adjust(w);
}

/* The carry after a loss (fast retransmit or timeout): half the window and
 * half the carry owed, taken a segment per ACK outside slow start. */
EMU_ALG_INLINE __s64 emu_prague05_loss_cnt(__s64 cnt, __u32 cwnd)
{
	return cnt - (__s64)(((__u64)cwnd << (EMU_PRAGUE_CWND_UNIT - 1)) + (__u64)(cnt >> 1));
}

/* The carry after a CE reduction: cwnd * alpha / 2 owed, rounded to nearest
 * (alpha 2^20 = 1). */
EMU_ALG_INLINE __s64 emu_prague05_cwr_cnt(__s64 cnt, __u32 cwnd, __u64 alpha)
{
	return cnt - (__s64)emu_prague_reduction((__u64)cwnd << EMU_PRAGUE_CWND_UNIT, alpha);
}

/* ssthresh() of 0.5: never lowered, so a loss or mark in slow start leaves
 * slow start running. */
EMU_ALG_INLINE __u32 emu_prague05_threshold(__u32 cwnd, __u32 ssthresh)
{
	return cwnd > ssthresh ? cwnd : ssthresh;
}

/* Undo: the window from before the loss, and the progress made since
 * counted a second time into the carry. */
EMU_ALG_INLINE __s64 emu_prague05_undo_cnt(__s64 cnt, __s64 loss_cnt)
{
	return cnt + (cnt - loss_cnt);
}

/* Pacing rate in bytes per second: max(cwnd, packets in flight) packets
 * of `mtu` bytes per smoothed RTT (srtt8: us times 8), doubled while
 * cwnd < ssthresh / 2. The per-packet rate is truncated before the
 * multiplication, as the reference divides first. Its burst (the
 * max_tso_segs hook's answer) is emu_prague_max_tso_burst() of it. */
EMU_ALG_INLINE __u64 emu_prague05_pacing_rate(__u32 mtu, __u32 cwnd, __u32 in_flight,
					       __u32 ssthresh, __u32 srtt8)
{
	__u64 rate = (1000000ULL << 3) * mtu;

	if (cwnd < ssthresh / 2)
		rate <<= 1;
	if (srtt8)
		rate /= srtt8;
	return rate * (cwnd > in_flight ? cwnd : in_flight);
}
