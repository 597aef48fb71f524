/* The congestion controls' pure integer arithmetic.
 *
 * Included by endpoints.bpf.c (compiled for the kernel) and by host.c
 * (compiled for the host and unit-tested from src/algorithms.rs). Only
 * __u32, __u64 and __s64 are used; the includer provides them. No kernel
 * types, no helpers, no signed division (BPF has none). */
#ifndef EMU_ALGORITHMS_H
#define EMU_ALGORITHMS_H

#ifndef EMU_ALG_INLINE
#define EMU_ALG_INLINE static inline __attribute__((always_inline))
#endif

/* ---- DCTCP (RFC 8257), the kernel module's fixed point ---------------- */

/* alpha is kept in [0, EMU_DCTCP_ALPHA_ONE]; g = 1/2^EMU_DCTCP_SHIFT_G. */
#define EMU_DCTCP_ALPHA_ONE 1024U
#define EMU_DCTCP_SHIFT_G 4

/* One round's update: alpha <- alpha * (1 - g) + g * ce / delivered.
 * The decay removes at least one unit, so alpha reaches 0 without marks. */
EMU_ALG_INLINE __u32 emu_dctcp_alpha(__u32 alpha, __u32 ce, __u32 delivered)
{
	__u32 decay = alpha >> EMU_DCTCP_SHIFT_G;

	alpha -= decay ? decay : alpha;
	if (ce) {
		__u64 frac = (__u64)ce << (10 - EMU_DCTCP_SHIFT_G);

		frac /= delivered ? delivered : 1;
		alpha = (__u64)alpha + frac > EMU_DCTCP_ALPHA_ONE ?
				EMU_DCTCP_ALPHA_ONE :
				alpha + (__u32)frac;
	}
	return alpha;
}

/* The window after a CE reduction: cwnd * (1 - alpha / 2), at least 2. */
EMU_ALG_INLINE __u32 emu_dctcp_reduced_cwnd(__u32 cwnd, __u32 alpha)
{
	__u32 cut = (__u32)(((__u64)cwnd * alpha) >> 11);

	return cwnd - cut > 2 ? cwnd - cut : 2;
}

/* ---- TCP Prague -------------------------------------------------------- */

/* alpha has EMU_PRAGUE_ALPHA_BITS fractional bits and is stored multiplied
 * by 1/g = 16 so the EWMA keeps its remainder. The window is kept with
 * EMU_PRAGUE_CWND_UNIT fractional bits. */
#define EMU_PRAGUE_ALPHA_BITS 20
#define EMU_PRAGUE_ALPHA_ONE (1ULL << EMU_PRAGUE_ALPHA_BITS)
#define EMU_PRAGUE_SHIFT_G 4
#define EMU_PRAGUE_CWND_UNIT 20
#define EMU_PRAGUE_ONE_CWND (1ULL << EMU_PRAGUE_CWND_UNIT)
/* RTTs for the increase scaling are counted in units of 2^7 us. */
#define EMU_PRAGUE_RTT_SHIFT 7
#define EMU_PRAGUE_RTT_TARGET_US 25000U
#define EMU_PRAGUE_MAX_SCALED_RTT_US 100000U
#define EMU_PRAGUE_RTT_TRANSITION 500U

/* One round's update of the upscaled alpha (alpha * 16):
 * up <- up - up / 16 + ce / delivered, i.e. alpha <- (1 - g) alpha + g F. */
EMU_ALG_INLINE __u64 emu_prague_alpha(__u64 upscaled, __u32 ce, __u32 delivered)
{
	__u64 frac = 0;
	__u64 max = EMU_PRAGUE_ALPHA_ONE << EMU_PRAGUE_SHIFT_G;

	if (ce) {
		frac = (__u64)ce << EMU_PRAGUE_ALPHA_BITS;
		frac /= delivered ? delivered : 1;
	}
	upscaled = upscaled - (upscaled >> EMU_PRAGUE_SHIFT_G) + frac;
	return upscaled > max ? max : upscaled;
}

/* The CE reduction of the fractional window: frac * alpha / 2, rounded to
 * nearest (alpha is the non-upscaled value, ONE = 2^20). */
EMU_ALG_INLINE __u64 emu_prague_reduction(__u64 frac_cwnd, __u64 alpha)
{
	return (alpha * frac_cwnd + EMU_PRAGUE_ALPHA_ONE) >>
	       (EMU_PRAGUE_ALPHA_BITS + 1);
}

/* The whole-segment window for a fractional one: rounded up, at least 1. */
EMU_ALG_INLINE __u32 emu_prague_frac_to_cwnd(__u64 frac_cwnd)
{
	__u64 w = (frac_cwnd + EMU_PRAGUE_ONE_CWND - 1) >> EMU_PRAGUE_CWND_UNIT;

	return w > 1 ? (__u32)w : 1;
}

