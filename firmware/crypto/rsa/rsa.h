/* RSA for the TLS client and server (RFC 8017): RSASSA-PKCS1-v1_5 verification with
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
 * Verification handles public data only (keys, signatures, messages): running time depends
 * on it. No allocation, no recursion; the caller's buffers are only read. Stack: about
 * 4 * RSA_MAX_BYTES plus SHA-256's state.
 *
 * Signing (the end of this file: RSASSA-PSS with the same parameters, the server's
 * CertificateVerify) uses the CRT and is constant time in the private key and the message
 * representative; see rsa_pss_sha256_sign_digest. */
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
#define RSA_MAX_HALF_LIMBS (RSA_MAX_LIMBS / 2)
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
	RSA_EPRIME = -8,    /* private key: p or q even or not k/2 bytes long, or n != p * q */
	RSA_ECRT = -9,      /* private key: dp >= p, dq >= q, qinv >= p, or q * qinv != 1 mod p */
	RSA_EKEY = -10,     /* private key: its test signature failed (dp or dq not e's inverse) */
	RSA_EFAULT = -11,   /* signing: s^e mod n is not the representative; nothing released */
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

/* ---- signing (the TLS server's CertificateVerify) ---- */

/* One prime factor of a private key with its CRT exponent and Montgomery constants (R = 2^(32 *
 * half), half the key's limb count). Secret, all of it. The prime is held as a modulus in a
 * struct rsa_pubkey (n, rr = R^2 mod it, n0inv, limbs = half; e, bits and bytes 0) so that
 * signing and verification share one Montgomery multiplication: half of its arrays go unused. */
struct rsa_prime {
	struct rsa_pubkey mod;
	uint32_t d[RSA_MAX_HALF_LIMBS];   /* d mod (prime - 1) */
	uint32_t rrr[RSA_MAX_HALF_LIMBS]; /* R^3 mod the prime */
};

/* A private key prepared for signing by rsa_privkey_set: the public key, p with dp, q with dq,
 * and qinv = q^-1 mod p, each prime of k/2 bytes held in half limbs. */
struct rsa_privkey {
	struct rsa_pubkey pub;
	struct rsa_prime p, q;
	uint32_t qinv[RSA_MAX_HALF_LIMBS];
	size_t half; /* limbs of p and q: ceil(k / 8) */
};

/* rsa_privkey_set reads blob[0..len) = n (k bytes, big-endian, first byte non-zero) || e (4
 * bytes BE) || p || q || dp || dq || qinv (k/2 bytes each, BE; k = 256 for RSA-2048), so len =
 * 3.5 k + 4. It refuses, with the public key's codes: a length not of that form or a modulus
 * outside RSA_MIN_BITS..RSA_MAX_BITS bits or not exactly k bytes (RSA_ESIZE), n even
 * (RSA_EMODULUS), e even or below 3 (RSA_EEXPONENT); and with its own: p or q even or with a
 * zero first byte, or n != p * q computed exactly (RSA_EPRIME), dp >= p, dq >= q, qinv >= p or
 * q * qinv != 1 mod p (RSA_ECRT), a test signature of the representative 2 that does not verify
 * (RSA_EKEY: dp or dq is not e's inverse). On an error k is zeroed and must not be used.
 * It runs once, untimed, at provisioning: only its verdicts branch on the secret values. */
int rsa_privkey_set(struct rsa_privkey *k, const uint8_t *blob, size_t len);

/* rsa_pss_sha256_sign_digest is RSASSA-PSS-SIGN (RFC 8017 8.1.1) with SHA-256, MGF1-SHA-256 and
 * the 32-byte salt given, over a SHA-256 digest; sig is k bytes. RSASP1 uses the CRT (Garner's
 * recombination) and runs in constant time in p, q, dp, dq, qinv and the representative:
 * Montgomery multiplication with a masked final subtraction, a 4-bit fixed window over every bit
 * of dp and dq with each table entry read by scanning the whole table. Before release the result
 * is checked with the public exponent: RSA_OK, or RSA_EFAULT with sig zeroed (RSA_EKEY, sig
 * untouched, for a key that rsa_privkey_set refused and zeroed). Stack: 9,328 B
 * on qemu-mps2-an386 with RSA_MAX_BITS = 4096, of which the window table is 8 * RSA_MAX_BYTES
 * (arrays are sized for RSA_MAX_BITS, so a board that defines 2048 needs about half). */
int rsa_pss_sha256_sign_digest(const struct rsa_privkey *k, uint8_t *sig, const uint8_t digest[32],
			       const uint8_t salt[32]);

#endif
