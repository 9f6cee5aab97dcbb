/* The project's TLS 1.3 server (RFC 8446), sans I/O, beside the client (tls13c.h) and sharing its
 * record layer, key schedule and key exchanges (tls13common.h): the caller feeds it the bytes
 * the client sent and sends the bytes it leaves in its output; it never reads a clock or a
 * random source (the ServerHello random, the ML-KEM encapsulation's m, the ECDH private value and
 * the signature's randomness are the caller's).
 *
 * What it speaks: TLS_AES_128_GCM_SHA256 only; one group, the configured one, of those the
 * client speaks (ML-KEM-512/768/1024, X25519, secp256r1, X25519MLKEM768: the server's share is
 * the encapsulation's ciphertext, its ECDH public value, or for the hybrid the ML-KEM-768
 * ciphertext then the X25519 value, the shared secret the ML-KEM secret then the X25519 one);
 * one certificate, the configured leaf, and one signature scheme, its key's: mldsa44/65/87
 * (0x0904/05/06, pure ML-DSA, empty context, the configured rnd), ed25519 (0x0807),
 * ecdsa_secp256r1_sha256 (0x0403, RFC 6979 or hedged) or rsa_pss_rsae_sha256 (0x0804, the
 * configured salt). A ClientHello must offer TLS 1.3 in supported_versions (legacy_version is
 * then ignored, RFC 8446 section 4.2.1), TLS_AES_128_GCM_SHA256, only the null compression
 * method, the key's scheme in signature_algorithms, and supported_groups and key_share; its
 * legacy_session_id (up to 32 bytes) is echoed, server_name is accepted (its framing checked, the
 * name neither used nor acknowledged) and unknown extensions are ignored. When the client sent
 * no share for the group but offers it in supported_groups, the server answers with a
 * HelloRetryRequest (RFC 8446 section 4.1.4: the special random, the group asked for, the
 * transcript's first ClientHello replaced by its message_hash) and the second ClientHello must
 * carry exactly that one share and repeat the first's random, session id and suite. As the Go
 * engine does, a non-empty session id gets a ChangeCipherSpec after the HelloRetryRequest or the
 * ServerHello (RFC 8446 appendix D.4), and the client's ChangeCipherSpec is read and dropped.
 * EncryptedExtensions is empty; no CertificateRequest, no NewSessionTicket.
 *
 * What it refuses, with the alert the project's Go engine (package tls13) sends for the same
 * ClientHello, in its order of checks: no TLS 1.3 in supported_versions (or none),
 * protocol_version; a compression method besides null, illegal_parameter; no
 * TLS_AES_128_GCM_SHA256, handshake_failure; no signature_algorithms, missing_extension; the
 * key's scheme not in it, handshake_failure; no supported_groups or key_share,
 * missing_extension; the group neither shared nor supported, handshake_failure. Malformed fields
 * (a session id over 32 bytes, an empty or odd list, an empty key share) are decode_error; a
 * duplicate extension or key share, pre_shared_key not last, a key share of the wrong size, an
 * ML-KEM key that fails the modulus check, an ECDH value that is not a valid point (X25519's
 * all-zero result included), a second ClientHello other than asked for, illegal_parameter; a
 * ClientHello or Finished that does not end its record (RFC 8446 section 5.1), anything out of
 * order, unexpected_message; a client Finished that does not verify, decrypt_error; a record
 * that does not open, bad_record_mac. A P-256 scalar outside [1, n-1] (the caller's, about 2^-32
 * of draws) fails the handshake with internal_error. No PSK, early data, client certificates,
 * KeyUpdate or record_size_limit.
 *
 * Every failure sends one fatal alert and leaves the server in TLS13S_FAILED. A client's alert is
 * taken as the client's does (close_notify: TLS13S_CLOSED), and while the server waits for the
 * client's Finished also in the clear (a client that could not read the ServerHello). The stack
 * it needs is its signer's: about 20 KB for ML-DSA-87 on the Cortex-M boards (make tls-report). */
#ifndef PQ_TLS13S_H
#define PQ_TLS13S_H

#include <stddef.h>
#include <stdint.h>

