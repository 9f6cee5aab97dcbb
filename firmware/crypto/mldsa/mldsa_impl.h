/* ML-DSA (FIPS 204) implementation, instantiated once per parameter set by
 * mldsa44.c, mldsa65.c and mldsa87.c, which define MLDSA_SET first.
 *
 * Arithmetic: coefficients are int32_t; products are reduced with Montgomery
 * reduction (R = 2^32) and sums with a shift-based reduction, both
 * branch-free. The NTT follows FIPS 204 Algorithms 41 and 42 with the zetas
 * kept in Montgomery form.
 *
 * Memory: the matrix A is never stored; each entry is sampled from rho when
 * it is used. Signing keeps y (in the NTT domain) and w, K + L polynomials,
 * and re-reads s1, s2 and t0 from the encoded secret key in every round;
 * verification keeps z (L polynomials). Nothing is allocated.
 *
 * Constant time: everything that touches s1, s2, t0, K, y or the
 * per-signature randomness runs in time independent of their values, with
 * two exceptions FIPS 204 allows: the rejection sampling of s1 and s2 from
 * rho' (Algorithms 14 and 33; the number of SHAKE blocks drawn varies), and
 * the number of signing rounds. The norm checks scan every coefficient and
 * the hints of a round are counted without branches, so a rejected round
 * shows only which check refused it: z, or r0 / ct0 / the hint count and
 * the row of w at which the r0 or ct0 check failed. SampleInBall branches
 * on c~, which the signature reveals. */
#include <stddef.h>
#include <stdint.h>

#include "../ct.h"
#include "../keccak/keccak.h"
#include "../pqmem.h"
#include "mldsa.h"

#define N 256
#define Q 8380417
#define QINV 58728449 /* q^-1 mod 2^32 */
#define D 13

#if MLDSA_SET == 44
#define NS(x) mldsa44_##x
#define K 4
#define L 4
#define ETA 2
#define TAU 39
#define BETA 78
#define GAMMA1_BITS 17
#define GAMMA2 ((Q - 1) / 88)
#define OMEGA 80
#define CTILDEBYTES 32
#define WANT_PK MLDSA44_PKBYTES
#define WANT_SK MLDSA44_SKBYTES
#define WANT_SIG MLDSA44_SIGBYTES
#elif MLDSA_SET == 65
#define NS(x) mldsa65_##x
#define K 6
#define L 5
#define ETA 4
#define TAU 49
#define BETA 196
#define GAMMA1_BITS 19
#define GAMMA2 ((Q - 1) / 32)
#define OMEGA 55
#define CTILDEBYTES 48
#define WANT_PK MLDSA65_PKBYTES
#define WANT_SK MLDSA65_SKBYTES
#define WANT_SIG MLDSA65_SIGBYTES
#elif MLDSA_SET == 87
#define NS(x) mldsa87_##x
#define K 8
#define L 7
#define ETA 2
#define TAU 60
#define BETA 120
#define GAMMA1_BITS 19
#define GAMMA2 ((Q - 1) / 32)
#define OMEGA 75
#define CTILDEBYTES 64
#define WANT_PK MLDSA87_PKBYTES
#define WANT_SK MLDSA87_SKBYTES
#define WANT_SIG MLDSA87_SIGBYTES
#else
#error "MLDSA_SET must be 44, 65 or 87"
#endif

#define GAMMA1 (1 << GAMMA1_BITS)
#define ETA_BITS (ETA == 2 ? 3 : 4)
#define W1_BITS (GAMMA2 == (Q - 1) / 88 ? 6 : 4)
#define POLYETA (32 * ETA_BITS)
#define POLYT1 320
#define POLYT0 416
#define POLYZ (32 * (GAMMA1_BITS + 1))
#define POLYW1 (32 * W1_BITS)
#define PKBYTES (32 + K * POLYT1)
#define SK_TR 64
#define SK_S1 128
#define SK_S2 (SK_S1 + L * POLYETA)
#define SK_T0 (SK_S2 + K * POLYETA)
#define SKBYTES (SK_T0 + K * POLYT0)
#define SIG_Z CTILDEBYTES
#define SIG_H (SIG_Z + L * POLYZ)
#define SIGBYTES (SIG_H + OMEGA + K)

