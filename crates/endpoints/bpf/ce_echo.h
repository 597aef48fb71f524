/* The receiver's per-packet CE echo of RFC 8257 section 3.2, shared by
 * DCTCP and Prague.
 *
 * The kernel reports each data segment's CE state as a CA event. The echo
 * (ECE on ACKs) follows the CE state of the data it acknowledges: when the
 * state changes while a delayed ACK is pending, that ACK is sent at once
 * with the old state and the old rcv_nxt, then an immediate ACK carries the
 * new state. The sender thus counts CE-marked segments nearly exactly. */
#ifndef EMU_CE_ECHO_H
#define EMU_CE_ECHO_H

struct emu_ce_echo {
	__u32 prior_rcv_nxt;
	__u32 ce_state;
};

static __always_inline void emu_ce_echo_init(struct sock *sk, struct emu_ce_echo *e)
{
	e->prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	e->ce_state = 0;
}

static __always_inline void emu_ce_demand(struct sock *sk, __u32 ce)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* Call for CA_EVENT_ECN_IS_CE and CA_EVENT_ECN_NO_CE. */
static __always_inline void emu_ce_echo_event(struct sock *sk, struct emu_ce_echo *e,
					      int ev)
{
	__u32 ce = ev == CA_EVENT_ECN_IS_CE;

	if (e->ce_state != ce) {
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) {
			emu_ce_demand(sk, e->ce_state);
			bpf_tcp_send_ack(sk, e->prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	e->prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	e->ce_state = ce;
	emu_ce_demand(sk, ce);
}

#endif
