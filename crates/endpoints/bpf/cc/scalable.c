// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_scalable "scalable": Scalable TCP as Linux 4.19's
 * net/ipv4/tcp_scalable.c, for kernels built without it. Included by
 * endpoints.bpf.c; its arithmetic is in arith/scalable.h. */

SEC("struct_ops/emu_scalable_cong_avoid")
void BPF_PROG(emu_scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp))
		tcp_slow_start(tp, acked);
	else
		tcp_cong_avoid_ai(tp, emu_scalable_ai_cnt(tp->snd_cwnd), 1);
}

SEC("struct_ops/emu_scalable_ssthresh")
__u32 BPF_PROG(emu_scalable_ssthresh, struct sock *sk)
{
	return emu_scalable_after_loss(tcp_sk(sk)->snd_cwnd);
}

EMU_LINUX_RENO_UNDO(emu_scalable)

/* Its operations, registered under `ops_name`. */
#define EMU_SCALABLE_OPS(ops_name) {                   \
	.ssthresh = (void *)emu_scalable_ssthresh,     \
	.undo_cwnd = (void *)emu_scalable_undo_cwnd,   \
	.cong_avoid = (void *)emu_scalable_cong_avoid, \
	.flags = TCP_CONG_NON_RESTRICTED,              \
	.name = ops_name,                              \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_scalable = EMU_SCALABLE_OPS("scalable");

/* The same as "scalable_emu" (cc = "scalable-emu"): where the kernel has its own
 * scalable, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_scalable_e = EMU_SCALABLE_OPS("scalable_emu");
