// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_illinois "illinois": TCP Illinois as Linux 4.19's
 * net/ipv4/tcp_illinois.c, for kernels built without it. Included by
 * endpoints.bpf.c; its arithmetic is in arith/illinois.h. */

/* Slots of its emu_cc_params entry: the module's parameters. */
#define EMU_ILLINOIS_P_WIN_THRESH 0
#define EMU_ILLINOIS_P_THETA 1

struct emu_illinois_ca {
	__u64 sum_rtt;		/* RTT samples of this round, us */
	__u32 cnt_rtt;		/* how many (16 bits, as the module) */
	__u32 base_rtt;		/* the least ever, us */
	__u32 max_rtt;		/* the most ever, us */
	__u32 end_seq;		/* the round ends when this is acknowledged */
	struct emu_illinois_alpha a;
	__u32 beta;
	__u32 acked;		/* segments the last ACK acknowledged */
	__u32 win_thresh;
	__u32 theta;
};
_Static_assert(sizeof(struct emu_illinois_ca) <= 104, "icsk_ca_priv");

static __always_inline void emu_illinois_rtt_reset(struct sock *sk, struct emu_illinois_ca *ca)
{
	ca->end_seq = tcp_sk(sk)->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

SEC("struct_ops/emu_illinois_init")
void BPF_PROG(emu_illinois_init, struct sock *sk)
{
	struct emu_illinois_ca *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_ILLINOIS);

	ca->win_thresh = emu_setting(p, EMU_ILLINOIS_P_WIN_THRESH, 15);
	ca->theta = emu_setting(p, EMU_ILLINOIS_P_THETA, 5);
	ca->a.alpha = EMU_ILLINOIS_ALPHA_MAX;
	ca->beta = EMU_ILLINOIS_BETA_BASE;
	ca->base_rtt = 0x7fffffff;
	ca->max_rtt = 0;
	ca->acked = 0;
	ca->a.rtt_low = 0;
	ca->a.rtt_above = 0;
	emu_illinois_rtt_reset(sk, ca);
}

SEC("struct_ops/emu_illinois_pkts_acked")
void BPF_PROG(emu_illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_illinois_ca *ca = inet_csk_ca(sk);
	__s32 rtt_us = sample->rtt_us;
	__u32 rtt;

	ca->acked = sample->pkts_acked & 0xffff;
	if (rtt_us < 0)
		return;
	/* Bounded, so that alpha's arithmetic cannot wrap. */
	rtt = EMU_MIN((__u32)rtt_us, EMU_ILLINOIS_RTT_MAX);
	ca->base_rtt = EMU_MIN(ca->base_rtt, rtt);
	ca->max_rtt = EMU_MAX(ca->max_rtt, rtt);
	ca->cnt_rtt = (ca->cnt_rtt + 1) & 0xffff;
	ca->sum_rtt += rtt;
}

/* Once a round: alpha and beta from the round's delays (Reno's below
 * win_thresh), and a fresh round. */
static __always_inline void emu_illinois_update(struct sock *sk, struct emu_illinois_ca *ca)
{
	if (tcp_sk(sk)->snd_cwnd < ca->win_thresh) {
		ca->a.alpha = EMU_ILLINOIS_ALPHA_BASE;
		ca->beta = EMU_ILLINOIS_BETA_BASE;
	} else if (ca->cnt_rtt > 0) {
		__u32 dm = ca->max_rtt - ca->base_rtt;
		__u32 da = emu_illinois_avg_delay(ca->sum_rtt, ca->cnt_rtt, ca->base_rtt);

		ca->a.alpha = emu_illinois_alpha(&ca->a, da, dm, ca->theta);
		ca->beta = emu_illinois_beta(da, dm);
	}
	emu_illinois_rtt_reset(sk, ca);
}

SEC("struct_ops/emu_illinois_set_state")
void BPF_PROG(emu_illinois_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_illinois_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->a.alpha = EMU_ILLINOIS_ALPHA_BASE;
		ca->beta = EMU_ILLINOIS_BETA_BASE;
		ca->a.rtt_low = 0;
		ca->a.rtt_above = 0;
		emu_illinois_rtt_reset(sk, ca);
	}
}

SEC("struct_ops/emu_illinois_cong_avoid")
void BPF_PROG(emu_illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_illinois_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd, cnt;

	if (emu_before(ca->end_seq, ack))
		emu_illinois_update(sk, ca);
	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	cwnd = tp->snd_cwnd;
	cnt = tp->snd_cwnd_cnt;
	emu_illinois_grow(&cwnd, &cnt, ca->acked, ca->a.alpha, tp->snd_cwnd_clamp);
	ca->acked = 1;
	tp->snd_cwnd = cwnd;
	tp->snd_cwnd_cnt = cnt;
}

SEC("struct_ops/emu_illinois_ssthresh")
__u32 BPF_PROG(emu_illinois_ssthresh, struct sock *sk)
{
	struct emu_illinois_ca *ca = inet_csk_ca(sk);

	return emu_illinois_after_loss(tcp_sk(sk)->snd_cwnd, ca->beta);
}

EMU_LINUX_RENO_UNDO(emu_illinois)

/* Its operations, registered under `ops_name`. */
#define EMU_ILLINOIS_OPS(ops_name) {                   \
	.init = (void *)emu_illinois_init,             \
	.ssthresh = (void *)emu_illinois_ssthresh,     \
	.undo_cwnd = (void *)emu_illinois_undo_cwnd,   \
	.cong_avoid = (void *)emu_illinois_cong_avoid, \
	.set_state = (void *)emu_illinois_set_state,   \
	.pkts_acked = (void *)emu_illinois_pkts_acked, \
	.flags = TCP_CONG_NON_RESTRICTED,              \
	.name = ops_name,                              \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_illinois = EMU_ILLINOIS_OPS("illinois");

/* The same as "illinois_emu" (cc = "illinois-emu"): where the kernel has its own
 * illinois, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_illinois_e = EMU_ILLINOIS_OPS("illinois_emu");
