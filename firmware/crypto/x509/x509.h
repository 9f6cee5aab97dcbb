/* A minimal DER and X.509 reader for the TLS client: it finds, in one certificate, what a
 * TLS 1.3 client checks of the server's leaf and of its CA, and nothing else.
 *
 * Read: the TBSCertificate's bytes (what the issuer signed), the signature algorithm (which must
 * be the same AlgorithmIdentifier inside and outside the TBS) and the signature; issuer and
 * subject as raw DER Names (compared byte for byte to chain a leaf to its CA); notBefore and
 * notAfter as Unix seconds; the SubjectPublicKeyInfo's algorithm by OID and its key bytes; the
 * subjectAltName extension's dNSName entries; basicConstraints' cA flag and keyUsage's bits.
 * ML-DSA-44/65/87 are known by their RFC 9881 OIDs (2.16.840.1.101.3.4.3.17/18/19; parameters
 * must be absent, the key must have the set's size). The classical algorithms are those Go's
 * crypto/x509 writes for keys of their kind (tls13/tlscert's chains):
 *   Ed25519 (RFC 8410, 1.3.101.112): a key and a signature algorithm; no parameters, a 32-byte key;
 *   ECDSA P-256: the key id-ecPublicKey (1.2.840.10045.2.1) with the namedCurve prime256v1
 *     (1.2.840.10045.3.1.7), 65 bytes starting 0x04 (an uncompressed point: whether it lies on the
 *     curve is the verifier's check), and the signature ecdsa-with-SHA256 (1.2.840.10045.4.3.2,
 *     no parameters, RFC 5758);
 *   RSA: the key rsaEncryption (1.2.840.113549.1.1.1) and the signature sha256WithRSAEncryption
 *     (1.2.840.113549.1.1.11, PKCS #1 v1.5), both with NULL parameters (RFC 4055 section 5); the
 *     key's bytes are the RSAPublicKey, which crypto/rsa's rsa_pubkey_parse reads.
 * An id-ecPublicKey on another curve, and any other algorithm, are reported as X509_ALG_OTHER
 * with their bytes, for the caller to refuse. A key algorithm is never taken for a signature
 * algorithm or the other way round (id-ecPublicKey as a signature algorithm is OTHER).
 *
 * Refused (x509_parse returns an X509_E* code): anything that is not DER (indefinite or
 * non-minimal lengths, trailing bytes, wrong tags), a version other than v3 (or v1 without
 * extensions), times that are not UTCTime/GeneralizedTime in the Z form RFC 5280 requires,
 * a duplicate extension, and an unknown extension marked critical (RFC 5280 section 4.2).
 *
 * All results point into the caller's DER buffer, which must outlive them. No allocation, no
 * recursion; every length is checked against the bytes that remain. */
#ifndef PQ_X509_H
#define PQ_X509_H

#include <stddef.h>
#include <stdint.h>

#define X509_MAX_DER 16384 /* larger certificates are refused (an ML-DSA-87 leaf is ~7.5 KB) */

enum x509_alg {
	X509_ALG_OTHER = 0,
	X509_ALG_MLDSA44 = 44,
	X509_ALG_MLDSA65 = 65,
	X509_ALG_MLDSA87 = 87,
	X509_ALG_ED25519 = 1, /* key Ed25519; signature Ed25519 */
	X509_ALG_P256 = 2,    /* key id-ecPublicKey on P-256; signature ecdsa-with-SHA256 */
	X509_ALG_RSA = 3,     /* key rsaEncryption; signature sha256WithRSAEncryption */
};

enum x509_err {
	X509_OK = 0,
	X509_EDER = -1,      /* malformed DER */
	X509_ESIZE = -2,     /* certificate larger than X509_MAX_DER */
	X509_EVERSION = -3,  /* not v3 (or v1 without extensions) */
	X509_EALG = -4,      /* AlgorithmIdentifier mismatch, or a known algorithm's bad parameters/key size */
	X509_ETIME = -5,     /* malformed time */
	X509_ECRITICAL = -6, /* unknown critical extension */
	X509_EEXT = -7,      /* malformed or duplicate extension */
};

/* keyUsage bits as x509_cert.key_usage holds them (bit n of the BIT STRING is 1 << n). */
#define X509_KU_DIGITAL_SIGNATURE (1u << 0)
#define X509_KU_KEY_CERT_SIGN (1u << 5)

struct x509_span {
	const uint8_t *p;
	size_t n;
};

struct x509_cert {
	struct x509_span tbs;     /* the whole TBSCertificate, tag and length included */
	struct x509_span sig_oid; /* the signature algorithm's OID contents */
	enum x509_alg sig_alg;
	struct x509_span sig; /* the signature value's bytes (no unused-bits octet) */
	struct x509_span serial, issuer, subject;
	int64_t not_before, not_after; /* Unix seconds */
	struct x509_span spki_oid;     /* the key's algorithm OID contents */
	enum x509_alg spki_alg;
	struct x509_span pubkey;  /* subjectPublicKey's bytes */
	struct x509_span san;     /* the contents of the GeneralNames SEQUENCE, or empty */
	int has_san, is_ca;       /* is_ca: basicConstraints cA TRUE */
	int has_key_usage;        /* key_usage valid only then */
	uint32_t key_usage;
};

/* x509_parse reads der[0..len) into c. X509_OK or a negative enum x509_err. */
int x509_parse(struct x509_cert *c, const uint8_t *der, size_t len);

/* x509_san_dns returns the i-th dNSName of the SAN (from 0) in *name, 0 on success, -1 when there
 * are fewer. Other GeneralName kinds are skipped. */
int x509_san_dns(const struct x509_cert *c, size_t i, struct x509_span *name);

/* x509_match_host: 1 when host (len bytes) equals one dNSName of the SAN, ASCII case-insensitive;
 * no wildcards, and the subject's CommonName is never consulted (RFC 6125). Else 0. */
int x509_match_host(const struct x509_cert *c, const char *host, size_t len);

/* x509_valid_at: 0 when notBefore <= now <= notAfter (RFC 5280 inclusive), -1 before, +1 after. */
int x509_valid_at(const struct x509_cert *c, int64_t now);

#endif
