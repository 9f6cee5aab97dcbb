/* The example implementation's NIST/PQClean signature API over the project's ML-DSA-44
 * (BYOI.md): key generation draws the seed xi, signing the randomness rnd, with randombytes,
 * as other implementations do (hedged signing; the firmware serves 32 zero bytes for the
 * deterministic variant). */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "mldsa/mldsa.h"

int randombytes(uint8_t *out, size_t n);

int crypto_sign_keypair(uint8_t *pk, uint8_t *sk)
{
	uint8_t xi[32];
	randombytes(xi, sizeof xi);
	return mldsa44_keygen_internal(pk, sk, xi);
}

int crypto_sign_signature_ctx(uint8_t *sig, size_t *siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
			      size_t ctxlen, const uint8_t *sk)
{
	uint8_t rnd[32];
	unsigned int rounds;
	randombytes(rnd, sizeof rnd);
	if (mldsa44_sign(sig, sk, m, mlen, ctx, ctxlen, rnd, &rounds) != 0) {
		*siglen = 0;
		return -1;
	}
	*siglen = CRYPTO_BYTES;
	return 0;
}

int crypto_sign_verify_ctx(const uint8_t *sig, size_t siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
			   size_t ctxlen, const uint8_t *pk)
{
	if (siglen != CRYPTO_BYTES)
		return -1;
	return mldsa44_verify(sig, pk, m, mlen, ctx, ctxlen);
}
