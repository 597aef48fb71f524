// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_dctcp "dctcp": DCTCP, RFC 8257 as the kernel's tcp_dctcp: the sender, and the receiver's CE echo.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs. */

struct emu_dctcp_ca {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 next_seq;
	__u32 alpha;
	__u32 loss_cwnd;
	__u8 state;
	__u8 reno;	/* ECN not negotiated: plain Reno */
	__u8 shift_g;
	__u8 clamp_alpha_on_loss;
	struct emu_ce_echo echo;
	/* The 2019 version's round: the bytes acknowledged, those under ECE. */
	__u32 prior_snd_una;
	__u32 bytes_ecn;
	__u32 bytes_total;
	__u8 version;		/* EMU_DCTCP_V_* */
	__u8 pad[3];
};
_Static_assert(sizeof(struct emu_dctcp_ca) <= 104, "icsk_ca_priv");

/* Its settings (emu_cc_params slots), the module's parameters of the same
 * names: dctcp_shift_g (4), dctcp_alpha_on_init (1024, alpha = 1) and
 * dctcp_clamp_alpha_on_loss (0; the module had it until Linux 5.1). */
#define EMU_DCTCP_P_SHIFT_G 0
#define EMU_DCTCP_P_ALPHA_ON_INIT 1
#define EMU_DCTCP_P_CLAMP_ALPHA_ON_LOSS 2
#define EMU_DCTCP_P_VERSION 3

static __always_inline void emu_dctcp_new_round(struct sock *sk, struct emu_dctcp_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
	ca->bytes_ecn = 0;
	ca->bytes_total = 0;
}

SEC("struct_ops/emu_dctcp_init")
void BPF_PROG(emu_dctcp_init, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	const struct emu_cc_params *p;

	ca->reno = !emu_ecn_ok(tcp_sk(sk)) && emu_sk_is_open(sk);
	if (ca->reno && !emu_fallback_to_reno(sk))
		return;
	p = emu_cc_params_of(sk, EMU_CC_DCTCP);
	ca->alpha = emu_dctcp_initial_alpha(p ? p->value[EMU_DCTCP_P_ALPHA_ON_INIT] :
						EMU_DCTCP_ALPHA_ONE);
	ca->shift_g = p ? p->value[EMU_DCTCP_P_SHIFT_G] : EMU_DCTCP_SHIFT_G;
	ca->clamp_alpha_on_loss = p ? p->value[EMU_DCTCP_P_CLAMP_ALPHA_ON_LOSS] : 0;
	ca->version = p && p->value[EMU_DCTCP_P_VERSION] == EMU_DCTCP_V_SCE_2019 ?
			      EMU_DCTCP_V_SCE_2019 :
			      EMU_DCTCP_V_LINUX;
	ca->prior_snd_una = tcp_sk(sk)->snd_una;
	ca->loss_cwnd = 0;
	ca->state = TCP_CA_Open;
	emu_dctcp_new_round(sk, ca);
	emu_ce_echo_init(sk, &ca->echo);
}

SEC("struct_ops/emu_dctcp_ssthresh")
__u32 BPF_PROG(emu_dctcp_ssthresh, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->reno)
		return tcp_reno_ssthresh(sk);
	ca->loss_cwnd = tp->snd_cwnd;
	return emu_dctcp_reduced_cwnd(tp->snd_cwnd, ca->alpha);
}

SEC("struct_ops/emu_dctcp_in_ack_event")
void BPF_PROG(emu_dctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	__u32 acked;

	if (ca->reno)
		return;
	if (ca->version == EMU_DCTCP_V_SCE_2019) {
		acked = emu_sce_acked_bytes(tp->snd_una - ca->prior_snd_una,
					    (flags & CA_ACK_WIN_UPDATE) != 0,
					    inet_csk(sk)->icsk_ack.rcv_mss);
		if (acked) {
			ca->prior_snd_una = tp->snd_una;
			emu_dctcp_count_bytes(&ca->bytes_ecn, &ca->bytes_total, acked,
					      (flags & CA_ACK_ECE) != 0);
		}
	}
	if (emu_before(tp->snd_una, ca->next_seq))
		return;
	if (ca->version == EMU_DCTCP_V_SCE_2019)
		ca->alpha = emu_dctcp_alpha(ca->alpha, ca->bytes_ecn, ca->bytes_total, ca->shift_g);
	else
		ca->alpha = emu_dctcp_alpha(ca->alpha, tp->delivered_ce - ca->old_delivered_ce,
					    tp->delivered - ca->old_delivered, ca->shift_g);
	emu_dctcp_new_round(sk, ca);
}

static __always_inline void emu_dctcp_loss(struct sock *sk, struct emu_dctcp_ca *ca)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = EMU_MAX(tp->snd_cwnd >> 1, 2U);
}

SEC("struct_ops/emu_dctcp_set_state")
void BPF_PROG(emu_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	/* Fast retransmit: Linux 5.1 and later halve; the 2019 version keeps
	 * what ssthresh() (or an earlier CWR round) set. */
	if (!ca->reno && new_state == TCP_CA_Recovery && ca->state != TCP_CA_Recovery) {
		struct tcp_sock *tp = tcp_sk(sk);

		if (ca->version == EMU_DCTCP_V_LINUX)
			ca->loss_cwnd = tp->snd_cwnd;
		tp->snd_ssthresh = emu_dctcp_recovery_ssthresh(tp->snd_ssthresh, tp->snd_cwnd,
							       ca->version);
	}
	/* A timeout takes alpha to its maximum where the setting asks. */
	if (!ca->reno && new_state == TCP_CA_Loss)
		ca->alpha = emu_dctcp_alpha_on_timeout(ca->alpha, ca->clamp_alpha_on_loss);
	ca->state = new_state;
}

SEC("struct_ops/emu_dctcp_cwnd_event")
void BPF_PROG(emu_dctcp_cwnd_event, struct sock *sk, int ev)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE)
		emu_ce_echo_event(sk, &ca->echo, ev);
	else if (ev == CA_EVENT_LOSS && !ca->reno)
		emu_dctcp_loss(sk, ca);
}

SEC("struct_ops/emu_dctcp_cong_avoid")
void BPF_PROG(emu_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/emu_dctcp_undo_cwnd")
__u32 BPF_PROG(emu_dctcp_undo_cwnd, struct sock *sk)
{
	struct emu_dctcp_ca *ca = inet_csk_ca(sk);

	if (ca->reno)
		return tcp_reno_undo_cwnd(sk);
	return EMU_MAX(tcp_sk(sk)->snd_cwnd, ca->loss_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_dctcp = {
	.init = (void *)emu_dctcp_init,
	.ssthresh = (void *)emu_dctcp_ssthresh,
	.in_ack_event = (void *)emu_dctcp_in_ack_event,
	.set_state = (void *)emu_dctcp_set_state,
	.cwnd_event = (void *)emu_dctcp_cwnd_event,
	.cong_avoid = (void *)emu_dctcp_cong_avoid,
	.undo_cwnd = (void *)emu_dctcp_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "dctcp",
};
