// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu's endpoint programs, one object:
 *
 *   emu_dctcp      "dctcp"      DCTCP, RFC 8257 (sender and CE echo)
 *   emu_prague     "prague"     TCP Prague (L4S), Reno fallback without ECN
 *   emu_reno_sce   "reno-sce"   Reno with the SCE response
 *   emu_cubic_sce  "cubic-sce"  CUBIC (RFC 9438, HyStart) with the SCE response
 *   emu_dctcp_sce  "dctcp-sce"  DCTCP's proportional response to SCE, over Reno
 *   emu_egress     tc egress: ECT(1) on L4S data, ESCE on SCE ACKs
 *   emu_ingress    tc ingress: counts ECT(1) data, reads ESCE on ACKs
 *
 * docs/endpoints.md says what each follows and where it
 * differs. The arithmetic lives in algorithms.h and is unit-tested on the
 * host. */
#include <linux/bpf.h>
#include <linux/types.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "kernel.h"
#include "marks.h"
#include "algorithms.h"
#include "ce_echo.h"
#include "flows.h"
#include "params.h"
#include "sce_echo.h"
#include "tc.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* libbpf before 1.2 knows only ".struct_ops"; the loader uses ".link". */
#ifndef EMU_STRUCT_OPS_SEC
#define EMU_STRUCT_OPS_SEC ".struct_ops.link"
#endif

#define EMU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EMU_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- Shared pieces --------------------------------------------------- */

/* ORs a mark bit into the socket's mark (SO_MARK). */
static __always_inline void emu_set_mark(struct sock *sk, __u32 bit)
{
	int mark = (int)(sk->sk_mark | bit);

	bpf_setsockopt(sk, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
}

/* Without negotiated ECN, DCTCP and Prague hand the socket to the
 * kernel's Reno. Switching the congestion control also stops the socket
 * from sending ECT, which a BPF program cannot do otherwise. Returns 0 if
 * the socket now runs Reno (the caller must then return at once: its
 * private area belongs to Reno). */
static __always_inline int emu_fallback_to_reno(struct sock *sk)
{
	char name[8] = "reno";

	return bpf_setsockopt(sk, EMU_SOL_TCP, TCP_CONGESTION, name, sizeof(name));
}

static __always_inline int emu_sk_is_open(const struct sock *sk)
{
	unsigned char st = sk->__sk_common.skc_state;

	return st != EMU_TCP_LISTEN && st != EMU_TCP_CLOSE;
}

/* The flow key of a socket, as the TC programs build it from packets. */
static __always_inline void emu_sk_key(const struct sock *sk, struct emu_flow_key *k)
{
	const struct sock_common *c = &sk->__sk_common;
	__u32 d[4], s[4];

	__builtin_memset(k, 0, sizeof(*k));
	k->netns = c->skc_net.net->net_cookie;
	k->local_port = bpf_htons(c->skc_num);
	k->remote_port = c->skc_dport;
	if (c->skc_family == EMU_AF_INET6) {
		__builtin_memcpy(d, &c->skc_v6_daddr, 16);
		__builtin_memcpy(s, &c->skc_v6_rcv_saddr, 16);
		/* An IPv4-mapped peer sends IPv4 packets. */
		if (!(d[0] | d[1]) && d[2] == bpf_htonl(0xffff)) {
			k->family = EMU_AF_INET;
			k->local_addr[0] = c->skc_rcv_saddr;
			k->remote_addr[0] = c->skc_daddr;
			return;
		}
		k->family = EMU_AF_INET6;
		__builtin_memcpy(k->local_addr, s, 16);
		__builtin_memcpy(k->remote_addr, d, 16);
		return;
	}
	k->family = EMU_AF_INET;
	k->local_addr[0] = c->skc_rcv_saddr;
	k->remote_addr[0] = c->skc_daddr;
}

/* Starts the socket's SCE flow entry afresh and returns its ESCE byte
 * count (0). The entry outlives the socket: emu reads what the sender saw
 * after the run, and the table is LRU-bounded; a later connection on the
 * same addresses and ports starts it again here. */
static __always_inline __u64 emu_sce_flow_open(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_flow_key key;
	struct emu_flow init = {};
	struct emu_flow *f;

	emu_sk_key(sk, &key);
	init.echo_prior_rcv_nxt = tp->rcv_nxt;
	init.tx_last_ack = tp->snd_una;
	bpf_map_update_elem(&emu_sce_flows, &key, &init, BPF_ANY);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	return f ? f->esce_bytes : 0;
}

/* Bytes acknowledged with ESCE since the last call, at most `cap`. */
static __always_inline __u32 emu_sce_bytes(struct sock *sk, __u64 *last, __u32 cap)
{
	struct emu_flow_key key;
	struct emu_flow *f;
	__u64 now, delta;

	emu_sk_key(sk, &key);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (!f)
		return 0;
	now = f->esce_bytes;
	delta = now - *last;
	*last = now;
	return delta > cap ? cap : (__u32)delta;
}

/* The receiver's SCE echo for a CA event of an arriving data segment. */
static __always_inline void emu_sce_echo(struct sock *sk, int ev)
{
	struct emu_flow_key key;
	struct emu_flow *f;

	if (ev != CA_EVENT_ECN_NO_CE && ev != CA_EVENT_ECN_IS_CE)
		return;
	emu_sk_key(sk, &key);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (f)
		emu_sce_echo_event(sk, f, ev);
}

/* The kernel's own pacing for Reno-style senders: 200% of cwnd/srtt in
 * slow start, 120% after. */
static __always_inline void emu_default_pacing(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ss = tp->snd_cwnd < tp->snd_ssthresh / 2;
	__u32 w = EMU_MAX(tp->snd_cwnd, tp->packets_out);
	__u64 rate = emu_prague_pacing_rate(tp->mss_cache, (__u64)w << EMU_PRAGUE_CWND_UNIT,
					    tp->srtt_us, ss);

	if (!ss)
		rate = rate * 6 / 5;
	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = rate;
}

/* ---- DCTCP ------------------------------------------------------------- */

struct emu_dctcp_ca {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 next_seq;
	__u32 alpha;
	__u32 loss_cwnd;
	__u8 state;
	__u8 reno;	/* ECN not negotiated: plain Reno */
	__u8 shift_g;
	__u8 clamp_alpha_on_loss;
	struct emu_ce_echo echo;
};
_Static_assert(sizeof(struct emu_dctcp_ca) <= 104, "icsk_ca_priv");

/* Its settings (emu_cc_params slots), the module's parameters of the same
 * names: dctcp_shift_g (4), dctcp_alpha_on_init (1024, alpha = 1) and
 * dctcp_clamp_alpha_on_loss (0; the module had it until Linux 5.1). */
#define EMU_DCTCP_P_SHIFT_G 0
#define EMU_DCTCP_P_ALPHA_ON_INIT 1
#define EMU_DCTCP_P_CLAMP_ALPHA_ON_LOSS 2

static __always_inline void emu_dctcp_new_round(struct sock *sk, struct emu_dctcp_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops/emu_dctcp_init")
void BPF_PROG(emu_dctcp_init, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p;

	ca->reno = !emu_ecn_ok(tcp_sk(sk)) && emu_sk_is_open(sk);
	if (ca->reno && !emu_fallback_to_reno(sk))
		return;
	p = emu_cc_params_of(sk, EMU_CC_DCTCP);
	ca->alpha = emu_dctcp_initial_alpha(p ? p->value[EMU_DCTCP_P_ALPHA_ON_INIT] :
						EMU_DCTCP_ALPHA_ONE);
	ca->shift_g = p ? p->value[EMU_DCTCP_P_SHIFT_G] : EMU_DCTCP_SHIFT_G;
	ca->clamp_alpha_on_loss = p ? p->value[EMU_DCTCP_P_CLAMP_ALPHA_ON_LOSS] : 0;
	ca->loss_cwnd = 0;
	ca->state = TCP_CA_Open;
	emu_dctcp_new_round(sk, ca);
	emu_ce_echo_init(sk, &ca->echo);
}

SEC("struct_ops/emu_dctcp_ssthresh")
__u32 BPF_PROG(emu_dctcp_ssthresh, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->reno)
		return tcp_reno_ssthresh(sk);
	ca->loss_cwnd = tp->snd_cwnd;
	return emu_dctcp_reduced_cwnd(tp->snd_cwnd, ca->alpha);
}

SEC("struct_ops/emu_dctcp_in_ack_event")
void BPF_PROG(emu_dctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->reno || emu_before(tp->snd_una, ca->next_seq))
		return;
	ca->alpha = emu_dctcp_alpha(ca->alpha, tp->delivered_ce - ca->old_delivered_ce,
				    tp->delivered - ca->old_delivered, ca->shift_g);
	emu_dctcp_new_round(sk, ca);
}