_Static_assert(PKBYTES == WANT_PK, "public key size");
_Static_assert(SKBYTES == WANT_SK, "secret key size");
_Static_assert(SIGBYTES == WANT_SIG, "signature size");

/* zetas[i] = 1753^BitRev8(i) * 2^32 mod q, centred (zetas[0] is unused). */
static const int32_t NS(zetas)[N] = {
	0, 25847, -2608894, -518909, 237124, -777960, -876248, 466468,
	1826347, 2353451, -359251, -2091905, 3119733, -2884855, 3111497, 2680103,
	2725464, 1024112, -1079900, 3585928, -549488, -1119584, 2619752, -2108549,
	-2118186, -3859737, -1399561, -3277672, 1757237, -19422, 4010497, 280005,
	2706023, 95776, 3077325, 3530437, -1661693, -3592148, -2537516, 3915439,
	-3861115, -3043716, 3574422, -2867647, 3539968, -300467, 2348700, -539299,
	-1699267, -1643818, 3505694, -3821735, 3507263, -2140649, -1600420, 3699596,
	811944, 531354, 954230, 3881043, 3900724, -2556880, 2071892, -2797779,
	-3930395, -1528703, -3677745, -3041255, -1452451, 3475950, 2176455, -1585221,
	-1257611, 1939314, -4083598, -1000202, -3190144, -3157330, -3632928, 126922,
	3412210, -983419, 2147896, 2715295, -2967645, -3693493, -411027, -2477047,
	-671102, -1228525, -22981, -1308169, -381987, 1349076, 1852771, -1430430,
	-3343383, 264944, 508951, 3097992, 44288, -1100098, 904516, 3958618,
	-3724342, -8578, 1653064, -3249728, 2389356, -210977, 759969, -1316856,
	189548, -3553272, 3159746, -1851402, -2409325, -177440, 1315589, 1341330,
	1285669, -1584928, -812732, -1439742, -3019102, -3881060, -3628969, 3839961,
	2091667, 3407706, 2316500, 3817976, -3342478, 2244091, -2446433, -3562462,
	266997, 2434439, -1235728, 3513181, -3520352, -3759364, -1197226, -3193378,
	900702, 1859098, 909542, 819034, 495491, -1613174, -43260, -522500,
	-655327, -3122442, 2031748, 3207046, -3556995, -525098, -768622, -3595838,
	342297, 286988, -2437823, 4108315, 3437287, -3342277, 1735879, 203044,
	2842341, 2691481, -2590150, 1265009, 4055324, 1247620, 2486353, 1595974,
	-3767016, 1250494, 2635921, -3548272, -2994039, 1869119, 1903435, -1050970,
	-1333058, 1237275, -3318210, -1430225, -451100, 1312455, 3306115, -1962642,
	-1279661, 1917081, -2546312, -1374803, 1500165, 777191, 2235880, 3406031,
	-542412, -2831860, -1671176, -1846953, -2584293, -3724270, 594136, -3776993,
	-2013608, 2432395, 2454455, -164721, 1957272, 3369112, 185531, -1207385,
	-3183426, 162844, 1616392, 3014001, 810149, 1652634, -3694233, -1799107,
	-3038916, 3523897, 3866901, 269760, 2213111, -975884, 1717735, 472078,
	-426683, 1723600, -1803090, 1910376, -1667432, -1104333, -260646, -3833893,
	-2939036, -2235985, -420899, -2286327, 183443, -976891, 1612842, -3545687,
	-554416, 3919660, -48306, -1362209, 3937738, 1400424, -846154, 1976782,
};

/* ---- arithmetic ---- */

/* mont returns a * 2^-32 mod q in (-q, q) for |a| < q * 2^31. */
static int32_t NS(mont)(int64_t a)
{
	int32_t t = (int32_t)((uint32_t)(uint64_t)a * (uint32_t)QINV);
	return (int32_t)((a - (int64_t)t * Q) >> 32);
}

/* reduce32 returns r = a mod q with |r| <= 6283008, for a <= 2^31 - 2^22 - 1. */
static int32_t NS(reduce32)(int32_t a)
{
	int32_t t = (a + (1 << 22)) >> 23;
	return a - t * Q;
}

