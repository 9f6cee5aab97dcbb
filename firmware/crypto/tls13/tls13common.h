/* What the TLS 1.3 client (tls13c.h) and server (tls13s.h) share: the byte reader and writer,
 * the record layer (AES-128-GCM sealing and opening with the per-record nonce), the key schedule
 * (RFC 8446 section 7.1 over hkdf.h's HKDF-Expand-Label and Derive-Secret) and the groups' key
 * exchanges (the table of share sizes, key generation, encapsulation, decapsulation and the
 * X25519 and P-256 glue). Nothing here keeps state of its own; the callers pass theirs. */
#ifndef PQ_TLS13COMMON_H
#define PQ_TLS13COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "../aesgcm/aesgcm.h"
#include "../mlkem/mlkem.h"
#include "../sha2/sha2.h"

#define TLS13_PLAINTEXT_MAX 16384                       /* 2^14 */
#define TLS13_RECORD_MAX (5 + TLS13_PLAINTEXT_MAX + 256) /* a protected record, header included */
#define TLS13_HS_MAX (TLS13_PLAINTEXT_MAX + 4)          /* one handshake message, header included */

enum {
	TLS13_CT_CCS = 20, TLS13_CT_ALERT = 21, TLS13_CT_HANDSHAKE = 22, TLS13_CT_APPDATA = 23,
	TLS13_HT_CLIENT_HELLO = 1, TLS13_HT_SERVER_HELLO = 2, TLS13_HT_NEW_SESSION_TICKET = 4,
	TLS13_HT_ENCRYPTED_EXTENSIONS = 8, TLS13_HT_CERTIFICATE = 11, TLS13_HT_CERTIFICATE_REQUEST = 13,
	TLS13_HT_CERTIFICATE_VERIFY = 15, TLS13_HT_FINISHED = 20, TLS13_HT_MESSAGE_HASH = 254,
	TLS13_EXT_SERVER_NAME = 0, TLS13_EXT_SUPPORTED_GROUPS = 10, TLS13_EXT_SIGNATURE_ALGORITHMS = 13,
	TLS13_EXT_SUPPORTED_VERSIONS = 43, TLS13_EXT_COOKIE = 44, TLS13_EXT_KEY_SHARE = 51,
	TLS13_AES_128_GCM_SHA256 = 0x1301,
};

/* Alert descriptions (RFC 8446 section 6). */
enum {
	TLS13_CLOSE_NOTIFY = 0,
	TLS13_UNEXPECTED_MESSAGE = 10,
	TLS13_BAD_RECORD_MAC = 20,
	TLS13_RECORD_OVERFLOW = 22,
	TLS13_HANDSHAKE_FAILURE = 40,
	TLS13_BAD_CERTIFICATE = 42,
	TLS13_CERTIFICATE_EXPIRED = 45,
	TLS13_ILLEGAL_PARAMETER = 47,
	TLS13_UNKNOWN_CA = 48,
	TLS13_DECODE_ERROR = 50,
	TLS13_DECRYPT_ERROR = 51,
	TLS13_PROTOCOL_VERSION = 70,
	TLS13_INTERNAL_ERROR = 80,
	TLS13_MISSING_EXTENSION = 109,
	TLS13_UNSUPPORTED_EXTENSION = 110,
};

/* TLS13_DECLASSIFY marks what the client and server make public on purpose as defined for the
 * constant-time check (test/tls13ct.c under valgrind memcheck, built with TLS13C_CT_CHECK):
 * whether a key share could be made and whether the peer's point was refused (an alert says
 * so). */
#ifdef TLS13C_CT_CHECK
#include <valgrind/memcheck.h>
#define TLS13_DECLASSIFY(p, n) VALGRIND_MAKE_MEM_DEFINED(p, n)
#else
#define TLS13_DECLASSIFY(p, n) ((void)(p), (void)(n))
#endif

/* TLS13_TIMED runs stmt and, built with -DTLS13C_PHASE_COUNTER, adds the board counter's
 * advance over it (plat_counter, core/fw.h) to the uint64_t *slot. */
#ifdef TLS13C_PHASE_COUNTER
uint64_t plat_counter(void);
#define TLS13_TIMED(slot, stmt)                                \
	do {                                                   \
		uint64_t t0_ = plat_counter();                 \
		stmt;                                          \
		*(slot) += plat_counter() - t0_;               \
	} while (0)
#else
#define TLS13_TIMED(slot, stmt) \
	do {                    \
		(void)(slot);   \
		stmt;           \
	} while (0)
#endif

/* The ServerHello random of a HelloRetryRequest (SHA-256 of "HelloRetryRequest"). */
extern const uint8_t tls13_hrr_random[32];

/* ---- byte reading: a cursor that fails once it would run past its end ---- */

struct tls13_rd {
	const uint8_t *p;
	size_t n;
	int bad;
};

static inline uint32_t tls13_get(struct tls13_rd *r, int bytes)
{
	uint32_t v = 0;
	int i;
	if (r->bad || r->n < (size_t)bytes) {
		r->bad = 1;
		return 0;
	}
	for (i = 0; i < bytes; i++)
		v = v << 8 | r->p[i];
	r->p += bytes;
	r->n -= (size_t)bytes;
	return v;
}

static inline void tls13_skip(struct tls13_rd *r, size_t n)
{
	if (r->bad || r->n < n) {
		r->bad = 1;
		return;
	}
	r->p += n;
	r->n -= n;
}

