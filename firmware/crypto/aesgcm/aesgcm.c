/* AES-128-GCM, bitsliced and constant time; see aesgcm.h. */
#include "aesgcm.h"

#include "../ct.h"
#include "../pqmem.h"

/* wipe clears secrets through a volatile pointer, so the stores are not dropped. */
static void wipe(void *p, size_t n)
{
	volatile uint8_t *v = (volatile uint8_t *)p;
	size_t i;
	for (i = 0; i < n; i++)
		v[i] = 0;
}

/*
 * The bitsliced state. Two blocks travel together in eight 32-bit words q[0..7]: q[i] holds bit
 * i of all 32 bytes. Byte r (the row) of column c of block b sits at bit 8r + 4b + c, so each
 * byte lane of a word is one row of both blocks, its low nibble block 0's four columns and its
 * high nibble block 1's. With that placement
 *   - SubBytes is one Boolean circuit evaluated on the eight words (32 S-boxes at once);
 *   - ShiftRows rotates the nibbles of lane r right by r (masks and shifts);
 *   - MixColumns needs row r + 1 of the same column: the word rotated right by 8;
 *   - AddRoundKey XORs eight words of the round key placed the same way (a copy per block).
 * No memory address and no branch depends on the key, the data or H.
 */

/* sbox8_nc is the AES S-box on the bitsliced words except the affine constant: the circuit of
 * Boyar and Peralta, "A depth-16 circuit for the AES S-box" (IFIP SEC 2012; IACR ePrint
 * 2011/332), 128 gates (34 AND), with u0 the most significant bit of a byte. The paper's four
 * output XNORs (bits 6, 5, 1 and 0, the constant 0x63) are left out here: the constant passes
 * unchanged through ShiftRows and MixColumns (every byte of a column is 0x63 and
 * 2c ^ 3c ^ c ^ c = c), so the expanded key carries it into the next round key instead
 * (expand_sliced), and sub_word adds it itself. */
