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

/* Rotation offsets r[x + 5y]. */
static const uint8_t keccak_rho[25] = {
	0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43,
	25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
};

static uint64_t rol64(uint64_t v, unsigned int n)
{
	return n == 0 ? v : (v << n) | (v >> (64 - n));
}

void keccak_f1600(uint64_t s[25])
{
	uint64_t b[25], c[5], d;
	unsigned int round, x, y;

	for (round = 0; round < 24; round++) {
		/* theta */
		for (x = 0; x < 5; x++)
			c[x] = s[x] ^ s[x + 5] ^ s[x + 10] ^ s[x + 15] ^ s[x + 20];
		for (x = 0; x < 5; x++) {
			d = c[(x + 4) % 5] ^ rol64(c[(x + 1) % 5], 1);
			for (y = 0; y < 25; y += 5)
				s[x + y] ^= d;
		}
		/* rho and pi: B[y, 2x+3y] = rot(A[x, y]) */
		for (y = 0; y < 5; y++)
			for (x = 0; x < 5; x++)
				b[y + 5 * ((2 * x + 3 * y) % 5)] =
					rol64(s[x + 5 * y], keccak_rho[x + 5 * y]);
		/* chi */
		for (y = 0; y < 25; y += 5)
			for (x = 0; x < 5; x++)
				s[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
		/* iota */
		s[0] ^= keccak_rc[round];
	}
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
