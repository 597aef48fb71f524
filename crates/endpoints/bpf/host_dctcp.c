/* DCTCP's versions for the host (included by host.c), for the unit tests
 * in src/algorithms/dctcp_versions.rs. */

void emu_alg_dctcp_count_bytes(__u32 *ecn, __u32 *total, __u32 acked, __u32 ece)
{
	emu_dctcp_count_bytes(ecn, total, acked, ece);
}

__u32 emu_alg_dctcp_recovery_ssthresh(__u32 ssthresh, __u32 cwnd, __u32 version)
{
	return emu_dctcp_recovery_ssthresh(ssthresh, cwnd, version);
}
