/* The hashing pass (hashshare.h): the wrapped twins of crypto/keccak and crypto/sha2 and the
 * code patching that reaches them for the pass only. */
#include "hashshare.h"

#include "fw.h"

#if FW_HASH_PATCH && (defined(__thumb__) || defined(__riscv))
#define FWH_ON 1
#else
#define FWH_ON 0
#endif

#if FWH_ON
#include "../crypto/keccak/keccak.h"
#include "../crypto/sha2/sha2.h"

static struct fw_hash_tally tally;

/* Every global function of the two sources: its type's parameters and the call's arguments.
 * A function missing here would run unpatched, its instructions counted as not hashing. */
#define FWH_FUNCS(X)                                                                           \
	X(keccak_f1600, (uint64_t s[25]), (s))                                                 \
	X(keccak_init, (keccak_ctx * c, unsigned int rate), (c, rate))                         \
	X(keccak_absorb, (keccak_ctx * c, const uint8_t *in, size_t len), (c, in, len))        \
	X(keccak_finalize, (keccak_ctx * c, uint8_t ds), (c, ds))                              \
	X(keccak_squeeze, (keccak_ctx * c, uint8_t *out, size_t len), (c, out, len))           \
	X(shake128_init, (keccak_ctx * c), (c))                                                \
	X(shake256_init, (keccak_ctx * c), (c))                                                \
	X(shake_finalize, (keccak_ctx * c), (c))                                               \
	X(sha3_256, (uint8_t out[32], const uint8_t *in, size_t len), (out, in, len))          \
	X(sha3_512, (uint8_t out[64], const uint8_t *in, size_t len), (out, in, len))          \
	X(shake128, (uint8_t * out, size_t outlen, const uint8_t *in, size_t len), (out, outlen, in, len)) \
	X(shake256, (uint8_t * out, size_t outlen, const uint8_t *in, size_t len), (out, outlen, in, len)) \
	X(sha256_init, (sha256_ctx * c), (c))                                                  \
	X(sha256_update, (sha256_ctx * c, const uint8_t *in, size_t len), (c, in, len))        \
	X(sha256_final, (sha256_ctx * c, uint8_t out[32]), (c, out))                           \
	X(sha256, (uint8_t out[32], const uint8_t *in, size_t len), (out, in, len))            \
	X(sha512_init, (sha512_ctx * c), (c))                                                  \
	X(sha512_update, (sha512_ctx * c, const uint8_t *in, size_t len), (c, in, len))        \
	X(sha512_final, (sha512_ctx * c, uint8_t out[64]), (c, out))                           \
	X(sha512, (uint8_t out[64], const uint8_t *in, size_t len), (out, in, len))

/* The twins' bodies: crypto/keccak/keccak.c and crypto/sha2/sha2.c compiled a second time
 * with hashtwin.h's names (the Makefile's twin_keccak.o and twin_sha2.o). */
#define FWH_BODY(name, params, args) void fwh_b_##name params;
FWH_FUNCS(FWH_BODY)

/* A wrapper adds the counter's advance across its body to the tally: the twin's bodies call
 * each other, never a wrapper, so only the outermost call of a nest is counted. */
#define FWH_WRAP(name, params, args)                                                           \
	void fwh_w_##name params;                                                              \
	void fwh_w_##name params                                                               \
	{                                                                                      \
		uint64_t t0 = plat_counter();                                                  \
		fwh_b_##name args;                                                             \
		tally.count += plat_counter() - t0;                                            \
		tally.calls++;                                                                 \
	}
FWH_FUNCS(FWH_WRAP)

/* Each timed entry point (keccak.h, sha2.h) beside its wrapped twin. */
#define FWH_PAIR(name, params, args) {(uintptr_t)&name, (uintptr_t)&fwh_w_##name},
static const struct {
	uintptr_t plain, twin;
} fwh_pairs[] = {FWH_FUNCS(FWH_PAIR)};
#define FWH_N (sizeof fwh_pairs / sizeof fwh_pairs[0])

