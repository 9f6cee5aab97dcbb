/* p256bench: a board image (not the firmware) that counts crypto/p256's operations on the
 * board's counter (retired instructions on the emulated boards, QEMU -icount) for
 * p256_test.go. Twice over, it prints per line one operation's count, its painted stack
 * high-water mark, its result and its output:
 *
 *   keygen A, keygen B     two fixed scalars (0x5a.., 0xa5..; 0xa5.. is below n)
 *   ecdh AB, ecdh BA       A's scalar with B's point and B's with A's: the same secret
 *   verify W7, verify W353 two valid signatures of Wycheproof's ecdsa_secp256r1_sha256_test.json
 *                          (tcId 7 and 353; different keys, both 71-byte DER over "123400")
 *   verify X               tcId 7's signature under tcId 353's key: refused at the comparison
 *   sign A, sign B         RFC 6979 signatures of one digest (32 bytes 0x77) with A's and B's
 *   sign HA, sign HB       scalars, then both hedged with 32 bytes 0x3c. The four DER encodings
 *                          have one shape (a 32-byte r, a 33-byte s), so each pair's counts
 *                          must be equal whatever the secrets (hedging hashes 64 bytes more).
 *
 * The test compares the outputs with the host build and the counts between the two passes and
 * between inputs of the same lengths. */
#include "../crypto/pqmem.h"

#include "benchimg.h"
#include "../crypto/p256/p256.h"

static const uint8_t msg[] = {0x31, 0x32, 0x33, 0x34, 0x30, 0x30};

static const char pub7_hex[] =
	"042927b10512bae3eddcfe467828128bad2903269919f7086069c8c4df6c732838c7787964eaac00e5921fb149"
	"8a60f4606766b3d9685001558d1a974e7341513e";
static const char sig7_hex[] =
	"304502202ba3a8be6b94d5ec80a6d9d1190a436effe50d85a1eee859b8cc6af9bd5c2e18022100b329f479a2bb"
	"d0a5c384ee1493b1f5186a87139cac5df4087c134b49156847db";
static const char pub353_hex[] =
	"0480984f39a1ff38a86a68aa4201b6be5dfbfecf876219710b07badf6fdd4c6c5611feb97390d9826e7a06dfb4"
	"1871c940d74415ed3cac2089f1445019bb55ed95";
static const char sig353_hex[] =
	"304502207ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffd022100909135bdb679"
	"9286170f5ead2de4f6511453fe50914f3df2de54a36383df8dd4";

static uint8_t da[32], db[32], pa[P256_POINT_LEN], pb[P256_POINT_LEN], z[32];
static uint8_t pub7[P256_POINT_LEN], pub353[P256_POINT_LEN], sig7[71], sig353[71];
static uint8_t digest77[32], rnd3c[32], sig_out[P256_SIG_DER_MAX];

/* One operation: which, its inputs, its count and result. */
static struct {
	int op;
	const uint8_t *k, *pub, *sig, *rnd;
	uint8_t *out;
	size_t out_len;
	uint64_t count;
	int rc;
} job;

enum { OP_KEYGEN, OP_ECDH, OP_VERIFY, OP_SIGN };

static void unhex(uint8_t *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c[2] = {s[2 * i], s[2 * i + 1]};
		uint8_t v = 0;
		for (int j = 0; j < 2; j++)
			v = (uint8_t)(v << 4 | (c[j] <= '9' ? c[j] - '0' : c[j] - 'a' + 10));
		out[i] = v;
	}
}

static void run(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	switch (job.op) {
	case OP_KEYGEN:
		job.rc = p256_keygen(job.out, job.k);
		break;
	case OP_ECDH:
		job.rc = p256_ecdh(job.out, job.k, job.pub, P256_POINT_LEN);
		break;
	case OP_SIGN:
		job.rc = p256_sign_digest(job.out, &job.out_len, job.k, digest77, job.rnd);
		break;
	default:
		job.rc = p256_verify(job.pub, P256_POINT_LEN, msg, sizeof msg, job.sig, 71);
	}
	t1 = plat_counter();
	plat_timed_end();
	job.count = t1 - t0;
}

static void one(const char *name, int op, const uint8_t *k, const uint8_t *pub, const uint8_t *sig,
	uint8_t *out, size_t out_len)
{
	job.op = op;
	job.k = k;
	job.pub = pub;
	job.sig = sig;
	job.out = out;
	job.out_len = out_len;
	uint32_t stack = plat_stack_run(run, NULL);
	put("p256 op=");
	put(name);
	put(" unit=");
	put(fw_board_info.unit);
	put_num(" count=", job.count);
	put_num(" stack=", stack);
	put(" rc=");
	put_int(job.rc);
	put(" out=");
	if (job.out_len)
		put_hex(out, job.out_len);
	else
		put("-");
	put("\n");
}

void fw_main(void)
{
	plat_init();
	memset(da, 0x5a, sizeof da);
	memset(db, 0xa5, sizeof db);
	unhex(pub7, pub7_hex, sizeof pub7);
	unhex(sig7, sig7_hex, sizeof sig7);
	unhex(pub353, pub353_hex, sizeof pub353);
	unhex(sig353, sig353_hex, sizeof sig353);
	memset(digest77, 0x77, sizeof digest77);
	memset(rnd3c, 0x3c, sizeof rnd3c);
	for (int i = 0; i < 2; i++) {
		one("keygen-a", OP_KEYGEN, da, NULL, NULL, pa, sizeof pa);
		one("keygen-b", OP_KEYGEN, db, NULL, NULL, pb, sizeof pb);
		one("ecdh-ab", OP_ECDH, da, pb, NULL, z, sizeof z);
		one("ecdh-ba", OP_ECDH, db, pa, NULL, z, sizeof z);
		one("verify-w7", OP_VERIFY, NULL, pub7, sig7, NULL, 0);
		one("verify-w353", OP_VERIFY, NULL, pub353, sig353, NULL, 0);
		one("verify-x", OP_VERIFY, NULL, pub353, sig7, NULL, 0);
		job.rnd = NULL;
		one("sign-a", OP_SIGN, da, NULL, NULL, sig_out, 0);
		one("sign-b", OP_SIGN, db, NULL, NULL, sig_out, 0);
		job.rnd = rnd3c;
		one("sign-ha", OP_SIGN, da, NULL, NULL, sig_out, 0);
		one("sign-hb", OP_SIGN, db, NULL, NULL, sig_out, 0);
	}
	bench_done();
}
