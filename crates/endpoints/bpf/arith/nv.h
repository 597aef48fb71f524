/* TCP-NV's arithmetic, as Linux 4.19's net/ipv4/tcp_nv.c has it
 * (cc/nv.c). Part of algorithms.h, which gives the includer's types.
 * Times are in milliseconds where the module uses jiffies (HZ = 1000),
 * RTTs in us as there.
 *
 * NV predicts the window the current rate needs from the rate's slope
 * over the least RTT (cwnd_by_slope = max rate * min RTT / mss) and
 * allows nv_pad segments more: above that it cuts the window by 30% of
 * the excess (at most) and stops growing; well below it grows, each
 * round trip by Reno's segment (or, after losses, slower). A loss keeps
 * 80% of the window. */

#define EMU_NV_PAD 10U			/* nv_pad */
#define EMU_NV_PAD_BUFFER 2U
#define EMU_NV_RESET_PERIOD 5U		/* s; nv_reset_period */
#define EMU_NV_MIN_CWND 2U		/* nv_min_cwnd */
#define EMU_NV_CONG_DEC_MULT (30 * 128 / 100)
#define EMU_NV_SSTHRESH_FACTOR 8U
#define EMU_NV_RTT_FACTOR 128U
#define EMU_NV_LOSS_DEC_FACTOR 819U
#define EMU_NV_CWND_GROWTH_RATE_NEG 8U
#define EMU_NV_CWND_GROWTH_RATE_POS 0U
#define EMU_NV_DEC_EVAL_MIN_CALLS 60U
#define EMU_NV_INC_EVAL_MIN_CALLS 20U
#define EMU_NV_SSTHRESH_EVAL_MIN_CALLS 30U
#define EMU_NV_STOP_RTT_CNT 10U
#define EMU_NV_RTT_MIN_CNT 2U
#define EMU_NV_INIT_RTT 0xffffffffU
#define EMU_NV_MIN_CWND_START 4U	/* NV_MIN_CWND */
#define EMU_NV_MIN_CWND_GROW 2U
#define EMU_NV_TSO_CWND_BOUND 80U
#define EMU_NV_INFINITE_SSTHRESH 0x7fffffffU

struct emu_nv {
	__u32 min_rtt_reset;	/* when nv_min_rtt is next replaced, ms */
	int growth_factor;	/* < 0: under a segment a round trip */
	__u32 allow_cwnd_growth;
	__u32 reset;		/* restart the state at the next Open */
	__u32 catchup;
	__u32 eval_call_cnt;	/* samples since the last decision */
	__u32 min_cwnd;		/* no decision below this window */
	__u32 rtt_cnt;		/* round trips without a decision */
	__u32 last_rtt;		/* the averaged RTT, us */
	__u32 min_rtt;		/* the least averaged RTT, us */
	__u32 min_rtt_new;	/* the least since the last replacement */
	__u32 rtt_max_rate;	/* the highest rate of this round, 100 bit/s */
	__u32 rtt_start_seq;	/* the round ends past this */
	__u32 last_snd_una;
	__u32 no_cong_cnt;	/* decisions without congestion in a row */
	/* The module's parameters. */
	__u32 pad;
	__u32 reset_period;
	__u32 min_cwnd_param;
};

/* A window and its threshold, in segments. */
struct emu_nv_window {
	__u32 cwnd;
	__u32 ssthresh;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 mss;
};

/* The module's tcpnv_reset: a fresh round from snd_una. */
EMU_ALG_INLINE void emu_nv_reset(struct emu_nv *ca, __u32 snd_una)
{
	ca->reset = 0;
	ca->no_cong_cnt = 0;
	ca->rtt_cnt = 0;
	ca->last_rtt = 0;
	ca->rtt_max_rate = 0;
	ca->rtt_start_seq = snd_una;
	ca->eval_call_cnt = 0;
	ca->last_snd_una = snd_una;
}

/* The module's init, without a base RTT from a sockops program. */
EMU_ALG_INLINE void emu_nv_start(struct emu_nv *ca, __u32 snd_una, __u32 now_ms)
{
	emu_nv_reset(ca, snd_una);
	ca->allow_cwnd_growth = 1;
	ca->min_rtt_reset = now_ms + 2 * 1000;
	ca->min_rtt = EMU_NV_INIT_RTT;
	ca->min_rtt_new = EMU_NV_INIT_RTT;
	ca->min_cwnd = EMU_NV_MIN_CWND_START;
	ca->catchup = 0;
	ca->growth_factor = 0;
}