static __always_inline void emu_dctcp_loss(struct sock *sk, struct emu_dctcp_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = EMU_MAX(tp->snd_cwnd >> 1, 2U);
}

SEC("struct_ops/emu_dctcp_set_state")
void BPF_PROG(emu_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	if (!ca->reno && new_state == TCP_CA_Recovery && ca->state != TCP_CA_Recovery)
		emu_dctcp_loss(sk, ca);
	/* A timeout takes alpha to its maximum where the setting asks. */
	if (!ca->reno && new_state == TCP_CA_Loss)
		ca->alpha = emu_dctcp_alpha_on_timeout(ca->alpha, ca->clamp_alpha_on_loss);
	ca->state = new_state;
}

SEC("struct_ops/emu_dctcp_cwnd_event")
void BPF_PROG(emu_dctcp_cwnd_event, struct sock *sk, int ev)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE)
		emu_ce_echo_event(sk, &ca->echo, ev);
	else if (ev == CA_EVENT_LOSS && !ca->reno)
		emu_dctcp_loss(sk, ca);
}

SEC("struct_ops/emu_dctcp_cong_avoid")
void BPF_PROG(emu_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/emu_dctcp_undo_cwnd")
__u32 BPF_PROG(emu_dctcp_undo_cwnd, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	if (ca->reno)
		return tcp_reno_undo_cwnd(sk);
	return EMU_MAX(tcp_sk(sk)->snd_cwnd, ca->loss_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_dctcp = {
	.init = (void *)emu_dctcp_init,
	.ssthresh = (void *)emu_dctcp_ssthresh,
	.in_ack_event = (void *)emu_dctcp_in_ack_event,
	.set_state = (void *)emu_dctcp_set_state,
	.cwnd_event = (void *)emu_dctcp_cwnd_event,
	.cong_avoid = (void *)emu_dctcp_cong_avoid,
	.undo_cwnd = (void *)emu_dctcp_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "dctcp",
};

/* ---- TCP Prague ---------------------------------------------------------- */

/* Its settings (emu_cc_params slots) and their defaults, the reference
 * module's parameters of the same names. */
#define EMU_PRAGUE_P_BURST_SHIFT 0	/* prague_burst_shift */
#define EMU_PRAGUE_P_MAX_TSO_SEGS 1	/* prague_max_tso_segs, 0: no cap */
#define EMU_PRAGUE_P_RTT_SCALING 2	/* prague_rtt_scaling: EMU_PRAGUE_RTT_* */
#define EMU_PRAGUE_P_RTT_TARGET 3	/* prague_rtt_target, us */
#define EMU_PRAGUE_P_RTT_TRANSITION 4	/* prague_rtt_transition, rounds */
#define EMU_PRAGUE_P_ECN_FALLBACK 5	/* prague_ecn_fallback: 0, 1, 2 */
#define EMU_PRAGUE_P_TSO_FLOOR 6	/* bursts at least net.ipv4.tcp_min_tso_segs */

/* As the reference, it asks for AccECN, in the object built for kernels
 * that negotiate it (registry.rs picks): with a listener that accepts it,
 * CE counts travel in the ACE field and delivered_ce follows them; with one
 * that does not, the connection falls back to RFC 3168 ECN and the
 * per-packet echo below. */
#ifdef EMU_PRAGUE_ACCECN
#define EMU_PRAGUE_FLAGS (TCP_CONG_NEEDS_ECN | TCP_CONG_NEEDS_ACCECN | TCP_CONG_NON_RESTRICTED)
#else
#define EMU_PRAGUE_FLAGS (TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED)
#endif

struct emu_prague_ca {
	__u64 cwr_stamp;	/* us, last CE reduction */
	__u64 alpha_stamp;	/* us, last alpha update */
	__u64 upscaled_alpha;	/* alpha * 16, 2^20 = 1 */
	__u64 ai_increase;	/* per-ACK increase, times cwnd, 2^20 = 1 */
	__u64 frac_cwnd;	/* window, 2^20 = 1 segment */
	__u64 loss_frac_cwnd;
	__u32 loss_cwnd;
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 last_delivered_ce;	/* per-ACK CE accounting */
	__u32 next_seq;
	__u32 round;		/* rounds since slow start ended */
	__u32 max_tso_burst;	/* segments one GSO burst may carry */
	__u32 rtt_transition;	/* rounds before RTT independence */
	__u16 rtt_target;	/* units of 2^7 us */
	__u16 max_tso_segs;	/* 0: no cap */
	__u8 state;
	__u8 saw_ce;
	__u8 in_loss;
	__u8 reno;		/* ECN not negotiated: plain Reno */
	__u8 burst_shift;
	__u8 rtt_scaling;	/* EMU_PRAGUE_RTT_*; NONE without a target */
	__u8 ecn_fallback;
	__u8 tso_floor;
	struct emu_ce_echo echo;
};
_Static_assert(sizeof(struct emu_prague_ca) <= 104, "icsk_ca_priv");

/* Classic-ECN detection's state, beside the private area (which is full):
 * one entry per socket, created in init where detection is on, gone with
 * the socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct emu_prague_classic);
} emu_prague_classic SEC(".maps");

static __always_inline struct emu_prague_classic *emu_prague_classic_of(struct sock *sk,
									 struct emu_prague_ca *ca)
{
	if (!ca->ecn_fallback)
		return 0;
	return bpf_sk_storage_get(&emu_prague_classic, sk, 0, 0);
}

static __always_inline __u32 emu_prague_target(struct sock *sk, struct emu_prague_ca *ca)
{
	return emu_prague_target_rtt(ca->rtt_scaling, ca->rtt_target, tcp_sk(sk)->srtt_us >> 3)
	       << EMU_PRAGUE_RTT_SHIFT;
}

static __always_inline int emu_prague_rtt_indep(struct sock *sk, struct emu_prague_ca *ca)
{
	return ca->rtt_scaling != EMU_PRAGUE_RTT_NONE && !emu_in_slow_start(tcp_sk(sk)) &&
	       ca->round >= ca->rtt_transition;
}

static __always_inline void emu_prague_ai(struct sock *sk, struct emu_prague_ca *ca)
{
	ca->ai_increase = emu_prague_ai_increase(tcp_sk(sk)->srtt_us >> 3, ca->rtt_scaling,
						 ca->rtt_target, ca->round, ca->rtt_transition);
}

static __always_inline void emu_prague_new_round(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
	if (!emu_in_slow_start(tp)) {
		ca->round++;
		if (!ca->round)
			ca->round = ca->rtt_transition;
	}
	emu_prague_ai(sk, ca);
}

/* The pacing rate, and the GSO burst it allows: 2^-burst_shift s of it
 * (244 us by default), as the reference bounds its bursts in time. */
static __always_inline void emu_prague_pacing(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mtu = emu_mss_to_mtu(sk, tp->mss_cache);
	__u64 rate = emu_prague_pacing_rate(mtu, ca->frac_cwnd, tp->srtt_us,
					    tp->snd_cwnd < tp->snd_ssthresh / 2);

	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	ca->max_tso_burst = emu_prague_max_tso_burst(rate, mtu, ca->burst_shift, 0);
	sk->sk_pacing_rate = rate;
}

static __always_inline void emu_prague_changed(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	tp->snd_cwnd_stamp = (__u32)(tp->tcp_mstamp / 1000);
	emu_prague_ai(sk, ca);
}

/* The flow's settings: its entry in emu_cc_params, else the reference's
 * defaults. */
static __always_inline void emu_prague_settings(struct sock *sk, struct emu_prague_ca *ca)
{
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_PRAGUE);
	__u32 target = EMU_PRAGUE_RTT_TARGET_US;

	ca->burst_shift = EMU_PRAGUE_BURST_SHIFT;
	ca->max_tso_segs = 0;
	ca->rtt_scaling = EMU_PRAGUE_RTT_RATE;
	ca->rtt_transition = EMU_PRAGUE_RTT_TRANSITION;
	ca->ecn_fallback = 0;
	ca->tso_floor = 0;
	if (p) {
		ca->burst_shift = p->value[EMU_PRAGUE_P_BURST_SHIFT];
		ca->max_tso_segs = p->value[EMU_PRAGUE_P_MAX_TSO_SEGS];
		ca->rtt_scaling = p->value[EMU_PRAGUE_P_RTT_SCALING];
		target = p->value[EMU_PRAGUE_P_RTT_TARGET];
		ca->rtt_transition = p->value[EMU_PRAGUE_P_RTT_TRANSITION];
		ca->ecn_fallback = p->value[EMU_PRAGUE_P_ECN_FALLBACK];
		ca->tso_floor = p->value[EMU_PRAGUE_P_TSO_FLOOR];
	}
	ca->rtt_target = (__u16)(target >> EMU_PRAGUE_RTT_SHIFT);
	if (!ca->rtt_target || ca->rtt_scaling > EMU_PRAGUE_RTT_ADDITIVE)
		ca->rtt_scaling = EMU_PRAGUE_RTT_NONE;
}

/* Starts classic-ECN detection from the connection's smoothed RTT, and
 * its report in the flow's entry of emu_sce_flows. */
static __always_inline void emu_prague_classic_init(struct sock *sk, struct emu_prague_ca *ca)
{
	struct emu_prague_classic *c;

	if (!ca->ecn_fallback)
		return;
	c = bpf_sk_storage_get(&emu_prague_classic, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return;
	emu_prague_classic_start(c, tcp_sk(sk)->srtt_us >> 3);
	emu_sce_flow_open(sk);
}

/* What detection concluded, for emu to report after the run: the highest
 * classic-ECN estimate the flow reached. */
static __always_inline void emu_prague_classic_report(struct sock *sk,
						      const struct emu_prague_classic *c)
{
	struct emu_flow_key key;
	struct emu_flow *f;

	emu_sk_key(sk, &key);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (f && c->classic_ecn > f->classic_ecn_max)
		f->classic_ecn_max = (__u32)c->classic_ecn;
}

SEC("struct_ops/emu_prague_init")
void BPF_PROG(emu_prague_init, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->state = TCP_CA_Open;
	ca->in_loss = 0;
	ca->loss_cwnd = 0;
	ca->loss_frac_cwnd = 0;
	ca->round = 0;
	ca->max_tso_burst = 1;
	ca->reno = !emu_ecn_ok(tp) && emu_sk_is_open(sk);
	if (ca->reno && !emu_fallback_to_reno(sk))
		return;
	emu_ce_echo_init(sk, &ca->echo);
	if (ca->reno)
		return;
	emu_prague_settings(sk, ca);
	emu_set_mark(sk, EMU_MARK_ECT1);
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
	ca->alpha_stamp = tp->tcp_mstamp;
	ca->cwr_stamp = 0;
	ca->upscaled_alpha = EMU_PRAGUE_ALPHA_ONE << EMU_PRAGUE_SHIFT_G;
	ca->frac_cwnd = (__u64)tp->snd_cwnd << EMU_PRAGUE_CWND_UNIT;
	ca->saw_ce = tp->delivered_ce != 0;
	ca->last_delivered_ce = tp->delivered_ce;
	if (emu_sk_is_open(sk))
		emu_prague_classic_init(sk, ca);
	emu_prague_new_round(sk, ca);
	if (tp->srtt_us)
		emu_prague_pacing(sk, ca);
}

SEC("struct_ops/emu_prague_release")
void BPF_PROG(emu_prague_release, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);

	if (!ca->reno && sk->sk_pacing_status == SK_PACING_NEEDED)
		sk->sk_pacing_status = SK_PACING_NONE;
}

static __always_inline void emu_prague_update_cwnd(struct sock *sk, struct emu_prague_ca *ca,
						   const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 acked = rs->acked_sacked;
	__u32 ce = tp->delivered_ce - ca->last_delivered_ce;
	__u32 cwnd;

	ca->last_delivered_ce = tp->delivered_ce;
	if (ce) {
		ca->saw_ce = 1;
		acked -= EMU_MIN(ce, acked);
	}
	if (acked && !ca->in_loss && emu_is_cwnd_limited(sk)) {
		int grow = 1;

		if (emu_in_slow_start(tp)) {
			acked = tcp_slow_start(tp, acked);
			/* Slow start moved the whole window: follow it. */
			ca->frac_cwnd = (__u64)tp->snd_cwnd << EMU_PRAGUE_CWND_UNIT;
			if (!acked) {
				emu_prague_changed(sk, ca);
				grow = 0;
			}
		}
		if (grow)
			ca->frac_cwnd += emu_prague_cwnd_increase(
				ca->ai_increase, acked, emu_prague_frac_to_cwnd(ca->frac_cwnd));
		if (!grow)
			return;
	}
	/* Move the integer window one step toward the fractional one. */
	cwnd = emu_prague_frac_to_cwnd(ca->frac_cwnd);
	if (tp->snd_cwnd > cwnd && tp->snd_cwnd > 2) {
		tp->snd_cwnd--;
		tp->snd_ssthresh = tp->snd_cwnd;
		emu_prague_changed(sk, ca);
	} else if (tp->snd_cwnd < cwnd && tp->snd_cwnd < tp->snd_cwnd_clamp) {
		tp->snd_cwnd++;
		emu_prague_changed(sk, ca);
	}
}

/* Once per round (or per target RTT under RTT independence): alpha from
 * the round's CE share, and classic-ECN detection where it is on. */
static __always_inline void emu_prague_update_alpha(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_prague_classic *c;

	if (ca->saw_ce) {
		c = emu_prague_classic_of(sk, ca);
		if (c) {
			emu_prague_classic_detect(c, tp->rtt_min.s[0].v);
			emu_prague_classic_report(sk, c);
		}
		ca->upscaled_alpha =
			emu_prague_alpha(ca->upscaled_alpha, tp->delivered_ce - ca->old_delivered_ce,
					 tp->delivered - ca->old_delivered);
		ca->alpha_stamp = tp->tcp_mstamp;
	}
	emu_prague_new_round(sk, ca);
}

SEC("struct_ops/emu_prague_cong_control")
void BPF_PROG(emu_prague_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->reno) {
		if (ca->state != TCP_CA_CWR && ca->state != TCP_CA_Recovery)
			tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
		emu_default_pacing(sk);
		return;
	}
	emu_prague_update_cwnd(sk, ca, rs);
	if (!emu_before(tp->snd_una, ca->next_seq) &&
	    (!emu_prague_rtt_indep(sk, ca) ||
	     tp->tcp_mstamp - ca->alpha_stamp >= emu_prague_target(sk, ca)))
		emu_prague_update_alpha(sk, ca);
	emu_prague_pacing(sk, ca);
}

/* Each RTT sample feeds classic-ECN detection's own slow estimator. */
SEC("struct_ops/emu_prague_pkts_acked")
void BPF_PROG(emu_prague_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct emu_prague_classic *c;

	if (ca->reno || sample->rtt_us < 0)
		return;
	c = emu_prague_classic_of(sk, ca);
	if (c)
		emu_prague_classic_sample(c, sample->rtt_us);
}

static __always_inline void emu_prague_enter_loss(struct sock *sk, struct emu_prague_ca *ca)
{
	ca->loss_cwnd = tcp_sk(sk)->snd_cwnd;
	ca->loss_frac_cwnd = ca->frac_cwnd;
	ca->frac_cwnd -= ca->frac_cwnd >> 1;
	ca->in_loss = 1;
	emu_prague_changed(sk, ca);
}

static __always_inline void emu_prague_enter_cwr(struct sock *sk, struct emu_prague_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_prague_classic *c;
	__u64 alpha, red;

	/* With RTT independence, at most one reduction per target RTT. */
	if (emu_prague_rtt_indep(sk, ca) &&
	    tp->tcp_mstamp - ca->cwr_stamp < emu_prague_target(sk, ca))
		return;
	ca->cwr_stamp = tp->tcp_mstamp;
	alpha = ca->upscaled_alpha >> EMU_PRAGUE_SHIFT_G;
	if (ca->ecn_fallback == 1) {
		c = emu_prague_classic_of(sk, ca);
		if (c)
			alpha = emu_prague_classic_alpha(c->classic_ecn, alpha);
	}
	red = emu_prague_reduction(ca->frac_cwnd, alpha);
	ca->frac_cwnd = red < ca->frac_cwnd ? ca->frac_cwnd - red : 0;
}

SEC("struct_ops/emu_prague_set_state")
void BPF_PROG(emu_prague_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (new_state == ca->state)
		return;
	if (ca->reno) {
		/* No proportional rate reduction under cong_control: take
		 * Reno's halving at once. */
		if (new_state == TCP_CA_Recovery || new_state == TCP_CA_CWR)
			tp->snd_cwnd = EMU_MAX(EMU_MIN(tp->snd_cwnd, tp->snd_ssthresh), 2U);
	} else if (new_state == TCP_CA_Recovery) {
		emu_prague_enter_loss(sk, ca);
	} else if (new_state == TCP_CA_CWR) {
		emu_prague_enter_cwr(sk, ca);
	} else if (new_state == TCP_CA_Open) {
		ca->in_loss = 0;
	}
	ca->state = new_state;
}

SEC("struct_ops/emu_prague_cwnd_event")
void BPF_PROG(emu_prague_cwnd_event, struct sock *sk, int ev)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE) {
		/* Under AccECN the kernel counts CE into the ACE field. */
		if (!(tcp_sk(sk)->ecn_flags & TCP_ECN_MODE_ACCECN))
			emu_ce_echo_event(sk, &ca->echo, ev);
	} else if (ev == CA_EVENT_LOSS && !ca->reno) {
		emu_prague_enter_loss(sk, ca);
	}
}

