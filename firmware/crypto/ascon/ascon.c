/* Ascon (NIST SP 800-232) and the v1.2 modes on one permutation; see ascon.h. */
#include "ascon.h"

#include "../ct.h"
#include "../pqmem.h"

/* The constants of the 16-round permutation (SP 800-232 Table 5); Ascon-p[n]
 * uses the last n, so p^12 starts at 0xf0 as in v1.2. */
static const uint8_t ascon_rc[16] = {
	0x3c, 0x2d, 0x1e, 0x0f, 0xf0, 0xe1, 0xd2, 0xc3,
	0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b,
};

#define ROR64(v, n) (((v) >> (n)) | ((v) << (64 - (n))))

void ascon_permute(uint64_t s[5], unsigned int rounds)
{
	uint64_t x0 = s[0], x1 = s[1], x2 = s[2], x3 = s[3], x4 = s[4], t0, t1, t2, t3, t4;
	unsigned int i;
	for (i = 16 - rounds; i < 16; i++) {
		x2 ^= ascon_rc[i];
		/* S-box, bitsliced */
		x0 ^= x4;
		x4 ^= x3;
		x2 ^= x1;
		t0 = ~x0 & x1;
		t1 = ~x1 & x2;
		t2 = ~x2 & x3;
		t3 = ~x3 & x4;
		t4 = ~x4 & x0;
		x0 ^= t1;
		x1 ^= t2;
		x2 ^= t3;
		x3 ^= t4;
		x4 ^= t0;
		x1 ^= x0;
		x0 ^= x4;
		x3 ^= x2;
		x2 = ~x2;
		/* linear layer */
		x0 ^= ROR64(x0, 19) ^ ROR64(x0, 28);
		x1 ^= ROR64(x1, 61) ^ ROR64(x1, 39);
		x2 ^= ROR64(x2, 1) ^ ROR64(x2, 6);
		x3 ^= ROR64(x3, 10) ^ ROR64(x3, 17);
		x4 ^= ROR64(x4, 7) ^ ROR64(x4, 41);
	}
	s[0] = x0;
	s[1] = x1;
	s[2] = x2;
	s[3] = x3;
	s[4] = x4;
}

/* One AEAD specification: IV, rate in bytes, p^b rounds, byte order. */
struct ascon_spec {
	uint64_t iv;
	unsigned int rate, b, be;
};

static const struct ascon_spec ascon_specs[3] = {
	[ASCON_AEAD128] = {0x00001000808c0001ULL, 16, 8, 0},
	[ASCON_128_V12] = {0x80400c0600000000ULL, 8, 6, 1},
	[ASCON_128A_V12] = {0x80800c0800000000ULL, 16, 8, 1},
};

static uint64_t load64(const uint8_t *p, unsigned int be)
{
	uint64_t v = 0;
	unsigned int i;
	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (be ? 56 - 8 * i : 8 * i);
	return v;
}

static void store64(uint8_t *p, uint64_t v, unsigned int be)
{
	unsigned int i;
	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (be ? 56 - 8 * i : 8 * i));
}

/* pad is the padding bit after byte i (0..7) of a word. */
static uint64_t pad(unsigned int i, unsigned int be)
{
	return be ? 0x80ULL << (56 - 8 * i) : 0x01ULL << (8 * i);
}

/* absorb_last XORs the final n < rate bytes and the padding into s. */
static void absorb_last(uint64_t s[5], const struct ascon_spec *sp, const uint8_t *p, size_t n)
{
	uint8_t buf[16];
	unsigned int w;
	memset(buf, 0, sizeof buf);
	if (n > 0)
		memcpy(buf, p, n);
	for (w = 0; w < sp->rate / 8; w++)
		s[w] ^= load64(buf + 8 * w, sp->be);
	s[n / 8] ^= pad((unsigned int)(n % 8), sp->be);
}

static void aead_start(uint64_t s[5], const struct ascon_spec *sp, const uint8_t *ad, size_t adlen,
		       const uint8_t *nonce, uint64_t k0, uint64_t k1)
{
	s[0] = sp->iv;
	s[1] = k0;
	s[2] = k1;
	s[3] = load64(nonce, sp->be);
	s[4] = load64(nonce + 8, sp->be);
	ascon_permute(s, 12);
	s[3] ^= k0;
	s[4] ^= k1;
	if (adlen > 0) {
		for (; adlen >= sp->rate; adlen -= sp->rate, ad += sp->rate) {
			s[0] ^= load64(ad, sp->be);
			if (sp->rate == 16)
				s[1] ^= load64(ad + 8, sp->be);
			ascon_permute(s, sp->b);
		}
		absorb_last(s, sp, ad, adlen);
		ascon_permute(s, sp->b);
	}
	s[4] ^= sp->be ? 1ULL : 1ULL << 63; /* domain separation: the state's last bit */
}

