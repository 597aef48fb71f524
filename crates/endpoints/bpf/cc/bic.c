// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_bic "bic": BIC TCP as Linux 4.19's net/ipv4/tcp_bic.c, for kernels
 * built without it. Included by endpoints.bpf.c; its arithmetic is in
 * arith/bic.h. */

/* Slots of its emu_cc_params entry: the module's parameters. */
#define EMU_BIC_P_FAST_CONVERGENCE 0
#define EMU_BIC_P_MAX_INCREMENT 1
#define EMU_BIC_P_LOW_WINDOW 2
#define EMU_BIC_P_BETA 3
#define EMU_BIC_P_INITIAL_SSTHRESH 4
#define EMU_BIC_P_SMOOTH_PART 5

_Static_assert(sizeof(struct emu_bic) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_bic_init")
void BPF_PROG(emu_bic_init, struct sock *sk)
{
	struct emu_bic *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_BIC);
	__u32 initial_ssthresh = emu_setting(p, EMU_BIC_P_INITIAL_SSTHRESH, 0);

	ca->fast_convergence = emu_setting(p, EMU_BIC_P_FAST_CONVERGENCE, 1);
	ca->max_increment = emu_setting(p, EMU_BIC_P_MAX_INCREMENT, 16);
	ca->low_window = emu_setting(p, EMU_BIC_P_LOW_WINDOW, 14);
	ca->beta = emu_setting(p, EMU_BIC_P_BETA, 819);
	ca->smooth_part = emu_setting(p, EMU_BIC_P_SMOOTH_PART, 20);
	emu_bic_reset(ca);
	if (initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

SEC("struct_ops/emu_bic_cong_avoid")
void BPF_PROG(emu_bic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_bic *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (!emu_is_cwnd_limited(sk))
		return;
	if (emu_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else {
		emu_bic_update(ca, tp->snd_cwnd, emu_jiffies(sk));
		tcp_cong_avoid_ai(tp, ca->cnt, 1);
	}
}

SEC("struct_ops/emu_bic_ssthresh")
__u32 BPF_PROG(emu_bic_ssthresh, struct sock *sk)
{
	return emu_bic_after_loss(inet_csk_ca(sk), tcp_sk(sk)->snd_cwnd);
}

/* A timeout forgets the search. */
SEC("struct_ops/emu_bic_set_state")
void BPF_PROG(emu_bic_set_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		emu_bic_reset(inet_csk_ca(sk));
}

SEC("struct_ops/emu_bic_pkts_acked")
void BPF_PROG(emu_bic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	if (emu_ca_state(sk) == TCP_CA_Open)
		emu_bic_acked(inet_csk_ca(sk), sample->pkts_acked);
}

EMU_LINUX_RENO_UNDO(emu_bic)

/* Its operations, registered under `ops_name`. */
#define EMU_BIC_OPS(ops_name) {                   \
	.init = (void *)emu_bic_init,             \
	.ssthresh = (void *)emu_bic_ssthresh,     \
	.undo_cwnd = (void *)emu_bic_undo_cwnd,   \
	.cong_avoid = (void *)emu_bic_cong_avoid, \
	.set_state = (void *)emu_bic_set_state,   \
	.pkts_acked = (void *)emu_bic_pkts_acked, \
	.flags = TCP_CONG_NON_RESTRICTED,         \
	.name = ops_name,                         \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_bic = EMU_BIC_OPS("bic");

/* The same as "bic_emu" (cc = "bic-emu"): where the kernel has its own
 * bic, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_bic_e = EMU_BIC_OPS("bic_emu");