/* caddq adds q to a negative a. */
static int32_t NS(caddq)(int32_t a)
{
	return a + ((a >> 31) & Q);
}

static void NS(poly_reduce)(int32_t r[N])
{
	unsigned int i;
	for (i = 0; i < N; i++)
		r[i] = NS(reduce32)(r[i]);
}

/* poly_freeze maps every coefficient to [0, q). */
static void NS(poly_freeze)(int32_t r[N])
{
	unsigned int i;
	for (i = 0; i < N; i++)
		r[i] = NS(caddq)(NS(reduce32)(r[i]));
}

static void NS(poly_zero)(int32_t r[N])
{
	unsigned int i;
	for (i = 0; i < N; i++)
		r[i] = 0;
}

/* ntt is FIPS 204 Algorithm 41; input |r| < q, output |r| < 9q. */
static void NS(ntt)(int32_t r[N])
{
	unsigned int len, start, j, k = 0;
	int32_t t, zeta;

	for (len = 128; len > 0; len >>= 1) {
		for (start = 0; start < N; start = j + len) {
			zeta = NS(zetas)[++k];
			for (j = start; j < start + len; j++) {
				t = NS(mont)((int64_t)zeta * r[j + len]);
				r[j + len] = r[j] - t;
				r[j] = r[j] + t;
			}
		}
	}
}

/* invntt is FIPS 204 Algorithm 42 followed by a multiplication by 2^32,
 * which cancels the 2^-32 that pointwise multiplication leaves. Input
 * |r| < q, output |r| < q. */
static void NS(invntt)(int32_t r[N])
{
	const int32_t f = 41978; /* 2^64 / 256 mod q */
	unsigned int len, start, j, k = N;
	int32_t t, zeta;

	for (len = 1; len < N; len <<= 1) {
		for (start = 0; start < N; start = j + len) {
			zeta = -NS(zetas)[--k];
			for (j = start; j < start + len; j++) {
				t = r[j];
				r[j] = t + r[j + len];
				r[j + len] = NS(mont)((int64_t)zeta * (t - r[j + len]));
			}
		}
	}
	for (j = 0; j < N; j++)
		r[j] = NS(mont)((int64_t)f * r[j]);
}

/* pointwise sets r = a o b * 2^-32 (r may alias a or b). */
static void NS(pointwise)(int32_t r[N], const int32_t a[N], const int32_t b[N])
{
	unsigned int i;
	for (i = 0; i < N; i++)
		r[i] = NS(mont)((int64_t)a[i] * b[i]);
}

/* pointwise_acc adds a o b * 2^-32 to r. */
static void NS(pointwise_acc)(int32_t r[N], const int32_t a[N], const int32_t b[N])
{
	unsigned int i;
	for (i = 0; i < N; i++)
		r[i] += NS(mont)((int64_t)a[i] * b[i]);
}

/* norm_ge returns 1 if some |a[i]| >= b, else 0, looking at every
 * coefficient; coefficients must be reduced (|a| < q/2 + 2^22 suffices). */
static uint32_t NS(norm_ge)(const int32_t a[N], int32_t b)
{
	uint32_t r = 0;
	unsigned int i;
	for (i = 0; i < N; i++) {
		int32_t x = a[i];
		x -= (x >> 31) & (2 * x); /* |x| */
		r |= (uint32_t)(b - 1 - x) >> 31;
	}
	return ct_barrier_u32(r);
}

/* decompose is FIPS 204 Algorithm 36 for a in [0, q): returns r1 and sets
 * *a0 = r0 with a = r1 * 2 * GAMMA2 + r0, branch-free. */
static int32_t NS(decompose)(int32_t *a0, int32_t a)
{
	int32_t a1 = (a + 127) >> 7;
#if GAMMA2 == (Q - 1) / 32
	a1 = (a1 * 1025 + (1 << 21)) >> 22;
	a1 &= 15;
#else
	a1 = (a1 * 11275 + (1 << 23)) >> 24;
	a1 ^= ((43 - a1) >> 31) & a1;
#endif
	*a0 = a - a1 * 2 * GAMMA2;
	*a0 -= (((Q - 1) / 2 - *a0) >> 31) & Q;
	return a1;
}

