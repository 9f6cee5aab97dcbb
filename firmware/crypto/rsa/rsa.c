/* RSA verification and signing per RFC 8017; see rsa.h. Numbers are little-endian arrays of
 * 32-bit limbs; all of them have their modulus' limb count (n's, or a prime's for signing).
 *
 * Nothing in verification is secret, but its arithmetic's control flow depends only on the key
 * (limb count, the exponent's bits), not on the signature: Montgomery multiplication always
 * subtracts n and selects, and the range check reads every limb. So a board's instruction count
 * for a valid signature is the same for every signature of one message under one key (a PSS
 * signature's random salt does not move it). Preparing a key (R^2 mod n) branches on the key.
 * Signing is constant time in the private key and the representative (section "private keys"). */
#include "rsa.h"

#include "../ct.h"
#include "../pqmem.h"
#include "../sha2/sha2.h"

/* ---- big numbers ---- */

/* load sets x[0..limbs) to the big-endian p[0..len); len <= 4 * limbs. */
static void load(uint32_t *x, size_t limbs, const uint8_t *p, size_t len)
{
	size_t i;
	for (i = 0; i < limbs; i++)
		x[i] = 0;
	for (i = 0; i < len; i++)
		x[i / 4] |= (uint32_t)p[len - 1 - i] << (8 * (i % 4));
}

/* store writes the low len bytes of x big-endian to out; len <= 4 * limbs. */
static void store(uint8_t *out, size_t len, const uint32_t *x)
{
	size_t i;
	for (i = 0; i < len; i++)
		out[len - 1 - i] = (uint8_t)(x[i / 4] >> (8 * (i % 4)));
}

/* borrow_of returns 1 when a < b, reading every limb. */
static uint32_t borrow_of(const uint32_t *a, const uint32_t *b, size_t limbs)
{
	uint32_t borrow = 0;
	size_t i;
	for (i = 0; i < limbs; i++)
		borrow = (uint32_t)(((uint64_t)a[i] - b[i] - borrow) >> 63);
	return borrow;
}

/* less returns 1 when a < b, from the top limb down (its time depends on a and b). */
static int less(const uint32_t *a, const uint32_t *b, size_t limbs)
{
	size_t i = limbs;
	while (i-- > 0) {
		if (a[i] != b[i])
			return a[i] < b[i];
	}
	return 0;
}

/* sub sets r = a - b mod 2^(32 * limbs). r may alias a. */
static void sub(uint32_t *r, const uint32_t *a, const uint32_t *b, size_t limbs)
{
	uint32_t borrow = 0;
	size_t i;
	for (i = 0; i < limbs; i++) {
		uint64_t d = (uint64_t)a[i] - b[i] - borrow;
		r[i] = (uint32_t)d;
		borrow = (uint32_t)(d >> 63);
	}
}

/* reduce sets r = x - n when hi (a bit above x's limbs) is set or x >= n, else r = x: for
 * x + hi * 2^(32 * limbs) < 2n. The same instructions run either way. r may alias x. Always
 * inlined: once signing called it too, GCC made it a call from mont_mul, and verification on
 * qemu-mps2-an386 went from 1,399,480 to 1,627,720 instructions. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void reduce(uint32_t *r, const uint32_t *x, uint32_t hi, const uint32_t *n, size_t limbs)
{
	uint32_t use = ct_barrier_u32(hi | (borrow_of(x, n, limbs) ^ 1)), mask = (uint32_t)0 - use, borrow = 0;
	size_t i;
	for (i = 0; i < limbs; i++) {
		uint64_t d = (uint64_t)x[i] - n[i] - borrow;
		borrow = (uint32_t)(d >> 63);
		r[i] = ((uint32_t)d & mask) | (x[i] & ~mask);
	}
}

/* mont_mul sets r = a * b / R mod n, R = 2^(32 * limbs), for a < R and b < n: the result is
 * below n (before the last subtraction t < 2n, since a * b and the multiple of n added are each
 * below R * n). Multiplication and reduction interleaved limb by limb (coarsely integrated
 * operand scanning); the same instructions run for every a and b. The signing code uses it
 * modulo p and q too (struct rsa_prime). r may alias a or b. */
