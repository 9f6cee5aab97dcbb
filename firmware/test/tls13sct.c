/* tls13sct: the constant-time check of the TLS server's secret paths on the host
 * (tls13server_test.go runs it under valgrind memcheck, built with -DTLS13C_CT_CHECK
 * -DP256_CT_CHECK -DRSA_CT_CHECK). For each group with an ECDH half (X25519, secp256r1,
 * X25519MLKEM768) and each classical scheme (Ed25519, ECDSA-P256, RSA-PSS) it reads the key blob,
 * marks the private key's values undefined (the Ed25519 seed; P-256's d; RSA's p and q with their
 * Montgomery constants, dp, dq and qinv), and starts the server with the ECDH secret, the ML-KEM
 * encapsulation's m and the signature randomness (ECDSA's hedge, the PSS salt) undefined; it then
 * feeds a ClientHello made by the Go test for the group, so that the server encapsulates, runs the
 * key schedule, signs the CertificateVerify and seals its flight. Memcheck reports any branch or
 * memory index that depends on those values ("Conditional jump or move depends on uninitialised
 * value", "Use of uninitialised value"); what the server makes public on purpose (its key share,
 * whether the client's point was refused, the signature and its length) is marked defined there
 * (TLS13C_CT_CHECK, and the signers' own checks). ML-DSA is left out: its signing time depends on
 * the rejection rounds, which the server reports. With "control" the harness also branches on
 * the ECDH secret itself, to show the check reports a leak. Argument 1 is the folder holding
 * leaf.der, key-<scheme>.bin and ch-<group>.bin (hex code points). Prints "tls13sct N/N" with
 * the handshakes that reached the state waiting for the client's Finished. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "../crypto/tls13/tls13s.h"

static struct tls13s s;
static struct tls13s_key key;
static uint8_t leaf[X509_MAX_DER], blob[4096], hello[8192];
static volatile int sink;

/* load reads dir/name into buf (at most cap bytes); the length, or 0. */
static size_t load(const char *dir, const char *name, uint8_t *buf, size_t cap)
{
	char path[1024];
	FILE *f;
	size_t n;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "rb")) == NULL)
		return 0;
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* hide marks the private values of key undefined. */
static void hide(void)
{
	const struct rsa_prime *pr[2] = {&key.u.rsa.p, &key.u.rsa.q};
	int i;
	switch (key.scheme) {
	case TLS13S_ED25519:
		VALGRIND_MAKE_MEM_UNDEFINED(key.u.ed25519.seed, sizeof key.u.ed25519.seed);
		break;
	case TLS13S_ECDSA_P256:
		VALGRIND_MAKE_MEM_UNDEFINED(key.u.p256.d, sizeof key.u.p256.d);
		break;
	case TLS13S_RSA_PSS:
		for (i = 0; i < 2; i++) {
			VALGRIND_MAKE_MEM_UNDEFINED(pr[i]->mod.n, sizeof pr[i]->mod.n);
			VALGRIND_MAKE_MEM_UNDEFINED(pr[i]->mod.rr, sizeof pr[i]->mod.rr);
			VALGRIND_MAKE_MEM_UNDEFINED(&pr[i]->mod.n0inv, sizeof pr[i]->mod.n0inv);
			VALGRIND_MAKE_MEM_UNDEFINED(pr[i]->d, sizeof pr[i]->d);
			VALGRIND_MAKE_MEM_UNDEFINED(pr[i]->rrr, sizeof pr[i]->rrr);
		}
		VALGRIND_MAKE_MEM_UNDEFINED(key.u.rsa.qinv, sizeof key.u.rsa.qinv);
		break;
	}
}

/* run does one server handshake up to its flight for group g and scheme sc with the secrets
 * sec (ECDH secret, ML-KEM m, signature randomness); 1 when the server waits for the Finished. */
static int run(const char *dir, uint16_t g, uint16_t sc, const uint8_t sec[96], size_t leaf_len, int control)
{
	static const uint8_t random[32] = {1};
	uint8_t secret[96];
	struct tls13s_config cfg = {g, &key, leaf, leaf_len, random, secret + 32, secret, secret + 64};
	char name[32];
	size_t n;
	int r;
	snprintf(name, sizeof name, "key-%04x.bin", sc);
	if ((n = load(dir, name, blob, sizeof blob)) == 0 || tls13s_key_set(&key, blob, n) != 0)
		return 0;
	snprintf(name, sizeof name, "ch-%04x.bin", g);
	if ((n = load(dir, name, hello, sizeof hello)) == 0)
		return 0;
	hide();
	memcpy(secret, sec, sizeof secret);
	VALGRIND_MAKE_MEM_UNDEFINED(secret, sizeof secret);
	if (control && (secret[0] & 1))
		sink++;
	if (tls13s_start(&s, &cfg) != 0)
		return 0;
	r = tls13s_input(&s, hello, n);
	VALGRIND_MAKE_MEM_DEFINED(&r, sizeof r);
	VALGRIND_MAKE_MEM_DEFINED(&s.state, sizeof s.state);
	VALGRIND_MAKE_MEM_DEFINED(s.out, s.out_len); /* the flight: public */
	return r == 0 && s.state == TLS13S_WAIT_FIN && s.out_len > 0;
}

int main(int argc, char **argv)
{
	static const uint16_t groups[] = {0x001d, 0x0017, 0x11ec}, schemes[] = {0x0807, 0x0403, 0x0804};
	int control = argc > 2 && strcmp(argv[2], "control") == 0, ok = 0, runs = 0;
	uint32_t x = 0x9e3779b9u;
	size_t leaf_len;
	if (argc < 2 || (leaf_len = load(argv[1], "leaf.der", leaf, sizeof leaf)) == 0)
		return 2;
	for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
		for (size_t si = 0; si < sizeof schemes / sizeof schemes[0]; si++) {
			uint8_t sec[96];
			for (int j = 0; j < 96; j++) {
				x = x * 1103515245u + 12345u;
				sec[j] = (uint8_t)(x >> 16);
			}
			ok += run(argv[1], groups[gi], schemes[si], sec, leaf_len, control);
			runs++;
		}
	}
	printf("tls13sct %d/%d\n", ok, runs);
	return 0;
}
