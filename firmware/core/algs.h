/* The algorithm table: what BENCH and SELFTEST can run. To add a scheme, add
 * its code under crypto/, an ops struct here (KEMs use fw_kem_ops, signature
 * schemes fw_sig_ops) and a row in algs.c. */
#ifndef FW_ALGS_H
#define FW_ALGS_H

#include <stddef.h>
#include <stdint.h>

/* Largest buffers any KEM in the table needs (ML-KEM-1024). A board built with a
 * declared subset (FW_ALGSET_MLKEM512: ML-KEM-512 only, for a Cortex-M0 with 16 KiB of
 * RAM) sizes them for its table; algs.c checks the table against them at compile time. */
#if defined(FW_ALGSET_MLKEM512) && defined(FW_ALGSET_MLKEM_MLDSA)
#error "one declared subset at a time: FW_ALGSET_MLKEM512 or FW_ALGSET_MLKEM_MLDSA"
#endif
#ifdef FW_ALGSET_MLKEM512
#define FW_KEM_MAX_EK 800
#define FW_KEM_MAX_DK 1632
#define FW_KEM_MAX_CT 768
#define FW_HAVE_SIG 0
#else
#define FW_KEM_MAX_EK 1568
#define FW_KEM_MAX_DK 3168
#define FW_KEM_MAX_CT 1568
#define FW_HAVE_SIG 1
#endif
#define FW_KEM_MAX_SS 32

/* Largest buffers any signature scheme in the table needs: keys of ML-DSA-87, signatures of
 * SLH-DSA-*-256f, randomness of SLH-DSA-*-256 keygen (3n = 96 bytes). The declared subset
 * FW_ALGSET_MLKEM_MLDSA (the three ML-KEM and three ML-DSA sets, no SLH-DSA: the rp2040js
 * Pico W's TLS image, whose RAM holds the TLS client instead) signs with ML-DSA-87's 4,627
 * bytes at most. */
#define FW_SIG_MAX_PK 2592
#define FW_SIG_MAX_SK 4896
#ifdef FW_ALGSET_MLKEM_MLDSA
#define FW_SIG_MAX_SIG 4627
#else
#define FW_SIG_MAX_SIG 49856
#endif
#define FW_SIG_MAX_COINS 96

enum fw_alg_kind { FW_KEM = 1, FW_SIG = 2 };

/* fw_kem_ops is one KEM with deterministic (derandomized) entry points. */
struct fw_kem_ops {
	size_t ek_len, dk_len, ct_len, ss_len;
	size_t keygen_coins; /* bytes of randomness keygen takes (d || z) */
	size_t encaps_coins; /* bytes of randomness encaps takes (m) */
	int (*keygen)(uint8_t *ek, uint8_t *dk, const uint8_t *coins);
	/* encaps and decaps include the FIPS 203 input checks. */
	int (*encaps)(uint8_t *ct, uint8_t *ss, const uint8_t *ek, const uint8_t *coins);
	int (*decaps)(uint8_t *ss, const uint8_t *ct, const uint8_t *dk);
	/* The *_internal functions and key checks the ACVP vectors exercise. */
	int (*encaps_internal)(uint8_t *ct, uint8_t *ss, const uint8_t *ek, const uint8_t *coins);
	int (*decaps_internal)(uint8_t *ss, const uint8_t *ct, const uint8_t *dk);
	int (*check_ek)(const uint8_t *ek);
	int (*check_dk)(const uint8_t *dk);
};

/* fw_sig_ops is one signature scheme. sign takes its per-signature randomness
 * from the caller (rnd, NULL for the deterministic variant) and, when has_rounds
 * is set (ML-DSA), reports the number of rejection-sampling rounds the signature
 * took; SLH-DSA has no rejection loop and leaves *rounds 0. */
struct fw_sig_ops {
	size_t pk_len, sk_len, sig_len;
	int has_rounds;
	size_t keygen_coins; /* bytes of randomness keygen takes (xi) */
	size_t sign_coins;   /* bytes of randomness hedged signing takes (rnd) */
	int (*keygen)(uint8_t *pk, uint8_t *sk, const uint8_t *coins);
	int (*sign)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
		    size_t ctxlen, const uint8_t *rnd, unsigned int *rounds);
	int (*verify)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen,
		      const uint8_t *ctx, size_t ctxlen);
	/* The internal interface the ACVP vectors exercise (M' given). */
	int (*sign_internal)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,
			     const uint8_t *rnd, unsigned int *rounds);
	int (*verify_internal)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen);
};

struct fw_alg {
	const char *name; /* as in HELLO and BENCH, e.g. "ML-KEM-768" */
	enum fw_alg_kind kind;
	const struct fw_kem_ops *kem; /* FW_KEM */
	const struct fw_sig_ops *sig; /* FW_SIG */
};

extern const struct fw_alg fw_algs[];
extern const unsigned int fw_nalgs;

const struct fw_alg *fw_alg_find(const char *name);
/* fw_alg_user reports whether a's row is an implementation the build brought (BYOI.md): its
 * code has its own hash functions, which the hashing pass (hashshare.h) does not see. */
int fw_alg_user(const struct fw_alg *a);

#endif
