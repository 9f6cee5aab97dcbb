/* Keccak-f[1600] and the FIPS 202 functions built on it: SHA3-256, SHA3-512,
 * SHAKE128 and SHAKE256, one-shot and incremental.
 *
 * Byte order is handled explicitly (lanes are little-endian as FIPS 202
 * requires), so the code is correct on any host endianness. No allocation;
 * a context is 208 bytes and may live on the stack. */
#ifndef PQ_KECCAK_H
#define PQ_KECCAK_H

#include <stddef.h>
#include <stdint.h>

#define SHAKE128_RATE 168
#define SHAKE256_RATE 136
#define SHA3_256_RATE 136
#define SHA3_512_RATE 72

/* keccak_ctx is a sponge in either the absorbing or the squeezing phase. */
typedef struct {
	uint64_t s[25];
	unsigned int pos;  /* byte position inside the current block */
	unsigned int rate; /* bytes */
} keccak_ctx;

void keccak_f1600(uint64_t s[25]);

/* Incremental sponge: init, absorb any number of times, finalize once with
 * the domain-separation byte (0x06 for SHA3, 0x1F for SHAKE), then squeeze any
 * number of times. */
void keccak_init(keccak_ctx *c, unsigned int rate);
void keccak_absorb(keccak_ctx *c, const uint8_t *in, size_t len);
void keccak_finalize(keccak_ctx *c, uint8_t ds);
void keccak_squeeze(keccak_ctx *c, uint8_t *out, size_t len);

void shake128_init(keccak_ctx *c);
void shake256_init(keccak_ctx *c);
#define shake_absorb keccak_absorb
void shake_finalize(keccak_ctx *c);
#define shake_squeeze keccak_squeeze

void sha3_256(uint8_t out[32], const uint8_t *in, size_t len);
void sha3_512(uint8_t out[64], const uint8_t *in, size_t len);
void shake128(uint8_t *out, size_t outlen, const uint8_t *in, size_t len);
void shake256(uint8_t *out, size_t outlen, const uint8_t *in, size_t len);

#endif