/* The additive increase per acknowledged segment, times the window (so
 * ONE_CWND means the classic 1/cwnd per ACK). Below the target RTT it is
 * scaled by (rtt / target)^2, which makes the rate growth per unit time
 * the same as that of a flow at the target RTT. Unscaled during the first
 * `transition` rounds after slow start, for a zero RTT or one above 100 ms. */
EMU_ALG_INLINE __u64 emu_prague_ai_increase(__u32 srtt_us, __u32 target_us,
					     __u32 round, __u32 transition)
{
	__u64 rtt = srtt_us >> EMU_PRAGUE_RTT_SHIFT;
	__u64 target = target_us >> EMU_PRAGUE_RTT_SHIFT;
	__u64 inc, div;

	if (round < transition || !rtt || srtt_us > EMU_PRAGUE_MAX_SCALED_RTT_US ||
	    rtt >= target)
		return EMU_PRAGUE_ONE_CWND;
	inc = (rtt << EMU_PRAGUE_CWND_UNIT) * rtt;
	div = target * target;
	return (inc + (div >> 1)) / div;
}

/* The fractional window's growth for `acked` unmarked segments. */
EMU_ALG_INLINE __u64 emu_prague_cwnd_increase(__u64 ai_increase, __u32 acked,
					       __u32 cwnd)
{
	__u64 inc = (__u64)acked * ai_increase;

	if (cwnd)
		inc = (inc + (cwnd >> 1)) / cwnd;
	return inc > acked ? inc : acked;
}

/* Pacing rate in bytes per second for a fractional window over the
 * smoothed RTT (srtt8 = srtt in us times 8, as the kernel keeps it);
 * doubled in slow start. */
EMU_ALG_INLINE __u64 emu_prague_pacing_rate(__u32 mss, __u64 frac_cwnd,
					     __u32 srtt8, __u32 slow_start)
{
	__u64 rate = (1000000ULL << 3) * mss;

	if (slow_start)
		rate <<= 1;
	if (srtt8)
		rate /= srtt8;
	return (rate * frac_cwnd + (EMU_PRAGUE_ONE_CWND >> 1)) >>
	       EMU_PRAGUE_CWND_UNIT;
}

/* ---- Integer roots ------------------------------------------------------ */

/* The integer roots are computed digit by digit without data-dependent
 * branches: each step's comparison becomes 0 or 1 from the sign bit of a
 * difference, so the BPF verifier walks a single path through them. */

/* floor(sqrt(a)) for a 32-bit argument. */
EMU_ALG_INLINE __u32 emu_isqrt(__u32 a)
{
	__u64 rem = a, res = 0, bit = 1ULL << 30;
	int i;

	for (i = 0; i < 16; i++) {
		__u64 t = res + bit;
		__u64 ge = 1 - ((rem - t) >> 63);	/* rem >= t */

		rem -= t * ge;
		res = (res >> 1) + bit * ge;
		bit >>= 2;
	}
	return (__u32)res;
}

/* floor(cbrt(a)) for a < 2^63. */
EMU_ALG_INLINE __u32 emu_icbrt(__u64 a)
{
	__u64 y = 0;
	int s;

	for (s = 60; s >= 0; s -= 3) {
		__u64 b, ge;

		y <<= 1;
		b = 3 * y * (y + 1) + 1;
		ge = 1 - (((a >> s) - b) >> 63);	/* (a >> s) >= b */
		a -= (b << s) * ge;
		y += ge;
	}
	return (__u32)y;
}

/* ---- SCE responses ------------------------------------------------------- */

/* The square root the SCE responses scale by: the largest s with s*s <
 * cwnd (what the reference maintains incrementally), at least 1. */
EMU_ALG_INLINE __u32 emu_sce_sqrt_cwnd(__u32 cwnd)
{
	__u32 s = cwnd > 1 ? emu_isqrt(cwnd - 1) : 1;

	return s ? s : 1;
}

/* Reno-SCE: the window-counter reduction, in bytes, for `sce_bytes`
 * acknowledged with SCE feedback: sce_bytes * sqrt(cwnd) / 2. The counter
 * loses one segment per cwnd * mss, so a whole window of SCE feedback
 * costs sqrt(cwnd) / 2 segments. */
EMU_ALG_INLINE __u64 emu_reno_sce_reduction(__u64 sce_bytes, __u32 sqrt_cwnd)
{
	return sce_bytes * sqrt_cwnd / 2;
}

/* Whole-segment steps held in a signed window counter of `unit` per
 * segment: returns +n (grow) or -n (shrink) and leaves the remainder in
 * *cnt, which ends strictly between -unit and unit. */
