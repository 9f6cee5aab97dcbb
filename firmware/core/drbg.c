#include "drbg.h"

#include "../crypto/keccak/keccak.h"

static keccak_ctx drbg;
static int drbg_ready, drbg_seeded;

void fw_drbg_seed(const uint8_t *seed, size_t len)
{
	shake256_init(&drbg);
	keccak_absorb(&drbg, seed, len);
	shake_finalize(&drbg);
	drbg_ready = 1;
	drbg_seeded = 1;
}

void fw_drbg_read(uint8_t *out, size_t len)
{
	if (!drbg_ready) {
		fw_drbg_seed(0, 0);
		drbg_seeded = 0;
	}
	keccak_squeeze(&drbg, out, len);
}

int fw_drbg_seeded(void) { return drbg_seeded; }
