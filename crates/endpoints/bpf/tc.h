/* The TC helpers: ECT(1) on L4S data (egress), and SCE feedback carried in
 * the ESCE bit of the TCP header (egress on the receiver, ingress on the
 * sender). They never drop and always return TC_ACT_OK.
 *
 * The receiver's echo is shared with its SCE congestion control: the
 * ingress program records whether each data segment arrived ECT(1), the
 * congestion control decides from it which ACKs carry ESCE and sends the
 * immediate ACKs the reference receiver sends (sce_echo.h), and the
 * egress program sets the bit on the ACK the echo queued it for. */
#ifndef EMU_TC_H
#define EMU_TC_H

#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>

#include "marks.h"
#include "flows.h"

#define EMU_ECN_MASK 0x3
#define EMU_ECN_ECT1 0x1
#define EMU_ECN_ECT0 0x2
/* In the 16-bit word at TCP header offset 12: ESCE (formerly NS). */
#define EMU_TCP_ESCE_BYTE 0x01
#define EMU_TCP_FIN 0x01
#define EMU_TCP_SYN 0x02
#define EMU_TCP_RST 0x04
#define EMU_TCP_ACK 0x10

/* What the parser found: offsets from skb->data and header fields. */
struct emu_pkt {
	__u32 l3;		/* IP header offset */
	__u32 l4;		/* TCP header offset */
	__u32 payload;		/* TCP payload bytes (from the IP length) */
	__u32 ack;		/* host order */
	__u32 seq;		/* host order */
	__u8 ecn;
	__u8 flags;		/* TCP flags byte (byte 13) */
	__u8 doff_byte;		/* TCP byte 12 */
	__u8 family;
	__u32 saddr[4];
	__u32 daddr[4];
	__u16 sport;		/* network order */
	__u16 dport;
};

/* The length an IP header (of `version`, 4 or 6, with at least 20 bytes
 * readable at `ip`) gives its packet. */
static __always_inline __u32 emu_ip_length(const __u8 *ip, __u8 version)
{
	if (version == 4)
		return ((__u32)ip[2] << 8) | ip[3];
	return (((__u32)ip[4] << 8) | ip[5]) + sizeof(struct ipv6hdr);
}

/* The IP header's offset: 14 behind an Ethernet header (veth), 0 on an L3
 * device such as TUN. Decided by which candidate's IP length matches the
 * packet length, else by the Ethernet type. */
static __always_inline int emu_l3_offset(struct __sk_buff *skb)
{
	__u32 want = ETH_HLEN + sizeof(struct ipv6hdr) + 60;
	void *data, *data_end;
	__u16 proto = skb->protocol;
	__u8 version;
	__u8 *p;

	/* The headers may sit in paged data (a pure ACK of 52 bytes, or a
	 * super-packet whose linear part is its headers alone): pull what
	 * the parser reads, at most the whole packet. */
	if (want > skb->len)
		want = skb->len;
	if ((__u32)(skb->data_end - skb->data) < want && bpf_skb_pull_data(skb, want) < 0)
		return -1;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	p = data;
	if (proto == bpf_htons(ETH_P_IP))
		version = 4;
	else if (proto == bpf_htons(ETH_P_IPV6))
		version = 6;
	else
		return -1;
	/* An Ethernet header whose type is the packet's and whose length
	 * accounts for the packet exactly, then a bare IP header that does,
	 * then either by its version alone. */
	if (data + ETH_HLEN + sizeof(struct iphdr) <= data_end &&
	    ((struct ethhdr *)data)->h_proto == proto && (p[ETH_HLEN] >> 4) == version &&
	    emu_ip_length(p + ETH_HLEN, version) + ETH_HLEN == skb->len)
		return ETH_HLEN;
	if (data + sizeof(struct iphdr) <= data_end && (p[0] >> 4) == version &&
	    emu_ip_length(p, version) == skb->len)
		return 0;
	if (data + ETH_HLEN + sizeof(struct iphdr) <= data_end &&
	    ((struct ethhdr *)data)->h_proto == proto && (p[ETH_HLEN] >> 4) == version)
		return ETH_HLEN;
	if (data + 1 <= data_end && (p[0] >> 4) == version)
		return 0;
	return -1;
}

