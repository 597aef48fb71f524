/* Per-connection state shared by the TC helpers, the congestion controls
 * and emu: SCE feedback, and what TCP Prague's classic-ECN detection saw. */
#ifndef EMU_FLOWS_H
#define EMU_FLOWS_H

/* The connection's network namespace (its cookie: two emus, or two hosts
 * of one experiment, may use the same addresses and ports at once),
 * then addresses and ports in network byte order as on the wire; an IPv4
 * address sits in [0] with the rest zero. */
struct emu_flow_key {
	__u64 netns;
	__u8 family;
	__u8 pad[3];
	__u32 local_addr[4];
	__u32 remote_addr[4];
	__u16 local_port;
	__u16 remote_port;
};

struct emu_flow {
	/* Receiver: ECT(1) payload bytes not yet echoed with ESCE. */
	__s64 pending;
	/* Receiver: the last cumulative ACK this host sent (host order). */
	__u32 rx_last_ack;
	/* Sender: the last cumulative ACK this host received (host order). */
	__u32 tx_last_ack;
	/* Sender: bytes newly acknowledged by ACKs that carried ESCE. */
	__u64 esce_bytes;
	/* Sender, TCP Prague with classic-ECN detection: the highest score
	 * detection reached (2^20 = 1; above 8 a classic AQM was seen). */
	__u64 classic_ecn_max;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct emu_flow_key);
	__type(value, struct emu_flow);
} emu_sce_flows SEC(".maps");

#endif
