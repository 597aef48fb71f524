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

/* alpha is kept in [0, EMU_DCTCP_ALPHA_ONE]; g = 1/2^shift_g, 4 by default
 * (the module's dctcp_shift_g, 0 to 10). */
#define EMU_DCTCP_ALPHA_ONE 1024U
#define EMU_DCTCP_SHIFT_G 4U
#define EMU_DCTCP_MAX_SHIFT_G 10U

/* One round's update: alpha <- alpha * (1 - g) + g * ce / delivered.
 * The decay removes at least one unit, so alpha reaches 0 without marks. */
EMU_ALG_INLINE __u32 emu_dctcp_alpha(__u32 alpha, __u32 ce, __u32 delivered, __u32 shift_g)
{
	__u32 decay;

	shift_g = shift_g > EMU_DCTCP_MAX_SHIFT_G ? EMU_DCTCP_MAX_SHIFT_G : shift_g;
	decay = alpha >> shift_g;
	alpha -= decay ? decay : alpha;
	if (ce) {
		__u64 frac = (__u64)ce << (10 - shift_g);

		frac /= delivered ? delivered : 1;
		alpha = (__u64)alpha + frac > EMU_DCTCP_ALPHA_ONE ?
				EMU_DCTCP_ALPHA_ONE :
				alpha + (__u32)frac;
	}
	return alpha;
}

/* alpha at the start: dctcp_alpha_on_init, at most 1. */
EMU_ALG_INLINE __u32 emu_dctcp_initial_alpha(__u32 alpha_on_init)
{
	return alpha_on_init < EMU_DCTCP_ALPHA_ONE ? alpha_on_init : EMU_DCTCP_ALPHA_ONE;
}

/* alpha after a retransmission timeout: 1 with dctcp_clamp_alpha_on_loss,
 * else unchanged. */