/* The cookie of the namespace of the packet's device: the sockets' own
 * namespace, so the key matches the one the congestion controls build.
 * 0 on a kernel without bpf_cast_to_kern_ctx: one too old for emu's SCE
 * congestion controls (Linux 6.4), so no entry of theirs is missed. */
static __always_inline __u64 emu_skb_netns(struct __sk_buff *skb)
{
	struct sk_buff *kskb;
	struct net_device *dev;

	if (!bpf_ksym_exists(bpf_cast_to_kern_ctx))
		return 0;
	kskb = bpf_cast_to_kern_ctx(skb);
	dev = kskb->dev;
	if (!dev)
		return 0;
	return dev->nd_net.net->net_cookie;
}

/* Parses an IPv4 or IPv6 TCP packet; returns 0 if it is one. */
static __always_inline int emu_parse(struct __sk_buff *skb, struct emu_pkt *pk)
{
	void *data, *data_end;
	struct tcphdr *th;
	__u8 *tb;
	int l3 = emu_l3_offset(skb);
	__u32 l4, iplen, thlen, want;

	if (l3 < 0)
		return -1;
	/* Make sure the headers are in the linear part (at most 60 bytes of
	 * TCP header behind the largest IP header we parse). */
	want = l3 + sizeof(struct ipv6hdr) + 60;
	if (skb->data_end - skb->data < want &&
	    bpf_skb_pull_data(skb, want < skb->len ? want : skb->len) < 0)
		return -1;
	data = (void *)(long)skb->data;
	data_end = (void *)(long)skb->data_end;
	pk->l3 = l3 & 0xff;
	if (skb->protocol == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = data + pk->l3;
		__u32 ihl;

		if ((void *)(ip + 1) > data_end)
			return -1;
		if (ip->protocol != IPPROTO_TCP)
			return -1;
		/* Not a first fragment or a later one: skip fragments. */
		if (ip->frag_off & bpf_htons(0x3fff))
			return -1;
		ihl = ip->ihl * 4;
		if (ihl < sizeof(*ip))
			return -1;
		l4 = pk->l3 + ihl;
		iplen = bpf_ntohs(ip->tot_len);
		pk->ecn = ip->tos & EMU_ECN_MASK;
		pk->family = EMU_AF_INET;
		pk->saddr[0] = ip->saddr;
		pk->daddr[0] = ip->daddr;
		pk->saddr[1] = pk->saddr[2] = pk->saddr[3] = 0;
		pk->daddr[1] = pk->daddr[2] = pk->daddr[3] = 0;
		if (iplen < ihl)
			return -1;
		iplen -= ihl;
	} else {
		struct ipv6hdr *ip6 = data + pk->l3;

		if ((void *)(ip6 + 1) > data_end)
			return -1;
		if (ip6->nexthdr != IPPROTO_TCP)
			return -1;
		l4 = pk->l3 + sizeof(*ip6);
		iplen = bpf_ntohs(ip6->payload_len);
		pk->ecn = (((__u8 *)ip6)[1] >> 4) & EMU_ECN_MASK;
		pk->family = EMU_AF_INET6;
		__builtin_memcpy(pk->saddr, &ip6->saddr, 16);
		__builtin_memcpy(pk->daddr, &ip6->daddr, 16);
	}
	l4 &= 0x7f;
	th = data + l4;
	if ((void *)(th + 1) > data_end)
		return -1;
	tb = (__u8 *)th;
	thlen = th->doff * 4;
	pk->l4 = l4;
	pk->ack = bpf_ntohl(th->ack_seq);
	pk->seq = bpf_ntohl(th->seq);
	pk->doff_byte = tb[12];
	pk->flags = tb[13];
	pk->sport = th->source;
	pk->dport = th->dest;
	pk->payload = iplen > thlen ? iplen - thlen : 0;
	return 0;
}

