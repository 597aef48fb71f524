// SPDX-License-Identifier: MIT OR GPL-2.0
/* emu's endpoint programs, one object: the pieces the congestion controls
 * share, then each control from a file of its own under cc/:
 *
 *   cc/dctcp.c      "dctcp"      DCTCP, RFC 8257 (sender and CE echo)
 *   cc/prague.c     "prague"     TCP Prague (L4S), Reno fallback without ECN
 *   cc/reno_sce.c   "reno-sce"   Reno with the SCE response
 *   cc/dctcp_sce.c  "dctcp-sce"  DCTCP's proportional response to SCE, over Reno
 *   cc/cubic_sce.c  "cubic-sce"  CUBIC (RFC 9438, HyStart) with the SCE response
 *   cc/vegas.c      "vegas"      TCP Vegas, for kernels built without it
 *   cc/scalable.c ... cc/nv.c  Linux 4.19's scalable, highspeed, hybla,
 *                   westwood, veno, bic, htcp, illinois, yeah and nv, for
 *                   kernels built without them (linux_cc.h)
 *   cc/relentless.c "relentless" the AQM evaluation thesis's Relentless: half a
 *                                segment off per CE mark, ECT(1)
 *   tc.h            emu_egress (ECT(1) on L4S data, ESCE on SCE ACKs) and
 *                   emu_ingress (counts ECT(1) data, reads ESCE on ACKs)
 *
 * docs/endpoints.md says what each follows and where it differs. The
 * arithmetic lives in arith/ (through algorithms.h) and is unit-tested on
 * the host. */
#include <linux/bpf.h>
#include <linux/types.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "kernel.h"
#include "marks.h"
#include "algorithms.h"
#include "ce_echo.h"
#include "flows.h"
#include "params.h"
#include "sce_echo.h"
#include "tc.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* libbpf before 1.2 knows only ".struct_ops"; the loader uses ".link". */
#ifndef EMU_STRUCT_OPS_SEC
#define EMU_STRUCT_OPS_SEC ".struct_ops.link"
#endif

#define EMU_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EMU_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- Shared pieces --------------------------------------------------- */

/* ORs a mark bit into the socket's mark (SO_MARK). */
static __always_inline void emu_set_mark(struct sock *sk, __u32 bit)
{
	int mark = (int)(sk->sk_mark | bit);

	bpf_setsockopt(sk, SOL_SOCKET, SO_MARK, &mark, sizeof(mark));
}

/* Without negotiated ECN, DCTCP and Prague hand the socket to the
 * kernel's Reno. Switching the congestion control also stops the socket
 * from sending ECT, which a BPF program cannot do otherwise. Returns 0 if
 * the socket now runs Reno (the caller must then return at once: its
 * private area belongs to Reno). */
static __always_inline int emu_fallback_to_reno(struct sock *sk)
{
	char name[8] = "reno";

	return bpf_setsockopt(sk, EMU_SOL_TCP, TCP_CONGESTION, name, sizeof(name));
}

static __always_inline int emu_sk_is_open(const struct sock *sk)
{
	unsigned char st = sk->__sk_common.skc_state;

	return st != EMU_TCP_LISTEN && st != EMU_TCP_CLOSE;
}

/* The flow key of a socket, as the TC programs build it from packets. */
static __always_inline void emu_sk_key(const struct sock *sk, struct emu_flow_key *k)
{
	const struct sock_common *c = &sk->__sk_common;
	__u32 d[4], s[4];

	__builtin_memset(k, 0, sizeof(*k));
	k->netns = c->skc_net.net->net_cookie;
	k->local_port = bpf_htons(c->skc_num);
	k->remote_port = c->skc_dport;
	if (c->skc_family == EMU_AF_INET6) {
		__builtin_memcpy(d, &c->skc_v6_daddr, 16);
		__builtin_memcpy(s, &c->skc_v6_rcv_saddr, 16);
		/* An IPv4-mapped peer sends IPv4 packets. */
		if (!(d[0] | d[1]) && d[2] == bpf_htonl(0xffff)) {
			k->family = EMU_AF_INET;
			k->local_addr[0] = c->skc_rcv_saddr;
			k->remote_addr[0] = c->skc_daddr;
			return;
		}
		k->family = EMU_AF_INET6;
		__builtin_memcpy(k->local_addr, s, 16);
		__builtin_memcpy(k->remote_addr, d, 16);
		return;
	}
	k->family = EMU_AF_INET;
	k->local_addr[0] = c->skc_rcv_saddr;
	k->remote_addr[0] = c->skc_daddr;
}

/* Starts the socket's SCE flow entry afresh and returns its ESCE byte
 * count (0). The entry outlives the socket: emu reads what the sender saw
 * after the run, and the table is LRU-bounded; a later connection on the
 * same addresses and ports starts it again here. */
static __always_inline __u64 emu_sce_flow_open(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct emu_flow_key key;
	struct emu_flow init = {};
	struct emu_flow *f;

	emu_sk_key(sk, &key);
	init.echo_prior_rcv_nxt = tp->rcv_nxt;
	init.tx_last_ack = tp->snd_una;
	bpf_map_update_elem(&emu_sce_flows, &key, &init, BPF_ANY);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	return f ? f->esce_bytes : 0;
}

/* Bytes acknowledged with ESCE since the last call, at most `cap`. */
static __always_inline __u32 emu_sce_bytes(struct sock *sk, __u64 *last, __u32 cap)
{
	struct emu_flow_key key;
	struct emu_flow *f;
	__u64 now, delta;

	emu_sk_key(sk, &key);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (!f)
		return 0;
	now = f->esce_bytes;
	delta = now - *last;
	*last = now;
	return delta > cap ? cap : (__u32)delta;
}

/* The receiver's SCE echo for a CA event of an arriving data segment. */
static __always_inline void emu_sce_echo(struct sock *sk, int ev)
{
	struct emu_flow_key key;
	struct emu_flow *f;

	if (ev != CA_EVENT_ECN_NO_CE && ev != CA_EVENT_ECN_IS_CE)
		return;
	emu_sk_key(sk, &key);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (f)
		emu_sce_echo_event(sk, f, ev);
}

/* The kernel's own pacing for Reno-style senders: 200% of cwnd/srtt in
 * slow start, 120% after. */
static __always_inline void emu_default_pacing(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	__u32 ss = tp->snd_cwnd < tp->snd_ssthresh / 2;
	__u32 w = EMU_MAX(tp->snd_cwnd, tp->packets_out);
	__u64 rate = emu_prague_pacing_rate(tp->mss_cache, (__u64)w << EMU_PRAGUE_CWND_UNIT,
					    tp->srtt_us, ss);

	if (!ss)
		rate = rate * 6 / 5;
	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = rate;
}

#include "sce_window.h"

/* ---- The congestion controls ------------------------------------------ */

#include "cc/dctcp.c"
#include "cc/prague.c"
#include "cc/reno_sce.c"
#include "cc/dctcp_sce.c"
#include "cc/cubic_sce.c"
#include "cc/vegas.c"

#include "linux_cc.h"
#include "cc/scalable.c"
#include "cc/highspeed.c"
#include "cc/hybla.c"
#include "cc/westwood.c"
#include "cc/veno.c"
#include "cc/bic.c"
#include "cc/htcp.c"
#include "cc/illinois.c"
#include "cc/yeah.c"
#include "cc/nv.c"
#include "cc/relentless.c"