static void sbox8_nc(uint32_t q[8])
{
	uint32_t u0 = q[7], u1 = q[6], u2 = q[5], u3 = q[4], u4 = q[3], u5 = q[2], u6 = q[1], u7 = q[0];
	uint32_t t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15, t16, t17, t18, t19, t20, t21, t22,
		t23, t24, t25, t26, t27;
	uint32_t m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15, m16, m17, m18, m19, m20, m21, m22,
		m23, m24, m25, m26, m27, m28, m29, m30, m31, m32, m33, m34, m35, m36, m37, m38, m39, m40, m41, m42, m43,
		m44, m45, m46, m47, m48, m49, m50, m51, m52, m53, m54, m55, m56, m57, m58, m59, m60, m61, m62, m63;
	uint32_t l0, l1, l2, l3, l4, l5, l6, l7, l8, l9, l10, l11, l12, l13, l14, l15, l16, l17, l18, l19, l20, l21,
		l22, l23, l24, l25, l26, l27, l28, l29;

	t1 = u0 ^ u3; t2 = u0 ^ u5; t3 = u0 ^ u6; t4 = u3 ^ u5; t5 = u4 ^ u6; t6 = t1 ^ t5; t7 = u1 ^ u2;
	t8 = u7 ^ t6; t9 = u7 ^ t7; t10 = t6 ^ t7; t11 = u1 ^ u5; t12 = u2 ^ u5; t13 = t3 ^ t4; t14 = t6 ^ t11;
	t15 = t5 ^ t11; t16 = t5 ^ t12; t17 = t9 ^ t16; t18 = u3 ^ u7; t19 = t7 ^ t18; t20 = t1 ^ t19;
	t21 = u6 ^ u7; t22 = t7 ^ t21; t23 = t2 ^ t22; t24 = t2 ^ t10; t25 = t20 ^ t17; t26 = t3 ^ t16;
	t27 = t1 ^ t12;

	m1 = t13 & t6; m2 = t23 & t8; m3 = t14 ^ m1; m4 = t19 & u7; m5 = m4 ^ m1; m6 = t3 & t16; m7 = t22 & t9;
	m8 = t26 ^ m6; m9 = t20 & t17; m10 = m9 ^ m6; m11 = t1 & t15; m12 = t4 & t27; m13 = m12 ^ m11;
	m14 = t2 & t10; m15 = m14 ^ m11; m16 = m3 ^ m2; m17 = m5 ^ t24; m18 = m8 ^ m7; m19 = m10 ^ m15;
	m20 = m16 ^ m13; m21 = m17 ^ m15; m22 = m18 ^ m13; m23 = m19 ^ t25; m24 = m22 ^ m23; m25 = m22 & m20;
	m26 = m21 ^ m25; m27 = m20 ^ m21; m28 = m23 ^ m25; m29 = m28 & m27; m30 = m26 & m24; m31 = m20 & m23;
	m32 = m27 & m31; m33 = m27 ^ m25; m34 = m21 & m22; m35 = m24 & m34; m36 = m24 ^ m25; m37 = m21 ^ m29;
	m38 = m32 ^ m33; m39 = m23 ^ m30; m40 = m35 ^ m36; m41 = m38 ^ m40; m42 = m37 ^ m39; m43 = m37 ^ m38;
	m44 = m39 ^ m40; m45 = m42 ^ m41; m46 = m44 & t6; m47 = m40 & t8; m48 = m39 & u7; m49 = m43 & t16;
	m50 = m38 & t9; m51 = m37 & t17; m52 = m42 & t15; m53 = m45 & t27; m54 = m41 & t10; m55 = m44 & t13;
	m56 = m40 & t23; m57 = m39 & t19; m58 = m43 & t3; m59 = m38 & t22; m60 = m37 & t20; m61 = m42 & t1;
	m62 = m45 & t4; m63 = m41 & t2;

	l0 = m61 ^ m62; l1 = m50 ^ m56; l2 = m46 ^ m48; l3 = m47 ^ m55; l4 = m54 ^ m58; l5 = m49 ^ m61;
	l6 = m62 ^ l5; l7 = m46 ^ l3; l8 = m51 ^ m59; l9 = m52 ^ m53; l10 = m53 ^ l4; l11 = m60 ^ l2;
	l12 = m48 ^ m51; l13 = m50 ^ l0; l14 = m52 ^ m61; l15 = m55 ^ l1; l16 = m56 ^ l0; l17 = m57 ^ l1;
	l18 = m58 ^ l8; l19 = m63 ^ l4; l20 = l0 ^ l1; l21 = l1 ^ l7; l22 = l3 ^ l12; l23 = l18 ^ l2;
	l24 = l15 ^ l9; l25 = l6 ^ l10; l26 = l7 ^ l9; l27 = l8 ^ l10; l28 = l11 ^ l14; l29 = l11 ^ l17;

	q[7] = l6 ^ l24;
	q[6] = l16 ^ l26;
	q[5] = l19 ^ l28;
	q[4] = l6 ^ l21;
	q[3] = l20 ^ l22;
	q[2] = l25 ^ l29;
	q[1] = l13 ^ l27;
	q[0] = l6 ^ l23;
}

/* swapmove exchanges the bits of a selected by mask << n with the bits of b selected by mask. */
#define SWAPMOVE(a, b, mask, n)                                                                                \
	do {                                                                                                   \
		uint32_t t_ = (((a) >> (n)) ^ (b)) & (mask);                                                   \
		(b) ^= t_;                                                                                     \
		(a) ^= t_ << (n);                                                                              \
	} while (0)

/* ortho moves between eight little-endian words (words 0-3 block 0's columns, 4-7 block 1's)
 * and the bitsliced form: in each byte lane it transposes the 8x8 bit matrix (word index, bit
 * index), so word k bit 8r + i becomes word i bit 8r + k. A transpose is its own inverse. */
