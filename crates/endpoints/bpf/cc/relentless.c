// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu_relentless "relentless": the AQM evaluation thesis's Relentless sender, ECT(1), Reno without ECN.
 * Included by endpoints.bpf.c after the shared pieces; its arithmetic is
 * in arith/. docs/endpoints.md says what it follows and where it differs.
 *
 * The thesis's module was Linux's DCTCP with only the reduction changed:
 * every CE-echoed segment takes half a segment off the window
 * (emu_relentless_cut), counted from delivered_ce on each ACK, with no
 * once-per-round gating; unmarked segments grow it as Reno does; a loss
 * halves it. Its receiver echoes CE per packet as DCTCP's does, and its
 * data leaves ECT(1). It works the window itself (cong_control), so the
 * kernel's proportional rate reduction does not shrink it again. */

struct emu_relentless_ca {
	__u32 last_delivered_ce;
	__u32 halves;		/* an odd half segment owed */
	__u32 loss_cwnd;
	__u8 state;
	__u8 reno;		/* ECN not negotiated: plain Reno */
	__u8 pad[2];
	struct emu_ce_echo echo;
};
_Static_assert(sizeof(struct emu_relentless_ca) <= 104, "icsk_ca_priv");

SEC("struct_ops/emu_relentless_init")
void BPF_PROG(emu_relentless_init, struct sock *sk)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->state = TCP_CA_Open;
	ca->loss_cwnd = 0;
	ca->halves = 0;
	ca->reno = !emu_ecn_ok(tp) && emu_sk_is_open(sk);
	if (ca->reno && !emu_fallback_to_reno(sk))
		return;
	emu_ce_echo_init(sk, &ca->echo);
	ca->last_delivered_ce = tp->delivered_ce;
	if (!ca->reno)
		emu_set_mark(sk, EMU_MARK_ECT1);
}

SEC("struct_ops/emu_relentless_cong_control")
void BPF_PROG(emu_relentless_cong_control, struct sock *sk, __u32 ack, int flag,
	      const struct rate_sample *rs)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 acked = rs->acked_sacked;
	__u32 ce = tp->delivered_ce - ca->last_delivered_ce;

	ca->last_delivered_ce = tp->delivered_ce;
	if (ca->reno)
		ce = 0;
	if (ce) {
		tp->snd_cwnd = emu_relentless_cut(tp->snd_cwnd, ce, &ca->halves);
		tp->snd_ssthresh = tp->snd_cwnd;
		acked -= EMU_MIN(ce, acked);
	}
	if (acked && ca->state != TCP_CA_Recovery && !(ca->reno && ca->state == TCP_CA_CWR))
		tcp_reno_cong_avoid(sk, ack, acked);
	emu_default_pacing(sk);
}

/* A congestion signal's threshold: a loss halves the window (DCTCP's and
 * Reno's response); for CE the window was already cut per mark. */
SEC("struct_ops/emu_relentless_ssthresh")
__u32 BPF_PROG(emu_relentless_ssthresh, struct sock *sk)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);

	ca->loss_cwnd = tcp_sk(sk)->snd_cwnd;
	return tcp_reno_ssthresh(sk);
}

SEC("struct_ops/emu_relentless_set_state")
void BPF_PROG(emu_relentless_set_state, struct sock *sk, __u8 new_state)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	if (new_state == ca->state)
		return;
	/* No proportional rate reduction under cong_control: a loss (or,
	 * for Reno, CE) takes its halving at once. */
	if (new_state == TCP_CA_Recovery || (ca->reno && new_state == TCP_CA_CWR))
		tp->snd_cwnd = EMU_MAX(EMU_MIN(tp->snd_cwnd, tp->snd_ssthresh), 2U);
	else if (new_state == TCP_CA_CWR)
		tp->snd_ssthresh = EMU_MAX(tp->snd_cwnd, 2U);
	ca->state = new_state;
}

SEC("struct_ops/emu_relentless_cwnd_event")
void BPF_PROG(emu_relentless_cwnd_event, struct sock *sk, int ev)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE)
		emu_ce_echo_event(sk, &ca->echo, ev);
	else if (ev == CA_EVENT_LOSS)
		ca->loss_cwnd = tcp_sk(sk)->snd_cwnd;
}

SEC("struct_ops/emu_relentless_undo_cwnd")
__u32 BPF_PROG(emu_relentless_undo_cwnd, struct sock *sk)
{
	struct emu_relentless_ca *ca = inet_csk_ca(sk);

	return EMU_MAX(tcp_sk(sk)->snd_cwnd, ca->loss_cwnd);
}

SEC(EMU_STRUCT_OPS_SEC)
struct tcp_congestion_ops emu_relentless = {
	.init = (void *)emu_relentless_init,
	.cong_control = (void *)emu_relentless_cong_control,
	.ssthresh = (void *)emu_relentless_ssthresh,
	.set_state = (void *)emu_relentless_set_state,
	.cwnd_event = (void *)emu_relentless_cwnd_event,
	.undo_cwnd = (void *)emu_relentless_undo_cwnd,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "relentless",
};
