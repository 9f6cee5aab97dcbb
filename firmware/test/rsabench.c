/* rsabench: a board image (not the firmware) that counts crypto/rsa on the board: parsing and
 * preparing Wycheproof's RSA-2048 key (e = 65537; rsa_pubkey_parse with its R^2 mod n), verifying
 * its tcId 1 PKCS #1 v1.5 signature and its tcId 1 PSS signature (both over the empty message,
 * SHA-256 included), each on a painted stack, and the same PKCS #1 v1.5 signature with one bit
 * flipped, which must be refused; then PSS verification of three signatures of one message (tcIds
 * 4, 73 and 74: a random salt, zeros, ones), whose counts must agree. It prints two rounds, for
 * rsa_test.go to check that the counts repeat. */
#include "../core/fw.h"
#include "../crypto/pqmem.h"
#include "../crypto/rsa/rsa.h"

extern const uint8_t rsa_key[], rsa_key_end[], rsa_sig_pkcs1[], rsa_sig_pss[], rsa_sig_pss_same[];

static struct rsa_pubkey key;
static uint8_t bad[RSA_MAX_BYTES];
static uint64_t t_parse, t_pkcs1, t_pss, t_same[3];
static int rc_parse, rc_pkcs1, rc_pss, rc_bad, rc_same[3];

static void put(const char *s)
{
	plat_write(s, strlen(s));
}

static void put_u64(uint64_t v)
{
	char b[24];
	int i = sizeof b;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	plat_write(b + i, sizeof b - (size_t)i);
}

static void put_int(int v)
{
	if (v < 0) {
		put("-");
		put_u64((uint64_t)(-(int64_t)v));
	} else {
		put_u64((uint64_t)v);
	}
}

static void parse(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	rc_parse = rsa_pubkey_parse(&key, rsa_key, (size_t)(rsa_key_end - rsa_key));
	t1 = plat_counter();
	plat_timed_end();
	t_parse = t1 - t0;
}

static void pkcs1(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	rc_pkcs1 = rsa_pkcs1_sha256_verify(&key, (const uint8_t *)"", 0, rsa_sig_pkcs1, key.bytes);
	t1 = plat_counter();
	plat_timed_end();
	t_pkcs1 = t1 - t0;
}

static void pss(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	rc_pss = rsa_pss_sha256_verify(&key, (const uint8_t *)"", 0, rsa_sig_pss, key.bytes);
	t1 = plat_counter();
	plat_timed_end();
	t_pss = t1 - t0;
}

static void pss_same(void *arg)
{
	static const uint8_t msg[6] = {'1', '2', '3', '4', '0', '0'};
	size_t j = *(const size_t *)arg;
	uint64_t t0, t1;
	plat_counter_align();
	t0 = plat_counter();
	rc_same[j] = rsa_pss_sha256_verify(&key, msg, sizeof msg, rsa_sig_pss_same + j * key.bytes, key.bytes);
	t1 = plat_counter();
	plat_timed_end();
	t_same[j] = t1 - t0;
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
		put("rsabench board=");
		put(fw_board_info.board);
		put(" unit=");
		put(fw_board_info.unit);
		put(" parse=");
		put_u64(t_parse);
		put(" parse_stack=");
		put_u64(s_parse);
		put(" pkcs1=");
		put_u64(t_pkcs1);
		put(" pkcs1_stack=");
		put_u64(s_pkcs1);
		put(" pss=");
		put_u64(t_pss);
		put(" pss_stack=");
		put_u64(s_pss);
		put(" rc=");
		put_int(rc_parse);
		put(",");
		put_int(rc_pkcs1);
		put(",");
		put_int(rc_pss);
		put(",");
		put_int(rc_bad);
		for (j = 0; j < 3; j++) {
			put(j == 0 ? " same=" : ",");
			put_u64(t_same[j]);
		}
		for (j = 0; j < 3; j++) {
			put(j == 0 ? " same_rc=" : ",");
			put_int(rc_same[j]);
		}
		put("\n");
	}
	put("DONE\n");
	for (;;)
		plat_idle();
}
