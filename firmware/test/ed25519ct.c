/* ed25519ct: the constant-time check of Ed25519 key derivation and signing on the host
 * (c25519_test.go runs it under valgrind memcheck). Each seed is marked undefined before
 * ed25519_pubkey and ed25519_sign, so memcheck reports any branch or memory index that depends
 * on the seed or on what is derived from it (the secret scalar, the prefix, the nonce r, r B):
 * "Conditional jump or move depends on uninitialised value", "Use of uninitialised value". The
 * public key and the signature are marked defined only after the calls, as they are public, and
 * then checked with ed25519_verify. Seeds come from a fixed generator and message lengths vary
 * (0, 1, 130 as in a TLS 1.3 CertificateVerify, and block edges), so the run is repeatable. Two
 * controls show the check is live: with the argument "control" the harness also branches on the
 * seed itself, and with "control-output" it verifies each signature before marking it defined,
 * so the (variable-time) verification branches on S, which memcheck must report: the seed's
 * undefinedness does reach the signature through the signing code. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "../crypto/c25519/c25519.h"

static volatile int sink;

int main(int argc, char **argv)
{
	static const size_t lens[] = {0, 1, 2, 64, 111, 112, 128, 130};
	int control = argc > 1 && strcmp(argv[1], "control") == 0;
	int control_output = argc > 1 && strcmp(argv[1], "control-output") == 0;
	uint8_t seed[32], pk[32], sig[64], msg[130];
	uint32_t x = 0x2545f491u;
	int ok = 0, runs = (int)(sizeof lens / sizeof lens[0]);
	for (int i = 0; i < runs; i++) {
		for (int j = 0; j < 32; j++) {
			x = x * 1103515245u + 12345u;
			seed[j] = (uint8_t)(x >> 24);
		}
		if (i == 0)
			memset(seed, 0, sizeof seed);
		for (size_t j = 0; j < sizeof msg; j++)
			msg[j] = (uint8_t)(i + 7 * j);
		VALGRIND_MAKE_MEM_UNDEFINED(seed, sizeof seed);
		if (control && (seed[0] & 1))
			sink++; /* a branch on the secret: memcheck must report it */
		ed25519_pubkey(pk, seed);
		VALGRIND_MAKE_MEM_DEFINED(pk, sizeof pk);
		ed25519_sign(sig, seed, pk, msg, lens[i]);
		if (!control_output)
			VALGRIND_MAKE_MEM_DEFINED(sig, sizeof sig);
		if (ed25519_verify(sig, sizeof sig, pk, msg, lens[i]) == 0)
			ok++;
	}
	printf("ed25519ct %d/%d\n", ok, runs);
	return ok == runs ? 0 : 1;
}
