/* The sans-I/O TLS 1.3 server; see tls13s.h. */
#include "tls13s.h"

#include "../c25519/c25519.h"
#include "../ct.h"
#include "../hkdf/hkdf.h"
#include "../p256/p256.h"
#include "../pqmem.h"

/* TIMED runs stmt and adds the board counter's advance over it to s->phase[p] (tls13s.h). */
#define TIMED(s, p, stmt) TLS13_TIMED(&(s)->phase[p], stmt)

enum { EXT_PRE_SHARED_KEY = 41 };

/* ---- alerts and records ---- */

static int send_record(struct tls13s *s, uint8_t type, const uint8_t *p, size_t len)
{
	const struct tls13_out o = {s->out, sizeof s->out, &s->out_len, &s->phase[TLS13S_PH_KS_RECORD]};
	return tls13_send_record(&o, &s->wr, type, p, len, 3);
}

static int fail(struct tls13s *s, int alert)
{
	uint8_t a[2] = {2, (uint8_t)alert};
	if (s->state != TLS13S_FAILED) {
		s->alert_sent = alert;
		s->state = TLS13S_FAILED;
		send_record(s, TLS13_CT_ALERT, a, 2);
	}
	return -1;
}

/* scratch is where a handshake message of up to n bytes is built: in s->out, where its record's
 * body goes (send_record then seals it in place), or NULL when the record would not fit. */
static uint8_t *scratch(struct tls13s *s, size_t n)
{
	if (n > TLS13_PLAINTEXT_MAX || sizeof s->out - s->out_len < 5 + n + 1 + AESGCM_TAGBYTES)
		return NULL;
	return s->out + s->out_len + 5;
}

/* send_message adds the handshake message m (header included, built by scratch) to the
 * transcript and sends it. */
static int send_message(struct tls13s *s, uint8_t *m)
{
	size_t len = 4 + ((size_t)m[1] << 16 | (size_t)m[2] << 8 | m[3]);
	sha256_update(&s->transcript, m, len);
	if (send_record(s, TLS13_CT_HANDSHAKE, m, len) != 0)
		return fail(s, TLS13_INTERNAL_ERROR);
	return 0;
}

/* header writes a handshake message's type and the length of the body that ends at end. */
static void header(uint8_t *m, uint8_t type, const uint8_t *end)
{
	m[0] = type;
	tls13_put(m + 1, (uint32_t)(end - m - 4), 3);
}

static void transcript_hash(const struct tls13s *s, uint8_t out[32])
{
	tls13_transcript_hash(&s->transcript, out);
}

/* ---- keys ---- */

/* scheme_alg: the certificate key algorithm of a scheme, else X509_ALG_OTHER. */
static enum x509_alg scheme_alg(uint16_t scheme)
{
	switch (scheme) {
	case TLS13S_MLDSA44:
		return X509_ALG_MLDSA44;
	case TLS13S_MLDSA65:
		return X509_ALG_MLDSA65;
	case TLS13S_MLDSA87:
		return X509_ALG_MLDSA87;
	case TLS13S_ED25519:
		return TLS13S_HAVE_ED25519 ? X509_ALG_ED25519 : X509_ALG_OTHER;
	case TLS13S_ECDSA_P256:
		return TLS13S_HAVE_P256 ? X509_ALG_P256 : X509_ALG_OTHER;
	case TLS13S_RSA_PSS:
		return TLS13S_HAVE_RSA ? X509_ALG_RSA : X509_ALG_OTHER;
	}
	return X509_ALG_OTHER;
}

/* mldsa_pk_len: the public key's size of an ML-DSA scheme, else 0. */
static size_t mldsa_pk_len(uint16_t scheme)
{
	switch (scheme) {
	case TLS13S_MLDSA44:
		return MLDSA44_PKBYTES;
	case TLS13S_MLDSA65:
		return MLDSA65_PKBYTES;
	case TLS13S_MLDSA87:
		return MLDSA87_PKBYTES;
	}
	return 0;
}