static void mont_mul(uint32_t *r, const uint32_t *a, const uint32_t *b, const struct rsa_pubkey *k)
{
	uint32_t t[RSA_MAX_LIMBS + 2];
	const uint32_t *n = k->n;
	size_t L = k->limbs, i, j;

	for (i = 0; i < L + 2; i++)
		t[i] = 0;
	for (i = 0; i < L; i++) {
		uint64_t x;
		uint32_t c = 0, m;
		for (j = 0; j < L; j++) {
			x = (uint64_t)a[i] * b[j] + t[j] + c;
			t[j] = (uint32_t)x;
			c = (uint32_t)(x >> 32);
		}
		x = (uint64_t)t[L] + c;
		t[L] = (uint32_t)x;
		t[L + 1] = (uint32_t)(x >> 32);

		/* add m * n, which makes the low limb zero, and drop that limb */
		m = t[0] * k->n0inv;
		x = (uint64_t)m * n[0] + t[0];
		c = (uint32_t)(x >> 32);
		for (j = 1; j < L; j++) {
			x = (uint64_t)m * n[j] + t[j] + c;
			t[j - 1] = (uint32_t)x;
			c = (uint32_t)(x >> 32);
		}
		x = (uint64_t)t[L] + c;
		t[L - 1] = (uint32_t)x;
		t[L] = t[L + 1] + (uint32_t)(x >> 32);
	}
	/* t < 2n: one subtraction at most */
	reduce(r, t, t[L], n, L);
}

/* ---- keys ---- */

static size_t bitlen8(uint8_t b)
{
	size_t n = 0;
	while (b) {
		n++;
		b >>= 1;
	}
	return n;
}

int rsa_pubkey_set(struct rsa_pubkey *k, const uint8_t *n, size_t nlen, uint32_t e)
{
	uint32_t x[RSA_MAX_LIMBS], inv;
	size_t i, bits, L, steps;

	while (nlen > 0 && n[0] == 0) {
		n++;
		nlen--;
	}
	if (nlen == 0 || nlen > RSA_MAX_BYTES)
		return RSA_ESIZE;
	bits = 8 * (nlen - 1) + bitlen8(n[0]);
	if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS)
		return RSA_ESIZE;
	if ((n[nlen - 1] & 1) == 0)
		return RSA_EMODULUS;
	if (e < 3 || (e & 1) == 0)
		return RSA_EEXPONENT;

	memset(k, 0, sizeof *k);
	k->bits = bits;
	k->bytes = nlen;
	k->limbs = L = (bits + 31) / 32;
	k->e = e;
	load(k->n, L, n, nlen);

	/* -n^-1 mod 2^32 by Newton's iteration: n * n = 1 mod 8 for odd n, and each step doubles
	 * the number of correct low bits (3, 6, 12, 24, 48). */
	inv = k->n[0];
	for (i = 0; i < 4; i++)
		inv *= 2 - k->n[0] * inv;
	k->n0inv = (uint32_t)0 - inv;

	/* R^2 mod n, R = 2^W with W = 32 * L. x = 2^(W + W/8) mod n is the Montgomery form of
	 * 2^(W/8); three Montgomery squarings make it the form of 2^W = R, which is R^2 mod n. x
	 * starts at 2^(bits - 1) < n and is doubled modulo n the remaining W + W/8 - bits + 1 times
	 * (doublings are cheap, squarings are not: three balance them on the boards). */
	for (i = 0; i < L; i++)
		x[i] = 0;
	x[(bits - 1) / 32] = (uint32_t)1 << ((bits - 1) % 32);
	for (steps = 32 * L + 4 * L - (bits - 1); steps > 0; steps--) {
		uint32_t carry = x[L - 1] >> 31;
		for (i = L - 1; i > 0; i--)
			x[i] = x[i] << 1 | x[i - 1] >> 31;
		x[0] <<= 1;
		/* 2x < 2n: when the doubling carried out of W bits the subtraction's borrow cancels it.
		 * The key's own data decides the branch: the count depends on the key only. */
		if (carry || !less(x, k->n, L))
			sub(x, x, k->n, L);
	}
	for (i = 0; i < 3; i++)
		mont_mul(x, x, x, k);
	for (i = 0; i < L; i++)
		k->rr[i] = x[i];
	return RSA_OK;
}

/* A strict DER reader: definite, minimal lengths of at most two bytes (nothing here is longer). */
struct rd {
	const uint8_t *p;
	size_t n;
};

