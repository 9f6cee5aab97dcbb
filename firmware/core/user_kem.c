/* The KEM adapter of a build with one's own implementation (BYOI.md): the NIST/PQClean API
 * (crypto_kem_keypair, crypto_kem_enc, crypto_kem_dec and, with IMPL_API=nist-kem-derand,
 * crypto_kem_keypair_derand and crypto_kem_enc_derand) as the row's fw_kem_ops.
 *
 * The build compiles this file only with IMPL=..., and passes:
 *   FW_USER_NS      the prefix of the implementation's API names after the build renamed its
 *                   symbols (fw_user_ followed by IMPL_NAMESPACE)
 *   FW_USER_SIZES   the catalogue row's size macros (MLKEM768: MLKEM768_EKBYTES, ...)
 *   FW_USER_DERAND  1 when the implementation has the _derand entry points
 *
 * Randomness: the firmware hands every operation its coins (BENCH draws them from the seeded
 * DRBG, SELFTEST from the vector). A _derand entry point takes them as an argument; the
 * randomized-only API reads them through randombytes, which serves the operation's coins in
 * order (core/user_rng.c). Both ways the run is as deterministic as the built-in
 * implementation's. */
#include "../crypto/mlkem/mlkem.h"
#include "../crypto/pqmem.h"
#include "algs.h"
#include "user.h"

#define EK SIZE(_EKBYTES)
#define DK SIZE(_DKBYTES)
#define CT SIZE(_CTBYTES)
#define SS MLKEM_SSBYTES

int USER(crypto_kem_keypair)(uint8_t *pk, uint8_t *sk);
int USER(crypto_kem_enc)(uint8_t *ct, uint8_t *ss, const uint8_t *pk);
int USER(crypto_kem_dec)(uint8_t *ss, const uint8_t *ct, const uint8_t *sk);
#if FW_USER_DERAND
int USER(crypto_kem_keypair_derand)(uint8_t *pk, uint8_t *sk, const uint8_t *coins);
int USER(crypto_kem_enc_derand)(uint8_t *ct, uint8_t *ss, const uint8_t *pk, const uint8_t *coins);
#endif

static int user_keygen(uint8_t *ek, uint8_t *dk, const uint8_t *coins)
{
#if FW_USER_DERAND
	return USER(crypto_kem_keypair_derand)(ek, dk, coins);
#else
	int rc;
	fw_user_rb_set(coins, 64);
	rc = USER(crypto_kem_keypair)(ek, dk);
	fw_user_rb_set(0, 0);
	return rc;
#endif
}

static int user_encaps(uint8_t *ct, uint8_t *ss, const uint8_t *ek, const uint8_t *coins)
{
#if FW_USER_DERAND
	return USER(crypto_kem_enc_derand)(ct, ss, ek, coins);
#else
	int rc;
	fw_user_rb_set(coins, 32);
	rc = USER(crypto_kem_enc)(ct, ss, ek);
	fw_user_rb_set(0, 0);
	return rc;
#endif
}

static int user_decaps(uint8_t *ss, const uint8_t *ct, const uint8_t *dk)
{
	return USER(crypto_kem_dec)(ss, ct, dk);
}

/* The API has no key checks: a key is accepted when the operation that must check it (FIPS 203
 * 7.2 and 7.3) accepts it. An implementation without the input checks fails the ACVP key-check
 * groups and is refused. */
static uint8_t chk_ct[CT], chk_ss[SS], chk_coins[32];

static int user_check_ek(const uint8_t *ek)
{
	return user_encaps(chk_ct, chk_ss, ek, chk_coins) == 0 ? 0 : -1;
}

static int user_check_dk(const uint8_t *dk)
{
	memset(chk_ct, 0, sizeof chk_ct);
	return user_decaps(chk_ss, chk_ct, dk) == 0 ? 0 : -1;
}

_Static_assert(EK <= FW_KEM_MAX_EK && DK <= FW_KEM_MAX_DK && CT <= FW_KEM_MAX_CT, "KEM buffers too small");

/* The ACVP encapsulation and decapsulation vectors have valid keys, for which FIPS 203's
 * Encaps and Decaps are the internal functions after their checks. */
const struct fw_kem_ops fw_byoi_kem_ops = {
	.ek_len = EK,
	.dk_len = DK,
	.ct_len = CT,
	.ss_len = SS,
	.keygen_coins = 64,
	.encaps_coins = 32,
	.keygen = user_keygen,
	.encaps = user_encaps,
	.decaps = user_decaps,
	.encaps_internal = user_encaps,
	.decaps_internal = user_decaps,
	.check_ek = user_check_ek,
	.check_dk = user_check_dk,
};
