/* GF(2^255 - 19) in ten limbs of radix 2^25.5; see fe25519.h for the bounds. */
#include "fe25519.h"

#include "../ct.h"

#define M25 0x1ffffffu
#define M26 0x3ffffffu

/* Width of limb i: 26 bits for even i, 25 for odd. */
#define W(i) (26u - ((unsigned)(i)&1u))

void fe25519_0(fe25519 h)
{
	unsigned int i;
	for (i = 0; i < 10; i++)
		h[i] = 0;
}

void fe25519_1(fe25519 h)
{
	fe25519_0(h);
	h[0] = 1;
}

void fe25519_copy(fe25519 h, const fe25519 f)
{
	unsigned int i;
	for (i = 0; i < 10; i++)
		h[i] = f[i];
}

/* carry32 brings limbs below 2^30 to tight form. The carry out of limb 9 is
 * worth 2^255 = 19 (mod p) and goes back into limb 0, which carries once more
 * into limb 1 (the one limb that may stay slightly over its width). */
static void carry32(fe25519 h)
{
	uint32_t c;
	unsigned int i;
#pragma GCC unroll 9
	for (i = 0; i < 9; i++) {
		c = h[i] >> W(i);
		h[i] &= i & 1 ? M25 : M26;
		h[i + 1] += c;
	}
	c = h[9] >> 25;
	h[9] &= M25;
	h[0] += 19 * c;
	c = h[0] >> 26;
	h[0] &= M26;
	h[1] += c;
}