/* tlv reads one element of tag from r into its contents v[0..*vlen). */
static int tlv(struct rd *r, uint8_t tag, const uint8_t **v, size_t *vlen)
{
	size_t hdr, len;
	if (r->n < 2 || r->p[0] != tag)
		return RSA_EDER;
	if (r->p[1] < 0x80) {
		hdr = 2;
		len = r->p[1];
	} else if (r->p[1] == 0x81) {
		if (r->n < 3 || r->p[2] < 0x80)
			return RSA_EDER;
		hdr = 3;
		len = r->p[2];
	} else if (r->p[1] == 0x82) {
		if (r->n < 4 || r->p[2] == 0)
			return RSA_EDER;
		hdr = 4;
		len = (size_t)r->p[2] << 8 | r->p[3];
	} else {
		return RSA_EDER; /* indefinite (0x80) or longer than 65535 */
	}
	if (len > r->n - hdr)
		return RSA_EDER;
	*v = r->p + hdr;
	*vlen = len;
	r->p += hdr + len;
	r->n -= hdr + len;
	return RSA_OK;
}

/* integer reads a minimal INTEGER's contents into v[0..*vlen) without a sign octet; neg is set
 * when it is negative. */
static int integer(struct rd *r, const uint8_t **v, size_t *vlen, int *neg)
{
	int err = tlv(r, 0x02, v, vlen);
	if (err != RSA_OK)
		return err;
	if (*vlen == 0)
		return RSA_EDER;
	if (*vlen > 1 && (((*v)[0] == 0x00 && !((*v)[1] & 0x80)) || ((*v)[0] == 0xff && ((*v)[1] & 0x80))))
		return RSA_EDER;
	*neg = ((*v)[0] & 0x80) != 0;
	if ((*v)[0] == 0x00 && *vlen > 1) {
		(*v)++;
		(*vlen)--;
	}
	return RSA_OK;
}

int rsa_pubkey_parse(struct rsa_pubkey *k, const uint8_t *der, size_t len)
{
	struct rd r = {der, len}, seq;
	const uint8_t *n, *e;
	size_t nlen, elen, i;
	uint32_t ev = 0;
	int err, nneg, eneg;

	if ((err = tlv(&r, 0x30, &seq.p, &seq.n)) != RSA_OK)
		return err;
	if (r.n != 0)
		return RSA_EDER;
	if ((err = integer(&seq, &n, &nlen, &nneg)) != RSA_OK || (err = integer(&seq, &e, &elen, &eneg)) != RSA_OK)
		return err;
	if (seq.n != 0)
		return RSA_EDER;
	if (nneg)
		return RSA_EMODULUS;
	if (eneg || elen > 4)
		return RSA_EEXPONENT;
	for (i = 0; i < elen; i++)
		ev = ev << 8 | e[i];
	return rsa_pubkey_set(k, n, nlen, ev);
}

/* ---- RSAVP1 ---- */

/* public_pow sets acc = x^e mod n for x < n (as rsa_public, without its range check, which would
 * branch on x). Always inlined, so that verification runs the instructions it ran before
 * signing shared it (as a call: +40 instructions per PSS verification on qemu-mps2-an386). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void public_pow(uint32_t *acc, const uint32_t *x, const struct rsa_pubkey *k)
{
	uint32_t a[RSA_MAX_LIMBS];
	int i, top;

	/* Left to right over e's bits in Montgomery form (a = xR); e is odd, so the last step
	 * squares and then multiplies by x itself, which also leaves Montgomery form. */
	mont_mul(a, x, k->rr, k);
	for (top = 31; !((k->e >> top) & 1); top--)
		;
	memcpy(acc, a, k->limbs * sizeof acc[0]);
	for (i = top - 1; i >= 1; i--) {
		mont_mul(acc, acc, acc, k);
		if ((k->e >> i) & 1)
			mont_mul(acc, acc, a, k);
	}
	mont_mul(acc, acc, acc, k);
	mont_mul(acc, acc, x, k);
}

int rsa_public(const struct rsa_pubkey *k, uint8_t *out, const uint8_t *s, size_t slen)
{
	uint32_t x[RSA_MAX_LIMBS], acc[RSA_MAX_LIMBS];

	if (slen != k->bytes)
		return RSA_ELENGTH;
	load(x, k->limbs, s, slen);
	if (!borrow_of(x, k->n, k->limbs))
		return RSA_ERANGE;
	public_pow(acc, x, k);
	store(out, k->bytes, acc);
	return RSA_OK;
}

/* ---- RSASSA-PKCS1-v1_5 ---- */

/* The DER of DigestInfo { AlgorithmIdentifier { id-sha256, NULL }, OCTET STRING (32) } before
 * the digest (RFC 8017 9.2, note 1). */
static const uint8_t digestinfo_sha256[19] = {
	0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
	0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20,
};

