// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_prague "prague": TCP Prague (L4S), with the Reno fallback where ECN is not negotiated and the classic-ECN detection.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

/* Its settings (emu_cc_params slots) and their defaults, the reference
 * module's parameters of the same names. */
#define EMU_PRAGUE_P_BURST_SHIFT 0	/* prague_burst_shift */
#define EMU_PRAGUE_P_MAX_TSO_SEGS 1	/* prague_max_tso_segs, 0: no cap */
#define EMU_PRAGUE_P_RTT_SCALING 2	/* prague_rtt_scaling: EMU_PRAGUE_RTT_* */
#define EMU_PRAGUE_P_RTT_TARGET 3	/* prague_rtt_target, us */
#define EMU_PRAGUE_P_RTT_TRANSITION 4	/* prague_rtt_transition, rounds */
#define EMU_PRAGUE_P_ECN_FALLBACK 5	/* prague_ecn_fallback: 0, 1, 2 */
#define EMU_PRAGUE_P_TSO_FLOOR 6	/* bursts at least net.ipv4.tcp_min_tso_segs */
#define EMU_PRAGUE_P_VERSION 7		/* EMU_PRAGUE_V_*: which reference it follows */

/* The versions of the reference module it follows (src/versions.rs names
 * each one's commit): 0.6, with a fractional window, and 0.5 of 2020-04-08,
 * with a carry (cc/prague_05.c). */
#define EMU_PRAGUE_V_06 0
#define EMU_PRAGUE_V_05 1

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
	union {
		__u64 frac_cwnd;	/* window, 2^20 = 1 segment */
		__s64 cwnd_cnt;		/* 0.5: carry, 2^20 = 1 segment */
	};
	union {
		__u64 loss_frac_cwnd;
		__s64 loss_cwnd_cnt;
	};
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
	__u8 version;		/* EMU_PRAGUE_V_* */
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
	ca->version = EMU_PRAGUE_V_06;
	if (p) {
		ca->burst_shift = p->value[EMU_PRAGUE_P_BURST_SHIFT];
		ca->max_tso_segs = p->value[EMU_PRAGUE_P_MAX_TSO_SEGS];
		ca->rtt_scaling = p->value[EMU_PRAGUE_P_RTT_SCALING];
		target = p->value[EMU_PRAGUE_P_RTT_TARGET];
		ca->rtt_transition = p->value[EMU_PRAGUE_P_RTT_TRANSITION];
		ca->ecn_fallback = p->value[EMU_PRAGUE_P_ECN_FALLBACK];
		ca->tso_floor = p->value[EMU_PRAGUE_P_TSO_FLOOR];
		ca->version = p->value[EMU_PRAGUE_P_VERSION] == EMU_PRAGUE_V_05 ? EMU_PRAGUE_V_05
										: EMU_PRAGUE_V_06;
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

/* Whether a CE reduction is due now (with RTT independence, at most one
 * per target RTT), and in *alpha the alpha it takes: no lower than
 * classic-ECN detection says where fallback is on. Both versions'. */
static __always_inline int emu_prague_cwr_alpha(struct sock *sk, struct emu_prague_ca *ca,
						__u64 *alpha)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_prague_classic *c;

	if (emu_prague_rtt_indep(sk, ca) &&
	    tp->tcp_mstamp - ca->cwr_stamp < emu_prague_target(sk, ca))
		return 0;
	ca->cwr_stamp = tp->tcp_mstamp;
	*alpha = ca->upscaled_alpha >> EMU_PRAGUE_SHIFT_G;
	if (ca->ecn_fallback == 1) {
		c = emu_prague_classic_of(sk, ca);
		if (c)
			*alpha = emu_prague_classic_alpha(c->classic_ecn, *alpha);
	}
	return 1;
}

#include "prague_05.c"

SEC("struct_ops/emu_prague_init")
void BPF_PROG(emu_prague_init, struct sock *sk)
{
	struct emu_prague_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->state = TCP_CA_Open;
	ca->version = EMU_PRAGUE_V_06;
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
	/* 0.5 starts its carry empty and sets no pacing rate before the
	 * first ACK; 0.6 paces from the handshake's RTT. */
	if (ca->version == EMU_PRAGUE_V_05)
		ca->cwnd_cnt = 0;
	else if (tp->srtt_us)
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
	if (ca->version == EMU_PRAGUE_V_05)
		emu_prague05_update_cwnd(sk, ca, rs);
	else
		emu_prague_update_cwnd(sk, ca, rs);
	if (!emu_before(tp->snd_una, ca->next_seq) &&
	    (!emu_prague_rtt_indep(sk, ca) ||
	     tp->tcp_mstamp - ca->alpha_stamp >= emu_prague_target(sk, ca)))
		emu_prague_update_alpha(sk, ca);
	if (ca->version == EMU_PRAGUE_V_05)
		emu_prague05_pacing(sk, ca);
	else
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
	__u64 alpha, red;

	if (!emu_prague_cwr_alpha(sk, ca, &alpha))
		return;
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
	} else if (ca->version == EMU_PRAGUE_V_05) {
		emu_prague05_set_state(sk, ca, new_state);
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
		if (ca->version == EMU_PRAGUE_V_05)
			emu_prague05_enter_loss(sk, ca);
		else
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
	if (ca->version == EMU_PRAGUE_V_05)
		return emu_prague05_ssthresh(sk, ca);
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
 * version 0.6 of the reference had it. Prague 0.5's cap (a max_tso_segs
 * hook in its kernel, which 6.18 lacks) comes through here the same way. */
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
	if (ca->version == EMU_PRAGUE_V_05)
		return emu_prague05_undo(sk, ca);
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