static __always_inline void emu_key(struct emu_flow_key *k, const struct emu_pkt *pk,
				    __u64 netns, int local_is_source)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->netns = netns;
	k->family = pk->family;
	if (local_is_source) {
		__builtin_memcpy(k->local_addr, pk->saddr, 16);
		__builtin_memcpy(k->remote_addr, pk->daddr, 16);
		k->local_port = pk->sport;
		k->remote_port = pk->dport;
	} else {
		__builtin_memcpy(k->local_addr, pk->daddr, 16);
		__builtin_memcpy(k->remote_addr, pk->saddr, 16);
		k->local_port = pk->dport;
		k->remote_port = pk->sport;
	}
}

/* Writes `ecn` into the packet's ECN field (IPv4: with the header
 * checksum fixed; IPv6 has none). */
static __always_inline void emu_write_ecn(struct __sk_buff *skb, const struct emu_pkt *pk,
					  __u8 ecn)
{
	if (pk->family == EMU_AF_INET) {
		__u8 hdr[2];
		__u16 oldw, neww;

		if (bpf_skb_load_bytes(skb, pk->l3, hdr, 2) < 0)
			return;
		__builtin_memcpy(&oldw, hdr, 2);
		hdr[1] = (hdr[1] & ~EMU_ECN_MASK) | ecn;
		__builtin_memcpy(&neww, hdr, 2);
		if (bpf_skb_store_bytes(skb, pk->l3 + 1, &hdr[1], 1, 0) < 0)
			return;
		bpf_l3_csum_replace(skb, pk->l3 + offsetof(struct iphdr, check), oldw,
				    neww, 2);
	} else {
		__u8 b;

		if (bpf_skb_load_bytes(skb, pk->l3 + 1, &b, 1) < 0)
			return;
		b = (b & ~(EMU_ECN_MASK << 4)) | (ecn << 4);
		bpf_skb_store_bytes(skb, pk->l3 + 1, &b, 1, 0);
	}
}

/* An L4S sender's ECT(0) becomes ECT(1); CE and Not-ECT stay as they are. */
static __always_inline void emu_set_ect1(struct __sk_buff *skb, const struct emu_pkt *pk)
{
	if (pk->ecn == EMU_ECN_ECT0)
		emu_write_ecn(skb, pk, EMU_ECN_ECT1);
}

/* Sets ESCE on this ACK if the receiver's echo queued it (and takes it
 * off the queue: one ACK per queuing, as the reference sends it). */
static __always_inline void emu_echo_esce(struct __sk_buff *skb, const struct emu_pkt *pk)
{
	struct emu_flow_key key;
	struct emu_flow *f;
	__u8 w[2];
	__u16 oldw, neww;

	if (!(pk->flags & EMU_TCP_ACK) || (pk->flags & (EMU_TCP_SYN | EMU_TCP_RST)))
		return;
	emu_key(&key, pk, emu_skb_netns(skb), 1);
	f = bpf_map_lookup_elem(&emu_sce_flows, &key);
	if (!f || !f->esce_queued)
		return;
	f->esce_queued = 0;
	if (pk->doff_byte & EMU_TCP_ESCE_BYTE)
		return;
	w[0] = pk->doff_byte;
	w[1] = pk->flags;
	__builtin_memcpy(&oldw, w, 2);
	w[0] |= EMU_TCP_ESCE_BYTE;
	__builtin_memcpy(&neww, w, 2);
	if (bpf_skb_store_bytes(skb, pk->l4 + 12, w, 1, 0) < 0)
		return;
	bpf_l4_csum_replace(skb, pk->l4 + offsetof(struct tcphdr, check), oldw, neww, 2);
}

/* A SYN leaves Not-ECT, as RFC 3168 has it. The kernel makes the SYN of a
 * congestion control that needs ECN ECT(0), and a listener whose own
 * congestion control does not need ECN then refuses ECN for the
 * connection; Not-ECT, the SYN negotiates ECN with any receiver that
 * accepts it (tcp_ecn 1 or 2). Its socket's mark is not set yet (the
 * congestion control's init runs once the connection is up), so this
 * looks at the packets of every socket still connecting (SYN_SENT). */
