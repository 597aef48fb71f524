/* The algorithms' arithmetic for the host: every function of algorithms.h
 * exported under an emu_alg_ name, for the unit tests in src/algorithms.rs. */
#include <stdint.h>

typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int64_t __s64;
typedef uint8_t __u8;

#include "algorithms.h"

__u32 emu_alg_dctcp_alpha(__u32 alpha, __u32 ce, __u32 delivered, __u32 shift_g)
{
	return emu_dctcp_alpha(alpha, ce, delivered, shift_g);
}

__u32 emu_alg_dctcp_ssthresh(__u32 cwnd, __u32 alpha)
{
	return emu_dctcp_reduced_cwnd(cwnd, alpha);
}

__u32 emu_alg_dctcp_initial_alpha(__u32 alpha_on_init)
{
	return emu_dctcp_initial_alpha(alpha_on_init);
}

__u32 emu_alg_dctcp_alpha_on_timeout(__u32 alpha, __u32 clamp)
{
	return emu_dctcp_alpha_on_timeout(alpha, clamp);
}

__u64 emu_alg_prague_alpha(__u64 upscaled, __u32 ce, __u32 delivered)
{
	return emu_prague_alpha(upscaled, ce, delivered);
}

__u64 emu_alg_prague_reduction(__u64 frac_cwnd, __u64 alpha)
{
	return emu_prague_reduction(frac_cwnd, alpha);
}

__u32 emu_alg_prague_frac_to_cwnd(__u64 frac_cwnd)
{
	return emu_prague_frac_to_cwnd(frac_cwnd);
}

__u64 emu_alg_prague_ai_increase(__u32 srtt_us, __u32 scaling, __u32 target, __u32 round,
				 __u32 transition)
{
	return emu_prague_ai_increase(srtt_us, scaling, target, round, transition);
}

__u32 emu_alg_prague_tso_segs(__u32 burst, __u32 floor, __u32 tso_floor, __u32 max_tso_segs)
{
	return emu_prague_tso_segs(burst, floor, tso_floor, max_tso_segs);
}

void emu_alg_prague_classic_start(struct emu_prague_classic *c, __u32 srtt_us)
{
	emu_prague_classic_start(c, srtt_us);
}

void emu_alg_prague_classic_sample(struct emu_prague_classic *c, __u32 rtt_us)
{
	emu_prague_classic_sample(c, rtt_us);
}

void emu_alg_prague_classic_gains(struct emu_prague_classic *c, __u32 ssthresh)
{
	emu_prague_classic_gains(c, ssthresh);
}

void emu_alg_prague_classic_detect(struct emu_prague_classic *c, __u32 min_rtt_us)
{
	emu_prague_classic_detect(c, min_rtt_us);
}

__u64 emu_alg_prague_classic_alpha(__u64 classic_ecn, __u64 alpha)
{
	return emu_prague_classic_alpha(classic_ecn, alpha);
}

__u32 emu_alg_ilog2(__u64 v)
{
	return emu_ilog2(v);
}

__u64 emu_alg_prague_cwnd_increase(__u64 ai_increase, __u32 acked, __u32 cwnd)
{
	return emu_prague_cwnd_increase(ai_increase, acked, cwnd);
}

__u64 emu_alg_prague_pacing_rate(__u32 mtu, __u64 frac_cwnd, __u32 srtt8,
				 __u32 slow_start)
{
	return emu_prague_pacing_rate(mtu, frac_cwnd, srtt8, slow_start);
}

__u32 emu_alg_prague_max_tso_burst(__u64 rate, __u32 mtu, __u32 burst_shift,
				   __u32 max_tso_segs)
{
	return emu_prague_max_tso_burst(rate, mtu, burst_shift, max_tso_segs);
}

__u32 emu_alg_isqrt(__u32 a)
{
	return emu_isqrt(a);
}

__u32 emu_alg_icbrt(__u64 a)
{
	return emu_icbrt(a);
}

__u32 emu_alg_sce_sqrt_cwnd(__u32 cwnd)
{
	return emu_sce_sqrt_cwnd(cwnd);
}

__u64 emu_alg_reno_sce_reduction(__u64 sce_bytes, __u32 sqrt_cwnd)
{
	return emu_reno_sce_reduction(sce_bytes, sqrt_cwnd);
}

__s64 emu_alg_window_steps(__s64 *cnt, __u64 unit)
{
	return emu_window_steps(cnt, unit);
}

__u32 emu_alg_cubic_k(__u32 wmax, __u32 cwnd, __u32 bic_scale)
{
	return emu_cubic_k(wmax, cwnd, bic_scale);
}

__u32 emu_alg_cubic_target(__u32 origin, __u32 k, __u32 t, __u32 bic_scale)
{
	return emu_cubic_target(origin, k, t, bic_scale);
}

__u32 emu_alg_cubic_sce_pull(__u32 t, __u32 *k, __u32 *origin, __u32 segs,
			     __u32 sqrt_cwnd, __u32 bic_scale)
{
	return emu_cubic_sce_pull(t, k, origin, segs, sqrt_cwnd, bic_scale);
}

__u32 emu_alg_cubic_friendly_scale(__u32 beta)
{
	return emu_cubic_friendly_scale(beta);
}

__u32 emu_alg_cubic_ssthresh(__u32 cwnd, __u32 beta, __u32 recent_sce)
{
	return emu_cubic_ssthresh(cwnd, beta, recent_sce);
}

__u32 emu_alg_cubic_last_max(__u32 cwnd, __u32 last_max, __u32 beta, __u32 fast_convergence)
{
	return emu_cubic_last_max(cwnd, last_max, beta, fast_convergence);
}

__u64 emu_alg_dctcp_sce_reduction(__u64 sce_bytes, __u32 cwnd)
{
	return emu_dctcp_sce_reduction(sce_bytes, cwnd);
}

__u32 emu_alg_dctcp_sce_cut(__u32 cwnd, __u32 logdiv)
{
	return emu_dctcp_sce_cut(cwnd, logdiv);
}

__u32 emu_alg_dctcp_sce_ssthresh(__u32 ssthresh, __u32 loss_cwnd)
{
	return emu_dctcp_sce_threshold(ssthresh, loss_cwnd);
}

__u32 emu_alg_vegas_sample(__u32 rtt_us)
{
	return emu_vegas_sample(rtt_us);
}

__u32 emu_alg_vegas_diff(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	return emu_vegas_diff(cwnd, base_rtt, rtt);
}

__u32 emu_alg_vegas_target_cwnd(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	return emu_vegas_target_cwnd(cwnd, base_rtt, rtt);
}

void emu_alg_vegas_round(struct emu_vegas_window *w, __u32 acked, __u32 base_rtt, __u32 rtt,
			 __u32 alpha, __u32 beta, __u32 gamma, __u32 clamp)
{
	emu_vegas_round(w, acked, base_rtt, rtt, alpha, beta, gamma, clamp);
}

#include "host_prague_05.c"
#include "host_sce.c"

__u32 emu_alg_relentless_cut(__u32 cwnd, __u32 ce, __u32 *halves)
{
	return emu_relentless_cut(cwnd, ce, halves);
}
#include "host_reno_sce.c"
#include "host_dctcp.c"
