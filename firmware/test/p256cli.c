/* p256cli: the host test driver of crypto/p256 (firmware/p256_test.go). One command a line on
 * standard input, arguments in hex ("-" for empty), one answer a line on standard output:
 *
 *   p256-keygen PRIV          -> PUB (65 bytes) | fail CODE
 *   p256-ecdh PRIV PEER       -> SHARED (32 bytes) | fail CODE
 *   p256-verify PUB MSG SIG   -> ok | fail CODE
 *   p256-verify-digest PUB DIGEST SIG -> ok | fail CODE
 *   p256-der SIG              -> R S (32 bytes each) | fail CODE
 *   p256-sign PRIV DIGEST [RND] -> SIG (DER) | fail CODE (RFC 6979 without RND, hedged with it)
 *
 * CODE is p256.h's negative result. A line it cannot read (unknown command, bad hex, wrong
 * argument count or size, longer than the buffer) is answered "error". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../crypto/p256/p256.h"
#include "hexio.h"

#define LINE_MAX_BYTES (1 << 20)
#define ARG_MAX_BYTES 65536

static char line[LINE_MAX_BYTES];

static void puthex(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
}

static uint8_t a0[ARG_MAX_BYTES], a1[ARG_MAX_BYTES], a2[ARG_MAX_BYTES];

static int run(char **arg, int argc)
{
	long n0 = argc > 1 ? hexio_unhex(a0, sizeof a0, arg[1]) : -1;
	long n1 = argc > 2 ? hexio_unhex(a1, sizeof a1, arg[2]) : -1;
	long n2 = argc > 3 ? hexio_unhex(a2, sizeof a2, arg[3]) : -1;
	int rc;
	if (strcmp(arg[0], "p256-keygen") == 0 && argc == 2 && n0 == P256_SCALAR_LEN) {
		uint8_t pub[P256_POINT_LEN];
		rc = p256_keygen(pub, a0);
		if (rc == 0) {
			puthex(pub, sizeof pub);
			printf("\n");
			return 0;
		}
	} else if (strcmp(arg[0], "p256-ecdh") == 0 && argc == 3 && n0 == P256_SCALAR_LEN && n1 >= 0) {
		uint8_t z[32];
		rc = p256_ecdh(z, a0, a1, (size_t)n1);
		if (rc == 0) {
			puthex(z, sizeof z);
			printf("\n");
			return 0;
		}
	} else if (strcmp(arg[0], "p256-verify") == 0 && argc == 4 && n0 >= 0 && n1 >= 0 && n2 >= 0) {
		rc = p256_verify(a0, (size_t)n0, a1, (size_t)n1, a2, (size_t)n2);
		if (rc == 0) {
			printf("ok\n");
			return 0;
		}
	} else if (strcmp(arg[0], "p256-verify-digest") == 0 && argc == 4 && n0 >= 0 && n1 == 32 && n2 >= 0) {
		rc = p256_verify_digest(a0, (size_t)n0, a1, a2, (size_t)n2);
		if (rc == 0) {
			printf("ok\n");
			return 0;
		}
	} else if (strcmp(arg[0], "p256-sign") == 0 && (argc == 3 || (argc == 4 && n2 == 32)) && n0 == P256_SCALAR_LEN &&
		   n1 == 32) {
		uint8_t sig[P256_SIG_DER_MAX];
		size_t sig_len;
		rc = p256_sign_digest(sig, &sig_len, a0, a1, argc == 4 ? a2 : NULL);
		if (rc == 0) {
			puthex(sig, sig_len);
			printf("\n");
			return 0;
		}
	} else if (strcmp(arg[0], "p256-der") == 0 && argc == 2 && n0 >= 0) {
		uint8_t r[32], s[32];
		rc = p256_sig_der(r, s, a0, (size_t)n0);
		if (rc == 0) {
			puthex(r, 32);
			printf(" ");
			puthex(s, 32);
			printf("\n");
			return 0;
		}
	} else {
		return -1;
	}
	printf("fail %d\n", rc);
	return 0;
}

int main(void)
{
	while (fgets(line, sizeof line, stdin)) {
		size_t n = strlen(line);
		if (n && line[n - 1] != '\n' && !feof(stdin)) {
			/* too long: skip the rest of it */
			int c;
			while ((c = getchar()) != EOF && c != '\n')
				;
			printf("error\n");
			fflush(stdout);
			continue;
		}
		char *arg[8];
		int argc = 0;
		for (char *tok = strtok(line, " \t\r\n"); tok && argc < 8; tok = strtok(NULL, " \t\r\n"))
			arg[argc++] = tok;
		if (argc == 0 || run(arg, argc) < 0)
			printf("error\n");
		fflush(stdout);
	}
	return 0;
}
