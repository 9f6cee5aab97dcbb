/* RSA public-key verification per RFC 8017; see rsa.h. Numbers are little-endian arrays of 32-bit
 * limbs; all of them have the modulus' limb count.
 *
 * Nothing here is secret, but the arithmetic's control flow in verification depends only on the
 * key (limb count, the exponent's bits), not on the signature: Montgomery multiplication always
 * subtracts n and selects, and the range check reads every limb. So a board's instruction count
 * for a valid signature is the same for every signature of one message under one key (a PSS
 * signature's random salt does not move it). Preparing a key (R^2 mod n) branches on the key. */
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
 * x + hi * 2^(32 * limbs) < 2n. The same instructions run either way. r may alias x. */
static void reduce(uint32_t *r, const uint32_t *x, uint32_t hi, const uint32_t *n, size_t limbs)
{
	uint32_t use = ct_barrier_u32(hi | (borrow_of(x, n, limbs) ^ 1)), mask = (uint32_t)0 - use, borrow = 0;
	size_t i;
	for (i = 0; i < limbs; i++) {
		uint64_t d = (uint64_t)x[i] - n[i] - borrow;
		borrow = (uint32_t)(d >> 63);
		r[i] = ((uint32_t)d & mask) | (x[i] & ~mask);
	}
}

/* mont_mul sets r = a * b / R mod n, R = 2^(32 * limbs), for a, b < n: the result is below n.
 * Multiplication and reduction interleaved limb by limb (coarsely integrated operand scanning).
 * r may alias a or b. */
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

int rsa_public(const struct rsa_pubkey *k, uint8_t *out, const uint8_t *s, size_t slen)
{
	uint32_t x[RSA_MAX_LIMBS], a[RSA_MAX_LIMBS], acc[RSA_MAX_LIMBS];
	int i, top;

	if (slen != k->bytes)
		return RSA_ELENGTH;
	load(x, k->limbs, s, slen);
	if (!borrow_of(x, k->n, k->limbs))
		return RSA_ERANGE;

	/* Left to right over e's bits in Montgomery form (a = sR); e is odd, so the last step
	 * squares and then multiplies by s itself, which also leaves Montgomery form. */
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

/* ---- RSASSA-PSS ---- */

int rsa_pss_sha256_verify_digest(const struct rsa_pubkey *k, const uint8_t digest[32],
				 const uint8_t *sig, size_t siglen)
{
	static const uint8_t zeros[8] = {0};
	uint8_t em[RSA_MAX_BYTES], blk[32], ctr[4];
	const size_t hlen = 32, slen = RSA_PSS_SALT_BYTES;
	size_t embits = k->bits - 1, emlen = (embits + 7) / 8, dblen, i, j;
	uint8_t topmask = (uint8_t)(0xff00u >> (8 * emlen - embits));
	uint8_t *p, *h;
	uint32_t c;
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
	for (c = 0, i = 0; i < dblen; c++) {
		ctr[0] = (uint8_t)(c >> 24);
		ctr[1] = (uint8_t)(c >> 16);
		ctr[2] = (uint8_t)(c >> 8);
		ctr[3] = (uint8_t)c;
		sha256_init(&s);
		sha256_update(&s, h, hlen);
		sha256_update(&s, ctr, 4);
		sha256_final(&s, blk);
		for (j = 0; j < hlen && i < dblen; j++, i++)
			p[i] ^= blk[j];
	}
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
