// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_westwood "westwood": TCP Westwood+ as Linux 4.19's
 * net/ipv4/tcp_westwood.c, for kernels built without it. Included by
 * endpoints.bpf.c; its arithmetic is in arith/westwood.h. */

_Static_assert(sizeof(struct emu_westwood) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_westwood_init")
void BPF_PROG(emu_westwood_init, struct sock *sk)
{
	emu_westwood_start(inet_csk_ca(sk), emu_jiffies(sk), tcp_sk(sk)->snd_una);
}

SEC("struct_ops/emu_westwood_pkts_acked")
void BPF_PROG(emu_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = emu_usecs_to_ms((__u32)sample->rtt_us);
}

SEC("struct_ops/emu_westwood_in_ack_event")
void BPF_PROG(emu_westwood_in_ack_event, struct sock *sk, __u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	emu_westwood_ack(inet_csk_ca(sk), emu_jiffies(sk), tp->snd_una, tp->mss_cache,
			 flags & CA_ACK_SLOWPATH);
}

SEC("struct_ops/emu_westwood_cwnd_event")
void BPF_PROG(emu_westwood_cwnd_event, struct sock *sk, int ev)
{
	struct emu_westwood *w = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ev == CA_EVENT_COMPLETE_CWR) {
		/* A reduction ends at the window the estimate supports. */
		tp->snd_ssthresh = emu_westwood_bw_rttmin(w, tp->mss_cache);
		tp->snd_cwnd = tp->snd_ssthresh;
	} else if (ev == CA_EVENT_LOSS) {
		tp->snd_ssthresh = emu_westwood_bw_rttmin(w, tp->mss_cache);
		/* The least RTT starts again with the next ACK's. */
		w->reset_rtt_min = 1;
	}
}

/* Growth and the threshold at a loss (before its events): Reno's. */
SEC("struct_ops/emu_westwood_cong_avoid")
void BPF_PROG(emu_westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/emu_westwood_ssthresh")
__u32 BPF_PROG(emu_westwood_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

EMU_LINUX_RENO_UNDO(emu_westwood)

/* Its operations, registered under `ops_name`. */
#define EMU_WESTWOOD_OPS(ops_name) {                       \
	.init = (void *)emu_westwood_init,                 \
	.ssthresh = (void *)emu_westwood_ssthresh,         \
	.undo_cwnd = (void *)emu_westwood_undo_cwnd,       \
	.cong_avoid = (void *)emu_westwood_cong_avoid,     \
	.cwnd_event = (void *)emu_westwood_cwnd_event,     \
	.in_ack_event = (void *)emu_westwood_in_ack_event, \
	.pkts_acked = (void *)emu_westwood_pkts_acked,     \
	.flags = TCP_CONG_NON_RESTRICTED,                  \
	.name = ops_name,                                  \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_westwood = EMU_WESTWOOD_OPS("westwood");

/* The same as "westwood_emu" (cc = "westwood-emu"): where the kernel has its own
 * westwood, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_westwood_e = EMU_WESTWOOD_OPS("westwood_emu");
