/* Relentless, as the AQM evaluation thesis (2017) ran it: the arithmetic of cc/relentless.c.
 * Part of algorithms.h, which gives the includer's types. */

/* The window after an ACK that acknowledged `ce` CE-marked segments: half
 * a segment off per marked segment, so an ACK covering several takes
 * that many halves, and a whole window of marks halves the window.
 * *halves carries an odd half segment to the next marks (the window is
 * whole segments); the window stays at least 2. */
EMU_ALG_INLINE __u32 emu_relentless_cut(__u32 cwnd, __u32 ce, __u32 *halves)
{
	__u64 owed = (__u64)*halves + ce;
	__u64 cut = owed >> 1;

	*halves = (__u32)(owed & 1);
	return (__u64)cwnd > cut + 2 ? cwnd - (__u32)cut : 2;
}
