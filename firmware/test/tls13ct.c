/* tls13ct: the constant-time check of the TLS client's ECDH path on the host (tls13client_test.go
 * runs it under valgrind memcheck, built with -DTLS13C_CT_CHECK -DP256_CT_CHECK). For X25519,
 * secp256r1 and X25519MLKEM768 it starts the client with the 32-byte ECDH secret marked
 * undefined, marks the ClientHello it sends defined (it is public), answers with a ServerHello
 * made here (the harness's own X25519 or P-256 key share, and for the hybrid an ML-KEM-768
 * ciphertext for the client's encapsulation key) and feeds it to the client, which computes the
 * shared secret and runs the key schedule to the handshake traffic keys and their AES-GCM key
 * setup. Memcheck reports any branch or memory index that depends on the secret ("Conditional
 * jump or move depends on uninitialised value", "Use of uninitialised value") in key-share
 * generation, the ECDH computation, HKDF, and AES-GCM's key and H setup; what the client
 * declassifies on purpose (the public key share, whether the peer's point was refused: that
 * becomes an alert) is marked defined there (TLS13C_CT_CHECK). Each group runs with several
 * secrets. With "control" the harness also branches on the secret itself, to show the check
 * reports a leak. Argument 1 is the trust anchor's DER file (the client needs one to start).
 * Prints "tls13ct N/N" with the handshakes that reached the encrypted extensions state. */
#include <stdio.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "../crypto/c25519/c25519.h"
#include "../crypto/p256/p256.h"
#include "../crypto/tls13/tls13c.h"

static struct tls13c c;
static uint8_t ca[X509_MAX_DER], rec[8192];
static volatile int sink;

/* server_hello writes the ServerHello record for group g with key share sh (n bytes) to rec. */
static size_t server_hello(uint16_t g, const uint8_t *sh, size_t n)
{
	size_t ext = 6 + 8 + n, body = 2 + 32 + 1 + 2 + 1 + 2 + ext, i = 0;
	rec[i++] = 22, rec[i++] = 3, rec[i++] = 3;
	rec[i++] = (uint8_t)((body + 4) >> 8), rec[i++] = (uint8_t)(body + 4);
	rec[i++] = 2, rec[i++] = 0, rec[i++] = (uint8_t)(body >> 8), rec[i++] = (uint8_t)body;
	rec[i++] = 3, rec[i++] = 3;
	memset(rec + i, 0x33, 32), i += 32;
	rec[i++] = 0;                      /* legacy_session_id_echo */
	rec[i++] = 0x13, rec[i++] = 0x01;  /* TLS_AES_128_GCM_SHA256 */
	rec[i++] = 0;                      /* compression */
	rec[i++] = (uint8_t)(ext >> 8), rec[i++] = (uint8_t)ext;
	rec[i++] = 0, rec[i++] = 43, rec[i++] = 0, rec[i++] = 2, rec[i++] = 3, rec[i++] = 4;
	rec[i++] = 0, rec[i++] = 51, rec[i++] = (uint8_t)((n + 4) >> 8), rec[i++] = (uint8_t)(n + 4);
	rec[i++] = (uint8_t)(g >> 8), rec[i++] = (uint8_t)g, rec[i++] = (uint8_t)(n >> 8), rec[i++] = (uint8_t)n;
	memcpy(rec + i, sh, n);
	return i + n;
}

/* run does one handshake up to the ServerHello for group g with the ECDH secret sk; 1 when the
 * client reached TLS13C_WAIT_EE. */
static int run(uint16_t g, const uint8_t sk[32], size_t ca_len, int control)
{
	static const uint8_t random[32] = {1}, seed[64] = {2}, srv_sk[32] = {0x42, 0x42, 0x42}, m[32] = {3};
	uint8_t secret[32], share[MLKEM768_CTBYTES + 65], ss[32];
	const uint8_t *cs;
	struct tls13c_config cfg = {g, "board.pqrepro.test", ca, ca_len, 1796194800, random, seed, secret};
	size_t n = 0;
	int r;
	memcpy(secret, sk, 32);
	VALGRIND_MAKE_MEM_UNDEFINED(secret, sizeof secret);
	if (control && (secret[0] & 1))
		sink++;
	r = tls13c_start(&c, &cfg);
	VALGRIND_MAKE_MEM_DEFINED(&r, sizeof r);
	if (r != 0)
		return 0;
	VALGRIND_MAKE_MEM_DEFINED(c.out, c.out_len); /* the ClientHello: public */
	cs = c.out + c.out_len;                       /* the client's key share ends the record */
	c.out_len = 0;
	switch (g) {
	case 0x001d:
		x25519_base(share, srv_sk);
		n = 32;
		break;
	case 0x0017:
		if (p256_keygen(share, srv_sk) != 0)
			return 0;
		n = P256_POINT_LEN;
		break;
	case 0x11ec:
		if (mlkem768_encaps(share, ss, cs - MLKEM768_EKBYTES - X25519_BYTES, m) != 0)
			return 0;
		x25519_base(share + MLKEM768_CTBYTES, srv_sk);
		n = MLKEM768_CTBYTES + X25519_BYTES;
		break;
	}
	r = tls13c_input(&c, rec, server_hello(g, share, n));
	VALGRIND_MAKE_MEM_DEFINED(&r, sizeof r);
	VALGRIND_MAKE_MEM_DEFINED(&c.state, sizeof c.state);
	return r == 0 && c.state == TLS13C_WAIT_EE;
}

int main(int argc, char **argv)
{
	static const uint16_t groups[] = {0x001d, 0x0017, 0x11ec};
	int control = argc > 2 && strcmp(argv[2], "control") == 0, ok = 0, runs = 0;
	uint32_t x = 0x9e3779b9u;
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	size_t ca_len;
	if (f == NULL)
		return 2;
	ca_len = fread(ca, 1, sizeof ca, f);
	fclose(f);
	for (size_t gi = 0; gi < sizeof groups / sizeof groups[0]; gi++) {
		for (int i = 0; i < 4; i++) {
			uint8_t sk[32];
			for (int j = 0; j < 32; j++) {
				x = x * 1103515245u + 12345u;
				sk[j] = (uint8_t)(x >> 16);
			}
			if (i == 0) /* a small scalar: 1 */
				memset(sk, 0, 31), sk[31] = 1;
			ok += run(groups[gi], sk, ca_len, control);
			runs++;
		}
	}
	printf("tls13ct %d/%d\n", ok, runs);
	return 0;
}
