/* What the TLS 1.3 client and server share; see tls13common.h. */
#include "tls13common.h"

#include "../c25519/c25519.h"
#include "../hkdf/hkdf.h"
#include "../p256/p256.h"
#include "../pqmem.h"

const uint8_t tls13_hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

/* ---- records ---- */

static void nonce(const struct tls13_half *h, uint8_t n[AESGCM_IVBYTES])
{
	int i;
	memcpy(n, h->iv, AESGCM_IVBYTES);
	for (i = 0; i < 8; i++)
		n[AESGCM_IVBYTES - 1 - i] ^= (uint8_t)(h->seq >> (8 * i));
}

int tls13_send_record(const struct tls13_out *o, struct tls13_half *wr, uint8_t type, const uint8_t *p, size_t len,
		      uint8_t legacy_minor)
{
	uint8_t *rec = o->buf + *o->len, n[AESGCM_IVBYTES];
	size_t body = wr->on ? len + 1 + AESGCM_TAGBYTES : len;
	if (len > TLS13_PLAINTEXT_MAX || o->cap - *o->len < 5 + body)
		return -1;
	rec[0] = wr->on ? TLS13_CT_APPDATA : type;
	rec[1] = 3;
	rec[2] = wr->on ? 3 : legacy_minor;
	tls13_put(rec + 3, (uint32_t)body, 2);
	memmove(rec + 5, p, len);
	if (wr->on) {
		rec[5 + len] = type;
		nonce(wr, n);
		TLS13_TIMED(o->ks, aes128gcm_seal(&wr->aead, rec + 5, n, rec, 5, rec + 5, len + 1));
		wr->seq++;
	}
	*o->len += 5 + body;
	return 0;
}

int tls13_open_record(struct tls13_half *rd, uint8_t *rec, size_t body, uint8_t *type, size_t *len, uint64_t *ks)
{
	uint8_t n[AESGCM_IVBYTES];
	size_t i;
	int r;
	if (body < 1 + AESGCM_TAGBYTES)
		return TLS13_BAD_RECORD_MAC;
	nonce(rd, n);
	TLS13_TIMED(ks, r = aes128gcm_open(&rd->aead, rec + 5, n, rec, 5, rec + 5, body));
	if (r != 0)
		return TLS13_BAD_RECORD_MAC;
	rd->seq++;
	for (i = body - AESGCM_TAGBYTES; i > 0 && rec[5 + i - 1] == 0; i--)
		;
	if (i == 0)
		return TLS13_UNEXPECTED_MESSAGE;
	*type = rec[5 + i - 1];
	*len = i - 1;
	if (*len > TLS13_PLAINTEXT_MAX)
		return TLS13_RECORD_OVERFLOW;
	return 0;
}

void tls13_set_keys(struct tls13_half *h, const uint8_t secret[32])
{
	uint8_t key[16];
	hkdf_expand_label(key, sizeof key, secret, "key", NULL, 0);
	hkdf_expand_label(h->iv, AESGCM_IVBYTES, secret, "iv", NULL, 0);
	aes128gcm_init(&h->aead, key);
	memset(key, 0, sizeof key);
	h->seq = 0;
	h->on = 1;
}

/* ---- the key schedule ---- */

void tls13_handshake_secrets(uint8_t hs_secret[32], uint8_t c_hs[32], uint8_t s_hs[32], const uint8_t *ss,
			     size_t sslen, const uint8_t th[32])
{
	static const uint8_t zero[32] = {0};
	uint8_t early[32], derived[32], empty[32];
	sha256(empty, NULL, 0);
	hkdf_sha256_extract(early, NULL, 0, zero, sizeof zero);
	tls13_derive_secret(derived, early, "derived", empty);
	hkdf_sha256_extract(hs_secret, derived, sizeof derived, ss, sslen);
	tls13_derive_secret(c_hs, hs_secret, "c hs traffic", th);
	tls13_derive_secret(s_hs, hs_secret, "s hs traffic", th);
	memset(early, 0, sizeof early);
	memset(derived, 0, sizeof derived);
}

void tls13_app_secrets(uint8_t c_ap[32], uint8_t s_ap[32], const uint8_t hs_secret[32], const uint8_t th[32])
{
	static const uint8_t zero[32] = {0};
	uint8_t derived[32], empty[32], master[32];
	sha256(empty, NULL, 0);
	tls13_derive_secret(derived, hs_secret, "derived", empty);
	hkdf_sha256_extract(master, derived, sizeof derived, zero, sizeof zero);
	tls13_derive_secret(c_ap, master, "c ap traffic", th);
	tls13_derive_secret(s_ap, master, "s ap traffic", th);
	memset(derived, 0, sizeof derived);
	memset(master, 0, sizeof master);
}

void tls13_finished_mac(uint8_t mac[32], const uint8_t base[32], const uint8_t th[32])
{
	uint8_t key[32];
	hkdf_expand_label(key, sizeof key, base, "finished", NULL, 0);
	hmac_sha256(mac, key, sizeof key, th, 32);
	memset(key, 0, sizeof key);
}

void tls13_transcript_hash(const sha256_ctx *t, uint8_t out[32])
{
	sha256_ctx c = *t;
	sha256_final(&c, out);
}

/* ---- groups: calls go through switches, not function pointers, so that GCC's call graph
 * (make tls-report's stack bound) sees every callee ---- */