/* make_hint is FIPS 204 Algorithm 39 in the form of the reference code:
 * given a0 = LowBits(w) - c*s2 + c*t0 and a1 = HighBits(w), returns 1 when
 * adding -c*t0 changes the high bits. Branch-free. */
static uint32_t NS(make_hint)(int32_t a0, int32_t a1)
{
	uint32_t gt = (uint32_t)(GAMMA2 - a0) >> 31;
	uint32_t lt = (uint32_t)(a0 + GAMMA2) >> 31;
	uint32_t x = (uint32_t)(a0 + GAMMA2), y = (uint32_t)a1;
	uint32_t eq = (1 ^ ((x | (0u - x)) >> 31)) & ((y | (0u - y)) >> 31);
	return gt | lt | eq;
}

/* use_hint is FIPS 204 Algorithm 40 (public data). */
static int32_t NS(use_hint)(int32_t a, int32_t hint)
{
	int32_t a0, a1 = NS(decompose)(&a0, a);
	if (hint == 0)
		return a1;
#if GAMMA2 == (Q - 1) / 32
	return a0 > 0 ? (a1 + 1) & 15 : (a1 - 1) & 15;
#else
	if (a0 > 0)
		return a1 == 43 ? 0 : a1 + 1;
	return a1 == 0 ? 43 : a1 - 1;
#endif
}

/* ---- encodings (FIPS 204 Algorithms 16-19) ---- */

/* pack writes off + sgn * r[i] in bits bits per coefficient, least
 * significant bit first: SimpleBitPack (Algorithm 16) with off = 0 and
 * sgn = 1; BitPack(r, a, b) (Algorithm 17) with off = b and sgn = -1. */
static void NS(pack)(uint8_t *out, const int32_t r[N], unsigned int bits, int32_t off, int32_t sgn)
{
	uint32_t acc = 0;
	unsigned int i, n = 0;
	for (i = 0; i < N; i++) {
		acc |= (uint32_t)(off + sgn * r[i]) << n;
		n += bits;
		while (n >= 8) {
			*out++ = (uint8_t)acc;
			acc >>= 8;
			n -= 8;
		}
	}
}

/* unpack inverts pack: r[i] = off + sgn * v for each bits-bit value v. */
static void NS(unpack)(int32_t r[N], const uint8_t *in, unsigned int bits, int32_t off, int32_t sgn)
{
	uint32_t acc = 0, mask = (1u << bits) - 1;
	unsigned int i, n = 0;
	for (i = 0; i < N; i++) {
		while (n < bits) {
			acc |= (uint32_t)*in++ << n;
			n += 8;
		}
		r[i] = off + sgn * (int32_t)(acc & mask);
		acc >>= bits;
		n -= bits;
	}
}

/* ---- sampling ---- */

/* sample_a is RejNTTPoly (FIPS 204 Algorithm 30) on SHAKE128(rho || j || i),
 * giving the entry A[i][j] in the NTT domain. */
static void NS(sample_a)(int32_t r[N], const uint8_t rho[32], unsigned int i, unsigned int j)
{
	keccak_ctx st;
	uint8_t buf[SHAKE128_RATE], ij[2];
	unsigned int n = 0, p;

	ij[0] = (uint8_t)j;
	ij[1] = (uint8_t)i;
	shake128_init(&st);
	keccak_absorb(&st, rho, 32);
	keccak_absorb(&st, ij, 2);
	shake_finalize(&st);
	while (n < N) {
		keccak_squeeze(&st, buf, sizeof buf);
		for (p = 0; p + 3 <= sizeof buf && n < N; p += 3) {
			uint32_t t = (uint32_t)buf[p] | (uint32_t)buf[p + 1] << 8 |
				     (uint32_t)(buf[p + 2] & 0x7F) << 16;
			if (t < Q)
				r[n++] = (int32_t)t;
		}
	}
}

/* eta_coeff writes the candidate coefficient for the half-byte t at r[n]
 * and returns 1 if it is accepted (CoeffFromHalfByte, FIPS 204 Algorithm
 * 15). The store is unconditional, so only the count depends on t. */
