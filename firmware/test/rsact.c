/* rsact: the constant-time check of RSA-PSS signing on the host (rsasign_test.go runs it under
 * valgrind memcheck, built with -DRSA_CT_CHECK). It loads the private-key blob given in hex as
 * the first argument (rsa_privkey_set runs once, at provisioning, and is not checked), then for
 * each of four digests and salts marks the key's secret parts (p, q, dp, dq, qinv and every
 * constant derived from p and q; not the limb count) and the digest and salt, hence the message representative,
 * undefined and signs: memcheck reports any branch or memory index that depends on them
 * ("Conditional jump or move depends on uninitialised value", "Use of uninitialised value").
 * The signature and the return code are marked defined only after the call, to print them: one
 * line "DIGEST SALT SIG" each, for the test to check with Go. With "control" as the second
 * argument it also branches on dp once, to show the check reports a leak. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "../crypto/rsa/rsa.h"
#include "hexio.h"

static uint8_t blob[8 * RSA_MAX_BYTES], sig[RSA_MAX_BYTES];
static struct rsa_privkey key;
static volatile int sink;

static void puthex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

/* secret marks a prime's values undefined: the prime, R^2, R^3, -p^-1 mod 2^32 and its CRT
 * exponent; its limb count (the key's size) stays public. */
static void secret(struct rsa_prime *f)
{
	VALGRIND_MAKE_MEM_UNDEFINED(f->mod.n, sizeof f->mod.n);
	VALGRIND_MAKE_MEM_UNDEFINED(f->mod.rr, sizeof f->mod.rr);
	VALGRIND_MAKE_MEM_UNDEFINED(&f->mod.n0inv, sizeof f->mod.n0inv);
	VALGRIND_MAKE_MEM_UNDEFINED(f->d, sizeof f->d);
	VALGRIND_MAKE_MEM_UNDEFINED(f->rrr, sizeof f->rrr);
}

int main(int argc, char **argv)
{
	int control = argc > 2 && strcmp(argv[2], "control") == 0;
	uint8_t digest[32], salt[32];
	uint32_t x = 0x2545f491u;
	long len;
	int ok = 0, runs = 4, rc;

	if (argc < 2 || (len = hexio_unhex(blob, sizeof blob, argv[1])) < 0)
		return 2;
	if ((rc = rsa_privkey_set(&key, blob, (size_t)len)) != RSA_OK) {
		printf("rsa_privkey_set: %d\n", rc);
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		for (int j = 0; j < 32; j++) {
			x = x * 1103515245u + 12345u;
			digest[j] = (uint8_t)(x >> 24);
			x = x * 1103515245u + 12345u;
			salt[j] = (uint8_t)(x >> 24);
		}
		secret(&key.p);
		secret(&key.q);
		VALGRIND_MAKE_MEM_UNDEFINED(key.qinv, sizeof key.qinv);
		VALGRIND_MAKE_MEM_UNDEFINED(digest, sizeof digest);
		VALGRIND_MAKE_MEM_UNDEFINED(salt, sizeof salt);
		if (control && (key.p.d[3] & 1))
			sink++; /* a branch on the secret: memcheck must report it */
		rc = rsa_pss_sha256_sign_digest(&key, sig, digest, salt);
		VALGRIND_MAKE_MEM_DEFINED(sig, key.pub.bytes);
		VALGRIND_MAKE_MEM_DEFINED(&rc, sizeof rc);
		VALGRIND_MAKE_MEM_DEFINED(digest, sizeof digest);
		VALGRIND_MAKE_MEM_DEFINED(salt, sizeof salt);
		puthex(digest, sizeof digest);
		putchar(' ');
		puthex(salt, sizeof salt);
		putchar(' ');
		puthex(sig, key.pub.bytes);
		putchar('\n');
		if (rc == RSA_OK)
			ok++;
	}
	printf("rsact %d/%d\n", ok, runs);
	return ok == runs ? 0 : 1;
}
