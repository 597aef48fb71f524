/* Minimal kernel definitions for the congestion controls.
 *
 * Only the fields used here are declared. Every struct carries
 * preserve_access_index, so each access is relocated by field name against
 * the running kernel's BTF: the layout below is not the kernel's and need
 * not be. The names must match the kernel's, the types must be compatible.
 * UAPI headers are included first; nothing here reuses a UAPI struct name
 * except struct in6_addr, which is taken from the UAPI headers as is. */
#ifndef EMU_KERNEL_H
#define EMU_KERNEL_H

#include <linux/types.h>
#include <linux/in6.h>
#include <linux/tcp.h>

#define EMU_CORE __attribute__((preserve_access_index))

/* A network namespace. Its cookie names it uniquely while the machine
 * runs; user space reads the same number with SO_NETNS_COOKIE. */
struct netns_ipv4 {
	__u8 sysctl_tcp_min_tso_segs;
} EMU_CORE;

struct net {
	__u64 net_cookie;
	struct netns_ipv4 ipv4;
} EMU_CORE;

typedef struct {
	struct net *net;
} EMU_CORE possible_net_t;

struct sock_common {
	union {
		struct {
			__be32 skc_daddr;
			__be32 skc_rcv_saddr;
		};
	};
	union {
		struct {
			__be16 skc_dport;
			__u16 skc_num;
		};
	};
	unsigned short skc_family;
	volatile unsigned char skc_state;
	struct in6_addr skc_v6_daddr;
	struct in6_addr skc_v6_rcv_saddr;
	possible_net_t skc_net;
} EMU_CORE;

struct sock {
	struct sock_common __sk_common;
	__u32 sk_pacing_status;
	unsigned long sk_pacing_rate;
	unsigned long sk_max_pacing_rate;
	__u32 sk_mark;
} EMU_CORE;

struct inet_connection_sock_af_ops {
	__u16 net_header_len;
} EMU_CORE;

struct inet_connection_sock {
	const struct inet_connection_sock_af_ops *icsk_af_ops;
	__u16 icsk_ext_hdr_len;
	struct {
		__u8 pending;
		__u16 rcv_mss;
	} EMU_CORE icsk_ack;
	__u64 icsk_ca_priv[13];
} EMU_CORE;

/* A windowed minimum; s[0] is the current one (the kernel's tcp_min_rtt()). */
struct minmax_sample {
	__u32 t;
	__u32 v;
} EMU_CORE;

struct minmax {
	struct minmax_sample s[3];
} EMU_CORE;

struct tcp_sock {
	__u16 tcp_header_len;
	__u32 mss_cache;
	__u32 snd_cwnd;
	__u8 repair : 1;
	__u8 tcp_usec_ts : 1;
	__u8 is_sack_reneg : 1;
	__u8 is_cwnd_limited : 1;
	__u32 snd_ssthresh;
	__u8 ecn_flags;
	__u64 tcp_mstamp;
	__u32 rcv_nxt;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 srtt_us;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 write_seq;
	__u32 delivered;
	__u32 delivered_ce;
	__u32 max_packets_out;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_cwnd_stamp;
	__u32 prior_cwnd;
	struct minmax rtt_min;
} EMU_CORE;

struct rate_sample {
	__u32 acked_sacked;
	int losses;
} EMU_CORE;

struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;
	__u32 in_flight;
} EMU_CORE;

/* The struct_ops type: members are matched by name when the map is
 * loaded, so only the ones set here need to exist. */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag,
			     const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	char name[16];
	__u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

/* Kernel constants (stable values, checked against 6.18's BTF enums). */
/* Any user may choose it, and a namespace other than the first may take
 * it as its default (tcp_allowed_congestion_control). */
#define TCP_CONG_NON_RESTRICTED 0x1
#define TCP_CONG_NEEDS_ECN 0x2
/* The connection negotiates AccECN where the peer accepts it (a kernel
 * without AccECN refuses the flag). */
#define TCP_CONG_NEEDS_ACCECN 0x4

#define CA_EVENT_TX_START 0
#define CA_EVENT_CWND_RESTART 1
#define CA_EVENT_COMPLETE_CWR 2
#define CA_EVENT_LOSS 3
#define CA_EVENT_ECN_NO_CE 4
#define CA_EVENT_ECN_IS_CE 5

#define CA_ACK_SLOWPATH 1
#define CA_ACK_WIN_UPDATE 2
#define CA_ACK_ECE 4

/* TCP_CA_Open ... TCP_CA_Loss come from the UAPI <linux/tcp.h>. */

#define ICSK_ACK_TIMER 2
#define ICSK_ACK_NOW 16

/* tp->ecn_flags: bit 0 is RFC 3168 ECN negotiated, bit 4 AccECN. */
#define TCP_ECN_OK 0x1
#define TCP_ECN_DEMAND_CWR 0x4
#define TCP_ECN_MODE_ACCECN 0x10

#define SK_PACING_NONE 0
#define SK_PACING_NEEDED 1

#define TCP_INFINITE_SSTHRESH 0x7fffffff

/* struct sock_common's skc_state values used here. */
#define EMU_TCP_LISTEN 10
#define EMU_TCP_CLOSE 7

#define EMU_AF_INET 2
#define EMU_AF_INET6 10

#define SOL_SOCKET 1
#define EMU_SOL_TCP 6
#define SO_MARK 36

/* A packet's device, for the TC helpers (through bpf_cast_to_kern_ctx). */
struct net_device {
	possible_net_t nd_net;
} EMU_CORE;

struct sk_buff {
	struct net_device *dev;
} EMU_CORE;

/* The kernel's own view of a program's context (Linux 6.3 and later;
 * weak, so the helpers still load on a kernel without it). */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;

/* Kernel functions a TCP congestion control may call. */
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

/* The kernel's tcp_mss_to_mtu(): the IP packet a full segment makes. */
static __always_inline __u32 emu_mss_to_mtu(const struct sock *sk, __u32 mss)
{
	const struct inet_connection_sock *icsk = inet_csk(sk);

	return mss + tcp_sk(sk)->tcp_header_len + icsk->icsk_ext_hdr_len +
	       icsk->icsk_af_ops->net_header_len;
}

static __always_inline int emu_before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline int emu_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* The kernel's tcp_is_cwnd_limited(). */
static __always_inline int emu_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (emu_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

static __always_inline int emu_ecn_ok(const struct tcp_sock *tp)
{
	return (tp->ecn_flags & (TCP_ECN_OK | TCP_ECN_MODE_ACCECN)) != 0;
}

#endif
