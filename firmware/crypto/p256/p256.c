/* NIST P-256: field and scalar arithmetic, complete point formulas, ECDH, ECDSA signing and
 * verification. See p256.h for the contract and docs/DECISIONS.md for the choices. */
#include "p256.h"

#include "../pqmem.h"

#include "../ct.h"
#include "../hkdf/hkdf.h"
#include "../sha2/sha2.h"

/* DECLASSIFY marks a value derived from a secret as public where the code branches on it by
 * design (a refused scalar, a result at infinity). The host's constant-time check
 * (p256_test.go, valgrind memcheck with the secrets marked undefined) defines P256_CT_CHECK. */
#ifdef P256_CT_CHECK
#include <valgrind/memcheck.h>
#define DECLASSIFY(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define DECLASSIFY(p, n) ((void)(p), (void)(n))
#endif

/* An integer below 2^256 as eight 32-bit limbs, least significant first. */
typedef uint32_t limbs[8];

/* A modulus with what Montgomery multiplication (R = 2^256) needs. */
typedef struct {
	limbs m;
	uint32_t m0inv; /* -m^-1 mod 2^32 */
	limbs r2;       /* R^2 mod m */
	limbs one;      /* R mod m, 1 in Montgomery form */
	uint8_t exp[32]; /* m - 2 big-endian, the inversion exponent (Fermat) */
} modulus;

/* p = 2^256 - 2^224 + 2^192 + 2^96 - 1 (SP 800-186 §3.2.1.3). Its low limb is 2^32 - 1, so
 * -p^-1 = 1 mod 2^32. */
static const modulus FP = {
	{0xffffffff, 0xffffffff, 0xffffffff, 0x00000000, 0x00000000, 0x00000000, 0x00000001, 0xffffffff},
	0x00000001,
	{0x00000003, 0x00000000, 0xffffffff, 0xfffffffb, 0xfffffffe, 0xffffffff, 0xfffffffd, 0x00000004},
	{0x00000001, 0x00000000, 0x00000000, 0xffffffff, 0xffffffff, 0xffffffff, 0xfffffffe, 0x00000000},
	{0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd},
};

/* n, the order of G. */
static const modulus FN = {
	{0xfc632551, 0xf3b9cac2, 0xa7179e84, 0xbce6faad, 0xffffffff, 0xffffffff, 0x00000000, 0xffffffff},
	0xee00bc4f,
	{0xbe79eea2, 0x83244c95, 0x49bd6fa6, 0x4699799c, 0x2b6bec59, 0x2845b239, 0xf3d95620, 0x66e12d94},
	{0x039cdaaf, 0x0c46353d, 0x58e8617b, 0x43190552, 0x00000000, 0x00000000, 0xffffffff, 0x00000000},
	{0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x4f},
};

/* b, G's coordinates, in Montgomery form mod p. */
static const limbs B_M = {0x29c4bddf, 0xd89cdf62, 0x78843090, 0xacf005cd, 0xf7212ed6, 0xe5a220ab, 0x04874834, 0xdc30061d};
static const limbs GX_M = {0x18a9143c, 0x79e730d4, 0x5fedb601, 0x75ba95fc, 0x77622510, 0x79fb732b, 0xa53755c6, 0x18905f76};
static const limbs GY_M = {0xce95560a, 0xddf25357, 0xba19e45c, 0x8b4ab8e4, 0xdd21f325, 0xd2e88688, 0x25885d85, 0x8571ff18};

/* ---- limb helpers ---- */

/* UNROLL unrolls a loop over the eight limbs (GCC), which keeps carries in registers. */
#if defined(__GNUC__) && !defined(__clang__)
#define UNROLL _Pragma("GCC unroll 8")
#else
#define UNROLL
#endif

static void from_be(limbs r, const uint8_t b[32])
{
	for (int i = 0; i < 8; i++) {
		const uint8_t *q = b + 28 - 4 * i;
		r[i] = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
	}
}