SEC("struct_ops/emu_prague_ssthresh")
__u32 BPF_PROG(emu_prague_ssthresh, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_prague_classic *c;

	if (ca->reno)
		return tcp_reno_ssthresh(sk);
	/* Detection's gains follow the window, as the reference's do. */
	c = emu_prague_classic_of(sk, ca);
	if (c)
		emu_prague_classic_gains(c, tp->snd_ssthresh);
	/* The window itself is reduced through frac_cwnd; a congestion
	 * signal only ends slow start. */
	return EMU_MAX(EMU_MIN(tp->snd_ssthresh, tp->snd_cwnd), 2U);
}

/* The floor of the kernel's GSO burst size. The kernel sizes a burst as
 * max(1 ms of the pacing rate, this): below about 12 Mbit/s this sets the
 * burst (the reference's cap, where the kernel's default floor of two
 * segments would cross a 1 ms marking step); above, the kernel's 1 ms is
 * the larger, and a BPF congestion control cannot lower it. With
 * tso_floor, the namespace's net.ipv4.tcp_min_tso_segs is the floor, as
 * the reference of 2020 had it. */
SEC("struct_ops/emu_prague_min_tso_segs")
__u32 BPF_PROG(emu_prague_min_tso_segs, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	__u32 sysctl = sk->__sk_common.skc_net.net->ipv4.sysctl_tcp_min_tso_segs;

	if (ca->reno)
		return sysctl;
	return emu_prague_tso_segs(ca->max_tso_burst, sysctl, ca->tso_floor, ca->max_tso_segs);
}