/* The first four bytes of each timed entry point, kept while it is patched. */
static uint16_t fwh_saved[FWH_N][2];
static int fwh_patched;

/* fwh_branch encodes an unconditional branch from at to target into two halfwords (in
 * memory order); -1 when target is out of its range. */
static int fwh_branch(uintptr_t at, uintptr_t target, uint16_t hw[2])
{
#if defined(__thumb__)
	/* B.W (encoding T4): offset from at + 4, 25 bits signed. */
	int32_t off = (int32_t)(target - (at + 4u));
	uint32_t o = (uint32_t)off, s = (o >> 24) & 1u;
	uint32_t j1 = ~(((o >> 23) & 1u) ^ s) & 1u, j2 = ~(((o >> 22) & 1u) ^ s) & 1u;
	if (off < -(1 << 24) || off >= (1 << 24))
		return -1;
	hw[0] = (uint16_t)(0xF000u | (s << 10) | ((o >> 12) & 0x3FFu));
	hw[1] = (uint16_t)(0x9000u | (j1 << 13) | (j2 << 11) | ((o >> 1) & 0x7FFu));
#else
	/* JAL x0: offset from at, 21 bits signed. */
	int32_t off = (int32_t)(target - at);
	uint32_t o = (uint32_t)off, insn;
	if (off < -(1 << 20) || off >= (1 << 20))
		return -1;
	insn = (((o >> 20) & 1u) << 31) | (((o >> 1) & 0x3FFu) << 21) | (((o >> 11) & 1u) << 20) |
	       (((o >> 12) & 0xFFu) << 12) | 0x6Fu;
	hw[0] = (uint16_t)insn;
	hw[1] = (uint16_t)(insn >> 16);
#endif
	return 0;
}

/* fwh_sync makes the core fetch the instructions just written. */
static void fwh_sync(void)
{
#if defined(__thumb__)
	__asm__ volatile("dsb\n\tisb" ::: "memory");
#else
	__asm__ volatile(".word 0x0000100f" ::: "memory"); /* fence.i */
#endif
}

/* fwh_write stores two halfwords at a (Thumb addresses carry the state in bit 0) and reports
 * whether they read back. */
static int fwh_write(uintptr_t a, const uint16_t hw[2])
{
	volatile uint16_t *p = (volatile uint16_t *)(a & ~(uintptr_t)1);
	p[0] = hw[0];
	p[1] = hw[1];
	return p[0] == hw[0] && p[1] == hw[1];
}

static void fwh_restore(unsigned int n)
{
	unsigned int i;
	for (i = 0; i < n; i++)
		(void)fwh_write(fwh_pairs[i].plain, fwh_saved[i]);
	fwh_sync();
	fwh_patched = 0;
}

int fw_hash_available(void) { return 1; }

int fw_hash_begin(void)
{
	unsigned int i;
	uint16_t hw[2];
	if (fwh_patched)
		return -1;
	tally.count = 0;
	tally.calls = 0;
	for (i = 0; i < FWH_N; i++) {
		volatile const uint16_t *p = (volatile const uint16_t *)(fwh_pairs[i].plain & ~(uintptr_t)1);
		fwh_saved[i][0] = p[0];
		fwh_saved[i][1] = p[1];
		if (fwh_branch(fwh_pairs[i].plain & ~(uintptr_t)1, fwh_pairs[i].twin & ~(uintptr_t)1, hw) != 0 ||
		    !fwh_write(fwh_pairs[i].plain, hw)) {
			fwh_restore(i + 1);
			return -1;
		}
	}
	fwh_sync();
	fwh_patched = 1;
	return 0;
}

struct fw_hash_tally fw_hash_end(void)
{
	if (fwh_patched)
		fwh_restore(FWH_N);
	return tally;
}

#else

int fw_hash_available(void) { return 0; }
int fw_hash_begin(void) { return -1; }
struct fw_hash_tally fw_hash_end(void)
{
	struct fw_hash_tally t = {0, 0};
	return t;
}

#endif
