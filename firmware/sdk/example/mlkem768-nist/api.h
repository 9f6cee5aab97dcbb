/* The NIST/PQClean KEM API of the example implementation (BYOI.md): the project's ML-KEM-768,
 * copied into a folder of its own by `make byoi-example`, behind the entry points other
 * implementations provide. */
#ifndef EXAMPLE_API_H
#define EXAMPLE_API_H

#define CRYPTO_PUBLICKEYBYTES 1184
#define CRYPTO_SECRETKEYBYTES 2400
#define CRYPTO_CIPHERTEXTBYTES 1088
#define CRYPTO_BYTES 32
#define CRYPTO_ALGNAME "ML-KEM-768"

int crypto_kem_keypair_derand(unsigned char *pk, unsigned char *sk, const unsigned char *coins);
int crypto_kem_keypair(unsigned char *pk, unsigned char *sk);
int crypto_kem_enc_derand(unsigned char *ct, unsigned char *ss, const unsigned char *pk, const unsigned char *coins);
int crypto_kem_enc(unsigned char *ct, unsigned char *ss, const unsigned char *pk);
int crypto_kem_dec(unsigned char *ss, const unsigned char *ct, const unsigned char *sk);

#endif
