#include "algs.h"

#include "../crypto/mldsa/mldsa.h"
#include "../crypto/mlkem/mlkem.h"
#include "../crypto/slhdsa/slhdsa.h"
#include "proto.h"

#define MLKEM_OPS(p, P)                                                                   \
	static int p##_kg(uint8_t *ek, uint8_t *dk, const uint8_t *coins)                 \
	{                                                                                 \
		return p##_keygen_internal(ek, dk, coins, coins + 32);                    \
	}                                                                                 \
	static const struct fw_kem_ops p##_ops = {                                        \
		P##_EKBYTES, P##_DKBYTES, P##_CTBYTES, MLKEM_SSBYTES, 64, 32,             \
		p##_kg, p##_encaps, p##_decaps, p##_encaps_internal, p##_decaps_internal, \
		p##_check_ek, p##_check_dk,                                              \
	};

MLKEM_OPS(mlkem512, MLKEM512)
_Static_assert(MLKEM512_EKBYTES <= FW_KEM_MAX_EK && MLKEM512_DKBYTES <= FW_KEM_MAX_DK &&
		       MLKEM512_CTBYTES <= FW_KEM_MAX_CT,
	       "KEM buffers too small for ML-KEM-512");

#ifdef FW_ALGSET_MLKEM512
/* The declared subset of a board with 16 KiB of RAM: ML-KEM-512 alone. */
const struct fw_alg fw_algs[] = {
	{"ML-KEM-512", FW_KEM, &mlkem512_ops, 0},
};
#else
MLKEM_OPS(mlkem768, MLKEM768)
MLKEM_OPS(mlkem1024, MLKEM1024)
_Static_assert(MLKEM1024_EKBYTES <= FW_KEM_MAX_EK && MLKEM1024_DKBYTES <= FW_KEM_MAX_DK &&
		       MLKEM1024_CTBYTES <= FW_KEM_MAX_CT && MLKEM768_DKBYTES <= FW_KEM_MAX_DK,
	       "KEM buffers too small for ML-KEM-1024");

#define MLDSA_OPS(p, P)                                                                  \
	static const struct fw_sig_ops p##_ops = {                                       \
		P##_PKBYTES, P##_SKBYTES, P##_SIGBYTES, 1, MLDSA_SEEDBYTES, MLDSA_RNDBYTES, \
		p##_keygen_internal, p##_sign, p##_verify, p##_sign_internal,           \
		p##_verify_internal,                                                     \
	};

MLDSA_OPS(mldsa44, MLDSA44)
MLDSA_OPS(mldsa65, MLDSA65)
MLDSA_OPS(mldsa87, MLDSA87)

/* SLH-DSA: keygen's randomness is SK.seed || SK.prf || PK.seed (3n bytes), hedged signing's
 * is addrnd (n bytes). */
#define SLHDSA_OPS(p, P)                                                                        \
	static int p##_kg(uint8_t *pk, uint8_t *sk, const uint8_t *coins)                       \
	{                                                                                       \
		return p##_keygen_internal(pk, sk, coins, coins + P##_N, coins + 2 * P##_N);    \
	}                                                                                       \
	static int p##_sg(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,       \
			  const uint8_t *ctx, size_t ctxlen, const uint8_t *rnd, unsigned int *rounds) \
	{                                                                                       \
		*rounds = 0;                                                                    \
		return p##_sign(sig, sk, m, mlen, ctx, ctxlen, rnd);                            \
	}                                                                                       \
	static int p##_sgi(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen,      \
			   const uint8_t *rnd, unsigned int *rounds)                            \
	{                                                                                       \
		*rounds = 0;                                                                    \
		return p##_sign_internal(sig, sk, m, mlen, rnd);                                \
	}                                                                                       \
	static const struct fw_sig_ops p##_ops = {                                              \
		P##_PKBYTES, P##_SKBYTES, P##_SIGBYTES, 0, 3 * P##_N, P##_N,                    \
		p##_kg, p##_sg, p##_verify, p##_sgi, p##_verify_internal,                       \
	};

SLHDSA_OPS(slhdsa_sha2_128s, SLHDSA_SHA2_128S)
SLHDSA_OPS(slhdsa_sha2_128f, SLHDSA_SHA2_128F)
SLHDSA_OPS(slhdsa_sha2_192s, SLHDSA_SHA2_192S)
SLHDSA_OPS(slhdsa_sha2_192f, SLHDSA_SHA2_192F)
SLHDSA_OPS(slhdsa_sha2_256s, SLHDSA_SHA2_256S)
SLHDSA_OPS(slhdsa_sha2_256f, SLHDSA_SHA2_256F)
SLHDSA_OPS(slhdsa_shake_128s, SLHDSA_SHAKE_128S)
SLHDSA_OPS(slhdsa_shake_128f, SLHDSA_SHAKE_128F)
SLHDSA_OPS(slhdsa_shake_192s, SLHDSA_SHAKE_192S)
SLHDSA_OPS(slhdsa_shake_192f, SLHDSA_SHAKE_192F)
SLHDSA_OPS(slhdsa_shake_256s, SLHDSA_SHAKE_256S)
SLHDSA_OPS(slhdsa_shake_256f, SLHDSA_SHAKE_256F)

const struct fw_alg fw_algs[] = {
	{"ML-KEM-512", FW_KEM, &mlkem512_ops, 0},
	{"ML-KEM-768", FW_KEM, &mlkem768_ops, 0},
	{"ML-KEM-1024", FW_KEM, &mlkem1024_ops, 0},
	{"ML-DSA-44", FW_SIG, 0, &mldsa44_ops},
	{"ML-DSA-65", FW_SIG, 0, &mldsa65_ops},
	{"ML-DSA-87", FW_SIG, 0, &mldsa87_ops},
	{"SLH-DSA-SHA2-128s", FW_SIG, 0, &slhdsa_sha2_128s_ops},
	{"SLH-DSA-SHA2-128f", FW_SIG, 0, &slhdsa_sha2_128f_ops},
	{"SLH-DSA-SHA2-192s", FW_SIG, 0, &slhdsa_sha2_192s_ops},
	{"SLH-DSA-SHA2-192f", FW_SIG, 0, &slhdsa_sha2_192f_ops},
	{"SLH-DSA-SHA2-256s", FW_SIG, 0, &slhdsa_sha2_256s_ops},
	{"SLH-DSA-SHA2-256f", FW_SIG, 0, &slhdsa_sha2_256f_ops},
	{"SLH-DSA-SHAKE-128s", FW_SIG, 0, &slhdsa_shake_128s_ops},
	{"SLH-DSA-SHAKE-128f", FW_SIG, 0, &slhdsa_shake_128f_ops},
	{"SLH-DSA-SHAKE-192s", FW_SIG, 0, &slhdsa_shake_192s_ops},
	{"SLH-DSA-SHAKE-192f", FW_SIG, 0, &slhdsa_shake_192f_ops},
	{"SLH-DSA-SHAKE-256s", FW_SIG, 0, &slhdsa_shake_256s_ops},
	{"SLH-DSA-SHAKE-256f", FW_SIG, 0, &slhdsa_shake_256f_ops},
};
#endif
const unsigned int fw_nalgs = sizeof fw_algs / sizeof fw_algs[0];

const struct fw_alg *fw_alg_find(const char *name)
{
	unsigned int i;
	for (i = 0; i < fw_nalgs; i++)
		if (fw_streq(fw_algs[i].name, name))
			return &fw_algs[i];
	return 0;
}
