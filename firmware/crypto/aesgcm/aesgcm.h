/* AES-128-GCM (FIPS 197, SP 800-38D) for TLS 1.3's TLS_AES_128_GCM_SHA256: 128-bit key,
 * 96-bit IV, 128-bit tag only.
 *
 * Constant time, table-free: there is no S-box table. SubBytes computes each byte's inverse in
 * GF(2^8) as x^254 by a fixed chain of squarings (a linear bit map) and multiplications
 * (branch-free shift-and-mask), four bytes at a time in one 32-bit word, then the affine map by
 * rotations; MixColumns and
 * the key schedule use the same word arithmetic. GHASH multiplies bit by bit in GF(2^128) with
 * masks, no table. So no memory address and no branch depends on the key, the data or H; lengths
 * are public. The tag is compared without an early exit, and open writes plaintext only after
 * the tag has matched (on failure the output is zeroed). This is slow next to a table or a
 * bitsliced AES: it is the simple constant-time form, measured before anything faster. */
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
	uint32_t rk[44]; /* the 11 round keys, each as four little-endian column words */
	uint64_t h[2];   /* H = E(K, 0^128), big-endian halves */
} aes128gcm_ctx;

/* aes128_encrypt_block: one block under the expanded key (in and out may be the same). */
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
