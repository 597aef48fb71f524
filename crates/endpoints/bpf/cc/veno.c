// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_veno "veno": TCP Veno as Linux 4.19's net/ipv4/tcp_veno.c, for
 * kernels built without it. Included by endpoints.bpf.c; its arithmetic
 * is in arith/veno.h. */

struct emu_veno_ca {
	__u32 minrtt;		/* the least RTT of this round, us + 1 */
	__u32 basertt;		/* the least ever, us + 1 */
	__u32 inc;		/* 1: the next full round may grow */
	__u32 diff;		/* segments queued, in 1/2 */
	__u16 cntrtt;		/* RTT samples (never reset, as the module) */
	__u8 doing_veno_now;	/* 0: Reno until the next Open state */
};

static __always_inline void emu_veno_enable(struct emu_veno_ca *ca)
{
	ca->doing_veno_now = 1;
	ca->minrtt = EMU_VENO_NO_RTT;
}

static __always_inline void emu_veno_start(struct emu_veno_ca *ca)
{
	ca->basertt = EMU_VENO_NO_RTT;
	ca->inc = 1;
	emu_veno_enable(ca);
}

SEC("struct_ops/emu_veno_init")
void BPF_PROG(emu_veno_init, struct sock *sk)
{
	emu_veno_start(inet_csk_ca(sk));
}

SEC("struct_ops/emu_veno_pkts_acked")
void BPF_PROG(emu_veno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_veno_ca *ca = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = (__u32)sample->rtt_us + 1;
	ca->basertt = EMU_MIN(ca->basertt, vrtt);
	ca->minrtt = EMU_MIN(ca->minrtt, vrtt);
	ca->cntrtt++;
}

SEC("struct_ops/emu_veno_set_state")
void BPF_PROG(emu_veno_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_veno_ca *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open)
		emu_veno_enable(ca);
	else
		ca->doing_veno_now = 0;
}

SEC("struct_ops/emu_veno_cwnd_event")
void BPF_PROG(emu_veno_cwnd_event, struct sock *sk, int ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		emu_veno_start(inet_csk_ca(sk));
}

SEC("struct_ops/emu_veno_cong_avoid")
void BPF_PROG(emu_veno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_veno_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_veno_window w;

	if (!ca->doing_veno_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!emu_is_cwnd_limited(sk))
		return;
	if (ca->cntrtt <= 2) {
		/* Too few samples to tell: Reno. */
		tcp_reno_cong_avoid(sk, ack, acked);
	} else {
		ca->diff = emu_veno_diff(tp->snd_cwnd, ca->basertt, ca->minrtt);
		if (emu_in_slow_start(tp)) {
			tcp_slow_start(tp, acked);
		} else if (ca->diff < EMU_VENO_BETA) {
			/* Not congested: a segment a round trip. */
			tcp_cong_avoid_ai(tp, tp->snd_cwnd, 1);
		} else {
			w.cwnd = tp->snd_cwnd;
			w.cwnd_cnt = tp->snd_cwnd_cnt;
			w.clamp = tp->snd_cwnd_clamp;
			w.inc = ca->inc;
			emu_veno_congestive(&w);
			tp->snd_cwnd = w.cwnd;
			tp->snd_cwnd_cnt = w.cwnd_cnt;
			ca->inc = w.inc;
		}
		if (tp->snd_cwnd < 2)
			tp->snd_cwnd = 2;
		else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
	}
	/* The next round's least RTT starts afresh. */
	ca->minrtt = EMU_VENO_NO_RTT;
}

SEC("struct_ops/emu_veno_ssthresh")
__u32 BPF_PROG(emu_veno_ssthresh, struct sock *sk)
{
	struct emu_veno_ca *ca = inet_csk_ca(sk);

	return emu_veno_after_loss(tcp_sk(sk)->snd_cwnd, ca->diff);
}

EMU_LINUX_RENO_UNDO(emu_veno)

/* Its operations, registered under `ops_name`. */
#define EMU_VENO_OPS(ops_name) {                   \
	.init = (void *)emu_veno_init,             \
	.ssthresh = (void *)emu_veno_ssthresh,     \
	.undo_cwnd = (void *)emu_veno_undo_cwnd,   \
	.cong_avoid = (void *)emu_veno_cong_avoid, \
	.pkts_acked = (void *)emu_veno_pkts_acked, \
	.set_state = (void *)emu_veno_set_state,   \
	.cwnd_event = (void *)emu_veno_cwnd_event, \
	.flags = TCP_CONG_NON_RESTRICTED,          \
	.name = ops_name,                          \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_veno = EMU_VENO_OPS("veno");

/* The same as "veno_emu" (cc = "veno-emu"): where the kernel has its own
 * veno, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_veno_e = EMU_VENO_OPS("veno_emu");
