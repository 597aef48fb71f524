/* Linux 4.19's congestion controls' arithmetic for the host (arith/scalable.h
 * ... arith/yeah.h), each function exported under an emu_alg_ name for
 * the unit tests in src/algorithms/linux/. host.c does the same for the
 * others. */
#include <stdint.h>

typedef uint32_t __u32;
typedef uint64_t __u64;
typedef int64_t __s64;
typedef uint8_t __u8;

#include "algorithms.h"

__u32 emu_alg_scalable_ai_cnt(__u32 cwnd) { return emu_scalable_ai_cnt(cwnd); }
__u32 emu_alg_scalable_after_loss(__u32 cwnd) { return emu_scalable_after_loss(cwnd); }

__u32 emu_alg_hstcp_rows(void) { return EMU_HSTCP_ROWS; }
void emu_alg_hstcp_table(__u32 row, __u32 *cwnd, __u32 *md)
{
	*cwnd = emu_hstcp_table[row].cwnd;
	*md = emu_hstcp_table[row].md;
}
__u32 emu_alg_hstcp_row(__u32 cwnd) { return emu_hstcp_row(cwnd); }
__u32 emu_alg_hstcp_ai(__u32 row) { return emu_hstcp_ai(row); }
__u32 emu_alg_hstcp_after_loss(__u32 cwnd, __u32 row) { return emu_hstcp_after_loss(cwnd, row); }

void emu_alg_hybla_rho(struct emu_hybla_rho *r, __u32 srtt_us, __u32 rtt0_ms)
{
	emu_hybla_rho(r, srtt_us, rtt0_ms);
}
__u32 emu_alg_hybla_fraction(__u32 odds) { return emu_hybla_fraction(odds); }
void emu_alg_hybla_grow(struct emu_hybla_window *w, const struct emu_hybla_rho *r)
{
	emu_hybla_grow(w, r);
}

void emu_alg_westwood_start(struct emu_westwood *w, __u32 now_ms, __u32 snd_una)
{
	emu_westwood_start(w, now_ms, snd_una);
}
void emu_alg_westwood_ack(struct emu_westwood *w, __u32 now_ms, __u32 snd_una, __u32 mss,
			  __u32 slow_path)
{
	emu_westwood_ack(w, now_ms, snd_una, mss, slow_path);
}
__u32 emu_alg_westwood_bw_rttmin(const struct emu_westwood *w, __u32 mss)
{
	return emu_westwood_bw_rttmin(w, mss);
}
__u32 emu_alg_westwood_filter(__u32 old, __u32 sample) { return emu_westwood_filter(old, sample); }
__u32 emu_alg_usecs_to_ms(__u32 us) { return emu_usecs_to_ms(us); }

__u32 emu_alg_veno_diff(__u32 cwnd, __u32 base_rtt, __u32 rtt)
{
	return emu_veno_diff(cwnd, base_rtt, rtt);
}
void emu_alg_veno_congestive(struct emu_veno_window *w) { emu_veno_congestive(w); }
__u32 emu_alg_veno_after_loss(__u32 cwnd, __u32 diff) { return emu_veno_after_loss(cwnd, diff); }

void emu_alg_bic_reset(struct emu_bic *ca) { emu_bic_reset(ca); }
void emu_alg_bic_update(struct emu_bic *ca, __u32 cwnd, __u32 now_ms)
{
	emu_bic_update(ca, cwnd, now_ms);
}
__u32 emu_alg_bic_after_loss(struct emu_bic *ca, __u32 cwnd) { return emu_bic_after_loss(ca, cwnd); }
void emu_alg_bic_acked(struct emu_bic *ca, __u32 pkts_acked) { emu_bic_acked(ca, pkts_acked); }

void emu_alg_htcp_start(struct emu_htcp *ca, __u32 now_ms) { emu_htcp_start(ca, now_ms); }
void emu_alg_htcp_reset(struct emu_htcp *ca, __u32 now_ms) { emu_htcp_reset(ca, now_ms); }
void emu_alg_htcp_undo(struct emu_htcp *ca) { emu_htcp_undo(ca); }
void emu_alg_htcp_measure_rtt(struct emu_htcp *ca, __u32 srtt, __u32 open)
{
	emu_htcp_measure_rtt(ca, srtt, open);
}
void emu_alg_htcp_throughput(struct emu_htcp *ca, __u32 pkts, __u32 cwnd, __u32 now_ms,
			     __u32 counting)
{
	emu_htcp_throughput(ca, pkts, cwnd, now_ms, counting);
}
void emu_alg_htcp_alpha_update(struct emu_htcp *ca, __u32 now_ms)
{
	emu_htcp_alpha_update(ca, now_ms);
}
__u32 emu_alg_htcp_after_loss(struct emu_htcp *ca, __u32 cwnd, __u32 now_ms)
{
	return emu_htcp_after_loss(ca, cwnd, now_ms);
}

__u32 emu_alg_illinois_alpha(struct emu_illinois_alpha *a, __u32 da, __u32 dm, __u32 theta)
{
	return emu_illinois_alpha(a, da, dm, theta);
}
__u32 emu_alg_illinois_beta(__u32 da, __u32 dm) { return emu_illinois_beta(da, dm); }
__u32 emu_alg_illinois_avg_delay(__u64 sum_rtt, __u32 cnt_rtt, __u32 base_rtt)
{
	return emu_illinois_avg_delay(sum_rtt, cnt_rtt, base_rtt);
}
void emu_alg_illinois_grow(__u32 *cwnd, __u32 *cwnd_cnt, __u32 acked, __u32 alpha, __u32 clamp)
{
	emu_illinois_grow(cwnd, cwnd_cnt, acked, alpha, clamp);
}
__u32 emu_alg_illinois_after_loss(__u32 cwnd, __u32 beta)
{
	return emu_illinois_after_loss(cwnd, beta);
}

__u32 emu_alg_yeah_queue(__u32 cwnd, __u32 rtt, __u32 base_rtt)
{
	return emu_yeah_queue(cwnd, rtt, base_rtt);
}
void emu_alg_yeah_round(struct emu_yeah *y, struct emu_yeah_window *w, __u32 rtt, __u32 base_rtt)
{
	emu_yeah_round(y, w, rtt, base_rtt);
}
void emu_alg_yeah_scalable(__u32 *cwnd, __u32 *cwnd_cnt, __u32 pkts, __u32 clamp)
{
	emu_yeah_scalable(cwnd, cwnd_cnt, pkts, clamp);
}
__u32 emu_alg_yeah_after_loss(struct emu_yeah *y, __u32 cwnd) { return emu_yeah_after_loss(y, cwnd); }

void emu_alg_nv_start(struct emu_nv *ca, __u32 snd_una, __u32 now_ms) { emu_nv_start(ca, snd_una, now_ms); }
__u32 emu_alg_nv_ai_cnt(const struct emu_nv *ca, __u32 cwnd) { return emu_nv_ai_cnt(ca, cwnd); }
__u32 emu_alg_nv_after_loss(__u32 cwnd) { return emu_nv_after_loss(cwnd); }
void emu_alg_nv_state(struct emu_nv *ca, __u32 state, __u32 snd_una) { emu_nv_state(ca, state, snd_una); }
void emu_alg_nv_sample(struct emu_nv *ca, __u32 rtt_us, __u32 in_flight, __u32 now_ms, __u32 rand)
{
	emu_nv_sample(ca, rtt_us, in_flight, now_ms, rand);
}
void emu_alg_nv_round(struct emu_nv *ca, struct emu_nv_window *w, __u32 bytes_acked)
{
	emu_nv_round(ca, w, bytes_acked);
}