SEC("struct_ops/emu_prague_undo_cwnd")
__u32 BPF_PROG(emu_prague_undo_cwnd, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);

	if (ca->reno)
		return tcp_reno_undo_cwnd(sk);
	ca->frac_cwnd = EMU_MAX(ca->frac_cwnd, ca->loss_frac_cwnd);
	return EMU_MAX(ca->loss_cwnd, tcp_sk(sk)->snd_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_prague = {
	.init = (void *)emu_prague_init,
	.release = (void *)emu_prague_release,
	.cong_control = (void *)emu_prague_cong_control,
	.set_state = (void *)emu_prague_set_state,
	.cwnd_event = (void *)emu_prague_cwnd_event,
	.ssthresh = (void *)emu_prague_ssthresh,
	.undo_cwnd = (void *)emu_prague_undo_cwnd,
	.pkts_acked = (void *)emu_prague_pkts_acked,
	.min_tso_segs = (void *)emu_prague_min_tso_segs,
	.flags = EMU_PRAGUE_FLAGS,
	.name = "prague",
};

/* ---- The SCE window counter (Reno-SCE and DCTCP-SCE) ------------------------ */

/* Both references move the window after slow start through a byte counter
 * worth mss * cwnd per segment: unmarked acknowledged bytes add to it,
 * bytes acknowledged with SCE feedback take off what each reference's
 * response says, and each whole segment's worth moves the window by one.
 * Cost: a map lookup (the flow's ESCE count) and a few divisions per ACK. */
struct emu_sce_window {
	__s64 cnt;		/* bytes; mss * cwnd per segment */
	__u64 last_esce;	/* the flow's ESCE byte count at the last ACK */
	__u32 prior_snd_una;
	__u32 loss_cwnd;
	__u32 recent_sce;	/* ACKs left in which SCE counts as recent */
	__u32 pad;
};

static __always_inline void emu_sce_window_init(struct sock *sk, struct emu_sce_window *w)
{
	w->prior_snd_una = tcp_sk(sk)->snd_una;
	w->cnt = 0;
	w->loss_cwnd = 0;
	w->recent_sce = 0;
	w->last_esce = emu_sce_flow_open(sk);
	emu_set_mark(sk, EMU_MARK_ESCE);
}

/* The bytes this ACK acknowledged (a duplicate ACK counts as one segment, a
 * window update as none), and in *sce those of them acknowledged with ESCE. */
static __always_inline __u32 emu_sce_window_acked(struct sock *sk, struct emu_sce_window *w,
						  __u32 flags, __u32 *sce)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 acked = tp->snd_una - w->prior_snd_una;

	*sce = 0;
	if (!acked && !(flags & CA_ACK_WIN_UPDATE))
		acked = tp->mss_cache ? tp->mss_cache : 1;
	if (!acked)
		return 0;
	w->prior_snd_una = tp->snd_una;
	*sce = emu_sce_bytes(sk, &w->last_esce, acked);
	return acked;
}

