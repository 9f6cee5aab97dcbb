/* Keccak-f[1600] permutation and sponge (FIPS 202). Portable C, lane form. */
#include "keccak.h"

static const uint64_t keccak_rc[24] = {
	0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808AULL,
	0x8000000080008000ULL, 0x000000000000808BULL, 0x0000000080000001ULL,
	0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008AULL,
	0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000AULL,
	0x000000008000808BULL, 0x800000000000008BULL, 0x8000000000008089ULL,
	0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
	0x000000000000800AULL, 0x800000008000000AULL, 0x8000000080008081ULL,
	0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* ROL64 rotates left by a constant; a rotation by 0 is the identity. */
#define ROL64(v, n) ((n) == 0 ? (v) : (((v) << ((n) & 63)) | ((v) >> ((64 - (n)) & 63))))

/* keccak_f1600 is the permutation written out lane by lane (lane (x, y) is
 * s[x + 5y]): theta, rho and pi fused into one pass, then chi and iota. The
 * rotation offsets are those of FIPS 202, Table 2. */
void keccak_f1600(uint64_t s[25])
{
	uint64_t a00, a01, a02, a03, a04, a05, a06, a07, a08, a09, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24;
	uint64_t b00, b01, b02, b03, b04, b05, b06, b07, b08, b09, b10, b11, b12, b13, b14, b15, b16, b17, b18, b19, b20, b21, b22, b23, b24;
	uint64_t c0, c1, c2, c3, c4, d0, d1, d2, d3, d4;
	unsigned int round;

	a00 = s[0];
	a01 = s[1];
	a02 = s[2];
	a03 = s[3];
	a04 = s[4];
	a05 = s[5];
	a06 = s[6];
	a07 = s[7];
	a08 = s[8];
	a09 = s[9];
	a10 = s[10];
	a11 = s[11];
	a12 = s[12];
	a13 = s[13];
	a14 = s[14];
	a15 = s[15];
	a16 = s[16];
	a17 = s[17];
	a18 = s[18];
	a19 = s[19];
	a20 = s[20];
	a21 = s[21];
	a22 = s[22];
	a23 = s[23];
	a24 = s[24];
	for (round = 0; round < 24; round++) {
		/* theta */
		c0 = a00 ^ a05 ^ a10 ^ a15 ^ a20;
		c1 = a01 ^ a06 ^ a11 ^ a16 ^ a21;
		c2 = a02 ^ a07 ^ a12 ^ a17 ^ a22;
		c3 = a03 ^ a08 ^ a13 ^ a18 ^ a23;
		c4 = a04 ^ a09 ^ a14 ^ a19 ^ a24;
		d0 = c4 ^ ROL64(c1, 1);
		d1 = c0 ^ ROL64(c2, 1);
		d2 = c1 ^ ROL64(c3, 1);
		d3 = c2 ^ ROL64(c4, 1);
		d4 = c3 ^ ROL64(c0, 1);
		/* theta applied, rho and pi: B[y, 2x+3y] = rot(A[x, y] ^ D[x]) */
		b00 = ROL64(a00 ^ d0, 0);
		b10 = ROL64(a01 ^ d1, 1);
		b20 = ROL64(a02 ^ d2, 62);
		b05 = ROL64(a03 ^ d3, 28);
		b15 = ROL64(a04 ^ d4, 27);
		b16 = ROL64(a05 ^ d0, 36);
		b01 = ROL64(a06 ^ d1, 44);
		b11 = ROL64(a07 ^ d2, 6);
		b21 = ROL64(a08 ^ d3, 55);
		b06 = ROL64(a09 ^ d4, 20);
		b07 = ROL64(a10 ^ d0, 3);
		b17 = ROL64(a11 ^ d1, 10);
		b02 = ROL64(a12 ^ d2, 43);
		b12 = ROL64(a13 ^ d3, 25);
		b22 = ROL64(a14 ^ d4, 39);
		b23 = ROL64(a15 ^ d0, 41);
		b08 = ROL64(a16 ^ d1, 45);
		b18 = ROL64(a17 ^ d2, 15);
		b03 = ROL64(a18 ^ d3, 21);
		b13 = ROL64(a19 ^ d4, 8);
		b14 = ROL64(a20 ^ d0, 18);
		b24 = ROL64(a21 ^ d1, 2);
		b09 = ROL64(a22 ^ d2, 61);
		b19 = ROL64(a23 ^ d3, 56);
		b04 = ROL64(a24 ^ d4, 14);
		/* chi */
		a00 = b00 ^ (~b01 & b02);
		a01 = b01 ^ (~b02 & b03);
		a02 = b02 ^ (~b03 & b04);
		a03 = b03 ^ (~b04 & b00);
		a04 = b04 ^ (~b00 & b01);
		a05 = b05 ^ (~b06 & b07);
		a06 = b06 ^ (~b07 & b08);
		a07 = b07 ^ (~b08 & b09);
		a08 = b08 ^ (~b09 & b05);
		a09 = b09 ^ (~b05 & b06);
		a10 = b10 ^ (~b11 & b12);
		a11 = b11 ^ (~b12 & b13);
		a12 = b12 ^ (~b13 & b14);
		a13 = b13 ^ (~b14 & b10);
		a14 = b14 ^ (~b10 & b11);
		a15 = b15 ^ (~b16 & b17);
		a16 = b16 ^ (~b17 & b18);
		a17 = b17 ^ (~b18 & b19);
		a18 = b18 ^ (~b19 & b15);
		a19 = b19 ^ (~b15 & b16);
		a20 = b20 ^ (~b21 & b22);
		a21 = b21 ^ (~b22 & b23);
		a22 = b22 ^ (~b23 & b24);
		a23 = b23 ^ (~b24 & b20);
		a24 = b24 ^ (~b20 & b21);
		/* iota */
		a00 ^= keccak_rc[round];
	}
	s[0] = a00;
	s[1] = a01;
	s[2] = a02;
	s[3] = a03;
	s[4] = a04;
	s[5] = a05;
	s[6] = a06;
	s[7] = a07;
	s[8] = a08;
	s[9] = a09;
	s[10] = a10;
	s[11] = a11;
	s[12] = a12;
	s[13] = a13;
	s[14] = a14;
	s[15] = a15;
	s[16] = a16;
	s[17] = a17;
	s[18] = a18;
	s[19] = a19;
	s[20] = a20;
	s[21] = a21;
	s[22] = a22;
	s[23] = a23;
	s[24] = a24;
}

void keccak_init(keccak_ctx *c, unsigned int rate)
{
	unsigned int i;
	for (i = 0; i < 25; i++)
		c->s[i] = 0;
	c->pos = 0;
	c->rate = rate;
}

static uint64_t load64le(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
	       (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static void store64le(uint8_t *p, uint64_t v)
{
	unsigned int i;
	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void keccak_absorb(keccak_ctx *c, const uint8_t *in, size_t len)
{
	while (len > 0) {
		if ((c->pos & 7) == 0 && len >= 8 && c->pos + 8 <= c->rate) {
			c->s[c->pos / 8] ^= load64le(in);
			c->pos += 8;
			in += 8;
			len -= 8;
		} else {
			c->s[c->pos / 8] ^= (uint64_t)*in << (8 * (c->pos & 7));
			c->pos++;
			in++;
			len--;
		}
		if (c->pos == c->rate) {
			keccak_f1600(c->s);
			c->pos = 0;
		}
	}
}

void keccak_finalize(keccak_ctx *c, uint8_t ds)
{
	c->s[c->pos / 8] ^= (uint64_t)ds << (8 * (c->pos & 7));
	c->s[(c->rate - 1) / 8] ^= (uint64_t)0x80 << (8 * ((c->rate - 1) & 7));
	/* Mark the block as fully consumed so the first squeeze permutes. */
	c->pos = c->rate;
}

void keccak_squeeze(keccak_ctx *c, uint8_t *out, size_t len)
{
	while (len > 0) {
		if (c->pos == c->rate) {
			keccak_f1600(c->s);
			c->pos = 0;
		}
		if ((c->pos & 7) == 0 && len >= 8) {
			store64le(out, c->s[c->pos / 8]);
			c->pos += 8;
			out += 8;
			len -= 8;
		} else {
			*out++ = (uint8_t)(c->s[c->pos / 8] >> (8 * (c->pos & 7)));
			c->pos++;
			len--;
		}
	}
}

void shake128_init(keccak_ctx *c) { keccak_init(c, SHAKE128_RATE); }
void shake256_init(keccak_ctx *c) { keccak_init(c, SHAKE256_RATE); }
void shake_finalize(keccak_ctx *c) { keccak_finalize(c, 0x1F); }

void sha3_256(uint8_t out[32], const uint8_t *in, size_t len)
{
	keccak_ctx c;
	keccak_init(&c, SHA3_256_RATE);
	keccak_absorb(&c, in, len);
	keccak_finalize(&c, 0x06);
	keccak_squeeze(&c, out, 32);
}

void sha3_512(uint8_t out[64], const uint8_t *in, size_t len)
{
	keccak_ctx c;
	keccak_init(&c, SHA3_512_RATE);
	keccak_absorb(&c, in, len);
	keccak_finalize(&c, 0x06);
	keccak_squeeze(&c, out, 64);
}

void shake128(uint8_t *out, size_t outlen, const uint8_t *in, size_t len)
{
	keccak_ctx c;
	shake128_init(&c);
	keccak_absorb(&c, in, len);
	shake_finalize(&c);
	keccak_squeeze(&c, out, outlen);
}

void shake256(uint8_t *out, size_t outlen, const uint8_t *in, size_t len)
{
	keccak_ctx c;
	shake256_init(&c);
	keccak_absorb(&c, in, len);
	shake_finalize(&c);
	keccak_squeeze(&c, out, outlen);
}