static void to_be(uint8_t b[32], const limbs a)
{
	for (int i = 0; i < 8; i++) {
		uint8_t *q = b + 28 - 4 * i;
		q[0] = (uint8_t)(a[i] >> 24);
		q[1] = (uint8_t)(a[i] >> 16);
		q[2] = (uint8_t)(a[i] >> 8);
		q[3] = (uint8_t)a[i];
	}
}

/* sub_borrow sets r = a - b mod 2^256 and returns the borrow (0 or 1). */
static uint32_t sub_borrow(limbs r, const limbs a, const limbs b)
{
	uint64_t t = 0;
	UNROLL
	for (int i = 0; i < 8; i++) {
		t = (uint64_t)a[i] - b[i] - (uint32_t)(t >> 63);
		r[i] = (uint32_t)t;
	}
	return (uint32_t)(t >> 63);
}

/* lt_mask is all ones when a < b, else 0, in constant time. */
static uint32_t lt_mask(const limbs a, const limbs b)
{
	limbs d;
	return -ct_barrier_u32(sub_borrow(d, a, b));
}

/* is_zero_mask is all ones when a == 0, else 0, in constant time. */
static uint32_t is_zero_mask(const limbs a)
{
	uint32_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= a[i];
	x = ct_barrier_u32(x);
	return ((x | (0u - x)) >> 31) - 1;
}

static uint32_t eq_mask(const limbs a, const limbs b)
{
	limbs d;
	for (int i = 0; i < 8; i++)
		d[i] = a[i] ^ b[i];
	return is_zero_mask(d);
}

/* select sets r = mask ? a : r (mask all ones or 0). */
static void select_limbs(limbs r, const limbs a, uint32_t mask)
{
	UNROLL
	for (int i = 0; i < 8; i++)
		r[i] ^= mask & (r[i] ^ a[i]);
}

/* ---- arithmetic mod m (p or n), operands fully reduced (< m) ---- */

static inline __attribute__((always_inline)) void mod_add_core(limbs r, const limbs a, const limbs b,
	const modulus *md)
{
	limbs s, d;
	uint64_t t = 0;
	UNROLL
	for (int i = 0; i < 8; i++) {
		t = (uint64_t)a[i] + b[i] + (t >> 32);
		s[i] = (uint32_t)t;
	}
	uint32_t carry = (uint32_t)(t >> 32);
	uint32_t borrow = sub_borrow(d, s, md->m);
	/* keep s when the 257-bit sum is below m: no carry and a borrow */
	uint32_t keep = -ct_barrier_u32(borrow & (carry ^ 1));
	UNROLL
	for (int i = 0; i < 8; i++)
		r[i] = (s[i] & keep) | (d[i] & ~keep);
}

/* mod_add is called for p only (the point formulas' FADD), which lets the compiler fold p into
 * it; n_add is the same code for n (signing), kept apart so that folding, and the client's
 * counts, stay as they were. */
static void mod_add(limbs r, const limbs a, const limbs b, const modulus *md)
{
	mod_add_core(r, a, b, md);
}

static void n_add(limbs r, const limbs a, const limbs b)
{
	mod_add_core(r, a, b, &FN);
}

static void mod_sub(limbs r, const limbs a, const limbs b, const modulus *md)
{
	limbs d;
	uint32_t mask = -ct_barrier_u32(sub_borrow(d, a, b));
	uint64_t t = 0;
	UNROLL
	for (int i = 0; i < 8; i++) {
		t = (uint64_t)d[i] + (md->m[i] & mask) + (t >> 32);
		r[i] = (uint32_t)t;
	}
}

/* mont_mul sets r = a*b*R^-1 mod m (CIOS). It needs a*b < R*m, which holds when one operand is
 * below m and the other below 2^256; the result is below m. r may alias a or b. */
