/* The telemetry scheme's device side (tel.h, firmware/TELEMETRY.md). */
#include "tel.h"

#include "../ascon/ascon.h"
#include "../mldsa/mldsa.h"
#include "../mlkem/mlkem.h"
#include "../pqmem.h"

static const char kdf_custom[] = "pqrepro/tm/v1 session key";
static const char topic_prefix[] = "pqrepro/tm/v1/";
static const char sign_context[] = "pqrepro/tm/v1 ephemeral key";

static void put_u64be(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

int tel_valid_device(const char *dev, size_t n)
{
	size_t i;
	if (n == 0 || n > TEL_MAX_DEV)
		return -1;
	for (i = 0; i < n; i++) {
		char c = dev[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return -1;
	}
	return 0;
}

int tel_pin_key(struct tel_pin *p, const uint8_t ek[TEL_EK])
{
	if (mlkem512_check_ek(ek) != 0)
		return -1;
	memcpy(p->ek, ek, TEL_EK);
	ascon_hash256(p->ekh, p->ek, TEL_EK);
	return 0;
}

int tel_encaps(uint8_t hs[TEL_HS], uint8_t ss[32], const struct tel_pin *p, const uint8_t m[32])
{
	hs[0] = TEL_VERSION;
	hs[1] = TEL_MODE_PINNED;
	return mlkem512_encaps(hs + 2, ss, p->ek, m);
}

/* derive: the session keys and topic from ct (TEL_CT bytes); fs, when not 0, is the
 * forward-secret binding nonce (16) || u64be expiry (8). */
static int derive(struct tel_session *s, uint8_t mode, const uint8_t ekh[32], const uint8_t *ct,
		  const uint8_t ss[32], const char *dev, size_t devlen, const uint8_t *psk,
		  size_t psklen, const uint8_t *fs)
{
	static const char hexd[] = "0123456789abcdef";
	ascon_hash_ctx x;
	uint8_t hct[32], b, okm[24];
	size_t i, n;

	if (tel_valid_device(dev, devlen) != 0 || psklen > TEL_MAX_PSK)
		return -1;
	s->open = 0;
	ascon_hash256(hct, ct, TEL_CT);
	memcpy(s->sid, hct, TEL_SID);

	/* X = mode || ss || H(ek) || H(ct) || u8 len(device) || device || u8 len(psk) || psk */
	ascon_cxof128_init(&x, (const uint8_t *)kdf_custom, sizeof kdf_custom - 1);
	ascon_hash_absorb(&x, &mode, 1);
	ascon_hash_absorb(&x, ss, 32);
	ascon_hash_absorb(&x, ekh, 32);
	ascon_hash_absorb(&x, hct, 32);
	b = (uint8_t)devlen;
	ascon_hash_absorb(&x, &b, 1);
	ascon_hash_absorb(&x, (const uint8_t *)dev, devlen);
	b = (uint8_t)psklen;
	ascon_hash_absorb(&x, &b, 1);
	ascon_hash_absorb(&x, psk, psklen);
	if (fs != 0)
		ascon_hash_absorb(&x, fs, TEL_NONCE + 8);
	ascon_hash_squeeze(&x, okm, sizeof okm);
	memcpy(s->key, okm, 16);
	memcpy(s->prefix, okm + 16, 8);
	memset(okm, 0, sizeof okm);
	memset(&x, 0, sizeof x);

	/* T = pqrepro/tm/v1/<device>/d/<sid> */
	n = 0;
	memcpy(s->topic, topic_prefix, sizeof topic_prefix - 1);
	n += sizeof topic_prefix - 1;
	memcpy(s->topic + n, dev, devlen);
	n += devlen;
	memcpy(s->topic + n, "/d/", 3);
	n += 3;
	for (i = 0; i < TEL_SID; i++) {
		s->topic[n++] = hexd[s->sid[i] >> 4];
		s->topic[n++] = hexd[s->sid[i] & 15];
	}
	s->topiclen = n;
	s->next = 0;
	s->open = 1;
	return 0;
}

int tel_derive(struct tel_session *s, const struct tel_pin *p, const uint8_t hs[TEL_HS],
	       const uint8_t ss[32], const char *dev, size_t devlen, const uint8_t *psk, size_t psklen)
{
	return derive(s, TEL_MODE_PINNED, p->ekh, hs + 2, ss, dev, devlen, psk, psklen, 0);
}

const char *tel_offer_reason(int err)
{
	switch (err) {
	case TEL_OFFER_OK:
		return "ok";
	case TEL_OFFER_SIGNATURE:
		return "signature";
	case TEL_OFFER_NONCE:
		return "nonce";
	case TEL_OFFER_EXPIRED:
		return "expired";
	default:
		return "malformed";
	}
}

static uint64_t get_u64be(const uint8_t *p)
{
	uint64_t v = 0;
	int i;
	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

void tel_fs_request(uint8_t rq[TEL_RQ], const uint8_t nonce[TEL_NONCE])
{
	rq[0] = TEL_VERSION;
	memcpy(rq + 1, nonce, TEL_NONCE);
}

int tel_fs_verify(const uint8_t *offer, size_t n, const uint8_t sigpk[TEL_SIGPK], const char *dev,
		  size_t devlen)
{
	/* M = u8 len(dev) || dev || n || u64be expiry || ek_e: the last three are the offer's
	 * bytes 1 .. 825, contiguous. */
	uint8_t m[1 + TEL_MAX_DEV + TEL_NONCE + 8 + TEL_EK];
	const size_t body = TEL_NONCE + 8 + TEL_EK;
	int rc;

	if (n != TEL_OFFER || offer[0] != TEL_VERSION || tel_valid_device(dev, devlen) != 0)
		return TEL_OFFER_MALFORMED;
	m[0] = (uint8_t)devlen;
	memcpy(m + 1, dev, devlen);
	memcpy(m + 1 + devlen, offer + 1, body);
	rc = mldsa44_verify(offer + 1 + body, sigpk, m, 1 + devlen + body,
			    (const uint8_t *)sign_context, sizeof sign_context - 1);
	return rc == 0 ? TEL_OFFER_OK : TEL_OFFER_SIGNATURE;
}

int tel_fs_accept(struct tel_pin *eph, uint64_t *expiry, const uint8_t offer[TEL_OFFER],
		  const uint8_t nonce[TEL_NONCE], uint64_t now)
{
	uint8_t diff = 0;
	uint64_t e;
	size_t i;

	for (i = 0; i < TEL_NONCE; i++)
		diff |= offer[1 + i] ^ nonce[i];
	if (diff != 0)
		return TEL_OFFER_NONCE;
	e = get_u64be(offer + 1 + TEL_NONCE);
	if (e > 0x7fffffffffffffffull || e <= now || e - now > TEL_MAX_OFFER_LIFE)
		return TEL_OFFER_EXPIRED;
	if (tel_pin_key(eph, offer + 1 + TEL_NONCE + 8) != 0)
		return TEL_OFFER_MALFORMED;
	*expiry = e;
	return TEL_OFFER_OK;
}

int tel_fs_encaps(uint8_t hs[TEL_HS_FS], uint8_t ss[32], const struct tel_pin *eph,
		  const uint8_t nonce[TEL_NONCE], const uint8_t m[32])
{
	hs[0] = TEL_VERSION;
	hs[1] = TEL_MODE_FS;
	memcpy(hs + 2, nonce, TEL_NONCE);
	return mlkem512_encaps(hs + 2 + TEL_NONCE, ss, eph->ek, m);
}

int tel_derive_fs(struct tel_session *s, const struct tel_pin *eph, const uint8_t hs[TEL_HS_FS],
		  const uint8_t ss[32], uint64_t expiry, const char *dev, size_t devlen,
		  const uint8_t *psk, size_t psklen)
{
	uint8_t fs[TEL_NONCE + 8];
	memcpy(fs, hs + 2, TEL_NONCE);
	put_u64be(fs + TEL_NONCE, expiry);
	return derive(s, TEL_MODE_FS, eph->ekh, hs + 2 + TEL_NONCE, ss, dev, devlen, psk, psklen, fs);
}

int tel_seal(struct tel_session *s, uint8_t *frame, const uint8_t *p, size_t plen, uint64_t *ctr)
{
	uint8_t nonce[16], ad[2 + TEL_MAX_TOPIC + 8];
	uint64_t c;

	if (!s->open || plen > TEL_MAX_PAYLOAD)
		return -1;
	c = s->next;
	if (c == TEL_MAX_COUNTER)
		s->open = 0; /* the last counter: the next frame needs a new handshake */
	else
		s->next = c + 1;
	*ctr = c;
	/* nonce = prefix || u64be c; AD = u16be len(T) || T || u64be c */
	memcpy(nonce, s->prefix, 8);
	put_u64be(nonce + 8, c);
	ad[0] = (uint8_t)(s->topiclen >> 8);
	ad[1] = (uint8_t)s->topiclen;
	memcpy(ad + 2, s->topic, s->topiclen);
	put_u64be(ad + 2 + s->topiclen, c);
	/* C may overwrite p when p == frame + 8: the counter goes in first, which does not. */
	put_u64be(frame, c);
	ascon_aead_encrypt(ASCON_AEAD128, frame + 8, frame + 8 + plen, p, plen, ad,
			   2 + s->topiclen + 8, nonce, s->key);
	return 0;
}
