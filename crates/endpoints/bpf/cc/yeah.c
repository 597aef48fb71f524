// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_yeah "yeah": YeAH-TCP as Linux 4.19's net/ipv4/tcp_yeah.c (with the
 * pieces of its tcp_vegas.c it uses, from vegas.c), for kernels built
 * without it. Included by endpoints.bpf.c after vegas.c; its arithmetic
 * is in arith/yeah.h. */

struct emu_yeah_ca {
	/* tcp_vegas.c's state, which YeAH uses: vegas.c's (its alpha, beta
	 * and gamma unused here). */
	struct emu_vegas_ca vegas;
	struct emu_yeah y;
	__u32 pkts_acked;	/* segments the last ACK acknowledged */
};
_Static_assert(sizeof(struct emu_yeah_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_yeah_init")
void BPF_PROG(emu_yeah_init, struct sock *sk)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);

	emu_vegas_restart(sk, &ca->vegas);
	ca->y.doing_reno_now = 0;
	ca->y.last_q = 0;
	ca->y.reno_count = 2;
}

SEC("struct_ops/emu_yeah_pkts_acked")
void BPF_PROG(emu_yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);
	__u32 vrtt;

	if (emu_ca_state(sk) == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;
	if (sample->rtt_us < 0)
		return;
	vrtt = emu_vegas_sample((__u32)sample->rtt_us);
	ca->vegas.base_rtt = EMU_MIN(ca->vegas.base_rtt, vrtt);
	ca->vegas.min_rtt = EMU_MIN(ca->vegas.min_rtt, vrtt);
	ca->vegas.cnt_rtt++;
}

SEC("struct_ops/emu_yeah_set_state")
void BPF_PROG(emu_yeah_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open)
		emu_vegas_enable(sk, &ca->vegas);
	else
		ca->vegas.doing_vegas_now = 0;
}

SEC("struct_ops/emu_yeah_cwnd_event")
void BPF_PROG(emu_yeah_cwnd_event, struct sock *sk, int ev)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		emu_vegas_restart(sk, &ca->vegas);
}

SEC("struct_ops/emu_yeah_cong_avoid")
void BPF_PROG(emu_yeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_yeah_window w;
	__u32 cwnd, cnt;

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else if (!ca->y.doing_reno_now) {
		cwnd = tp->snd_cwnd;
		cnt = tp->snd_cwnd_cnt;
		emu_yeah_scalable(&cwnd, &cnt, ca->pkts_acked,
				  EMU_MIN(tp->snd_cwnd_clamp, EMU_YEAH_CLAMP));
		tp->snd_cwnd = cwnd;
		tp->snd_cwnd_cnt = cnt;
		ca->pkts_acked = 1;
	} else {
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, 1);
	}
	if (!emu_before(ca->vegas.beg_snd_nxt, ack))
		return;
	/* A round is over: with three samples or more (fewer are likely
	 * delayed ACKs), decide for it. */
	if (ca->vegas.cnt_rtt > 2) {
		w.cwnd = tp->snd_cwnd;
		w.ssthresh = tp->snd_ssthresh;
		emu_yeah_round(&ca->y, &w, ca->vegas.min_rtt, ca->vegas.base_rtt);
		tp->snd_cwnd = w.cwnd;
		tp->snd_ssthresh = w.ssthresh;
	}
	ca->vegas.beg_snd_nxt = tp->snd_nxt;
	ca->vegas.cnt_rtt = 0;
	ca->vegas.min_rtt = EMU_VEGAS_NO_RTT;
}

SEC("struct_ops/emu_yeah_ssthresh")
__u32 BPF_PROG(emu_yeah_ssthresh, struct sock *sk)
{
	struct emu_yeah_ca *ca = inet_csk_ca(sk);

	return emu_yeah_after_loss(&ca->y, tcp_sk(sk)->snd_cwnd);
}

EMU_LINUX_RENO_UNDO(emu_yeah)

/* Its operations, registered under `ops_name`. */
#define EMU_YEAH_OPS(ops_name) {                   \
	.init = (void *)emu_yeah_init,             \
	.ssthresh = (void *)emu_yeah_ssthresh,     \
	.undo_cwnd = (void *)emu_yeah_undo_cwnd,   \
	.cong_avoid = (void *)emu_yeah_cong_avoid, \
	.set_state = (void *)emu_yeah_set_state,   \
	.cwnd_event = (void *)emu_yeah_cwnd_event, \
	.pkts_acked = (void *)emu_yeah_pkts_acked, \
	.flags = TCP_CONG_NON_RESTRICTED,          \
	.name = ops_name,                          \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_yeah = EMU_YEAH_OPS("yeah");

/* The same as "yeah_emu" (cc = "yeah-emu"): where the kernel has its own
 * yeah, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_yeah_e = EMU_YEAH_OPS("yeah_emu");