/* The ACKs per segment of growth in congestion avoidance. */
EMU_ALG_INLINE __u32 emu_nv_ai_cnt(const struct emu_nv *ca, __u32 cwnd)
{
	__u32 cnt;

	if (ca->growth_factor < 0)
		return cwnd << (__u32)(-ca->growth_factor);
	cnt = cwnd >> (__u32)ca->growth_factor;
	return cnt > 4 ? cnt : 4;
}

/* The threshold after a loss: 80% of the window, at least 2. */
EMU_ALG_INLINE __u32 emu_nv_after_loss(__u32 cwnd)
{
	__u32 left = (cwnd * EMU_NV_LOSS_DEC_FACTOR) >> 10;

	return left > 2 ? left : 2;
}

/* Entering CWR, Recovery or Loss: growth stops and the state restarts at
 * the next Open; a timeout also slows the growth rate. */
EMU_ALG_INLINE void emu_nv_state(struct emu_nv *ca, __u32 state, __u32 snd_una)
{
	if (state == 0 /* Open */ && ca->reset) {
		emu_nv_reset(ca, snd_una);
	} else if (state == 4 /* Loss */ || state == 2 /* CWR */ || state == 3 /* Recovery */) {
		ca->reset = 1;
		ca->allow_cwnd_growth = 0;
		if (state == 4) {
			if (ca->growth_factor > 0)
				ca->growth_factor = 0;
			if (EMU_NV_CWND_GROWTH_RATE_NEG > 0 && ca->growth_factor > -8)
				ca->growth_factor--;
		}
	}
}

/* One RTT sample (us) with `in_flight` segments: the averaged RTT (half
 * old, half new), the round's highest rate (in_flight * 80000 / rtt: 100
 * bit/s for a byte-sized segment; the slope divides by mss), the least
 * RTTs, and the least RTT replaced every reset period (3/4 to 5/4 of it,
 * drawn from `rand`, 0..255). */
EMU_ALG_INLINE void emu_nv_sample(struct emu_nv *ca, __u32 rtt_us, __u32 in_flight,
				  __u32 now_ms, __u32 rand)
{
	__u32 avg_rtt;
	__u64 rate;

	if (ca->last_rtt > 0) {
		avg_rtt = (__u32)((((__u64)rtt_us) * EMU_NV_RTT_FACTOR +
				   ((__u64)ca->last_rtt) * (256 - EMU_NV_RTT_FACTOR)) >> 8);
	} else {
		avg_rtt = rtt_us;
		ca->min_rtt = avg_rtt << 1;
	}
	ca->last_rtt = avg_rtt;
	rate = ((__u64)in_flight) * 80000 / (avg_rtt ? avg_rtt : 1);
	if (ca->rtt_max_rate < (__u32)rate)
		ca->rtt_max_rate = (__u32)rate;
	if (ca->eval_call_cnt < 255)
		ca->eval_call_cnt++;
	if (avg_rtt < ca->min_rtt)
		ca->min_rtt = avg_rtt;
	if (avg_rtt < ca->min_rtt_new)
		ca->min_rtt_new = avg_rtt;
	if ((int)(now_ms - ca->min_rtt_reset) >= 0) {
		ca->min_rtt = ca->min_rtt_new;
		ca->min_rtt_new = EMU_NV_INIT_RTT;
		ca->min_rtt_reset = now_ms + ((ca->reset_period * (384 + (rand & 0xff)) * 1000) >> 9);
		ca->min_cwnd = ca->min_cwnd / 2 > EMU_NV_MIN_CWND_START ? ca->min_cwnd / 2
									: EMU_NV_MIN_CWND_START;
	}
}

/* Congestion seen at a round's end (cwnd above max_win): once enough
 * round trips and samples back it, growth stops, ssthresh becomes max_win
 * and the window loses 30% of its excess (at least 2 segments), or comes
 * to max_win when the excess is 2 or less. 0: not decided yet. */
