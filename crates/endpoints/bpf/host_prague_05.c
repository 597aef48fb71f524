/* Prague 0.5's arithmetic for the host (included by host.c), for the unit
 * tests in src/algorithms/prague_05.rs. */

__u32 emu_alg_prague05_on_ack(struct emu_prague05_window *w, __s64 acked, __u32 may_grow,
			      __u64 ai_increase)
{
	return emu_prague05_on_ack(w, acked, may_grow, ai_increase);
}

__s64 emu_alg_prague05_loss_cnt(__s64 cnt, __u32 cwnd)
{
	return emu_prague05_loss_cnt(cnt, cwnd);
}

__s64 emu_alg_prague05_cwr_cnt(__s64 cnt, __u32 cwnd, __u64 alpha)
{
	return emu_prague05_cwr_cnt(cnt, cwnd, alpha);
}

__u32 emu_alg_prague05_threshold(__u32 cwnd, __u32 ssthresh)
{
	return emu_prague05_threshold(cwnd, ssthresh);
}

__s64 emu_alg_prague05_undo_cnt(__s64 cnt, __s64 loss_cnt)
{
	return emu_prague05_undo_cnt(cnt, loss_cnt);
}

__u64 emu_alg_prague05_pacing_rate(__u32 mtu, __u32 cwnd, __u32 in_flight, __u32 ssthresh,
				   __u32 srtt8)
{
	return emu_prague05_pacing_rate(mtu, cwnd, in_flight, ssthresh, srtt8);
}

__u32 emu_alg_prague05_may_grow(__u32 cwnd_limited, __u32 internal_pacing, __u32 queued)
{
	return emu_prague05_may_grow(cwnd_limited, internal_pacing, queued);
}