static void ortho(uint32_t q[8])
{
	SWAPMOVE(q[0], q[1], 0x55555555u, 1);
	SWAPMOVE(q[2], q[3], 0x55555555u, 1);
	SWAPMOVE(q[4], q[5], 0x55555555u, 1);
	SWAPMOVE(q[6], q[7], 0x55555555u, 1);
	SWAPMOVE(q[0], q[2], 0x33333333u, 2);
	SWAPMOVE(q[1], q[3], 0x33333333u, 2);
	SWAPMOVE(q[4], q[6], 0x33333333u, 2);
	SWAPMOVE(q[5], q[7], 0x33333333u, 2);
	SWAPMOVE(q[0], q[4], 0x0f0f0f0fu, 4);
	SWAPMOVE(q[1], q[5], 0x0f0f0f0fu, 4);
	SWAPMOVE(q[2], q[6], 0x0f0f0f0fu, 4);
	SWAPMOVE(q[3], q[7], 0x0f0f0f0fu, 4);
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

static uint32_t load32be(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store32be(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)(w >> 24);
	p[1] = (uint8_t)(w >> 16);
	p[2] = (uint8_t)(w >> 8);
	p[3] = (uint8_t)w;
}

static uint32_t ror32(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* sub_word is SubWord of the key schedule: each of the four bytes of w through the S-box, by the
 * same circuit (byte m of w at bit m of the eight words). */
static uint32_t sub_word(uint32_t w)
{
	uint32_t q[8], r = 0;
	int i, m;
	for (i = 0; i < 8; i++) {
		q[i] = 0;
		for (m = 0; m < 4; m++)
			q[i] |= ((w >> (8 * m + i)) & 1u) << m;
	}
	sbox8_nc(q);
	for (i = 0; i < 8; i++)
		for (m = 0; m < 4; m++)
			r |= ((q[i] >> m) & 1u) << (8 * m + i);
	return r ^ 0x63636363u;
}

void aes128_expand(uint32_t rk[44], const uint8_t key[AES128_KEYBYTES])
{
	uint32_t rcon = 1;
	int i;
	for (i = 0; i < 4; i++)
		rk[i] = load32le(key + 4 * i);
	for (i = 4; i < 44; i++) {
		uint32_t t = rk[i - 1];
		if (i % 4 == 0) { /* i is public: the branch is the schedule's shape, not a secret */
			t = sub_word((t >> 8) | (t << 24)) ^ rcon; /* RotWord, SubWord, Rcon */
			rcon = (rcon << 1) ^ ((rcon >> 7) * 0x11bu);
		}
		rk[i] = rk[i - 4] ^ t;
	}
}

/* expand_sliced turns the 11 round keys into the bitsliced form, each key copied for both blocks,
 * and adds the S-box constant 0x63 (left out of sbox8_nc) to round keys 1 to 10: bits 0, 1, 5
 * and 6 of every byte, that is all of words 0, 1, 5 and 6. */
static void expand_sliced(uint32_t sk[88], const uint32_t rk[44])
{
	int r, i;
	for (r = 0; r < 11; r++) {
		uint32_t *q = sk + 8 * r;
		for (i = 0; i < 4; i++)
			q[i] = q[i + 4] = rk[4 * r + i];
		ortho(q);
		if (r > 0) {
			q[0] = ~q[0];
			q[1] = ~q[1];
			q[5] = ~q[5];
			q[6] = ~q[6];
		}
	}
}

/* shift_rows1: lane r's nibbles rotate right by r (new column c is old column c + r): lanes 2
 * and 3 by 2 (swapping the halves of each nibble), then lanes 1 and 3 by 1. */
static uint32_t shift_rows1(uint32_t x)
{
	uint32_t t = ((x >> 2) ^ x) & 0x33330000u;
	x ^= t ^ (t << 2);
	return (x & 0x00ff00ffu) | ((x >> 1) & 0x77007700u) | ((x << 3) & 0x88008800u);
}

/* shift_mix_ark is ShiftRows, MixColumns and AddRoundKey k in one pass over the words.
 * MixColumns: out_r = 2 a_r ^ 3 a_{r+1} ^ a_{r+2} ^ a_{r+3} = 2 t_r ^ a_{r+1} ^ t_{r+2} with
 * t_r = a_r ^ a_{r+1}; row r + 1 is the word rotated right by 8 and row r + 2 by 16, and
 * multiplying by x in GF(2^8) (x^8 = x^4 + x^3 + x + 1) moves word i to word i + 1 and feeds
 * word 7 into words 0, 1, 3 and 4. */
static void shift_mix_ark(uint32_t q[8], const uint32_t k[8])
{
	uint32_t s7 = shift_rows1(q[7]), t7 = s7 ^ ror32(s7, 8), tp = t7, s, a, t, x;
	/* word i from its shifted self s, a = row r + 1 of s, t = s ^ a, and xt = (2 t)'s word i */
#define SMA(i, xt)                                                                                             \
	do {                                                                                                   \
		s = (i) < 7 ? shift_rows1(q[i]) : s7;                                                          \
		a = ror32(s, 8);                                                                               \
		t = s ^ a;                                                                                     \
		x = (xt);                                                                                      \
		q[i] = x ^ a ^ ror32(t, 16) ^ k[i];                                                            \
		tp = t;                                                                                        \
	} while (0)
	SMA(0, t7);
	SMA(1, tp ^ t7);
	SMA(2, tp);
	SMA(3, tp ^ t7);
	SMA(4, tp ^ t7);
	SMA(5, tp);
	SMA(6, tp);
	SMA(7, tp);
#undef SMA
}

/* aes_core encrypts the two blocks in q (words 0-3 block 0's columns as little-endian words,
 * 4-7 block 1's) in place. */
static void aes_core(const uint32_t sk[88], uint32_t q[8])
{
	int r, i;
	ortho(q);
	for (i = 0; i < 8; i++)
		q[i] ^= sk[i];
	for (r = 1; r < 10; r++) {
		sbox8_nc(q);
		shift_mix_ark(q, sk + 8 * r);
	}
	sbox8_nc(q);
	for (i = 0; i < 8; i++)
		q[i] = shift_rows1(q[i]) ^ sk[80 + i];
	ortho(q);
}

/* encrypt2 encrypts two blocks: in0 to out0 and in1 to out1 (each may alias the other). */
static void encrypt2(const uint32_t sk[88], uint8_t out0[16], uint8_t out1[16], const uint8_t in0[16],
		     const uint8_t in1[16])
{
	uint32_t q[8];
	int i;
	for (i = 0; i < 4; i++) {
		q[i] = load32le(in0 + 4 * i);
		q[i + 4] = load32le(in1 + 4 * i);
	}
	aes_core(sk, q);
	for (i = 0; i < 4; i++) {
		store32le(out0 + 4 * i, q[i]);
		store32le(out1 + 4 * i, q[i + 4]);
	}
	wipe(q, sizeof q);
}

void aes128_encrypt_block(const uint32_t rk[44], uint8_t out[16], const uint8_t in[16])
{
	uint32_t sk[88];
	uint8_t spare[16];
	expand_sliced(sk, rk);
	encrypt2(sk, out, spare, in, in);
	wipe(sk, sizeof sk);
	wipe(spare, sizeof spare);
}

/*
 * GHASH. A block loaded big-endian as the 128-bit integer Y (Y[3] the first four bytes) holds the
 * field element with the coefficient of x^j at bit 127 - j: GCM's bits are reflected. For
 * reflected operands the carry-less product is the reflected product shifted right by one bit,
 * so shifting the 256-bit product left by one gives, in its upper half, the low 128 coefficients
 * of the product and, in its lower half, the high 128 ones, both reflected (as in Gueron and
 * Kounavis, "Intel Carry-Less Multiplication Instruction and its Usage for Computing the GCM
 * Mode", 2010). The reduction by x^128 + x^7 + x^2 + x + 1 is then shifts the other way.
 *
 * The carry-less 32 x 32 -> 64 multiply uses integer multiplication with holes: each operand is
 * split into four parts keeping every fourth bit; in the integer product of two parts at most 8
 * bit products meet on one position, so their sum never carries into the next position of the
 * same residue class mod 4, and that class's bits of the sum are the XOR. This is constant time
 * only where a 32 x 32 -> 64 multiply takes the same time for all operands (the Cortex-M4's
 * UMULL does; the Cortex-M3's finishes early for small operands): a property of the core, see
 * docs/DECISIONS.md.
 */
#define CL_M0 0x11111111u
#define CL_M1 0x22222222u
#define CL_M2 0x44444444u
#define CL_M3 0x88888888u

/* split4 keeps every fourth bit of y, in the four phases: the operand form clmul32 takes. */
static void split4(uint32_t o[4], uint32_t y)
{
	o[0] = y & CL_M0;
	o[1] = y & CL_M1;
	o[2] = y & CL_M2;
	o[3] = y & CL_M3;
}

/* clmul32: the carry-less product of x and the word split into y[0..3] by split4. */
static uint64_t clmul32(uint32_t x, const uint32_t y[4])
{
	uint64_t x0 = x & CL_M0, x1 = x & CL_M1, x2 = x & CL_M2, x3 = x & CL_M3;
	uint64_t y0 = y[0], y1 = y[1], y2 = y[2], y3 = y[3];
	uint64_t z0 = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1);
	uint64_t z1 = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2);
	uint64_t z2 = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3);
	uint64_t z3 = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0);
	return (z0 & 0x1111111111111111ull) | (z1 & 0x2222222222222222ull) | (z2 & 0x4444444444444444ull) |
	       (z3 & 0x8888888888888888ull);
}

