// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_nv "nv": TCP-NV as Linux 4.19's net/ipv4/tcp_nv.c, for kernels built
 * without it. Included by endpoints.bpf.c; its arithmetic is in
 * arith/nv.h. */

/* Slots of its emu_cc_params entry: the module's parameters. */
#define EMU_NV_P_PAD 0
#define EMU_NV_P_RESET_PERIOD 1
#define EMU_NV_P_MIN_CWND 2

_Static_assert(sizeof(struct emu_nv) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_nv_init")
void BPF_PROG(emu_nv_init, struct sock *sk)
{
	struct emu_nv *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_NV);

	ca->pad = emu_setting(p, EMU_NV_P_PAD, EMU_NV_PAD);
	ca->reset_period = emu_setting(p, EMU_NV_P_RESET_PERIOD, EMU_NV_RESET_PERIOD);
	ca->min_cwnd_param = emu_setting(p, EMU_NV_P_MIN_CWND, EMU_NV_MIN_CWND);
	emu_nv_start(ca, tcp_sk(sk)->snd_una, emu_jiffies(sk));
}

SEC("struct_ops/emu_nv_cong_avoid")
void BPF_PROG(emu_nv_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_nv *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk) || !ca->allow_cwnd_growth)
		return;
	if (emu_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	tcp_cong_avoid_ai(tp, emu_nv_ai_cnt(ca, tp->snd_cwnd), acked);
}

SEC("struct_ops/emu_nv_ssthresh")
__u32 BPF_PROG(emu_nv_ssthresh, struct sock *sk)
{
	return emu_nv_after_loss(tcp_sk(sk)->snd_cwnd);
}

SEC("struct_ops/emu_nv_set_state")
void BPF_PROG(emu_nv_set_state, struct sock *sk, __u8 new_state)
{
	emu_nv_state(inet_csk_ca(sk), new_state, tcp_sk(sk)->snd_una);
}

SEC("struct_ops/emu_nv_pkts_acked")
void BPF_PROG(emu_nv_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct emu_nv *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 state = emu_ca_state(sk), bytes_acked;
	struct emu_nv_window w;

	if (sample->rtt_us < 0)
		return;
	if (state != TCP_CA_Open && state != TCP_CA_Disorder)
		return;
	if (ca->catchup && tp->snd_cwnd >= ca->min_cwnd_param) {
		ca->catchup = 0;
		ca->allow_cwnd_growth = 0;
	}
	bytes_acked = tp->snd_una - ca->last_snd_una;
	ca->last_snd_una = tp->snd_una;
	if (sample->in_flight == 0)
		return;
	emu_nv_sample(ca, (__u32)sample->rtt_us, sample->in_flight, emu_jiffies(sk),
		      bpf_get_prandom_u32());
	if (!emu_before(ca->rtt_start_seq, tp->snd_una))
		return;
	w.cwnd = tp->snd_cwnd;
	w.ssthresh = tp->snd_ssthresh;
	w.snd_una = tp->snd_una;
	w.snd_nxt = tp->snd_nxt;
	w.mss = tp->mss_cache;
	emu_nv_round(ca, &w, bytes_acked);
	tp->snd_cwnd = w.cwnd;
	tp->snd_ssthresh = w.ssthresh;
}

EMU_LINUX_RENO_UNDO(emu_nv)

/* Its operations, registered under `ops_name`. */
#define EMU_NV_OPS(ops_name) {                   \
	.init = (void *)emu_nv_init,             \
	.ssthresh = (void *)emu_nv_ssthresh,     \
	.undo_cwnd = (void *)emu_nv_undo_cwnd,   \
	.cong_avoid = (void *)emu_nv_cong_avoid, \
	.set_state = (void *)emu_nv_set_state,   \
	.pkts_acked = (void *)emu_nv_pkts_acked, \
	.flags = TCP_CONG_NON_RESTRICTED,        \
	.name = ops_name,                        \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_nv = EMU_NV_OPS("nv");

/* The same as "nv_emu" (cc = "nv-emu"): where the kernel has its own
 * nv, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_nv_e = EMU_NV_OPS("nv_emu");
