/* TCP Westwood+'s arithmetic, as Linux 4.19's net/ipv4/tcp_westwood.c has
 * it (cc/westwood.c). Part of algorithms.h, which gives the includer's
 * types. Times are in milliseconds: the module's jiffies on a kernel with
 * HZ = 1000.
 *
 * Westwood+ estimates the bandwidth from the bytes acknowledged over each
 * round trip (at least 50 ms), low-pass filtered twice, and after a loss
 * sets ssthresh (and after a reduction the window too) to the
 * bandwidth-delay product that estimate and the least RTT give. Its
 * growth is Reno's. */

#define EMU_WESTWOOD_RTT_MIN_MS 50U
/* The RTT it assumes until it has a sample: conservative on purpose. */
#define EMU_WESTWOOD_INIT_RTT_MS 20000U

struct emu_westwood {
	__u32 bw_ns_est;	/* the first filter's output, bytes per ms */
	__u32 bw_est;		/* the second's: the estimate */
	__u32 rtt_win_sx;	/* when the sample being built started, ms */
	__u32 bk;		/* bytes acknowledged since then */
	__u32 snd_una;		/* snd_una when last seen */
	__u32 cumul_ack;
	__u32 accounted;	/* bytes counted for duplicate ACKs, owed back */
	__u32 rtt;		/* the last RTT sample, ms */
	__u32 rtt_min;		/* the least RTT since the last loss, ms */
	__u32 first_ack;
	__u32 reset_rtt_min;
};

EMU_ALG_INLINE void emu_westwood_start(struct emu_westwood *w, __u32 now_ms, __u32 snd_una)
{
	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = EMU_WESTWOOD_INIT_RTT_MS;
	w->rtt_win_sx = now_ms;
	w->snd_una = snd_una;
	w->first_ack = 1;
}

/* The low-pass filter: 7/8 of the old value and 1/8 of the new. */
EMU_ALG_INLINE __u32 emu_westwood_filter(__u32 old, __u32 sample)
{
	return ((7 * old) + sample) >> 3;
}

/* At the end of a sample window of `delta` ms: bk / delta through both
 * filters (the first sample fills them). */
EMU_ALG_INLINE void emu_westwood_sample(struct emu_westwood *w, __u32 delta)
{
	__u32 bw = w->bk / (delta ? delta : 1);

	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = bw;
		w->bw_est = bw;
	} else {
		w->bw_ns_est = emu_westwood_filter(w->bw_ns_est, bw);
		w->bw_est = emu_westwood_filter(w->bw_est, w->bw_ns_est);
	}
}

/* Every ACK: on the first, the count starts from this snd_una; a window
 * longer than both the last RTT and 50 ms ends a sample. */
EMU_ALG_INLINE void emu_westwood_update_window(struct emu_westwood *w, __u32 now_ms,
					       __u32 snd_una)
{
	/* The module compares its signed delta with an unsigned bound, so
	 * as unsigned, as here. */
	__u32 delta = now_ms - w->rtt_win_sx;
	__u32 least = w->rtt > EMU_WESTWOOD_RTT_MIN_MS ? w->rtt : EMU_WESTWOOD_RTT_MIN_MS;

	if (w->first_ack) {
		w->snd_una = snd_una;
		w->first_ack = 0;
	}
	if (w->rtt && delta > least) {
		emu_westwood_sample(w, delta);
		w->bk = 0;
		w->rtt_win_sx = now_ms;
	}
}

EMU_ALG_INLINE void emu_westwood_update_rtt_min(struct emu_westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else if (w->rtt < w->rtt_min) {
		w->rtt_min = w->rtt;
	}
}

/* The bytes an ACK on the slow path counts: what it newly acknowledges,
 * a segment for a duplicate ACK (owed back by the next cumulative ACK),
 * and for a cumulative ACK past what duplicates counted, only the rest. */
EMU_ALG_INLINE __u32 emu_westwood_acked_count(struct emu_westwood *w, __u32 snd_una, __u32 mss)
{
	w->cumul_ack = snd_una - w->snd_una;
	if (!w->cumul_ack) {
		w->accounted += mss;
		w->cumul_ack = mss;
	}
	if (w->cumul_ack > mss) {
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = mss;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}
	w->snd_una = snd_una;
	return w->cumul_ack;
}

/* One ACK (the module's in_ack_event): on the slow path (duplicates,
 * SACK, window updates) through acked_count, on the fast path all that
 * snd_una advanced. */
EMU_ALG_INLINE void emu_westwood_ack(struct emu_westwood *w, __u32 now_ms, __u32 snd_una,
				     __u32 mss, __u32 slow_path)
{
	emu_westwood_update_window(w, now_ms, snd_una);
	if (slow_path) {
		w->bk += emu_westwood_acked_count(w, snd_una, mss);
	} else {
		w->bk += snd_una - w->snd_una;
		w->snd_una = snd_una;
	}
	emu_westwood_update_rtt_min(w);
}

/* The window the estimate supports: bw_est * rtt_min in segments, at
 * least 2. */
EMU_ALG_INLINE __u32 emu_westwood_bw_rttmin(const struct emu_westwood *w, __u32 mss)
{
	__u32 segs = (w->bw_est * w->rtt_min) / (mss ? mss : 1);

	return segs > 2 ? segs : 2;
}

/* An RTT sample in us as the module's jiffies (rounded up). */
EMU_ALG_INLINE __u32 emu_usecs_to_ms(__u32 us)
{
	return (__u32)(((__u64)us + 999) / 1000);
}
