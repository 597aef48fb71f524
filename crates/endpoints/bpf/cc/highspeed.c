// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_highspeed "highspeed": HighSpeed TCP (RFC 3649) as Linux 4.19's
 * net/ipv4/tcp_highspeed.c, for kernels built without it. Included by
 * endpoints.bpf.c; its arithmetic is in arith/highspeed.h. */

struct emu_hstcp_ca {
	__u32 row;	/* the table's row for the window: a(w) - 1 */
};

SEC("struct_ops/emu_hstcp_init")
void BPF_PROG(emu_hstcp_init, struct sock *sk)
{
	struct emu_hstcp_ca *ca = inet_csk_ca(sk);

	ca->row = 0;
}

SEC("struct_ops/emu_hstcp_cong_avoid")
void BPF_PROG(emu_hstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_hstcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 clamp = EMU_MIN(tp->snd_cwnd_clamp, EMU_HSTCP_CLAMP);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	ca->row = emu_hstcp_row(tp->snd_cwnd);
	/* cwnd += a(w) / cwnd an ACK. */
	if (tp->snd_cwnd < clamp) {
		tp->snd_cwnd_cnt += emu_hstcp_ai(ca->row);
		if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
			tp->snd_cwnd_cnt -= tp->snd_cwnd;
			tp->snd_cwnd++;
		}
	}
}

SEC("struct_ops/emu_hstcp_ssthresh")
__u32 BPF_PROG(emu_hstcp_ssthresh, struct sock *sk)
{
	struct emu_hstcp_ca *ca = inet_csk_ca(sk);

	return emu_hstcp_after_loss(tcp_sk(sk)->snd_cwnd, ca->row);
}

EMU_LINUX_RENO_UNDO(emu_hstcp)

/* Its operations, registered under `ops_name`. */
#define EMU_HIGHSPEED_OPS(ops_name) {               \
	.init = (void *)emu_hstcp_init,             \
	.ssthresh = (void *)emu_hstcp_ssthresh,     \
	.undo_cwnd = (void *)emu_hstcp_undo_cwnd,   \
	.cong_avoid = (void *)emu_hstcp_cong_avoid, \
	.flags = TCP_CONG_NON_RESTRICTED,           \
	.name = ops_name,                           \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_highspeed = EMU_HIGHSPEED_OPS("highspeed");

/* The same as "highspeed_emu" (cc = "highspeed-emu"): where the kernel has its own
 * highspeed, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_highspeed_e = EMU_HIGHSPEED_OPS("highspeed_emu");