EMU_ALG_INLINE __u32 emu_dctcp_alpha_on_timeout(__u32 alpha, __u32 clamp_alpha_on_loss)
{
	return clamp_alpha_on_loss ? EMU_DCTCP_ALPHA_ONE : alpha;
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
/* The reference's defaults: a 25 ms target, reached after 500 rounds. */
#define EMU_PRAGUE_RTT_TARGET_US 25000U
#define EMU_PRAGUE_MAX_SCALED_RTT_US 100000U
#define EMU_PRAGUE_RTT_TRANSITION 500U
/* The longest GSO burst, as a power of two of a second: 2^-12 s, 244 us. */
#define EMU_PRAGUE_BURST_SHIFT 12U

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

/* RTT independence (the reference's prague_rtt_scaling): how the additive
 * increase is scaled below the target RTT. */
#define EMU_PRAGUE_RTT_NONE 0U
#define EMU_PRAGUE_RTT_RATE 1U
#define EMU_PRAGUE_RTT_SCALABLE 2U
#define EMU_PRAGUE_RTT_ADDITIVE 3U

/* The target RTT the scaling works toward, in units of 2^7 us: the
 * configured one, plus the flow's own RTT for the additive heuristic. */
EMU_ALG_INLINE __u32 emu_prague_target_rtt(__u32 scaling, __u32 target, __u32 srtt_us)
{
	if (scaling == EMU_PRAGUE_RTT_ADDITIVE)
		return target + (srtt_us >> EMU_PRAGUE_RTT_SHIFT);
	return target;
}

/* The additive increase per acknowledged segment, times the window (so
 * ONE_CWND means the classic 1/cwnd per ACK), for an RTT of srtt_us and a
 * target of `target` units of 2^7 us.
 * - rate and additive: below the target, scaled by (rtt / target)^2, so
 *   the rate grows per unit time as that of a flow at the target RTT;
 * - scalable: (1/8 R0 + min(max(rtt - R1, 0), R0)) rtt / R0^2 with R0 about
 *   16 ms and R1 1.5 ms: at least one segment per 8 RTTs at tiny RTTs;
 * - none: unscaled.
 * Unscaled during the first `transition` rounds after slow start, for a
 * zero RTT or one above 100 ms. */
EMU_ALG_INLINE __u64 emu_prague_ai_increase(__u32 srtt_us, __u32 scaling, __u32 target,
					     __u32 round, __u32 transition)
{
	__u64 rtt = srtt_us >> EMU_PRAGUE_RTT_SHIFT;
	__u64 inc, div, over;

	if (scaling == EMU_PRAGUE_RTT_NONE || scaling > EMU_PRAGUE_RTT_ADDITIVE ||
	    round < transition || !rtt || srtt_us > EMU_PRAGUE_MAX_SCALED_RTT_US)
		return EMU_PRAGUE_ONE_CWND;
	if (scaling == EMU_PRAGUE_RTT_SCALABLE) {
		const __u64 r0 = (1U << 14) >> EMU_PRAGUE_RTT_SHIFT;
		const __u64 r1 = ((1U << 10) + (1U << 9)) >> EMU_PRAGUE_RTT_SHIFT;

		over = rtt > r1 ? rtt - r1 : 0;
		inc = (EMU_PRAGUE_ONE_CWND >> 3) * r0 +
		      EMU_PRAGUE_ONE_CWND * (over < r0 ? over : r0);
		inc *= rtt;
		div = r0 * r0;
		return (inc + (div >> 1)) / div;
	}
	target = emu_prague_target_rtt(scaling, target, srtt_us);
	if (rtt >= target)
		return EMU_PRAGUE_ONE_CWND;
	inc = (rtt << EMU_PRAGUE_CWND_UNIT) * rtt;
	div = (__u64)target * target;
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

/* Pacing rate in bytes per second for a fractional window of `mtu`-byte
 * packets over the smoothed RTT (srtt8 = srtt in us times 8, as the
 * kernel keeps it); doubled in slow start. */
EMU_ALG_INLINE __u64 emu_prague_pacing_rate(__u32 mtu, __u64 frac_cwnd,
					     __u32 srtt8, __u32 slow_start)
{
	__u64 rate = (1000000ULL << 3) * mtu;

	if (slow_start)
		rate <<= 1;
	if (srtt8)
		rate /= srtt8;
	return (rate * frac_cwnd + (EMU_PRAGUE_ONE_CWND >> 1)) >>
	       EMU_PRAGUE_CWND_UNIT;
}

/* The most segments one GSO burst may carry: the packets the pacing rate
 * (bytes per second) sends in 2^-burst_shift s, at least 1, and at most
 * max_tso_segs where that is set (non-zero). */
EMU_ALG_INLINE __u32 emu_prague_max_tso_burst(__u64 rate, __u32 mtu, __u32 burst_shift,
					      __u32 max_tso_segs)
{
	__u64 burst = (rate / (mtu ? mtu : 1)) >> burst_shift;
	__u32 segs = burst > 0xffff ? 0xffff : (burst ? (__u32)burst : 1);

	return max_tso_segs && segs > max_tso_segs ? max_tso_segs : segs;
}

/* The segments of one GSO burst (the min_tso_segs hook's answer): the
 * pacing rate's burst, at least `floor` (net.ipv4.tcp_min_tso_segs) where
 * tso_floor is on, and at most max_tso_segs where that is set. */
EMU_ALG_INLINE __u32 emu_prague_tso_segs(__u32 burst, __u32 floor, __u32 tso_floor,
					 __u32 max_tso_segs)
{
	__u32 segs = tso_floor && burst < floor ? floor : burst;

	return max_tso_segs && segs > max_tso_segs ? max_tso_segs : segs;
}

/* ---- TCP Prague: classic-ECN detection -------------------------------- */

/* Detection keeps its own slow RTT estimator (gains 2^-g_srtt_shift and
 * 2^-g_mdev_shift, which grow with the window) and a score, classic_ecn,
 * with alpha's scale (2^20 = 1): each alpha update adds
 * V lg(mdev / 750 us) + D lg(max(depth / 2 ms, 1)), V = D = 1/2, where
 * depth is the smoothed RTT over the minimum. A shallow, steady queue (an
 * L4S AQM) drives it to 0; a deep or jittery one (a classic AQM) up to
 * C_STICKY. Above L_STICKY a flow with fallback on takes alpha no lower
 * than 0.6 times the score's part between L_STICKY and CLASSIC. The
 * logarithms are integer ones whose remainders carry from round to round
 * (rest_mdev, rest_depth), so their sum over rounds is exact. */
#define EMU_PRAGUE_L_STICKY (16ULL << (EMU_PRAGUE_ALPHA_BITS - 1))
#define EMU_PRAGUE_CLASSIC_ECN (EMU_PRAGUE_L_STICKY + EMU_PRAGUE_ALPHA_ONE)
#define EMU_PRAGUE_C_STICKY (EMU_PRAGUE_CLASSIC_ECN + EMU_PRAGUE_L_STICKY)
/* V lg(750 us) and D lg(2 ms), with 2^20 = 1. */
#define EMU_PRAGUE_V0_LG (10014683LL >> 1)
#define EMU_PRAGUE_D0_LG (11498458LL >> 1)
#define EMU_PRAGUE_MAX_SRTT_BITS 18U
#define EMU_PRAGUE_MAX_MDEV_BITS (EMU_PRAGUE_MAX_SRTT_BITS + 1)
/* 2^(MAX_MDEV_BITS + 0.5) and 2^(MAX_MDEV_BITS - 1). */
#define EMU_PRAGUE_INIT_MDEV_CARRY 741455U
#define EMU_PRAGUE_INIT_ADJ_US 262144U

struct emu_prague_classic {
	__u64 srtt_pace;	/* us << g_srtt_shift */
	__u64 mdev_pace;	/* us << g_mdev_shift */
	__u64 classic_ecn;	/* the score, 2^20 = 1 */
	__u32 rest_depth;	/* carried remainders of the logarithms */
	__u32 rest_mdev;
	__u32 g_srtt_shift;
	__u32 g_mdev_shift;
};

/* floor(log2(v)), 0 for v = 0. */
EMU_ALG_INLINE __u32 emu_ilog2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

/* Detection's start: the connection's smoothed RTT (us) as its estimate. */
EMU_ALG_INLINE void emu_prague_classic_start(struct emu_prague_classic *c, __u32 srtt_us)
{
	c->g_srtt_shift = EMU_PRAGUE_MAX_SRTT_BITS;
	c->g_mdev_shift = EMU_PRAGUE_MAX_MDEV_BITS;
	c->srtt_pace = (__u64)srtt_us << c->g_srtt_shift;
	c->mdev_pace = 1ULL << c->g_mdev_shift;
	c->rest_mdev = EMU_PRAGUE_INIT_MDEV_CARRY;
	c->rest_depth = EMU_PRAGUE_INIT_MDEV_CARRY >> 1;
	c->classic_ecn = 0;
}

/* One RTT sample (us) into detection's estimator. */
EMU_ALG_INLINE void emu_prague_classic_sample(struct emu_prague_classic *c, __u32 rtt_us)
{
	__s64 m = rtt_us;
	__u64 srtt = c->srtt_pace;

	if (srtt) {
		m -= (__s64)(srtt >> (c->g_srtt_shift & 63));
		srtt += (__u64)m;
		if (m < 0)
			m = -m;
		m -= (__s64)(c->mdev_pace >> (c->g_mdev_shift & 63));
		c->mdev_pace += (__u64)m;
	} else {
		srtt = (__u64)m << (c->g_srtt_shift & 63);
		c->mdev_pace = 1ULL << (c->g_mdev_shift & 63);
	}
	c->srtt_pace = srtt ? srtt : 1;
}

/* The estimator's gains for a window of `ssthresh`: 2^-(1.5 lg ssthresh + 1),
 * at most 2^-18, mdev's one bit slower; the kept values are rescaled. */
EMU_ALG_INLINE void emu_prague_classic_gains(struct emu_prague_classic *c, __u32 ssthresh)
{
	__u32 lg = emu_ilog2(ssthresh);
	__u32 shift = lg + (lg >> 1) + 1;
	__u32 old = c->g_srtt_shift;

	if (shift > EMU_PRAGUE_MAX_SRTT_BITS)
		shift = EMU_PRAGUE_MAX_SRTT_BITS;
	c->g_srtt_shift = shift;
	c->g_mdev_shift = shift + 1;
	if (shift > old) {
		shift = (shift - old) & 63;
		c->srtt_pace <<= shift;
		c->mdev_pace <<= shift;
		c->rest_depth <<= shift;
		c->rest_mdev <<= shift;
	} else if (shift < old) {
		shift = (old - shift) & 63;
		c->srtt_pace >>= shift;
		c->mdev_pace >>= shift;
		c->rest_depth >>= shift;
		c->rest_mdev >>= shift;
	}
}

/* One round of detection, given the connection's minimum RTT (us). */
EMU_ALG_INLINE void emu_prague_classic_detect(struct emu_prague_classic *c, __u32 min_rtt_us)
{
	__u32 gs = c->g_srtt_shift & 63, gm = c->g_mdev_shift & 63;
	__u64 srtt_us = c->srtt_pace >> gs;
	__u64 mdev_us = c->mdev_pace >> gm;
	__u32 adj_us = EMU_PRAGUE_INIT_ADJ_US >> ((EMU_PRAGUE_MAX_MDEV_BITS - gm) & 31);
	__s64 score = (__s64)c->classic_ecn;
	__u64 depth_us, mdev_lg, depth_lg;
	__u32 lg;

	if (!srtt_us || min_rtt_us == ~0U)
		return;
	mdev_us = mdev_us * c->rest_mdev + adj_us;
	lg = emu_ilog2(mdev_us);
	mdev_lg = (lg > gm ? lg : gm) - gm;
	c->rest_mdev = (__u32)(mdev_us >> mdev_lg);
	mdev_lg <<= EMU_PRAGUE_ALPHA_BITS - 1;
	score += (__s64)mdev_lg - EMU_PRAGUE_V0_LG;
	if (srtt_us > min_rtt_us) {
		depth_us = (srtt_us - min_rtt_us) * c->rest_depth + (adj_us >> 1);
		lg = emu_ilog2(depth_us);
		depth_lg = (lg > gs ? lg : gs) - gs;
		c->rest_depth = (__u32)(depth_us >> depth_lg);
		depth_lg <<= EMU_PRAGUE_ALPHA_BITS - 1;
		if ((__s64)depth_lg > EMU_PRAGUE_D0_LG)
			score += (__s64)depth_lg - EMU_PRAGUE_D0_LG;
	}
	if (score < 0)
		score = 0;
	c->classic_ecn = (__u64)score > EMU_PRAGUE_C_STICKY ? EMU_PRAGUE_C_STICKY : (__u64)score;
}

/* alpha (2^20 = 1) as a flow with fallback on uses it for a reduction:
 * no lower than 0.6 times the score above L_STICKY (capped at CLASSIC). */
EMU_ALG_INLINE __u64 emu_prague_classic_alpha(__u64 classic_ecn, __u64 alpha)
{
	__u64 c;

	if (classic_ecn <= EMU_PRAGUE_L_STICKY)
		return alpha;
	c = (classic_ecn < EMU_PRAGUE_CLASSIC_ECN ? classic_ecn : EMU_PRAGUE_CLASSIC_ECN) -
	    EMU_PRAGUE_L_STICKY;
	c = (c >> 1) + (c >> 3);
	return alpha > c ? alpha : c;
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

/* ---- TCP Vegas, as the kernel's tcp_vegas ------------------------------ */

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

#endif
