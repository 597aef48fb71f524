/* H-TCP's arithmetic, as Linux 4.19's net/ipv4/tcp_htcp.c has it
 * (cc/htcp.c). Part of algorithms.h, which gives the includer's types.
 * Times are in milliseconds: the module's jiffies with HZ = 1000.
 *
 * H-TCP grows its window by alpha segments a round trip, alpha rising
 * with the time since the last congestion event (Delta, in s, past the
 * first second): 1 + 10 Delta + (Delta / 2)^2, scaled by 2 (1 - beta)
 * and, with RTT scaling, by the least RTT over 100 ms. A loss keeps beta
 * of the window, beta = minRTT / maxRTT within [0.5, 0.8], or 0.5 when
 * the achieved throughput changed by more than a fifth. */

#define EMU_HTCP_HZ 1000U
#define EMU_HTCP_ALPHA_BASE (1U << 7)	/* 1.0, in 1/128 */
#define EMU_HTCP_BETA_MIN (1U << 6)	/* 0.5 */
#define EMU_HTCP_BETA_MAX 102U		/* 0.8 */

struct emu_htcp {
	__u32 alpha;		/* in 1/128 */
	__u32 beta;		/* in 1/128 */
	__u32 modeswitch;	/* 0 until a first congestion event */
	__u32 pkts_acked;
	__u32 packetcount;
	__u32 min_rtt;		/* ms; 0: none yet */
	__u32 max_rtt;
	__u32 last_cong;	/* when the last congestion event ended, ms */
	__u32 undo_last_cong;
	__u32 undo_max_rtt;
	__u32 undo_old_max_b;
	__u32 min_b;		/* achieved throughput, segments a second */
	__u32 max_b;
	__u32 old_max_b;
	__u32 bi;
	__u32 lasttime;
	/* The module's parameters. */
	__u32 use_rtt_scaling;
	__u32 use_bandwidth_switch;
};

EMU_ALG_INLINE void emu_htcp_start(struct emu_htcp *ca, __u32 now_ms)
{
	__u32 scaling = ca->use_rtt_scaling, bandwidth = ca->use_bandwidth_switch;

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->use_rtt_scaling = scaling;
	ca->use_bandwidth_switch = bandwidth;
	ca->alpha = EMU_HTCP_ALPHA_BASE;
	ca->beta = EMU_HTCP_BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = now_ms;
}

/* The kernel's between(seq1, seq2, seq3): seq2 <= seq1 <= seq3, modulo 2^32. */
EMU_ALG_INLINE int emu_htcp_between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

/* Entering CWR, Recovery or Loss: a congestion event starts now, what it
 * replaces kept for an undo. */
EMU_ALG_INLINE void emu_htcp_reset(struct emu_htcp *ca, __u32 now_ms)
{
	ca->undo_last_cong = ca->last_cong;
	ca->undo_max_rtt = ca->max_rtt;
	ca->undo_old_max_b = ca->old_max_b;
	ca->last_cong = now_ms;
}

/* Undoing a congestion event that was not one. */
EMU_ALG_INLINE void emu_htcp_undo(struct emu_htcp *ca)
{
	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->max_rtt = ca->undo_max_rtt;
		ca->old_max_b = ca->undo_old_max_b;
		ca->undo_last_cong = 0;
	}
}

/* An RTT sample (ms): the least ever; in the Open state the most, which
 * rises by at most 20 ms a sample (a jump is an outlier). */
EMU_ALG_INLINE void emu_htcp_measure_rtt(struct emu_htcp *ca, __u32 srtt, __u32 open)
{
	if (ca->min_rtt > srtt || !ca->min_rtt)
		ca->min_rtt = srtt;
	if (open) {
		if (ca->max_rtt < ca->min_rtt)
			ca->max_rtt = ca->min_rtt;
		if (ca->max_rtt < srtt && srtt <= ca->max_rtt + 20)
			ca->max_rtt = srtt;
	}
}

/* The achieved throughput, from an ACK of `pkts` segments at `now_ms`
 * with the window `cwnd`, in Open or Disorder (`counting`): once a
 * window's worth and a least RTT have passed, a sample of segments a
 * second; just after a backoff (within three least RTTs) it restarts the
 * estimate, later it goes into a 3/4 moving average whose maximum is
 * kept. */
