// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_dctcp_sce "dctcp-sce": DCTCP's proportional response to SCE, over Reno and the SCE window counter.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

struct emu_dctcp_sce_ca {
	struct emu_sce_window w;
};
_Static_assert(sizeof(struct emu_dctcp_sce_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_dctcp_sce_init")
void BPF_PROG(emu_dctcp_sce_init, struct sock *sk)
{
	struct emu_dctcp_sce_ca *ca = inet_csk_ca(sk);

	emu_sce_window_init(sk, &ca->w, EMU_CC_DCTCP_SCE);
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