int rsa_pkcs1_sha256_verify_digest(const struct rsa_pubkey *k, const uint8_t digest[32],
				   const uint8_t *sig, size_t siglen)
{
	uint8_t em[RSA_MAX_BYTES], want[RSA_MAX_BYTES];
	size_t kb = k->bytes, t = sizeof digestinfo_sha256 + 32;
	int err;

	if (siglen != kb)
		return RSA_ELENGTH;
	if ((err = rsa_public(k, em, sig, siglen)) != RSA_OK)
		return err;
	/* EMSA-PKCS1-v1_5: 0x00 0x01 PS(0xff, at least 8) 0x00 T */
	if (kb < t + 11)
		return RSA_EINVALID;
	want[0] = 0x00;
	want[1] = 0x01;
	memset(want + 2, 0xff, kb - t - 3);
	want[kb - t - 1] = 0x00;
	memcpy(want + kb - t, digestinfo_sha256, sizeof digestinfo_sha256);
	memcpy(want + kb - 32, digest, 32);
	return ct_neq(em, want, kb) == 0 ? RSA_OK : RSA_EINVALID;
}

int rsa_pkcs1_sha256_verify(const struct rsa_pubkey *k, const uint8_t *msg, size_t msglen,
			    const uint8_t *sig, size_t siglen)
{
	uint8_t h[32];
	sha256(h, msg, msglen);
	return rsa_pkcs1_sha256_verify_digest(k, h, sig, siglen);
}

/* mgf1_xor XORs MGF1-SHA-256(h, dblen) (RFC 8017 B.2.1; h is 32 bytes) into the dblen bytes at
 * p, with the caller's hash state s and block blk, which the caller wipes where it must. Always
 * inlined, as the loop was in verification before signing shared it. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void mgf1_xor(uint8_t *p, size_t dblen, const uint8_t *h, sha256_ctx *s, uint8_t blk[32])
{
	uint8_t ctr[4];
	uint32_t c;
	size_t i, j;

	for (c = 0, i = 0; i < dblen; c++) {
		ctr[0] = (uint8_t)(c >> 24);
		ctr[1] = (uint8_t)(c >> 16);
		ctr[2] = (uint8_t)(c >> 8);
		ctr[3] = (uint8_t)c;
		sha256_init(s);
		sha256_update(s, h, 32);
		sha256_update(s, ctr, 4);
		sha256_final(s, blk);
		for (j = 0; j < 32 && i < dblen; j++, i++)
			p[i] ^= blk[j];
	}
}

/* ---- RSASSA-PSS ---- */

int rsa_pss_sha256_verify_digest(const struct rsa_pubkey *k, const uint8_t digest[32],
				 const uint8_t *sig, size_t siglen)
{
	static const uint8_t zeros[8] = {0};
	uint8_t em[RSA_MAX_BYTES], blk[32];
	const size_t hlen = 32, slen = RSA_PSS_SALT_BYTES;
	size_t embits = k->bits - 1, emlen = (embits + 7) / 8, dblen, i;
	uint8_t topmask = (uint8_t)(0xff00u >> (8 * emlen - embits));
	uint8_t *p, *h;
	sha256_ctx s;
	int err;

	if (siglen != k->bytes)
		return RSA_ELENGTH;
	if ((err = rsa_public(k, em, sig, siglen)) != RSA_OK)
		return err;
	/* EM = I2OSP(m, emLen): emLen is k - 1 when the modulus' bit length is 1 mod 8, and then
	 * m must fit in it */
	p = em + (k->bytes - emlen);
	if (emlen < k->bytes && em[0] != 0)
		return RSA_EINVALID;

	/* EMSA-PSS-VERIFY, RFC 8017 9.1.2 steps 3 to 14 */
	if (emlen < hlen + slen + 2 || p[emlen - 1] != 0xbc)
		return RSA_EINVALID;
	dblen = emlen - hlen - 1;
	h = p + dblen;
	if (p[0] & topmask)
		return RSA_EINVALID;
	mgf1_xor(p, dblen, h, &s, blk);
	p[0] &= (uint8_t)~topmask;
	for (i = 0; i < dblen - slen - 1; i++)
		if (p[i] != 0)
			return RSA_EINVALID;
	if (p[dblen - slen - 1] != 0x01)
		return RSA_EINVALID;
	sha256_init(&s);
	sha256_update(&s, zeros, sizeof zeros);
	sha256_update(&s, digest, hlen);
	sha256_update(&s, p + dblen - slen, slen);
	sha256_final(&s, blk);
	return ct_neq(blk, h, hlen) == 0 ? RSA_OK : RSA_EINVALID;
}

int rsa_pss_sha256_verify(const struct rsa_pubkey *k, const uint8_t *msg, size_t msglen,
			  const uint8_t *sig, size_t siglen)
{
	uint8_t h[32];
	sha256(h, msg, msglen);
	return rsa_pss_sha256_verify_digest(k, h, sig, siglen);
}

