/* TCP Prague's arithmetic (cc/prague.c): alpha, the window in 2^-20 segments, RTT independence, pacing, the burst cap, and the classic-ECN detection.
 * Part of algorithms.h, which gives the includer's types. */

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
