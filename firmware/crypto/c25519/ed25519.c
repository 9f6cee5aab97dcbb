/* Ed25519 signature verification (RFC 8032 section 5.1.7), pure Ed25519. All
 * inputs are public: the code branches on them freely. Points are in extended
 * homogeneous coordinates (X:Y:Z:T), x = X/Z, y = Y/Z, x y = T/Z, with the
 * addition and doubling formulas of RFC 8032 section 5.1.4. */
#include "c25519.h"

#include "../pqmem.h"
#include "../sha2/sha2.h"
#include "fe25519.h"

typedef struct {
	fe25519 X, Y, Z, T;
} ge25519;

/* Curve constants, little-endian field elements: d = -121665/121666, 2d,
 * sqrt(-1) = 2^((p-1)/4), and the base point B of RFC 8032 section 5.1
 * (y = 4/5, x even). */
static const uint8_t con_2d[32] = {
	0x59, 0xf1, 0xb2, 0x26, 0x94, 0x9b, 0xd6, 0xeb, 0x56, 0xb1, 0x83, 0x82, 0x9a, 0x14, 0xe0, 0x00,
	0x30, 0xd1, 0xf3, 0xee, 0xf2, 0x80, 0x8e, 0x19, 0xe7, 0xfc, 0xdf, 0x56, 0xdc, 0xd9, 0x06, 0x24,
};
static const uint8_t con_d[32] = {
	0xa3, 0x78, 0x59, 0x13, 0xca, 0x4d, 0xeb, 0x75, 0xab, 0xd8, 0x41, 0x41, 0x4d, 0x0a, 0x70, 0x00,
	0x98, 0xe8, 0x79, 0x77, 0x79, 0x40, 0xc7, 0x8c, 0x73, 0xfe, 0x6f, 0x2b, 0xee, 0x6c, 0x03, 0x52,
};
static const uint8_t con_sqrtm1[32] = {
	0xb0, 0xa0, 0x0e, 0x4a, 0x27, 0x1b, 0xee, 0xc4, 0x78, 0xe4, 0x2f, 0xad, 0x06, 0x18, 0x43, 0x2f,
	0xa7, 0xd7, 0xfb, 0x3d, 0x99, 0x00, 0x4d, 0x2b, 0x0b, 0xdf, 0xc1, 0x4f, 0x80, 0x24, 0x83, 0x2b,
};
static const uint8_t con_bx[32] = {
	0x1a, 0xd5, 0x25, 0x8f, 0x60, 0x2d, 0x56, 0xc9, 0xb2, 0xa7, 0x25, 0x95, 0x60, 0xc7, 0x2c, 0x69,
	0x5c, 0xdc, 0xd6, 0xfd, 0x31, 0xe2, 0xa4, 0xc0, 0xfe, 0x53, 0x6e, 0xcd, 0xd3, 0x36, 0x69, 0x21,
};
static const uint8_t con_by[32] = {
	0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
	0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
};
/* The group order L = 2^252 + 27742317777372353535851937790883648493, as
 * little-endian 32-bit words. */
static const uint32_t order_l[8] = {
	0x5cf5d3ed, 0x5812631a, 0xa2f79cd6, 0x14def9de, 0x00000000, 0x00000000, 0x00000000, 0x10000000,
};

static void ge_identity(ge25519 *p)
{
	fe25519_0(p->X);
	fe25519_1(p->Y);
	fe25519_1(p->Z);
	fe25519_0(p->T);
}

/* ge_add: r = p + q (RFC 8032 5.1.4, the formulas for a = -1; complete, so
 * they also double and take the identity). */
