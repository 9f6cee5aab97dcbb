/* HMAC-SHA-256 (RFC 2104, FIPS 198-1) and HKDF-SHA-256 (RFC 5869) on the firmware's
 * SHA-256, with TLS 1.3's HKDF-Expand-Label and Derive-Secret (RFC 8446 section 7.1).
 * Portable C, no allocation; keys of any length (longer than a block are hashed first).
 * Nothing here branches on or indexes by secret data; lengths are public. */
#ifndef PQ_HKDF_H
#define PQ_HKDF_H

#include <stddef.h>
#include <stdint.h>

#include "../sha2/sha2.h"

#define HMAC_SHA256_BYTES 32
#define HKDF_SHA256_MAX_OKM (255 * 32) /* RFC 5869: L <= 255 * HashLen */
#define HKDF_LABEL_MAX 249             /* "tls13 " + label fits opaque label<7..255> */
#define HKDF_CONTEXT_MAX 255           /* opaque context<0..255> */

typedef struct {
	sha256_ctx inner, outer;
} hmac_sha256_ctx;

void hmac_sha256_init(hmac_sha256_ctx *c, const uint8_t *key, size_t keylen);
void hmac_sha256_update(hmac_sha256_ctx *c, const uint8_t *in, size_t len);
void hmac_sha256_final(hmac_sha256_ctx *c, uint8_t out[HMAC_SHA256_BYTES]);
void hmac_sha256(uint8_t out[HMAC_SHA256_BYTES], const uint8_t *key, size_t keylen, const uint8_t *msg,
		 size_t msglen);

/* hkdf_sha256_extract: PRK = HMAC(salt, IKM); an empty salt means 32 zero bytes. */
void hkdf_sha256_extract(uint8_t prk[32], const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
			 size_t ikmlen);

/* hkdf_sha256_expand writes okmlen bytes of OKM; -1 (and nothing written) when okmlen exceeds
 * HKDF_SHA256_MAX_OKM. okm may not overlap prk or info. */
int hkdf_sha256_expand(uint8_t *okm, size_t okmlen, const uint8_t *prk, size_t prklen, const uint8_t *info,
		       size_t infolen);

/* hkdf_expand_label is TLS 1.3's HKDF-Expand-Label(Secret, Label, Context, Length) with SHA-256:
 * label is given without the "tls13 " prefix. -1 when the label is longer than HKDF_LABEL_MAX,
 * the context longer than HKDF_CONTEXT_MAX or outlen above HKDF_SHA256_MAX_OKM. */
int hkdf_expand_label(uint8_t *out, size_t outlen, const uint8_t secret[32], const char *label,
		      const uint8_t *context, size_t contextlen);

/* tls13_derive_secret is Derive-Secret(Secret, Label, Messages) given the transcript hash of the
 * messages (SHA-256 of their concatenation): Expand-Label(Secret, Label, hash, 32). */
int tls13_derive_secret(uint8_t out[32], const uint8_t secret[32], const char *label,
			const uint8_t transcript_hash[32]);

#endif
