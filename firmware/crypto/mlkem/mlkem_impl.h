/* ML-KEM (FIPS 203) implementation, instantiated once per parameter set by
 * mlkem512.c, mlkem768.c and mlkem1024.c, which define MLKEM_K first.
 *
 * Arithmetic: coefficients are int16_t; products are reduced with Montgomery
 * reduction (R = 2^16) and sums with Barrett reduction, both branch-free.
 * The matrix A is never stored: each entry is sampled when it is used, which
 * keeps stack use at a few polynomials per parameter set. Compression uses a
 * multiplication instead of a division by q, so it takes the same time for
 * every input on cores whose divide instruction does not. */
#include <stdint.h>

#include "../ct.h"
#include "../keccak/keccak.h"
#include "../pqmem.h"
#include "mlkem.h"

#if MLKEM_K == 2
#define NS(x) mlkem512_##x
#define ETA1 3
#define DU 10
#define DV 4
#elif MLKEM_K == 3
#define NS(x) mlkem768_##x
#define ETA1 2
#define DU 10
#define DV 4
#elif MLKEM_K == 4
#define NS(x) mlkem1024_##x
#define ETA1 2
#define DU 11
#define DV 5
#else
#error "MLKEM_K must be 2, 3 or 4"
#endif

#define K MLKEM_K
#define ETA2 2
#define Q 3329
#define POLYBYTES 384
#define EKBYTES (POLYBYTES * K + 32)
#define DKBYTES (2 * POLYBYTES * K + 96)
#define CTBYTES (32 * (DU * K + DV))
#define QINV (-3327) /* q^-1 mod 2^16, as a signed 16-bit value */

/* zetas[i] = 17^BitRev7(i) * 2^16 mod q, centred. */
static const int16_t NS(zetas)[128] = {
	-1044, -758, -359, -1517, 1493, 1422, 287, 202, -171, 622, 1577, 182,
	962, -1202, -1474, 1468, 573, -1325, 264, 383, -829, 1458, -1602, -130,
	-681, 1017, 732, 608, -1542, 411, -205, -1571, 1223, 652, -552, 1015,
	-1293, 1491, -282, -1544, 516, -8, -320, -666, -1618, -1162, 126, 1469,
	-853, -90, -271, 830, 107, -1421, -247, -951, -398, 961, -1508, -725,
	448, -1065, 677, -1275, -1103, 430, 555, 843, -1251, 871, 1550, 105,
	422, 587, 177, -235, -291, -460, 1574, 1653, -246, 778, 1159, -147,
	-777, 1483, -602, 1119, -1590, 644, -872, 349, 418, 329, -156, -75,
	817, 1097, 603, 610, 1322, -1285, -1465, 384, -1215, -136, 1218, -1335,
	-874, 220, -1187, -1659, -1185, -1530, -1278, 794, -1510, -854, -870, 478,
	-108, -308, 996, 991, 958, -1460, 1522, 1628,
};

/* mont_reduce returns a * 2^-16 mod q in (-q, q) for |a| < q * 2^15. */
static int16_t NS(mont_reduce)(int32_t a)
{
	int16_t t = (int16_t)((int16_t)a * (int16_t)QINV);
	return (int16_t)((a - (int32_t)t * Q) >> 16);
}

static int16_t NS(fqmul)(int16_t a, int16_t b)
{
	return NS(mont_reduce)((int32_t)a * b);
}

/* barrett returns a centred representative of a mod q. */
static int16_t NS(barrett)(int16_t a)
{
	const int32_t v = ((1 << 26) + Q / 2) / Q;
	int16_t t = (int16_t)((v * a + (1 << 25)) >> 26);
	return (int16_t)(a - t * Q);
}

static void NS(poly_reduce)(int16_t r[256])
{
	unsigned int i;
	for (i = 0; i < 256; i++)
		r[i] = NS(barrett)(r[i]);
}

/* poly_unsigned maps centred coefficients (|r| < q) to [0, q). */
static void NS(poly_unsigned)(int16_t r[256])
{
	unsigned int i;
	for (i = 0; i < 256; i++)
		r[i] = (int16_t)(r[i] + ((r[i] >> 15) & Q));
}

static void NS(poly_add)(int16_t r[256], const int16_t a[256])
{
	unsigned int i;
	for (i = 0; i < 256; i++)
		r[i] = (int16_t)(r[i] + a[i]);
}

