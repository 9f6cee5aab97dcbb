/* Ascon (NIST SP 800-232): the Ascon-p permutation and, on it,
 * Ascon-AEAD128, Ascon-Hash256, Ascon-XOF128 and Ascon-CXOF128, plus the
 * pre-standard v1.2 modes Ascon-128 and Ascon-128a. One permutation and one
 * AEAD routine serve all three AEAD modes, parameterised by IV, rate, rounds
 * and byte order, so the modes differ exactly where their specifications do.
 *
 * Byte order: SP 800-232 loads bytes into words little-endian, v1.2
 * big-endian; the code handles both explicitly, so it is correct on any host.
 * Constant time: the permutation is a fixed sequence of word operations and
 * the tag comparison does not stop early; lengths are public. No allocation;
 * the state is 40 bytes and every context may live on the stack. Lengths are
 * whole bytes. */
#ifndef PQ_ASCON_H
#define PQ_ASCON_H

#include <stddef.h>
#include <stdint.h>

#define ASCON_KEYBYTES 16
#define ASCON_NONCEBYTES 16
#define ASCON_TAGBYTES 16
#define ASCON_MINTAGBYTES 4 /* SP 800-232 allows tags down to 32 bits */
#define ASCON_HASH256_BYTES 32
#define ASCON_CXOF_MAXZBYTES 256 /* 2048 bits */

/* ascon_permute applies Ascon-p[rounds], 1 <= rounds <= 16. */
void ascon_permute(uint64_t s[5], unsigned int rounds);

typedef enum {
	ASCON_AEAD128 = 0, /* SP 800-232: rate 128 bits, p^8, little-endian */
	ASCON_128_V12 = 1, /* v1.2 Ascon-128: rate 64 bits, p^6, big-endian */
	ASCON_128A_V12 = 2 /* v1.2 Ascon-128a: rate 128 bits, p^8, big-endian */
} ascon_mode;

/* ascon_aead_encrypt writes mlen bytes of ciphertext to c (c may equal m)
 * and the full 16-byte tag to tag; a truncated tag is its first bytes. */
void ascon_aead_encrypt(ascon_mode mode, uint8_t *c, uint8_t tag[ASCON_TAGBYTES], const uint8_t *m,
			size_t mlen, const uint8_t *ad, size_t adlen,
			const uint8_t nonce[ASCON_NONCEBYTES], const uint8_t key[ASCON_KEYBYTES]);

/* ascon_aead_decrypt checks the taglen-byte tag (ASCON_MINTAGBYTES to
 * ASCON_TAGBYTES) and writes clen bytes of plaintext to m (m may equal c).
 * It returns 0 if the tag verifies; otherwise -1, with m zeroed. */
int ascon_aead_decrypt(ascon_mode mode, uint8_t *m, const uint8_t *c, size_t clen,
		       const uint8_t *tag, size_t taglen, const uint8_t *ad, size_t adlen,
		       const uint8_t nonce[ASCON_NONCEBYTES], const uint8_t key[ASCON_KEYBYTES]);

/* ascon_mask_nonce is SP 800-232's nonce masking for Ascon-AEAD128 with a
 * 256-bit key K || K2: encrypt under K with the nonce out = nonce XOR K2. */
void ascon_mask_nonce(uint8_t out[ASCON_NONCEBYTES], const uint8_t nonce[ASCON_NONCEBYTES],
		      const uint8_t k2[ASCON_KEYBYTES]);

/* ascon_hash_ctx is a Hash256/XOF128/CXOF128 sponge: init, absorb any
 * number of times, then squeeze any number of times (no absorb after). */
typedef struct {
	uint64_t s[5];
	uint8_t buf[8];
	unsigned int n; /* absorbing: bytes buffered; squeezing: bytes of buf used */
	int squeezing;
} ascon_hash_ctx;

void ascon_hash256_init(ascon_hash_ctx *c);
void ascon_xof128_init(ascon_hash_ctx *c);
/* ascon_cxof128_init returns -1 if zlen > ASCON_CXOF_MAXZBYTES, else 0. */
int ascon_cxof128_init(ascon_hash_ctx *c, const uint8_t *z, size_t zlen);
void ascon_hash_absorb(ascon_hash_ctx *c, const uint8_t *in, size_t len);
void ascon_hash_squeeze(ascon_hash_ctx *c, uint8_t *out, size_t len);

void ascon_hash256(uint8_t out[ASCON_HASH256_BYTES], const uint8_t *in, size_t len);
void ascon_xof128(uint8_t *out, size_t outlen, const uint8_t *in, size_t len);
int ascon_cxof128(uint8_t *out, size_t outlen, const uint8_t *z, size_t zlen, const uint8_t *in,
		  size_t len);

#endif
