/* rsabench: a board image (not the firmware) that counts crypto/rsa on the board: parsing and
 * preparing Wycheproof's RSA-2048 key (e = 65537; rsa_pubkey_parse with its R^2 mod n), verifying
 * its tcId 1 PKCS #1 v1.5 signature and its tcId 1 PSS signature (both over the empty message,
 * SHA-256 included), each on a painted stack, and the same PKCS #1 v1.5 signature with one bit
 * flipped, which must be refused; then PSS verification of three signatures of one message (tcIds
 * 4, 73 and 74: a random salt, zeros, ones), whose counts must agree. It prints two rounds, for
 * rsa_test.go to check that the counts repeat. */
#include "benchimg.h"
#include "../crypto/pqmem.h"
#include "../crypto/rsa/rsa.h"

extern const uint8_t rsa_key[], rsa_key_end[], rsa_sig_pkcs1[], rsa_sig_pss[], rsa_sig_pss_same[];

static struct rsa_pubkey key;
static uint8_t bad[RSA_MAX_BYTES];
static uint64_t t_parse, t_pkcs1, t_pss, t_same[3];
static int rc_parse, rc_pkcs1, rc_pss, rc_bad, rc_same[3];

static void parse(void *arg)
{
	(void)arg;
	BENCH_COUNT(t_parse, rc_parse = rsa_pubkey_parse(&key, rsa_key, (size_t)(rsa_key_end - rsa_key)));
}

static void pkcs1(void *arg)
{
	(void)arg;
	BENCH_COUNT(t_pkcs1, rc_pkcs1 = rsa_pkcs1_sha256_verify(&key, (const uint8_t *)"", 0, rsa_sig_pkcs1, key.bytes));
}

static void pss(void *arg)
{
	(void)arg;
	BENCH_COUNT(t_pss, rc_pss = rsa_pss_sha256_verify(&key, (const uint8_t *)"", 0, rsa_sig_pss, key.bytes));
}

static void pss_same(void *arg)
{
	static const uint8_t msg[6] = {'1', '2', '3', '4', '0', '0'};
	size_t j = *(const size_t *)arg;
	BENCH_COUNT(t_same[j], rc_same[j] = rsa_pss_sha256_verify(&key, msg, sizeof msg, rsa_sig_pss_same + j * key.bytes, key.bytes));
}

void fw_main(void)
{
	int i;
	size_t j;
	plat_init();
	for (i = 0; i < 2; i++) {
		uint32_t s_parse = plat_stack_run(parse, NULL);
		uint32_t s_pkcs1 = plat_stack_run(pkcs1, NULL);
		uint32_t s_pss = plat_stack_run(pss, NULL);
		memcpy(bad, rsa_sig_pkcs1, key.bytes);
		bad[key.bytes / 2] ^= 0x10;
		rc_bad = rsa_pkcs1_sha256_verify(&key, (const uint8_t *)"", 0, bad, key.bytes);
		for (j = 0; j < 3; j++)
			plat_stack_run(pss_same, &j);
		put("rsabench");
		put_board();
		put_num(" parse=", t_parse);
		put_num(" parse_stack=", s_parse);
		put_num(" pkcs1=", t_pkcs1);
		put_num(" pkcs1_stack=", s_pkcs1);
		put_num(" pss=", t_pss);
		put_num(" pss_stack=", s_pss);
		put(" rc=");
		put_int(rc_parse);
		put(",");
		put_int(rc_pkcs1);
		put(",");
		put_int(rc_pss);
		put(",");
		put_int(rc_bad);
		for (j = 0; j < 3; j++)
			put_num(j == 0 ? " same=" : ",", t_same[j]);
		for (j = 0; j < 3; j++) {
			put(j == 0 ? " same_rc=" : ",");
			put_int(rc_same[j]);
		}
		put("\n");
	}
	bench_done();
}