static void ge_add(ge25519 *r, const ge25519 *p, const ge25519 *q, const fe25519 d2)
{
	fe25519 a, b, c, d, e, f, g, h, t;
	fe25519_sub(a, p->Y, p->X);
	fe25519_sub(t, q->Y, q->X);
	fe25519_mul(a, a, t);
	fe25519_add(b, p->Y, p->X);
	fe25519_add(t, q->Y, q->X);
	fe25519_mul(b, b, t);
	fe25519_mul(c, p->T, q->T);
	fe25519_mul(c, c, d2);
	fe25519_mul(d, p->Z, q->Z);
	fe25519_add(d, d, d);
	fe25519_sub(e, b, a);
	fe25519_sub(f, d, c);
	fe25519_add(g, d, c);
	fe25519_add(h, b, a);
	fe25519_mul(r->X, e, f);
	fe25519_mul(r->Y, g, h);
	fe25519_mul(r->T, e, h);
	fe25519_mul(r->Z, f, g);
}

/* ge_double: r = 2p (RFC 8032 5.1.4, doubling). */
static void ge_double(ge25519 *r, const ge25519 *p)
{
	fe25519 a, b, c, e, f, g, h;
	fe25519_sq(a, p->X);
	fe25519_sq(b, p->Y);
	fe25519_sq(c, p->Z);
	fe25519_add(c, c, c);
	fe25519_add(h, a, b);
	fe25519_add(e, p->X, p->Y);
	fe25519_sq(e, e);
	fe25519_sub(e, h, e);
	fe25519_sub(g, a, b);
	fe25519_add(f, c, g);
	fe25519_mul(r->X, e, f);
	fe25519_mul(r->Y, g, h);
	fe25519_mul(r->T, e, h);
	fe25519_mul(r->Z, f, g);
}

static void ge_neg(ge25519 *r, const ge25519 *p)
{
	fe25519_neg(r->X, p->X);
	fe25519_copy(r->Y, p->Y);
	fe25519_copy(r->Z, p->Z);
	fe25519_neg(r->T, p->T);
}

static void ge_encode(uint8_t s[32], const ge25519 *p)
{
	fe25519 zi, x, y;
	fe25519_invert(zi, p->Z);
	fe25519_mul(x, p->X, zi);
	fe25519_mul(y, p->Y, zi);
	fe25519_tobytes(s, y);
	s[31] |= (uint8_t)(fe25519_isneg(x) << 7);
}

/* ge_decode: RFC 8032 section 5.1.3. */
static int ge_decode(ge25519 *p, const uint8_t s[32])
{
	uint8_t chk[32];
	unsigned int sign = s[31] >> 7, i;
	fe25519 u, v, v3, t, one;

	/* 1. y < p: the canonical encoding of y must be the input's low 255 bits. */
	fe25519_frombytes(p->Y, s);
	fe25519_tobytes(chk, p->Y);
	chk[31] |= (uint8_t)(sign << 7);
	for (i = 0; i < 32; i++)
		if (chk[i] != s[i])
			return -1;
	/* 2. x^2 = u/v with u = y^2 - 1, v = d y^2 + 1; the candidate root is
	 * x = u v^3 (u v^7)^((p-5)/8). */
	fe25519_1(one);
	fe25519_sq(u, p->Y);
	fe25519_frombytes(t, con_d);
	fe25519_mul(v, u, t);
	fe25519_sub(u, u, one);
	fe25519_add(v, v, one);
	fe25519_sq(v3, v);
	fe25519_mul(v3, v3, v);              /* v^3 */
	fe25519_sq(t, v3);
	fe25519_mul(t, t, v);                /* v^7 */
	fe25519_mul(t, t, u);                /* u v^7 */
	fe25519_pow22523(t, t);
	fe25519_mul(t, t, v3);
	fe25519_mul(p->X, t, u);             /* u v^3 (u v^7)^((p-5)/8) */
	/* 3. v x^2 = u: x is a root; v x^2 = -u: x sqrt(-1) is; else none. */
	fe25519_sq(t, p->X);
	fe25519_mul(t, t, v);
	fe25519_sub(v3, t, u);
	if (!fe25519_iszero(v3)) {
		fe25519_add(v3, t, u);
		if (!fe25519_iszero(v3))
			return -1;
		fe25519_frombytes(t, con_sqrtm1);
		fe25519_mul(p->X, p->X, t);
	}
	/* 4. x = 0 with the sign bit set has no encoding; else choose the sign. */
	if (fe25519_iszero(p->X) && sign)
		return -1;
	if (fe25519_isneg(p->X) != sign)
		fe25519_neg(p->X, p->X);
	fe25519_1(p->Z);
	fe25519_mul(p->T, p->X, p->Y);
	return 0;
}