/* key_material expands the material m[0..n) of scheme into k. 0 or -1. */
static int key_material(struct tls13s_key *k, uint16_t scheme, const uint8_t *m, size_t n)
{
	switch (scheme) {
	case TLS13S_MLDSA44:
		return n == 32 ? mldsa44_keygen_internal(k->u.mldsa.pk, k->u.mldsa.sk, m) : -1;
	case TLS13S_MLDSA65:
		return n == 32 ? mldsa65_keygen_internal(k->u.mldsa.pk, k->u.mldsa.sk, m) : -1;
	case TLS13S_MLDSA87:
		return n == 32 ? mldsa87_keygen_internal(k->u.mldsa.pk, k->u.mldsa.sk, m) : -1;
#if TLS13S_HAVE_ED25519
	case TLS13S_ED25519:
		if (n != ED25519_SEEDBYTES)
			return -1;
		memcpy(k->u.ed25519.seed, m, 32);
		ed25519_pubkey(k->u.ed25519.pk, k->u.ed25519.seed);
		return 0;
#endif
#if TLS13S_HAVE_P256
	case TLS13S_ECDSA_P256:
		if (n != P256_SCALAR_LEN)
			return -1;
		memcpy(k->u.p256.d, m, 32);
		return p256_keygen(k->u.p256.pub, k->u.p256.d) == P256_OK ? 0 : -1;
#endif
#if TLS13S_HAVE_RSA
	case TLS13S_RSA_PSS:
		return rsa_privkey_set(&k->u.rsa, m, n) == RSA_OK ? 0 : -1;
#endif
	}
	return -1;
}

int tls13s_key_set(struct tls13s_key *k, const uint8_t *blob, size_t len)
{
	uint16_t scheme;
	memset(k, 0, sizeof *k);
	if (blob == NULL || len < 2)
		return -1;
	scheme = (uint16_t)(blob[0] << 8 | blob[1]);
	if (key_material(k, scheme, blob + 2, len - 2) != 0) {
		tls13s_key_wipe(k);
		return -1;
	}
	k->scheme = scheme;
	return 0;
}

void tls13s_key_wipe(struct tls13s_key *k)
{
	volatile uint8_t *p = (volatile uint8_t *)k;
	size_t i;
	for (i = 0; i < sizeof *k; i++)
		p[i] = 0;
}

#if TLS13S_HAVE_RSA
/* rsa_matches: 1 when the RSAPublicKey der is k's public key. */
static int rsa_matches(const struct rsa_privkey *k, const uint8_t *der, size_t len)
{
	struct rsa_pubkey pub;
	if (rsa_pubkey_parse(&pub, der, len) != RSA_OK)
		return 0;
	return pub.e == k->pub.e && pub.bytes == k->pub.bytes && pub.limbs == k->pub.limbs &&
	       memcmp(pub.n, k->pub.n, pub.limbs * sizeof pub.n[0]) == 0;
}
#endif

int tls13s_key_matches(const struct tls13s_key *k, const struct x509_cert *leaf)
{
	const struct x509_span *pk = &leaf->pubkey;
	size_t n = mldsa_pk_len(k->scheme);
	if (k->scheme == 0 || leaf->spki_alg != scheme_alg(k->scheme))
		return 0;
	if (n != 0)
		return pk->n == n && memcmp(pk->p, k->u.mldsa.pk, n) == 0;
	switch (k->scheme) {
	case TLS13S_ED25519:
		return pk->n == 32 && memcmp(pk->p, k->u.ed25519.pk, 32) == 0;
	case TLS13S_ECDSA_P256:
		return pk->n == 65 && memcmp(pk->p, k->u.p256.pub, 65) == 0;
#if TLS13S_HAVE_RSA
	case TLS13S_RSA_PSS:
		return rsa_matches(&k->u.rsa, pk->p, pk->n);
#endif
	}
	return 0;
}

/* ---- start ---- */

int tls13s_start(struct tls13s *s, const struct tls13s_config *cfg)
{
	const struct tls13_kem *k = tls13_kem_of(cfg->group);
	memset(s, 0, sizeof *s);
	s->alert_sent = s->alert_received = -1;
	if (k == NULL || cfg->key == NULL || scheme_alg(cfg->key->scheme) == X509_ALG_OTHER || cfg->leaf_der == NULL ||
	    cfg->leaf_len == 0 || cfg->leaf_len > TLS13_PLAINTEXT_MAX - 16 || cfg->random == NULL ||
	    (k->mlkem && cfg->kem_rnd == NULL) || (k->ecdh && cfg->ecdh_secret == NULL))
		return -1;
	s->group = cfg->group;
	s->key = cfg->key;
	s->leaf_der = cfg->leaf_der;
	s->leaf_len = cfg->leaf_len;
	memcpy(s->random, cfg->random, 32);
	if (k->mlkem)
		memcpy(s->kem_rnd, cfg->kem_rnd, 32);
	if (k->ecdh)
		memcpy(s->ecdh_sk, cfg->ecdh_secret, 32);
	if (cfg->sig_rnd != NULL) {
		memcpy(s->sig_rnd, cfg->sig_rnd, 32);
		s->sig_rnd_set = 1;
	}
	sha256_init(&s->transcript);
	s->state = TLS13S_WAIT_CH;
	return 0;
}