static inline __attribute__((always_inline)) void mont_mul_core(limbs r, const limbs a, const limbs b,
	const modulus *md)
{
	uint32_t t[10] = {0};
	for (int i = 0; i < 8; i++) {
		uint64_t c = 0;
		UNROLL
		for (int j = 0; j < 8; j++) {
			c = (uint64_t)a[j] * b[i] + t[j] + (c >> 32);
			t[j] = (uint32_t)c;
		}
		c = (uint64_t)t[8] + (c >> 32);
		t[8] = (uint32_t)c;
		t[9] = (uint32_t)(c >> 32);

		uint32_t q = t[0] * md->m0inv;
		c = (uint64_t)q * md->m[0] + t[0];
		UNROLL
		for (int j = 1; j < 8; j++) {
			c = (uint64_t)q * md->m[j] + t[j] + (c >> 32);
			t[j - 1] = (uint32_t)c;
		}
		c = (uint64_t)t[8] + (c >> 32);
		t[7] = (uint32_t)c;
		t[8] = t[9] + (uint32_t)(c >> 32);
	}
	limbs d;
	uint32_t borrow = sub_borrow(d, t, md->m);
	uint32_t keep = -ct_barrier_u32(borrow & (t[8] ^ 1));
	UNROLL
	for (int i = 0; i < 8; i++)
		r[i] = (t[i] & keep) | (d[i] & ~keep);
}

/* mont_mul for either modulus; fp_mul is the same code specialised for p, whose limbs (0, 1,
 * 2^32 - 1) and -p^-1 = 1 let the compiler drop multiplications. */
static void mont_mul(limbs r, const limbs a, const limbs b, const modulus *md)
{
	mont_mul_core(r, a, b, md);
}

static void fp_mul(limbs r, const limbs a, const limbs b)
{
	mont_mul_core(r, a, b, &FP);
}

static void to_mont(limbs r, const limbs a, const modulus *md) { mont_mul(r, a, md->r2, md); }

static void from_mont(limbs r, const limbs a, const modulus *md)
{
	static const limbs one = {1, 0, 0, 0, 0, 0, 0, 0};
	mont_mul(r, a, one, md);
}

/* mont_inv sets r = a^(m-2) = a^-1 (Montgomery form in and out; 0 gives 0). The exponent is a
 * public constant, so branching on its bits leaks nothing about a. */
static void mont_inv(limbs r, const limbs a, const modulus *md)
{
	limbs x;
	memcpy(x, md->one, sizeof x);
	for (int i = 0; i < 256; i++) {
		mont_mul(x, x, x, md);
		if ((md->exp[i >> 3] >> (7 - (i & 7))) & 1)
			mont_mul(x, x, a, md);
	}
	memcpy(r, x, sizeof x);
}

/* ---- points: homogeneous projective (X:Y:Z), x = X/Z, y = Y/Z, Montgomery form mod p ---- */

typedef struct {
	limbs x, y, z;
} point;

#define FADD(r, a, b) mod_add(r, a, b, &FP)
#define FSUB(r, a, b) mod_sub(r, a, b, &FP)
#define FMUL(r, a, b) fp_mul(r, a, b)

static void point_infinity(point *p)
{
	memset(p, 0, sizeof *p);
	memcpy(p->y, FP.one, sizeof p->y);
}

/* point_add sets r = p + q for any p and q, equal, inverse or the point at infinity (0:1:0)
 * included: the complete addition for a = -3 of Renes, Costello and Batina (2016, Algorithm 4),
 * 12 multiplications, 2 by b, 29 additions. r may alias p or q. */
