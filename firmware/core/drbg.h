/* The firmware's deterministic random bit generator: the output stream is
 * SHAKE256(seed), read in order. SEED restarts it; until the first SEED the
 * seed is the empty string. Two runs with the same seed and the same command
 * sequence therefore draw the same bytes. Not for production key generation. */
#ifndef FW_DRBG_H
#define FW_DRBG_H

#include <stddef.h>
#include <stdint.h>

#define FW_DRBG_MAX_SEED 64

void fw_drbg_seed(const uint8_t *seed, size_t len);
void fw_drbg_read(uint8_t *out, size_t len);
int fw_drbg_seeded(void);

#endif
