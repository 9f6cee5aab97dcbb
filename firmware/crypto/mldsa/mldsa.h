/* ML-DSA (FIPS 204) for the three parameter sets. Each set is compiled from
 * the same source (mldsa_impl.h) with its own symbol prefix, so code size can
 * be measured per parameter set.
 *
 * All functions return 0 on success and -1 when an input is refused (a
 * context string over 255 bytes) or a signature does not verify. No
 * allocation; the matrix A is sampled entry by entry and the secret vectors
 * are re-read from sk, so stack use stays at a few polynomials per row.
 *
 *  *_keygen_internal  ML-DSA.KeyGen_internal(xi) -> (pk, sk)        (Alg. 6)
 *  *_sign_mu          ML-DSA.Sign_internal from an external mu       (Alg. 7,
 *                     lines 7-33; mu = H(tr || M') computed by the caller)
 *  *_sign_internal    ML-DSA.Sign_internal(sk, M', rnd)             (Alg. 7)
 *  *_sign             ML-DSA.Sign(sk, M, ctx) with rnd supplied      (Alg. 2)
 *  *_sign_prehash     HashML-DSA.Sign(sk, M, ctx, PH) given PH(M) and
 *                     the DER OID of PH                              (Alg. 4)
 *  *_verify_mu / *_verify_internal / *_verify / *_verify_prehash
 *                     the matching verifications                (Alg. 8, 3, 5)
 *
 * rnd is the 32-byte per-signature randomness: the caller's DRBG output for
 * the hedged variant; NULL (or 32 zero bytes) for the deterministic one.
 * rounds, when not NULL, receives the number of rejection-sampling rounds the
 * signature took (1 or more): the only thing signing's timing depends on
 * besides the public lengths. */
#ifndef PQ_MLDSA_H
#define PQ_MLDSA_H

#include <stddef.h>
#include <stdint.h>

#define MLDSA_SEEDBYTES 32
#define MLDSA_RNDBYTES 32
#define MLDSA_MUBYTES 64

#define MLDSA44_PKBYTES 1312
#define MLDSA44_SKBYTES 2560
#define MLDSA44_SIGBYTES 2420
#define MLDSA65_PKBYTES 1952
#define MLDSA65_SKBYTES 4032
#define MLDSA65_SIGBYTES 3309
#define MLDSA87_PKBYTES 2592
#define MLDSA87_SKBYTES 4896
#define MLDSA87_SIGBYTES 4627

#define MLDSA_DECLARE(p)                                                                        \
	int p##_keygen_internal(uint8_t *pk, uint8_t *sk, const uint8_t xi[32]);                \
	int p##_sign_mu(uint8_t *sig, const uint8_t *sk, const uint8_t mu[64],                  \
			const uint8_t *rnd, unsigned int *rounds);                               \
	int p##_sign_internal(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,   \
			      const uint8_t *rnd, unsigned int *rounds);                         \
	int p##_sign(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,            \
		     const uint8_t *ctx, size_t ctxlen, const uint8_t *rnd, unsigned int *rounds); \
	int p##_sign_prehash(uint8_t *sig, const uint8_t *sk, const uint8_t *ph, size_t phlen,  \
			     const uint8_t *oid, size_t oidlen, const uint8_t *ctx, size_t ctxlen, \
			     const uint8_t *rnd, unsigned int *rounds);                          \
	int p##_verify_mu(const uint8_t *sig, const uint8_t *pk, const uint8_t mu[64]);         \
	int p##_verify_internal(const uint8_t *sig, const uint8_t *pk, const uint8_t *m,        \
				size_t mlen);                                                    \
	int p##_verify(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen,    \
		       const uint8_t *ctx, size_t ctxlen);                                       \
	int p##_verify_prehash(const uint8_t *sig, const uint8_t *pk, const uint8_t *ph,        \
			       size_t phlen, const uint8_t *oid, size_t oidlen, const uint8_t *ctx, \
			       size_t ctxlen);

MLDSA_DECLARE(mldsa44)
MLDSA_DECLARE(mldsa65)
MLDSA_DECLARE(mldsa87)

#endif
