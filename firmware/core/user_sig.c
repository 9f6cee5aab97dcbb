/* The signature adapter of a build with one's own implementation (BYOI.md): the NIST/PQClean
 * API of ML-DSA (crypto_sign_keypair, crypto_sign_signature_ctx and crypto_sign_verify_ctx, or
 * with IMPL_SIGN_NAMES=plain the same functions without _ctx, taking the context as they do in
 * mldsa-native) as the row's fw_sig_ops.
 *
 * The build compiles this file only with IMPL=..., and passes FW_USER_NS and FW_USER_SIZES (as
 * for core/user_kem.c) and FW_USER_SIGN_SUFFIX (_ctx, or nothing).
 *
 * Randomness: the API draws the key generation seed xi and the signing randomness rnd with
 * randombytes (core/user_rng.c), which serves the coins the firmware hands the operation:
 * BENCH's from the seeded DRBG, the vector's seed in SELFTEST, and 32 zero bytes for
 * deterministic signing (FIPS 204's deterministic variant: rnd = 0^32), which is what the ACVP
 * sigGen vectors and BENCH's det=1 ask for. The API does not report rejection rounds
 * (has_rounds 0), nor does it expose the internal interface: the catalogue's ML-DSA vectors
 * test the external one. */
#include "../crypto/mldsa/mldsa.h"
#include "../crypto/pqmem.h"
#include "algs.h"
#include "user.h"

#define PK SIZE(_PKBYTES)
#define SK SIZE(_SKBYTES)
#define SIG SIZE(_SIGBYTES)
#define SIGN FW_CAT(USER(crypto_sign_signature), FW_USER_SIGN_SUFFIX)
#define VERIFY FW_CAT(USER(crypto_sign_verify), FW_USER_SIGN_SUFFIX)

int USER(crypto_sign_keypair)(uint8_t *pk, uint8_t *sk);
int SIGN(uint8_t *sig, size_t *siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx, size_t ctxlen,
	 const uint8_t *sk);
int VERIFY(const uint8_t *sig, size_t siglen, const uint8_t *m, size_t mlen, const uint8_t *ctx, size_t ctxlen,
	   const uint8_t *pk);

static const uint8_t zero_rnd[MLDSA_RNDBYTES];

static int user_keygen(uint8_t *pk, uint8_t *sk, const uint8_t *coins)
{
	int rc;
	fw_user_rb_set(coins, MLDSA_SEEDBYTES);
	rc = USER(crypto_sign_keypair)(pk, sk);
	fw_user_rb_set(0, 0);
	return rc;
}

static int user_sign(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
		     size_t ctxlen, const uint8_t *rnd, unsigned int *rounds)
{
	size_t siglen = 0;
	int rc;
	*rounds = 0;
	fw_user_rb_set(rnd != 0 ? rnd : zero_rnd, MLDSA_RNDBYTES);
	rc = SIGN(sig, &siglen, m, mlen, ctx, ctxlen, sk);
	fw_user_rb_set(0, 0);
	return rc == 0 && siglen == SIG ? 0 : -1;
}

static int user_verify(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
		       size_t ctxlen)
{
	return VERIFY(sig, SIG, m, mlen, ctx, ctxlen, pk) == 0 ? 0 : -1;
}

/* The internal interface (M' given) is not in the API: a vector set that needs it fails. */
static int user_sign_internal(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *rnd,
			      unsigned int *rounds)
{
	(void)sig, (void)sk, (void)m, (void)mlen, (void)rnd;
	*rounds = 0;
	return -1;
}

static int user_verify_internal(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen)
{
	(void)sig, (void)pk, (void)m, (void)mlen;
	return -1;
}

_Static_assert(PK <= FW_SIG_MAX_PK && SK <= FW_SIG_MAX_SK && SIG <= FW_SIG_MAX_SIG, "signature buffers too small");

const struct fw_sig_ops fw_byoi_sig_ops = {
	.pk_len = PK,
	.sk_len = SK,
	.sig_len = SIG,
	.has_rounds = 0,
	.keygen_coins = MLDSA_SEEDBYTES,
	.sign_coins = MLDSA_RNDBYTES,
	.keygen = user_keygen,
	.sign = user_sign,
	.verify = user_verify,
	.sign_internal = user_sign_internal,
	.verify_internal = user_verify_internal,
};
