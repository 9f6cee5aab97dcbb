/* Arithmetic in GF(2^255 - 19) for a 32-bit core: the field of X25519 (RFC 7748)
 * and Ed25519 (RFC 8032). Internal to crypto/c25519.
 *
 * An element is ten unsigned 32-bit limbs in radix 2^25.5: limb i holds bits
 * [ceil(25.5 i), ceil(25.5 (i+1))), 26 bits for even i and 25 for odd i, so a
 * product of two limbs is one 32x32->64 multiply (UMULL/UMLAL on the Cortex-M,
 * MUL+MULHU on RV32) and a row of products sums in 64 bits without overflow.
 *
 * Every function returns a "tight" element (each limb within its width, but
 * limb 1 may exceed 2^25 by less than 2^18; the value is below 2^256 and need
 * not be reduced) and accepts tight elements, aliasing allowed. Only
 * fe25519_tobytes gives the canonical value below p. No function branches on
 * or indexes memory by an element's value. */
#ifndef PQ_FE25519_H
#define PQ_FE25519_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t fe25519[10];

void fe25519_0(fe25519 h);
void fe25519_1(fe25519 h);
void fe25519_copy(fe25519 h, const fe25519 f);
/* fe25519_frombytes reads 32 little-endian bytes, ignoring bit 255 (RFC 7748
 * section 5: the top bit of a u-coordinate is masked); values from p to
 * 2^255 - 1 are kept as they are and reduce in arithmetic. */
void fe25519_frombytes(fe25519 h, const uint8_t s[32]);
/* fe25519_tobytes writes the canonical encoding (value reduced below p). */
void fe25519_tobytes(uint8_t s[32], const fe25519 f);
void fe25519_add(fe25519 h, const fe25519 f, const fe25519 g);
void fe25519_sub(fe25519 h, const fe25519 f, const fe25519 g);
void fe25519_neg(fe25519 h, const fe25519 f);
void fe25519_mul(fe25519 h, const fe25519 f, const fe25519 g);
void fe25519_sq(fe25519 h, const fe25519 f);
/* fe25519_mul_small multiplies by c < 2^17 (121665 for X25519's a24). */
void fe25519_mul_small(fe25519 h, const fe25519 f, uint32_t c);
/* fe25519_invert: h = f^(p-2), that is 1/f, and 0 for f = 0. */
void fe25519_invert(fe25519 h, const fe25519 f);
/* fe25519_pow22523: h = f^((p-5)/8), the core of a square root (RFC 8032 5.1.3). */
void fe25519_pow22523(fe25519 h, const fe25519 f);
/* fe25519_cswap swaps f and g when b is 1 and leaves them when it is 0, by masks. */
void fe25519_cswap(fe25519 f, fe25519 g, uint32_t b);
/* fe25519_iszero is 1 when f is 0 mod p, else 0; fe25519_isneg is the low bit of
 * the canonical value (the "sign" of RFC 8032); both in constant time. */
uint32_t fe25519_iszero(const fe25519 f);
uint32_t fe25519_isneg(const fe25519 f);

#endif
