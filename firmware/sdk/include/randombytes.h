/* randombytes.h for an implementation built into the firmware (BYOI.md): the firmware supplies
 * randombytes (core/user_kem.c). It serves the coins the firmware hands the running operation
 * (BENCH: from the DRBG seeded by SEED; SELFTEST: the vector's), then continues from the DRBG.
 * Its length is size_t; an implementation whose randombytes takes unsigned long long (NIST's
 * rng.h) sets IMPL_RANDOMBYTES := ull and declares it itself. */
#ifndef FW_SDK_RANDOMBYTES_H
#define FW_SDK_RANDOMBYTES_H

#include <stddef.h>
#include <stdint.h>

int randombytes(uint8_t *out, size_t n);

#endif
