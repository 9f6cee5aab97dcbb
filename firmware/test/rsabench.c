/* rsabench: a board image (not the firmware) that counts crypto/rsa on the board: parsing and
 * preparing Wycheproof's RSA-2048 key (e = 65537; rsa_pubkey_parse with its R^2 mod n), verifying
 * its tcId 1 PKCS #1 v1.5 signature and its tcId 1 PSS signature (both over the empty message,
 * SHA-256 included), each on a painted stack, and the same PKCS #1 v1.5 signature with one bit
 * flipped, which must be refused; then PSS verification of three signatures of one message (tcIds
 * 4, 73 and 74: a random salt, zeros, ones), whose counts must agree. Then signing (an "rsasign"
 * line): rsa_privkey_set of two Go-generated RSA-2048 keys (testdata/rsa/signkey-a.blob and -b),
 * and RSA-PSS signatures of four digests with four salts (digest j = SHA-256 of the one byte j,
 * salt j = 32 bytes of j * 0x55; key a for j = 0..2, key b for j = 3), each verified on the board
 * and reported by the first 16 bytes of its SHA-256 for the test to compare with Go's; the counts
 * must agree across keys, digests and salts. It prints two rounds, for rsa_test.go to check
 * that the counts repeat. */
#include "benchimg.h"
#include "../crypto/pqmem.h"
#include "../crypto/rsa/rsa.h"
#include "../crypto/sha2/sha2.h"

extern const uint8_t rsa_key[], rsa_key_end[], rsa_sig_pkcs1[], rsa_sig_pss[], rsa_sig_pss_same[];
extern const uint8_t rsa_signkeys[], rsa_signkeys_end[];

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

#define SIGNS 4

static struct rsa_privkey priv;
static uint8_t sig[RSA_MAX_BYTES], digest[32], salt[32];
static uint64_t t_set[2], t_sign[SIGNS];
static int rc_set[2], rc_sign[SIGNS], rc_verify[SIGNS];
static uint8_t sig_hash[SIGNS][32];

static void privkey_set(void *arg)
{
	size_t j = *(const size_t *)arg, len = (size_t)(rsa_signkeys_end - rsa_signkeys) / 2;
	BENCH_COUNT(t_set[j], rc_set[j] = rsa_privkey_set(&priv, rsa_signkeys + j * len, len));
}

static void sign(void *arg)
{
	size_t j = *(const size_t *)arg;
	BENCH_COUNT(t_sign[j], rc_sign[j] = rsa_pss_sha256_sign_digest(&priv, sig, digest, salt));
}

/* sign_round signs the four cases (see the top) and prints one rsasign line. */
static void sign_round(void)
{
	uint32_t s_set = 0, s_sign = 0;
	size_t j, which;
	for (j = 0; j < SIGNS; j++) {
		uint8_t b = (uint8_t)j;
		if (j == 0 || j == SIGNS - 1) {
			which = j == 0 ? 0 : 1;
			s_set = plat_stack_run(privkey_set, &which);
		}
		sha256(digest, &b, 1);
		memset(salt, (int)(j * 0x55), sizeof salt);
		s_sign = plat_stack_run(sign, &j);
		rc_verify[j] = rsa_pss_sha256_verify_digest(&priv.pub, digest, sig, priv.pub.bytes);
		sha256(sig_hash[j], sig, priv.pub.bytes);
	}
	put("rsasign");
	put_board();
	put_num(" set=", t_set[0]);
	put_num(",", t_set[1]);
	put_num(" set_stack=", s_set);
	for (j = 0; j < SIGNS; j++)
		put_num(j == 0 ? " sign=" : ",", t_sign[j]);
	put_num(" sign_stack=", s_sign);
	put(" rc=");
	put_int(rc_set[0]);
	put(",");
	put_int(rc_set[1]);
	for (j = 0; j < SIGNS; j++) {
		put(",");
		put_int(rc_sign[j]);
	}
	for (j = 0; j < SIGNS; j++) {
		put(j == 0 ? " verify=" : ",");
		put_int(rc_verify[j]);
	}
	for (j = 0; j < SIGNS; j++) {
		put(j == 0 ? " sig=" : ",");
		put_hex(sig_hash[j], 16);
	}
	put("\n");
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
		sign_round();
	}
	bench_done();
}
