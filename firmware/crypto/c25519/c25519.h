/* Curve25519 for the firmware: X25519 key exchange (RFC 7748) and Ed25519
 * signing and verification (RFC 8032, pure Ed25519). Portable C11 on 32-bit
 * limbs (fe25519.h), no allocation, freestanding.
 *
 * X25519 works on secrets and runs in constant time: no branch or memory
 * index depends on the scalar or the point. Ed25519 key derivation and signing
 * run in constant time in the seed, the secret scalar, the prefix and the nonce
 * r: a fixed-base multiplication with signed 4-bit digits whose table (1B..8B)
 * is read whole for every digit, and reductions mod L by masks; what varies is
 * only the message's length (hashed). Checked under valgrind memcheck with the
 * seed marked undefined (test/ed25519ct.c, c25519_test.go) and by equal counts
 * on the emulated boards (test/c25519bench.c). Ed25519 verification handles
 * public data only and is not constant time. */
#ifndef PQ_C25519_H
#define PQ_C25519_H

#include <stddef.h>
#include <stdint.h>

#define X25519_BYTES 32
#define ED25519_PUBLICKEYBYTES 32
#define ED25519_SIGBYTES 64
#define ED25519_SEEDBYTES 32

/* ed25519_pubkey derives the public key of a 32-byte private key (the seed) as
 * RFC 8032 section 5.1.5 says: A = [s]B for s the clamped first half of
 * SHA-512(seed), encoded. */
void ed25519_pubkey(uint8_t pk[ED25519_PUBLICKEYBYTES], const uint8_t seed[ED25519_SEEDBYTES]);

/* ed25519_sign signs msg (RFC 8032 section 5.1.6, pure Ed25519: no context, no
 * prehash) with the seed; pk must be ed25519_pubkey(seed): it is hashed as
 * given, and two signatures of one message under two different pk values with
 * one seed would give away the secret scalar. sig must not overlap msg. The
 * signature is deterministic. */
void ed25519_sign(uint8_t sig[ED25519_SIGBYTES], const uint8_t seed[ED25519_SEEDBYTES],
		  const uint8_t pk[ED25519_PUBLICKEYBYTES], const uint8_t *msg, size_t msglen);

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