/* Unmarked bytes grow the counter after slow start, while the window is
 * the limit. */
static __always_inline void emu_sce_window_grow(struct sock *sk, struct emu_sce_window *w,
						__u32 bytes, __u32 cwnd)
{
	if (bytes && !emu_in_slow_start(tcp_sk(sk)) && emu_is_cwnd_limited(sk)) {
		w->cnt += bytes;
		w->loss_cwnd = EMU_MAX(w->loss_cwnd, cwnd);
	}
}

/* Moves the window by the counter's whole segments (to at least 2, at most
 * the clamp), ages recent SCE by one ACK, and returns the window. */
static __always_inline __u32 emu_sce_window_step(struct sock *sk, struct emu_sce_window *w)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u32 cwnd = tp->snd_cwnd;
	__s64 steps = emu_window_steps(&w->cnt, (__u64)mss * cwnd);

	if (steps < 0) {
		__u32 n = (__u32)(-steps);

		cwnd = cwnd > n + 2 ? cwnd - n : 2;
	} else if (steps > 0) {
		__u64 grown = (__u64)cwnd + (__u64)steps;

		cwnd = grown < tp->snd_cwnd_clamp ? (__u32)grown : EMU_MAX(cwnd, tp->snd_cwnd_clamp);
	}
	if (cwnd != tp->snd_cwnd)
		tp->snd_cwnd = cwnd;
	if (w->recent_sce)
		w->recent_sce--;
	return cwnd;
}

/* In slow start the kernel grows the window; what is left past ssthresh
 * goes into the counter. After slow start the ACK handler moves it. */
static __always_inline void emu_sce_window_slow_start(struct sock *sk, struct emu_sce_window *w,
						      __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk) || !emu_in_slow_start(tp))
		return;
	acked = tcp_slow_start(tp, acked);
	w->cnt += (__s64)acked * tp->mss_cache;
}

/* ---- Reno-SCE -------------------------------------------------------------- */

struct emu_reno_sce_ca {
	struct emu_sce_window w;
	__u32 sqrt_cwnd;
	__u8 ce_ack;		/* this ACK carried ECE */
	__u8 pad[3];
};
_Static_assert(sizeof(struct emu_reno_sce_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_reno_sce_init")
void BPF_PROG(emu_reno_sce_init, struct sock *sk)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	ca->sqrt_cwnd = 1;
	ca->ce_ack = 0;
	emu_sce_window_init(sk, &ca->w);
}

SEC("struct_ops/emu_reno_sce_ssthresh")
__u32 BPF_PROG(emu_reno_sce_ssthresh, struct sock *sk)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;
	__u32 cut;

	ca->w.loss_cwnd = cwnd;
	ca->w.cnt = 0;
	if (!ca->ce_ack)
		return EMU_MAX(cwnd >> 1, 2U);
	/* CE: a quarter, or an eighth after recent SCE feedback. */
	cut = EMU_MAX(cwnd >> (ca->w.recent_sce ? 3 : 2), 1U);
	return cwnd > cut + 2 ? cwnd - cut : 2;
}

SEC("struct_ops/emu_reno_sce_in_ack_event")
void BPF_PROG(emu_reno_sce_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 acked, sce;

	ca->ce_ack = (flags & CA_ACK_ECE) != 0;
	acked = emu_sce_window_acked(sk, &ca->w, flags, &sce);
	if (!acked)
		return;
	if (sce) {
		ca->w.cnt -= (__s64)emu_reno_sce_reduction(sce, ca->sqrt_cwnd);
		ca->w.recent_sce = cwnd + 1;
		ca->w.loss_cwnd = cwnd;
		tp->snd_ssthresh = EMU_MAX(cwnd >> 1, 2U);
	}
	emu_sce_window_grow(sk, &ca->w, ca->ce_ack ? 0 : acked - sce, cwnd);
	ca->sqrt_cwnd = emu_sce_sqrt_cwnd(emu_sce_window_step(sk, &ca->w));
}

SEC("struct_ops/emu_reno_sce_cong_avoid")
void BPF_PROG(emu_reno_sce_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_window_slow_start(sk, &ca->w, acked);
}

SEC("struct_ops/emu_reno_sce_cwnd_event")
void BPF_PROG(emu_reno_sce_cwnd_event, struct sock *sk, int ev)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_echo(sk, ev);
	if (ev == CA_EVENT_LOSS) {
		ca->w.loss_cwnd = tcp_sk(sk)->snd_cwnd;
		ca->w.cnt = 0;
	}
}

SEC("struct_ops/emu_reno_sce_undo_cwnd")
__u32 BPF_PROG(emu_reno_sce_undo_cwnd, struct sock *sk)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	return EMU_MAX(tcp_sk(sk)->snd_cwnd, ca->w.loss_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_reno_sce = {
	.init = (void *)emu_reno_sce_init,
	.ssthresh = (void *)emu_reno_sce_ssthresh,
	.in_ack_event = (void *)emu_reno_sce_in_ack_event,
	.cong_avoid = (void *)emu_reno_sce_cong_avoid,
	.cwnd_event = (void *)emu_reno_sce_cwnd_event,
	.undo_cwnd = (void *)emu_reno_sce_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "reno_sce",
};

/* ---- DCTCP-SCE ------------------------------------------------------------- */

struct emu_dctcp_sce_ca {
	struct emu_sce_window w;
};
_Static_assert(sizeof(struct emu_dctcp_sce_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_dctcp_sce_init")
void BPF_PROG(emu_dctcp_sce_init, struct sock *sk)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_window_init(sk, &ca->w);
}

SEC("struct_ops/emu_dctcp_sce_ssthresh")
__u32 BPF_PROG(emu_dctcp_sce_ssthresh, struct sock *sk)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	return emu_dctcp_sce_threshold(tcp_sk(sk)->snd_ssthresh, ca->w.loss_cwnd);
}

SEC("struct_ops/emu_dctcp_sce_in_ack_event")
void BPF_PROG(emu_dctcp_sce_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 acked, sce;

	acked = emu_sce_window_acked(sk, &ca->w, flags, &sce);
	if (!acked)
		return;
	/* With ECE on the same ACK, the CE response alone counts. */
	if (flags & CA_ACK_ECE)
		sce = 0;
	if (sce) {
		ca->w.cnt -= (__s64)emu_dctcp_sce_reduction(sce, cwnd);
		ca->w.loss_cwnd = cwnd;
		tp->snd_ssthresh = emu_dctcp_sce_threshold(tp->snd_ssthresh, cwnd);
		ca->w.recent_sce = cwnd + 1;
	}
	emu_sce_window_grow(sk, &ca->w, acked - sce, cwnd);
	emu_sce_window_step(sk, &ca->w);
}

SEC("struct_ops/emu_dctcp_sce_cong_avoid")
void BPF_PROG(emu_dctcp_sce_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_window_slow_start(sk, &ca->w, acked);
}

/* CE (at the end of the kernel's CWR round) and loss: cut the window by
 * 1/2^logdiv and set ssthresh to half the window before the cut. */
static __always_inline void emu_dctcp_sce_react(struct sock *sk, struct emu_dctcp_sce_ca *ca,
						__u32 logdiv)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->w.loss_cwnd = tp->snd_cwnd;
	ca->w.cnt = 0;
	tp->snd_cwnd = emu_dctcp_sce_cut(tp->snd_cwnd, logdiv);
	tp->snd_ssthresh = emu_dctcp_sce_threshold(0, ca->w.loss_cwnd);
}

