/* The sans-I/O TLS 1.3 client; see tls13c.h. */
#include "tls13c.h"

#include "../c25519/c25519.h"
#include "../ct.h"
#include "../hkdf/hkdf.h"
#include "../p256/p256.h"
#include "../pqmem.h"

/* The names the client uses, from tls13common.h. */
enum {
	CT_CCS = TLS13_CT_CCS, CT_ALERT = TLS13_CT_ALERT, CT_HANDSHAKE = TLS13_CT_HANDSHAKE,
	CT_APPDATA = TLS13_CT_APPDATA,
	HT_CLIENT_HELLO = TLS13_HT_CLIENT_HELLO, HT_SERVER_HELLO = TLS13_HT_SERVER_HELLO,
	HT_NEW_SESSION_TICKET = TLS13_HT_NEW_SESSION_TICKET, HT_ENCRYPTED_EXTENSIONS = TLS13_HT_ENCRYPTED_EXTENSIONS,
	HT_CERTIFICATE = TLS13_HT_CERTIFICATE, HT_CERTIFICATE_VERIFY = TLS13_HT_CERTIFICATE_VERIFY,
	HT_FINISHED = TLS13_HT_FINISHED,
	EXT_SERVER_NAME = TLS13_EXT_SERVER_NAME, EXT_SUPPORTED_GROUPS = TLS13_EXT_SUPPORTED_GROUPS,
	EXT_SIGNATURE_ALGORITHMS = TLS13_EXT_SIGNATURE_ALGORITHMS, EXT_SUPPORTED_VERSIONS = TLS13_EXT_SUPPORTED_VERSIONS,
	EXT_KEY_SHARE = TLS13_EXT_KEY_SHARE,
	TLS_AES_128_GCM_SHA256 = TLS13_AES_128_GCM_SHA256,
};

/* TIMED runs stmt and adds the board counter's advance over it to c->phase[p] (tls13c.h). */
#define TIMED(c, p, stmt) TLS13_TIMED(&(c)->phase[p], stmt)

/* ---- alerts and records ---- */

/* send_record appends one record of type to c->out, protected when the write half is on.
 * -1 when it does not fit. */
static int send_record(struct tls13c *c, uint8_t type, const uint8_t *p, size_t len)
{
	const struct tls13_out o = {c->out, sizeof c->out, &c->out_len, &c->phase[TLS13C_PH_KS_RECORD]};
	return tls13_send_record(&o, &c->wr, type, p, len, 1); /* legacy_record_version 0x0301: ClientHello */
}

static int fail(struct tls13c *c, int alert)
{
	uint8_t a[2] = {2, (uint8_t)alert};
	if (c->state != TLS13C_FAILED) {
		c->alert_sent = alert;
		c->state = TLS13C_FAILED;
		send_record(c, CT_ALERT, a, 2);
	}
	return -1;
}

static void transcript_hash(const struct tls13c *c, uint8_t out[32])
{
	tls13_transcript_hash(&c->transcript, out);
}

/* ---- ClientHello ---- */

/* The signature schemes offered: ML-DSA-44/65/87, ed25519, ecdsa_secp256r1_sha256,
 * rsa_pss_rsae_sha256. */
static const uint16_t schemes[] = {0x0904, 0x0905, 0x0906, 0x0807, 0x0403, 0x0804};

