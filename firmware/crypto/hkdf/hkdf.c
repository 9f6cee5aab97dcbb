/* HMAC-SHA-256, HKDF-SHA-256 and TLS 1.3's Expand-Label; see hkdf.h. */
#include "hkdf.h"

#include "../pqmem.h"

#define BLOCK 64

void hmac_sha256_init(hmac_sha256_ctx *c, const uint8_t *key, size_t keylen)
{
	uint8_t k[BLOCK];
	size_t i;
	memset(k, 0, sizeof k);
	if (keylen > BLOCK)
		sha256(k, key, keylen);
	else if (keylen > 0)
		memcpy(k, key, keylen);
	for (i = 0; i < BLOCK; i++)
		k[i] ^= 0x36;
	sha256_init(&c->inner);
	sha256_update(&c->inner, k, BLOCK);
	for (i = 0; i < BLOCK; i++)
		k[i] ^= 0x36 ^ 0x5c;
	sha256_init(&c->outer);
	sha256_update(&c->outer, k, BLOCK);
	memset(k, 0, sizeof k);
}

void hmac_sha256_update(hmac_sha256_ctx *c, const uint8_t *in, size_t len)
{
	sha256_update(&c->inner, in, len);
}

void hmac_sha256_final(hmac_sha256_ctx *c, uint8_t out[HMAC_SHA256_BYTES])
{
	uint8_t ih[32];
	sha256_final(&c->inner, ih);
	sha256_update(&c->outer, ih, sizeof ih);
	sha256_final(&c->outer, out);
	memset(ih, 0, sizeof ih);
}

void hmac_sha256(uint8_t out[HMAC_SHA256_BYTES], const uint8_t *key, size_t keylen, const uint8_t *msg,
		 size_t msglen)
{
	hmac_sha256_ctx c;
	hmac_sha256_init(&c, key, keylen);
	hmac_sha256_update(&c, msg, msglen);
	hmac_sha256_final(&c, out);
	memset(&c, 0, sizeof c);
}

void hkdf_sha256_extract(uint8_t prk[32], const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
			 size_t ikmlen)
{
	static const uint8_t zero[32] = {0};
	if (saltlen == 0) {
		salt = zero;
		saltlen = sizeof zero;
	}
	hmac_sha256(prk, salt, saltlen, ikm, ikmlen);
}

int hkdf_sha256_expand(uint8_t *okm, size_t okmlen, const uint8_t *prk, size_t prklen, const uint8_t *info,
		       size_t infolen)
{
	uint8_t t[32];
	size_t done = 0, n;
	uint8_t ctr = 1;
	hmac_sha256_ctx c;
	if (okmlen > HKDF_SHA256_MAX_OKM)
		return -1;
	while (done < okmlen) {
		hmac_sha256_init(&c, prk, prklen);
		if (done > 0)
			hmac_sha256_update(&c, t, sizeof t);
		hmac_sha256_update(&c, info, infolen);
		hmac_sha256_update(&c, &ctr, 1);
		hmac_sha256_final(&c, t);
		n = okmlen - done < sizeof t ? okmlen - done : sizeof t;
		memcpy(okm + done, t, n);
		done += n;
		ctr++;
	}
	memset(t, 0, sizeof t);
	memset(&c, 0, sizeof c);
	return 0;
}

int hkdf_expand_label(uint8_t *out, size_t outlen, const uint8_t secret[32], const char *label,
		      const uint8_t *context, size_t contextlen)
{
	/* struct { uint16 length; opaque label<7..255>; opaque context<0..255>; } HkdfLabel */
	static const char prefix[] = "tls13 ";
	uint8_t info[2 + 1 + 255 + 1 + 255];
	size_t ll = strlen(label), n = 0;
	if (ll > HKDF_LABEL_MAX || contextlen > HKDF_CONTEXT_MAX || outlen > HKDF_SHA256_MAX_OKM)
		return -1;
	info[n++] = (uint8_t)(outlen >> 8);
	info[n++] = (uint8_t)outlen;
	info[n++] = (uint8_t)(sizeof prefix - 1 + ll);
	memcpy(info + n, prefix, sizeof prefix - 1);
	n += sizeof prefix - 1;
	memcpy(info + n, label, ll);
	n += ll;
	info[n++] = (uint8_t)contextlen;
	if (contextlen > 0)
		memcpy(info + n, context, contextlen);
	n += contextlen;
	return hkdf_sha256_expand(out, outlen, secret, 32, info, n);
}

int tls13_derive_secret(uint8_t out[32], const uint8_t secret[32], const char *label,
			const uint8_t transcript_hash[32])
{
	return hkdf_expand_label(out, 32, secret, label, transcript_hash, 32);
}