SEC("struct_ops/emu_dctcp_sce_cwnd_event")
void BPF_PROG(emu_dctcp_sce_cwnd_event, struct sock *sk, int ev)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_echo(sk, ev);
	if (ev == CA_EVENT_COMPLETE_CWR)
		/* A quarter, an eighth after recent SCE feedback. */
		emu_dctcp_sce_react(sk, ca, ca->w.recent_sce ? 3 : 2);
	else if (ev == CA_EVENT_LOSS)
		emu_dctcp_sce_react(sk, ca, 1);
}

SEC("struct_ops/emu_dctcp_sce_undo_cwnd")
__u32 BPF_PROG(emu_dctcp_sce_undo_cwnd, struct sock *sk)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	return EMU_MAX(tcp_sk(sk)->snd_cwnd, ca->w.loss_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_dctcp_sce = {
	.init = (void *)emu_dctcp_sce_init,
	.ssthresh = (void *)emu_dctcp_sce_ssthresh,
	.in_ack_event = (void *)emu_dctcp_sce_in_ack_event,
	.cong_avoid = (void *)emu_dctcp_sce_cong_avoid,
	.cwnd_event = (void *)emu_dctcp_sce_cwnd_event,
	.undo_cwnd = (void *)emu_dctcp_sce_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "dctcp_sce",
};

/* ---- CUBIC-SCE ------------------------------------------------------------- */

#define EMU_HYSTART_MIN_SAMPLES 8
#define EMU_HYSTART_DELAY_MIN_US 4000U
#define EMU_HYSTART_DELAY_MAX_US 16000U

/* Its settings (emu_cc_params slots), the reference module's parameters
 * of the same names; parameters.rs gives their defaults. */
#define EMU_CUBIC_P_FAST_CONVERGENCE 0
#define EMU_CUBIC_P_BETA 1
#define EMU_CUBIC_P_INITIAL_SSTHRESH 2
#define EMU_CUBIC_P_BIC_SCALE 3
#define EMU_CUBIC_P_TCP_FRIENDLINESS 4
#define EMU_CUBIC_P_HYSTART 5
#define EMU_CUBIC_P_HYSTART_DETECT 6
#define EMU_CUBIC_P_HYSTART_LOW_WINDOW 7
#define EMU_CUBIC_P_HYSTART_ACK_DELTA 8	/* us */

/* emu_cubic_ca.options */
#define EMU_CUBIC_FAST_CONVERGENCE 0x1
#define EMU_CUBIC_FRIENDLY 0x2
#define EMU_CUBIC_HYSTART 0x4
#define EMU_CUBIC_HYSTART_TRAIN 0x8	/* hystart_detect bit 1 */
#define EMU_CUBIC_HYSTART_DELAY 0x10	/* hystart_detect bit 2 */

struct emu_cubic_ca {
	__s64 sce_cnt;		/* SCE window counter, bytes */
	__u64 last_esce;
	__u32 cnt;		/* ACKs per one-segment increase */
	__u32 last_max_cwnd;
	__u32 last_cwnd;
	__u32 last_time;	/* us */
	__u32 origin;		/* W at the curve's origin */
	__u32 k;		/* 2^-10 s from the epoch to the origin */
	__u32 delay_min;	/* us */
	__u32 epoch_start;	/* us, 0: no epoch */
	__u32 ack_cnt;
	__u32 tcp_cwnd;		/* Reno-friendly estimate */
	__u32 round_start;	/* HyStart, us */
	__u32 end_seq;
	__u32 last_ack;		/* HyStart ACK train, us */
	__u32 curr_rtt;
	__u32 prior_snd_una;
	__u32 sqrt_cnt;
	__u32 recent_sce;
	__u32 sce_carry;	/* ESCE bytes short of a segment */
	__u32 last_ack_time;	/* us, for idle restarts */
	__u16 beta;		/* settings, read once in init */
	__u16 bic_scale;
	__u16 hystart_low_window;
	__u16 hystart_ack_delta;	/* us */
	__u8 sample_cnt;
	__u8 found;
	__u8 options;		/* EMU_CUBIC_* */
	__u8 pad;
};
_Static_assert(sizeof(struct emu_cubic_ca) <= 104, "icsk_ca_priv");

static __always_inline __u32 emu_now_us(const struct sock *sk)
{
	__u32 now = (__u32)tcp_sk(sk)->tcp_mstamp;

	return now ? now : 1;
}

static __always_inline void emu_cubic_reset(struct emu_cubic_ca *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->origin = 0;
	ca->k = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->found = 0;
	ca->sqrt_cnt = 1;
	ca->recent_sce = 0;
	ca->sce_cnt = 0;
	ca->sce_carry = 0;
}

static __always_inline void emu_hystart_reset(struct sock *sk, struct emu_cubic_ca *ca)
{
	ca->round_start = ca->last_ack = emu_now_us(sk);
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

/* The flow's settings, or the module's defaults without an entry. */
static __always_inline void emu_cubic_settings(struct sock *sk, struct emu_cubic_ca *ca)
{
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_CUBIC_SCE);
	__u32 detect = 3, initial_ssthresh = 0;

	ca->beta = EMU_CUBIC_BETA;
	ca->bic_scale = EMU_CUBIC_BIC_SCALE;
	ca->hystart_low_window = 16;
	ca->hystart_ack_delta = 2000;
	ca->options = EMU_CUBIC_FAST_CONVERGENCE | EMU_CUBIC_FRIENDLY | EMU_CUBIC_HYSTART;
	if (p) {
		ca->beta = (__u16)p->value[EMU_CUBIC_P_BETA];
		ca->bic_scale = (__u16)p->value[EMU_CUBIC_P_BIC_SCALE];
		ca->hystart_low_window = (__u16)p->value[EMU_CUBIC_P_HYSTART_LOW_WINDOW];
		ca->hystart_ack_delta = (__u16)p->value[EMU_CUBIC_P_HYSTART_ACK_DELTA];
		ca->options = (p->value[EMU_CUBIC_P_FAST_CONVERGENCE] ? EMU_CUBIC_FAST_CONVERGENCE : 0) |
			      (p->value[EMU_CUBIC_P_TCP_FRIENDLINESS] ? EMU_CUBIC_FRIENDLY : 0) |
			      (p->value[EMU_CUBIC_P_HYSTART] ? EMU_CUBIC_HYSTART : 0);
		detect = p->value[EMU_CUBIC_P_HYSTART_DETECT];
		initial_ssthresh = p->value[EMU_CUBIC_P_INITIAL_SSTHRESH];
	}
	if (detect & 1)
		ca->options |= EMU_CUBIC_HYSTART_TRAIN;
	if (detect & 2)
		ca->options |= EMU_CUBIC_HYSTART_DELAY;
	/* As the module: an initial threshold only where HyStart is off. */
	if (!(ca->options & EMU_CUBIC_HYSTART) && initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

SEC("struct_ops/emu_cubic_sce_init")
void BPF_PROG(emu_cubic_sce_init, struct sock *sk)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	emu_cubic_reset(ca);
	emu_cubic_settings(sk, ca);
	emu_hystart_reset(sk, ca);
	ca->prior_snd_una = tcp_sk(sk)->snd_una;
	ca->last_ack_time = emu_now_us(sk);
	ca->last_esce = emu_sce_flow_open(sk);
	emu_set_mark(sk, EMU_MARK_ESCE);
}

static __always_inline void emu_cubic_update(struct sock *sk, struct emu_cubic_ca *ca,
					     __u32 cwnd, __u32 acked)
{
	__u32 now = emu_now_us(sk);
	__u32 target, t, delta;

	ca->ack_cnt += acked;
	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= 1000000 / 32)
		return;
	/* The curve is evaluated at most once per millisecond. */
	if (!(ca->epoch_start && (__s32)(now - ca->last_time) < 1000)) {
		ca->last_cwnd = cwnd;
		ca->last_time = now;
		if (!ca->epoch_start) {
			ca->epoch_start = now;
			ca->ack_cnt = acked;
			ca->tcp_cwnd = cwnd;
			if (ca->last_max_cwnd <= cwnd) {
				ca->k = 0;
				ca->origin = cwnd;
			} else {
				ca->k = emu_cubic_k(ca->last_max_cwnd, cwnd, ca->bic_scale);
				ca->origin = ca->last_max_cwnd;
			}
		}
		/* Evaluate one RTT (delay_min) ahead, as RFC 9438 does. */
		t = (__u32)((((__u64)(now - ca->epoch_start) + ca->delay_min)
			     << EMU_CUBIC_HZ_SHIFT) / 1000000);
		target = emu_cubic_target(ca->origin, ca->k, t, ca->bic_scale);
		if (target > cwnd)
			ca->cnt = cwnd / (target - cwnd);
		else
			ca->cnt = 100 * cwnd;
		if (ca->last_max_cwnd == 0 && ca->cnt > 20)
			ca->cnt = 20;
	}
	/* Reno-friendly region. */
	if (ca->options & EMU_CUBIC_FRIENDLY) {
		delta = (cwnd * emu_cubic_friendly_scale(ca->beta)) >> 3;
		if (delta && ca->ack_cnt > delta) {
			__u32 n = (ca->ack_cnt - 1) / delta;

			ca->ack_cnt -= n * delta;
			ca->tcp_cwnd += n;
		}
		if (ca->tcp_cwnd > cwnd) {
			__u32 max_cnt = cwnd / (ca->tcp_cwnd - cwnd);

			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}
	ca->cnt = EMU_MAX(ca->cnt, 2U);
}

SEC("struct_ops/emu_cubic_sce_cong_avoid")
void BPF_PROG(emu_cubic_sce_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			goto out;
	}
	emu_cubic_update(sk, ca, tp->snd_cwnd, acked);
	tcp_cong_avoid_ai(tp, ca->cnt, acked);
out:
	ca->sqrt_cnt = emu_sce_sqrt_cwnd(tp->snd_cwnd);
}

SEC("struct_ops/emu_cubic_sce_ssthresh")
__u32 BPF_PROG(emu_cubic_sce_ssthresh, struct sock *sk)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	__u32 cwnd = tcp_sk(sk)->snd_cwnd;

	ca->epoch_start = 0;
	ca->last_max_cwnd = emu_cubic_last_max(cwnd, ca->last_max_cwnd, ca->beta,
					       ca->options & EMU_CUBIC_FAST_CONVERGENCE);
	return emu_cubic_ssthresh(cwnd, ca->beta, ca->recent_sce);
}

