/* Integer square and cube roots and the base-2 logarithm, shared by the controls.
 * Part of algorithms.h, which gives the includer's types. */

/* The integer roots are computed digit by digit without data-dependent
 * branches: each step's comparison becomes 0 or 1 from the sign bit of a
 * difference, so the BPF verifier walks a single path through them. */

/* floor(sqrt(a)) for a 32-bit argument. */
EMU_ALG_INLINE __u32 emu_isqrt(__u32 a)
{
	__u64 rem = a, res = 0, bit = 1ULL << 30;
	int i;

	for (i = 0; i < 16; i++) {
		__u64 t = res + bit;
		__u64 ge = 1 - ((rem - t) >> 63);	/* rem >= t */

		rem -= t * ge;
		res = (res >> 1) + bit * ge;
		bit >>= 2;
	}
	return (__u32)res;
}

/* floor(cbrt(a)) for a < 2^63. */
EMU_ALG_INLINE __u32 emu_icbrt(__u64 a)
{
	__u64 y = 0;
	int s;

	for (s = 60; s >= 0; s -= 3) {
		__u64 b, ge;

		y <<= 1;
		b = 3 * y * (y + 1) + 1;
		ge = 1 - (((a >> s) - b) >> 63);	/* (a >> s) >= b */
		a -= (b << s) * ge;
		y += ge;
	}
	return (__u32)y;
}

/* floor(log2(v)), 0 for v = 0. */
EMU_ALG_INLINE __u32 emu_ilog2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}
