/* The project's TLS 1.3 client (RFC 8446), sans I/O: the caller feeds it the bytes the server
 * sent and sends the bytes it leaves in its output; it never reads a clock or a random source
 * (the ClientHello random, the ML-KEM key-generation seed, the ECDH private value and the time
 * certificates are checked at are the caller's).
 *
 * What it speaks: TLS_AES_128_GCM_SHA256 only; one key share, for the configured group: pure
 * ML-KEM (ML-KEM-512/768/1024, 0x0200/0x0201/0x0202, draft-ietf-tls-mlkem), X25519 (0x001d),
 * secp256r1 (0x0017, uncompressed points) or the hybrid X25519MLKEM768 (0x11ec,
 * draft-ietf-tls-ecdhe-mlkem: the client's share is the ML-KEM-768 encapsulation key then the
 * X25519 public value, the server's the ciphertext then its X25519 value, the shared secret the
 * ML-KEM secret then the X25519 one); signature_algorithms mldsa44/65/87 (0x0904/05/06, pure
 * ML-DSA, empty context), ed25519 (0x0807), ecdsa_secp256r1_sha256 (0x0403) and
 * rsa_pss_rsae_sha256 (0x0804); server_name; an empty legacy_session_id. The server's chain is
 * its leaf, issued by the one trust anchor the caller gives (a CA certificate in DER with an
 * ML-DSA, Ed25519, P-256 or RSA key): the leaf's issuer must be the CA's subject, its signature
 * verify under the CA's key with the CA's algorithm (ML-DSA, Ed25519, ECDSA-P256-SHA256, or RSA
 * PKCS #1 v1.5 with SHA-256), both be valid at now, and a SAN dNSName equal the server name.
 * CertificateVerify is checked with the leaf's key: ML-DSA and Ed25519 over the content,
 * ECDSA and RSA-PSS (MGF1-SHA-256, 32-byte salt) over its SHA-256. A server ECDH value that is
 * not a valid point (X25519: a shared secret of all zeros; P-256: not 65 bytes starting 0x04, a
 * coordinate >= p, off the curve) is illegal_parameter, a signature that does not verify
 * (non-canonical encodings included: Ed25519 S >= L, ECDSA not in strict DER, an RSA signature
 * not of the modulus' length) decrypt_error, as the Go engine answers. No PSK, HelloRetryRequest (with one group offered, a HelloRetryRequest can only be
 * refused: illegal_parameter, RFC 8446 section 4.1.4), client certificates, KeyUpdate or
 * record_size_limit: records are up to 2^14 bytes of plaintext, so the buffers below hold the
 * largest record and the largest handshake message (a Certificate with an ML-DSA-87 leaf, about
 * 7.6 KB) of the largest cell, ML-KEM-1024 with ML-DSA-87.
 *
 * Every failure sends one fatal alert (the same description the project's Go engine sends for
 * it) and leaves the client in TLS13C_FAILED.
 *
 * The record layer, the key schedule, the byte reader and the groups' key exchanges are shared
 * with the server (tls13s.h) in tls13common.c. */
#ifndef PQ_TLS13C_H
#define PQ_TLS13C_H

#include <stddef.h>
#include <stdint.h>

#include "tls13common.h"
#include "../aesgcm/aesgcm.h"
#include "../rsa/rsa.h"
#include "../mlkem/mlkem.h"
#include "../mldsa/mldsa.h"
#include "../sha2/sha2.h"
#include "../x509/x509.h"

#define TLS13C_PLAINTEXT_MAX TLS13_PLAINTEXT_MAX /* 2^14 */
#define TLS13C_RECORD_MAX TLS13_RECORD_MAX       /* a protected record, header included */
#define TLS13C_HS_MAX TLS13_HS_MAX               /* one handshake message, header included */

/* The buffers' sizes hold the protocol's largest record and message by default. A board short
 * of RAM (the rp2040js Pico W's TLS image) builds with smaller ones that still hold its largest
 * cell's (-DTLS13C_IN_BUF=...): a record or message that does not fit is then refused as one
 * over the protocol's limits is (record_overflow, decode_error), application data that does
 * not fit with internal_error, and output that does not fit fails the call. */
#ifndef TLS13C_IN_BUF
#define TLS13C_IN_BUF TLS13C_RECORD_MAX /* the record being received */
#endif
#ifndef TLS13C_HS_BUF
#define TLS13C_HS_BUF TLS13C_HS_MAX /* handshake bytes not yet consumed */
#endif
#ifndef TLS13C_OUT_BUF
#define TLS13C_OUT_BUF (TLS13C_RECORD_MAX + 64) /* bytes for the caller to send */
#endif
#ifndef TLS13C_APP_BUF
#define TLS13C_APP_BUF TLS13C_PLAINTEXT_MAX /* application data received */
#endif

enum tls13c_state {
	TLS13C_WAIT_SH = 1,
	TLS13C_WAIT_EE,
	TLS13C_WAIT_CERT,
	TLS13C_WAIT_CV,
	TLS13C_WAIT_FIN,
	TLS13C_CONNECTED,
	TLS13C_FAILED,
	TLS13C_CLOSED, /* the server sent close_notify */
};