SEC("struct_ops/emu_cubic_sce_set_state")
void BPF_PROG(emu_cubic_sce_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		emu_cubic_reset(ca);
		emu_hystart_reset(sk, ca);
	}
}

SEC("struct_ops/emu_cubic_sce_cwnd_event")
void BPF_PROG(emu_cubic_sce_cwnd_event, struct sock *sk, int ev)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);

	emu_sce_echo(sk, ev);
	if (ev == CA_EVENT_TX_START) {
		__u32 now = emu_now_us(sk);
		__s32 idle = (__s32)(now - ca->last_ack_time);

		/* Idle for a while: shift the epoch so the curve resumes
		 * where it stopped. */
		if (ca->epoch_start && idle > 0) {
			ca->epoch_start += idle;
			if ((__s32)(ca->epoch_start - now) > 0)
				ca->epoch_start = now;
		}
	}
}

static __always_inline void emu_hystart_update(struct sock *sk, struct emu_cubic_ca *ca,
					       __u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 now = emu_now_us(sk);

	if ((__s32)(tp->snd_una - ca->end_seq) > 0)
		emu_hystart_reset(sk, ca);
	if (tp->snd_cwnd < ca->hystart_low_window)
		return;
	/* ACK train: the ACKs of one round keep arriving closely spaced for
	 * longer than half the minimum RTT. */
	if ((ca->options & EMU_CUBIC_HYSTART_TRAIN) &&
	    (__s32)(now - ca->last_ack) <= (__s32)ca->hystart_ack_delta) {
		__u32 threshold = ca->delay_min;
		__u64 rate = sk->sk_pacing_rate;

		ca->last_ack = now;
		if (rate)
			threshold += (__u32)EMU_MIN(1000ULL, (65536ULL * 4 * 1000000) / rate);
		if (sk->sk_pacing_status == SK_PACING_NONE)
			threshold >>= 1;
		if ((__s32)(now - ca->round_start) > (__s32)threshold) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
			return;
		}
	}
	/* Delay increase: the round's minimum RTT exceeds the path's by
	 * an eighth of it (clamped to 4..16 ms). */
	if (!(ca->options & EMU_CUBIC_HYSTART_DELAY))
		return;
	if (ca->curr_rtt > delay)
		ca->curr_rtt = delay;
	if (ca->sample_cnt < EMU_HYSTART_MIN_SAMPLES) {
		ca->sample_cnt++;
	} else {
		__u32 th = ca->delay_min >> 3;

		th = EMU_MIN(EMU_MAX(th, EMU_HYSTART_DELAY_MIN_US), EMU_HYSTART_DELAY_MAX_US);
		if (ca->curr_rtt > ca->delay_min + th) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
		}
	}
}

SEC("struct_ops/emu_cubic_sce_pkts_acked")
void BPF_PROG(emu_cubic_sce_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__s32 rtt = sample->rtt_us;
	__u32 delay;

	if (rtt < 0)
		return;
	/* Skip samples for a second after a reduction. */
	if (ca->epoch_start && (__s32)(emu_now_us(sk) - ca->epoch_start) < 1000000)
		return;
	delay = rtt ? (__u32)rtt : 1;
	if (!ca->delay_min || ca->delay_min > delay)
		ca->delay_min = delay;
	if ((ca->options & EMU_CUBIC_HYSTART) && !ca->found && emu_in_slow_start(tp))
		emu_hystart_update(sk, ca, delay);
}