EMU_ALG_INLINE int emu_nv_congested(struct emu_nv *ca, struct emu_nv_window *w, __u32 max_win)
{
	if (ca->rtt_cnt < EMU_NV_RTT_MIN_CNT)
		return 0;
	if (w->ssthresh == EMU_NV_INFINITE_SSTHRESH) {
		if (ca->eval_call_cnt < EMU_NV_SSTHRESH_EVAL_MIN_CALLS)
			return 0;
	} else if (ca->eval_call_cnt < EMU_NV_DEC_EVAL_MIN_CALLS) {
		if (ca->allow_cwnd_growth && ca->rtt_cnt > EMU_NV_STOP_RTT_CNT)
			ca->allow_cwnd_growth = 0;
		return 0;
	}
	ca->allow_cwnd_growth = 0;
	w->ssthresh = (EMU_NV_SSTHRESH_FACTOR * max_win) >> 3;
	if (w->cwnd - max_win > 2) {
		__u32 dec = ((w->cwnd - max_win) * EMU_NV_CONG_DEC_MULT) >> 7;

		w->cwnd -= dec > 2 ? dec : 2;
	} else if (EMU_NV_CONG_DEC_MULT > 0) {
		w->cwnd = max_win;
	}
	if (ca->growth_factor > 0)
		ca->growth_factor = 0;
	ca->no_cong_cnt = 0;
	return 1;
}

/* No congestion at a round's end (cwnd at least pad_buffer below
 * max_win): once enough samples back it, growth resumes, and after
 * enough such rounds its rate doubles (toward Reno's after losses). 0: not
 * decided yet. */
EMU_ALG_INLINE int emu_nv_uncongested(struct emu_nv *ca)
{
	if (ca->eval_call_cnt < EMU_NV_INC_EVAL_MIN_CALLS)
		return 0;
	ca->allow_cwnd_growth = 1;
	ca->no_cong_cnt++;
	if (ca->growth_factor < 0 && EMU_NV_CWND_GROWTH_RATE_NEG > 0 &&
	    ca->no_cong_cnt > EMU_NV_CWND_GROWTH_RATE_NEG) {
		ca->growth_factor++;
		ca->no_cong_cnt = 0;
	} else if (ca->growth_factor >= 0 && EMU_NV_CWND_GROWTH_RATE_POS > 0 &&
		   ca->no_cong_cnt > EMU_NV_CWND_GROWTH_RATE_POS) {
		ca->growth_factor++;
		ca->no_cong_cnt = 0;
	}
	return 1;
}

/* A round's end (an ACK past rtt_start_seq): a round that took a single
 * sample for a window's worth of bytes says the window is too small to
 * judge (TSO, coalescing), and min_cwnd grows; otherwise the window is
 * compared with the one the rate's slope predicts, max_win. */
EMU_ALG_INLINE void emu_nv_round(struct emu_nv *ca, struct emu_nv_window *w, __u32 bytes_acked)
{
	__u32 mss = w->mss ? w->mss : 1, max_win;

	ca->rtt_start_seq = w->snd_nxt;
	if (ca->rtt_cnt < 0xff)
		ca->rtt_cnt++;
	if (ca->eval_call_cnt == 1 && bytes_acked >= (ca->min_cwnd - 1) * mss &&
	    ca->min_cwnd < (EMU_NV_TSO_CWND_BOUND + 1)) {
		ca->min_cwnd = ca->min_cwnd + EMU_NV_MIN_CWND_GROW < EMU_NV_TSO_CWND_BOUND + 1
				       ? ca->min_cwnd + EMU_NV_MIN_CWND_GROW
				       : EMU_NV_TSO_CWND_BOUND + 1;
		ca->rtt_start_seq = w->snd_nxt + ca->min_cwnd * mss;
		ca->eval_call_cnt = 0;
		ca->allow_cwnd_growth = 1;
		return;
	}
	max_win = (__u32)(((__u64)ca->rtt_max_rate * ca->min_rtt) / (80000ULL * mss)) + ca->pad;
	if (w->cwnd > max_win) {
		if (!emu_nv_congested(ca, w, max_win))
			return;
	} else if (w->cwnd <= max_win - EMU_NV_PAD_BUFFER) {
		if (!emu_nv_uncongested(ca))
			return;
	} else {
		return;
	}
	ca->eval_call_cnt = 0;
	ca->rtt_cnt = 0;
	ca->rtt_max_rate = 0;
	if (w->cwnd < ca->min_cwnd_param)
		w->cwnd = ca->min_cwnd_param;
}
