/* TCP Hybla's arithmetic, as Linux 4.19's net/ipv4/tcp_hybla.c has it
 * (cc/hybla.c). Part of algorithms.h, which gives the includer's types.
 *
 * rho is the flow's smoothed RTT over a reference RTT (rtt0, 25 ms by
 * default), at least 1: slow start grows by 2^rho - 1 segments an ACK and
 * congestion avoidance by rho^2 / cwnd, so that a long path's window
 * grows in time as a 25 ms path's does. Increments are kept in 1/128 of
 * a segment (the "cents"). */

#define EMU_HYBLA_RTT0_MS 25U
/* The module's bound on the window (its snd_cwnd_clamp). */
#define EMU_HYBLA_CLAMP 65535U

/* rho in its forms: whole part, and in 1/8 (rho_3ls); rho^2 whole and in
 * 1/128 (rho2_7ls). */
struct emu_hybla_rho {
	__u32 rho;
	__u32 rho2;
	__u32 rho_3ls;
	__u32 rho2_7ls;
};

/* rho from the kernel's srtt_us (8 times the smoothed RTT, in us): srtt
 * over rtt0, in 1/8, at least 1. */
EMU_ALG_INLINE void emu_hybla_rho(struct emu_hybla_rho *r, __u32 srtt_us, __u32 rtt0_ms)
{
	__u32 rtt0_us = (rtt0_ms ? rtt0_ms : 1) * 1000;
	__u32 rho_3ls = srtt_us / rtt0_us;

	r->rho_3ls = rho_3ls > 8 ? rho_3ls : 8;
	r->rho = r->rho_3ls >> 3;
	r->rho2_7ls = (r->rho_3ls * r->rho_3ls) << 1;
	r->rho2 = r->rho2_7ls >> 7;
}

/* 2^(odds/8) in 1/128: the fraction of rho's power beyond its whole part. */
EMU_ALG_INLINE __u32 emu_hybla_fraction(__u32 odds)
{
	switch (odds) {
	case 1: return 139;
	case 2: return 152;
	case 3: return 165;
	case 4: return 181;
	case 5: return 197;
	case 6: return 215;
	case 7: return 234;
	default: return 128;
	}
}

/* A window and what Hybla keeps beside it. */
struct emu_hybla_window {
	__u32 cwnd;
	__u32 ssthresh;
	__u32 cwnd_cnt;		/* the kernel's snd_cwnd_cnt */
	__u32 cents;		/* growth below a segment, in 1/128 */
	__u32 clamp;
};

/* One ACK's growth (the module's cong_avoid once the window is limited
 * and Hybla is on): in slow start (2^rho - 1) segments, in 1/128; after
 * it rho^2 / cwnd. Whole segments go on the window, the rest into the
 * cents, a segment more for each 128 of them; a window that has not grown
 * for a window's worth of ACKs grows by one. Slow start stops at
 * ssthresh, and the window at the clamp. */
EMU_ALG_INLINE void emu_hybla_grow(struct emu_hybla_window *w, const struct emu_hybla_rho *r)
{
	int slow_start = w->cwnd < w->ssthresh;
	__u32 fractions = r->rho_3ls - (r->rho << 3);
	__u32 increment, odd;

	if (slow_start) {
		__u32 power = r->rho < 16 ? r->rho : 16;

		increment = ((1U << power) * emu_hybla_fraction(fractions)) - 128;
	} else {
		increment = r->rho2_7ls / (w->cwnd ? w->cwnd : 1);
		if (increment < 128)
			w->cwnd_cnt++;
	}
	odd = increment % 128;
	w->cwnd += increment >> 7;
	w->cents += odd;
	if (w->cents >= 128) {
		/* The module adds one a time; cents < 256 here, so once. */
		w->cwnd += w->cents >> 7;
		w->cents &= 127;
		w->cwnd_cnt = 0;
	}
	if (increment == 0 && odd == 0 && w->cwnd_cnt >= w->cwnd) {
		w->cwnd++;
		w->cwnd_cnt = 0;
	}
	if (slow_start && w->cwnd > w->ssthresh)
		w->cwnd = w->ssthresh;
	if (w->cwnd > w->clamp)
		w->cwnd = w->clamp;
}