/* ---- ClientHello ---- */

/* What the server reads of a ClientHello. */
struct hello {
	const uint8_t *random;
	struct tls13_rd sid;
	int suite, comp_null;
	int has_versions, tls13, has_groups, group, has_sigalgs, scheme, has_shares, shares;
	struct tls13_rd share; /* the key share for the server's group; p NULL if none */
};

/* u16_list reads a non-empty list of 16-bit values (lenbytes-prefixed) off r and says whether
 * want is in it. 0, or -1 when malformed. */
static int u16_list(struct tls13_rd *r, int lenbytes, uint32_t want, int *found)
{
	struct tls13_rd l = tls13_sub(r, lenbytes);
	if (r->bad || l.n < 2 || l.n % 2 != 0)
		return -1;
	while (l.n > 0)
		if (tls13_get(&l, 2) == want)
			*found = 1;
	return 0;
}

/* seen_before: whether an entry of type (2 bytes, then a 2-byte-prefixed body: an extension, a key
 * share) lies in the list from p to end. */
static int seen_before(const uint8_t *p, const uint8_t *end, uint32_t type)
{
	struct tls13_rd r = {p, (size_t)(end - p), 0};
	while (r.n > 0) {
		if (tls13_get(&r, 2) == type)
			return 1;
		tls13_sub(&r, 2);
	}
	return 0;
}

/* key_shares reads the key_share extension e: the shares must be well formed (each non-empty)
 * and name no group twice (illegal_parameter, as the Go engine answers). 0 or the alert. */
static int key_shares(const struct tls13s *s, struct tls13_rd *e, struct hello *h)
{
	struct tls13_rd l = tls13_sub(e, 2);
	const uint8_t *first = l.p;
	if (e->bad || e->n != 0)
		return TLS13_DECODE_ERROR;
	while (l.n > 0) {
		const uint8_t *at = l.p;
		uint32_t g = tls13_get(&l, 2);
		struct tls13_rd ke = tls13_sub(&l, 2);
		if (l.bad || ke.n == 0)
			return TLS13_DECODE_ERROR;
		if (seen_before(first, at, g))
			return TLS13_ILLEGAL_PARAMETER;
		if (g == s->group)
			h->share = ke;
		h->shares++;
	}
	h->has_shares = 1;
	return 0;
}

/* server_name checks the server_name extension's framing (the name is not used). */
static int server_name(struct tls13_rd *e)
{
	struct tls13_rd list = tls13_sub(e, 2);
	if (e->bad || e->n != 0 || list.n == 0)
		return -1;
	while (list.n > 0) {
		struct tls13_rd name;
		tls13_get(&list, 1);
		name = tls13_sub(&list, 2);
		if (list.bad || name.n == 0)
			return -1;
	}
	return 0;
}

/* extension reads one ClientHello extension of type into h; others are ignored. 0 or the alert. */
static int extension(const struct tls13s *s, uint32_t type, struct tls13_rd *e, struct hello *h)
{
	int bad = 0;
	switch (type) {
	case TLS13_EXT_SERVER_NAME:
		bad = server_name(e);
		break;
	case TLS13_EXT_SUPPORTED_VERSIONS:
		bad = u16_list(e, 1, 0x0304, &h->tls13);
		h->has_versions = 1;
		break;
	case TLS13_EXT_SUPPORTED_GROUPS:
		bad = u16_list(e, 2, s->group, &h->group);
		h->has_groups = 1;
		break;
	case TLS13_EXT_SIGNATURE_ALGORITHMS:
		bad = u16_list(e, 2, s->key->scheme, &h->scheme);
		h->has_sigalgs = 1;
		break;
	case TLS13_EXT_KEY_SHARE:
		return key_shares(s, e, h);
	default:
		return 0;
	}
	return bad || e->n != 0 ? TLS13_DECODE_ERROR : 0;
}

/* extensions reads the ClientHello's extensions block r (possibly absent): an extension may
 * appear once (illegal_parameter), pre_shared_key only last (illegal_parameter). */