/* Alert descriptions (RFC 8446 section 6). */
enum tls13c_alert {
	TLS13C_CLOSE_NOTIFY = 0,
	TLS13C_UNEXPECTED_MESSAGE = 10,
	TLS13C_BAD_RECORD_MAC = 20,
	TLS13C_RECORD_OVERFLOW = 22,
	TLS13C_HANDSHAKE_FAILURE = 40,
	TLS13C_BAD_CERTIFICATE = 42,
	TLS13C_CERTIFICATE_EXPIRED = 45,
	TLS13C_ILLEGAL_PARAMETER = 47,
	TLS13C_UNKNOWN_CA = 48,
	TLS13C_DECODE_ERROR = 50,
	TLS13C_DECRYPT_ERROR = 51,
	TLS13C_PROTOCOL_VERSION = 70,
	TLS13C_INTERNAL_ERROR = 80,
	TLS13C_MISSING_EXTENSION = 109,
	TLS13C_UNSUPPORTED_EXTENSION = 110,
};

/* The phases a board reports (issue 24). Built with -DTLS13C_PHASE_COUNTER, the client adds the
 * board counter's advance (plat_counter, core/fw.h) over each phase's calls to phase[]; without
 * it phase[] stays zero and nothing is read. Key exchange: ML-KEM key generation and
 * decapsulation, the X25519 and P-256 public values and shared secrets. Chain: parsing the
 * trust anchor and the leaf and checking the leaf (its signature included, and reading an RSA
 * leaf's public key). CertificateVerify: its verification. Key schedule and records:
 * HKDF, HMAC, AES-GCM key setup, sealing and opening. The rest of a call (parsing, transcript
 * hashing, copying, the counter reads) is its total minus these. */
enum tls13c_phase {
	TLS13C_PH_KEX,
	TLS13C_PH_CHAIN,
	TLS13C_PH_CV,
	TLS13C_PH_KS_RECORD,
	TLS13C_PHASES,
};

struct tls13c_config {
	uint16_t group;          /* 0x0200, 0x0201, 0x0202, 0x001d, 0x0017 or 0x11ec */
	const char *server_name; /* SNI and the name the leaf must carry */
	const uint8_t *ca_der;   /* the trust anchor; must outlive the client */
	size_t ca_len;
	int64_t now;              /* Unix seconds the certificates are checked at */
	const uint8_t *random;    /* 32 bytes: the ClientHello random */
	const uint8_t *kem_seed;  /* 64 bytes: ML-KEM key generation's d then z */
	/* 32 bytes, for X25519, secp256r1 and X25519MLKEM768 (else unread, may be NULL): the X25519
	 * private scalar (clamped by X25519), or the P-256 private scalar d, big-endian, which must
	 * lie in [1, n-1]: tls13c_start fails for one that does not (about 2^-32 of random draws),
	 * and the caller draws 32 new bytes (FIPS 186-5 A.2.2, rejection sampling). */
	const uint8_t *ecdh_secret;
};

struct tls13c {
	enum tls13c_state state;
	int alert_sent, alert_received; /* the alert's description, or -1 */
	uint16_t group;
	const char *server_name;
	int64_t now;
	struct x509_cert ca;
	sha256_ctx transcript;
	uint8_t dk[MLKEM1024_DKBYTES];
	uint8_t ecdh_sk[32];
	uint8_t hs_secret[32], c_hs[32], s_hs[32];
	struct tls13_half rd, wr;
	enum x509_alg leaf_alg;
	uint16_t scheme; /* the CertificateVerify's scheme once it verified, else 0 */
	size_t leaf_pk_len;
	uint8_t leaf_pk[MLDSA87_PKBYTES];
	struct rsa_pubkey leaf_rsa; /* an RSA leaf's key, read once in the chain phase */
	uint8_t in[TLS13C_IN_BUF]; /* bytes of the record being received */
	size_t in_len;
	uint8_t hs[TLS13C_HS_BUF]; /* handshake bytes not yet consumed */
	size_t hs_len;
	uint8_t out[TLS13C_OUT_BUF]; /* bytes for the caller to send */
	size_t out_len;
	uint8_t app[TLS13C_APP_BUF]; /* application data received, for the caller to take */
	size_t app_len;
	uint64_t phase[TLS13C_PHASES];
};

/* tls13c_start sets the client up and leaves the ClientHello record in c->out. 0, or -1 for a
 * configuration it cannot use (unknown group, CA that does not parse, server name too long, no
 * ECDH secret for a group that needs one, a P-256 scalar outside [1, n-1]). */
int tls13c_start(struct tls13c *c, const struct tls13c_config *cfg);

/* tls13c_input feeds len bytes received from the server; records are processed as they complete
 * and anything to send is appended to c->out (the caller empties it: c->out_len = 0). 0, or -1
 * once the client has failed (c->alert_sent, c->alert_received say why). */
int tls13c_input(struct tls13c *c, const uint8_t *p, size_t len);

/* tls13c_write seals len bytes (at most TLS13C_PLAINTEXT_MAX) of application data into c->out.
 * -1 unless connected or when it does not fit. */
int tls13c_write(struct tls13c *c, const uint8_t *p, size_t len);

#endif