SEC("struct_ops/emu_cubic_sce_in_ack_event")
void BPF_PROG(emu_cubic_sce_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_cubic_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 mss = tp->mss_cache ? tp->mss_cache : 1;
	__u32 acked = tp->snd_una - ca->prior_snd_una;
	__u32 now = emu_now_us(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 sce, segs;

	if (!acked && !(flags & CA_ACK_WIN_UPDATE))
		acked = mss;
	if (!acked)
		return;
	ca->prior_snd_una = tp->snd_una;
	ca->last_ack_time = now;
	sce = emu_sce_bytes(sk, &ca->last_esce, acked);
	if (sce) {
		segs = (sce + ca->sce_carry) / mss;
		ca->sce_carry = (sce + ca->sce_carry) - segs * mss;
		if (!ca->epoch_start) {
			/* No curve yet (slow start): just leave slow start. */
			tp->snd_ssthresh = EMU_MAX(cwnd >> 1, 2U);
		} else {
			__u32 t = (__u32)(((__u64)(now - ca->epoch_start) << EMU_CUBIC_HZ_SHIFT) /
					  1000000);
			__s64 steps;

			if (segs) {
				__u32 k = ca->k, origin = ca->origin;
				__u32 adv = emu_cubic_sce_pull(t, &k, &origin, segs, ca->sqrt_cnt,
							       ca->bic_scale);

				ca->k = k;
				ca->origin = origin;
				ca->epoch_start += (__u32)(((__u64)adv * 1000000) >> EMU_CUBIC_HZ_SHIFT);
				if (!ca->epoch_start)
					ca->epoch_start = 1;
			}
			/* A whole window of SCE feedback costs sqrt(cwnd)
			 * segments, taken from the window and the origin. */
			ca->sce_cnt -= (__s64)sce * ca->sqrt_cnt;
			ca->recent_sce = cwnd + 1;
			steps = emu_window_steps(&ca->sce_cnt, (__u64)mss * cwnd);
			if (steps < 0) {
				__u32 n = (__u32)(-steps);

				cwnd = cwnd > n + 2 ? cwnd - n : 2;
				ca->origin = ca->origin > n ? ca->origin - n : 0;
				/* The Reno-friendly estimate loses the same,
				 * or it would soon drive the window back up. */
				ca->tcp_cwnd = ca->tcp_cwnd > n ? ca->tcp_cwnd - n : 0;
				tp->snd_cwnd = cwnd;
			}
			tp->snd_ssthresh = EMU_MAX(cwnd >> 1, 2U);
		}
	}
	ca->sqrt_cnt = emu_sce_sqrt_cwnd(cwnd);
	if (ca->recent_sce)
		ca->recent_sce--;
}

SEC("struct_ops/emu_cubic_sce_undo_cwnd")
__u32 BPF_PROG(emu_cubic_sce_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_cubic_sce = {
	.init = (void *)emu_cubic_sce_init,
	.ssthresh = (void *)emu_cubic_sce_ssthresh,
	.cong_avoid = (void *)emu_cubic_sce_cong_avoid,
	.set_state = (void *)emu_cubic_sce_set_state,
	.cwnd_event = (void *)emu_cubic_sce_cwnd_event,
	.pkts_acked = (void *)emu_cubic_sce_pkts_acked,
	.in_ack_event = (void *)emu_cubic_sce_in_ack_event,
	.undo_cwnd = (void *)emu_cubic_sce_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "cubic_sce",
};

/* ---- TCP Vegas ------------------------------------------------------------- */

/* Slots of its emu_cc_params entry: the module's parameters. */
#define EMU_VEGAS_P_ALPHA 0
#define EMU_VEGAS_P_BETA 1
#define EMU_VEGAS_P_GAMMA 2

struct emu_vegas_ca {
	__u32 beg_snd_nxt;	/* the round ends when this is acknowledged */
	__u32 base_rtt;		/* smallest RTT seen, us + 1 */
	__u32 min_rtt;		/* smallest RTT of this round, us + 1 */
	__u32 cnt_rtt;		/* RTT samples this round */
	__u32 alpha;
	__u32 beta;
	__u32 gamma;
	__u8 doing_vegas_now;	/* 0: Reno until the next Open state */
	__u8 pad[3];
};
_Static_assert(sizeof(struct emu_vegas_ca) <= 104, "icsk_ca_priv");

/* Starts taking samples afresh: a round's decision needs a round of ACKs
 * for data sent after now. */
static __always_inline void emu_vegas_enable(struct sock *sk, struct emu_vegas_ca *ca)
{
	ca->doing_vegas_now = 1;
	ca->beg_snd_nxt = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->min_rtt = EMU_VEGAS_NO_RTT;
}

static __always_inline void emu_vegas_restart(struct sock *sk, struct emu_vegas_ca *ca)
{
	ca->base_rtt = EMU_VEGAS_NO_RTT;
	emu_vegas_enable(sk, ca);
}

SEC("struct_ops/emu_vegas_init")
void BPF_PROG(emu_vegas_init, struct sock *sk)
{
	struct emu_vegas_ca *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_VEGAS);

	ca->alpha = p ? p->value[EMU_VEGAS_P_ALPHA] : EMU_VEGAS_ALPHA;
	ca->beta = p ? p->value[EMU_VEGAS_P_BETA] : EMU_VEGAS_BETA;
	ca->gamma = p ? p->value[EMU_VEGAS_P_GAMMA] : EMU_VEGAS_GAMMA;
	emu_vegas_restart(sk, ca);
}

SEC("struct_ops/emu_vegas_pkts_acked")
void BPF_PROG(emu_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_vegas_ca *ca = inet_csk_ca(sk);
	__s32 rtt = sample->rtt_us;
	__u32 v;

	if (rtt < 0)
		return;
	v = emu_vegas_sample((__u32)rtt);
	ca->base_rtt = EMU_MIN(ca->base_rtt, v);
	ca->min_rtt = EMU_MIN(ca->min_rtt, v);
	ca->cnt_rtt++;
}

SEC("struct_ops/emu_vegas_set_state")
void BPF_PROG(emu_vegas_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_vegas_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open)
		emu_vegas_enable(sk, ca);
	else
		ca->doing_vegas_now = 0;
}

SEC("struct_ops/emu_vegas_cwnd_event")
void BPF_PROG(emu_vegas_cwnd_event, struct sock *sk, int ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		emu_vegas_restart(sk, inet_csk_ca(sk));
}

SEC("struct_ops/emu_vegas_cong_avoid")
void BPF_PROG(emu_vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_vegas_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_vegas_window w;

	if (!ca->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!emu_before(ca->beg_snd_nxt, ack)) {
		/* Within the round: Reno's slow start, no change after it. */
		if (emu_in_slow_start(tp))
			tcp_slow_start(tp, acked);
		return;
	}
	/* The round is over: decide once for it. */
	ca->beg_snd_nxt = tp->snd_nxt;
	if (ca->cnt_rtt <= 2) {
		/* Two samples or fewer are likely delayed ACKs: Reno. */
		tcp_reno_cong_avoid(sk, ack, acked);
	} else {
		w.cwnd = tp->snd_cwnd;
		w.ssthresh = tp->snd_ssthresh;
		emu_vegas_round(&w, acked, ca->base_rtt, ca->min_rtt, ca->alpha, ca->beta,
				ca->gamma, tp->snd_cwnd_clamp);
		tp->snd_cwnd = w.cwnd;
		tp->snd_ssthresh = w.ssthresh;
	}
	ca->cnt_rtt = 0;
	ca->min_rtt = EMU_VEGAS_NO_RTT;
}

/* Loss and its undoing: Reno's. */
SEC("struct_ops/emu_vegas_ssthresh")
__u32 BPF_PROG(emu_vegas_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/emu_vegas_undo_cwnd")
__u32 BPF_PROG(emu_vegas_undo_cwnd, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_vegas = {
	.init = (void *)emu_vegas_init,
	.ssthresh = (void *)emu_vegas_ssthresh,
	.undo_cwnd = (void *)emu_vegas_undo_cwnd,
	.cong_avoid = (void *)emu_vegas_cong_avoid,
	.pkts_acked = (void *)emu_vegas_pkts_acked,
	.set_state = (void *)emu_vegas_set_state,
	.cwnd_event = (void *)emu_vegas_cwnd_event,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "vegas",
};
