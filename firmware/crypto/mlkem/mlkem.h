/* ML-KEM (FIPS 203) for the three parameter sets. Each set is compiled from
 * the same source (mlkem_impl.h) with its own symbol prefix, so code size can
 * be measured per parameter set.
 *
 * All functions return 0 on success and -1 when an input check fails. No
 * allocation; stack use is measured by the firmware's BENCH command.
 *
 *  *_keygen_internal  ML-KEM.KeyGen_internal(d, z) -> (ek, dk)   (Alg. 16)
 *  *_encaps_internal  ML-KEM.Encaps_internal(ek, m) -> (K, c)   (Alg. 17)
 *  *_decaps_internal  ML-KEM.Decaps_internal(dk, c) -> K        (Alg. 18),
 *                     implicit rejection, constant time
 *  *_check_ek         encapsulation key modulus check (7.2)
 *  *_check_dk         decapsulation key hash check (7.3)
 *  *_encaps / *_decaps  the checks followed by the internal function, i.e.
 *                     ML-KEM.Encaps / ML-KEM.Decaps with the randomness
 *                     supplied by the caller */
#ifndef PQ_MLKEM_H
#define PQ_MLKEM_H

#include <stdint.h>

#define MLKEM_SSBYTES 32

#define MLKEM512_EKBYTES 800
#define MLKEM512_DKBYTES 1632
#define MLKEM512_CTBYTES 768
#define MLKEM768_EKBYTES 1184
#define MLKEM768_DKBYTES 2400
#define MLKEM768_CTBYTES 1088
#define MLKEM1024_EKBYTES 1568
#define MLKEM1024_DKBYTES 3168
#define MLKEM1024_CTBYTES 1568

#define MLKEM_DECLARE(p)                                                               \
	int p##_keygen_internal(uint8_t *ek, uint8_t *dk, const uint8_t d[32],         \
				const uint8_t z[32]);                                  \
	int p##_encaps_internal(uint8_t *c, uint8_t k[32], const uint8_t *ek,          \
				const uint8_t m[32]);                                  \
	int p##_decaps_internal(uint8_t k[32], const uint8_t *c, const uint8_t *dk);   \
	int p##_check_ek(const uint8_t *ek);                                           \
	int p##_check_dk(const uint8_t *dk);                                           \
	int p##_encaps(uint8_t *c, uint8_t k[32], const uint8_t *ek, const uint8_t m[32]); \
	int p##_decaps(uint8_t k[32], const uint8_t *c, const uint8_t *dk);

MLKEM_DECLARE(mlkem512)
MLKEM_DECLARE(mlkem768)
MLKEM_DECLARE(mlkem1024)

#endif
