/* Curve25519 for the firmware: X25519 key exchange (RFC 7748) and Ed25519
 * signature verification (RFC 8032, pure Ed25519). Portable C11 on 32-bit
 * limbs (fe25519.h), no allocation, freestanding.
 *
 * X25519 works on secrets and runs in constant time: no branch or memory
 * index depends on the scalar or the point. Ed25519 verification handles
 * public data only and is not constant time. */
#ifndef PQ_C25519_H
#define PQ_C25519_H

#include <stddef.h>
#include <stdint.h>

#define X25519_BYTES 32
#define ED25519_PUBLICKEYBYTES 32
#define ED25519_SIGBYTES 64

/* x25519 computes X25519(scalar, point) of RFC 7748 section 5: the scalar is
 * clamped, the top bit of the u-coordinate is masked and a non-canonical u
 * (p to 2^255 - 1) is taken mod p. It returns 0, or -1 when out is all zero
 * (a low-order point): RFC 7748 section 6.1 and RFC 8446 section 7.4.2 require
 * the caller to refuse that shared secret. out is written in both cases. */
int x25519(uint8_t out[X25519_BYTES], const uint8_t scalar[X25519_BYTES], const uint8_t point[X25519_BYTES]);

/* x25519_base computes the public key X25519(scalar, 9). */
void x25519_base(uint8_t out[X25519_BYTES], const uint8_t scalar[X25519_BYTES]);

/* ed25519_verify checks an Ed25519 signature (RFC 8032 section 5.1.7, no
 * context, no prehash) of msg under the public key pk. It returns 0 when the
 * signature is valid and -1 otherwise: siglen other than 64, a public key that
 * does not decode (y >= p, x = 0 with the sign bit set, no square root), S >= L,
 * or [S]B - [k]A whose encoding is not the signature's R byte for byte (so a
 * non-canonical R is refused). The check is cofactorless. */
int ed25519_verify(const uint8_t *sig, size_t siglen, const uint8_t pk[ED25519_PUBLICKEYBYTES],
		   const uint8_t *msg, size_t msglen);

/* ed25519_decode_point decodes a point as RFC 8032 section 5.1.3 does and writes
 * its canonical re-encoding to out; it returns 0, or -1 when s does not decode.
 * For tests: a point that decodes re-encodes to s. */
int ed25519_decode_point(uint8_t out[32], const uint8_t s[32]);

#endif