static void NS(poly_zero)(int16_t r[256])
{
	unsigned int i;
	for (i = 0; i < 256; i++)
		r[i] = 0;
}

/* ntt is FIPS 203 Algorithm 9; input |r| < q, output |r| < 8q, normal domain. */
static void NS(ntt)(int16_t r[256])
{
	unsigned int len, start, j, k = 1;
	int16_t t, zeta;

	for (len = 128; len >= 2; len >>= 1) {
		for (start = 0; start < 256; start = j + len) {
			zeta = NS(zetas)[k++];
			for (j = start; j < start + len; j++) {
				t = NS(fqmul)(zeta, r[j + len]);
				r[j + len] = (int16_t)(r[j] - t);
				r[j] = (int16_t)(r[j] + t);
			}
		}
	}
}

/* invntt is FIPS 203 Algorithm 10 followed by a multiplication by 2^16, which
 * cancels the 2^-16 that base multiplication leaves. Output |r| < q. */
static void NS(invntt)(int16_t r[256])
{
	const int16_t f = 1441; /* 2^32 / 128 mod q */
	unsigned int len, start, j, k = 127;
	int16_t t, zeta;

	for (len = 2; len <= 128; len <<= 1) {
		for (start = 0; start < 256; start = j + len) {
			zeta = NS(zetas)[k--];
			for (j = start; j < start + len; j++) {
				t = r[j];
				r[j] = NS(barrett)((int16_t)(t + r[j + len]));
				r[j + len] = NS(fqmul)(zeta, (int16_t)(r[j + len] - t));
			}
		}
	}
	for (j = 0; j < 256; j++)
		r[j] = NS(fqmul)(r[j], f);
}

/* basemul_acc adds a o b (FIPS 203 Algorithm 11, times 2^-16) to r. */
static void NS(basemul_acc)(int16_t r[256], const int16_t a[256], const int16_t b[256])
{
	unsigned int i;
	int16_t zeta;

	for (i = 0; i < 64; i++) {
		zeta = NS(zetas)[64 + i];
		r[4 * i] += (int16_t)(NS(fqmul)(NS(fqmul)(a[4 * i + 1], b[4 * i + 1]), zeta) +
				      NS(fqmul)(a[4 * i], b[4 * i]));
		r[4 * i + 1] += (int16_t)(NS(fqmul)(a[4 * i], b[4 * i + 1]) +
					  NS(fqmul)(a[4 * i + 1], b[4 * i]));
		r[4 * i + 2] += (int16_t)(NS(fqmul)(NS(fqmul)(a[4 * i + 3], b[4 * i + 3]), (int16_t)-zeta) +
					  NS(fqmul)(a[4 * i + 2], b[4 * i + 2]));
		r[4 * i + 3] += (int16_t)(NS(fqmul)(a[4 * i + 2], b[4 * i + 3]) +
					  NS(fqmul)(a[4 * i + 3], b[4 * i + 2]));
	}
}

/* sample_ntt is FIPS 203 Algorithm 7 on SHAKE128(rho || b0 || b1). */
static void NS(sample_ntt)(int16_t r[256], const uint8_t rho[32], uint8_t b0, uint8_t b1)
{
	keccak_ctx st;
	uint8_t buf[SHAKE128_RATE];
	unsigned int n = 0, p;
	uint16_t d1, d2;

	shake128_init(&st);
	keccak_absorb(&st, rho, 32);
	keccak_absorb(&st, &b0, 1);
	keccak_absorb(&st, &b1, 1);
	shake_finalize(&st);
	while (n < 256) {
		keccak_squeeze(&st, buf, sizeof buf);
		for (p = 0; p + 3 <= sizeof buf && n < 256; p += 3) {
			d1 = (uint16_t)(buf[p] | ((buf[p + 1] & 0x0F) << 8));
			d2 = (uint16_t)((buf[p + 1] >> 4) | (buf[p + 2] << 4));
			if (d1 < Q)
				r[n++] = (int16_t)d1;
			if (d2 < Q && n < 256)
				r[n++] = (int16_t)d2;
		}
	}
}