static int extensions(const struct tls13s *s, struct tls13_rd *r, struct hello *h)
{
	struct tls13_rd exts;
	const uint8_t *first;
	int psk = 0;
	if (r->n == 0)
		return 0;
	exts = tls13_sub(r, 2);
	if (r->bad || r->n != 0)
		return TLS13_DECODE_ERROR;
	first = exts.p;
	while (exts.n > 0) {
		const uint8_t *at = exts.p;
		uint32_t type = tls13_get(&exts, 2);
		struct tls13_rd e = tls13_sub(&exts, 2);
		int rc;
		if (exts.bad)
			return TLS13_DECODE_ERROR;
		if (psk || seen_before(first, at, type))
			return TLS13_ILLEGAL_PARAMETER;
		psk = type == EXT_PRE_SHARED_KEY;
		if ((rc = extension(s, type, &e, h)) != 0)
			return rc;
	}
	return 0;
}

/* parse_hello reads the ClientHello message m (header included) into h. 0 or the alert. */
static int parse_hello(const struct tls13s *s, const uint8_t *m, size_t len, struct hello *h)
{
	struct tls13_rd r = {m + 4, len - 4, 0}, comp;
	memset(h, 0, sizeof *h);
	tls13_get(&r, 2); /* legacy_version: ignored once supported_versions is read (RFC 8446 4.2.1) */
	h->random = r.p;
	tls13_skip(&r, 32);
	h->sid = tls13_sub(&r, 1);
	if (r.bad || h->sid.n > 32 || u16_list(&r, 2, TLS13_AES_128_GCM_SHA256, &h->suite) != 0)
		return TLS13_DECODE_ERROR;
	comp = tls13_sub(&r, 1);
	if (r.bad || comp.n == 0)
		return TLS13_DECODE_ERROR;
	h->comp_null = comp.n == 1 && comp.p[0] == 0;
	return extensions(s, &r, h);
}

/* check_hello applies what the Go engine requires of a first ClientHello, in its order. */
static int check_hello(const struct hello *h)
{
	if (!h->tls13)
		return TLS13_PROTOCOL_VERSION;
	if (!h->comp_null)
		return TLS13_ILLEGAL_PARAMETER;
	if (!h->suite)
		return TLS13_HANDSHAKE_FAILURE;
	if (!h->has_sigalgs)
		return TLS13_MISSING_EXTENSION;
	if (!h->scheme)
		return TLS13_HANDSHAKE_FAILURE;
	if (!h->has_groups || !h->has_shares)
		return TLS13_MISSING_EXTENSION;
	return 0;
}

/* check_second: the second ClientHello carries exactly one key share, for the group asked for,
 * and repeats the first's random, session id and suite (illegal_parameter otherwise). */
static int check_second(const struct tls13s *s, const struct hello *h)
{
	if (h->shares != 1 || h->share.p == NULL)
		return TLS13_ILLEGAL_PARAMETER;
	if (!h->suite || h->sid.n != s->session_id_len || memcmp(h->sid.p, s->session_id, h->sid.n) != 0 ||
	    memcmp(h->random, s->ch1_random, 32) != 0)
		return TLS13_ILLEGAL_PARAMETER;
	return 0;
}

/* server_hello_head writes a ServerHello's (or HelloRetryRequest's) fields up to its extensions'
 * length at m + 4 and returns where the length goes. */
static uint8_t *server_hello_head(const struct tls13s *s, uint8_t *m, const uint8_t random[32])
{
	uint8_t *p = tls13_put(m + 4, 0x0303, 2);
	memcpy(p, random, 32);
	p = tls13_put(p + 32, (uint32_t)s->session_id_len, 1);
	memcpy(p, s->session_id, s->session_id_len);
	p = tls13_put(p + s->session_id_len, TLS13_AES_128_GCM_SHA256, 2);
	p = tls13_put(p, 0, 1);
	return p;
}

static int send_ccs(struct tls13s *s)
{
	static const uint8_t one = 1;
	return send_record(s, TLS13_CT_CCS, &one, 1) == 0 ? 0 : fail(s, TLS13_INTERNAL_ERROR);
}

/* hello_retry answers the first ClientHello m with a HelloRetryRequest for the server's group
 * (RFC 8446 section 4.1.4): the transcript restarts with the message_hash of m. */
