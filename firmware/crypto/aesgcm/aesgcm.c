/* AES-128-GCM, table-free and constant time; see aesgcm.h. */
#include "aesgcm.h"

#include "../ct.h"
#include "../pqmem.h"

/* xtime4 multiplies each byte of w by x in GF(2^8) (polynomial x^8 + x^4 + x^3 + x + 1). */
static uint32_t xtime4(uint32_t w)
{
	uint32_t hi = (w >> 7) & 0x01010101u;
	return ((w & 0x7f7f7f7fu) << 1) ^ (hi * 0x1bu);
}

/* gmul4 multiplies each byte of a by the byte of b in the same lane. */
static uint32_t gmul4(uint32_t a, uint32_t b)
{
	uint32_t r = 0;
	int i;
	for (i = 0; i < 8; i++) {
		uint32_t m = ct_barrier_u32((b >> i) & 0x01010101u) * 0xffu;
		r ^= a & m;
		a = xtime4(a);
	}
	return r;
}

/* sq4 squares each byte of w. Squaring is linear over GF(2): bit i of a byte moves to bit 2i,
 * and bits 4..7 land on x^8, x^10, x^12, x^14, which reduce to 0x1b, 0x6c, 0xab, 0x9a. Each
 * term is a lane mask times a constant, so no branch and no table. */
static uint32_t sq4(uint32_t w)
{
	const uint32_t m = 0x01010101u;
	uint32_t r = (w & m) | ((w & 0x02020202u) << 1) | ((w & 0x04040404u) << 2) | ((w & 0x08080808u) << 3);
	r ^= ((w >> 4) & m) * 0x1bu;
	r ^= ((w >> 5) & m) * 0x6cu;
	r ^= ((w >> 6) & m) * 0xabu;
	r ^= ((w >> 7) & m) * 0x9au;
	return r;
}

/* rotl8each rotates every byte of w left by n bits, 1 <= n <= 7. */
static uint32_t rotl8each(uint32_t w, int n)
{
	uint32_t hi = ((0xffu << n) & 0xffu) * 0x01010101u, lo = (0xffu >> (8 - n)) * 0x01010101u;
	return ((w << n) & hi) | ((w >> (8 - n)) & lo);
}

/* sub4 is the S-box on each byte of w: the inverse x^254 (0 maps to 0) by 7 squarings and 4
 * multiplications, then the affine map
 * b ^ rotl(b,1) ^ rotl(b,2) ^ rotl(b,3) ^ rotl(b,4) ^ 0x63. */
static uint32_t sub4(uint32_t x)
{
	uint32_t x2 = sq4(x), x3 = gmul4(x2, x), x12 = sq4(sq4(x3)), x15 = gmul4(x12, x3);
	uint32_t x240 = sq4(sq4(sq4(sq4(x15)))), x252 = gmul4(x240, x12);
	uint32_t b = gmul4(x252, x2);
	return b ^ rotl8each(b, 1) ^ rotl8each(b, 2) ^ rotl8each(b, 3) ^ rotl8each(b, 4) ^ 0x63636363u;
}