/* ---- private keys: RSASP1 with the CRT, constant time ---- */

/* Everything below runs the same instructions and reads the same addresses whatever the values
 * of p, q, dp, dq, qinv and the message representative: the limb counts and e are the only
 * things it branches on or indexes by. The one branch on a secret-derived value is the fault
 * check's verdict (DECLASSIFY marks it for the host's constant-time check). */
#ifdef RSA_CT_CHECK
#include <valgrind/memcheck.h>
#define DECLASSIFY(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define DECLASSIFY(p, n) ((void)(p), (void)(n))
#endif

#define RSA_WINDOW 4 /* exponent bits per table multiplication */
#define RSA_TABLE (1u << RSA_WINDOW)

/* wipe clears n bytes at p; the empty asm that reads p and clobbers memory keeps the compiler
 * from dropping the stores as dead. */
static void wipe(void *p, size_t n)
{
	memset(p, 0, n);
#if defined(__GNUC__)
	__asm__ __volatile__("" : : "r"(p) : "memory");
#endif
}

/* pmul is mont_mul modulo the prime f (R = 2^(32 * f->mod.limbs)). */
static void pmul(uint32_t *r, const uint32_t *a, const uint32_t *b, const struct rsa_prime *f)
{
	mont_mul(r, a, b, &f->mod);
}

/* psqr sets r = a * a / R mod f for a < f: the same value as pmul(r, a, a, f) for about a
 * quarter fewer multiplications (each cross product a[i] * a[j] once, then doubled), the
 * product first and then Montgomery's reduction limb by limb (separated operand scanning).
 * Every loop's bounds depend on the limb count only. r may alias a. */
static void psqr(uint32_t *r, const uint32_t *a, const struct rsa_prime *f)
{
	uint32_t t[2 * RSA_MAX_HALF_LIMBS], c, hi = 0, m;
	const uint32_t *n = f->mod.n;
	size_t L = f->mod.limbs, i, j;
	uint64_t x;

	for (i = 0; i < 2 * L; i++)
		t[i] = 0;
	for (i = 0; i + 1 < L; i++) {
		for (c = 0, j = i + 1; j < L; j++) {
			x = (uint64_t)a[i] * a[j] + t[i + j] + c;
			t[i + j] = (uint32_t)x;
			c = (uint32_t)(x >> 32);
		}
		t[i + L] = c;
	}
	for (i = 2 * L - 1; i > 0; i--)
		t[i] = t[i] << 1 | t[i - 1] >> 31;
	t[0] <<= 1;
	for (c = 0, i = 0; i < L; i++) {
		x = (uint64_t)a[i] * a[i] + t[2 * i] + c;
		t[2 * i] = (uint32_t)x;
		x = (uint64_t)t[2 * i + 1] + (uint32_t)(x >> 32);
		t[2 * i + 1] = (uint32_t)x;
		c = (uint32_t)(x >> 32);
	}
	/* t = a^2 < R^2; add m_i * n * 2^(32 i) row by row, each row's carry out of limb i + L
	 * (at most 1) going into the next row's limb i + L + 1 */
	for (i = 0; i < L; i++) {
		m = t[i] * f->mod.n0inv;
		for (c = 0, j = 0; j < L; j++) {
			x = (uint64_t)m * n[j] + t[i + j] + c;
			t[i + j] = (uint32_t)x;
			c = (uint32_t)(x >> 32);
		}
		x = (uint64_t)t[i + L] + c + hi;
		t[i + L] = (uint32_t)x;
		hi = (uint32_t)(x >> 32);
	}
	/* (a^2 + M n) / R < 2n */
	reduce(r, t + L, hi, n, L);
}

/* eq_mask returns all ones when a == b, else 0, without a branch. */
static uint32_t eq_mask(uint32_t a, uint32_t b)
{
	uint32_t x = ct_barrier_u32(a ^ b);
	return (uint32_t)0 - (uint32_t)(((uint64_t)x - 1) >> 63);
}

/* add_mod sets r = a + b mod m for a, b < m; r may alias a or b. */
static void add_mod(uint32_t *r, const uint32_t *a, const uint32_t *b, const uint32_t *m, size_t L)
{
	uint32_t carry = 0;
	size_t i;
	for (i = 0; i < L; i++) {
		uint64_t x = (uint64_t)a[i] + b[i] + carry;
		r[i] = (uint32_t)x;
		carry = (uint32_t)(x >> 32);
	}
	reduce(r, r, carry, m, L);
}