/* clmul64: the 128-bit carry-less product of a1:a0 and b1:b0 (Karatsuba, three multiplies),
 * written to p[0..3] least significant word first; b holds b0, b1 and b0 ^ b1 split. */
static void clmul64(uint32_t p[4], uint32_t a0, uint32_t a1, const uint32_t b[12])
{
	uint64_t lo = clmul32(a0, b), hi = clmul32(a1, b + 4), mid = clmul32(a0 ^ a1, b + 8) ^ lo ^ hi;
	p[0] = (uint32_t)lo;
	p[1] = (uint32_t)(lo >> 32) ^ (uint32_t)mid;
	p[2] = (uint32_t)hi ^ (uint32_t)(mid >> 32);
	p[3] = (uint32_t)(hi >> 32);
}

/* ghash_prepare: H's nine Karatsuba operands for gf128_mul (h0, h1, h0^h1; h2, h3, h2^h3;
 * h0^h2, h1^h3 and the XOR of all four), each split by split4, from H's four words (least
 * significant first). */
static void ghash_prepare(uint32_t hp[36], const uint32_t h[4])
{
	const uint32_t l0 = h[0] ^ h[2], l1 = h[1] ^ h[3];
	const uint32_t ops[9] = {h[0], h[1], h[0] ^ h[1], h[2], h[3], h[2] ^ h[3], l0, l1, l0 ^ l1};
	int i;
	for (i = 0; i < 9; i++)
		split4(hp + 4 * i, ops[i]);
}