EMU_ALG_INLINE void emu_htcp_throughput(struct emu_htcp *ca, __u32 pkts, __u32 cwnd,
					__u32 now_ms, __u32 counting)
{
	__u32 whole_alpha = ca->alpha >> 7;

	if (!counting) {
		ca->packetcount = 0;
		ca->lasttime = now_ms;
		return;
	}
	ca->packetcount += pkts;
	if (ca->packetcount >= cwnd - (whole_alpha ? whole_alpha : 1) &&
	    now_ms - ca->lasttime >= ca->min_rtt && ca->min_rtt > 0) {
		__u32 cur = ca->packetcount * EMU_HTCP_HZ / (now_ms - ca->lasttime);

		if ((now_ms - ca->last_cong) / ca->min_rtt <= 3) {
			ca->min_b = ca->max_b = ca->bi = cur;
		} else {
			ca->bi = (3 * ca->bi + cur) / 4;
			if (ca->bi > ca->max_b)
				ca->max_b = ca->bi;
			if (ca->min_b > ca->max_b)
				ca->min_b = ca->max_b;
		}
		ca->packetcount = 0;
		ca->lasttime = now_ms;
	}
}

EMU_ALG_INLINE void emu_htcp_beta_update(struct emu_htcp *ca, __u32 min_rtt, __u32 max_rtt)
{
	if (ca->use_bandwidth_switch) {
		__u32 max_b = ca->max_b, old_max_b = ca->old_max_b;

		ca->old_max_b = ca->max_b;
		if (!emu_htcp_between(5 * max_b, 4 * old_max_b, 6 * old_max_b)) {
			ca->beta = EMU_HTCP_BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}
	if (ca->modeswitch && min_rtt > 10 && max_rtt) {
		ca->beta = (min_rtt << 7) / max_rtt;
		if (ca->beta < EMU_HTCP_BETA_MIN)
			ca->beta = EMU_HTCP_BETA_MIN;
		else if (ca->beta > EMU_HTCP_BETA_MAX)
			ca->beta = EMU_HTCP_BETA_MAX;
	} else {
		ca->beta = EMU_HTCP_BETA_MIN;
		ca->modeswitch = 1;
	}
}

EMU_ALG_INLINE void emu_htcp_alpha_update(struct emu_htcp *ca, __u32 now_ms)
{
	__u32 min_rtt = ca->min_rtt;
	__u32 factor = 1;
	__u32 diff = now_ms - ca->last_cong;

	if (diff > EMU_HTCP_HZ) {
		diff -= EMU_HTCP_HZ;
		factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / EMU_HTCP_HZ)) / EMU_HTCP_HZ;
	}
	if (ca->use_rtt_scaling && min_rtt) {
		__u32 scale = (EMU_HTCP_HZ << 3) / (10 * min_rtt);

		/* The ratio held in [0.5, 10], in 1/8. */
		if (scale < (1U << 2))
			scale = 1U << 2;
		if (scale > (10U << 3))
			scale = 10U << 3;
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}
	ca->alpha = 2 * factor * ((1 << 7) - ca->beta);
	if (!ca->alpha)
		ca->alpha = EMU_HTCP_ALPHA_BASE;
}

/* At a loss: beta and alpha anew, and maxRTT fades 5% toward minRTT;
 * returns the threshold, beta of the window, at least 2. */
EMU_ALG_INLINE __u32 emu_htcp_after_loss(struct emu_htcp *ca, __u32 cwnd, __u32 now_ms)
{
	__u32 min_rtt = ca->min_rtt, max_rtt = ca->max_rtt, left;

	emu_htcp_beta_update(ca, min_rtt, max_rtt);
	emu_htcp_alpha_update(ca, now_ms);
	if (min_rtt > 0 && max_rtt > min_rtt)
		ca->max_rtt = min_rtt + ((max_rtt - min_rtt) * 95) / 100;
	left = (cwnd * ca->beta) >> 7;
	return left > 2 ? left : 2;
}