/* sub_mod sets r = a - b mod m for a, b < m; r may alias a or b. */
static void sub_mod(uint32_t *r, const uint32_t *a, const uint32_t *b, const uint32_t *m, size_t L)
{
	uint32_t borrow = 0, mask, carry = 0;
	size_t i;
	for (i = 0; i < L; i++) {
		uint64_t d = (uint64_t)a[i] - b[i] - borrow;
		r[i] = (uint32_t)d;
		borrow = (uint32_t)(d >> 63);
	}
	mask = (uint32_t)0 - ct_barrier_u32(borrow);
	for (i = 0; i < L; i++) {
		uint64_t x = (uint64_t)r[i] + (m[i] & mask) + carry;
		r[i] = (uint32_t)x;
		carry = (uint32_t)(x >> 32);
	}
}

/* mul_add sets r[0..2L) = a * b + c for a, b, c of L limbs (no overflow: the result is below
 * 2^(64 L)). r must not alias a, b or c. */
static void mul_add(uint32_t *r, const uint32_t *a, const uint32_t *b, const uint32_t *c, size_t L)
{
	size_t i, j;
	for (i = 0; i < L; i++) {
		r[i] = c[i];
		r[L + i] = 0;
	}
	for (i = 0; i < L; i++) {
		uint32_t carry = 0;
		for (j = 0; j < L; j++) {
			uint64_t x = (uint64_t)a[i] * b[j] + r[i + j] + carry;
			r[i + j] = (uint32_t)x;
			carry = (uint32_t)(x >> 32);
		}
		r[i + L] = carry;
	}
}

/* select_entry sets r to entry idx of the table tab (RSA_TABLE entries of L limbs) by reading
 * every entry and keeping the one whose mask is set. */
static void select_entry(uint32_t *r, const uint32_t *tab, uint32_t idx, size_t L)
{
	size_t i, e;
	for (i = 0; i < L; i++)
		r[i] = 0;
	for (e = 0; e < RSA_TABLE; e++) {
		uint32_t mask = eq_mask((uint32_t)e, idx);
		for (i = 0; i < L; i++)
			r[i] |= tab[e * L + i] & mask;
	}
}

/* to_mont sets x = c * R mod f (Montgomery form of c mod f) for a c of 2L limbs: c = hi * R + lo,
 * so c * R = hi * R^2 + lo * R, each term one Montgomery multiplication by R^3 or R^2 (hi and
 * lo are below R, which is all mont_mul asks of its first operand). */
static void to_mont(uint32_t *x, const uint32_t *c, const struct rsa_prime *f, size_t L)
{
	uint32_t t[RSA_MAX_HALF_LIMBS];
	pmul(x, c, f->mod.rr, f);
	pmul(t, c + L, f->rrr, f);
	add_mod(x, x, t, f->mod.n, L);
	wipe(t, sizeof t);
}

/* crt_pow sets r = (c mod f)^(f->d) * R mod f, in Montgomery form, for a c of 2L limbs: a fixed
 * window of RSA_WINDOW bits over all 32 * L bits of the exponent (leading zero windows
 * included), every window squaring RSA_WINDOW times and multiplying by a table entry read with
 * select_entry. */
static void crt_pow(uint32_t *r, const uint32_t *c, const struct rsa_prime *f, size_t L)
{
	uint32_t tab[RSA_TABLE * RSA_MAX_HALF_LIMBS], x[RSA_MAX_HALF_LIMBS], one[RSA_MAX_HALF_LIMBS] = {1};
	size_t i, w, windows = 32 * L / RSA_WINDOW;

	pmul(tab, f->mod.rr, one, f); /* R mod f: 1 in Montgomery form */
	to_mont(tab + L, c, f, L);
	for (i = 2; i < RSA_TABLE; i++)
		pmul(tab + i * L, tab + (i - 1) * L, tab + L, f);

	for (w = windows; w-- > 0;) {
		uint32_t idx = (f->d[w * RSA_WINDOW / 32] >> (w * RSA_WINDOW % 32)) & (RSA_TABLE - 1);
		if (w + 1 < windows) {
			for (i = 0; i < RSA_WINDOW; i++)
				psqr(r, r, f);
			select_entry(x, tab, idx, L);
			pmul(r, r, x, f);
		} else {
			select_entry(r, tab, idx, L);
		}
	}
	wipe(tab, sizeof tab);
	wipe(x, sizeof x);
}

/* private_checked sets s = m^d mod n (RSASP1, RFC 8017 5.2.1, second form: Garner's
 * recombination h = qinv * (m1 - m2) mod p, s = m2 + h * q) for a representative m < n of
 * 2 * half limbs, and checks s^e mod n == m before s is kept: RSA_OK, or RSA_EFAULT with s
 * zeroed. */
