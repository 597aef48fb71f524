// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_hybla "hybla": TCP Hybla as Linux 4.19's net/ipv4/tcp_hybla.c, for
 * kernels built without it. Included by endpoints.bpf.c; its arithmetic
 * is in arith/hybla.h. */

/* Slot of its emu_cc_params entry: the module's parameter. */
#define EMU_HYBLA_P_RTT0 0

struct emu_hybla_ca {
	struct emu_hybla_rho rho;
	__u32 cents;		/* growth below a segment, in 1/128 */
	__u32 minrtt_us;	/* the least srtt_us seen */
	__u32 rtt0_ms;
	__u8 enabled;		/* Open: Hybla; otherwise Reno */
};
_Static_assert(sizeof(struct emu_hybla_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_hybla_init")
void BPF_PROG(emu_hybla_init, struct sock *sk)
{
	struct emu_hybla_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	const struct emu_cc_params *p = emu_cc_params_of(sk, EMU_CC_HYBLA);

	ca->rtt0_ms = emu_setting(p, EMU_HYBLA_P_RTT0, EMU_HYBLA_RTT0_MS);
	ca->cents = 0;
	ca->enabled = 1;
	/* The first rho from the handshake's srtt; the window starts at it. */
	emu_hybla_rho(&ca->rho, tp->srtt_us, ca->rtt0_ms);
	ca->minrtt_us = tp->srtt_us;
	tp->snd_cwnd = EMU_MIN(ca->rho.rho, EMU_HYBLA_CLAMP);
}

SEC("struct_ops/emu_hybla_set_state")
void BPF_PROG(emu_hybla_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_hybla_ca *ca = inet_csk_ca(sk);

	ca->enabled = new_state == TCP_CA_Open;
}

SEC("struct_ops/emu_hybla_cong_avoid")
void BPF_PROG(emu_hybla_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct emu_hybla_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_hybla_window w;

	/* rho follows the least smoothed RTT. */
	if (tp->srtt_us < ca->minrtt_us) {
		emu_hybla_rho(&ca->rho, tp->srtt_us, ca->rtt0_ms);
		ca->minrtt_us = tp->srtt_us;
	}
	if (!emu_is_cwnd_limited(sk))
		return;
	if (!ca->enabled) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (ca->rho.rho == 0)
		emu_hybla_rho(&ca->rho, tp->srtt_us, ca->rtt0_ms);
	w.cwnd = tp->snd_cwnd;
	w.ssthresh = tp->snd_ssthresh;
	w.cwnd_cnt = tp->snd_cwnd_cnt;
	w.cents = ca->cents;
	w.clamp = EMU_MIN(tp->snd_cwnd_clamp, EMU_HYBLA_CLAMP);
	emu_hybla_grow(&w, &ca->rho);
	tp->snd_cwnd = w.cwnd;
	tp->snd_cwnd_cnt = w.cwnd_cnt;
	ca->cents = w.cents;
}

SEC("struct_ops/emu_hybla_ssthresh")
__u32 BPF_PROG(emu_hybla_ssthresh, struct sock *sk)
{
	return tcp_reno_ssthresh(sk);
}

EMU_LINUX_RENO_UNDO(emu_hybla)

/* Its operations, registered under `ops_name`. */
#define EMU_HYBLA_OPS(ops_name) {                   \
	.init = (void *)emu_hybla_init,             \
	.ssthresh = (void *)emu_hybla_ssthresh,     \
	.undo_cwnd = (void *)emu_hybla_undo_cwnd,   \
	.cong_avoid = (void *)emu_hybla_cong_avoid, \
	.set_state = (void *)emu_hybla_set_state,   \
	.flags = TCP_CONG_NON_RESTRICTED,           \
	.name = ops_name,                           \
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_hybla = EMU_HYBLA_OPS("hybla");

/* The same as "hybla_emu" (cc = "hybla-emu"): where the kernel has its own
 * hybla, which then runs under its name, emu's runs beside it, for A/B. */
SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_hybla_e = EMU_HYBLA_OPS("hybla_emu");
