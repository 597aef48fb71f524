// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_vegas "vegas": TCP Vegas as the kernel's tcp_vegas, for kernels built without it.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

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
