/* Ed25519 (RFC 8032, pure Ed25519): key derivation and signing (5.1.5, 5.1.6), constant time
 * in the seed and the nonce, and verification (5.1.7), whose inputs are all public: it
 * branches on them freely. Points are in extended homogeneous coordinates (X:Y:Z:T),
 * x = X/Z, y = Y/Z, x y = T/Z, with the addition and doubling formulas of RFC 8032 section
 * 5.1.4 (complete: no input is a special case, so neither formula branches). */
#include "c25519.h"

#include "../ct.h"
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

/* ge_double: r = 2p (RFC 8032 5.1.4, doubling). Always inlined: the compiler inlined it into
 * the verification when that was its one caller, and keeping it so keeps the verification's
 * code, and the TLS client's counts, as they were before signing was added. */
static inline __attribute__((always_inline)) void ge_double(ge25519 *r, const ge25519 *p)
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

/* ---- signing: constant time in the secret scalar a, the prefix and the nonce r ---- */

/* sc_reduce sets r = x mod L for the integer x of nw little-endian 32-bit words, bit by bit
 * from the top: r = 2r + bit stays below 2L < 2^254, and L is subtracted when that does not
 * borrow, by a mask. No branch or memory index depends on x. */
static void sc_reduce(uint32_t r[8], const uint32_t *x, unsigned int nw)
{
	uint32_t t[8], mask;
	uint64_t c;
	unsigned int i, j;
	for (j = 0; j < 8; j++)
		r[j] = 0;
	for (i = 32 * nw; i-- > 0;) {
		for (j = 7; j > 0; j--)
			r[j] = r[j] << 1 | r[j - 1] >> 31;
		r[0] = r[0] << 1 | ((x[i >> 5] >> (i & 31)) & 1);
		c = 0;
		for (j = 0; j < 8; j++) {
			c = (uint64_t)r[j] - order_l[j] - (uint32_t)(c >> 63);
			t[j] = (uint32_t)c;
		}
		mask = ct_barrier_u32((uint32_t)(c >> 63)) - 1; /* all ones when r >= L */
		for (j = 0; j < 8; j++)
			r[j] ^= mask & (r[j] ^ t[j]);
	}
}

/* sc_reduce_hash sets r = h mod L for a 64-byte SHA-512 output read as a little-endian integer
 * (RFC 8032 5.1.6, steps 2 and 4). */
static void sc_reduce_hash(uint32_t r[8], const uint8_t h[64])
{
	uint32_t w[16];
	unsigned int i;
	for (i = 0; i < 16; i++)
		w[i] = load32(h + 4 * i);
	sc_reduce(r, w, 16);
	memset(w, 0, sizeof w);
}

/* sc_muladd sets s = (r + k a) mod L for k, r < L and a < 2^255: the 512-bit sum (below 2^509)
 * by schoolbook multiplication, then sc_reduce. */
static void sc_muladd(uint32_t s[8], const uint32_t r[8], const uint32_t k[8], const uint32_t a[8])
{
	uint32_t p[16];
	uint64_t c;
	unsigned int i, j;
	for (i = 0; i < 16; i++)
		p[i] = i < 8 ? r[i] : 0;
	for (i = 0; i < 8; i++) {
		c = 0;
		for (j = 0; j < 8; j++) {
			c = (uint64_t)k[i] * a[j] + p[i + j] + (c >> 32);
			p[i + j] = (uint32_t)c;
		}
		for (j = i + 8; j < 16; j++) {
			c = (uint64_t)p[j] + (c >> 32);
			p[j] = (uint32_t)c;
		}
	}
	sc_reduce(s, p, 16);
	memset(p, 0, sizeof p);
}

static void store32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* fe_cmov sets f = g when mask is all ones and leaves f when it is 0. */
static void fe_cmov(fe25519 f, const fe25519 g, uint32_t mask)
{
	unsigned int i;
	for (i = 0; i < 10; i++)
		f[i] ^= mask & (f[i] ^ g[i]);
}

/* ge_select sets t = b B from tbl[j] = (j+1) B for a digit -8 <= b <= 8: every entry is read and
 * the negation is taken and kept or dropped by masks. */
static void ge_select(ge25519 *t, const ge25519 tbl[8], int32_t b)
{
	uint32_t ub = (uint32_t)b, neg = ub >> 31, babs = (ub ^ (0u - neg)) + neg, d, mask;
	fe25519 nx, nt;
	unsigned int j;
	ge_identity(t);
	for (j = 0; j < 8; j++) {
		d = ct_barrier_u32(babs ^ (j + 1));
		mask = ((d | (0u - d)) >> 31) - 1; /* all ones when babs == j + 1 */
		fe_cmov(t->X, tbl[j].X, mask);
		fe_cmov(t->Y, tbl[j].Y, mask);
		fe_cmov(t->Z, tbl[j].Z, mask);
		fe_cmov(t->T, tbl[j].T, mask);
	}
	fe25519_neg(nx, t->X);
	fe25519_neg(nt, t->T);
	mask = 0u - ct_barrier_u32(neg);
	fe_cmov(t->X, nx, mask);
	fe_cmov(t->T, nt, mask);
}