static void point_add(point *r, const point *p, const point *q)
{
	limbs t0, t1, t2, t3, t4, x3, y3, z3;
	FMUL(t0, p->x, q->x);
	FMUL(t1, p->y, q->y);
	FMUL(t2, p->z, q->z);
	FADD(t3, p->x, p->y);
	FADD(t4, q->x, q->y);
	FMUL(t3, t3, t4);
	FADD(t4, t0, t1);
	FSUB(t3, t3, t4);
	FADD(t4, p->y, p->z);
	FADD(x3, q->y, q->z);
	FMUL(t4, t4, x3);
	FADD(x3, t1, t2);
	FSUB(t4, t4, x3);
	FADD(x3, p->x, p->z);
	FADD(y3, q->x, q->z);
	FMUL(x3, x3, y3);
	FADD(y3, t0, t2);
	FSUB(y3, x3, y3);
	FMUL(z3, B_M, t2);
	FSUB(x3, y3, z3);
	FADD(z3, x3, x3);
	FADD(x3, x3, z3);
	FSUB(z3, t1, x3);
	FADD(x3, t1, x3);
	FMUL(y3, B_M, y3);
	FADD(t1, t2, t2);
	FADD(t2, t1, t2);
	FSUB(y3, y3, t2);
	FSUB(y3, y3, t0);
	FADD(t1, y3, y3);
	FADD(y3, t1, y3);
	FADD(t1, t0, t0);
	FADD(t0, t1, t0);
	FSUB(t0, t0, t2);
	FMUL(t1, t4, y3);
	FMUL(t2, t0, y3);
	FMUL(y3, x3, z3);
	FADD(y3, y3, t2);
	FMUL(x3, x3, t3);
	FSUB(x3, x3, t1);
	FMUL(z3, t4, z3);
	FMUL(t1, t3, t0);
	FADD(z3, z3, t1);
	memcpy(r->x, x3, sizeof x3);
	memcpy(r->y, y3, sizeof y3);
	memcpy(r->z, z3, sizeof z3);
}

/* point_double sets r = 2p for any p (the point at infinity included): the exception-free
 * doubling for a = -3 of the same paper (Algorithm 6), 8 multiplications, 2 by b. */
static void point_double(point *r, const point *p)
{
	limbs t0, t1, t2, t3, x3, y3, z3;
	FMUL(t0, p->x, p->x);
	FMUL(t1, p->y, p->y);
	FMUL(t2, p->z, p->z);
	FMUL(t3, p->x, p->y);
	FADD(t3, t3, t3);
	FMUL(z3, p->x, p->z);
	FADD(z3, z3, z3);
	FMUL(y3, B_M, t2);
	FSUB(y3, y3, z3);
	FADD(x3, y3, y3);
	FADD(y3, x3, y3);
	FSUB(x3, t1, y3);
	FADD(y3, t1, y3);
	FMUL(y3, x3, y3);
	FMUL(x3, x3, t3);
	FADD(t3, t2, t2);
	FADD(t2, t2, t3);
	FMUL(z3, B_M, z3);
	FSUB(z3, z3, t2);
	FSUB(z3, z3, t0);
	FADD(t3, z3, z3);
	FADD(z3, z3, t3);
	FADD(t3, t0, t0);
	FADD(t0, t3, t0);
	FSUB(t0, t0, t2);
	FMUL(t0, t0, z3);
	FADD(y3, y3, t0);
	FMUL(t0, p->y, p->z);
	FADD(t0, t0, t0);
	FMUL(z3, t0, z3);
	FSUB(x3, x3, z3);
	FMUL(z3, t0, t1);
	FADD(z3, z3, z3);
	FADD(z3, z3, z3);
	memcpy(r->x, x3, sizeof x3);
	memcpy(r->y, y3, sizeof y3);
	memcpy(r->z, z3, sizeof z3);
}

/* The window: 4 bits, a table of 0*P .. 15*P. */
#define WIN 4
#define TABLE (1 << WIN)

static void table_fill(point t[TABLE], const point *p)
{
	point_infinity(&t[0]);
	t[1] = *p;
	for (int i = 2; i < TABLE; i++) {
		if (i & 1)
			point_add(&t[i], &t[i - 1], p);
		else
			point_double(&t[i], &t[i / 2]);
	}
}

