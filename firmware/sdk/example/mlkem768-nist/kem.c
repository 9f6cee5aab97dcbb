/* The example implementation's NIST/PQClean KEM API over the project's ML-KEM-768 (BYOI.md).
 * keypair_derand takes d || z, enc_derand takes m; the randomized entry points draw them with
 * randombytes, as other implementations do. Encapsulation and decapsulation include FIPS 203's
 * input checks and return -1 on a key that fails them. */
#include <stdint.h>
#include <string.h>

#include "api.h"
#include "mlkem/mlkem.h"

int randombytes(uint8_t *out, size_t n);

int crypto_kem_keypair_derand(unsigned char *pk, unsigned char *sk, const unsigned char *coins)
{
	return mlkem768_keygen_internal(pk, sk, coins, coins + 32);
}

int crypto_kem_keypair(unsigned char *pk, unsigned char *sk)
{
	uint8_t coins[64];
	randombytes(coins, sizeof coins);
	return crypto_kem_keypair_derand(pk, sk, coins);
}

int crypto_kem_enc_derand(unsigned char *ct, unsigned char *ss, const unsigned char *pk, const unsigned char *coins)
{
	return mlkem768_encaps(ct, ss, pk, coins);
}

int crypto_kem_enc(unsigned char *ct, unsigned char *ss, const unsigned char *pk)
{
	uint8_t m[32];
	randombytes(m, sizeof m);
	return crypto_kem_enc_derand(ct, ss, pk, m);
}

int crypto_kem_dec(unsigned char *ss, const unsigned char *ct, const unsigned char *sk)
{
	return mlkem768_decaps(ss, ct, sk);
}