static unsigned int NS(eta_coeff)(int32_t *r, uint32_t t)
{
#if ETA == 2
	uint32_t ok = (t - 15) >> 31;
	*r = 2 - (int32_t)(t - ((205 * t) >> 10) * 5);
#else
	uint32_t ok = (t - 9) >> 31;
	*r = 4 - (int32_t)t;
#endif
	return ct_barrier_u32(ok);
}

/* sample_eta is RejBoundedPoly (FIPS 204 Algorithm 31) on
 * SHAKE256(rho' || nonce), nonce as two bytes little-endian. */
static void NS(sample_eta)(int32_t r[N], const uint8_t rhop[64], unsigned int nonce)
{
	keccak_ctx st;
	uint8_t buf[SHAKE256_RATE], nb[2];
	unsigned int n = 0, p;

	nb[0] = (uint8_t)nonce;
	nb[1] = (uint8_t)(nonce >> 8);
	shake256_init(&st);
	keccak_absorb(&st, rhop, 64);
	keccak_absorb(&st, nb, 2);
	shake_finalize(&st);
	while (n < N) {
		keccak_squeeze(&st, buf, sizeof buf);
		for (p = 0; p < sizeof buf && n < N; p++) {
			n += NS(eta_coeff)(&r[n], buf[p] & 15u);
			if (n < N)
				n += NS(eta_coeff)(&r[n], (uint32_t)buf[p] >> 4);
		}
	}
}

/* sample_mask is one polynomial of ExpandMask (FIPS 204 Algorithm 34):
 * BitUnpack(SHAKE256(rho'' || nonce), GAMMA1 - 1, GAMMA1). */
static void NS(sample_mask)(int32_t r[N], const uint8_t rhopp[64], unsigned int nonce)
{
	keccak_ctx st;
	uint8_t buf[POLYZ], nb[2];

	nb[0] = (uint8_t)nonce;
	nb[1] = (uint8_t)(nonce >> 8);
	shake256_init(&st);
	keccak_absorb(&st, rhopp, 64);
	keccak_absorb(&st, nb, 2);
	shake_finalize(&st);
	keccak_squeeze(&st, buf, sizeof buf);
	NS(unpack)(r, buf, GAMMA1_BITS + 1, GAMMA1, -1);
}

/* sample_in_ball is SampleInBall (FIPS 204 Algorithm 29) on the whole c~. */
static void NS(sample_in_ball)(int32_t c[N], const uint8_t ctilde[CTILDEBYTES])
{
	keccak_ctx st;
	uint8_t buf[SHAKE256_RATE];
	uint64_t signs = 0;
	unsigned int i, j, p;

	shake256_init(&st);
	keccak_absorb(&st, ctilde, CTILDEBYTES);
	shake_finalize(&st);
	keccak_squeeze(&st, buf, sizeof buf);
	for (i = 0; i < 8; i++)
		signs |= (uint64_t)buf[i] << (8 * i);
	p = 8;
	NS(poly_zero)(c);
	for (i = N - TAU; i < N; i++) {
		do {
			if (p == sizeof buf) {
				keccak_squeeze(&st, buf, sizeof buf);
				p = 0;
			}
			j = buf[p++];
		} while (j > i);
		c[i] = c[j];
		c[j] = 1 - 2 * (int32_t)(signs & 1);
		signs >>= 1;
	}
}

/* mu_of computes mu = H(tr || M', 64). M' is m itself when dom < 0 (the
 * internal interface), else dom || |ctx| || ctx || oid || m (Algorithms 2
 * and 4; oid is empty for pure ML-DSA). */
static void NS(mu_of)(uint8_t mu[64], const uint8_t tr[64], int dom, const uint8_t *ctx,
		      size_t ctxlen, const uint8_t *oid, size_t oidlen, const uint8_t *m, size_t mlen)
{
	keccak_ctx st;
	shake256_init(&st);
	keccak_absorb(&st, tr, 64);
	if (dom >= 0) {
		uint8_t pre[2];
		pre[0] = (uint8_t)dom;
		pre[1] = (uint8_t)ctxlen;
		keccak_absorb(&st, pre, 2);
		keccak_absorb(&st, ctx, ctxlen);
		keccak_absorb(&st, oid, oidlen);
	}
	keccak_absorb(&st, m, mlen);
	shake_finalize(&st);
	keccak_squeeze(&st, mu, 64);
}