static void aead_finish(uint64_t s[5], const struct ascon_spec *sp, uint64_t k0, uint64_t k1,
			uint8_t tag[16])
{
	s[sp->rate / 8] ^= k0;
	s[sp->rate / 8 + 1] ^= k1;
	ascon_permute(s, 12);
	store64(tag, s[3] ^ k0, sp->be);
	store64(tag + 8, s[4] ^ k1, sp->be);
}

void ascon_aead_encrypt(ascon_mode mode, uint8_t *c, uint8_t tag[ASCON_TAGBYTES], const uint8_t *m,
			size_t mlen, const uint8_t *ad, size_t adlen,
			const uint8_t nonce[ASCON_NONCEBYTES], const uint8_t key[ASCON_KEYBYTES])
{
	const struct ascon_spec *sp = &ascon_specs[mode];
	uint64_t s[5], k0 = load64(key, sp->be), k1 = load64(key + 8, sp->be);
	uint8_t buf[16];
	aead_start(s, sp, ad, adlen, nonce, k0, k1);
	for (; mlen >= sp->rate; mlen -= sp->rate, m += sp->rate, c += sp->rate) {
		s[0] ^= load64(m, sp->be);
		if (sp->rate == 16) {
			s[1] ^= load64(m + 8, sp->be);
			store64(c + 8, s[1], sp->be);
		}
		store64(c, s[0], sp->be);
		ascon_permute(s, sp->b);
	}
	absorb_last(s, sp, m, mlen);
	store64(buf, s[0], sp->be);
	store64(buf + 8, s[1], sp->be);
	if (mlen > 0)
		memcpy(c, buf, mlen);
	aead_finish(s, sp, k0, k1, tag);
}

int ascon_aead_decrypt(ascon_mode mode, uint8_t *m, const uint8_t *c, size_t clen,
		       const uint8_t *tag, size_t taglen, const uint8_t *ad, size_t adlen,
		       const uint8_t nonce[ASCON_NONCEBYTES], const uint8_t key[ASCON_KEYBYTES])
{
	const struct ascon_spec *sp = &ascon_specs[mode];
	uint64_t s[5], k0 = load64(key, sp->be), k1 = load64(key + 8, sp->be), cw;
	uint8_t cb[16], pb[16], full[16], *m0 = m;
	size_t n = clen;
	unsigned int w;
	uint32_t bad;
	if (taglen < ASCON_MINTAGBYTES || taglen > ASCON_TAGBYTES) {
		if (clen > 0)
			memset(m, 0, clen);
		return -1;
	}
	aead_start(s, sp, ad, adlen, nonce, k0, k1);
	for (; n >= sp->rate; n -= sp->rate, m += sp->rate, c += sp->rate) {
		cw = load64(c, sp->be);
		store64(m, s[0] ^ cw, sp->be);
		s[0] = cw;
		if (sp->rate == 16) {
			cw = load64(c + 8, sp->be);
			store64(m + 8, s[1] ^ cw, sp->be);
			s[1] = cw;
		}
		ascon_permute(s, sp->b);
	}
	/* Last block: the plaintext is S xor C over n bytes; the state's first
	 * n bytes become C, the rest stays, then the padding. */
	memset(cb, 0, sizeof cb);
	if (n > 0)
		memcpy(cb, c, n);
	for (w = 0; w < sp->rate / 8; w++) {
		uint64_t mask;
		size_t used = n > 8 * w ? n - 8 * w : 0;
		if (used >= 8)
			mask = ~0ULL;
		else if (used == 0)
			mask = 0;
		else
			mask = sp->be ? ~(~0ULL >> (8 * used)) : (1ULL << (8 * used)) - 1;
		cw = load64(cb + 8 * w, sp->be);
		store64(pb + 8 * w, s[w] ^ cw, sp->be);
		s[w] = (s[w] & ~mask) | cw;
	}
	s[n / 8] ^= pad((unsigned int)(n % 8), sp->be);
	if (n > 0)
		memcpy(m, pb, n);
	aead_finish(s, sp, k0, k1, full);
	bad = ct_neq(full, tag, taglen);
	if (bad) {
		if (clen > 0)
			memset(m0, 0, clen);
		return -1;
	}
	return 0;
}

