/* c25519ct: a host-only constant-time check of X25519 under valgrind's memcheck
 * (c25519_test.go runs it). The scalar and the peer's point are marked undefined
 * before each call, so memcheck reports every branch and every memory index
 * that depends on them ("Conditional jump or move depends on uninitialised
 * value", "Use of uninitialised value of size"), across the clamping, the
 * ladder, the inversion, the encoding and the all-zero check. The outputs are
 * marked defined again only after the call, to print them. Scalars and points
 * come from argv as a seed, so the run is repeatable. */
#include <stdio.h>
#include <stdlib.h>

#include <valgrind/memcheck.h>

#include "../crypto/c25519/c25519.h"

int main(int argc, char **argv)
{
	uint8_t sk[32], pt[32], out[32], acc = 0;
	uint32_t x = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1;
	int i, j, rc;

	for (i = 0; i < 8; i++) {
		for (j = 0; j < 32; j++) {
			x = x * 1103515245u + 12345u;
			sk[j] = (uint8_t)(x >> 16);
			x = x * 1103515245u + 12345u;
			pt[j] = (uint8_t)(x >> 16);
		}
		if (i == 7) /* a low-order point: the all-zero output path */
			for (j = 0; j < 32; j++)
				pt[j] = j == 0 ? 1 : 0;
		VALGRIND_MAKE_MEM_UNDEFINED(sk, sizeof sk);
		VALGRIND_MAKE_MEM_UNDEFINED(pt, sizeof pt);
		rc = x25519(out, sk, pt);
		x25519_base(pt, sk);
		VALGRIND_MAKE_MEM_DEFINED(&rc, sizeof rc);
		VALGRIND_MAKE_MEM_DEFINED(out, sizeof out);
		VALGRIND_MAKE_MEM_DEFINED(pt, sizeof pt);
		for (j = 0; j < 32; j++)
			acc ^= out[j] ^ pt[j];
		printf("%d %d\n", i, rc);
	}
	printf("acc %02x\n", acc);
	return 0;
}