static int hello_retry(struct tls13s *s, const uint8_t *m, size_t len, const struct hello *h)
{
	static const uint8_t mh[4] = {TLS13_HT_MESSAGE_HASH, 0, 0, 32};
	uint8_t *r = scratch(s, 4 + 38 + 32 + 4 + 12), *p, *ext;
	if (r == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	memcpy(s->ch1_random, h->random, 32);
	sha256(s->ch1_hash, m, len);
	sha256_update(&s->transcript, mh, sizeof mh);
	sha256_update(&s->transcript, s->ch1_hash, 32);
	ext = server_hello_head(s, r, tls13_hrr_random);
	p = tls13_put(ext + 2, TLS13_EXT_SUPPORTED_VERSIONS, 2);
	p = tls13_put(p, 2, 2);
	p = tls13_put(p, 0x0304, 2);
	p = tls13_put(p, TLS13_EXT_KEY_SHARE, 2);
	p = tls13_put(p, 2, 2);
	p = tls13_put(p, s->group, 2);
	tls13_put(ext, (uint32_t)(p - ext - 2), 2);
	header(r, TLS13_HT_SERVER_HELLO, p);
	if (send_message(s, r) != 0 || (s->session_id_len > 0 && send_ccs(s) != 0))
		return -1;
	s->hrr = 1;
	s->state = TLS13S_WAIT_CH2;
	return 0;
}

/* server_hello answers the client's key share with the server's in a ServerHello and installs
 * the handshake traffic keys (RFC 8446 section 7.1) in both directions. */
static int server_hello(struct tls13s *s, const struct tls13_rd *share)
{
	const struct tls13_kem *k = tls13_kem_of(s->group);
	uint8_t ss[64], th[32], *m, *p, *ext;
	int rc;
	if (share->n != k->ek)
		return fail(s, TLS13_ILLEGAL_PARAMETER);
	if ((m = scratch(s, 4 + 38 + 32 + 4 + 14 + k->ct)) == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	ext = server_hello_head(s, m, s->random);
	p = tls13_put(ext + 2, TLS13_EXT_SUPPORTED_VERSIONS, 2);
	p = tls13_put(p, 2, 2);
	p = tls13_put(p, 0x0304, 2);
	p = tls13_put(p, TLS13_EXT_KEY_SHARE, 2);
	p = tls13_put(p, (uint32_t)k->ct + 4, 2);
	p = tls13_put(p, s->group, 2);
	p = tls13_put(p, (uint32_t)k->ct, 2);
	TIMED(s, TLS13S_PH_KEX, rc = tls13_kem_encaps(s->group, p, ss, share->p, s->kem_rnd, s->ecdh_sk));
	memset(s->kem_rnd, 0, sizeof s->kem_rnd);
	memset(s->ecdh_sk, 0, sizeof s->ecdh_sk);
	if (rc != 0) {
		memset(ss, 0, sizeof ss);
		return fail(s, rc);
	}
	p += k->ct;
	tls13_put(ext, (uint32_t)(p - ext - 2), 2);
	header(m, TLS13_HT_SERVER_HELLO, p);
	if (send_message(s, m) != 0 || (s->session_id_len > 0 && !s->hrr && send_ccs(s) != 0)) {
		memset(ss, 0, sizeof ss);
		return -1;
	}
	transcript_hash(s, th);
	TIMED(s, TLS13S_PH_KS_RECORD, {
		tls13_handshake_secrets(s->hs_secret, s->c_hs, s->s_hs, ss, k->ss, th);
		tls13_set_keys(&s->wr, s->s_hs);
		tls13_set_keys(&s->rd, s->c_hs);
	});
	memset(ss, 0, sizeof ss);
	return 0;
}

/* extensions_and_certificate sends the (empty) EncryptedExtensions and the Certificate with the
 * one leaf, no certificate extensions. */
static int extensions_and_certificate(struct tls13s *s)
{
	uint8_t *m = scratch(s, 6), *p;
	if (m == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	header(m, TLS13_HT_ENCRYPTED_EXTENSIONS, tls13_put(m + 4, 0, 2));
	if (send_message(s, m) != 0)
		return -1;
	if ((m = scratch(s, 4 + 1 + 3 + 3 + s->leaf_len + 2)) == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	p = tls13_put(m + 4, 0, 1); /* certificate_request_context */
	p = tls13_put(p, (uint32_t)s->leaf_len + 5, 3);
	p = tls13_put(p, (uint32_t)s->leaf_len, 3);
	memcpy(p, s->leaf_der, s->leaf_len);
	p = tls13_put(p + s->leaf_len, 0, 2);
	header(m, TLS13_HT_CERTIFICATE, p);
	return send_message(s, m);
}

/* sig_max: the largest signature of the key's scheme. */
static size_t sig_max(const struct tls13s_key *k)
{
	switch (k->scheme) {
	case TLS13S_MLDSA44:
		return MLDSA44_SIGBYTES;
	case TLS13S_MLDSA65:
		return MLDSA65_SIGBYTES;
	case TLS13S_MLDSA87:
		return MLDSA87_SIGBYTES;
	case TLS13S_ED25519:
		return 64;
	case TLS13S_ECDSA_P256:
		return 72;
	}
	return RSA_MAX_BYTES;
}

/* sign_classical signs with an Ed25519, ECDSA-P256 or RSA-PSS key, for the schemes whose signer
 * the build has (tls13s.h). 0 or -1. */
static int sign_classical(struct tls13s *s, uint8_t *sig, size_t *siglen, const uint8_t *msg, size_t len)
{
	const struct tls13s_key *k = s->key;
	uint8_t digest[32];
	int rc = -1;
	switch (k->scheme) {
#if TLS13S_HAVE_ED25519
	case TLS13S_ED25519:
		ed25519_sign(sig, k->u.ed25519.seed, k->u.ed25519.pk, msg, len);
		*siglen = 64;
		return 0;
#endif
#if TLS13S_HAVE_P256
	case TLS13S_ECDSA_P256:
		sha256(digest, msg, len);
		rc = p256_sign_digest(sig, siglen, k->u.p256.d, digest, s->sig_rnd_set ? s->sig_rnd : NULL);
		TLS13_DECLASSIFY(&rc, sizeof rc); /* whether a signature was made, and its DER length: public */
		TLS13_DECLASSIFY(siglen, sizeof *siglen);
		rc = rc == P256_OK ? 0 : -1;
		break;
#endif
#if TLS13S_HAVE_RSA
	case TLS13S_RSA_PSS:
		sha256(digest, msg, len);
		*siglen = k->u.rsa.pub.bytes;
		rc = rsa_pss_sha256_sign_digest(&k->u.rsa, sig, digest, s->sig_rnd) == RSA_OK ? 0 : -1;
		break;
#endif
	default:
		(void)sig, (void)siglen, (void)msg, (void)len;
	}
	memset(digest, 0, sizeof digest);
	return rc;
}

/* sign signs msg with the server's key into sig (*siglen bytes): ML-DSA (pure, empty context,
 * rnd s->sig_rnd) and Ed25519 over msg itself, ECDSA-P256 and RSA-PSS over its SHA-256. The
 * ML-DSA rejection rounds go to s->rounds (1 for the others). 0 or -1. */
static int sign(struct tls13s *s, uint8_t *sig, size_t *siglen, const uint8_t *msg, size_t len)
{
	const struct tls13s_key *k = s->key;
	unsigned int rounds = 1;
	int r = -1;
	switch (k->scheme) {
	case TLS13S_MLDSA44:
		*siglen = MLDSA44_SIGBYTES;
		r = mldsa44_sign(sig, k->u.mldsa.sk, msg, len, NULL, 0, s->sig_rnd, &rounds);
		break;
	case TLS13S_MLDSA65:
		*siglen = MLDSA65_SIGBYTES;
		r = mldsa65_sign(sig, k->u.mldsa.sk, msg, len, NULL, 0, s->sig_rnd, &rounds);
		break;
	case TLS13S_MLDSA87:
		*siglen = MLDSA87_SIGBYTES;
		r = mldsa87_sign(sig, k->u.mldsa.sk, msg, len, NULL, 0, s->sig_rnd, &rounds);
		break;
	default:
		r = sign_classical(s, sig, siglen, msg, len);
	}
	s->rounds = rounds;
	return r;
}

/* certificate_verify signs RFC 8446 section 4.4.3's content (64 spaces, the context string, a
 * zero byte and the transcript hash through Certificate) and sends it. */
static int certificate_verify(struct tls13s *s)
{
	static const char label[] = "TLS 1.3, server CertificateVerify";
	uint8_t content[64 + sizeof label + 32], *m = scratch(s, 8 + sig_max(s->key));
	size_t siglen = 0;
	int r;
	if (m == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	memset(content, 0x20, 64);
	memcpy(content + 64, label, sizeof label); /* the terminating zero is the separator */
	transcript_hash(s, content + 64 + sizeof label);
	TIMED(s, TLS13S_PH_CV, r = sign(s, m + 8, &siglen, content, sizeof content));
	TLS13_DECLASSIFY(&r, sizeof r); /* the signature is public: whether it was made, its bytes */
	TLS13_DECLASSIFY(m + 8, siglen);
	if (r != 0)
		return fail(s, TLS13_INTERNAL_ERROR);
	s->scheme = s->key->scheme;
	tls13_put(m + 4, s->scheme, 2);
	tls13_put(m + 6, (uint32_t)siglen, 2);
	header(m, TLS13_HT_CERTIFICATE_VERIFY, m + 8 + siglen);
	return send_message(s, m);
}

/* server_finished sends the server's Finished, then derives the application traffic secrets
 * (over the transcript through it), installs the server's and keeps the client's, with the
 * client Finished it expects, until that Finished arrives. */
static int server_finished(struct tls13s *s)
{
	uint8_t th[32], s_ap[32], *m = scratch(s, 36);
	if (m == NULL)
		return fail(s, TLS13_INTERNAL_ERROR);
	transcript_hash(s, th);
	TIMED(s, TLS13S_PH_KS_RECORD, tls13_finished_mac(m + 4, s->s_hs, th));
	header(m, TLS13_HT_FINISHED, m + 36);
	if (send_message(s, m) != 0)
		return -1;
	transcript_hash(s, th);
	TIMED(s, TLS13S_PH_KS_RECORD, {
		tls13_app_secrets(s->c_ap, s_ap, s->hs_secret, th);
		tls13_finished_mac(s->c_fin, s->c_hs, th);
		tls13_set_keys(&s->wr, s_ap);
	});
	memset(s_ap, 0, sizeof s_ap);
	memset(s->hs_secret, 0, sizeof s->hs_secret);
	memset(s->s_hs, 0, sizeof s->s_hs);
	memset(s->c_hs, 0, sizeof s->c_hs);
	s->state = TLS13S_WAIT_FIN;
	return 0;
}

/* client_hello handles a ClientHello m (header included): the first, answered with the server's
 * flight or a HelloRetryRequest, or the second, after one. */
static int client_hello(struct tls13s *s, const uint8_t *m, size_t len)
{
	struct hello h;
	int rc = parse_hello(s, m, len, &h);
	if (rc == 0)
		rc = s->state == TLS13S_WAIT_CH ? check_hello(&h) : check_second(s, &h);
	if (rc != 0)
		return fail(s, rc);
	if (s->state == TLS13S_WAIT_CH) {
		memcpy(s->session_id, h.sid.p, h.sid.n);
		s->session_id_len = h.sid.n;
		if (h.share.p == NULL)
			return h.group ? hello_retry(s, m, len, &h) : fail(s, TLS13_HANDSHAKE_FAILURE);
	}
	sha256_update(&s->transcript, m, len);
	if (server_hello(s, &h.share) != 0 || extensions_and_certificate(s) != 0 || certificate_verify(s) != 0)
		return -1;
	return server_finished(s);
}

/* client_finished checks the client's Finished and installs its application traffic key. */
static int client_finished(struct tls13s *s, const uint8_t *m, size_t len)
{
	if (len != 4 + 32)
		return fail(s, TLS13_DECODE_ERROR);
	if (ct_neq(s->c_fin, m + 4, 32))
		return fail(s, TLS13_DECRYPT_ERROR);
	sha256_update(&s->transcript, m, len);
	TIMED(s, TLS13S_PH_KS_RECORD, tls13_set_keys(&s->rd, s->c_ap));
	memset(s->c_ap, 0, sizeof s->c_ap);
	memset(s->c_fin, 0, sizeof s->c_fin);
	s->state = TLS13S_CONNECTED;
	return 0;
}

/* ---- dispatch ---- */

/* handshake_bytes appends handshake bytes to s->hs and handles the whole message there. Every
 * message the server receives precedes a key change, so it must end its record (RFC 8446
 * section 5.1): checked before the message is handled, so that the alert goes out under the
 * keys the client has. */
static int handshake_bytes(struct tls13s *s, const uint8_t *p, size_t len)
{
	size_t mlen;
	if (len > sizeof s->hs - s->hs_len)
		return fail(s, TLS13_UNEXPECTED_MESSAGE);
	memcpy(s->hs + s->hs_len, p, len);
	s->hs_len += len;
	if (s->hs_len < 4)
		return 0;
	mlen = 4 + ((size_t)s->hs[1] << 16 | (size_t)s->hs[2] << 8 | s->hs[3]);
	if (mlen > sizeof s->hs)
		return fail(s, TLS13_DECODE_ERROR);
	if (s->hs_len < mlen)
		return 0;
	if (s->hs_len != mlen)
		return fail(s, TLS13_UNEXPECTED_MESSAGE);
	s->hs_len = 0;
	switch (s->state) {
	case TLS13S_WAIT_CH:
	case TLS13S_WAIT_CH2:
		if (s->hs[0] == TLS13_HT_CLIENT_HELLO)
			return client_hello(s, s->hs, mlen);
		break;
	case TLS13S_WAIT_FIN:
		if (s->hs[0] == TLS13_HT_FINISHED)
			return client_finished(s, s->hs, mlen);
		break;
	default:
		break;
	}
	return fail(s, TLS13_UNEXPECTED_MESSAGE);
}

/* alert takes the client's alert p[0..len). */
static int alert(struct tls13s *s, const uint8_t *p, size_t len)
{
	if (len != 2)
		return fail(s, TLS13_DECODE_ERROR);
	s->alert_received = p[1];
	s->state = p[1] == TLS13_CLOSE_NOTIFY ? TLS13S_CLOSED : TLS13S_FAILED;
	return s->state == TLS13S_CLOSED ? 0 : -1;
}

/* record handles the whole record in s->in. */
static int record(struct tls13s *s)
{
	size_t body = s->in_len - 5, len = body;
	uint8_t type = s->in[0];
	const uint8_t *p = s->in + 5;
	int r;
	if (type == TLS13_CT_CCS && (s->state == TLS13S_WAIT_CH2 || s->state == TLS13S_WAIT_FIN) && body == 1 &&
	    s->in[5] == 1)
		return 0; /* middlebox compatibility (RFC 8446 section 5) */
	if (type == TLS13_CT_ALERT && s->rd.on && s->state == TLS13S_WAIT_FIN)
		return alert(s, p, len); /* a client that could not read the ServerHello */
	if (s->rd.on) {
		if (type != TLS13_CT_APPDATA)
			return fail(s, TLS13_UNEXPECTED_MESSAGE);
		r = tls13_open_record(&s->rd, s->in, body, &type, &len, &s->phase[TLS13S_PH_KS_RECORD]);
		if (r != 0)
			return fail(s, r);
	} else if (type != TLS13_CT_HANDSHAKE && type != TLS13_CT_ALERT) {
		return fail(s, TLS13_UNEXPECTED_MESSAGE);
	}
	if (type == TLS13_CT_ALERT)
		return alert(s, p, len);
	if (type == TLS13_CT_HANDSHAKE)
		return len == 0 ? fail(s, TLS13_UNEXPECTED_MESSAGE) : handshake_bytes(s, p, len);
	if (type == TLS13_CT_APPDATA && s->state == TLS13S_CONNECTED) {
		if (len > sizeof s->app - s->app_len)
			return fail(s, TLS13_INTERNAL_ERROR);
		memcpy(s->app + s->app_len, p, len);
		s->app_len += len;
		return 0;
	}
	return fail(s, TLS13_UNEXPECTED_MESSAGE);
}

int tls13s_input(struct tls13s *s, const uint8_t *p, size_t len)
{
	while (len > 0) {
		size_t want = 5, n;
		if (s->state == TLS13S_FAILED || s->state == TLS13S_CLOSED || s->state == 0)
			return s->state == TLS13S_CLOSED ? 0 : -1;
		if (s->in_len >= 5)
			want = 5 + ((size_t)s->in[3] << 8 | s->in[4]);
		n = want - s->in_len < len ? want - s->in_len : len;
		memcpy(s->in + s->in_len, p, n);
		s->in_len += n;
		p += n;
		len -= n;
		if (s->in_len == 5 && want == 5) {
			size_t body = (size_t)s->in[3] << 8 | s->in[4];
			if (body > TLS13_RECORD_MAX - 5 || body > sizeof s->in - 5)
				return fail(s, TLS13_RECORD_OVERFLOW);
			if (body == 0)
				return fail(s, TLS13_DECODE_ERROR);
			continue;
		}
		if (s->in_len == want) {
			if (record(s) != 0)
				return -1;
			s->in_len = 0;
		}
	}
	return s->state == TLS13S_FAILED ? -1 : 0;
}

int tls13s_write(struct tls13s *s, const uint8_t *p, size_t len)
{
	if (s->state != TLS13S_CONNECTED)
		return -1;
	return send_record(s, TLS13_CT_APPDATA, p, len);
}

int tls13s_close(struct tls13s *s)
{
	static const uint8_t close_notify[2] = {1, TLS13_CLOSE_NOTIFY};
	if (s->state != TLS13S_CONNECTED)
		return -1;
	return send_record(s, TLS13_CT_ALERT, close_notify, 2);
}
