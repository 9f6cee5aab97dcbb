/* NIST P-256 (secp256r1) for the firmware's TLS 1.3 client and server: ECDH key shares (RFC 8446
 * §4.2.8.2, uncompressed 65-byte points), ECDSA-P256/SHA-256 signing (FIPS 186-5 §6.4.1, RFC 6979
 * or hedged nonces) and verification (FIPS 186-5 §6.4.2, DER-encoded signatures). Written from SEC 1 v2, FIPS 186-5 and
 * SP 800-186 for a 32-bit core: eight 32-bit limbs in Montgomery form, complete projective
 * formulas (Renes, Costello and Batina 2016, a = -3), a fixed 4-bit window with table scans.
 * No allocation; every function is reentrant.
 *
 * Constant time (no branch or memory index depends on the value): key generation and the
 * shared secret in the private scalar and the peer's point once it is validated; signing in the
 * private scalar, the nonce and the hedge. Verification
 * uses the same fixed-window code, so its instruction count does not depend on the key, the
 * signature's values or the digest either; what varies is only the DER parse (with the
 * integers' encoded lengths) and whether an early check refuses the input. */
#ifndef PQ_P256_H
#define PQ_P256_H

#include <stddef.h>
#include <stdint.h>

#define P256_POINT_LEN 65 /* 0x04 || X || Y, each 32 bytes big-endian */
#define P256_SCALAR_LEN 32
#define P256_SIG_DER_MAX 72 /* SEQUENCE of two INTEGERs of at most 33 bytes */

/* Results: 0 is success, every failure a negative code naming what was refused. */
enum {
	P256_OK = 0,
	P256_ERR_ENCODING = -1,   /* a point not of 65 bytes starting 0x04 (compressed, infinity, other) */
	P256_ERR_COORD = -2,      /* a coordinate >= p */
	P256_ERR_NOT_ON_CURVE = -3, /* y^2 != x^3 - 3x + b */
	P256_ERR_SCALAR = -4,     /* a private scalar of 0 or >= n */
	P256_ERR_DER = -5,        /* a signature that is not strict DER */
	P256_ERR_RANGE = -6,      /* r or s outside [1, n-1] */
	P256_ERR_INFINITY = -7,   /* a result that is the point at infinity */
	P256_ERR_MISMATCH = -8,   /* the signature does not verify */
};

/* p256_keygen computes pub = d*G for the private scalar d (32 bytes big-endian). d is used as
 * given when 1 <= d <= n-1 and refused (P256_ERR_SCALAR) otherwise: the caller draws 32 new
 * bytes (FIPS 186-5 A.2.2, rejection sampling; SEC 1 v2 §3.2.1 asks for d in [1, n-1]). */
int p256_keygen(uint8_t pub[P256_POINT_LEN], const uint8_t priv[P256_SCALAR_LEN]);

/* p256_ecdh computes the shared secret, the x-coordinate of d*Q (SEC 1 v2 §3.3.1; RFC 8446
 * §7.4.2), after validating the peer's point Q (SEC 1 v2 §3.2.2.1 for a prime-order curve): 65
 * bytes, 0x04, both coordinates < p, on the curve. A refused point leaves shared zeroed. */
int p256_ecdh(uint8_t shared[32], const uint8_t priv[P256_SCALAR_LEN], const uint8_t *peer,
	size_t peer_len);

/* p256_sign_digest signs a SHA-256 digest with the private scalar priv (32 bytes big-endian)
 * (ECDSA, FIPS 186-5 §6.4.1) and writes the strict-DER ECDSA-Sig-Value to sig (at most
 * P256_SIG_DER_MAX bytes; *sig_len set, 0 on failure). The nonce is RFC 6979's (§3.2, HMAC-SHA-256
 * DRBG seeded with priv and the digest mod n) when rnd is NULL: the signature is deterministic.
 * With rnd (32 bytes) it is hedged: rnd is appended to that seed material as §3.6's additional
 * data k', so a repeated rnd only repeats the signature, and a bad rnd is no worse than none. A
 * candidate nonce outside [1, n-1] or giving r = 0 or s = 0 is replaced by the next one of the
 * DRBG (§3.2 h.3). s is not normalised to the lower half. Constant time in priv, the nonce and rnd
 * (test/p256ct.c under valgrind memcheck; equal counts on the boards); only the DER encoding of
 * the public r and s and the nonce's refusal (about 2^-32) branch. Returns P256_OK or
 * P256_ERR_SCALAR for priv outside [1, n-1]. */
int p256_sign_digest(uint8_t *sig, size_t *sig_len, const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t digest[32], const uint8_t *rnd);

/* p256_point_check validates an encoded public point as p256_ecdh does (0 or the refusal). */
int p256_point_check(const uint8_t *pt, size_t len);

/* p256_sig_der parses a strict-DER ECDSA-Sig-Value (SEQUENCE { r INTEGER, s INTEGER }) into r
 * and s, 32 bytes big-endian each: short-form lengths only (a signature is under 128 bytes, so
 * a long form is never minimal), no negative integer, no leading zero byte unless the next
 * byte's top bit is set, values below 2^256, nothing after the sequence. It does not check the
 * range [1, n-1]. Returns 0 or P256_ERR_DER. */
int p256_sig_der(uint8_t r[32], uint8_t s[32], const uint8_t *sig, size_t len);

/* p256_verify_digest verifies sig (strict DER) over a SHA-256 digest with the public key pub
 * (65 bytes, validated as for ECDH). Returns 0 when the signature is valid, else the reason. */
int p256_verify_digest(const uint8_t *pub, size_t pub_len, const uint8_t digest[32],
	const uint8_t *sig, size_t sig_len);

/* p256_verify hashes msg with SHA-256 (crypto/sha2) and calls p256_verify_digest. */
int p256_verify(const uint8_t *pub, size_t pub_len, const uint8_t *msg, size_t msg_len,
	const uint8_t *sig, size_t sig_len);

#endif