/* ---- key generation (Algorithm 6) ---- */

int NS(keygen_internal)(uint8_t *pk, uint8_t *sk, const uint8_t xi[32])
{
	int32_t s1[L][N], t[N], a[N];
	uint8_t seed[128], in[34];
	const uint8_t *rho = seed, *rhop = seed + 32, *key = seed + 96;
	unsigned int i, j, n;

	memcpy(in, xi, 32);
	in[32] = K;
	in[33] = L;
	shake256(seed, sizeof seed, in, sizeof in);
	memcpy(pk, rho, 32);
	memcpy(sk, rho, 32);
	memcpy(sk + 32, key, 32);
	for (j = 0; j < L; j++) {
		NS(sample_eta)(s1[j], rhop, j);
		NS(pack)(sk + SK_S1 + POLYETA * j, s1[j], ETA_BITS, ETA, -1);
		NS(ntt)(s1[j]);
	}
	for (i = 0; i < K; i++) {
		NS(poly_zero)(t);
		for (j = 0; j < L; j++) {
			NS(sample_a)(a, rho, i, j);
			NS(pointwise_acc)(t, a, s1[j]);
		}
		NS(poly_reduce)(t);
		NS(invntt)(t);
		NS(sample_eta)(a, rhop, L + i);
		NS(pack)(sk + SK_S2 + POLYETA * i, a, ETA_BITS, ETA, -1);
		for (n = 0; n < N; n++)
			t[n] += a[n];
		NS(poly_freeze)(t);
		/* Power2Round (Algorithm 35): t = t1 * 2^d + t0. */
		for (n = 0; n < N; n++) {
			int32_t t1 = (t[n] + (1 << (D - 1)) - 1) >> D;
			a[n] = t[n] - (t1 << D);
			t[n] = t1;
		}
		NS(pack)(pk + 32 + POLYT1 * i, t, 10, 0, 1);
		NS(pack)(sk + SK_T0 + POLYT0 * i, a, D, 1 << (D - 1), -1);
	}
	shake256(sk + SK_TR, 64, pk, PKBYTES);
	return 0;
}

/* ---- signing (Algorithm 7) ---- */

/* secret_times_c sets r = c * s for the secret polynomial encoded at in
 * (bits-bit BitPack with offset off), with chat = NTT(c). */
static void NS(secret_times_c)(int32_t r[N], const uint8_t *in, unsigned int bits, int32_t off,
			       const int32_t chat[N])
{
	NS(unpack)(r, in, bits, off, -1);
	NS(ntt)(r);
	NS(pointwise)(r, chat, r);
	NS(invntt)(r);
	NS(poly_reduce)(r);
}

