/* The receiver's SCE echo, as the SCE reference receiver does it.
 *
 * The kernel reports each ECT or CE data segment as a CA event to a
 * congestion control that needs ECN; the ingress helper has recorded in
 * the flow's entry whether the last one arrived ECT(1). The echo follows
 * that state: every ECT(1) arrival queues ESCE for the next ACK this host
 * sends (the egress helper sets the bit and clears the queue), an ECT(0)
 * arrival clears it. When the state changes while a delayed ACK is
 * pending, that ACK is sent at once with the old state and the old
 * rcv_nxt, and the next ACK is immediate: so each ACK's ESCE describes
 * the data it acknowledges, however few ACKs the rate leaves. CE leaves
 * the SCE state alone. The cost: one map lookup per data segment. */
#ifndef EMU_SCE_ECHO_H
#define EMU_SCE_ECHO_H

#include "flows.h"

/* Call for CA_EVENT_ECN_IS_CE and CA_EVENT_ECN_NO_CE, with the socket's
 * own entry. */
static __always_inline void emu_sce_echo_event(struct sock *sk, struct emu_flow *f, int ev)
{
	if (ev == CA_EVENT_ECN_NO_CE) {
		__u32 ect1 = f->rx_ect1 != 0;

		if (ect1 != f->echo_ect1 &&
		    (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER)) {
			bpf_tcp_send_ack(sk, f->echo_prior_rcv_nxt);
			inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
		}
		f->echo_ect1 = ect1;
		f->esce_queued = ect1;
	}
	f->echo_prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
}

#endif
