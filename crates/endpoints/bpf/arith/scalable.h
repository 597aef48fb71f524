/* Scalable TCP's arithmetic, as Linux 4.19's net/ipv4/tcp_scalable.c has it
 * (cc/scalable.c). Part of algorithms.h, which gives the includer's types. */

/* After slow start the window grows by one segment every min(cwnd, 50)
 * ACKs (the paper's 0.01 per ACK, doubled for delayed ACKs), and a loss
 * takes an eighth of it off. */
#define EMU_SCALABLE_AI_CNT 50U
#define EMU_SCALABLE_MD_SHIFT 3

/* The ACKs per segment of growth (tcp_cong_avoid_ai's w). */
EMU_ALG_INLINE __u32 emu_scalable_ai_cnt(__u32 cwnd)
{
	return cwnd < EMU_SCALABLE_AI_CNT ? cwnd : EMU_SCALABLE_AI_CNT;
}

/* The window after a loss: 7/8 of it (the eighth rounded down), at least 2. */
EMU_ALG_INLINE __u32 emu_scalable_after_loss(__u32 cwnd)
{
	__u32 left = cwnd - (cwnd >> EMU_SCALABLE_MD_SHIFT);

	return left > 2 ? left : 2;
}
