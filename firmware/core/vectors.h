/* Known-answer tables for SELFTEST. vectors.c is generated at build time by
 * `go run ./firmware/tools/vecgen` from NIST's ACVP JSON files (ML-KEM) and
 * from Go's standard library (hash functions), and with the build option from
 * Wycheproof's ML-KEM and ML-DSA JSON files; nothing in it comes from this
 * firmware's own code. */
#ifndef FW_VECTORS_H
#define FW_VECTORS_H

#include <stdint.h>

struct fw_kat_keygen {
	uint16_t tc;
	const uint8_t *d, *z, *ek, *dk;
};

struct fw_kat_encap {
	uint16_t tc;
	const uint8_t *ek, *m, *c, *k;
};

struct fw_kat_decap {
	uint16_t tc;
	const uint8_t *dk, *c, *k;
};

struct fw_kat_keycheck {
	uint16_t tc;
	uint8_t pass; /* ACVP testPassed */
	const uint8_t *key;
};

struct fw_kat_kem {
	const char *alg;
	const struct fw_kat_keygen *keygen;
	const struct fw_kat_encap *encap;
	const struct fw_kat_decap *decap;
	const struct fw_kat_keycheck *ekcheck, *dkcheck;
	uint16_t n_keygen, n_encap, n_decap, n_ekcheck, n_dkcheck;
};

struct fw_kat_hash {
	const char *alg; /* SHA-256, SHA-512, SHA3-256, SHA3-512, SHAKE128, SHAKE256 */
	const uint8_t *msg;
	uint32_t len;
	const uint8_t *md;
	uint32_t mdlen;
};

/* SLH-DSA uses the same tables: keyGen's seed is SK.seed || SK.prf || PK.seed. */
/* ML-DSA: keyGen from the seed xi; deterministic sigGen and sigVer of pure
 * ML-DSA with a context (ACVP signatureInterface external, preHash pure). */
struct fw_kat_sig_keygen {
	uint16_t tc;
	const uint8_t *seed, *pk, *sk;
};

struct fw_kat_siggen {
	uint16_t tc;
	const uint8_t *sk, *msg, *ctx, *sig;
	uint32_t mlen;
	uint16_t ctxlen;
};

struct fw_kat_sigver {
	uint16_t tc;
	uint8_t pass; /* ACVP testPassed */
	const uint8_t *pk, *msg, *ctx, *sig;
	uint32_t mlen;
	uint16_t ctxlen;
	uint32_t siglen; /* a signature of another length than the set's is refused unread */
};

struct fw_kat_sig {
	const char *alg;
	const struct fw_kat_sig_keygen *keygen;
	const struct fw_kat_siggen *siggen;
	const struct fw_kat_sigver *sigver;
	uint16_t n_keygen, n_siggen, n_sigver;
	/* 1: sigGen and sigVer test the internal interface (M' given, no context: the SLH-DSA
	 * files); 0: pure signing with a context (ML-DSA). */
	uint8_t internal;
};

/* Ascon: one record of the Ascon designers' NIST LWC KAT files. alg is Ascon-AEAD128,
 * Ascon-128, Ascon-128a (mode: the firmware's ascon_mode; key, nonce, in = PT, ad = AD,
 * out = CT || 16-byte tag) or Ascon-Hash256, Ascon-XOF128, Ascon-CXOF128 (mode 0, 1, 2;
 * in = Msg, ad = Z for CXOF128, out = MD, outlen bytes of output). Rows of one alg are
 * adjacent. */
struct fw_kat_ascon {
	const char *alg;
	uint8_t mode;
	uint16_t count; /* the record's Count */
	const uint8_t *key, *nonce, *in, *ad, *out;
	uint16_t inlen, adlen, outlen;
};

/* Wycheproof (vecgen -wycheproof, a build option: BOARD_WYCHEPROOF := 1 in a board.mk, on for
 * the host build; the build then compiles SELFTEST's groups with FW_WYCHEPROOF=1): tcId is the Wycheproof test's; valid is 1 for result "valid", 0 for "invalid" (the
 * operation must refuse the input). */
struct fw_wp_keydecap { /* keygen from seed = d || z gives ek; decapsulating c gives k */
	uint16_t tc;
	uint8_t valid;
	const uint8_t *seed, *ek, *c, *k;
};

struct fw_wp_encap { /* Encaps (with the FIPS 203 7.2 check) of ek with coins m */
	uint16_t tc;
	uint8_t valid;
	const uint8_t *ek, *m, *c, *k; /* c, k: 0 when invalid */
};

struct fw_wp_decap { /* Decaps (with the FIPS 203 7.3 check) of c with dk */
	uint16_t tc;
	uint8_t valid;
	const uint8_t *dk, *c, *k; /* k: 0 when invalid */
};

struct fw_wp_kem {
	const char *alg;
	const struct fw_wp_keydecap *keydecap;
	const struct fw_wp_encap *encap;
	const struct fw_wp_decap *decap;
	uint16_t n_keydecap, n_encap, n_decap;
};

struct fw_wp_sigver { /* pure ML-DSA Verify with a context (one over 255 bytes must be
		       * refused); a key or signature of another length than the set's is refused unread */
	uint16_t tc;
	uint8_t valid;
	const uint8_t *pk, *msg, *ctx, *sig;
	uint32_t pklen, mlen, siglen, ctxlen;
};

struct fw_wp_sig {
	const char *alg;
	const struct fw_wp_sigver *sigver;
	uint16_t n_sigver;
};

extern const struct fw_wp_kem fw_wp_kems[];
extern const unsigned int fw_n_wp_kems;
extern const struct fw_wp_sig fw_wp_sigs[];
extern const unsigned int fw_n_wp_sigs;

extern const struct fw_kat_kem fw_kat_kems[];
extern const struct fw_kat_sig fw_kat_sigs[];
extern const unsigned int fw_n_kat_sigs;
extern const unsigned int fw_n_kat_kems;
extern const struct fw_kat_hash fw_kat_hashes[];
extern const unsigned int fw_n_kat_hashes;
extern const struct fw_kat_ascon fw_kat_ascons[];
extern const unsigned int fw_n_kat_ascons;
/* fw_kat_source names where the vectors came from, e.g. "acvp-vs42-vs43", with "+wycheproof"
 * when the Wycheproof tables are in. */
extern const char fw_kat_source[];

#endif