int NS(sign_mu)(uint8_t *sig, const uint8_t *sk, const uint8_t mu[64], const uint8_t *rnd,
		unsigned int *rounds)
{
	static const uint8_t zero[MLDSA_RNDBYTES];
	int32_t y[L][N], w[K][N], c[N], t[N];
	uint8_t rhopp[64], w1buf[POLYW1];
	const uint8_t *rho = sk;
	keccak_ctx st;
	unsigned int i, j, n, kappa = 0, round = 0;
	uint32_t bad, hints;

	if (rnd == NULL)
		rnd = zero;
	shake256_init(&st);
	keccak_absorb(&st, sk + 32, 32);
	keccak_absorb(&st, rnd, MLDSA_RNDBYTES);
	keccak_absorb(&st, mu, 64);
	shake_finalize(&st);
	keccak_squeeze(&st, rhopp, sizeof rhopp);

	for (;;) {
		round++;
		for (j = 0; j < L; j++) {
			NS(sample_mask)(y[j], rhopp, (kappa + j) & 0xFFFF);
			NS(ntt)(y[j]);
		}
		kappa += L;

		/* w = A y; c~ = H(mu || w1Encode(HighBits(w))). */
		shake256_init(&st);
		keccak_absorb(&st, mu, 64);
		for (i = 0; i < K; i++) {
			NS(poly_zero)(w[i]);
			for (j = 0; j < L; j++) {
				NS(sample_a)(t, rho, i, j);
				NS(pointwise_acc)(w[i], t, y[j]);
			}
			NS(poly_reduce)(w[i]);
			NS(invntt)(w[i]);
			NS(poly_freeze)(w[i]);
			for (n = 0; n < N; n++) {
				int32_t a0;
				t[n] = NS(decompose)(&a0, w[i][n]);
			}
			NS(pack)(w1buf, t, W1_BITS, 0, 1);
			keccak_absorb(&st, w1buf, sizeof w1buf);
		}
		shake_finalize(&st);
		keccak_squeeze(&st, sig, CTILDEBYTES);
		NS(sample_in_ball)(c, sig);
		NS(ntt)(c);

		/* z = y + c s1, computed as InvNTT(yhat * 2^-32 + chat o s1hat). */
		bad = 0;
		for (j = 0; j < L; j++) {
			NS(unpack)(t, sk + SK_S1 + POLYETA * j, ETA_BITS, ETA, -1);
			NS(ntt)(t);
			NS(pointwise)(t, c, t);
			for (n = 0; n < N; n++)
				t[n] = NS(reduce32)(t[n] + NS(mont)(y[j][n]));
			NS(invntt)(t);
			NS(poly_reduce)(t);
			bad |= NS(norm_ge)(t, GAMMA1 - BETA);
			NS(pack)(sig + SIG_Z + POLYZ * j, t, GAMMA1_BITS + 1, GAMMA1, -1);
		}
		if (bad)
			continue;

		/* r0 = LowBits(w - c s2); then c t0 and the hints. y[0] is free now
		 * and holds c t0; w[i] is replaced by its hint bits. */
		hints = 0;
		for (i = 0; i < K && !bad; i++) {
			NS(secret_times_c)(t, sk + SK_S2 + POLYETA * i, ETA_BITS, ETA, c);
			for (n = 0; n < N; n++) {
				int32_t a0;
				w[i][n] = NS(decompose)(&a0, w[i][n]);
				t[n] = NS(reduce32)(a0 - t[n]);
			}
			bad |= NS(norm_ge)(t, GAMMA2 - BETA);
			NS(secret_times_c)(y[0], sk + SK_T0 + POLYT0 * i, D, 1 << (D - 1), c);
			bad |= NS(norm_ge)(y[0], GAMMA2);
			for (n = 0; n < N; n++) {
				uint32_t h = NS(make_hint)(t[n] + y[0][n], w[i][n]);
				w[i][n] = (int32_t)h;
				hints += h;
			}
		}
		if (bad || hints > OMEGA)
			continue;

		/* HintBitPack (Algorithm 20). */
		memset(sig + SIG_H, 0, OMEGA + K);
		hints = 0;
		for (i = 0; i < K; i++) {
			for (n = 0; n < N; n++)
				if (w[i][n])
					sig[SIG_H + hints++] = (uint8_t)n;
			sig[SIG_H + OMEGA + i] = (uint8_t)hints;
		}
		if (rounds != NULL)
			*rounds = round;
		return 0;
	}
}

int NS(sign_internal)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,
		      const uint8_t *rnd, unsigned int *rounds)
{
	uint8_t mu[64];
	NS(mu_of)(mu, sk + SK_TR, -1, NULL, 0, NULL, 0, m, mlen);
	return NS(sign_mu)(sig, sk, mu, rnd, rounds);
}

int NS(sign)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
	     size_t ctxlen, const uint8_t *rnd, unsigned int *rounds)
{
	uint8_t mu[64];
	if (ctxlen > 255)
		return -1;
	NS(mu_of)(mu, sk + SK_TR, 0, ctx, ctxlen, NULL, 0, m, mlen);
	return NS(sign_mu)(sig, sk, mu, rnd, rounds);
}

int NS(sign_prehash)(uint8_t *sig, const uint8_t *sk, const uint8_t *ph, size_t phlen,
		     const uint8_t *oid, size_t oidlen, const uint8_t *ctx, size_t ctxlen,
		     const uint8_t *rnd, unsigned int *rounds)
{
	uint8_t mu[64];
	if (ctxlen > 255)
		return -1;
	NS(mu_of)(mu, sk + SK_TR, 1, ctx, ctxlen, oid, oidlen, ph, phlen);
	return NS(sign_mu)(sig, sk, mu, rnd, rounds);
}