/* carry64 reduces sums of products (each below 2^63) to a tight element. */
static void carry64(fe25519 h, uint64_t t[10])
{
	uint64_t c;
	unsigned int i;
#pragma GCC unroll 9
	for (i = 0; i < 9; i++) {
		c = t[i] >> W(i);
		t[i] &= i & 1 ? M25 : M26;
		t[i + 1] += c;
	}
	c = t[9] >> 25;
	t[9] &= M25;
	t[0] += 19 * c;
	c = t[0] >> 26;
	t[0] &= M26;
	t[1] += c;
	for (i = 0; i < 10; i++)
		h[i] = (uint32_t)t[i];
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void fe25519_frombytes(fe25519 h, const uint8_t s[32])
{
	unsigned int i, off = 0;
	/* Limb i starts at bit off = ceil(25.5 i); its bits lie within the 32-bit
	 * word at byte off/8 (off%8 + width <= 32 for every limb), and limb 9's
	 * mask stops at bit 254, which drops bit 255. */
	for (i = 0; i < 10; i++) {
		h[i] = (load32(s + off / 8) >> (off % 8)) & (i & 1 ? M25 : M26);
		off += W(i);
	}
}

void fe25519_tobytes(uint8_t s[32], const fe25519 f)
{
	fe25519 h;
	uint32_t q;
	uint64_t acc = 0;
	unsigned int i, bits = 0, n = 0;

	fe25519_copy(h, f);
	carry32(h);
	/* h is tight, so its value v is below 2^255 + 2^44 and
	 * q = floor((v + 19) / 2^255) is 1 exactly when v >= p. */
	q = (h[0] + 19) >> 26;
	for (i = 1; i < 10; i++)
		q = (h[i] + q) >> W(i);
	/* v - q p = v + 19 q - q 2^255: add 19 q and drop the carry out of limb 9. */
	h[0] += 19 * q;
	for (i = 0; i < 9; i++) {
		h[i + 1] += h[i] >> W(i);
		h[i] &= i & 1 ? M25 : M26;
	}
	h[9] &= M25;
	for (i = 0; i < 10; i++) {
		acc |= (uint64_t)h[i] << bits;
		bits += W(i);
		while (bits >= 8 && n < 32) {
			s[n++] = (uint8_t)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
	while (n < 32) {
		s[n++] = (uint8_t)acc;
		acc >>= 8;
	}
}

void fe25519_add(fe25519 h, const fe25519 f, const fe25519 g)
{
	unsigned int i;
	for (i = 0; i < 10; i++)
		h[i] = f[i] + g[i];
	carry32(h);
}

/* 2p in limbs: every limb of a tight element is below the matching limb. */
static const uint32_t twop[10] = {
	2 * (M26 - 18), 2 * M25, 2 * M26, 2 * M25, 2 * M26,
	2 * M25,        2 * M26, 2 * M25, 2 * M26, 2 * M25,
};

void fe25519_sub(fe25519 h, const fe25519 f, const fe25519 g)
{
	unsigned int i;
	for (i = 0; i < 10; i++)
		h[i] = f[i] + twop[i] - g[i];
	carry32(h);
}

void fe25519_neg(fe25519 h, const fe25519 f)
{
	fe25519 z;
	fe25519_0(z);
	fe25519_sub(h, z, f);
}

/* Limb i of f times limb j of g has weight 2^(off(i) + off(j)), which is
 * 2^off(i+j) times 2 when i and j are both odd (two 25-bit limbs: 25.5 + 25.5
 * rounds up once too often), and lands at i + j - 10 times 19 when i + j >= 10
 * (2^255 = 19). With tight inputs (limbs below 2^26 + 2^18) a term is below
 * 2 * 19 * 2^52.1 and a column of ten below 2^61. Column k is summed in one
 * 64-bit accumulator (a multiply-accumulate chain); the loops have constant
 * bounds and are unrolled, and every index and shift depends on i and k only. */
void fe25519_mul(fe25519 h, const fe25519 f, const fe25519 g)
{
	uint32_t g19[10];
	uint64_t t[10];
	unsigned int i, k;

#pragma GCC unroll 10
	for (i = 0; i < 10; i++)
		g19[i] = 19 * g[i];
#pragma GCC unroll 10
	for (k = 0; k < 10; k++) {
		uint64_t acc = 0;
#pragma GCC unroll 10
		for (i = 0; i < 10; i++) {
			unsigned int j = (k + 10 - i) % 10;
			acc += (uint64_t)(f[i] << (i & j & 1)) * (i <= k ? g[j] : g19[j]);
		}
		t[k] = acc;
	}
	carry64(h, t);
}

/* Squaring: the products f_i f_j and f_j f_i (i != j) are one term doubled;
 * column k takes the pairs i < j with i + j = k or k + 10, and the square
 * f_i^2 when 2i = k or k + 10. */
void fe25519_sq(fe25519 h, const fe25519 f)
{
	uint32_t f2[10], f19[10];
	uint64_t t[10];
	unsigned int i, k;

#pragma GCC unroll 10
	for (i = 0; i < 10; i++) {
		f2[i] = 2 * f[i];
		f19[i] = 19 * f[i];
	}
#pragma GCC unroll 10
	for (k = 0; k < 10; k++) {
		uint64_t acc = 0;
#pragma GCC unroll 10
		for (i = 0; i < 10; i++) {
			unsigned int j = (k + 10 - i) % 10;
			uint32_t b = i <= k ? f[j] : f19[j];
			if (i < j)
				acc += (uint64_t)(f2[i] << (i & j & 1)) * b;
			else if (i == j)
				acc += (uint64_t)(f[i] << (i & 1)) * b;
		}
		t[k] = acc;
	}
	carry64(h, t);
}

void fe25519_mul_small(fe25519 h, const fe25519 f, uint32_t c)
{
	uint64_t t[10];
	unsigned int i;
	for (i = 0; i < 10; i++)
		t[i] = (uint64_t)f[i] * c;
	carry64(h, t);
}

static void sqn(fe25519 h, const fe25519 f, unsigned int n)
{
	fe25519_sq(h, f);
	while (--n > 0)
		fe25519_sq(h, h);
}

/* z^(2^250 - 1) into r250, and z^11 into z11: the common prefix of the
 * inversion and square-root exponents. */
static void pow2250m1(fe25519 r250, fe25519 z11, const fe25519 z)
{
	fe25519 t0, t1, t2, t3;
	fe25519_sq(t0, z);           /* z^2 */
	sqn(t1, t0, 2);              /* z^8 */
	fe25519_mul(t1, t1, z);      /* z^9 */
	fe25519_mul(z11, t0, t1);    /* z^11 */
	fe25519_sq(t0, z11);         /* z^22 */
	fe25519_mul(t1, t1, t0);     /* z^31 = z^(2^5 - 1) */
	sqn(t0, t1, 5);
	fe25519_mul(t2, t0, t1);     /* 2^10 - 1 */
	sqn(t0, t2, 10);
	fe25519_mul(t3, t0, t2);     /* 2^20 - 1 */
	sqn(t0, t3, 20);
	fe25519_mul(t3, t0, t3);     /* 2^40 - 1 */
	sqn(t0, t3, 10);
	fe25519_mul(t3, t0, t2);     /* 2^50 - 1 */
	sqn(t0, t3, 50);
	fe25519_mul(t1, t0, t3);     /* 2^100 - 1 */
	sqn(t0, t1, 100);
	fe25519_mul(t1, t0, t1);     /* 2^200 - 1 */
	sqn(t0, t1, 50);
	fe25519_mul(r250, t0, t3);   /* 2^250 - 1 */
}

void fe25519_invert(fe25519 h, const fe25519 f)
{
	fe25519 r, z11;
	pow2250m1(r, z11, f);
	sqn(r, r, 5);                /* 2^255 - 32 */
	fe25519_mul(h, r, z11);      /* 2^255 - 21 = p - 2 */
}

void fe25519_pow22523(fe25519 h, const fe25519 f)
{
	fe25519 r, z11;
	pow2250m1(r, z11, f);
	sqn(r, r, 2);                /* 2^252 - 4 */
	fe25519_mul(h, r, f);        /* 2^252 - 3 = (p - 5) / 8 */
}

void fe25519_cswap(fe25519 f, fe25519 g, uint32_t b)
{
	uint32_t m = -ct_barrier_u32(b), x;
	unsigned int i;
	for (i = 0; i < 10; i++) {
		x = m & (f[i] ^ g[i]);
		f[i] ^= x;
		g[i] ^= x;
	}
}

uint32_t fe25519_iszero(const fe25519 f)
{
	uint8_t s[32];
	uint32_t r = 0;
	unsigned int i;
	fe25519_tobytes(s, f);
	for (i = 0; i < 32; i++)
		r |= s[i];
	r = ct_barrier_u32(r);
	return 1 ^ ((uint32_t)(-r) >> 31);
}

uint32_t fe25519_isneg(const fe25519 f)
{
	uint8_t s[32];
	fe25519_tobytes(s, f);
	return s[0] & 1;
}
