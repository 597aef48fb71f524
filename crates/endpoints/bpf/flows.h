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
	/* Sender: bytes newly acknowledged by ACKs that carried ESCE. */
	__u64 esce_bytes;
	/* Sender: the last cumulative ACK this host received (host order). */
	__u32 tx_last_ack;
	/* Receiver, written by the ingress helper: 1 if the last data segment
	 * that arrived was ECT(1) (an SCE mark). */
	__u32 rx_ect1;
	/* Receiver, kept by the congestion control's echo (sce_echo.h): the
	 * ECT(1) state of the data last received, rcv_nxt before it, and
	 * whether the next ACK sent carries ESCE (the egress helper clears
	 * it when it sets the bit). */
	__u32 echo_ect1;
	__u32 echo_prior_rcv_nxt;
	__u32 esce_queued;
	/* Sender, TCP Prague with classic-ECN detection: the highest score
	 * detection reached (2^20 = 1, at most 17; above 8 a classic AQM was
	 * seen). */
	__u32 classic_ecn_max;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct emu_flow_key);
	__type(value, struct emu_flow);
} emu_sce_flows SEC(".maps");

#endif