static __always_inline void emu_syn_not_ect(struct __sk_buff *skb, const struct emu_pkt *pk)
{
	if (!(pk->flags & EMU_TCP_SYN) || (pk->flags & EMU_TCP_ACK))
		return;
	if (pk->ecn == EMU_ECN_ECT0 || pk->ecn == EMU_ECN_ECT1)
		emu_write_ecn(skb, pk, 0);
}

/* An SCE sender's pure ACKs and retransmissions leave Not-ECT, as its
 * reference's kernel sends them (emu_sce_keeps_ect). The segment reaches
 * this program inside the kernel's transmit, before snd_nxt moves past new
 * data, so the socket's snd_nxt tells a retransmission. Cost: one socket
 * lookup per packet of such a socket. */
static __always_inline void emu_sce_control_not_ect(struct __sk_buff *skb,
						    const struct emu_pkt *pk, struct bpf_sock *sk)
{
	__u32 syn = (pk->flags & EMU_TCP_SYN) != 0;
	__u32 snd_nxt = pk->seq;
	struct bpf_tcp_sock *tp;

	if (pk->ecn != EMU_ECN_ECT0 && pk->ecn != EMU_ECN_ECT1)
		return;
	if (pk->payload && !syn) {
		if (sk)
			sk = bpf_sk_fullsock(sk);
		tp = sk ? bpf_tcp_sock(sk) : NULL;
		if (!tp)
			return;
		snd_nxt = tp->snd_nxt;
	}
	if (!emu_sce_keeps_ect(pk->payload, syn, pk->seq, snd_nxt))
		emu_write_ecn(skb, pk, 0);
}

SEC("tc")
int emu_egress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct emu_pkt pk;
	__u32 mark = skb->mark;

	/* Only a marked socket's packets and a connecting socket's SYN are
	 * for us: anything else leaves unparsed. */
	if (!(mark & (EMU_MARK_ECT1 | EMU_MARK_ESCE)) && !(sk && sk->state == BPF_TCP_SYN_SENT))
		return TC_ACT_OK;
	if (emu_parse(skb, &pk) < 0)
		return TC_ACT_OK;
	emu_syn_not_ect(skb, &pk);
	if (!(mark & (EMU_MARK_ECT1 | EMU_MARK_ESCE)))
		return TC_ACT_OK;
	if (mark & EMU_MARK_ECT1)
		emu_set_ect1(skb, &pk);
	if (mark & EMU_MARK_ESCE) {
		emu_echo_esce(skb, &pk);
		emu_sce_control_not_ect(skb, &pk, sk);
	}
	return TC_ACT_OK;
}

SEC("tc")
int emu_ingress(struct __sk_buff *skb)
{
	struct emu_flow_key key;
	struct emu_flow *f;
	struct emu_pkt pk;
	__u64 netns;

	if (emu_parse(skb, &pk) < 0)
		return TC_ACT_OK;
	netns = emu_skb_netns(skb);
	/* (c) The receiver records whether this data segment is ECT(1),
	 * for its congestion control's echo (only SCE sockets have an
	 * entry). */
	if (pk.payload) {
		emu_key(&key, &pk, netns, 0);
		f = bpf_map_lookup_elem(&emu_sce_flows, &key);
		if (f)
			f->rx_ect1 = pk.ecn == EMU_ECN_ECT1;
	}
	/* (d) The sender counts bytes acknowledged with ESCE. */
	if ((pk.flags & EMU_TCP_ACK) && !(pk.flags & (EMU_TCP_SYN | EMU_TCP_RST))) {
		__s32 adv;

		emu_key(&key, &pk, netns, 0);
		f = bpf_map_lookup_elem(&emu_sce_flows, &key);
		if (!f)
			return TC_ACT_OK;
		if (!f->tx_last_ack) {
			f->tx_last_ack = pk.ack;
			return TC_ACT_OK;
		}
		adv = (__s32)(pk.ack - f->tx_last_ack);
		if (adv <= 0)
			return TC_ACT_OK;
		if (pk.doff_byte & EMU_TCP_ESCE_BYTE)
			__sync_fetch_and_add(&f->esce_bytes, (__u64)adv);
		f->tx_last_ack = pk.ack;
	}
	return TC_ACT_OK;
}

#endif
