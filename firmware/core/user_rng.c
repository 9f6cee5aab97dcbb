/* randombytes for a build with one's own implementation (BYOI.md). It serves the coins the
 * firmware hands the running operation (BENCH draws them from the DRBG seeded by SEED, SELFTEST
 * takes the vector's), in order; should the implementation ask for more, it continues from the
 * DRBG, so a run stays as deterministic as one of the built-in implementation. The build sets
 * FW_USER_RB_ULL to 1 when the implementation's randombytes takes an unsigned long long length
 * (NIST's rng.h), 0 for size_t (PQClean, mlkem-native). */
#include "../crypto/pqmem.h"
#include "drbg.h"
#include "user.h"

static const uint8_t *rb_coins;
static size_t rb_left;

void fw_user_rb_set(const uint8_t *coins, size_t n)
{
	rb_coins = coins;
	rb_left = n;
}

#if FW_USER_RB_ULL
int randombytes(uint8_t *out, unsigned long long n);
int randombytes(uint8_t *out, unsigned long long n)
#else
int randombytes(uint8_t *out, size_t n);
int randombytes(uint8_t *out, size_t n)
#endif
{
	size_t k = rb_left < n ? rb_left : (size_t)n;
	memcpy(out, rb_coins, k);
	rb_coins += k;
	rb_left -= k;
	if (k < n)
		fw_drbg_read(out + k, (size_t)n - k);
	return 0;
}