/* tls13_sub takes a length-prefixed (lenbytes) vector off r as a cursor of its own. */
static inline struct tls13_rd tls13_sub(struct tls13_rd *r, int lenbytes)
{
	struct tls13_rd s = {NULL, 0, 1};
	size_t n = tls13_get(r, lenbytes);
	if (r->bad || r->n < n) {
		r->bad = 1;
		return s;
	}
	s.p = r->p;
	s.n = n;
	s.bad = 0;
	r->p += n;
	r->n -= n;
	return s;
}

static inline uint8_t *tls13_put(uint8_t *p, uint32_t v, int bytes)
{
	int i;
	for (i = bytes - 1; i >= 0; i--)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

/* ---- records ---- */

/* One direction's traffic protection. */
struct tls13_half {
	aes128gcm_ctx aead;
	uint8_t iv[AESGCM_IVBYTES];
	uint64_t seq;
	int on;
};

/* The output a record is appended to: buf[0..cap), *len bytes in use. ks, when not NULL, is the
 * caller's key-schedule-and-records phase counter (under TLS13C_PHASE_COUNTER). */
struct tls13_out {
	uint8_t *buf;
	size_t cap;
	size_t *len;
	uint64_t *ks;
};

/* tls13_send_record appends one record of type carrying p[0..len) (at most TLS13_PLAINTEXT_MAX;
 * p may lie where the record's body goes), protected under wr when wr->on. legacy_minor is the
 * legacy_record_version's second byte of an unprotected record (1 for a ClientHello, else 3).
 * -1 when it does not fit. */
int tls13_send_record(const struct tls13_out *o, struct tls13_half *wr, uint8_t type, const uint8_t *p, size_t len,
		      uint8_t legacy_minor);

/* tls13_open_record decrypts the protected record rec (its 5-byte header then body bytes) in place
 * and returns the inner content type and length: 0, or the alert (bad_record_mac,
 * unexpected_message for a record of padding only, record_overflow). */
int tls13_open_record(struct tls13_half *rd, uint8_t *rec, size_t body, uint8_t *type, size_t *len, uint64_t *ks);

/* tls13_set_keys installs secret's traffic key and IV in h (sequence number 0). */
void tls13_set_keys(struct tls13_half *h, const uint8_t secret[32]);

/* ---- the key schedule (RFC 8446 section 7.1) ---- */

/* tls13_handshake_secrets: from the shared secret ss and the transcript hash th through the
 * ServerHello, the handshake secret and both handshake traffic secrets. */
void tls13_handshake_secrets(uint8_t hs_secret[32], uint8_t c_hs[32], uint8_t s_hs[32], const uint8_t *ss,
			     size_t sslen, const uint8_t th[32]);

/* tls13_app_secrets: from the handshake secret and the transcript hash th through the server's
 * Finished, both application traffic secrets. */
void tls13_app_secrets(uint8_t c_ap[32], uint8_t s_ap[32], const uint8_t hs_secret[32], const uint8_t th[32]);

/* tls13_finished_mac: HMAC(Expand-Label(base, "finished", "", 32), th). */
void tls13_finished_mac(uint8_t mac[32], const uint8_t base[32], const uint8_t th[32]);

/* tls13_transcript_hash: the hash of the transcript so far (t is not changed). */
void tls13_transcript_hash(const sha256_ctx *t, uint8_t out[32]);

/* ---- groups ---- */

enum {
	TLS13_G_MLKEM512 = 0x0200, TLS13_G_MLKEM768 = 0x0201, TLS13_G_MLKEM1024 = 0x0202,
	TLS13_G_X25519 = 0x001d, TLS13_G_P256 = 0x0017, TLS13_G_X25519MLKEM768 = 0x11ec,
};

/* A group with its key shares' sizes (the client's ek, the server's ct) and the shared secret's. */
struct tls13_kem {
	uint16_t group;
	size_t ek, ct, ss;
	int ecdh; /* needs an ECDH secret */
	int mlkem; /* needs ML-KEM randomness */
};

const struct tls13_kem *tls13_kem_of(uint16_t group);

/* tls13_kem_keygen writes the client's key share to ek, the ML-KEM decapsulation key to dk, from
 * seed (d then z) and the ECDH secret. 0, or -1 for a P-256 scalar out of range. */
int tls13_kem_keygen(uint16_t group, uint8_t *ek, uint8_t *dk, const uint8_t ecdh_sk[32], const uint8_t seed[64]);

/* tls13_kem_decaps computes the shared secret (ss bytes of the group) from the server's share ct.
 * 0, or the alert: illegal_parameter for an ECDH value that is not a valid point (an all-zero
 * X25519 result included), internal_error when ML-KEM decapsulation fails. */
int tls13_kem_decaps(uint16_t group, uint8_t ss[64], const uint8_t *ct, const uint8_t *dk, const uint8_t ecdh_sk[32]);

/* tls13_kem_encaps answers the client's share ek: the server's share into ct, the shared secret
 * into ss, from the ML-KEM m and the ECDH secret. 0, or the alert: illegal_parameter for a share
 * the group refuses (an ML-KEM key that fails the modulus check, an ECDH value that is not a
 * valid point), internal_error for a P-256 scalar out of range. */
int tls13_kem_encaps(uint16_t group, uint8_t *ct, uint8_t ss[64], const uint8_t *ek, const uint8_t m[32],
		     const uint8_t ecdh_sk[32]);

#endif
