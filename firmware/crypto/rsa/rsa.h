/* RSA public-key operations for the TLS client (RFC 8017): RSASSA-PKCS1-v1_5 verification with
 * SHA-256 (sha256WithRSAEncryption, certificate signatures) and RSASSA-PSS verification with
 * SHA-256, MGF1-SHA-256 and a 32-byte salt (TLS 1.3's rsa_pss_rsae_sha256, CertificateVerify),
 * on the firmware's own big-number code: 32-bit limbs, Montgomery multiplication, s^e mod n for an
 * odd public exponent 3 <= e < 2^32.
 *
 * Keys: a modulus of RSA_MIN_BITS..RSA_MAX_BITS bits (exact bit length), odd; any other is
 * refused. rsa_pubkey_parse reads the RSAPublicKey of a SubjectPublicKeyInfo (RFC 8017 A.1.1:
 * SEQUENCE { modulus INTEGER, publicExponent INTEGER }) in strict DER: definite minimal lengths,
 * minimal positive INTEGERs, no trailing bytes.
 *
 * Verification follows RFC 8017 8.2.2 and 9.1.2 exactly: the signature must be k bytes long (k the
 * modulus' length in bytes) and below n. PKCS #1 v1.5 builds the one expected encoding (the
 * DigestInfo with its NULL parameters) and compares it whole; nothing of the recovered block is
 * parsed. PSS checks every byte EMSA-PSS-VERIFY names with the salt length fixed to 32.
 *
 * Everything here handles public data only (keys, signatures, messages): running time depends
 * on it. No allocation, no recursion; the caller's buffers are only read. Stack: about
 * 4 * RSA_MAX_BYTES plus SHA-256's state. */
#ifndef PQ_RSA_H
#define PQ_RSA_H

#include <stddef.h>
#include <stdint.h>

#ifndef RSA_MIN_BITS
#define RSA_MIN_BITS 2048
#endif
#ifndef RSA_MAX_BITS
#define RSA_MAX_BITS 4096
#endif
#define RSA_MAX_BYTES (RSA_MAX_BITS / 8)
#define RSA_MAX_LIMBS (RSA_MAX_BITS / 32)
#define RSA_PSS_SALT_BYTES 32

enum rsa_err {
	RSA_OK = 0,
	RSA_EDER = -1,      /* malformed or non-minimal DER, trailing bytes */
	RSA_ESIZE = -2,     /* modulus outside RSA_MIN_BITS..RSA_MAX_BITS bits */
	RSA_EMODULUS = -3,  /* modulus even */
	RSA_EEXPONENT = -4, /* exponent even, below 3 or 2^32 or above */
	RSA_ELENGTH = -5,   /* signature not exactly k bytes */
	RSA_ERANGE = -6,    /* signature representative s >= n */
	RSA_EINVALID = -7,  /* the encoded message is not the expected one */
};

/* A public key prepared for verification: n in little-endian 32-bit limbs, with the Montgomery
 * constants computed once by rsa_pubkey_set. */
struct rsa_pubkey {
	uint32_t n[RSA_MAX_LIMBS];
	uint32_t rr[RSA_MAX_LIMBS]; /* R^2 mod n, R = 2^(32 * limbs) */
	uint32_t n0inv;             /* -n^-1 mod 2^32 */
	uint32_t e;
	size_t limbs; /* ceil(bits / 32) */
	size_t bits;  /* the modulus' exact bit length */
	size_t bytes; /* k = ceil(bits / 8) */
};

/* rsa_pubkey_set prepares k from the big-endian modulus n[0..nlen) (leading zero bytes allowed)
 * and the exponent e. RSA_OK, RSA_ESIZE, RSA_EMODULUS or RSA_EEXPONENT. */
int rsa_pubkey_set(struct rsa_pubkey *k, const uint8_t *n, size_t nlen, uint32_t e);

/* rsa_pubkey_parse reads an RSAPublicKey from der[0..len) into k (see above for what is refused).
 * RSA_OK or a negative enum rsa_err. */
int rsa_pubkey_parse(struct rsa_pubkey *k, const uint8_t *der, size_t len);

/* rsa_public computes out = s^e mod n as k->bytes big-endian bytes (RSAVP1 of RFC 8017 5.2.2):
 * s is k->bytes long and below n. RSA_OK, RSA_ELENGTH or RSA_ERANGE (out then unwritten).
 * out may alias s. */
int rsa_public(const struct rsa_pubkey *k, uint8_t *out, const uint8_t *s, size_t slen);

/* RSASSA-PKCS1-v1_5-VERIFY with SHA-256 of sig over msg, or over the message's SHA-256 digest.
 * RSA_OK when valid, else RSA_ELENGTH, RSA_ERANGE or RSA_EINVALID. */
int rsa_pkcs1_sha256_verify(const struct rsa_pubkey *k, const uint8_t *msg, size_t msglen,
			    const uint8_t *sig, size_t siglen);
int rsa_pkcs1_sha256_verify_digest(const struct rsa_pubkey *k, const uint8_t digest[32],
				   const uint8_t *sig, size_t siglen);

/* RSASSA-PSS-VERIFY with SHA-256, MGF1-SHA-256 and a 32-byte salt, over msg or its digest.
 * RSA_OK when valid, else RSA_ELENGTH, RSA_ERANGE or RSA_EINVALID. */
int rsa_pss_sha256_verify(const struct rsa_pubkey *k, const uint8_t *msg, size_t msglen,
			  const uint8_t *sig, size_t siglen);
int rsa_pss_sha256_verify_digest(const struct rsa_pubkey *k, const uint8_t digest[32],
				 const uint8_t *sig, size_t siglen);

#endif
