/* c25519bench: a board image (not the firmware) that counts crypto/c25519 on an emulated board:
 * one X25519 (RFC 7748 section 6.1: Alice's scalar, Bob's public key), one X25519 of the base
 * point (Alice's public key) and one Ed25519 verification (RFC 8032 section 7.1, TEST 3: a
 * 2-byte message), each twice, with the painted stack high-water mark and the outputs, for
 * c25519_test.go to check against the RFCs and to compare the two runs. */
#include "../core/fw.h"
#include "../crypto/c25519/c25519.h"
#include "../crypto/pqmem.h"

static const uint8_t alice[32] = {
	0x77, 0x07, 0x6d, 0x0a, 0x73, 0x18, 0xa5, 0x7d, 0x3c, 0x16, 0xc1, 0x72, 0x51, 0xb2, 0x66, 0x45,
	0xdf, 0x4c, 0x2f, 0x87, 0xeb, 0xc0, 0x99, 0x2a, 0xb1, 0x77, 0xfb, 0xa5, 0x1d, 0xb9, 0x2c, 0x2a,
};
static const uint8_t bob_pub[32] = {
	0xde, 0x9e, 0xdb, 0x7d, 0x7b, 0x7d, 0xc1, 0xb4, 0xd3, 0x5b, 0x61, 0xc2, 0xec, 0xe4, 0x35, 0x37,
	0x3f, 0x83, 0x43, 0xc8, 0x5b, 0x78, 0x67, 0x4d, 0xad, 0xfc, 0x7e, 0x14, 0x6f, 0x88, 0x2b, 0x4f,
};
static const uint8_t ed_pk[32] = {
	0xfc, 0x51, 0xcd, 0x8e, 0x62, 0x18, 0xa1, 0xa3, 0x8d, 0xa4, 0x7e, 0xd0, 0x02, 0x30, 0xf0, 0x58,
	0x08, 0x16, 0xed, 0x13, 0xba, 0x33, 0x03, 0xac, 0x5d, 0xeb, 0x91, 0x15, 0x48, 0x90, 0x80, 0x25,
};
static const uint8_t ed_msg[2] = {0xaf, 0x82};
static const uint8_t ed_sig[64] = {
	0x62, 0x91, 0xd6, 0x57, 0xde, 0xec, 0x24, 0x02, 0x48, 0x27, 0xe6, 0x9c, 0x3a, 0xbe, 0x01, 0xa3,
	0x0c, 0xe5, 0x48, 0xa2, 0x84, 0x74, 0x3a, 0x44, 0x5e, 0x36, 0x80, 0xd7, 0xdb, 0x5a, 0xc3, 0xac,
	0x18, 0xff, 0x9b, 0x53, 0x8d, 0x16, 0xf2, 0x90, 0xae, 0x67, 0xf7, 0x60, 0x98, 0x4d, 0xc6, 0x59,
	0x4a, 0x7c, 0x15, 0xe9, 0x71, 0x6e, 0xd2, 0x8d, 0xc0, 0x27, 0xbe, 0xce, 0xea, 0x1e, 0xc4, 0x0a,
};

static uint8_t out[32];
static uint64_t count;
static int rc;

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

static void put_hex(const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n; i++) {
		char h[2] = {digits[p[i] >> 4], digits[p[i] & 15]};
		plat_write(h, 2);
	}
}

static void op_x25519(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	rc = x25519(out, alice, bob_pub);
	t1 = plat_counter();
	plat_timed_end();
	count = t1 - t0;
}

static void op_base(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	x25519_base(out, alice);
	t1 = plat_counter();
	plat_timed_end();
	count = t1 - t0;
	rc = 0;
}

static void op_verify(void *arg)
{
	uint64_t t0, t1;
	(void)arg;
	memset(out, 0, sizeof out);
	plat_counter_align();
	t0 = plat_counter();
	rc = ed25519_verify(ed_sig, sizeof ed_sig, ed_pk, ed_msg, sizeof ed_msg);
	t1 = plat_counter();
	plat_timed_end();
	count = t1 - t0;
}

void fw_main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void *);
	} ops[] = {{"x25519", op_x25519}, {"x25519-base", op_base}, {"ed25519-verify", op_verify}};
	unsigned int i, r;
	plat_init();
	for (i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		for (r = 0; r < 2; r++) {
			uint32_t stack = plat_stack_run(ops[i].fn, NULL);
			put("c25519 op=");
			put(ops[i].name);
			put(" board=");
			put(fw_board_info.board);
			put(" unit=");
			put(fw_board_info.unit);
			put(" count=");
			put_u64(count);
			put(" stack=");
			put_u64(stack);
			put(rc == 0 ? " ok=1" : " ok=0");
			put(" out=");
			put_hex(out, sizeof out);
			put("\n");
		}
	}
	put("DONE\n");
	for (;;)
		plat_idle();
}