/* ge_scalarmult_base sets r = s B for a 32-byte little-endian s below 2^255. s is recoded into
 * 64 signed digits -8 <= e[i] < 8 (e[63] <= 8), s = sum e[i] 16^i, by arithmetic alone; then from
 * the top, four doublings and one addition of a table entry (1 B .. 8 B, built here) per digit:
 * the same sequence of operations for every s. */
static void ge_scalarmult_base(ge25519 *r, const uint8_t s[32])
{
	ge25519 tbl[8], t;
	fe25519 d2;
	int32_t e[64], carry = 0;
	int i, j;
	for (i = 0; i < 32; i++) {
		e[2 * i] = s[i] & 15;
		e[2 * i + 1] = s[i] >> 4;
	}
	for (i = 0; i < 63; i++) {
		e[i] += carry;
		carry = (int32_t)((uint32_t)(e[i] + 8) >> 4); /* e[i] + 8 is 8..24: no sign to shift */
		e[i] -= carry * 16;
	}
	e[63] += carry;

	fe25519_frombytes(d2, con_2d);
	fe25519_frombytes(tbl[0].X, con_bx);
	fe25519_frombytes(tbl[0].Y, con_by);
	fe25519_1(tbl[0].Z);
	fe25519_mul(tbl[0].T, tbl[0].X, tbl[0].Y);
	ge_double(&tbl[1], &tbl[0]);
	for (i = 2; i < 8; i++)
		ge_add(&tbl[i], &tbl[i - 1], &tbl[0], d2);

	ge_select(r, tbl, e[63]);
	for (i = 62; i >= 0; i--) {
		for (j = 0; j < 4; j++)
			ge_double(r, r);
		ge_select(&t, tbl, e[i]);
		ge_add(r, r, &t, d2);
	}
	memset(e, 0, sizeof e);
	memset(&t, 0, sizeof t);
}

/* expand_seed: h = SHA-512(seed), the scalar a its clamped first half (RFC 8032 5.1.5 steps 1-3),
 * the prefix its second half. */
static void expand_seed(uint8_t h[64], const uint8_t seed[ED25519_SEEDBYTES])
{
	sha512(h, seed, ED25519_SEEDBYTES);
	h[0] &= 248;
	h[31] &= 127;
	h[31] |= 64;
}

void ed25519_pubkey(uint8_t pk[ED25519_PUBLICKEYBYTES], const uint8_t seed[ED25519_SEEDBYTES])
{
	uint8_t h[64];
	ge25519 a;
	expand_seed(h, seed);
	ge_scalarmult_base(&a, h);
	ge_encode(pk, &a);
	memset(h, 0, sizeof h);
	memset(&a, 0, sizeof a);
}

void ed25519_sign(uint8_t sig[ED25519_SIGBYTES], const uint8_t seed[ED25519_SEEDBYTES],
		  const uint8_t pk[ED25519_PUBLICKEYBYTES], const uint8_t *msg, size_t msglen)
{
	uint8_t h[64], d[64];
	uint32_t a[8], r[8], k[8], s[8];
	ge25519 rp;
	sha512_ctx ctx;
	unsigned int i;

	expand_seed(h, seed);
	/* r = SHA-512(prefix || M) mod L; R = r B (steps 2, 3). */
	sha512_init(&ctx);
	sha512_update(&ctx, h + 32, 32);
	sha512_update(&ctx, msg, msglen);
	sha512_final(&ctx, d);
	sc_reduce_hash(r, d);
	for (i = 0; i < 8; i++)
		store32(d + 4 * i, r[i]);
	ge_scalarmult_base(&rp, d);
	ge_encode(sig, &rp);
	/* k = SHA-512(R || A || M) mod L; S = (r + k a) mod L (steps 4, 5). */
	sha512_init(&ctx);
	sha512_update(&ctx, sig, 32);
	sha512_update(&ctx, pk, 32);
	sha512_update(&ctx, msg, msglen);
	sha512_final(&ctx, d);
	sc_reduce_hash(k, d);
	for (i = 0; i < 8; i++)
		a[i] = load32(h + 4 * i);
	sc_muladd(s, r, k, a);
	for (i = 0; i < 8; i++)
		store32(sig + 32 + 4 * i, s[i]);

	memset(h, 0, sizeof h);
	memset(d, 0, sizeof d);
	memset(a, 0, sizeof a);
	memset(r, 0, sizeof r);
	memset(&rp, 0, sizeof rp);
	memset(&ctx, 0, sizeof ctx);
}