/* ---- verification (Algorithm 8) ---- */

int NS(verify_mu)(const uint8_t *sig, const uint8_t *pk, const uint8_t mu[64])
{
	int32_t z[L][N], c[N], t[N], w[N];
	uint8_t w1buf[POLYW1], ctilde[CTILDEBYTES];
	const uint8_t *hint = sig + SIG_H, *rho = pk;
	keccak_ctx st;
	unsigned int i, j, n, idx = 0;

	/* HintBitUnpack (Algorithm 21): indices strictly increasing per row,
	 * counts non-decreasing and at most OMEGA, unused bytes zero. */
	for (i = 0; i < K; i++) {
		unsigned int end = hint[OMEGA + i];
		if (end < idx || end > OMEGA)
			return -1;
		for (j = idx + 1; j < end; j++)
			if (hint[j] <= hint[j - 1])
				return -1;
		idx = end;
	}
	for (j = idx; j < OMEGA; j++)
		if (hint[j] != 0)
			return -1;

	for (j = 0; j < L; j++) {
		NS(unpack)(z[j], sig + SIG_Z + POLYZ * j, GAMMA1_BITS + 1, GAMMA1, -1);
		if (NS(norm_ge)(z[j], GAMMA1 - BETA))
			return -1;
		NS(ntt)(z[j]);
	}
	NS(sample_in_ball)(c, sig);
	NS(ntt)(c);

	shake256_init(&st);
	keccak_absorb(&st, mu, 64);
	idx = 0;
	for (i = 0; i < K; i++) {
		/* w'approx = A z - c t1 2^d, row i. */
		NS(poly_zero)(w);
		for (j = 0; j < L; j++) {
			NS(sample_a)(t, rho, i, j);
			NS(pointwise_acc)(w, t, z[j]);
		}
		NS(unpack)(t, pk + 32 + POLYT1 * i, 10, 0, 1);
		for (n = 0; n < N; n++)
			t[n] <<= D;
		NS(ntt)(t);
		NS(pointwise)(t, c, t);
		for (n = 0; n < N; n++)
			w[n] -= t[n];
		NS(poly_reduce)(w);
		NS(invntt)(w);
		NS(poly_freeze)(w);
		NS(poly_zero)(t);
		for (; idx < hint[OMEGA + i]; idx++)
			t[hint[idx]] = 1;
		for (n = 0; n < N; n++)
			w[n] = NS(use_hint)(w[n], t[n]);
		NS(pack)(w1buf, w, W1_BITS, 0, 1);
		keccak_absorb(&st, w1buf, sizeof w1buf);
	}
	shake_finalize(&st);
	keccak_squeeze(&st, ctilde, sizeof ctilde);
	return ct_neq(ctilde, sig, CTILDEBYTES) ? -1 : 0;
}

int NS(verify_internal)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen)
{
	uint8_t tr[64], mu[64];
	shake256(tr, sizeof tr, pk, PKBYTES);
	NS(mu_of)(mu, tr, -1, NULL, 0, NULL, 0, m, mlen);
	return NS(verify_mu)(sig, pk, mu);
}

int NS(verify)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen,
	       const uint8_t *ctx, size_t ctxlen)
{
	uint8_t tr[64], mu[64];
	if (ctxlen > 255)
		return -1;
	shake256(tr, sizeof tr, pk, PKBYTES);
	NS(mu_of)(mu, tr, 0, ctx, ctxlen, NULL, 0, m, mlen);
	return NS(verify_mu)(sig, pk, mu);
}

int NS(verify_prehash)(const uint8_t *sig, const uint8_t *pk, const uint8_t *ph, size_t phlen,
		       const uint8_t *oid, size_t oidlen, const uint8_t *ctx, size_t ctxlen)
{
	uint8_t tr[64], mu[64];
	if (ctxlen > 255)
		return -1;
	shake256(tr, sizeof tr, pk, PKBYTES);
	NS(mu_of)(mu, tr, 1, ctx, ctxlen, oid, oidlen, ph, phlen);
	return NS(verify_mu)(sig, pk, mu);
}
