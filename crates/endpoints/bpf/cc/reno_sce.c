// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_reno_sce "reno-sce": Reno with the SCE response, over the SCE window counter (sce_window.h).
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

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
	emu_sce_window_init(sk, &ca->w, EMU_CC_RENO_SCE);
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