/* client_hello writes the ClientHello message (header included) to m and returns its length. */
static size_t client_hello(const struct tls13c *c, uint8_t *m, const uint8_t random[32], const uint8_t *ek,
			   size_t eklen)
{
	size_t sni = strlen(c->server_name), i;
	uint8_t *p = m + 4, *ext;
	p = tls13_put(p, 0x0303, 2);
	memcpy(p, random, 32);
	p += 32;
	p = tls13_put(p, 0, 1);                      /* legacy_session_id */
	p = tls13_put(p, 2, 2);                      /* cipher_suites */
	p = tls13_put(p, TLS_AES_128_GCM_SHA256, 2);
	p = tls13_put(p, 0x0100, 2);                 /* legacy_compression_methods: [null] */
	ext = p;
	p += 2;
	p = tls13_put(p, EXT_SERVER_NAME, 2);
	p = tls13_put(p, (uint32_t)sni + 5, 2);
	p = tls13_put(p, (uint32_t)sni + 3, 2);      /* server_name_list */
	p = tls13_put(p, 0, 1);                      /* host_name */
	p = tls13_put(p, (uint32_t)sni, 2);
	memcpy(p, c->server_name, sni);
	p += sni;
	p = tls13_put(p, EXT_SUPPORTED_VERSIONS, 2);
	p = tls13_put(p, 3, 2);
	p = tls13_put(p, 2, 1);
	p = tls13_put(p, 0x0304, 2);
	p = tls13_put(p, EXT_SUPPORTED_GROUPS, 2);
	p = tls13_put(p, 4, 2);
	p = tls13_put(p, 2, 2);
	p = tls13_put(p, c->group, 2);
	p = tls13_put(p, EXT_SIGNATURE_ALGORITHMS, 2);
	p = tls13_put(p, 2 + 2 * sizeof schemes / sizeof schemes[0], 2);
	p = tls13_put(p, 2 * sizeof schemes / sizeof schemes[0], 2);
	for (i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		p = tls13_put(p, schemes[i], 2);
	p = tls13_put(p, EXT_KEY_SHARE, 2);
	p = tls13_put(p, (uint32_t)eklen + 6, 2);
	p = tls13_put(p, (uint32_t)eklen + 4, 2);    /* client_shares */
	p = tls13_put(p, c->group, 2);
	p = tls13_put(p, (uint32_t)eklen, 2);
	memcpy(p, ek, eklen);
	p += eklen;
	tls13_put(ext, (uint32_t)(p - ext - 2), 2);
	m[0] = HT_CLIENT_HELLO;
	tls13_put(m + 1, (uint32_t)(p - m - 4), 3);
	return (size_t)(p - m);
}

/* tls13c_start makes the key share at c->hs + 8192, beside the ClientHello. */
_Static_assert(TLS13C_HS_BUF >= 8192 + MLKEM1024_EKBYTES, "TLS13C_HS_BUF too small for the key share");

int tls13c_start(struct tls13c *c, const struct tls13c_config *cfg)
{
	const struct tls13_kem *k = tls13_kem_of(cfg->group);
	uint8_t *ek;
	size_t n;
	int r;
	memset(c, 0, sizeof *c);
	c->alert_sent = c->alert_received = -1;
	if (k == NULL || cfg->server_name == NULL || strlen(cfg->server_name) == 0 ||
	    strlen(cfg->server_name) > 255 || (k->ecdh && cfg->ecdh_secret == NULL))
		return -1;
	TIMED(c, TLS13C_PH_CHAIN, r = x509_parse(&c->ca, cfg->ca_der, cfg->ca_len));
	if (r != X509_OK || c->ca.spki_alg == X509_ALG_OTHER)
		return -1;
	c->group = cfg->group;
	c->server_name = cfg->server_name;
	c->now = cfg->now;
	if (k->ecdh)
		memcpy(c->ecdh_sk, cfg->ecdh_secret, sizeof c->ecdh_sk);
	/* The key share is made in the handshake buffer, free until the ServerHello. */
	ek = c->hs + 8192;
	TIMED(c, TLS13C_PH_KEX, r = tls13_kem_keygen(c->group, ek, c->dk, c->ecdh_sk, cfg->kem_seed));
	if (r != 0) {
		memset(c->ecdh_sk, 0, sizeof c->ecdh_sk);
		return -1;
	}
	n = client_hello(c, c->hs, cfg->random, ek, k->ek);
	sha256_init(&c->transcript);
	sha256_update(&c->transcript, c->hs, n);
	if (send_record(c, CT_HANDSHAKE, c->hs, n) != 0)
		return -1;
	memset(c->hs, 0, 8192 + k->ek);
	c->state = TLS13C_WAIT_SH;
	return 0;
}

/* ---- ServerHello and the handshake secrets ---- */

/* server_hello_exts reads the ServerHello's extensions: supported_versions must say TLS 1.3 and
 * key_share carry a ciphertext of the group's size; anything else is unsupported_extension. */
static int server_hello_exts(struct tls13c *c, struct tls13_rd *exts, const struct tls13_kem *k, struct tls13_rd *ct)
{
	int have_version = 0, have_share = 0;
	while (exts->n > 0) {
		uint32_t type = tls13_get(exts, 2);
		struct tls13_rd e = tls13_sub(exts, 2);
		if (exts->bad)
			return fail(c, TLS13C_DECODE_ERROR);
		if (type == EXT_SUPPORTED_VERSIONS && !have_version) {
			if (tls13_get(&e, 2) != 0x0304 || e.bad || e.n != 0)
				return fail(c, e.bad || e.n != 0 ? TLS13C_DECODE_ERROR : TLS13C_ILLEGAL_PARAMETER);
			have_version = 1;
		} else if (type == EXT_KEY_SHARE && !have_share) {
			uint32_t g = tls13_get(&e, 2);
			*ct = tls13_sub(&e, 2);
			if (e.bad || e.n != 0)
				return fail(c, TLS13C_DECODE_ERROR);
			if (g != c->group || ct->n != k->ct)
				return fail(c, TLS13C_ILLEGAL_PARAMETER);
			have_share = 1;
		} else {
			return fail(c, TLS13C_UNSUPPORTED_EXTENSION);
		}
	}
	if (!have_version)
		return fail(c, TLS13C_PROTOCOL_VERSION);
	if (!have_share)
		return fail(c, TLS13C_MISSING_EXTENSION);
	return 0;
}

/* handshake_keys runs the key schedule from the shared secret to the handshake traffic secrets
 * (RFC 8446 section 7.1) over the transcript ClientHello..ServerHello, and installs their keys. */
static void handshake_keys(struct tls13c *c, const uint8_t *ss, size_t sslen)
{
	uint8_t th[32];
	transcript_hash(c, th);
	tls13_handshake_secrets(c->hs_secret, c->c_hs, c->s_hs, ss, sslen, th);
	tls13_set_keys(&c->rd, c->s_hs);
}

/* server_hello handles the ServerHello message m (header included). */
static int server_hello(struct tls13c *c, const uint8_t *m, size_t len)
{
	const struct tls13_kem *k = tls13_kem_of(c->group);
	struct tls13_rd r = {m + 4, len - 4, 0}, sid, exts, ct = {NULL, 0, 1};
	const uint8_t *random;
	uint32_t version, suite, comp;
	uint8_t ss[64];
	int rc;
	version = tls13_get(&r, 2);
	random = r.p;
	tls13_skip(&r, 32);
	sid = tls13_sub(&r, 1);
	suite = tls13_get(&r, 2);
	comp = tls13_get(&r, 1);
	exts = tls13_sub(&r, 2);
	if (r.bad || r.n != 0)
		return fail(c, TLS13C_DECODE_ERROR);
	if (memcmp(random, tls13_hrr_random, 32) == 0) /* one group offered: nothing to retry with */
		return fail(c, TLS13C_ILLEGAL_PARAMETER);
	if (version != 0x0303 || sid.n != 0 || comp != 0 || suite != TLS_AES_128_GCM_SHA256)
		return fail(c, TLS13C_ILLEGAL_PARAMETER);
	if (server_hello_exts(c, &exts, k, &ct) != 0)
		return -1;
	sha256_update(&c->transcript, m, len);
	TIMED(c, TLS13C_PH_KEX, rc = tls13_kem_decaps(c->group, ss, ct.p, c->dk, c->ecdh_sk));
	memset(c->dk, 0, sizeof c->dk);
	memset(c->ecdh_sk, 0, sizeof c->ecdh_sk);
	if (rc != 0) {
		memset(ss, 0, sizeof ss);
		return fail(c, rc);
	}
	TIMED(c, TLS13C_PH_KS_RECORD, handshake_keys(c, ss, k->ss));
	memset(ss, 0, sizeof ss);
	c->state = TLS13C_WAIT_EE;
	return 0;
}

/* ---- the server's encrypted flight ---- */

static int encrypted_extensions(struct tls13c *c, const uint8_t *m, size_t len)
{
	struct tls13_rd r = {m + 4, len - 4, 0}, exts = tls13_sub(&r, 2);
	if (r.bad || r.n != 0)
		return fail(c, TLS13C_DECODE_ERROR);
	while (exts.n > 0) {
		uint32_t type = tls13_get(&exts, 2);
		tls13_sub(&exts, 2);
		if (exts.bad)
			return fail(c, TLS13C_DECODE_ERROR);
		/* Only what the ClientHello offered may come back (RFC 8446 section 4.2); of ours,
		 * server_name (empty) and supported_groups belong in EncryptedExtensions. */
		if (type != EXT_SERVER_NAME && type != EXT_SUPPORTED_GROUPS)
			return fail(c, TLS13C_UNSUPPORTED_EXTENSION);
	}
	sha256_update(&c->transcript, m, len);
	c->state = TLS13C_WAIT_CERT;
	return 0;
}

/* sig_verify checks sig over msg under the key pk of algorithm alg: 0 when it verifies.
 * ML-DSA (empty context) and Ed25519 sign msg itself, ECDSA its SHA-256 (strict DER); RSA is
 * PKCS #1 v1.5 with SHA-256 for a certificate (cert != 0), else PSS with MGF1-SHA-256 and a
 * 32-byte salt, under *rsa (the key read from pk beforehand). */
static int sig_verify(enum x509_alg alg, const uint8_t *sig, size_t siglen, const uint8_t *pk, size_t pklen,
		      const struct rsa_pubkey *rsa, const uint8_t *msg, size_t msglen, int cert)
{
	switch (alg) {
	case X509_ALG_MLDSA44:
		return siglen == MLDSA44_SIGBYTES ? mldsa44_verify(sig, pk, msg, msglen, NULL, 0) : -1;
	case X509_ALG_MLDSA65:
		return siglen == MLDSA65_SIGBYTES ? mldsa65_verify(sig, pk, msg, msglen, NULL, 0) : -1;
	case X509_ALG_MLDSA87:
		return siglen == MLDSA87_SIGBYTES ? mldsa87_verify(sig, pk, msg, msglen, NULL, 0) : -1;
	case X509_ALG_ED25519:
		return pklen == ED25519_PUBLICKEYBYTES ? ed25519_verify(sig, siglen, pk, msg, msglen) : -1;
	case X509_ALG_P256:
		return p256_verify(pk, pklen, msg, msglen, sig, siglen) == P256_OK ? 0 : -1;
	case X509_ALG_RSA:
		if (cert)
			return rsa_pkcs1_sha256_verify(rsa, msg, msglen, sig, siglen) == RSA_OK ? 0 : -1;
		return rsa_pss_sha256_verify(rsa, msg, msglen, sig, siglen) == RSA_OK ? 0 : -1;
	default:
		return -1;
	}
}

/* leaf_signed checks the leaf's signature under the CA's key; an RSA CA's key is read here, on
 * the stack (it is used once). 0 when it verifies. */
static int leaf_signed(const struct x509_cert *ca, const struct x509_cert *leaf)
{
	struct rsa_pubkey rsa;
	if (ca->spki_alg == X509_ALG_RSA && rsa_pubkey_parse(&rsa, ca->pubkey.p, ca->pubkey.n) != RSA_OK)
		return -1;
	return sig_verify(ca->spki_alg, leaf->sig.p, leaf->sig.n, ca->pubkey.p, ca->pubkey.n, &rsa, leaf->tbs.p,
			  leaf->tbs.n, 1);
}

/* check_leaf checks the leaf against the trust anchor: issued by it (issuer name and signature
 * over the TBS with the CA's algorithm), both valid at now, the server name among its dNSNames,
 * an RSA leaf's key readable (kept in c->leaf_rsa for CertificateVerify). The alerts are the Go
 * engine's: unknown_ca, certificate_expired, bad_certificate. */
static int check_leaf(struct tls13c *c, const struct x509_cert *leaf)
{
	const struct x509_cert *ca = &c->ca;
	if (leaf->spki_alg == X509_ALG_OTHER || leaf->pubkey.n > sizeof c->leaf_pk)
		return fail(c, TLS13C_BAD_CERTIFICATE);
	if (leaf->spki_alg == X509_ALG_RSA && rsa_pubkey_parse(&c->leaf_rsa, leaf->pubkey.p, leaf->pubkey.n) != RSA_OK)
		return fail(c, TLS13C_BAD_CERTIFICATE);
	if (leaf->issuer.n != ca->subject.n || memcmp(leaf->issuer.p, ca->subject.p, ca->subject.n) != 0 ||
	    leaf->sig_alg != ca->spki_alg || leaf_signed(ca, leaf) != 0)
		return fail(c, TLS13C_UNKNOWN_CA);
	if (x509_valid_at(leaf, c->now) != 0 || x509_valid_at(ca, c->now) != 0)
		return fail(c, TLS13C_CERTIFICATE_EXPIRED);
	if (!x509_match_host(leaf, c->server_name, strlen(c->server_name)))
		return fail(c, TLS13C_BAD_CERTIFICATE);
	return 0;
}

static int certificate(struct tls13c *c, const uint8_t *m, size_t len)
{
	struct tls13_rd r = {m + 4, len - 4, 0}, ctx, list, entry, exts;
	struct x509_cert leaf;
	int rc;
	ctx = tls13_sub(&r, 1);
	list = tls13_sub(&r, 3);
	if (r.bad || r.n != 0 || ctx.n != 0)
		return fail(c, r.bad || r.n != 0 ? TLS13C_DECODE_ERROR : TLS13C_ILLEGAL_PARAMETER);
	entry = tls13_sub(&list, 3);
	exts = tls13_sub(&list, 2);
	if (list.bad || entry.n == 0)
		return fail(c, TLS13C_DECODE_ERROR);
	(void)exts;
	TIMED(c, TLS13C_PH_CHAIN, rc = x509_parse(&leaf, entry.p, entry.n));
	if (rc != X509_OK)
		return fail(c, TLS13C_BAD_CERTIFICATE);
	TIMED(c, TLS13C_PH_CHAIN, rc = check_leaf(c, &leaf));
	if (rc != 0)
		return -1;
	c->leaf_alg = leaf.spki_alg;
	c->leaf_pk_len = leaf.pubkey.n;
	memcpy(c->leaf_pk, leaf.pubkey.p, leaf.pubkey.n);
	sha256_update(&c->transcript, m, len);
	c->state = TLS13C_WAIT_CV;
	return 0;
}

/* scheme_alg: the leaf key's algorithm of an offered SignatureScheme, else X509_ALG_OTHER. */
static enum x509_alg scheme_alg(uint32_t scheme)
{
	switch (scheme) {
	case 0x0904:
		return X509_ALG_MLDSA44;
	case 0x0905:
		return X509_ALG_MLDSA65;
	case 0x0906:
		return X509_ALG_MLDSA87;
	case 0x0807:
		return X509_ALG_ED25519;
	case 0x0403:
		return X509_ALG_P256;
	case 0x0804:
		return X509_ALG_RSA;
	}
	return X509_ALG_OTHER;
}

/* certificate_verify checks the server's signature over RFC 8446 section 4.4.3's content: 64
 * spaces, the context string, a zero byte and the transcript hash through Certificate. */
static int certificate_verify(struct tls13c *c, const uint8_t *m, size_t len)
{
	static const char label[] = "TLS 1.3, server CertificateVerify";
	uint8_t content[64 + sizeof label + 32];
	struct tls13_rd rd = {m + 4, len - 4, 0}, sig;
	uint32_t scheme = tls13_get(&rd, 2);
	int r;
	sig = tls13_sub(&rd, 2);
	if (rd.bad || rd.n != 0)
		return fail(c, TLS13C_DECODE_ERROR);
	if (scheme_alg(scheme) != c->leaf_alg) /* not offered, or not the leaf key's */
		return fail(c, TLS13C_ILLEGAL_PARAMETER);
	memset(content, 0x20, 64);
	memcpy(content + 64, label, sizeof label); /* the terminating zero is the separator */
	transcript_hash(c, content + 64 + sizeof label);
	TIMED(c, TLS13C_PH_CV, r = sig_verify(c->leaf_alg, sig.p, sig.n, c->leaf_pk, c->leaf_pk_len, &c->leaf_rsa,
					      content, sizeof content, 0));
	if (r != 0)
		return fail(c, TLS13C_DECRYPT_ERROR);
	c->scheme = (uint16_t)scheme;
	sha256_update(&c->transcript, m, len);
	c->state = TLS13C_WAIT_FIN;
	return 0;
}

/* finished_mac: HMAC(Expand-Label(base, "finished", "", 32), transcript hash). */
static void finished_mac(const struct tls13c *c, uint8_t mac[32], const uint8_t base[32])
{
	uint8_t th[32];
	transcript_hash(c, th);
	tls13_finished_mac(mac, base, th);
}

/* finished checks the server's Finished, sends the client's, and moves both directions to the
 * application traffic keys (RFC 8446 section 7.1: derived from the transcript through the
 * server's Finished). */
static int finished(struct tls13c *c, const uint8_t *m, size_t len)
{
	uint8_t mac[32], msg[4 + 32], th[32], c_ap[32], s_ap[32];
	if (len != 4 + 32)
		return fail(c, TLS13C_DECODE_ERROR);
	TIMED(c, TLS13C_PH_KS_RECORD, finished_mac(c, mac, c->s_hs));
	if (ct_neq(mac, m + 4, 32))
		return fail(c, TLS13C_DECRYPT_ERROR);
	sha256_update(&c->transcript, m, len);
	transcript_hash(c, th);
	TIMED(c, TLS13C_PH_KS_RECORD, {
		tls13_app_secrets(c_ap, s_ap, c->hs_secret, th);
		finished_mac(c, msg + 4, c->c_hs);
		tls13_set_keys(&c->wr, c->c_hs);
	});
	msg[0] = HT_FINISHED;
	tls13_put(msg + 1, 32, 3);
	sha256_update(&c->transcript, msg, sizeof msg);
	if (send_record(c, CT_HANDSHAKE, msg, sizeof msg) != 0)
		return fail(c, TLS13C_INTERNAL_ERROR);
	TIMED(c, TLS13C_PH_KS_RECORD, {
		tls13_set_keys(&c->wr, c_ap);
		tls13_set_keys(&c->rd, s_ap);
	});
	memset(c_ap, 0, sizeof c_ap);
	memset(s_ap, 0, sizeof s_ap);
	memset(c->hs_secret, 0, sizeof c->hs_secret);
	c->state = TLS13C_CONNECTED;
	return 0;
}

/* ---- dispatch ---- */

/* handshake_message handles one whole message m (header included) in the current state. */
static int handshake_message(struct tls13c *c, const uint8_t *m, size_t len)
{
	static const uint8_t expected[] = {
		[TLS13C_WAIT_SH] = HT_SERVER_HELLO, [TLS13C_WAIT_EE] = HT_ENCRYPTED_EXTENSIONS,
		[TLS13C_WAIT_CERT] = HT_CERTIFICATE, [TLS13C_WAIT_CV] = HT_CERTIFICATE_VERIFY,
		[TLS13C_WAIT_FIN] = HT_FINISHED,
	};
	if (c->state == TLS13C_CONNECTED && m[0] == HT_NEW_SESSION_TICKET)
		return 0; /* no resumption: tickets are read and dropped */
	if (c->state > TLS13C_WAIT_FIN || m[0] != expected[c->state])
		return fail(c, TLS13C_UNEXPECTED_MESSAGE);
	switch (c->state) {
	case TLS13C_WAIT_SH:
		return server_hello(c, m, len);
	case TLS13C_WAIT_EE:
		return encrypted_extensions(c, m, len);
	case TLS13C_WAIT_CERT:
		return certificate(c, m, len);
	case TLS13C_WAIT_CV:
		return certificate_verify(c, m, len);
	default:
		return finished(c, m, len);
	}
	return fail(c, TLS13C_UNEXPECTED_MESSAGE);
}

/* handshake_bytes appends handshake bytes to c->hs and handles every whole message there. A
 * message may not straddle a key change: the ServerHello and the server's Finished must end
 * their record (RFC 8446 section 5.1). */
static int handshake_bytes(struct tls13c *c, const uint8_t *p, size_t len)
{
	size_t off = 0, mlen;
	if (len > sizeof c->hs - c->hs_len)
		return fail(c, TLS13C_UNEXPECTED_MESSAGE);
	memcpy(c->hs + c->hs_len, p, len);
	c->hs_len += len;
	while (c->hs_len - off >= 4) {
		enum tls13c_state before = c->state;
		mlen = 4 + ((size_t)c->hs[off + 1] << 16 | (size_t)c->hs[off + 2] << 8 | c->hs[off + 3]);
		if (mlen > sizeof c->hs)
			return fail(c, TLS13C_DECODE_ERROR);
		if (c->hs_len - off < mlen)
			break;
		if (handshake_message(c, c->hs + off, mlen) != 0)
			return -1;
		off += mlen;
		if ((before == TLS13C_WAIT_SH || before == TLS13C_WAIT_FIN) && off != c->hs_len)
			return fail(c, TLS13C_UNEXPECTED_MESSAGE);
	}
	memmove(c->hs, c->hs + off, c->hs_len - off);
	c->hs_len -= off;
	return 0;
}

/* open_record decrypts the protected record c->in in place and returns the inner content type
 * and length, or fails with bad_record_mac. */
static int open_record(struct tls13c *c, size_t body, uint8_t *type, size_t *len)
{
	int r = tls13_open_record(&c->rd, c->in, body, type, len, &c->phase[TLS13C_PH_KS_RECORD]);
	return r == 0 ? 0 : fail(c, r);
}

/* record handles the whole record in c->in. */
static int record(struct tls13c *c)
{
	size_t body = c->in_len - 5, len = body;
	uint8_t type = c->in[0];
	const uint8_t *p = c->in + 5;
	if (type == CT_CCS && c->state < TLS13C_CONNECTED && body == 1 && c->in[5] == 1)
		return 0; /* middlebox compatibility (RFC 8446 section 5) */
	if (c->rd.on) {
		if (type != CT_APPDATA)
			return fail(c, TLS13C_UNEXPECTED_MESSAGE);
		if (open_record(c, body, &type, &len) != 0)
			return -1;
	} else if (type != CT_HANDSHAKE && type != CT_ALERT) {
		return fail(c, TLS13C_UNEXPECTED_MESSAGE);
	}
	if (type == CT_ALERT) {
		if (len != 2)
			return fail(c, TLS13C_DECODE_ERROR);
		c->alert_received = p[1];
		c->state = p[1] == TLS13C_CLOSE_NOTIFY ? TLS13C_CLOSED : TLS13C_FAILED;
		return c->state == TLS13C_CLOSED ? 0 : -1;
	}
	if (type == CT_HANDSHAKE)
		return len == 0 ? fail(c, TLS13C_UNEXPECTED_MESSAGE) : handshake_bytes(c, p, len);
	if (type == CT_APPDATA && c->state == TLS13C_CONNECTED) {
		if (len > sizeof c->app - c->app_len)
			return fail(c, TLS13C_INTERNAL_ERROR);
		memcpy(c->app + c->app_len, p, len);
		c->app_len += len;
		return 0;
	}
	return fail(c, TLS13C_UNEXPECTED_MESSAGE);
}

int tls13c_input(struct tls13c *c, const uint8_t *p, size_t len)
{
	while (len > 0) {
		size_t want = 5, n;
		if (c->state == TLS13C_FAILED || c->state == TLS13C_CLOSED)
			return c->state == TLS13C_FAILED ? -1 : 0;
		if (c->in_len >= 5)
			want = 5 + ((size_t)c->in[3] << 8 | c->in[4]);
		n = want - c->in_len < len ? want - c->in_len : len;
		memcpy(c->in + c->in_len, p, n);
		c->in_len += n;
		p += n;
		len -= n;
		if (c->in_len == 5 && want == 5) {
			size_t body = (size_t)c->in[3] << 8 | c->in[4];
			if (body > TLS13C_RECORD_MAX - 5 || body > sizeof c->in - 5)
				return fail(c, TLS13C_RECORD_OVERFLOW);
			if (body == 0)
				return fail(c, TLS13C_DECODE_ERROR);
			continue;
		}
		if (c->in_len == want) {
			if (record(c) != 0)
				return -1;
			c->in_len = 0;
		}
	}
	return c->state == TLS13C_FAILED ? -1 : 0;
}

int tls13c_write(struct tls13c *c, const uint8_t *p, size_t len)
{
	if (c->state != TLS13C_CONNECTED)
		return -1;
	return send_record(c, CT_APPDATA, p, len);
}