static const struct tls13_kem kems[] = {
	{TLS13_G_MLKEM512, MLKEM512_EKBYTES, MLKEM512_CTBYTES, 32, 0, 1},
	{TLS13_G_MLKEM768, MLKEM768_EKBYTES, MLKEM768_CTBYTES, 32, 0, 1},
	{TLS13_G_MLKEM1024, MLKEM1024_EKBYTES, MLKEM1024_CTBYTES, 32, 0, 1},
	{TLS13_G_X25519, X25519_BYTES, X25519_BYTES, 32, 1, 0},
	{TLS13_G_P256, P256_POINT_LEN, P256_POINT_LEN, 32, 1, 0},
	{TLS13_G_X25519MLKEM768, MLKEM768_EKBYTES + X25519_BYTES, MLKEM768_CTBYTES + X25519_BYTES, 64, 1, 1},
};

const struct tls13_kem *tls13_kem_of(uint16_t group)
{
	size_t i;
	for (i = 0; i < sizeof kems / sizeof kems[0]; i++)
		if (kems[i].group == group)
			return &kems[i];
	return NULL;
}

int tls13_kem_keygen(uint16_t group, uint8_t *ek, uint8_t *dk, const uint8_t ecdh_sk[32], const uint8_t seed[64])
{
	switch (group) {
	case TLS13_G_MLKEM512:
		return mlkem512_keygen_internal(ek, dk, seed, seed + 32);
	case TLS13_G_MLKEM768:
		return mlkem768_keygen_internal(ek, dk, seed, seed + 32);
	case TLS13_G_MLKEM1024:
		return mlkem1024_keygen_internal(ek, dk, seed, seed + 32);
	case TLS13_G_X25519:
		x25519_base(ek, ecdh_sk);
		return 0;
	case TLS13_G_P256: {
		int r = p256_keygen(ek, ecdh_sk);
		TLS13_DECLASSIFY(&r, sizeof r);
		return r == P256_OK ? 0 : -1;
	}
	case TLS13_G_X25519MLKEM768:
		if (mlkem768_keygen_internal(ek, dk, seed, seed + 32) != 0)
			return -1;
		x25519_base(ek + MLKEM768_EKBYTES, ecdh_sk);
		return 0;
	}
	return -1;
}

int tls13_kem_decaps(uint16_t group, uint8_t ss[64], const uint8_t *ct, const uint8_t *dk, const uint8_t ecdh_sk[32])
{
	int r;
	switch (group) {
	case TLS13_G_MLKEM512:
		return mlkem512_decaps(ss, ct, dk) == 0 ? 0 : TLS13_INTERNAL_ERROR;
	case TLS13_G_MLKEM768:
		return mlkem768_decaps(ss, ct, dk) == 0 ? 0 : TLS13_INTERNAL_ERROR;
	case TLS13_G_MLKEM1024:
		return mlkem1024_decaps(ss, ct, dk) == 0 ? 0 : TLS13_INTERNAL_ERROR;
	case TLS13_G_X25519:
		r = x25519(ss, ecdh_sk, ct);
		TLS13_DECLASSIFY(&r, sizeof r);
		return r == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_P256:
		r = p256_ecdh(ss, ecdh_sk, ct, P256_POINT_LEN);
		TLS13_DECLASSIFY(&r, sizeof r);
		return r == P256_OK ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_X25519MLKEM768:
		if (mlkem768_decaps(ss, ct, dk) != 0)
			return TLS13_INTERNAL_ERROR;
		r = x25519(ss + 32, ecdh_sk, ct + MLKEM768_CTBYTES);
		TLS13_DECLASSIFY(&r, sizeof r);
		return r == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
	}
	return TLS13_INTERNAL_ERROR;
}

/* x25519_answer: the server's X25519 value into pub and the shared secret into ss. */
static int x25519_answer(uint8_t pub[32], uint8_t ss[32], const uint8_t *peer, const uint8_t ecdh_sk[32])
{
	int r;
	x25519_base(pub, ecdh_sk);
	r = x25519(ss, ecdh_sk, peer);
	TLS13_DECLASSIFY(&r, sizeof r);
	return r == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
}

int tls13_kem_encaps(uint16_t group, uint8_t *ct, uint8_t ss[64], const uint8_t *ek, const uint8_t m[32],
		     const uint8_t ecdh_sk[32])
{
	int r;
	switch (group) {
	case TLS13_G_MLKEM512:
		return mlkem512_encaps(ct, ss, ek, m) == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_MLKEM768:
		return mlkem768_encaps(ct, ss, ek, m) == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_MLKEM1024:
		return mlkem1024_encaps(ct, ss, ek, m) == 0 ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_X25519:
		return x25519_answer(ct, ss, ek, ecdh_sk);
	case TLS13_G_P256:
		/* The peer's point first: a refused point is the peer's fault, a scalar out of range
		 * the caller's. */
		if (p256_point_check(ek, P256_POINT_LEN) != P256_OK)
			return TLS13_ILLEGAL_PARAMETER;
		r = p256_keygen(ct, ecdh_sk);
		TLS13_DECLASSIFY(&r, sizeof r);
		if (r != P256_OK)
			return TLS13_INTERNAL_ERROR;
		r = p256_ecdh(ss, ecdh_sk, ek, P256_POINT_LEN);
		TLS13_DECLASSIFY(&r, sizeof r);
		return r == P256_OK ? 0 : TLS13_ILLEGAL_PARAMETER;
	case TLS13_G_X25519MLKEM768:
		if (mlkem768_encaps(ct, ss, ek, m) != 0)
			return TLS13_ILLEGAL_PARAMETER;
		return x25519_answer(ct + MLKEM768_CTBYTES, ss + 32, ek + MLKEM768_EKBYTES, ecdh_sk);
	}
	return TLS13_INTERNAL_ERROR;
}