/* gf128_mul: y = y * H in GCM's field, y as four words, least significant first (word 3 is a
 * block's first four bytes, big-endian), H as ghash_prepare left it. */
static void gf128_mul(uint32_t y[4], const uint32_t hp[36])
{
	uint32_t lo[4], hi[4], mid[4], p[8], e[4];
	int i;
	/* Karatsuba over the 64-bit halves: three 64 x 64 products. */
	clmul64(lo, y[0], y[1], hp);
	clmul64(hi, y[2], y[3], hp + 12);
	clmul64(mid, y[0] ^ y[2], y[1] ^ y[3], hp + 24);
	for (i = 0; i < 4; i++)
		mid[i] ^= lo[i] ^ hi[i];
	p[0] = lo[0];
	p[1] = lo[1];
	p[2] = lo[2] ^ mid[0];
	p[3] = lo[3] ^ mid[1];
	p[4] = hi[0] ^ mid[2];
	p[5] = hi[1] ^ mid[3];
	p[6] = hi[2];
	p[7] = hi[3];
	/* the 255-bit product shifted left by one */
	for (i = 7; i > 0; i--)
		p[i] = (p[i] << 1) | (p[i - 1] >> 31);
	p[0] <<= 1;
	/* p[0..3] is the high half of the product, reflected: fold it in. First the part that
	 * x^7 + x^2 + x would push past x^127 (its top 7 coefficients, bits 0..6 of p[0]), then
	 * e * (1 + x + x^2 + x^7), reflected: e ^ e >> 1 ^ e >> 2 ^ e >> 7. */
	e[0] = p[0];
	e[1] = p[1];
	e[2] = p[2];
	e[3] = p[3] ^ (p[0] << 31) ^ (p[0] << 30) ^ (p[0] << 25);
	y[3] = p[7] ^ e[3] ^ (e[3] >> 1) ^ (e[3] >> 2) ^ (e[3] >> 7);
	for (i = 2; i >= 0; i--)
		y[i] = p[4 + i] ^ e[i] ^ ((e[i] >> 1) | (e[i + 1] << 31)) ^ ((e[i] >> 2) | (e[i + 1] << 30)) ^
		       ((e[i] >> 7) | (e[i + 1] << 25));
}

static void load_block(uint32_t y[4], const uint8_t *p)
{
	y[3] = load32be(p);
	y[2] = load32be(p + 4);
	y[1] = load32be(p + 8);
	y[0] = load32be(p + 12);
}