/* table_lookup sets r = t[k], reading every entry (k is secret). */
static void table_lookup(point *r, const point t[TABLE], uint32_t k)
{
	memset(r, 0, sizeof *r);
	for (uint32_t i = 0; i < TABLE; i++) {
		uint32_t d = ct_barrier_u32(i ^ k);
		uint32_t mask = ((d | (0u - d)) >> 31) - 1; /* all ones when i == k */
		select_limbs(r->x, t[i].x, mask);
		select_limbs(r->y, t[i].y, mask);
		select_limbs(r->z, t[i].z, mask);
	}
}

static uint32_t nibble(const uint8_t k[32], int i) /* i = 0 is the most significant */
{
	return (uint32_t)(k[i >> 1] >> (4 * (1 - (i & 1)))) & 0xf;
}

/* scalar_mul sets r = k1*P1 (+ k2*P2 when p2 is not NULL) for 256-bit big-endian scalars:
 * 64 windows of 4 doublings and one (or two) table additions each, every step the same
 * whatever the scalars and points. */
static void scalar_mul(point *r, const uint8_t k1[32], const point *p1, const uint8_t k2[32],
	const point *p2)
{
	point t1[TABLE], t2[TABLE], acc, e;
	table_fill(t1, p1);
	if (p2)
		table_fill(t2, p2);
	point_infinity(&acc);
	for (int i = 0; i < 64; i++) {
		for (int j = 0; j < WIN; j++)
			point_double(&acc, &acc);
		table_lookup(&e, t1, nibble(k1, i));
		point_add(&acc, &acc, &e);
		if (p2) {
			table_lookup(&e, t2, nibble(k2, i));
			point_add(&acc, &acc, &e);
		}
	}
	*r = acc;
	memset(t1, 0, sizeof t1);
	if (p2)
		memset(t2, 0, sizeof t2);
	memset(&e, 0, sizeof e);
}

/* to_affine sets x, y (plain integers below p) from p; returns all ones when p is the point at
 * infinity (x, y then 0). */
static uint32_t to_affine(limbs x, limbs y, const point *p)
{
	limbs zi;
	uint32_t inf = is_zero_mask(p->z);
	mont_inv(zi, p->z, &FP);
	FMUL(x, p->x, zi);
	FMUL(y, p->y, zi);
	from_mont(x, x, &FP);
	from_mont(y, y, &FP);
	return inf;
}

/* point_decode validates an encoded point (SEC 1 v2 §2.3.4 restricted to the uncompressed form,
 * then §3.2.2.1's checks) and sets p to it in projective Montgomery form. */
static int point_decode(point *p, const uint8_t *in, size_t len)
{
	limbs x, y, l, r, t;
	if (len != P256_POINT_LEN || in[0] != 0x04)
		return P256_ERR_ENCODING;
	from_be(x, in + 1);
	from_be(y, in + 33);
	if (!lt_mask(x, FP.m) || !lt_mask(y, FP.m))
		return P256_ERR_COORD;
	to_mont(x, x, &FP);
	to_mont(y, y, &FP);
	/* y^2 == x^3 - 3x + b */
	FMUL(l, y, y);
	FMUL(r, x, x);
	FMUL(r, r, x);
	FADD(t, x, x);
	FADD(t, t, x);
	FSUB(r, r, t);
	FADD(r, r, B_M);
	if (!eq_mask(l, r))
		return P256_ERR_NOT_ON_CURVE;
	/* an affine point on the curve is never the point at infinity, which has no encoding here */
	memcpy(p->x, x, sizeof x);
	memcpy(p->y, y, sizeof y);
	memcpy(p->z, FP.one, sizeof p->z);
	return P256_OK;
}

static void generator(point *g)
{
	memcpy(g->x, GX_M, sizeof g->x);
	memcpy(g->y, GY_M, sizeof g->y);
	memcpy(g->z, FP.one, sizeof g->z);
}

/* scalar_ok is all ones when 1 <= d <= n-1, in constant time. */
static uint32_t scalar_ok(const uint8_t d[32])
{
	limbs k;
	from_be(k, d);
	uint32_t ok = lt_mask(k, FN.m) & ~is_zero_mask(k);
	memset(k, 0, sizeof k);
	return ok;
}