static int private_checked(const struct rsa_privkey *k, uint32_t *s, const uint32_t *m)
{
	uint32_t m1[RSA_MAX_HALF_LIMBS], m2[RSA_MAX_HALF_LIMBS], t[RSA_MAX_HALF_LIMBS];
	uint32_t back[RSA_MAX_LIMBS];
	size_t L = k->half, i;
	uint32_t bad;

	crt_pow(m1, m, &k->p, L); /* m1 * R mod p */
	crt_pow(t, m, &k->q, L);  /* m2 * R mod q */
	for (i = 0; i < L; i++)
		m2[i] = i == 0;
	pmul(m2, t, m2, &k->q);            /* m2 */
	pmul(t, m2, k->p.mod.rr, &k->p);   /* m2 * R mod p (m2 < q < R) */
	sub_mod(m1, m1, t, k->p.mod.n, L); /* (m1 - m2) * R mod p */
	pmul(t, m1, k->qinv, &k->p);       /* h = qinv * (m1 - m2) mod p */
	mul_add(s, t, k->q.mod.n, m2, L);  /* s = h * q + m2 < n */

	/* the fault check: s^e mod n must give m back (Boneh, DeMillo and Lipton's attack needs one
	 * faulty half; it is never released) */
	for (i = k->pub.limbs; i < 2 * L; i++)
		back[i] = 0;
	public_pow(back, s, &k->pub);
	bad = 0;
	for (i = 0; i < 2 * L; i++)
		bad |= back[i] ^ m[i];
	bad = ct_barrier_u32(bad);
	DECLASSIFY(&bad, sizeof bad);
	wipe(m1, sizeof m1);
	wipe(m2, sizeof m2);
	wipe(t, sizeof t);
	wipe(back, sizeof back);
	if (bad != 0) {
		wipe(s, 2 * L * sizeof s[0]);
		return RSA_EFAULT;
	}
	return RSA_OK;
}

/* prime_setup computes f's Montgomery constants from its prime m = f->mod.n (odd, L limbs)
 * without branching on it: -m^-1 mod 2^32 by Newton's iteration, R^2 mod m by 64 * L doublings
 * of 1 (each reduced by a masked subtraction), R^3 mod m by one multiplication. */
static void prime_setup(struct rsa_prime *f, size_t L)
{
	uint32_t inv = f->mod.n[0], x[RSA_MAX_HALF_LIMBS];
	size_t i, j;

	for (i = 0; i < 4; i++)
		inv *= 2 - f->mod.n[0] * inv;
	f->mod.limbs = L;
	f->mod.n0inv = (uint32_t)0 - inv;
	for (i = 0; i < L; i++)
		x[i] = i == 0;
	for (j = 0; j < 64 * L; j++) {
		uint32_t carry = x[L - 1] >> 31;
		for (i = L - 1; i > 0; i--)
			x[i] = x[i] << 1 | x[i - 1] >> 31;
		x[0] <<= 1;
		reduce(x, x, carry, f->mod.n, L);
	}
	memcpy(f->mod.rr, x, L * sizeof x[0]);
	pmul(f->rrr, f->mod.rr, f->mod.rr, f);
	wipe(x, sizeof x);
}

/* privkey_check checks the loaded private values against each other (see rsa_privkey_set);
 * each test reads every limb, and only its verdict is branched on. */
static int privkey_check(struct rsa_privkey *k)
{
	uint32_t prod[RSA_MAX_LIMBS], two[RSA_MAX_LIMBS], zero[RSA_MAX_HALF_LIMBS] = {0};
	uint32_t a[RSA_MAX_HALF_LIMBS], b[RSA_MAX_HALF_LIMBS];
	size_t L = k->half, i;
	uint32_t diff = 0;

	mul_add(prod, k->p.mod.n, k->q.mod.n, zero, L);
	for (i = 0; i < 2 * L; i++)
		diff |= prod[i] ^ (i < k->pub.limbs ? k->pub.n[i] : 0);
	if (diff != 0)
		return RSA_EPRIME;
	if (!(borrow_of(k->p.d, k->p.mod.n, L) & borrow_of(k->q.d, k->q.mod.n, L) &
	      borrow_of(k->qinv, k->p.mod.n, L)))
		return RSA_ECRT;
	prime_setup(&k->p, L);
	prime_setup(&k->q, L);
	/* q * qinv = 1 mod p: Montgomery products of q and qinv, and of 1 and 1, are both R^-1 */
	for (i = 0; i < L; i++)
		a[i] = i == 0;
	pmul(b, a, a, &k->p);
	pmul(a, k->q.mod.n, k->qinv, &k->p);
	diff = 0;
	for (i = 0; i < L; i++)
		diff |= a[i] ^ b[i];
	if (diff != 0)
		return RSA_ECRT;
	/* one signature of the representative 2: dp and dq must be e's inverses */
	for (i = 0; i < 2 * L; i++)
		two[i] = i == 0 ? 2 : 0;
	return private_checked(k, prod, two) == RSA_OK ? RSA_OK : RSA_EKEY;
}