int ed25519_decode_point(uint8_t out[32], const uint8_t s[32])
{
	ge25519 p;
	if (ge_decode(&p, s) != 0)
		return -1;
	ge_encode(out, &p);
	return 0;
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* geq_l: 1 when the 256-bit little-endian word string a is at least L. */
static int geq_l(const uint32_t a[8])
{
	int i;
	for (i = 7; i >= 0; i--) {
		if (a[i] != order_l[i])
			return a[i] > order_l[i];
	}
	return 1;
}

static void sub_l(uint32_t a[8])
{
	uint64_t borrow = 0, x;
	unsigned int i;
	for (i = 0; i < 8; i++) {
		x = (uint64_t)a[i] - order_l[i] - borrow;
		a[i] = (uint32_t)x;
		borrow = (x >> 32) & 1;
	}
}

/* reduce512: r = h mod L for the 64-byte little-endian digest h, bit by bit
 * from the top (r < L < 2^253 stays within eight words after doubling). */
static void reduce512(uint32_t r[8], const uint8_t h[64])
{
	unsigned int i, j, bit;
	for (i = 0; i < 8; i++)
		r[i] = 0;
	for (i = 512; i-- > 0;) {
		bit = (h[i >> 3] >> (i & 7)) & 1;
		for (j = 7; j > 0; j--)
			r[j] = r[j] << 1 | r[j - 1] >> 31;
		r[0] = r[0] << 1 | bit;
		if (geq_l(r))
			sub_l(r);
	}
}

int ed25519_verify(const uint8_t *sig, size_t siglen, const uint8_t pk[ED25519_PUBLICKEYBYTES],
		   const uint8_t *msg, size_t msglen)
{
	ge25519 a, base, sum, r, tbl[4];
	fe25519 d2;
	uint32_t s[8], k[8];
	uint8_t h[64], rcheck[32];
	sha512_ctx ctx;
	unsigned int i;
	int t;

	if (siglen != ED25519_SIGBYTES)
		return -1;
	/* S = sig[32..63] must be below L (RFC 8032 5.1.7, step 1). */
	for (i = 0; i < 8; i++)
		s[i] = load32(sig + 32 + 4 * i);
	if (geq_l(s))
		return -1;
	if (ge_decode(&a, pk) != 0)
		return -1;

	/* k = SHA-512(R || A || M) mod L. */
	sha512_init(&ctx);
	sha512_update(&ctx, sig, 32);
	sha512_update(&ctx, pk, 32);
	sha512_update(&ctx, msg, msglen);
	sha512_final(&ctx, h);
	reduce512(k, h);

	/* [S]B + [k](-A) by one pass of doublings over both scalars (Straus):
	 * tbl[i] for the bit pair i = (bit of S) + 2 (bit of k). */
	fe25519_frombytes(d2, con_2d);
	fe25519_frombytes(base.X, con_bx);
	fe25519_frombytes(base.Y, con_by);
	fe25519_1(base.Z);
	fe25519_mul(base.T, base.X, base.Y);
	ge_identity(&tbl[0]);
	tbl[1] = base;
	ge_neg(&tbl[2], &a);
	ge_add(&tbl[3], &base, &tbl[2], d2);

	ge_identity(&sum);
	for (t = 252; t >= 0; t--) {
		unsigned int sel = ((s[t >> 5] >> (t & 31)) & 1) | ((k[t >> 5] >> (t & 31)) & 1) << 1;
		ge_double(&r, &sum);
		if (sel)
			ge_add(&sum, &r, &tbl[sel], d2);
		else
			sum = r;
	}
	/* The check: the encoding of [S]B - [k]A is R, byte for byte (cofactorless). */
	ge_encode(rcheck, &sum);
	return memcmp(rcheck, sig, 32) == 0 ? 0 : -1;
}
