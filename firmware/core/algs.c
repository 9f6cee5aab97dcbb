#include "algs.h"

#include "../crypto/mldsa/mldsa.h"
#include "../crypto/mlkem/mlkem.h"
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
MLKEM_OPS(mlkem768, MLKEM768)
MLKEM_OPS(mlkem1024, MLKEM1024)

#define MLDSA_OPS(p, P)                                                                  \
	static const struct fw_sig_ops p##_ops = {                                       \
		P##_PKBYTES, P##_SKBYTES, P##_SIGBYTES, MLDSA_SEEDBYTES, MLDSA_RNDBYTES, \
		p##_keygen_internal, p##_sign, p##_verify, p##_sign_internal,           \
		p##_verify_internal,                                                     \
	};

MLDSA_OPS(mldsa44, MLDSA44)
MLDSA_OPS(mldsa65, MLDSA65)
MLDSA_OPS(mldsa87, MLDSA87)

const struct fw_alg fw_algs[] = {
	{"ML-KEM-512", FW_KEM, &mlkem512_ops, 0},
	{"ML-KEM-768", FW_KEM, &mlkem768_ops, 0},
	{"ML-KEM-1024", FW_KEM, &mlkem1024_ops, 0},
	{"ML-DSA-44", FW_SIG, 0, &mldsa44_ops},
	{"ML-DSA-65", FW_SIG, 0, &mldsa65_ops},
	{"ML-DSA-87", FW_SIG, 0, &mldsa87_ops},
};
const unsigned int fw_nalgs = sizeof fw_algs / sizeof fw_algs[0];

const struct fw_alg *fw_alg_find(const char *name)
{
	unsigned int i;
	for (i = 0; i < fw_nalgs; i++)
		if (fw_streq(fw_algs[i].name, name))
			return &fw_algs[i];
	return 0;
}
