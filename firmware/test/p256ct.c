/* p256ct: the constant-time check of crypto/p256 on the host (p256_test.go runs it under
 * valgrind memcheck, built with -DP256_CT_CHECK). It marks each private scalar undefined and runs
 * key generation, ECDH and ECDSA signing (RFC 6979, then hedged with a 32-byte rnd that is marked
 * undefined too) with it, so memcheck reports any branch or memory index that depends on the
 * scalar, the nonce derived from it or the hedge ("Conditional jump or move depends on
 * uninitialised value", "Use of uninitialised value"); outputs are marked defined before they
 * are printed or checked (signatures with p256_verify_digest). Inside the library only the
 * scalar's refusal, a nonce's refusal, r = 0 or s = 0, and the finished r and s (for their DER
 * encoding) are declassified (P256_CT_CHECK). Scalars: 1, 2, n-1 and pseudorandom ones. With the
 * argument "control" it also branches on the scalar itself, to show the check reports a leak. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "../crypto/p256/p256.h"

static const uint8_t n_minus_1[32] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff,
	0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2,
	0xfc, 0x63, 0x25, 0x50};

static volatile int sink;

/* sign_check signs digest with d (undefined) and rnd (NULL or undefined), then marks the
 * signature defined and verifies it under pub: 1 when it does. */
static int sign_check(const uint8_t d[32], const uint8_t pub[P256_POINT_LEN], const uint8_t digest[32],
	uint8_t *rnd)
{
	uint8_t sig[P256_SIG_DER_MAX];
	size_t len = 0;
	if (rnd)
		VALGRIND_MAKE_MEM_UNDEFINED(rnd, 32);
	int rc = p256_sign_digest(sig, &len, d, digest, rnd);
	VALGRIND_MAKE_MEM_DEFINED(&rc, sizeof rc);
	VALGRIND_MAKE_MEM_DEFINED(&len, sizeof len);
	VALGRIND_MAKE_MEM_DEFINED(sig, sizeof sig);
	return rc == 0 && p256_verify_digest(pub, P256_POINT_LEN, digest, sig, len) == 0;
}

int main(int argc, char **argv)
{
	int control = argc > 1 && strcmp(argv[1], "control") == 0;
	uint8_t d[32], peer_d[32], peer[P256_POINT_LEN], pub[P256_POINT_LEN], z[32];
	uint32_t x = 0x12345678u;
	uint8_t digest[32], rnd[32];
	int ok = 0, signed_ok = 0, runs = 8;
	memset(peer_d, 0x42, sizeof peer_d);
	if (p256_keygen(peer, peer_d) != 0)
		return 2;
	for (int i = 0; i < runs; i++) {
		if (i == 0 || i == 1) {
			memset(d, 0, sizeof d);
			d[31] = (uint8_t)(i + 1);
		} else if (i == 2) {
			memcpy(d, n_minus_1, sizeof d);
		} else {
			for (int j = 0; j < 32; j++) {
				x = x * 1103515245u + 12345u;
				d[j] = (uint8_t)(x >> 24);
			}
			d[0] &= 0x7f;
		}
		VALGRIND_MAKE_MEM_UNDEFINED(d, sizeof d);
		if (control && (d[31] & 1))
			sink++; /* a branch on the secret: memcheck must report it */
		int r1 = p256_keygen(pub, d);
		int r2 = p256_ecdh(z, d, peer, sizeof peer);
		VALGRIND_MAKE_MEM_DEFINED(pub, sizeof pub);
		VALGRIND_MAKE_MEM_DEFINED(z, sizeof z);
		VALGRIND_MAKE_MEM_DEFINED(&r1, sizeof r1);
		VALGRIND_MAKE_MEM_DEFINED(&r2, sizeof r2);
		if (r1 == 0 && r2 == 0 && pub[0] == 0x04)
			ok++;
		for (int j = 0; j < 32; j++) {
			x = x * 1103515245u + 12345u;
			digest[j] = (uint8_t)(x >> 24);
			rnd[j] = (uint8_t)(x >> 16);
		}
		signed_ok += sign_check(d, pub, digest, NULL);
		signed_ok += sign_check(d, pub, digest, rnd);
	}
	printf("p256ct %d/%d\n", ok, runs);
	printf("p256ct sign %d/%d\n", signed_ok, 2 * runs);
	return ok == runs && signed_ok == 2 * runs ? 0 : 1;
}