/* ghash_bytes absorbs len bytes, the last block zero-padded. */
static void ghash_bytes(uint32_t y[4], const uint32_t hp[36], const uint8_t *p, size_t len)
{
	uint8_t blk[16];
	uint32_t x[4];
	int i;
	while (len > 0) {
		const uint8_t *b = p;
		size_t n = len < 16 ? len : 16;
		if (n < 16) {
			memset(blk, 0, sizeof blk);
			memcpy(blk, p, n);
			b = blk;
		}
		load_block(x, b);
		for (i = 0; i < 4; i++)
			y[i] ^= x[i];
		gf128_mul(y, hp);
		p += n;
		len -= n;
	}
}

void aes128gcm_init(aes128gcm_ctx *c, const uint8_t key[AES128_KEYBYTES])
{
	uint32_t rk[44], h[4];
	uint8_t zero[16] = {0};
	aes128_expand(rk, key);
	expand_sliced(c->sk, rk);
	encrypt2(c->sk, zero, zero, zero, zero);
	load_block(h, zero);
	ghash_prepare(c->hp, h);
	wipe(h, sizeof h);
	wipe(rk, sizeof rk);
	wipe(zero, sizeof zero);
}

void aes128gcm_wipe(aes128gcm_ctx *c)
{
	wipe(c, sizeof *c);
}

static void set_counter(uint8_t cb[16], uint32_t ctr)
{
	store32be(cb + 12, ctr);
}

/* ctr_word: the counter block's last four bytes (the counter, big-endian) as the little-endian
 * column word aes_core takes. */
static uint32_t ctr_word(uint32_t ctr)
{
	return (ctr >> 24) | ((ctr >> 8) & 0xff00u) | ((ctr << 8) & 0xff0000u) | (ctr << 24);
}

/* ctr_xor: out = in ^ keystream from counter block 2 on (J0 = IV || 1 is the tag's), two blocks
 * per pass, XORed a word at a time; a last piece shorter than 32 bytes goes through ks. */
static void ctr_xor(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *in,
		    size_t len)
{
	uint32_t q[8], w0 = load32le(iv), w1 = load32le(iv + 4), w2 = load32le(iv + 8), ctr = 2;
	uint8_t ks[32];
	size_t i;
	while (len > 0) {
		q[0] = q[4] = w0;
		q[1] = q[5] = w1;
		q[2] = q[6] = w2;
		q[3] = ctr_word(ctr);
		q[7] = ctr_word(ctr + 1);
		ctr += 2;
		aes_core(c->sk, q);
		if (len >= 32) {
			for (i = 0; i < 8; i++)
				store32le(out + 4 * i, load32le(in + 4 * i) ^ q[i]);
			out += 32;
			in += 32;
			len -= 32;
		} else {
			for (i = 0; i < 8; i++)
				store32le(ks + 4 * i, q[i]);
			for (i = 0; i < len; i++)
				out[i] = in[i] ^ ks[i];
			len = 0;
		}
	}
	wipe(q, sizeof q);
	wipe(ks, sizeof ks);
}

/* tag = GHASH_H(A, C, lengths) ^ E(K, J0) */
static void gcm_tag(const aes128gcm_ctx *c, uint8_t tag[16], const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		    size_t aadlen, const uint8_t *ct, size_t ctlen)
{
	uint32_t y[4] = {0, 0, 0, 0};
	uint64_t abits = (uint64_t)aadlen * 8, cbits = (uint64_t)ctlen * 8;
	uint8_t j0[16], spare[16];
	int i;
	ghash_bytes(y, c->hp, aad, aadlen);
	ghash_bytes(y, c->hp, ct, ctlen);
	y[3] ^= (uint32_t)(abits >> 32);
	y[2] ^= (uint32_t)abits;
	y[1] ^= (uint32_t)(cbits >> 32);
	y[0] ^= (uint32_t)cbits;
	gf128_mul(y, c->hp);
	memcpy(j0, iv, AESGCM_IVBYTES);
	set_counter(j0, 1);
	encrypt2(c->sk, j0, spare, j0, j0);
	for (i = 0; i < 4; i++)
		store32be(tag + 4 * i, y[3 - i]);
	for (i = 0; i < 16; i++)
		tag[i] ^= j0[i];
	wipe(spare, sizeof spare);
	wipe(j0, sizeof j0);
	wipe(y, sizeof y);
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
