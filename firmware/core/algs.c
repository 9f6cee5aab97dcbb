#include "algs.h"

#include "../crypto/mldsa/mldsa.h"
#include "../crypto/mlkem/mlkem.h"
#include "../crypto/slhdsa/slhdsa.h"
#include "proto.h"

/* A build with one's own implementation of an algorithm (BYOI.md: make IMPL=...) sets
 * FW_USER_IS_<row>=1 for the row it replaces: that row's ops are the adapter's
 * (core/user_kem.c, core/user_sig.c), and the built-in code is not referenced by the table. */
extern const struct fw_kem_ops fw_byoi_kem_ops;
#ifndef FW_USER_IS_mlkem512
#define FW_USER_IS_mlkem512 0
#endif
#ifndef FW_USER_IS_mlkem768
#define FW_USER_IS_mlkem768 0
#endif
#ifndef FW_USER_IS_mlkem1024
#define FW_USER_IS_mlkem1024 0
#endif
#define KEM_ROW(p) (FW_USER_IS_##p ? &fw_byoi_kem_ops : &p##_ops)
extern const struct fw_sig_ops fw_byoi_sig_ops;
#ifndef FW_USER_IS_mldsa44
#define FW_USER_IS_mldsa44 0
#endif
#ifndef FW_USER_IS_mldsa65
#define FW_USER_IS_mldsa65 0
#endif
#ifndef FW_USER_IS_mldsa87
#define FW_USER_IS_mldsa87 0
#endif
#define SIG_ROW(p) (FW_USER_IS_##p ? &fw_byoi_sig_ops : &p##_ops)

#define MLKEM_OPS(p, P)                                                                   \
	static int p##_kg(uint8_t *ek, uint8_t *dk, const uint8_t *coins)                 \
	{                                                                                 \
		return p##_keygen_internal(ek, dk, coins, coins + 32);                    \
	}                                                                                 \
	static const struct fw_kem_ops p##_ops = {                                        \
		.ek_len = P##_EKBYTES,                                                    \
		.dk_len = P##_DKBYTES,                                                    \
		.ct_len = P##_CTBYTES,                                                    \
		.ss_len = MLKEM_SSBYTES,                                                  \
		.keygen_coins = 64,                                                       \
		.encaps_coins = 32,                                                       \
		.keygen = p##_kg,                                                         \
		.encaps = p##_encaps,                                                     \
		.decaps = p##_decaps,                                                     \
		.encaps_internal = p##_encaps_internal,                                   \
		.decaps_internal = p##_decaps_internal,                                   \
		.check_ek = p##_check_ek,                                                 \
		.check_dk = p##_check_dk,                                                 \
	};

MLKEM_OPS(mlkem512, MLKEM512)
_Static_assert(MLKEM512_EKBYTES <= FW_KEM_MAX_EK && MLKEM512_DKBYTES <= FW_KEM_MAX_DK &&
		       MLKEM512_CTBYTES <= FW_KEM_MAX_CT,
	       "KEM buffers too small for ML-KEM-512");

#ifdef FW_ALGSET_MLKEM512
/* The declared subset of a board with 16 KiB of RAM: ML-KEM-512 alone. */
const struct fw_alg fw_algs[] = {
	{.name = "ML-KEM-512", .kind = FW_KEM, .kem = KEM_ROW(mlkem512)},
};
#else
MLKEM_OPS(mlkem768, MLKEM768)
MLKEM_OPS(mlkem1024, MLKEM1024)
_Static_assert(MLKEM1024_EKBYTES <= FW_KEM_MAX_EK && MLKEM1024_DKBYTES <= FW_KEM_MAX_DK &&
		       MLKEM1024_CTBYTES <= FW_KEM_MAX_CT && MLKEM768_DKBYTES <= FW_KEM_MAX_DK,
	       "KEM buffers too small for ML-KEM-1024");

#define MLDSA_OPS(p, P)                                                                  \
	static const struct fw_sig_ops p##_ops = {                                       \
		.pk_len = P##_PKBYTES,                                                   \
		.sk_len = P##_SKBYTES,                                                   \
		.sig_len = P##_SIGBYTES,                                                 \
		.has_rounds = 1,                                                         \
		.keygen_coins = MLDSA_SEEDBYTES,                                         \
		.sign_coins = MLDSA_RNDBYTES,                                            \
		.keygen = p##_keygen_internal,                                           \
		.sign = p##_sign,                                                        \
		.verify = p##_verify,                                                    \
		.sign_internal = p##_sign_internal,                                      \
		.verify_internal = p##_verify_internal,                                  \
	};

MLDSA_OPS(mldsa44, MLDSA44)
MLDSA_OPS(mldsa65, MLDSA65)
MLDSA_OPS(mldsa87, MLDSA87)
_Static_assert(MLDSA87_SIGBYTES <= FW_SIG_MAX_SIG && MLDSA87_PKBYTES <= FW_SIG_MAX_PK &&
		       MLDSA87_SKBYTES <= FW_SIG_MAX_SK,
	       "signature buffers too small for ML-DSA-87");

