/* The SCE window counter's unit for the host (included by host.c), for
 * the unit tests in src/algorithms/sce_unit.rs. */

__u32 emu_alg_sce_unit(__u32 rcv_mss, __u32 mss_cache, __u32 sending_mss)
{
	return emu_sce_unit(rcv_mss, mss_cache, sending_mss);
}

__u32 emu_alg_sce_acked_bytes(__u32 snd_una_moved, __u32 window_update, __u32 unit)
{
	return emu_sce_acked_bytes(snd_una_moved, window_update, unit);
}

__u32 emu_alg_sce_keeps_ect(__u32 payload, __u32 syn, __u32 seq, __u32 snd_nxt)
{
	return emu_sce_keeps_ect(payload, syn, seq, snd_nxt);
}
