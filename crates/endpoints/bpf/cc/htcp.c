// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_htcp "htcp": H-TCP as Linux 4.19's net/ipv4/tcp_htcp.c, for kernels
 * built without it. Included by endpoints.bpf.c; its arithmetic is in
 * arith/htcp.h. */

/* Slots of its emu_cc_params entry: the module's parameters. */
#define EMU_HTCP_P_USE_RTT_SCALING 0
#define EMU_HTCP_P_USE_BANDWIDTH_SWITCH 1

_Static_assert(sizeof(struct emu_htcp) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_htcp_init")
void BPF_PROG(emu_htcp_init, struct sock *sk)
{
	struct emu_htcp *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_HTCP);

	ca->use_rtt_scaling = emu_setting(p, EMU_HTCP_P_USE_RTT_SCALING, 1);
	ca->use_bandwidth_switch = emu_setting(p, EMU_HTCP_P_USE_BANDWIDTH_SWITCH, 1);
	emu_htcp_start(ca, emu_jiffies(sk));
}

SEC("struct_ops/emu_htcp_pkts_acked")
void BPF_PROG(emu_htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_htcp *ca = inet_csk_ca(sk);
	__u32 state = emu_ca_state(sk);
	__u32 now = emu_jiffies(sk);

	if (state == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked & 0xffff;
	if (sample->rtt_us > 0)
		emu_htcp_measure_rtt(ca, emu_usecs_to_ms((__u32)sample->rtt_us),
				     state == TCP_CA_Open);
	if (!ca->use_bandwidth_switch)
		return;
	emu_htcp_throughput(ca, sample->pkts_acked, tcp_sk(sk)->snd_cwnd, now,
			    state == TCP_CA_Open || state == TCP_CA_Disorder);
}

SEC("struct_ops/emu_htcp_cong_avoid")
void BPF_PROG(emu_htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_htcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
		return;
	}
	/* cwnd += alpha / cwnd an ACK. */
	if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
		emu_htcp_alpha_update(ca, emu_jiffies(sk));
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}

SEC("struct_ops/emu_htcp_ssthresh")
__u32 BPF_PROG(emu_htcp_ssthresh, struct sock *sk)
{
	return emu_htcp_after_loss(inet_csk_ca(sk), tcp_sk(sk)->snd_cwnd, emu_jiffies(sk));
}

SEC("struct_ops/emu_htcp_set_state")
void BPF_PROG(emu_htcp_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_htcp *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open) {
		/* A congestion event ends: Delta counts from now. */
		if (ca->undo_last_cong) {
			ca->last_cong = emu_jiffies(sk);
			ca->undo_last_cong = 0;
		}
	} else if (new_state == TCP_CA_CWR || new_state == TCP_CA_Recovery ||
		   new_state == TCP_CA_Loss) {
		emu_htcp_reset(ca, emu_jiffies(sk));
	}
}

SEC("struct_ops/emu_htcp_undo_cwnd")
__u32 BPF_PROG(emu_htcp_undo_cwnd, struct sock *sk)
{
	emu_htcp_undo(inet_csk_ca(sk));
	return tcp_reno_undo_cwnd(sk);
}

/* Its operations, registered under `ops_name`. */
#define EMU_HTCP_OPS(ops_name) {                   \
	.init = (void *)emu_htcp_init,             \
	.ssthresh = (void *)emu_htcp_ssthresh,     \
	.undo_cwnd = (void *)emu_htcp_undo_cwnd,   \
	.cong_avoid = (void *)emu_htcp_cong_avoid, \
	.set_state = (void *)emu_htcp_set_state,   \
	.pkts_acked = (void *)emu_htcp_pkts_acked, \
	.flags = TCP_CONG_NON_RESTRICTED,          \
	.name = ops_name,                          \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_htcp = EMU_HTCP_OPS("htcp");

/* The same as "htcp_emu" (cc = "htcp-emu"): where the kernel has its own
 * htcp, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_htcp_e = EMU_HTCP_OPS("htcp_emu");
