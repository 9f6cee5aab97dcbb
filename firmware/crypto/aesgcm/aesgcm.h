/* AES-128-GCM (FIPS 197, SP 800-38D) for TLS 1.3's TLS_AES_128_GCM_SHA256: 128-bit key,
 * 96-bit IV, 128-bit tag only.
 *
 * Constant time, table-free and bitsliced for a 32-bit core: two blocks at a time sit in eight
 * 32-bit words (word i holds bit i of all 32 bytes) and SubBytes is a Boolean circuit (Boyar and
 * Peralta's depth-16 S-box circuit) on those words, so CTR mode encrypts its counter blocks in
 * pairs; the key schedule uses the same circuit. GHASH multiplies in GF(2^128) with a carry-less
 * 32 x 32 -> 64 multiply built from integer multiplications of operands with holes (every fourth
 * bit), Karatsuba for the 128-bit product, then the reduction by shifts. No memory address and no
 * branch depends on the key, the data or H; lengths are public. The tag is compared without an
 * early exit, and open writes plaintext only after the tag has matched (on failure the output is
 * zeroed). */
#ifndef PQ_AESGCM_H
#define PQ_AESGCM_H

#include <stddef.h>
#include <stdint.h>

#define AES128_KEYBYTES 16
#define AESGCM_IVBYTES 12
#define AESGCM_TAGBYTES 16
/* SP 800-38D: at most 2^32 - 2 blocks of plaintext under one IV. */
#define AESGCM_MAX_TEXT ((uint64_t)0xfffffffeu * 16u)

typedef struct {
	uint32_t sk[88]; /* the 11 round keys in the bitsliced form (aesgcm.c), 8 words each */
	uint32_t hp[36]; /* H = E(K, 0^128) prepared for GHASH: nine Karatsuba operands, split (aesgcm.c) */
} aes128gcm_ctx;

/* aes128_expand: the 11 round keys, each as four little-endian column words.
 * aes128_encrypt_block: one block under them (in and out may be the same); it bitslices the round
 * keys on each call, so aes128gcm_* keep the bitsliced keys in their context instead. */
void aes128_expand(uint32_t rk[44], const uint8_t key[AES128_KEYBYTES]);
void aes128_encrypt_block(const uint32_t rk[44], uint8_t out[16], const uint8_t in[16]);

void aes128gcm_init(aes128gcm_ctx *c, const uint8_t key[AES128_KEYBYTES]);
void aes128gcm_wipe(aes128gcm_ctx *c);

/* aes128gcm_seal writes ptlen bytes of ciphertext then the 16-byte tag to out (out may equal
 * pt). -1 when ptlen exceeds AESGCM_MAX_TEXT. */
int aes128gcm_seal(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		   size_t aadlen, const uint8_t *pt, size_t ptlen);

/* aes128gcm_open checks the tag (the last 16 of ctlen bytes) and only then writes ctlen - 16
 * bytes of plaintext to out (out may equal ct). -1 when ctlen < 16, the text is too long or the
 * tag does not match; out is then zeroed. */
int aes128gcm_open(const aes128gcm_ctx *c, uint8_t *out, const uint8_t iv[AESGCM_IVBYTES], const uint8_t *aad,
		   size_t aadlen, const uint8_t *ct, size_t ctlen);

#endif