static uint32_t load32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void store32le(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

void aes128_expand(uint32_t rk[44], const uint8_t key[AES128_KEYBYTES])
{
	uint32_t rcon = 1;
	int i;
	for (i = 0; i < 4; i++)
		rk[i] = load32le(key + 4 * i);
	for (i = 4; i < 44; i++) {
		uint32_t t = rk[i - 1];
		if (i % 4 == 0) {
			t = sub4((t >> 8) | (t << 24)) ^ rcon; /* RotWord, SubWord, Rcon */
			rcon = xtime4(rcon);
		}
		rk[i] = rk[i - 4] ^ t;
	}
}

/* The state is four little-endian column words: byte r of column c is row r. */
static void shift_rows(uint32_t s[4])
{
	uint32_t t[4];
	int c;
	for (c = 0; c < 4; c++)
		t[c] = (s[c] & 0xffu) | (s[(c + 1) & 3] & 0xff00u) | (s[(c + 2) & 3] & 0xff0000u) |
		       (s[(c + 3) & 3] & 0xff000000u);
	memcpy(s, t, sizeof t);
}

/* mix_column: out_r = 2 a_r ^ 3 a_{r+1} ^ a_{r+2} ^ a_{r+3} = xtime(a_r ^ a_{r+1}) ^ a_{r+1} ^ a_{r+2} ^ a_{r+3}. */
static uint32_t mix_column(uint32_t a)
{
	uint32_t r1 = (a >> 8) | (a << 24), r2 = (a >> 16) | (a << 16), r3 = (a >> 24) | (a << 8);
	return xtime4(a ^ r1) ^ r1 ^ r2 ^ r3;
}

void aes128_encrypt_block(const uint32_t rk[44], uint8_t out[16], const uint8_t in[16])
{
	uint32_t s[4];
	int r, c;
	for (c = 0; c < 4; c++)
		s[c] = load32le(in + 4 * c) ^ rk[c];
	for (r = 1; r <= 10; r++) {
		for (c = 0; c < 4; c++)
			s[c] = sub4(s[c]);
		shift_rows(s);
		for (c = 0; c < 4; c++)
			s[c] = (r < 10 ? mix_column(s[c]) : s[c]) ^ rk[4 * r + c];
	}
	for (c = 0; c < 4; c++)
		store32le(out + 4 * c, s[c]);
}

static uint64_t load64be(const uint8_t *p)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void store64be(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* gf128_mul: x = x * h in GCM's bit-reflected GF(2^128), 128 masked steps, no table. */
static void gf128_mul(uint64_t x[2], const uint64_t h[2])
{
	uint64_t z0 = 0, z1 = 0, v0 = h[0], v1 = h[1];
	int i;
	for (i = 0; i < 128; i++) {
		uint64_t bit = (i < 64 ? x[0] >> (63 - i) : x[1] >> (127 - i)) & 1;
		uint64_t m = (uint64_t)0 - (uint64_t)ct_barrier_u32((uint32_t)bit);
		uint64_t lsb = (uint64_t)0 - (uint64_t)ct_barrier_u32((uint32_t)(v1 & 1));
		z0 ^= v0 & m;
		z1 ^= v1 & m;
		v1 = (v1 >> 1) | (v0 << 63);
		v0 = (v0 >> 1) ^ (0xe100000000000000ULL & lsb);
	}
	x[0] = z0;
	x[1] = z1;
}

/* ghash_bytes absorbs len bytes, the last block zero-padded. */
static void ghash_bytes(uint64_t y[2], const uint64_t h[2], const uint8_t *p, size_t len)
{
	uint8_t blk[16];
	while (len > 0) {
		size_t n = len < 16 ? len : 16;
		memset(blk, 0, sizeof blk);
		memcpy(blk, p, n);
		y[0] ^= load64be(blk);
		y[1] ^= load64be(blk + 8);
		gf128_mul(y, h);
		p += n;
		len -= n;
	}
}

void aes128gcm_init(aes128gcm_ctx *c, const uint8_t key[AES128_KEYBYTES])
{
	uint8_t zero[16] = {0};
	aes128_expand(c->rk, key);
	aes128_encrypt_block(c->rk, zero, zero);
	c->h[0] = load64be(zero);
	c->h[1] = load64be(zero + 8);
	memset(zero, 0, sizeof zero);
}

void aes128gcm_wipe(aes128gcm_ctx *c)
{
	volatile uint8_t *p = (volatile uint8_t *)c;
	size_t i;
	for (i = 0; i < sizeof *c; i++)
		p[i] = 0;
}

/* ctr_xor: out = in ^ keystream from counter block 2 on (J0 = IV || 1 is the tag's). */
static void ctr_xor(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *in,
		    size_t len)
{
	uint8_t cb[16], ks[16];
	uint32_t ctr = 2;
	size_t i, n;
	memcpy(cb, iv, AESGCM_IVBYTES);
	while (len > 0) {
		cb[12] = (uint8_t)(ctr >> 24);
		cb[13] = (uint8_t)(ctr >> 16);
		cb[14] = (uint8_t)(ctr >> 8);
		cb[15] = (uint8_t)ctr;
		aes128_encrypt_block(c->rk, ks, cb);
		n = len < 16 ? len : 16;
		for (i = 0; i < n; i++)
			out[i] = in[i] ^ ks[i];
		out += n;
		in += n;
		len -= n;
		ctr++;
	}
	memset(ks, 0, sizeof ks);
}

/* tag = GHASH_H(A, C, lengths) ^ E(K, J0) */
static void gcm_tag(const aes128gcm_ctx *c, uint8_t tag[16], const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		    size_t aadlen, const uint8_t *ct, size_t ctlen)
{
	uint64_t y[2] = {0, 0};
	uint8_t j0[16];
	int i;
	ghash_bytes(y, c->h, aad, aadlen);
	ghash_bytes(y, c->h, ct, ctlen);
	y[0] ^= (uint64_t)aadlen * 8;
	y[1] ^= (uint64_t)ctlen * 8;
	gf128_mul(y, c->h);
	memcpy(j0, iv, AESGCM_IVBYTES);
	j0[12] = j0[13] = j0[14] = 0;
	j0[15] = 1;
	aes128_encrypt_block(c->rk, j0, j0);
	store64be(tag, y[0]);
	store64be(tag + 8, y[1]);
	for (i = 0; i < 16; i++)
		tag[i] ^= j0[i];
}

/* text_too_long: more than SP 800-38D allows under one IV (never on a 32-bit size_t). */
static int text_too_long(uint64_t n)
{
	return n > AESGCM_MAX_TEXT;
}

int aes128gcm_seal(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		   size_t aadlen, const uint8_t *pt, size_t ptlen)
{
	if (text_too_long(ptlen))
		return -1;
	ctr_xor(c, out, iv, pt, ptlen);
	gcm_tag(c, out + ptlen, iv, aad, aadlen, out, ptlen);
	return 0;
}

int aes128gcm_open(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		   size_t aadlen, const uint8_t *ct, size_t ctlen)
{
	uint8_t tag[16];
	size_t n;
	uint32_t bad;
	if (ctlen < AESGCM_TAGBYTES)
		return -1;
	n = ctlen - AESGCM_TAGBYTES;
	if (text_too_long(n)) {
		memset(out, 0, n);
		return -1;
	}
	gcm_tag(c, tag, iv, aad, aadlen, ct, n);
	bad = ct_neq(tag, ct + n, AESGCM_TAGBYTES);
	memset(tag, 0, sizeof tag);
	if (bad) {
		memset(out, 0, n);
		return -1;
	}
	ctr_xor(c, out, iv, ct, n);
	return 0;
}