#include "tls13common.h"
#include "../mldsa/mldsa.h"
#include "../rsa/rsa.h"
#include "../sha2/sha2.h"
#include "../x509/x509.h"

/* Which classical signers the build has (all by default; -DTLS13S_HAVE_RSA=0 and the like
 * leave one out): a scheme whose signer is absent is refused by tls13s_key_set. */
#ifndef TLS13S_HAVE_ED25519
#define TLS13S_HAVE_ED25519 1
#endif
#ifndef TLS13S_HAVE_P256
#define TLS13S_HAVE_P256 1
#endif
#ifndef TLS13S_HAVE_RSA
#define TLS13S_HAVE_RSA 1
#endif

/* The buffers, as the client's (tls13c.h): the protocol's largest by default, smaller with
 * -DTLS13S_IN_BUF=... on a board short of RAM. The output holds the server's whole flight
 * (ServerHello to Finished: about 14 KB for ML-KEM-1024 with ML-DSA-87). */
#ifndef TLS13S_IN_BUF
#define TLS13S_IN_BUF TLS13_RECORD_MAX /* the record being received */
#endif
#ifndef TLS13S_HS_BUF
#define TLS13S_HS_BUF TLS13_HS_MAX /* handshake bytes not yet consumed */
#endif
#ifndef TLS13S_OUT_BUF
#define TLS13S_OUT_BUF (TLS13_RECORD_MAX + 64) /* bytes for the caller to send */
#endif
#ifndef TLS13S_APP_BUF
#define TLS13S_APP_BUF TLS13_PLAINTEXT_MAX /* application data received */
#endif

enum tls13s_state {
	TLS13S_WAIT_CH = 1, /* the ClientHello */
	TLS13S_WAIT_CH2,    /* the second ClientHello, after a HelloRetryRequest */
	TLS13S_WAIT_FIN,    /* the client's Finished */
	TLS13S_CONNECTED,
	TLS13S_FAILED,
	TLS13S_CLOSED, /* the client sent close_notify */
};

/* The phases a board reports, as the client's (tls13c.h), under -DTLS13C_PHASE_COUNTER: key
 * exchange (ML-KEM encapsulation, the X25519 and P-256 public values and shared secrets),
 * CertificateVerify (the signature), key schedule and records (HKDF, HMAC, AES-GCM key setup,
 * sealing and opening); the rest of a call is its total minus these. */
enum tls13s_phase {
	TLS13S_PH_KEX,
	TLS13S_PH_CV,
	TLS13S_PH_KS_RECORD,
	TLS13S_PHASES,
};

/* The schemes (TLS SignatureScheme code points). */
enum {
	TLS13S_MLDSA44 = 0x0904,
	TLS13S_MLDSA65 = 0x0905,
	TLS13S_MLDSA87 = 0x0906,
	TLS13S_ED25519 = 0x0807,
	TLS13S_ECDSA_P256 = 0x0403,
	TLS13S_RSA_PSS = 0x0804,
};

/* The server's private key, as tls13s_key_set reads it from a key blob. */
struct tls13s_key {
	uint16_t scheme;
	union {
		struct {
			uint8_t pk[MLDSA87_PKBYTES];
			uint8_t sk[MLDSA87_SKBYTES];
		} mldsa; /* of the scheme's set: the first *_PKBYTES / *_SKBYTES bytes */
		struct {
			uint8_t seed[32], pk[32];
		} ed25519;
		struct {
			uint8_t d[32], pub[65];
		} p256;
#if TLS13S_HAVE_RSA
		struct rsa_privkey rsa;
#endif
	} u;
};

/* tls13s_key_set reads a key blob: the scheme (2 bytes, big-endian) then its material:
 * ML-DSA: xi (32 bytes, FIPS 204 KeyGen's seed), expanded with *_keygen_internal; Ed25519: the
 * 32-byte seed (RFC 8032); ECDSA-P256: d (32 bytes, big-endian, in [1, n-1]); RSA-PSS: the
 * rsa_privkey_set blob. The public key is derived here (at provisioning, not timed). 0, or -1
 * (k zeroed) for a blob it cannot use. */
int tls13s_key_set(struct tls13s_key *k, const uint8_t *blob, size_t len);

