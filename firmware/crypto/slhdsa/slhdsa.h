/* SLH-DSA (FIPS 205) for the twelve parameter sets. Each set is compiled from
 * the same source (slhdsa_impl.h) with its own symbol prefix, so a board
 * links only the sets it runs and code size can be measured per set:
 *
 *   slhdsa_sha2_128s   slhdsa_sha2_128f   slhdsa_shake_128s   slhdsa_shake_128f
 *   slhdsa_sha2_192s   slhdsa_sha2_192f   slhdsa_shake_192s   slhdsa_shake_192f
 *   slhdsa_sha2_256s   slhdsa_sha2_256f   slhdsa_shake_256s   slhdsa_shake_256f
 *
 * All functions return 0 on success and -1 when an input is refused (a
 * context string over 255 bytes) or a signature does not verify. No
 * allocation; trees are computed leaf by leaf with a stack of one node per
 * level, so stack use is a few hundred bytes plus the hash contexts.
 *
 *  *_keygen_internal  slh_keygen_internal(SK.seed, SK.prf, PK.seed)
 *                     -> pk = PK.seed || PK.root,
 *                        sk = SK.seed || SK.prf || PK.seed || PK.root  (Alg. 18)
 *  *_sign_internal    slh_sign_internal(M, sk, addrnd)               (Alg. 19)
 *  *_sign             slh_sign(M, ctx, sk) (pure SLH-DSA)            (Alg. 22)
 *  *_sign_prehash     hash_slh_sign given PH(M) and the DER OID of PH (Alg. 23)
 *  *_verify_internal / *_verify / *_verify_prehash
 *                     the matching verifications               (Alg. 20, 24, 25)
 *
 * addrnd is the n-byte per-signature randomness of the hedged variant (the
 * caller's DRBG output); NULL signs deterministically (opt_rand = PK.seed).
 * sig must hold *_SIGBYTES; verification takes exactly *_SIGBYTES (a caller
 * holding a signature of another length refuses it before calling). */
#ifndef PQ_SLHDSA_H
#define PQ_SLHDSA_H

#include <stddef.h>
#include <stdint.h>

/* n, public key 2n, secret key 4n, signature bytes per set (FIPS 205 Table 2). */
#define SLHDSA_SHA2_128S_N 16
#define SLHDSA_SHA2_128S_PKBYTES 32
#define SLHDSA_SHA2_128S_SKBYTES 64
#define SLHDSA_SHA2_128S_SIGBYTES 7856
#define SLHDSA_SHA2_128F_N 16
#define SLHDSA_SHA2_128F_PKBYTES 32
#define SLHDSA_SHA2_128F_SKBYTES 64
#define SLHDSA_SHA2_128F_SIGBYTES 17088
#define SLHDSA_SHA2_192S_N 24
#define SLHDSA_SHA2_192S_PKBYTES 48
#define SLHDSA_SHA2_192S_SKBYTES 96
#define SLHDSA_SHA2_192S_SIGBYTES 16224
#define SLHDSA_SHA2_192F_N 24
#define SLHDSA_SHA2_192F_PKBYTES 48
#define SLHDSA_SHA2_192F_SKBYTES 96
#define SLHDSA_SHA2_192F_SIGBYTES 35664
#define SLHDSA_SHA2_256S_N 32
#define SLHDSA_SHA2_256S_PKBYTES 64
#define SLHDSA_SHA2_256S_SKBYTES 128
#define SLHDSA_SHA2_256S_SIGBYTES 29792
#define SLHDSA_SHA2_256F_N 32
#define SLHDSA_SHA2_256F_PKBYTES 64
#define SLHDSA_SHA2_256F_SKBYTES 128
#define SLHDSA_SHA2_256F_SIGBYTES 49856

#define SLHDSA_SHAKE_128S_N 16
#define SLHDSA_SHAKE_128S_PKBYTES 32
#define SLHDSA_SHAKE_128S_SKBYTES 64
#define SLHDSA_SHAKE_128S_SIGBYTES 7856
#define SLHDSA_SHAKE_128F_N 16
#define SLHDSA_SHAKE_128F_PKBYTES 32
#define SLHDSA_SHAKE_128F_SKBYTES 64
#define SLHDSA_SHAKE_128F_SIGBYTES 17088
#define SLHDSA_SHAKE_192S_N 24
#define SLHDSA_SHAKE_192S_PKBYTES 48
#define SLHDSA_SHAKE_192S_SKBYTES 96
#define SLHDSA_SHAKE_192S_SIGBYTES 16224
#define SLHDSA_SHAKE_192F_N 24
#define SLHDSA_SHAKE_192F_PKBYTES 48
#define SLHDSA_SHAKE_192F_SKBYTES 96
#define SLHDSA_SHAKE_192F_SIGBYTES 35664
#define SLHDSA_SHAKE_256S_N 32
#define SLHDSA_SHAKE_256S_PKBYTES 64
#define SLHDSA_SHAKE_256S_SKBYTES 128
#define SLHDSA_SHAKE_256S_SIGBYTES 29792
#define SLHDSA_SHAKE_256F_N 32
#define SLHDSA_SHAKE_256F_PKBYTES 64
#define SLHDSA_SHAKE_256F_SKBYTES 128
#define SLHDSA_SHAKE_256F_SIGBYTES 49856

#define SLHDSA_MAX_SIGBYTES 49856

#define SLHDSA_DECLARE(p)                                                                       \
	int p##_keygen_internal(uint8_t *pk, uint8_t *sk, const uint8_t *sk_seed,               \
				const uint8_t *sk_prf, const uint8_t *pk_seed);                 \
	int p##_sign_internal(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,   \
			      const uint8_t *addrnd);                                            \
	int p##_sign(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,            \
		     const uint8_t *ctx, size_t ctxlen, const uint8_t *addrnd);                  \
	int p##_sign_prehash(uint8_t *sig, const uint8_t *sk, const uint8_t *ph, size_t phlen,  \
			     const uint8_t *oid, size_t oidlen, const uint8_t *ctx, size_t ctxlen, \
			     const uint8_t *addrnd);                                             \
	int p##_verify_internal(const uint8_t *sig, const uint8_t *pk, const uint8_t *m,        \
				size_t mlen);                                                    \
	int p##_verify(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen,    \
		       const uint8_t *ctx, size_t ctxlen);                                       \
	int p##_verify_prehash(const uint8_t *sig, const uint8_t *pk, const uint8_t *ph,        \
			       size_t phlen, const uint8_t *oid, size_t oidlen, const uint8_t *ctx, \
			       size_t ctxlen);

SLHDSA_DECLARE(slhdsa_sha2_128s)
SLHDSA_DECLARE(slhdsa_sha2_128f)
SLHDSA_DECLARE(slhdsa_sha2_192s)
SLHDSA_DECLARE(slhdsa_sha2_192f)
SLHDSA_DECLARE(slhdsa_sha2_256s)
SLHDSA_DECLARE(slhdsa_sha2_256f)
SLHDSA_DECLARE(slhdsa_shake_128s)
SLHDSA_DECLARE(slhdsa_shake_128f)
SLHDSA_DECLARE(slhdsa_shake_192s)
SLHDSA_DECLARE(slhdsa_shake_192f)
SLHDSA_DECLARE(slhdsa_shake_256s)
SLHDSA_DECLARE(slhdsa_shake_256f)

#endif