#ifdef FW_ALGSET_MLKEM_MLDSA
/* The declared subset of the rp2040js Pico W's TLS image: ML-KEM and ML-DSA, no SLH-DSA. */
const struct fw_alg fw_algs[] = {
	{.name = "ML-KEM-512", .kind = FW_KEM, .kem = KEM_ROW(mlkem512)},
	{.name = "ML-KEM-768", .kind = FW_KEM, .kem = KEM_ROW(mlkem768)},
	{.name = "ML-KEM-1024", .kind = FW_KEM, .kem = KEM_ROW(mlkem1024)},
	{.name = "ML-DSA-44", .kind = FW_SIG, .sig = SIG_ROW(mldsa44)},
	{.name = "ML-DSA-65", .kind = FW_SIG, .sig = SIG_ROW(mldsa65)},
	{.name = "ML-DSA-87", .kind = FW_SIG, .sig = SIG_ROW(mldsa87)},
};
#else

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
		.pk_len = P##_PKBYTES,                                                          \
		.sk_len = P##_SKBYTES,                                                          \
		.sig_len = P##_SIGBYTES,                                                        \
		.has_rounds = 0,                                                                \
		.keygen_coins = 3 * P##_N,                                                      \
		.sign_coins = P##_N,                                                            \
		.keygen = p##_kg,                                                               \
		.sign = p##_sg,                                                                 \
		.verify = p##_verify,                                                           \
		.sign_internal = p##_sgi,                                                       \
		.verify_internal = p##_verify_internal,                                         \
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
	{.name = "ML-KEM-512", .kind = FW_KEM, .kem = KEM_ROW(mlkem512)},
	{.name = "ML-KEM-768", .kind = FW_KEM, .kem = KEM_ROW(mlkem768)},
	{.name = "ML-KEM-1024", .kind = FW_KEM, .kem = KEM_ROW(mlkem1024)},
	{.name = "ML-DSA-44", .kind = FW_SIG, .sig = SIG_ROW(mldsa44)},
	{.name = "ML-DSA-65", .kind = FW_SIG, .sig = SIG_ROW(mldsa65)},
	{.name = "ML-DSA-87", .kind = FW_SIG, .sig = SIG_ROW(mldsa87)},
	{.name = "SLH-DSA-SHA2-128s", .kind = FW_SIG, .sig = &slhdsa_sha2_128s_ops},
	{.name = "SLH-DSA-SHA2-128f", .kind = FW_SIG, .sig = &slhdsa_sha2_128f_ops},
	{.name = "SLH-DSA-SHA2-192s", .kind = FW_SIG, .sig = &slhdsa_sha2_192s_ops},
	{.name = "SLH-DSA-SHA2-192f", .kind = FW_SIG, .sig = &slhdsa_sha2_192f_ops},
	{.name = "SLH-DSA-SHA2-256s", .kind = FW_SIG, .sig = &slhdsa_sha2_256s_ops},
	{.name = "SLH-DSA-SHA2-256f", .kind = FW_SIG, .sig = &slhdsa_sha2_256f_ops},
	{.name = "SLH-DSA-SHAKE-128s", .kind = FW_SIG, .sig = &slhdsa_shake_128s_ops},
	{.name = "SLH-DSA-SHAKE-128f", .kind = FW_SIG, .sig = &slhdsa_shake_128f_ops},
	{.name = "SLH-DSA-SHAKE-192s", .kind = FW_SIG, .sig = &slhdsa_shake_192s_ops},
	{.name = "SLH-DSA-SHAKE-192f", .kind = FW_SIG, .sig = &slhdsa_shake_192f_ops},
	{.name = "SLH-DSA-SHAKE-256s", .kind = FW_SIG, .sig = &slhdsa_shake_256s_ops},
	{.name = "SLH-DSA-SHAKE-256f", .kind = FW_SIG, .sig = &slhdsa_shake_256f_ops},
};
#endif
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

int fw_alg_user(const struct fw_alg *a)
{
	return (FW_USER_IS_mlkem512 && fw_streq(a->name, "ML-KEM-512")) ||
	       (FW_USER_IS_mlkem768 && fw_streq(a->name, "ML-KEM-768")) ||
	       (FW_USER_IS_mlkem1024 && fw_streq(a->name, "ML-KEM-1024")) ||
	       (FW_USER_IS_mldsa44 && fw_streq(a->name, "ML-DSA-44")) ||
	       (FW_USER_IS_mldsa65 && fw_streq(a->name, "ML-DSA-65")) ||
	       (FW_USER_IS_mldsa87 && fw_streq(a->name, "ML-DSA-87"));
}