void ascon_mask_nonce(uint8_t out[ASCON_NONCEBYTES], const uint8_t nonce[ASCON_NONCEBYTES],
		      const uint8_t k2[ASCON_KEYBYTES])
{
	unsigned int i;
	for (i = 0; i < ASCON_NONCEBYTES; i++)
		out[i] = nonce[i] ^ k2[i];
}

/* ---- Hash256, XOF128, CXOF128: rate 64 bits, p^12, little-endian ---- */

static void hash_init(ascon_hash_ctx *c, uint64_t iv)
{
	c->s[0] = iv;
	c->s[1] = c->s[2] = c->s[3] = c->s[4] = 0;
	ascon_permute(c->s, 12);
	c->n = 0;
	c->squeezing = 0;
}

void ascon_hash256_init(ascon_hash_ctx *c) { hash_init(c, 0x0000080100cc0002ULL); }

void ascon_xof128_init(ascon_hash_ctx *c) { hash_init(c, 0x0000080000cc0003ULL); }

/* pad_block absorbs the buffered bytes, the padding, and permutes. */
static void pad_block(ascon_hash_ctx *c)
{
	uint8_t buf[8];
	memset(buf, 0, sizeof buf);
	if (c->n > 0)
		memcpy(buf, c->buf, c->n);
	c->s[0] ^= load64(buf, 0) ^ pad(c->n, 0);
	ascon_permute(c->s, 12);
	c->n = 0;
}

int ascon_cxof128_init(ascon_hash_ctx *c, const uint8_t *z, size_t zlen)
{
	if (zlen > ASCON_CXOF_MAXZBYTES)
		return -1;
	hash_init(c, 0x0000080000cc0004ULL);
	c->s[0] ^= (uint64_t)zlen * 8; /* the customization string's length in bits */
	ascon_permute(c->s, 12);
	ascon_hash_absorb(c, z, zlen);
	pad_block(c);
	return 0;
}

void ascon_hash_absorb(ascon_hash_ctx *c, const uint8_t *in, size_t len)
{
	if (len == 0)
		return;
	if (c->n > 0) {
		size_t k = 8 - c->n < len ? 8 - c->n : len;
		memcpy(c->buf + c->n, in, k);
		c->n += (unsigned int)k;
		in += k;
		len -= k;
		if (c->n < 8)
			return;
		c->s[0] ^= load64(c->buf, 0);
		ascon_permute(c->s, 12);
		c->n = 0;
	}
	for (; len >= 8; len -= 8, in += 8) {
		c->s[0] ^= load64(in, 0);
		ascon_permute(c->s, 12);
	}
	if (len > 0)
		memcpy(c->buf, in, len);
	c->n = (unsigned int)len;
}

void ascon_hash_squeeze(ascon_hash_ctx *c, uint8_t *out, size_t len)
{
	if (!c->squeezing) {
		/* The last absorbed block is permuted by pad_block, so the first
		 * output block is the rate as it stands. */
		pad_block(c);
		c->squeezing = 1;
		store64(c->buf, c->s[0], 0);
	}
	while (len > 0) {
		size_t k;
		if (c->n == 8) {
			ascon_permute(c->s, 12);
			store64(c->buf, c->s[0], 0);
			c->n = 0;
		}
		k = 8 - c->n < len ? 8 - c->n : len;
		memcpy(out, c->buf + c->n, k);
		c->n += (unsigned int)k;
		out += k;
		len -= k;
	}
}

void ascon_hash256(uint8_t out[ASCON_HASH256_BYTES], const uint8_t *in, size_t len)
{
	ascon_hash_ctx c;
	ascon_hash256_init(&c);
	ascon_hash_absorb(&c, in, len);
	ascon_hash_squeeze(&c, out, ASCON_HASH256_BYTES);
}

void ascon_xof128(uint8_t *out, size_t outlen, const uint8_t *in, size_t len)
{
	ascon_hash_ctx c;
	ascon_xof128_init(&c);
	ascon_hash_absorb(&c, in, len);
	ascon_hash_squeeze(&c, out, outlen);
}

int ascon_cxof128(uint8_t *out, size_t outlen, const uint8_t *z, size_t zlen, const uint8_t *in,
		  size_t len)
{
	ascon_hash_ctx c;
	if (ascon_cxof128_init(&c, z, zlen) != 0)
		return -1;
	ascon_hash_absorb(&c, in, len);
	ascon_hash_squeeze(&c, out, outlen);
	return 0;
}
