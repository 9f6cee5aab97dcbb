/* rsacli: a host-only test driver for crypto/rsa. It reads one command per line on stdin and
 * prints one result line on stdout; rsa_test.go drives it with Wycheproof's vectors and Go's
 * math/big. Byte strings are hex ("-" for empty), CODE is rsa.h's negative enum rsa_err.
 *
 *   pubkey DER         -> N E | refused CODE
 *       (rsa_pubkey_parse of an RSAPublicKey; N the modulus in k bytes, E decimal)
 *   public N E S       -> OUT | refused CODE | fail CODE
 *       (rsa_pubkey_set of the big-endian modulus N and decimal exponent E, then s^e mod n)
 *   pkcs1 DER MSG SIG  -> ok | fail CODE | refused CODE
 *   pss DER MSG SIG    -> ok | fail CODE | refused CODE
 *       (RSASSA-PKCS1-v1_5 / RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt, under the
 *       key DER; refused is the key's error)
 *   privkey BLOB       -> ok | refused CODE
 *       (rsa_privkey_set of the blob n || e || p || q || dp || dq || qinv; later commands sign
 *       with it)
 *   sign DIGEST SALT   -> SIG | fail CODE SIG
 *       (rsa_pss_sha256_sign_digest with the loaded private key, or the one a refused privkey
 *       left zeroed; the buffer is filled with 0xAA first, so a failure shows whether it was
 *       zeroed; SIG is "-" when the key has no length)
 *   fault FIELD        -> ok
 *       (flips the low bit of the loaded key's dp, dq or qinv, as a fault in memory would, so
 *       the next sign must be refused)
 *
 * A malformed command prints "error". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../crypto/rsa/rsa.h"
#include "hexio.h"

#define MAXBYTES 65536

static uint8_t a[MAXBYTES], b[MAXBYTES], c[MAXBYTES], o[MAXBYTES];
static char line[2 * 3 * MAXBYTES + 64];

static long unhex(uint8_t *out, const char *s)
{
	return hexio_unhex(out, MAXBYTES, s);
}

static void puthex(const uint8_t *p, size_t n)
{
	size_t i;
	if (n == 0)
		putchar('-');
	for (i = 0; i < n; i++)
		printf("%02X", p[i]);
}

static struct rsa_pubkey key;
static struct rsa_privkey priv;

/* signing runs the private-key commands (privkey, sign, fault). */
static int signing(const char *cmd, const char *x, const char *y)
{
	long na, nb;
	int err;

	if (strcmp(cmd, "privkey") == 0) {
		if ((na = unhex(a, x)) < 0)
			return -1;
		err = rsa_privkey_set(&priv, a, (size_t)na);
		if (err == RSA_OK)
			printf("ok\n");
		else
			printf("refused %d\n", err);
		return 0;
	}
	if (strcmp(cmd, "sign") == 0) {
		if ((na = unhex(a, x)) != 32 || (nb = unhex(b, y)) != RSA_PSS_SALT_BYTES)
			return -1;
		memset(o, 0xaa, priv.pub.bytes);
		if ((err = rsa_pss_sha256_sign_digest(&priv, o, a, b)) != RSA_OK)
			printf("fail %d ", err);
		puthex(o, priv.pub.bytes);
		putchar('\n');
		return 0;
	}
	if (strcmp(cmd, "fault") == 0 && x != NULL && priv.half != 0) {
		if (strcmp(x, "dp") == 0)
			priv.p.d[0] ^= 1;
		else if (strcmp(x, "dq") == 0)
			priv.q.d[0] ^= 1;
		else if (strcmp(x, "qinv") == 0)
			priv.qinv[0] ^= 1;
		else
			return -1;
		printf("ok\n");
		return 0;
	}
	return -1;
}

static int run(const char *cmd, const char *x, const char *y, const char *z)
{
	long na, nb, nc;
	int err;

	if (strcmp(cmd, "pubkey") == 0) {
		if ((na = unhex(a, x)) < 0)
			return -1;
		if ((err = rsa_pubkey_parse(&key, a, (size_t)na)) != RSA_OK) {
			printf("refused %d\n", err);
			return 0;
		}
		memset(o, 0, sizeof o);
		for (size_t i = 0; i < key.bytes; i++)
			o[key.bytes - 1 - i] = (uint8_t)(key.n[i / 4] >> (8 * (i % 4)));
		puthex(o, key.bytes);
		printf(" %lu\n", (unsigned long)key.e);
		return 0;
	}
	if (strcmp(cmd, "public") == 0) {
		char *end;
		unsigned long e;
		if ((na = unhex(a, x)) < 0 || y == NULL || (nc = unhex(c, z)) < 0)
			return -1;
		e = strtoul(y, &end, 10);
		if (*end != '\0' || e > 0xffffffffUL)
			return -1;
		if ((err = rsa_pubkey_set(&key, a, (size_t)na, (uint32_t)e)) != RSA_OK) {
			printf("refused %d\n", err);
			return 0;
		}
		if ((err = rsa_public(&key, o, c, (size_t)nc)) != RSA_OK) {
			printf("fail %d\n", err);
			return 0;
		}
		puthex(o, key.bytes);
		putchar('\n');
		return 0;
	}
	if (strcmp(cmd, "pkcs1") == 0 || strcmp(cmd, "pss") == 0) {
		if ((na = unhex(a, x)) < 0 || (nb = unhex(b, y)) < 0 || (nc = unhex(c, z)) < 0)
			return -1;
		if ((err = rsa_pubkey_parse(&key, a, (size_t)na)) != RSA_OK) {
			printf("refused %d\n", err);
			return 0;
		}
		err = (cmd[1] == 'k' ? rsa_pkcs1_sha256_verify : rsa_pss_sha256_verify)(&key, b, (size_t)nb, c,
											  (size_t)nc);
		if (err == RSA_OK)
			printf("ok\n");
		else
			printf("fail %d\n", err);
		return 0;
	}
	return signing(cmd, x, y);
}

int main(void)
{
	while (fgets(line, sizeof line, stdin) != NULL) {
		char *cmd = strtok(line, " \r\n"), *x = strtok(NULL, " \r\n"), *y = strtok(NULL, " \r\n"),
		     *z = strtok(NULL, " \r\n");
		if (cmd == NULL)
			continue;
		if (run(cmd, x, y, z) != 0)
			printf("error\n");
		fflush(stdout);
	}
	return 0;
}
