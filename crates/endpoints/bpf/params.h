/* Per-connection settings of the congestion controls: the references'
 * module parameters, which there are global to the kernel, here chosen
 * per flow.
 *
 * emu writes an entry per (network namespace, remote port, congestion
 * control) before a run's flows start: port 0 stands for every
 * connection of the namespace. A congestion control looks its settings up
 * once, in init (a hash lookup or two per connection, none per ACK), and
 * keeps them in its private area; with no entry it takes the reference's
 * defaults. */
#ifndef EMU_PARAMS_H
#define EMU_PARAMS_H

/* Which congestion control an entry is for (emu_cc_key.cc). */
#define EMU_CC_DCTCP 1
#define EMU_CC_PRAGUE 2
#define EMU_CC_CUBIC_SCE 3
#define EMU_CC_VEGAS 4
/* The SCE window counter's senders (sce_window.h's EMU_SCE_P_* slots),
 * numbered apart from the controls added one by one above. */
#define EMU_CC_RENO_SCE 32
#define EMU_CC_DCTCP_SCE 33

/* The number of values an entry holds; each congestion control documents
 * its own slots (EMU_PRAGUE_P_*, EMU_DCTCP_P_*, EMU_CUBIC_P_*,
 * EMU_VEGAS_P_*). */
#define EMU_CC_PARAMS 12

struct emu_cc_key {
	__u64 netns;
	__u16 remote_port;	/* network byte order; 0: any */
	__u16 cc;
	__u32 pad;
};

struct emu_cc_params {
	__u32 value[EMU_CC_PARAMS];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct emu_cc_key);
	__type(value, struct emu_cc_params);
} emu_cc_params SEC(".maps");

/* The settings for this socket's connection, or NULL for the defaults:
 * the entry for its remote port, else the one for its whole namespace. */
static __always_inline const struct emu_cc_params *emu_cc_params_of(const struct sock *sk,
								    __u16 cc)
{
	const struct sock_common *c = &sk->__sk_common;
	struct emu_cc_key key = {};
	const struct emu_cc_params *p;

	key.netns = c->skc_net.net->net_cookie;
	key.cc = cc;
	key.remote_port = c->skc_dport;
	p = bpf_map_lookup_elem(&emu_cc_params, &key);
	if (p)
		return p;
	key.remote_port = 0;
	return bpf_map_lookup_elem(&emu_cc_params, &key);
}

#endif