/* tls13s_key_matches: 1 when the leaf certificate's key is k's public key (its algorithm the
 * scheme's and its bytes the derived key's), else 0. */
int tls13s_key_matches(const struct tls13s_key *k, const struct x509_cert *leaf);

/* tls13s_key_wipe zeroes k. */
void tls13s_key_wipe(struct tls13s_key *k);

struct tls13s_config {
	uint16_t group;                /* the one group the server accepts (tls13c.h's list) */
	const struct tls13s_key *key;  /* its scheme is the CertificateVerify's; must outlive s */
	const uint8_t *leaf_der;       /* the one certificate sent; must outlive s */
	size_t leaf_len;
	const uint8_t *random;         /* 32 bytes: the ServerHello random */
	const uint8_t *kem_rnd;        /* 32 bytes: ML-KEM encapsulation's m (ML-KEM groups) */
	const uint8_t *ecdh_secret;    /* 32 bytes: the X25519 scalar or P-256 d (groups that need it) */
	/* 32 bytes: ML-DSA's rnd (all zero: deterministic), the ECDSA hedge (NULL: RFC 6979), the
	 * PSS salt; NULL reads as 32 zero bytes for ML-DSA and RSA-PSS. */
	const uint8_t *sig_rnd;
};

struct tls13s {
	enum tls13s_state state;
	int alert_sent, alert_received; /* the alert's description, or -1 */
	uint16_t group, scheme;
	unsigned int rounds; /* ML-DSA rejection rounds of the CertificateVerify; 1 for the others */
	int hrr;             /* 1 when a HelloRetryRequest was sent */
	const struct tls13s_key *key;
	const uint8_t *leaf_der;
	size_t leaf_len;
	uint8_t random[32], kem_rnd[32], ecdh_sk[32], sig_rnd[32];
	int sig_rnd_set;
	uint8_t session_id[32];
	size_t session_id_len;
	uint8_t ch1_hash[32]; /* the first ClientHello's hash (its message_hash, RFC 8446 4.4.1) */
	sha256_ctx transcript;
	uint8_t hs_secret[32], c_hs[32], s_hs[32];
	uint8_t ch1_random[32]; /* the first ClientHello's random, which the second must repeat */
	uint8_t c_fin[32]; /* the client Finished expected */
	uint8_t c_ap[32];  /* the client's application secret, installed after its Finished */
	struct tls13_half rd, wr;
	uint8_t in[TLS13S_IN_BUF]; /* bytes of the record being received */
	size_t in_len;
	uint8_t hs[TLS13S_HS_BUF]; /* handshake bytes not yet consumed */
	size_t hs_len;
	uint8_t out[TLS13S_OUT_BUF]; /* bytes for the caller to send */
	size_t out_len;
	uint8_t app[TLS13S_APP_BUF]; /* application data received, for the caller to take */
	size_t app_len;
	uint64_t phase[TLS13S_PHASES];
};

/* tls13s_start sets the server up to wait for a ClientHello (nothing to send yet). 0, or -1 for
 * a configuration it cannot use (unknown group, no key or leaf, a missing random, ML-KEM m or
 * ECDH secret the group needs). */
int tls13s_start(struct tls13s *s, const struct tls13s_config *cfg);

/* tls13s_input feeds len bytes received from the client; records are processed as they
 * complete and anything to send is appended to s->out (the caller empties it: s->out_len = 0):
 * after a ClientHello the server's flight (or a HelloRetryRequest, s->hrr = 1, then the second
 * ClientHello's flight), after the client's Finished nothing (TLS13S_CONNECTED), application
 * data into s->app (the caller takes it: s->app_len = 0). 0, or -1 once the server has failed
 * (s->alert_sent, s->alert_received say why). */
int tls13s_input(struct tls13s *s, const uint8_t *p, size_t len);

/* tls13s_write seals len bytes (at most TLS13_PLAINTEXT_MAX) of application data into s->out.
 * -1 unless connected or when it does not fit. */
int tls13s_write(struct tls13s *s, const uint8_t *p, size_t len);

/* tls13s_close appends a close_notify alert to s->out (once connected); 0 or -1. */
int tls13s_close(struct tls13s *s);

#endif
