/* The algorithms' arithmetic for the host: every function of algorithms.h
 * exported under an emu_alg_ name, for the unit tests in src/algorithms.rs. */
#include <stdint.h>

typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int64_t __s64;

#include "algorithms.h"

__u32 emu_alg_dctcp_alpha(__u32 alpha, __u32 ce, __u32 delivered)
{
	return emu_dctcp_alpha(alpha, ce, delivered);
}

__u32 emu_alg_dctcp_ssthresh(__u32 cwnd, __u32 alpha)
{
	return emu_dctcp_reduced_cwnd(cwnd, alpha);
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

__u64 emu_alg_prague_ai_increase(__u32 srtt_us, __u32 target_us, __u32 round,
				 __u32 transition)
{
	return emu_prague_ai_increase(srtt_us, target_us, round, transition);
}

__u64 emu_alg_prague_cwnd_increase(__u64 ai_increase, __u32 acked, __u32 cwnd)
{
	return emu_prague_cwnd_increase(ai_increase, acked, cwnd);
}

__u64 emu_alg_prague_pacing_rate(__u32 mss, __u64 frac_cwnd, __u32 srtt8,
				 __u32 slow_start)
{
	return emu_prague_pacing_rate(mss, frac_cwnd, srtt8, slow_start);
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

__u32 emu_alg_cubic_k(__u32 wmax, __u32 cwnd)
{
	return emu_cubic_k(wmax, cwnd);
}

__u32 emu_alg_cubic_target(__u32 origin, __u32 k, __u32 t)
{
	return emu_cubic_target(origin, k, t);
}

__u32 emu_alg_cubic_sce_pull(__u32 t, __u32 *k, __u32 *origin, __u32 segs,
			     __u32 sqrt_cwnd)
{
	return emu_cubic_sce_pull(t, k, origin, segs, sqrt_cwnd);
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
