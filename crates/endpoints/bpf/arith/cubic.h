/* CUBIC (RFC 9438) as cc/cubic_sce.c computes it, times in units of 2^-10 s.
 * Part of algorithms.h, which gives the includer's types. */

#define EMU_CUBIC_BETA 717U		/* / 1024: 0.7, the module's default */
#define EMU_CUBIC_BETA_SCALE 1024U
#define EMU_CUBIC_HZ_SHIFT 10		/* time unit 2^-10 s */
#define EMU_CUBIC_BIC_SCALE 41U		/* C = 41 * 10 / 1024 = 0.4, the default */

/* C times 1024, from the module's bic_scale (its cube_rtt_scale). */
EMU_ALG_INLINE __u64 emu_cubic_c_scaled(__u32 bic_scale)
{
	return bic_scale ? (__u64)bic_scale * 10 : 1;
}

/* K, the time from the epoch to the curve's origin (plateau):
 * (wmax - cwnd) * 2^40 / (C * 1024) under a cube root, in 2^-10 s. */
EMU_ALG_INLINE __u32 emu_cubic_k(__u32 wmax, __u32 cwnd, __u32 bic_scale)
{
	if (wmax <= cwnd)
		return 0;
	return emu_icbrt(((1ULL << 40) / emu_cubic_c_scaled(bic_scale)) * (__u64)(wmax - cwnd));
}

/* C * offs^3 in segments for a time offset in 2^-10 s. */
EMU_ALG_INLINE __u32 emu_cubic_delta(__u64 offs, __u32 bic_scale)
{
	return (__u32)((emu_cubic_c_scaled(bic_scale) * offs * offs * offs) >>
		       (10 + 3 * EMU_CUBIC_HZ_SHIFT));
}

/* W(t) = C (t - K)^3 + origin, t in 2^-10 s since the epoch. */
EMU_ALG_INLINE __u32 emu_cubic_target(__u32 origin, __u32 k, __u32 t, __u32 bic_scale)
{
	if (t < k) {
		__u32 d = emu_cubic_delta(k - t, bic_scale);

		return d < origin ? origin - d : 0;
	}
	return origin + emu_cubic_delta(t - k, bic_scale);
}

/* The Reno-friendly region's growth: Reno with this beta gains a segment
 * per 8 / scale windows of ACKs, scale = 8 (1 + beta) / 3 / (1 - beta)
 * (15 for the default 0.7), as the module's beta_scale. */
EMU_ALG_INLINE __u32 emu_cubic_friendly_scale(__u32 beta)
{
	if (beta >= EMU_CUBIC_BETA_SCALE)
		beta = EMU_CUBIC_BETA_SCALE - 1;
	return 8 * (EMU_CUBIC_BETA_SCALE + beta) / 3 / (EMU_CUBIC_BETA_SCALE - beta);
}

/* The window after a CE mark or a loss: beta of it, or 7/8 after recent
 * SCE feedback; at least 2. */
EMU_ALG_INLINE __u32 emu_cubic_ssthresh(__u32 cwnd, __u32 beta, __u32 recent_sce)
{
	__u32 w = recent_sce ? cwnd * 7 / 8 : (__u32)((__u64)cwnd * beta / EMU_CUBIC_BETA_SCALE);

	return w > 2 ? w : 2;
}

/* The last maximum a reduction remembers: with fast convergence, a
 * reduction below the previous maximum remembers (1 + beta) / 2 of the
 * window. */
EMU_ALG_INLINE __u32 emu_cubic_last_max(__u32 cwnd, __u32 last_max, __u32 beta,
					__u32 fast_convergence)
{
	if (fast_convergence && cwnd < last_max)
		return (__u32)((__u64)cwnd * (EMU_CUBIC_BETA_SCALE + beta) /
			       (2 * EMU_CUBIC_BETA_SCALE));
	return cwnd;
}

/* Cubic-SCE: pull the curve's origin toward now for `segs` segments of SCE
 * feedback (a fraction segs / sqrt_cwnd of the way, all of it for a full
 * share), keeping the curve through its current value W(t). Updates *k and
 * *origin and returns how far (2^-10 s) the epoch moves forward. */
EMU_ALG_INLINE __u32 emu_cubic_sce_pull(__u32 t, __u32 *k, __u32 *origin,
					 __u32 segs, __u32 sqrt_cwnd, __u32 bic_scale)
{
	__u32 now_w = emu_cubic_target(*origin, *k, t, bic_scale);
	__u64 nk;

	if (!sqrt_cwnd)
		sqrt_cwnd = 1;
	if (t < *k) {
		/* Before the origin: the new epoch is now; the time left to
		 * the origin shrinks by segs / sqrt_cwnd. */
		__u64 left = *k - t;

		nk = segs < sqrt_cwnd ? left * (sqrt_cwnd - segs) / sqrt_cwnd : 0;
		*k = (__u32)nk;
		*origin = now_w + emu_cubic_delta(nk, bic_scale);
		return t;
	}
	/* Past the origin: the new epoch is the old origin; the origin moves
	 * toward now by segs / sqrt_cwnd of the elapsed time. */
	{
		__u64 since = t - *k;
		__u32 adv = *k;
		__u32 d;

		nk = segs < sqrt_cwnd ? since * segs / sqrt_cwnd : since;
		*k = (__u32)nk;
		d = emu_cubic_delta(since - nk, bic_scale);
		*origin = d < now_w ? now_w - d : 0;
		return adv;
	}
}
