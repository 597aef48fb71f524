/* TCP Veno's arithmetic, as Linux 4.19's net/ipv4/tcp_veno.c has it
 * (cc/veno.c). Part of algorithms.h, which gives the includer's types.
 *
 * Veno estimates the segments this flow keeps queued as Vegas does (diff,
 * in 1/2 segment) and reads a loss with fewer than beta = 3 queued as
 * random: the window then loses a fifth, not half. With beta or more
 * queued, congestion avoidance grows a segment every other round trip. */

#define EMU_VENO_SHIFT 1
#define EMU_VENO_BETA (3U << EMU_VENO_SHIFT)
#define EMU_VENO_NO_RTT 0x7fffffffU

/* diff, in 1/2 segment: cwnd - cwnd * base / rtt, rtt being the round's
 * least RTT and base the least ever. */
EMU_ALG_INLINE __u32 emu_veno_diff(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	__u64 target = ((__u64)cwnd * base_rtt) << EMU_VENO_SHIFT;

	target /= rtt ? rtt : 1;
	return (cwnd << EMU_VENO_SHIFT) - (__u32)target;
}

/* A window as congestion avoidance changes it. */
struct emu_veno_window {
	__u32 cwnd;
	__u32 cwnd_cnt;		/* the kernel's snd_cwnd_cnt */
	__u32 clamp;
	__u32 inc;		/* 1: the next full round may grow */
};

/* One ACK of congestion avoidance in the congestive state (diff >= beta):
 * a window's worth of ACKs ends a round; every other round the window
 * grows by one (below the clamp). */
EMU_ALG_INLINE void emu_veno_congestive(struct emu_veno_window *w)
{
	if (w->cwnd_cnt >= w->cwnd) {
		if (w->inc && w->cwnd < w->clamp) {
			w->cwnd++;
			w->inc = 0;
		} else {
			w->inc = 1;
		}
		w->cwnd_cnt = 0;
	} else {
		w->cwnd_cnt++;
	}
}

/* The window after a loss: 4/5 of it with fewer than beta segments
 * queued, half otherwise; at least 2. */
EMU_ALG_INLINE __u32 emu_veno_after_loss(__u32 cwnd, __u32 diff)
{
	__u32 left = diff < EMU_VENO_BETA ? cwnd * 4 / 5 : cwnd >> 1;

	return left > 2 ? left : 2;
}