int p256_point_check(const uint8_t *pt, size_t len)
{
	point p;
	return point_decode(&p, pt, len);
}

int p256_keygen(uint8_t pub[P256_POINT_LEN], const uint8_t priv[P256_SCALAR_LEN])
{
	point g, q;
	limbs x, y;
	memset(pub, 0, P256_POINT_LEN);
	/* the refusal reveals only that this candidate is discarded */
	uint32_t ok = scalar_ok(priv);
	DECLASSIFY(&ok, sizeof ok);
	if (!ok)
		return P256_ERR_SCALAR;
	generator(&g);
	scalar_mul(&q, priv, &g, NULL, NULL);
	uint32_t inf = to_affine(x, y, &q);
	pub[0] = 0x04;
	to_be(pub + 1, x);
	to_be(pub + 33, y);
	memset(&q, 0, sizeof q);
	DECLASSIFY(&inf, sizeof inf);
	return inf ? P256_ERR_INFINITY : P256_OK;
}

int p256_ecdh(uint8_t shared[32], const uint8_t priv[P256_SCALAR_LEN], const uint8_t *peer,
	size_t peer_len)
{
	point q, s;
	limbs x, y;
	memset(shared, 0, 32);
	int err = point_decode(&q, peer, peer_len);
	if (err)
		return err;
	uint32_t ok = scalar_ok(priv);
	DECLASSIFY(&ok, sizeof ok);
	if (!ok)
		return P256_ERR_SCALAR;
	scalar_mul(&s, priv, &q, NULL, NULL);
	uint32_t inf = to_affine(x, y, &s);
	/* prime order and a validated Q: d*Q is the point at infinity only for d = 0 mod n, which
	 * scalar_ok excludes; checked anyway */
	DECLASSIFY(&inf, sizeof inf);
	if (inf) {
		memset(&s, 0, sizeof s);
		return P256_ERR_INFINITY;
	}
	to_be(shared, x);
	memset(&s, 0, sizeof s);
	memset(x, 0, sizeof x);
	memset(y, 0, sizeof y);
	return P256_OK;
}

/* der_int reads one INTEGER at *pos of sig[0..end) into out (32 bytes big-endian). */
static int der_int(uint8_t out[32], const uint8_t *sig, size_t end, size_t *pos)
{
	size_t i = *pos;
	if (end - i < 2 || sig[i] != 0x02)
		return P256_ERR_DER;
	size_t l = sig[i + 1];
	i += 2;
	if (l & 0x80 || l == 0 || l > end - i) /* long form is never minimal below 128 bytes */
		return P256_ERR_DER;
	const uint8_t *v = sig + i;
	*pos = i + l;
	if (v[0] & 0x80) /* negative */
		return P256_ERR_DER;
	if (l > 1 && v[0] == 0x00) {
		if (!(v[1] & 0x80)) /* a zero byte that is not needed */
			return P256_ERR_DER;
		v++;
		l--;
	}
	if (l > 32)
		return P256_ERR_DER;
	memset(out, 0, 32);
	memcpy(out + 32 - l, v, l);
	return P256_OK;
}

int p256_sig_der(uint8_t r[32], uint8_t s[32], const uint8_t *sig, size_t len)
{
	memset(r, 0, 32);
	memset(s, 0, 32);
	if (len < 2 || len > P256_SIG_DER_MAX || sig[0] != 0x30 || sig[1] & 0x80 || (size_t)sig[1] != len - 2)
		return P256_ERR_DER;
	size_t pos = 2;
	if (der_int(r, sig, len, &pos) || der_int(s, sig, len, &pos) || pos != len) {
		memset(r, 0, 32);
		memset(s, 0, 32);
		return P256_ERR_DER;
	}
	return P256_OK;
}