/* cbd is SamplePolyCBD_eta (FIPS 203 Algorithm 8) for eta = 2 or 3. */
static void NS(cbd)(int16_t r[256], const uint8_t *buf, unsigned int eta)
{
	unsigned int i, j;
	uint32_t t, d;

	if (eta == 2) {
		for (i = 0; i < 32; i++) {
			t = (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
			    (uint32_t)buf[4 * i + 2] << 16 | (uint32_t)buf[4 * i + 3] << 24;
			d = (t & 0x55555555u) + ((t >> 1) & 0x55555555u);
			for (j = 0; j < 8; j++)
				r[8 * i + j] = (int16_t)((int16_t)((d >> (4 * j)) & 3) -
							 (int16_t)((d >> (4 * j + 2)) & 3));
		}
	} else {
		for (i = 0; i < 64; i++) {
			t = (uint32_t)buf[3 * i] | (uint32_t)buf[3 * i + 1] << 8 |
			    (uint32_t)buf[3 * i + 2] << 16;
			d = (t & 0x249249u) + ((t >> 1) & 0x249249u) + ((t >> 2) & 0x249249u);
			for (j = 0; j < 4; j++)
				r[4 * i + j] = (int16_t)((int16_t)((d >> (6 * j)) & 7) -
							 (int16_t)((d >> (6 * j + 3)) & 7));
		}
	}
}

/* prf_cbd samples a polynomial from PRF_eta(seed, nonce) = SHAKE256(seed || nonce). */
static void NS(prf_cbd)(int16_t r[256], const uint8_t seed[32], uint8_t nonce, unsigned int eta)
{
	uint8_t in[33], buf[64 * 3];
	memcpy(in, seed, 32);
	in[32] = nonce;
	shake256(buf, 64 * eta, in, sizeof in);
	NS(cbd)(r, buf, eta);
}

/* encode12 is ByteEncode_12 for coefficients in [0, q). */
static void NS(encode12)(uint8_t out[POLYBYTES], const int16_t r[256])
{
	unsigned int i;
	for (i = 0; i < 128; i++) {
		uint16_t a = (uint16_t)r[2 * i], b = (uint16_t)r[2 * i + 1];
		out[3 * i] = (uint8_t)a;
		out[3 * i + 1] = (uint8_t)((a >> 8) | (b << 4));
		out[3 * i + 2] = (uint8_t)(b >> 4);
	}
}

/* decode12 is ByteDecode_12 without the reduction: values are in [0, 4096). */
static void NS(decode12)(int16_t r[256], const uint8_t in[POLYBYTES])
{
	unsigned int i;
	for (i = 0; i < 128; i++) {
		r[2 * i] = (int16_t)(in[3 * i] | ((in[3 * i + 1] & 0x0F) << 8));
		r[2 * i + 1] = (int16_t)((in[3 * i + 1] >> 4) | (in[3 * i + 2] << 4));
	}
}

/* compress is Compress_d for x in [0, q): round(2^d * x / q) mod 2^d, with
 * the division done as a multiplication (exact for all x < q, d <= 11). */
static uint32_t NS(compress)(uint32_t x, unsigned int d)
{
	uint64_t t = (uint64_t)((x << d) + Q / 2) * 10321340u;
	return (uint32_t)(t >> 35) & ((1u << d) - 1);
}

static int16_t NS(decompress)(uint32_t y, unsigned int d)
{
	return (int16_t)((y * Q + (1u << (d - 1))) >> d);
}

/* compress_encode is ByteEncode_d(Compress_d(r)) for r in [0, q). */
static void NS(compress_encode)(uint8_t *out, const int16_t r[256], unsigned int d)
{
	uint32_t acc = 0;
	unsigned int i, bits = 0;
	for (i = 0; i < 256; i++) {
		acc |= NS(compress)((uint32_t)r[i], d) << bits;
		bits += d;
		while (bits >= 8) {
			*out++ = (uint8_t)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
}

/* decode_decompress is Decompress_d(ByteDecode_d(in)). */
static void NS(decode_decompress)(int16_t r[256], const uint8_t *in, unsigned int d)
{
	uint32_t acc = 0;
	unsigned int i, bits = 0;
	for (i = 0; i < 256; i++) {
		while (bits < d) {
			acc |= (uint32_t)*in++ << bits;
			bits += 8;
		}
		r[i] = NS(decompress)(acc & ((1u << d) - 1), d);
		acc >>= d;
		bits -= d;
	}
}

/* frommsg is Decompress_1(ByteDecode_1(m)), branch-free. */
static void NS(frommsg)(int16_t r[256], const uint8_t m[32])
{
	unsigned int i;
	for (i = 0; i < 256; i++) {
		int16_t mask = (int16_t)-(int16_t)((m[i / 8] >> (i % 8)) & 1);
		r[i] = (int16_t)(mask & ((Q + 1) / 2));
	}
}

/* tomsg is ByteEncode_1(Compress_1(r)) for r in [0, q). */
static void NS(tomsg)(uint8_t m[32], const int16_t r[256])
{
	unsigned int i;
	for (i = 0; i < 32; i++)
		m[i] = 0;
	for (i = 0; i < 256; i++)
		m[i / 8] |= (uint8_t)(NS(compress)((uint32_t)r[i], 1) << (i % 8));
}

/* pke_keygen is K-PKE.KeyGen (FIPS 203 Algorithm 13). */
static void NS(pke_keygen)(uint8_t ek[EKBYTES], uint8_t dkpke[POLYBYTES * K], const uint8_t d[32])
{
	uint8_t in[33], rs[64];
	int16_t s[K][256], t[256], a[256], e[256];
	const uint8_t *rho = rs, *sigma = rs + 32;
	unsigned int i, j;

	memcpy(in, d, 32);
	in[32] = K;
	sha3_512(rs, in, sizeof in);
	for (i = 0; i < K; i++) {
		NS(prf_cbd)(s[i], sigma, (uint8_t)i, ETA1);
		NS(ntt)(s[i]);
		NS(poly_reduce)(s[i]);
	}
	for (i = 0; i < K; i++) {
		NS(poly_zero)(t);
		for (j = 0; j < K; j++) {
			NS(sample_ntt)(a, rho, (uint8_t)j, (uint8_t)i); /* A[i][j] */
			NS(basemul_acc)(t, a, s[j]);
		}
		/* t carries a factor 2^-16 from basemul: multiply by 2^32 mod q. */
		for (j = 0; j < 256; j++)
			t[j] = NS(fqmul)(t[j], 1353);
		NS(prf_cbd)(e, sigma, (uint8_t)(K + i), ETA1);
		NS(ntt)(e);
		NS(poly_reduce)(e);
		NS(poly_add)(t, e);
		NS(poly_reduce)(t);
		NS(poly_unsigned)(t);
		NS(encode12)(ek + POLYBYTES * i, t);
	}
	memcpy(ek + POLYBYTES * K, rho, 32);
	for (i = 0; i < K; i++) {
		NS(poly_unsigned)(s[i]);
		NS(encode12)(dkpke + POLYBYTES * i, s[i]);
	}
}

/* pke_encrypt is K-PKE.Encrypt (FIPS 203 Algorithm 14). */
static void NS(pke_encrypt)(uint8_t c[CTBYTES], const uint8_t ek[EKBYTES], const uint8_t m[32],
			    const uint8_t r[32])
{
	int16_t y[K][256], acc[256], a[256];
	const uint8_t *rho = ek + POLYBYTES * K;
	unsigned int i, j;

	for (i = 0; i < K; i++) {
		NS(prf_cbd)(y[i], r, (uint8_t)i, ETA1);
		NS(ntt)(y[i]);
		NS(poly_reduce)(y[i]);
	}
	for (i = 0; i < K; i++) {
		NS(poly_zero)(acc);
		for (j = 0; j < K; j++) {
			NS(sample_ntt)(a, rho, (uint8_t)i, (uint8_t)j); /* A^T[i][j] = A[j][i] */
			NS(basemul_acc)(acc, a, y[j]);
		}
		NS(poly_reduce)(acc);
		NS(invntt)(acc);
		NS(prf_cbd)(a, r, (uint8_t)(K + i), ETA2); /* e1[i] */
		NS(poly_add)(acc, a);
		NS(poly_reduce)(acc);
		NS(poly_unsigned)(acc);
		NS(compress_encode)(c + 32 * DU * i, acc, DU);
	}
	NS(poly_zero)(acc);
	for (j = 0; j < K; j++) {
		NS(decode12)(a, ek + POLYBYTES * j);
		NS(basemul_acc)(acc, a, y[j]);
	}
	NS(poly_reduce)(acc);
	NS(invntt)(acc);
	NS(prf_cbd)(a, r, (uint8_t)(2 * K), ETA2); /* e2 */
	NS(poly_add)(acc, a);
	NS(frommsg)(a, m);
	NS(poly_add)(acc, a);
	NS(poly_reduce)(acc);
	NS(poly_unsigned)(acc);
	NS(compress_encode)(c + 32 * DU * K, acc, DV);
}

/* pke_decrypt is K-PKE.Decrypt (FIPS 203 Algorithm 15). */
static void NS(pke_decrypt)(uint8_t m[32], const uint8_t dkpke[POLYBYTES * K], const uint8_t c[CTBYTES])
{
	int16_t u[256], s[256], acc[256];
	unsigned int i;

	NS(poly_zero)(acc);
	for (i = 0; i < K; i++) {
		NS(decode_decompress)(u, c + 32 * DU * i, DU);
		NS(ntt)(u);
		NS(poly_reduce)(u);
		NS(decode12)(s, dkpke + POLYBYTES * i);
		NS(basemul_acc)(acc, s, u);
	}
	NS(poly_reduce)(acc);
	NS(invntt)(acc);
	NS(decode_decompress)(u, c + 32 * DU * K, DV);
	for (i = 0; i < 256; i++)
		u[i] = (int16_t)(u[i] - acc[i]);
	NS(poly_reduce)(u);
	NS(poly_unsigned)(u);
	NS(tomsg)(m, u);
}

int NS(keygen_internal)(uint8_t *ek, uint8_t *dk, const uint8_t d[32], const uint8_t z[32])
{
	NS(pke_keygen)(ek, dk, d);
	memcpy(dk + POLYBYTES * K, ek, EKBYTES);
	sha3_256(dk + POLYBYTES * K + EKBYTES, ek, EKBYTES);
	memcpy(dk + POLYBYTES * K + EKBYTES + 32, z, 32);
	return 0;
}

int NS(encaps_internal)(uint8_t *c, uint8_t k[32], const uint8_t *ek, const uint8_t m[32])
{
	uint8_t in[64], kr[64];
	memcpy(in, m, 32);
	sha3_256(in + 32, ek, EKBYTES);
	sha3_512(kr, in, sizeof in);
	NS(pke_encrypt)(c, ek, m, kr + 32);
	memcpy(k, kr, 32);
	return 0;
}

int NS(decaps_internal)(uint8_t k[32], const uint8_t *c, const uint8_t *dk)
{
	const uint8_t *ekpke = dk + POLYBYTES * K;
	const uint8_t *h = ekpke + EKBYTES;
	const uint8_t *z = h + 32;
	uint8_t in[64], kr[64], kbar[32], cp[CTBYTES];
	keccak_ctx st;

	NS(pke_decrypt)(in, dk, c);
	memcpy(in + 32, h, 32);
	sha3_512(kr, in, sizeof in);
	shake256_init(&st);
	keccak_absorb(&st, z, 32);
	keccak_absorb(&st, c, CTBYTES);
	shake_finalize(&st);
	keccak_squeeze(&st, kbar, 32);
	NS(pke_encrypt)(cp, ekpke, in, kr + 32);
	ct_cmov(kr, kbar, 32, ct_neq(c, cp, CTBYTES));
	memcpy(k, kr, 32);
	return 0;
}

int NS(check_ek)(const uint8_t *ek)
{
	int16_t a[256];
	unsigned int i, j;
	for (i = 0; i < K; i++) {
		NS(decode12)(a, ek + POLYBYTES * i);
		for (j = 0; j < 256; j++)
			if (a[j] >= Q)
				return -1;
	}
	return 0;
}

int NS(check_dk)(const uint8_t *dk)
{
	uint8_t h[32];
	sha3_256(h, dk + POLYBYTES * K, EKBYTES);
	return ct_neq(h, dk + POLYBYTES * K + EKBYTES, 32) ? -1 : 0;
}

int NS(encaps)(uint8_t *c, uint8_t k[32], const uint8_t *ek, const uint8_t m[32])
{
	if (NS(check_ek)(ek) != 0)
		return -1;
	return NS(encaps_internal)(c, k, ek, m);
}

int NS(decaps)(uint8_t k[32], const uint8_t *c, const uint8_t *dk)
{
	if (NS(check_dk)(dk) != 0)
		return -1;
	return NS(decaps_internal)(k, c, dk);
}