/* privkey_load reads the blob's lengths, n and e (rsa_pubkey_set), and p, q, dp, dq, qinv into
 * the cleared k. */
static int privkey_load(struct rsa_privkey *k, const uint8_t *blob, size_t len)
{
	const uint8_t *p;
	size_t kb, half, L;
	uint32_t e;
	int err;

	memset(k, 0, sizeof *k);
	if (len < 4 || (len - 4) % 7 != 0)
		return RSA_ESIZE;
	kb = (len - 4) / 7 * 2;
	half = kb / 2;
	if (kb > RSA_MAX_BYTES || blob[0] == 0)
		return RSA_ESIZE;
	e = (uint32_t)blob[kb] << 24 | (uint32_t)blob[kb + 1] << 16 | (uint32_t)blob[kb + 2] << 8 | blob[kb + 3];
	if ((err = rsa_pubkey_set(&k->pub, blob, kb, e)) != RSA_OK)
		return err;
	p = blob + kb + 4;
	if (p[0] == 0 || p[half] == 0 || !(p[half - 1] & 1) || !(p[2 * half - 1] & 1))
		return RSA_EPRIME;
	k->half = L = (half + 3) / 4;
	load(k->p.mod.n, L, p, half);
	load(k->q.mod.n, L, p + half, half);
	load(k->p.d, L, p + 2 * half, half);
	load(k->q.d, L, p + 3 * half, half);
	load(k->qinv, L, p + 4 * half, half);
	return RSA_OK;
}

int rsa_privkey_set(struct rsa_privkey *k, const uint8_t *blob, size_t len)
{
	int err = privkey_load(k, blob, len);
	if (err == RSA_OK)
		err = privkey_check(k);
	if (err != RSA_OK)
		wipe(k, sizeof *k);
	return err;
}

/* pss_encode writes EMSA-PSS-ENCODE (RFC 8017 9.1.1; SHA-256, MGF1-SHA-256, a 32-byte salt) of
 * digest as the k-byte representative em (a leading zero byte when emLen = k - 1). */
static void pss_encode(uint8_t *em, const struct rsa_pubkey *k, const uint8_t digest[32],
		       const uint8_t salt[32])
{
	static const uint8_t zeros[8] = {0};
	const size_t hlen = 32, slen = RSA_PSS_SALT_BYTES;
	size_t embits = k->bits - 1, emlen = (embits + 7) / 8, dblen = emlen - hlen - 1;
	uint8_t *p = em + (k->bytes - emlen), *h = p + dblen, blk[32];
	sha256_ctx s;

	memset(em, 0, k->bytes);
	sha256_init(&s);
	sha256_update(&s, zeros, sizeof zeros);
	sha256_update(&s, digest, hlen);
	sha256_update(&s, salt, slen);
	sha256_final(&s, h);
	p[dblen - slen - 1] = 0x01;
	memcpy(p + dblen - slen, salt, slen);
	mgf1_xor(p, dblen, h, &s, blk);
	p[0] &= (uint8_t)(0xffu >> (8 * emlen - embits));
	p[emlen - 1] = 0xbc;
	wipe(blk, sizeof blk);
	wipe(&s, sizeof s);
}

int rsa_pss_sha256_sign_digest(const struct rsa_privkey *k, uint8_t *sig, const uint8_t digest[32],
			       const uint8_t salt[32])
{
	uint8_t em[RSA_MAX_BYTES];
	uint32_t m[RSA_MAX_LIMBS], s[RSA_MAX_LIMBS];
	int err;

	if (k->half == 0)
		return RSA_EKEY; /* zeroed by a refused rsa_privkey_set */
	pss_encode(em, &k->pub, digest, salt);
	load(m, 2 * k->half, em, k->pub.bytes);
	err = private_checked(k, s, m);
	store(sig, k->pub.bytes, s);
	wipe(em, sizeof em);
	wipe(m, sizeof m);
	wipe(s, sizeof s);
	return err;
}