int p256_verify_digest(const uint8_t *pub, size_t pub_len, const uint8_t digest[32],
	const uint8_t *sig, size_t sig_len)
{
	point q, g, rp;
	uint8_t rb[32], sb[32], u1b[32], u2b[32];
	limbs r, s, e, w, u1, u2, x, y, d;
	int err = point_decode(&q, pub, pub_len);
	if (err)
		return err;
	if (p256_sig_der(rb, sb, sig, sig_len))
		return P256_ERR_DER;
	from_be(r, rb);
	from_be(s, sb);
	if (is_zero_mask(r) || is_zero_mask(s) || !lt_mask(r, FN.m) || !lt_mask(s, FN.m))
		return P256_ERR_RANGE;
	/* e: the digest's 256 bits as an integer (FIPS 186-5 §6.4.2 step 3, the hash as long as n),
	 * reduced once: e < 2^256 < 2n */
	from_be(e, digest);
	uint32_t borrow = sub_borrow(d, e, FN.m);
	select_limbs(e, d, -(borrow ^ 1));
	/* w = s^-1 mod n; u1 = e*w, u2 = r*w: a Montgomery product of a plain value and a
	 * Montgomery-form value is plain */
	to_mont(w, s, &FN);
	mont_inv(w, w, &FN);
	mont_mul(u1, e, w, &FN);
	mont_mul(u2, r, w, &FN);
	to_be(u1b, u1);
	to_be(u2b, u2);
	generator(&g);
	scalar_mul(&rp, u1b, &g, u2b, &q);
	if (to_affine(x, y, &rp))
		return P256_ERR_INFINITY;
	/* v = x mod n: x < p < 2n */
	borrow = sub_borrow(d, x, FN.m);
	select_limbs(x, d, -(borrow ^ 1));
	return eq_mask(x, r) ? P256_OK : P256_ERR_MISMATCH;
}

int p256_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg, size_t msg_len,
	const uint8_t *sig, size_t sig_len)
{
	uint8_t h[32];
	sha256(h, msg, msg_len);
	return p256_verify_digest(pub, pub_len, h, sig, sig_len);
}

/* ---- ECDSA signing (FIPS 186-5 §6.4.1) with RFC 6979's nonce ---- */

/* The HMAC-DRBG of RFC 6979 §3.2 for SHA-256 and P-256 (hlen = qlen = 256 bits). */
typedef struct {
	uint8_t k[32], v[32];
} nonce_drbg;

/* drbg_step sets K = HMAC_K(V || sep [|| x || h || rnd]), then V = HMAC_K(V): steps d-e and f-g
 * of RFC 6979 §3.2 (x, h given; rnd the additional data k' of §3.6 when not NULL) and the
 * reseed after a refused candidate, step h.3 (x NULL, sep 0). */
static void drbg_step(nonce_drbg *g, uint8_t sep, const uint8_t *x, const uint8_t *h, const uint8_t *rnd)
{
	hmac_sha256_ctx c;
	hmac_sha256_init(&c, g->k, 32);
	hmac_sha256_update(&c, g->v, 32);
	hmac_sha256_update(&c, &sep, 1);
	if (x) {
		hmac_sha256_update(&c, x, 32);
		hmac_sha256_update(&c, h, 32);
		if (rnd)
			hmac_sha256_update(&c, rnd, 32);
	}
	hmac_sha256_final(&c, g->k);
	hmac_sha256_init(&c, g->k, 32);
	hmac_sha256_update(&c, g->v, 32);
	hmac_sha256_final(&c, g->v);
	memset(&c, 0, sizeof c);
}

/* sign_with_k sets r = (k G).x mod n and s = k^-1 (e + r d) mod n for a nonce 1 <= k <= n-1 and
 * d (both 32 bytes big-endian) and e < n. Constant time in k and d: the fixed-window scalar
 * multiplication, Montgomery products and a Fermat inversion with the public exponent n - 2.
 * Returns 0, or -1 when r or s is 0 (public values: the caller draws another k). */
