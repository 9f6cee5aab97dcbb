/* SHA-256 and SHA-512 (FIPS 180-4), one-shot and incremental. Portable C,
 * no allocation, big-endian message words handled explicitly. */
#ifndef PQ_SHA2_H
#define PQ_SHA2_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint32_t h[8];
	uint64_t len; /* bytes absorbed */
	uint8_t buf[64];
	unsigned int n; /* bytes in buf */
} sha256_ctx;

typedef struct {
	uint64_t h[8];
	uint64_t len; /* bytes absorbed (messages below 2^64 bytes) */
	uint8_t buf[128];
	unsigned int n;
} sha512_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const uint8_t *in, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
void sha256(uint8_t out[32], const uint8_t *in, size_t len);

void sha512_init(sha512_ctx *c);
void sha512_update(sha512_ctx *c, const uint8_t *in, size_t len);
void sha512_final(sha512_ctx *c, uint8_t out[64]);
void sha512(uint8_t out[64], const uint8_t *in, size_t len);

#endif
