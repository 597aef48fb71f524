/* What Linux 4.19's congestion controls (cc/scalable.c ... cc/yeah.c)
 * share: the kernel's fields they read beyond kernel.h's, its clock as
 * they read it, and their settings. Included by endpoints.bpf.c before
 * them.
 *
 * The "___linux" structs are CO-RE flavours: libbpf matches them to the
 * kernel's inet_connection_sock and tcp_sock by the name before "___",
 * so they add fields without touching kernel.h's declarations. */
#ifndef EMU_LINUX_CC_H
#define EMU_LINUX_CC_H

struct inet_connection_sock___linux {
	__u8 icsk_ca_state : 5;
} EMU_CORE;

struct tcp_sock___linux {
	__u32 sacked_out;
} EMU_CORE;

/* The socket's congestion state (TCP_CA_Open ... TCP_CA_Loss): the
 * kernel's icsk_ca_state. */
static __always_inline __u32 emu_ca_state(const struct sock *sk)
{
	const struct inet_connection_sock___linux *icsk = (const void *)sk;

	return BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/* The module's jiffies, as on a kernel with HZ = 1000: the socket's
 * clock (tcp_mstamp, the time of the packet being processed) in ms. A
 * BPF program cannot read HZ, and the modules' constants (HZ / 32, HZ)
 * are written for 1000 here. */
static __always_inline __u32 emu_jiffies(const struct sock *sk)
{
	return (__u32)(tcp_sk(sk)->tcp_mstamp / 1000);
}

/* A setting of this socket's connection: slot `slot` of its emu_cc_params
 * entry, else `fallback` (the module's default). */
static __always_inline __u32 emu_setting(const struct emu_cc_params *p, __u32 slot,
					 __u32 fallback)
{
	return p && slot < EMU_CC_PARAMS ? p->value[slot] : fallback;
}

/* Undoing a reduction: the kernel's tcp_reno_undo_cwnd, which all of
 * them but H-TCP use as it is. */
#define EMU_LINUX_RENO_UNDO(name)                                      \
	SEC("struct_ops/" #name "_undo_cwnd")                          \
	__u32 BPF_PROG(name##_undo_cwnd, struct sock *sk)              \
	{                                                              \
		return tcp_reno_undo_cwnd(sk);                         \
	}

#endif
