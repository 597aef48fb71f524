/* Reno-SCE's rules for the host (included by host.c), for the unit tests
 * in src/algorithms/reno_sce.rs. */

__u32 emu_alg_reno_sce_threshold(__u32 loss_cwnd)
{
	return emu_reno_sce_threshold(loss_cwnd);
}

__u32 emu_alg_reno_sce_marked(__s64 *cnt, __u32 *loss_cwnd, __u32 *recent_sce, __u32 cwnd,
			      __u32 acked, __u32 sce, __u32 ece, __u32 sqrt_cwnd)
{
	return emu_reno_sce_marked(cnt, loss_cwnd, recent_sce, cwnd, acked, sce, ece, sqrt_cwnd);
}

__u32 emu_alg_reno_sce_sqrt_stepped(__u32 sqrt_cwnd, __u32 from, __u32 to)
{
	return emu_reno_sce_sqrt_stepped(sqrt_cwnd, from, to);
}

__u32 emu_alg_reno_sce_sqrt_after_loss(__u32 sqrt_cwnd, __u32 cwnd)
{
	return emu_reno_sce_sqrt_after_loss(sqrt_cwnd, cwnd);
}
