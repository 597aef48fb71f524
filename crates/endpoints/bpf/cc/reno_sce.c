// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_reno_sce "reno-sce": Reno with the SCE response, over the SCE window counter (sce_window.h).
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

struct emu_reno_sce_ca {
	struct emu_sce_window w;
	__u32 sqrt_cwnd;	/* kept by the counter's steps (emu_reno_sce_sqrt_stepped) */
};
_Static_assert(sizeof(struct emu_reno_sce_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_reno_sce_init")
void BPF_PROG(emu_reno_sce_init, struct sock *sk)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	ca->sqrt_cwnd = 1;
	emu_sce_window_init(sk, &ca->w, EMU_CC_RENO_SCE);
}

/* The kernel asks on ECE (entering CWR, which PRR then takes to this
 * target), on fast retransmit and on RTO: half the recorded window. */
SEC("struct_ops/emu_reno_sce_ssthresh")
__u32 BPF_PROG(emu_reno_sce_ssthresh, struct sock *sk)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);

	return emu_reno_sce_threshold(ca->w.loss_cwnd);
}

/* Runs before the kernel's own ECE handling on the same ACK, so the CWR
 * it enters reads the window recorded here. */
SEC("struct_ops/emu_reno_sce_in_ack_event")
void BPF_PROG(emu_reno_sce_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_reno_sce_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 acked, sce;

	acked = emu_sce_window_acked(sk, &ca->w, flags, &sce);
	if (!acked)
		return;
	if (emu_reno_sce_marked(&ca->w.cnt, &ca->w.loss_cwnd, &ca->w.recent_sce, cwnd, acked, sce,
				(flags & CA_ACK_ECE) != 0, ca->sqrt_cwnd))
		tp->snd_ssthresh = emu_reno_sce_threshold(ca->w.loss_cwnd);
	else
		emu_sce_window_grow(sk, &ca->w, acked, cwnd);
	ca->sqrt_cwnd = emu_reno_sce_sqrt_stepped(ca->sqrt_cwnd, cwnd, emu_sce_window_step(sk, &ca->w));
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
		/* RTO: a halving (the kernel then sets the window to what is in
		 * flight plus one), and the term brought under its root. */
		struct tcp_sock *tp = tcp_sk(sk);

		ca->w.loss_cwnd = tp->snd_cwnd;
		ca->w.cnt = 0;
		tp->snd_cwnd = emu_dctcp_sce_cut(tp->snd_cwnd, 1);
		ca->sqrt_cwnd = emu_reno_sce_sqrt_after_loss(ca->sqrt_cwnd, tp->snd_cwnd);
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
