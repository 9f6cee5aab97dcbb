/* The NIST/PQClean signature API of the example implementation (BYOI.md): the project's
 * ML-DSA-44, copied into a folder of its own by `make byoi-example EXAMPLE=mldsa44-nist`,
 * behind the entry points PQClean's ML-DSA provides (pure ML-DSA with a context). */
#ifndef EXAMPLE_API_H
#define EXAMPLE_API_H

#include <stddef.h>
#include <stdint.h>

#define CRYPTO_PUBLICKEYBYTES 1312
#define CRYPTO_SECRETKEYBYTES 2560
#define CRYPTO_BYTES 2420
#define CRYPTO_ALGNAME "ML-DSA-44"

int crypto_sign_keypair(uint8_t *pk, uint8_t *sk);
int crypto_sign_signature_ctx(uint8_t *sig, size_t *siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
			      size_t ctxlen, const uint8_t *sk);
int crypto_sign_verify_ctx(const uint8_t *sig, size_t siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx,
			   size_t ctxlen, const uint8_t *pk);

#endif