EMU_ALG_INLINE __s64 emu_window_steps(__s64 *cnt, __u64 unit)
{
	__u64 n;

	if (!unit)
		return 0;
	if (*cnt >= 0) {
		n = (__u64)*cnt / unit;
		*cnt -= (__s64)(n * unit);
		return (__s64)n;
	}
	n = (__u64)(-*cnt) / unit;
	*cnt += (__s64)(n * unit);
	return -(__s64)n;
}

/* ---- DCTCP-SCE -------------------------------------------------------------- */

/* The window-counter reduction, in bytes, for `sce_bytes` acknowledged with
 * SCE feedback: sce_bytes * cwnd / 2. The counter loses one segment per
 * cwnd * mss, so a whole window of SCE feedback costs cwnd / 2 segments and
 * a marked share F of a window costs F * cwnd / 2: DCTCP's response with
 * the marked share of each window in place of its moving average. */
EMU_ALG_INLINE __u64 emu_dctcp_sce_reduction(__u64 sce_bytes, __u32 cwnd)
{
	return sce_bytes * cwnd / 2;
}

/* The window after a CE round (cut 1/2^logdiv: 2 for a quarter, 3 for an
 * eighth after recent SCE feedback) or a loss (1, a half): at least one
 * segment less, at least 2. */
EMU_ALG_INLINE __u32 emu_dctcp_sce_cut(__u32 cwnd, __u32 logdiv)
{
	__u32 cut = cwnd >> logdiv;

	if (!cut)
		cut = 1;
	return cwnd > cut + 2 ? cwnd - cut : 2;
}

/* ssthresh() and the ssthresh SCE feedback sets: never lower than it was,
 * at least half the window before the last reduction, at least 2. While
 * ssthresh is still infinite (slow start) it stays so: only CE or loss
 * ends slow start. */
EMU_ALG_INLINE __u32 emu_dctcp_sce_threshold(__u32 ssthresh, __u32 loss_cwnd)
{
	__u32 half = loss_cwnd >> 1;

	if (half < 2)
		half = 2;
	return ssthresh > half ? ssthresh : half;
}

/* ---- CUBIC (RFC 9438), times in units of 2^-10 s ------------------------ */

#define EMU_CUBIC_BETA 717U		/* / 1024: 0.7 */
#define EMU_CUBIC_BETA_SCALE 1024U
#define EMU_CUBIC_HZ_SHIFT 10		/* time unit 2^-10 s */
#define EMU_CUBIC_C_SCALED 410ULL	/* C = 0.4, times 1024 */
/* (wmax - cwnd) * 2^40 / (C * 1024) under a cube root gives K in 2^-10 s. */
#define EMU_CUBIC_CUBE_FACTOR ((1ULL << 40) / EMU_CUBIC_C_SCALED)

/* K, the time from the epoch to the curve's origin (plateau). */
EMU_ALG_INLINE __u32 emu_cubic_k(__u32 wmax, __u32 cwnd)
{
	if (wmax <= cwnd)
		return 0;
	return emu_icbrt(EMU_CUBIC_CUBE_FACTOR * (__u64)(wmax - cwnd));
}

/* C * offs^3 in segments for a time offset in 2^-10 s. */
EMU_ALG_INLINE __u32 emu_cubic_delta(__u64 offs)
{
	return (__u32)((EMU_CUBIC_C_SCALED * offs * offs * offs) >>
		       (10 + 3 * EMU_CUBIC_HZ_SHIFT));
}

/* W(t) = C (t - K)^3 + origin, t in 2^-10 s since the epoch. */
EMU_ALG_INLINE __u32 emu_cubic_target(__u32 origin, __u32 k, __u32 t)
{
	if (t < k) {
		__u32 d = emu_cubic_delta(k - t);

		return d < origin ? origin - d : 0;
	}
	return origin + emu_cubic_delta(t - k);
}

/* Cubic-SCE: pull the curve's origin toward now for `segs` segments of SCE
 * feedback (a fraction segs / sqrt_cwnd of the way, all of it for a full
 * share), keeping the curve through its current value W(t). Updates *k and
 * *origin and returns how far (2^-10 s) the epoch moves forward. */
EMU_ALG_INLINE __u32 emu_cubic_sce_pull(__u32 t, __u32 *k, __u32 *origin,
					 __u32 segs, __u32 sqrt_cwnd)
{
	__u32 now_w = emu_cubic_target(*origin, *k, t);
	__u64 nk;

	if (!sqrt_cwnd)
		sqrt_cwnd = 1;
	if (t < *k) {
		/* Before the origin: the new epoch is now; the time left to
		 * the origin shrinks by segs / sqrt_cwnd. */
		__u64 left = *k - t;

		nk = segs < sqrt_cwnd ? left * (sqrt_cwnd - segs) / sqrt_cwnd : 0;
		*k = (__u32)nk;
		*origin = now_w + emu_cubic_delta(nk);
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
		d = emu_cubic_delta(since - nk);
		*origin = d < now_w ? now_w - d : 0;
		return adv;
	}
}

#endif
