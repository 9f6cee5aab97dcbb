/* c25519cli: a host-only test driver for crypto/c25519. It reads one command
 * per line on stdin and prints one result line on stdout; c25519_test.go uses
 * it to check the C code against Wycheproof's x25519_test.json and
 * ed25519_test.json, the RFC 7748 and RFC 8032 examples and Go's crypto.
 *
 *   x25519 SCALAR POINT          -> ok OUT | zero OUT (x25519 refused the all-zero output)
 *   x25519-base SCALAR           -> OUT
 *   ed25519-verify PK MSG SIG    -> ok | fail (SIG of any length, PK 32 bytes)
 *   ed25519-decode S             -> OUT (canonical re-encoding) | fail
 *   ed25519-pubkey SEED          -> PK
 *   ed25519-sign SEED PK MSG     -> SIG (64 bytes)
 *
 * Arguments and results are hex; an empty byte string is written "-". A
 * malformed line (unknown command, bad hex, a fixed-size argument of the wrong
 * length) gets "error". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../crypto/c25519/c25519.h"
#include "hexio.h"

#define MAXBYTES 65536
#define MAXARGS 4

static int unhex(uint8_t *out, size_t *outlen, const char *s)
{
	long n = hexio_unhex(out, MAXBYTES, s);
	if (n < 0)
		return -1;
	*outlen = (size_t)n;
	return 0;
}

static void puthex(const uint8_t *b, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		printf("%02X", b[i]);
}

static uint8_t argbuf[MAXARGS][MAXBYTES];
static size_t arglen[MAXARGS];
static char line[2 * MAXBYTES * MAXARGS + 256];

static int run(char *cmd, char **args, int nargs)
{
	uint8_t out[64];
	int i;
	for (i = 0; i < nargs; i++)
		if (unhex(argbuf[i], &arglen[i], args[i]) != 0)
			return -1;
	if (strcmp(cmd, "x25519") == 0 && nargs == 2 && arglen[0] == 32 && arglen[1] == 32) {
		int rc = x25519(out, argbuf[0], argbuf[1]);
		printf(rc == 0 ? "ok " : "zero ");
		puthex(out, 32);
		return 0;
	}
	if (strcmp(cmd, "x25519-base") == 0 && nargs == 1 && arglen[0] == 32) {
		x25519_base(out, argbuf[0]);
		puthex(out, 32);
		return 0;
	}
	if (strcmp(cmd, "ed25519-verify") == 0 && nargs == 3 && arglen[0] == 32) {
		printf(ed25519_verify(argbuf[2], arglen[2], argbuf[0], argbuf[1], arglen[1]) == 0 ? "ok" : "fail");
		return 0;
	}
	if (strcmp(cmd, "ed25519-pubkey") == 0 && nargs == 1 && arglen[0] == 32) {
		ed25519_pubkey(out, argbuf[0]);
		puthex(out, 32);
		return 0;
	}
	if (strcmp(cmd, "ed25519-sign") == 0 && nargs == 3 && arglen[0] == 32 && arglen[1] == 32) {
		ed25519_sign(out, argbuf[0], argbuf[1], argbuf[2], arglen[2]);
		puthex(out, 64);
		return 0;
	}
	if (strcmp(cmd, "ed25519-decode") == 0 && nargs == 1 && arglen[0] == 32) {
		if (ed25519_decode_point(out, argbuf[0]) == 0)
			puthex(out, 32);
		else
			printf("fail");
		return 0;
	}
	return -1;
}

int main(void)
{
	while (fgets(line, sizeof line, stdin)) {
		char *args[MAXARGS + 1], *cmd, *tok;
		int n = 0;
		cmd = strtok(line, " \t\r\n");
		if (!cmd)
			continue;
		while ((tok = strtok(NULL, " \t\r\n")) != NULL && n <= MAXARGS)
			args[n++] = tok;
		if (n > MAXARGS || run(cmd, args, n) != 0)
			printf("error");
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