static int sign_with_k(limbs r, limbs s, const uint8_t k[32], const uint8_t d[32], const limbs e)
{
	point g, rp;
	limbs x, y, t, u;
	generator(&g);
	scalar_mul(&rp, k, &g, NULL, NULL);
	to_affine(x, y, &rp); /* k in [1, n-1]: never the point at infinity */
	uint32_t borrow = sub_borrow(t, x, FN.m); /* x < p < 2n */
	select_limbs(x, t, -ct_barrier_u32(borrow ^ 1));
	memcpy(r, x, sizeof x);
	from_be(u, d);
	to_mont(u, u, &FN);
	mont_mul(t, r, u, &FN); /* r d mod n, plain */
	n_add(t, t, e);
	from_be(u, k);
	to_mont(u, u, &FN);
	mont_inv(u, u, &FN);    /* k^-1 R mod n */
	mont_mul(s, t, u, &FN); /* (e + r d) k^-1 mod n, plain */
	uint32_t zero = is_zero_mask(r) | is_zero_mask(s);
	DECLASSIFY(&zero, sizeof zero);
	memset(&rp, 0, sizeof rp);
	memset(t, 0, sizeof t);
	memset(u, 0, sizeof u);
	return zero ? -1 : 0;
}

/* der_put_int writes v (32 bytes big-endian, not 0) as a minimal DER INTEGER; returns its size. */
static size_t der_put_int(uint8_t *out, const uint8_t v[32])
{
	size_t i = 0;
	while (i < 31 && v[i] == 0)
		i++;
	size_t pad = v[i] >> 7, l = 32 - i;
	out[0] = 0x02;
	out[1] = (uint8_t)(l + pad);
	out[2] = 0;
	memcpy(out + 2 + pad, v + i, l);
	return 2 + pad + l;
}

int p256_sign_digest(uint8_t *sig, size_t *sig_len, const uint8_t priv[32],
	const uint8_t digest[32], const uint8_t *rnd)
{
	nonce_drbg g;
	uint8_t hb[32], rb[32], sb[32];
	limbs e, r, s, t;
	*sig_len = 0;
	uint32_t ok = scalar_ok(priv);
	DECLASSIFY(&ok, sizeof ok);
	if (!ok)
		return P256_ERR_SCALAR;
	/* e = the digest mod n (e < 2^256 < 2n), and bits2octets(h1) of RFC 6979 §2.3.4 */
	from_be(e, digest);
	uint32_t borrow = sub_borrow(t, e, FN.m);
	select_limbs(e, t, -ct_barrier_u32(borrow ^ 1));
	to_be(hb, e);
	/* RFC 6979 §3.2 b-g (with §3.6's additional data when hedged) */
	memset(g.v, 0x01, sizeof g.v);
	memset(g.k, 0x00, sizeof g.k);
	drbg_step(&g, 0x00, priv, hb, rnd);
	drbg_step(&g, 0x01, priv, hb, rnd);
	for (;;) {
		/* h: T = V (one block: qlen = hlen), k = bits2int(T); a k outside [1, n-1] (about 2^-32)
		 * or one giving r = 0 or s = 0 is discarded, which says nothing of the k kept */
		hmac_sha256(g.v, g.k, 32, g.v, 32);
		ok = scalar_ok(g.v);
		DECLASSIFY(&ok, sizeof ok);
		if (ok && sign_with_k(r, s, g.v, priv, e) == 0)
			break;
		drbg_step(&g, 0x00, NULL, NULL, NULL);
	}
	to_be(rb, r);
	to_be(sb, s);
	/* r and s are the signature: public from here on, so the encoding may branch on them */
	DECLASSIFY(rb, sizeof rb);
	DECLASSIFY(sb, sizeof sb);
	size_t n = der_put_int(sig + 2, rb);
	n += der_put_int(sig + 2 + n, sb);
	sig[0] = 0x30;
	sig[1] = (uint8_t)n;
	*sig_len = 2 + n;
	memset(&g, 0, sizeof g);
	return P256_OK;
}
