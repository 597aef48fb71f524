/* HighSpeed TCP's arithmetic (RFC 3649), as Linux 4.19's
 * net/ipv4/tcp_highspeed.c has it (cc/highspeed.c). Part of algorithms.h,
 * which gives the includer's types. */

/* RFC 3649's Appendix B, one row per increase a(w) = 1, 2, ... 72: the
 * largest window (segments) that row covers, and b(w), the share of the
 * window a loss takes off, in 1/256. */
struct emu_hstcp_row {
	__u32 cwnd;
	__u32 md;
};

#define EMU_HSTCP_ROWS 72U

static const struct emu_hstcp_row emu_hstcp_table[EMU_HSTCP_ROWS] = {
	{38, 128},    {118, 112},   {221, 104},   {347, 98},    {495, 93},    {663, 89},
	{851, 86},    {1058, 83},   {1284, 81},   {1529, 78},   {1793, 76},   {2076, 74},
	{2378, 72},   {2699, 71},   {3039, 69},   {3399, 68},   {3778, 66},   {4177, 65},
	{4596, 64},   {5036, 62},   {5497, 61},   {5979, 60},   {6483, 59},   {7009, 58},
	{7558, 57},   {8130, 56},   {8726, 55},   {9346, 54},   {9991, 53},   {10661, 52},
	{11358, 52},  {12082, 51},  {12834, 50},  {13614, 49},  {14424, 48},  {15265, 48},
	{16137, 47},  {17042, 46},  {17981, 45},  {18955, 45},  {19965, 44},  {21013, 43},
	{22101, 43},  {23230, 42},  {24402, 41},  {25618, 41},  {26881, 40},  {28193, 39},
	{29557, 39},  {30975, 38},  {32450, 38},  {33986, 37},  {35586, 36},  {37253, 36},
	{38992, 35},  {40808, 35},  {42707, 34},  {44694, 33},  {46776, 33},  {48961, 32},
	{51258, 32},  {53677, 31},  {56230, 30},  {58932, 30},  {61799, 29},  {64851, 28},
	{68113, 28},  {71617, 27},  {75401, 26},  {79517, 26},  {84035, 25},  {89053, 24},
};

/* The module's bound on the window, so that cwnd * md fits 32 bits. */
#define EMU_HSTCP_CLAMP (0xffffffffU / 128)

/* The row for `cwnd`: the first whose bound holds it, else the last.
 * The module walks there a row at a time from the last ACK's row; over
 * this rising table every walk ends at that one row, which a bisection
 * finds in 7 steps (the verifier would follow each step of a walk). */
EMU_ALG_INLINE __u32 emu_hstcp_row(__u32 cwnd)
{
	__u32 lo = 0, hi = EMU_HSTCP_ROWS - 1, i;

	for (i = 0; i < 7 && lo < hi; i++) {
		__u32 mid = (lo + hi) >> 1;

		if (mid >= EMU_HSTCP_ROWS)
			break;
		if (cwnd <= emu_hstcp_table[mid].cwnd)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The increase a(w) of the row: segments per round trip. */
EMU_ALG_INLINE __u32 emu_hstcp_ai(__u32 row)
{
	return row + 1;
}

/* The window after a loss: cwnd - cwnd * b(w), at least 2. */
EMU_ALG_INLINE __u32 emu_hstcp_after_loss(__u32 cwnd, __u32 row)
{
	__u32 md = emu_hstcp_table[row < EMU_HSTCP_ROWS ? row : EMU_HSTCP_ROWS - 1].md;
	__u32 left = cwnd - (__u32)(((__u64)cwnd * md) >> 8);

	return left > 2 ? left : 2;
}
