/* X25519 (RFC 7748 section 5): the Montgomery ladder on u-coordinates with a
 * conditional swap by masks on every step. */
#include "c25519.h"

#include "../ct.h"
#include "../pqmem.h"
#include "fe25519.h"

/* wipe clears n bytes at p; the empty asm that reads p and clobbers memory keeps the compiler
 * from dropping the stores as dead. */
static void wipe(void *p, size_t n)
{
	memset(p, 0, n);
#if defined(__GNUC__)
	__asm__ __volatile__("" : : "r"(p) : "memory");
#endif
}

int x25519(uint8_t out[X25519_BYTES], const uint8_t scalar[X25519_BYTES], const uint8_t point[X25519_BYTES])
{
	uint8_t k[32];
	fe25519 x1, x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb;
	uint32_t swap = 0, kt, r = 0;
	unsigned int i;
	int t;

	/* decodeScalar25519: clear bits 0-2 and 255, set bit 254. */
	for (i = 0; i < 32; i++)
		k[i] = scalar[i];
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;

	fe25519_frombytes(x1, point); /* masks bit 255 */
	fe25519_1(x2);
	fe25519_0(z2);
	fe25519_copy(x3, x1);
	fe25519_1(z3);

	for (t = 254; t >= 0; t--) {
		kt = (k[t >> 3] >> (t & 7)) & 1;
		swap ^= kt;
		fe25519_cswap(x2, x3, swap);
		fe25519_cswap(z2, z3, swap);
		swap = kt;

		fe25519_add(a, x2, z2);
		fe25519_sq(aa, a);
		fe25519_sub(b, x2, z2);
		fe25519_sq(bb, b);
		fe25519_sub(e, aa, bb);
		fe25519_add(c, x3, z3);
		fe25519_sub(d, x3, z3);
		fe25519_mul(da, d, a);
		fe25519_mul(cb, c, b);
		fe25519_add(x3, da, cb);
		fe25519_sq(x3, x3);
		fe25519_sub(z3, da, cb);
		fe25519_sq(z3, z3);
		fe25519_mul(z3, z3, x1);
		fe25519_mul(x2, aa, bb);
		fe25519_mul_small(z2, e, 121665); /* a24 = (486662 - 2) / 4 */
		fe25519_add(z2, z2, aa);
		fe25519_mul(z2, z2, e);
	}
	fe25519_cswap(x2, x3, swap);
	fe25519_cswap(z2, z3, swap);

	fe25519_invert(z2, z2);
	fe25519_mul(x2, x2, z2);
	fe25519_tobytes(out, x2);

	for (i = 0; i < 32; i++)
		r |= out[i];
	wipe(k, sizeof k);
	wipe(x2, sizeof x2);
	wipe(z2, sizeof z2);
	wipe(x3, sizeof x3);
	wipe(z3, sizeof z3);
	/* -1 when every byte is zero, with no branch on the secret output. */
	r = ct_barrier_u32(r);
	return -(int)(1 ^ ((uint32_t)(-r) >> 31));
}

void x25519_base(uint8_t out[X25519_BYTES], const uint8_t scalar[X25519_BYTES])
{
	static const uint8_t nine[32] = {9};
	/* Never all zero: the clamped scalar is 8 m with 2^251 <= m < 2^252 < L,
	 * so it is no multiple of the order L of the point u = 9. */
	(void)x25519(out, scalar, nine);
}
