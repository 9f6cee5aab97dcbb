/* The dispatcher: HELLO, ALGS, SEED, BENCH, SELFTEST and RESEND (firmware/PROTOCOL.md). */
#include "fw.h"

#include "../crypto/ascon/ascon.h"
#include "../crypto/keccak/keccak.h"
#include "../crypto/pqmem.h"
#include "../crypto/sha2/sha2.h"
#include "algs.h"
#include "drbg.h"
#include "impl.h"
#include "proto.h"
#include "telreq.h"
#include "vectors.h"

#define FW_MAX_ITERATIONS 100000u
/* Longest message a signature BENCH signs (msglen=), and longest fixed
 * message a request can carry (msg=, hex, so that the request stays within
 * FW_MAX_LINE). */
#if FW_HAVE_SIG
#define FW_SIG_MAX_MSG 4096u
#else
#define FW_SIG_MAX_MSG 0u
#endif
#define FW_SIG_MAX_FIXED 128u
#define FW_MAX_WARMUP 1000u

/* Request bookkeeping for duplicate suppression: a request that arrives again
 * with the seq of the last executed one is answered by replaying its frames. */
static uint32_t last_req_seq, last_req_first_tx;
static int have_last_req;

/* The request being executed; 0 when idle. Used to answer RESEND and
 * duplicates while a long command polls the UART. */
static uint32_t cur_req_seq;

static void send_error(uint32_t re, const char *code, const char *msg)
{
	fw_frame_begin("ERROR");
	fw_kv_u64("re", re);
	fw_kv_str("code", code);
	if (msg)
		fw_kv_str("msg", msg);
	fw_frame_end();
}

static void do_resend(const struct fw_req *r)
{
	const char *from = fw_req_get(r, "from");
	uint32_t f;
	if (from == 0 || fw_parse_u32(from, &f) != 0) {
		send_error(r->seq, "badarg", "from");
		return;
	}
	if (fw_resend(f) != 0)
		send_error(r->seq, "gone", 0);
}

/* FW_ALGS_CHARS bounds the algs= list of one ALG frame, so that the frame fits FW_MAX_LINE
 * with room to spare whatever names the table holds. A frame that also carries an
 * implementation (impl=, impl_ver=, impl_src=) has that much less room (algs_cap). */
#define FW_ALGS_CHARS 200
/* The rest of an ALG frame: "@<seq>:ALG:re=<seq> kind=sig impl= impl_commit= impl_src= algs=",
 * the CRC and the newline, with room to spare. */
#define FW_ALG_FRAME_FIXED 90

static const char *const kind_names[] = {"", "kem", "sig"};

/* algs_cap is how many characters of names an ALG frame carrying im (or none) may hold. */
static size_t algs_cap(const struct fw_impl *im)
{
	size_t left;
	if (im == 0)
		return FW_ALGS_CHARS;
	left = FW_MAX_LINE - FW_ALG_FRAME_FIXED - im->name_len - im->version_len - im->source_len;
	return left < FW_ALGS_CHARS ? left : FW_ALGS_CHARS;
}

static void send_alg(uint32_t re, unsigned int kind, const char *names, const struct fw_impl *im)
{
	fw_frame_begin("ALG");
	fw_kv_u64("re", re);
	fw_kv_str("kind", kind_names[kind]);
	if (im) {
		/* A value cannot hold ':' (PROTOCOL.md, Frames): the table's "commit:<hex>" is sent
		 * as impl_commit=<hex>, a version as impl_ver=. */
		static const char commit[] = "commit:";
		const size_t cl = sizeof commit - 1;
		fw_kv_strn("impl", im->name, im->name_len);
		if (im->version_len > cl && memcmp(im->version, commit, cl) == 0)
			fw_kv_strn("impl_commit", im->version + cl, im->version_len - cl);
		else
			fw_kv_strn("impl_ver", im->version, im->version_len);
		fw_kv_strn("impl_src", im->source, im->source_len);
	}
	fw_kv_str("algs", names);
	fw_frame_end();
}

/* do_algs answers ALGS: the algorithm table as ALG frames (one kind and one implementation
 * each, names comma-separated, at most algs_cap characters), then ALGS with the totals. An
 * algorithm's implementation comes from the implementation table (core/impl.h); one without
 * a line there is listed in a frame without impl=. */
static void do_algs(const struct fw_req *r)
{
	char buf[FW_ALGS_CHARS + 1];
	size_t n, l;
	unsigned int i, k, frames = 0;
	struct fw_impl cur = {0}, im = {0};
	int have_cur = 0, have_im = 0;

	for (k = FW_KEM; k <= FW_SIG; k++) {
		n = 0;
		for (i = 0; i <= fw_nalgs; i++) {
			int flush = i == fw_nalgs;
			if (!flush && fw_algs[i].kind != (enum fw_alg_kind)k)
				continue;
			l = 0;
			if (!flush) {
				l = strlen(fw_algs[i].name);
				have_im = fw_impl_find(fw_algs[i].name, &im) == 0;
			}
			if (n > 0 && (flush || n + 1 + l > algs_cap(have_cur ? &cur : 0) || have_im != have_cur ||
				      (have_im && !fw_impl_same(&im, &cur)))) {
				buf[n] = 0;
				send_alg(r->seq, k, buf, have_cur ? &cur : 0);
				frames++;
				n = 0;
			}
			if (flush || l > algs_cap(have_im ? &im : 0))
				continue;
			if (n == 0) {
				cur = im;
				have_cur = have_im;
			} else {
				buf[n++] = ',';
			}
			memcpy(buf + n, fw_algs[i].name, l);
			n += l;
		}
	}
	fw_frame_begin("ALGS");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("n", fw_nalgs);
	fw_kv_u64("frames", frames);
	fw_frame_end();
}

static void send_hello(uint32_t re)
{
	const uint8_t *id;
	size_t idlen = plat_build_id(&id);

	fw_frame_begin("HELLO");
	fw_kv_u64("re", re);
	fw_kv_u64("proto", FW_PROTO);
	fw_kv_str("fw", FW_NAME);
	fw_kv_str("ver", FW_VERSION);
	if (idlen > 0)
		fw_kv_hex("build_id", id, idlen);
	fw_kv_str("board", fw_board_info.board);
	fw_kv_str("chip", fw_board_info.chip);
	if (fw_board_info.clock_hz != 0)
		fw_kv_u64("clock_hz", fw_board_info.clock_hz);
	fw_kv_str("counter", fw_board_info.counter);
	fw_kv_str("unit", fw_board_info.unit);
	fw_kv_u64("resolution", fw_board_info.resolution);
	fw_kv_str("stack", "paint");
	fw_kv_str("rng", "shake256-drbg");
	fw_kv_u64("seeded", (uint64_t)fw_drbg_seeded());
	fw_kv_u64("nalgs", fw_nalgs);
	fw_kv_str("ops", FW_HAVE_SIG ? "keygen,encaps,decaps,sign,verify" : "keygen,encaps,decaps");
	fw_kv_u64("max_msg", FW_SIG_MAX_MSG);
	fw_kv_u64("max_line", FW_MAX_LINE);
	fw_frame_end();
}

static void do_seed(const struct fw_req *r)
{
	uint8_t seed[FW_DRBG_MAX_SEED];
	const char *s = fw_req_get(r, "seed");
	long n = s ? fw_parse_hex(s, seed, sizeof seed) : -1;
	if (n < 0) {
		send_error(r->seq, "badarg", "seed");
		return;
	}
	fw_drbg_seed(seed, (size_t)n);
	fw_frame_begin("SEED");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("len", (uint64_t)n);
	fw_frame_end();
}

/* busy_poll handles input that arrives while a command runs: RESEND is
 * served, a repeat of the running request is ignored (its frames are on the
 * way and the runner can ask for any it missed), one other request is kept
 * for later and any further one is refused with ERROR code=busy. */
static void busy_poll(void)
{
	struct fw_req r;
	int rc;
	while ((rc = fw_rx_poll(&r)) != 0) {
		if (rc == FW_RX_OVERFLOW)
			send_error(r.seq, "overflow", "line");
		else if (rc < 0)
			send_error(0, "badframe", 0);
		else if (fw_streq(r.type, "RESEND"))
			do_resend(&r);
		else if (r.seq != cur_req_seq && fw_rx_defer(&r) != 0)
			send_error(r.seq, "busy", 0);
	}
}

void fw_busy_poll(void) { busy_poll(); }

/* ---- BENCH ---- */

enum bench_op { OP_KEYGEN, OP_ENCAPS, OP_DECAPS, OP_SIGN, OP_VERIFY };

static const char *const op_names[] = {"keygen", "encaps", "decaps", "sign", "verify"};

static uint8_t b_ek[FW_KEM_MAX_EK], b_dk[FW_KEM_MAX_DK], b_ct[FW_KEM_MAX_CT];
static uint8_t b_ss1[FW_KEM_MAX_SS], b_ss2[FW_KEM_MAX_SS], b_coins[64];

struct bench_job {
	const struct fw_kem_ops *kem;
	enum bench_op op;
	int rc;
	uint64_t count;
};

/* bench_run_job is what runs on the painted stack: counter, one call, counter. */
static void bench_run_job(void *arg)
{
	struct bench_job *j = arg;
	uint64_t t0, t1;
	plat_counter_align();
	t0 = plat_counter();
	switch (j->op) {
	case OP_KEYGEN:
		j->rc = j->kem->keygen(b_ek, b_dk, b_coins);
		break;
	case OP_ENCAPS:
		j->rc = j->kem->encaps(b_ct, b_ss1, b_ek, b_coins);
		break;
	case OP_DECAPS:
		j->rc = j->kem->decaps(b_ss2, b_ct, b_dk);
		break;
	default: /* signature operations run in sig_run_job */
		break;
	}
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
}

/* bench_one prepares inputs, measures one operation and checks its output.
 * Returns 0 on success or a reason string. */
static const char *bench_one(const struct fw_kem_ops *kem, enum bench_op op, uint64_t *count,
			     uint32_t *stack)
{
	struct bench_job j;
	j.kem = kem;
	j.op = op;
	j.rc = 0;
	j.count = 0;

	/* Inputs are drawn before the counter starts. */
	switch (op) {
	case OP_KEYGEN:
		fw_drbg_read(b_coins, kem->keygen_coins);
		break;
	case OP_ENCAPS:
		fw_drbg_read(b_coins, kem->encaps_coins);
		break;
	case OP_DECAPS:
		fw_drbg_read(b_coins, kem->encaps_coins);
		if (kem->encaps(b_ct, b_ss1, b_ek, b_coins) != 0)
			return "setup";
		break;
	default:
		return "setup";
	}
	*stack = plat_stack_run(bench_run_job, &j);
	*count = j.count;
	if (j.rc != 0)
		return "rc";
	/* Check the result before it counts: decapsulation must return the
	 * secret encapsulation produced. */
	switch (op) {
	case OP_KEYGEN:
		fw_drbg_read(b_coins, kem->encaps_coins);
		if (kem->encaps(b_ct, b_ss1, b_ek, b_coins) != 0)
			return "check-encaps";
		/* fall through */
	case OP_ENCAPS:
	case OP_DECAPS:
		if (kem->decaps(b_ss2, b_ct, b_dk) != 0)
			return "check-decaps";
		if (memcmp(b_ss1, b_ss2, kem->ss_len) != 0)
			return "mismatch";
		break;
	default:
		break;
	}
	return 0;
}


/* ---- BENCH for signature schemes ---- */

static uint8_t s_pk[FW_SIG_MAX_PK], s_sk[FW_SIG_MAX_SK], s_sig[FW_SIG_MAX_SIG];
static uint8_t s_msg[FW_SIG_MAX_MSG], s_rnd[FW_SIG_MAX_COINS], s_xi[FW_SIG_MAX_COINS];

/* sig_bench is one signature BENCH's parameters. */
struct sig_bench {
	const struct fw_sig_ops *sig;
	enum bench_op op;
	uint32_t mlen;   /* message length */
	int fixed;       /* the message came with the request (msg=) */
	int det;         /* deterministic signing (rnd = NULL) */
	int fault;       /* test hook: corrupt the signature before it is checked */
};

struct sig_job {
	const struct sig_bench *b;
	int rc;
	unsigned int rounds;
	uint64_t count;
};

static void sig_run_job(void *arg)
{
	struct sig_job *j = arg;
	const struct sig_bench *b = j->b;
	uint64_t t0, t1;
	plat_counter_align();
	t0 = plat_counter();
	switch (b->op) {
	case OP_KEYGEN:
		j->rc = b->sig->keygen(s_pk, s_sk, s_xi);
		break;
	case OP_SIGN:
		j->rc = b->sig->sign(s_sig, s_sk, s_msg, b->mlen, 0, 0, b->det ? 0 : s_rnd, &j->rounds);
		break;
	default:
		j->rc = b->sig->verify(s_sig, s_pk, s_msg, b->mlen, 0, 0);
		break;
	}
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
}

/* sig_inputs draws a fresh message (unless it is fixed) and the signing
 * randomness from the DRBG. */
static void sig_inputs(const struct sig_bench *b)
{
	if (!b->fixed)
		fw_drbg_read(s_msg, b->mlen);
	if (!b->det)
		fw_drbg_read(s_rnd, b->sig->sign_coins);
}

static int sig_sign_untimed(const struct sig_bench *b, unsigned int *rounds)
{
	return b->sig->sign(s_sig, s_sk, s_msg, b->mlen, 0, 0, b->det ? 0 : s_rnd, rounds);
}

/* sig_one prepares inputs, measures one operation and checks its output:
 * every signature is verified before its count is kept. Returns 0 on
 * success or a reason string; *rounds is the signing rounds (sign only). */
static const char *sig_one(const struct sig_bench *b, uint64_t *count, uint32_t *stack,
			   unsigned int *rounds)
{
	struct sig_job j;
	unsigned int r;
	j.b = b;
	j.rc = 0;
	j.rounds = 0;
	j.count = 0;
	*rounds = 0;

	/* Inputs are drawn (and for verify the signature made) before the counter starts. */
	switch (b->op) {
	case OP_KEYGEN:
		fw_drbg_read(s_xi, b->sig->keygen_coins);
		break;
	case OP_SIGN:
		sig_inputs(b);
		break;
	default:
		sig_inputs(b);
		if (sig_sign_untimed(b, &r) != 0)
			return "setup";
		if (b->fault)
			s_sig[0] ^= 1;
		break;
	}
	*stack = plat_stack_run(sig_run_job, &j);
	*count = j.count;
	if (b->op == OP_SIGN)
		*rounds = j.rounds;
	switch (b->op) {
	case OP_KEYGEN:
		if (j.rc != 0)
			return "rc";
		/* The new key pair must sign and verify. */
		sig_inputs(b);
		if (sig_sign_untimed(b, &r) != 0)
			return "check-sign";
		if (b->fault)
			s_sig[0] ^= 1;
		if (b->sig->verify(s_sig, s_pk, s_msg, b->mlen, 0, 0) != 0)
			return "check-verify";
		break;
	case OP_SIGN:
		if (j.rc != 0)
			return "rc";
		if (b->fault)
			s_sig[0] ^= 1;
		if (b->sig->verify(s_sig, s_pk, s_msg, b->mlen, 0, 0) != 0)
			return "verify";
		break;
	default:
		/* The timed call is the check: a valid signature must verify. */
		if (j.rc != 0)
			return "verify";
		break;
	}
	return 0;
}

/* sig_args reads a signature BENCH's message (msglen= for fresh DRBG
 * messages, or msg= for a fixed one), det= and the fault= test hook; on a bad
 * field it answers ERROR and returns -1. */
static int sig_args(const struct fw_req *r, const struct fw_alg *alg, enum bench_op op,
		    struct sig_bench *b)
{
	const char *ml = fw_req_get(r, "msglen"), *msg = fw_req_get(r, "msg");
	const char *det = fw_req_get(r, "det"), *fault = fw_req_get(r, "fault");
	uint32_t v;
	long l;

	b->sig = alg->sig;
	b->op = op;
	b->mlen = 0;
	b->fixed = 0;
	b->det = 0;
	b->fault = 0;
	if (msg != 0 && ml == 0) {
		l = fw_parse_hex(msg, s_msg, FW_SIG_MAX_FIXED);
		if (l < 0) {
			send_error(r->seq, "badarg", "msg");
			return -1;
		}
		b->mlen = (uint32_t)l;
		b->fixed = 1;
	} else if (ml != 0 && msg == 0) {
		if (fw_parse_u32(ml, &v) != 0 || v > FW_SIG_MAX_MSG) {
			send_error(r->seq, "badarg", "msglen");
			return -1;
		}
		b->mlen = v;
	} else {
		send_error(r->seq, "badarg", "msglen");
		return -1;
	}
	if (det != 0) {
		if (fw_parse_u32(det, &v) != 0 || v > 1) {
			send_error(r->seq, "badarg", "det");
			return -1;
		}
		b->det = (int)v;
	}
	if (fault != 0) {
		if (!fw_streq(fault, "sig")) {
			send_error(r->seq, "badarg", "fault");
			return -1;
		}
		b->fault = 1;
	}
	return 0;
}

/* sig_bench runs a signature BENCH after its BENCH frame: the setup key pair,
 * then the samples and the summary. */
static void sig_bench(uint32_t re, const struct sig_bench *b, uint32_t n, uint32_t warmup)
{
	uint32_t i, nok = 0, nfail = 0, stack = 0, stack_max = 0;
	uint64_t count = 0, cmin = 0, cmax = 0;
	unsigned int rounds;
	const char *why;

	/* One key pair from the DRBG for sign and verify. */
	if (b->op != OP_KEYGEN) {
		fw_drbg_read(s_xi, b->sig->keygen_coins);
		if (b->sig->keygen(s_pk, s_sk, s_xi) != 0) {
			send_error(re, "setup", "keygen");
			return;
		}
	}
	for (i = 0; i < warmup + n; i++) {
		why = sig_one(b, &count, &stack, &rounds);
		busy_poll();
		if (i < warmup)
			continue;
		fw_frame_begin("SAMPLE");
		fw_kv_u64("re", re);
		fw_kv_u64("i", i - warmup);
		fw_kv_u64("count", count);
		fw_kv_u64("stack", stack);
		if (b->op == OP_SIGN && b->sig->has_rounds)
			fw_kv_u64("rounds", rounds);
		fw_kv_u64("ok", why == 0);
		if (why != 0)
			fw_kv_str("reason", why);
		fw_frame_end();
		if (why != 0) {
			nfail++;
			continue;
		}
		if (nok == 0 || count < cmin)
			cmin = count;
		if (count > cmax)
			cmax = count;
		if (stack > stack_max)
			stack_max = stack;
		nok++;
	}
	fw_frame_begin("SUMMARY");
	fw_kv_u64("re", re);
	fw_kv_u64("n", n);
	fw_kv_u64("ok", nok);
	fw_kv_u64("fail", nfail);
	if (nok > 0) {
		fw_kv_u64("min", cmin);
		fw_kv_u64("max", cmax);
		fw_kv_u64("stack_max", stack_max);
	}
	fw_frame_end();
}

static void do_bench(const struct fw_req *r)
{
	const char *alg_s = fw_req_get(r, "alg"), *op_s = fw_req_get(r, "op");
	const char *n_s = fw_req_get(r, "n"), *w_s = fw_req_get(r, "warmup");
	const struct fw_alg *alg = alg_s ? fw_alg_find(alg_s) : 0;
	const struct fw_kem_ops *kem;
	enum bench_op op;
	struct sig_bench sb;
	uint32_t n, warmup = 0, i, nok = 0, nfail = 0, stack = 0, stack_max = 0;
	uint64_t count = 0, cmin = 0, cmax = 0;
	const char *why;

	if (alg == 0) {
		send_error(r->seq, "unsupported", "alg");
		return;
	}
	if (op_s == 0) {
		send_error(r->seq, "badarg", "op");
		return;
	}
	for (op = OP_KEYGEN; op <= OP_VERIFY; op++)
		if (fw_streq(op_s, op_names[op]))
			break;
	if (op > OP_VERIFY || (alg->kind == FW_KEM && (op == OP_SIGN || op == OP_VERIFY)) ||
	    (alg->kind == FW_SIG && (op == OP_ENCAPS || op == OP_DECAPS))) {
		send_error(r->seq, "unsupported", "op");
		return;
	}
	if (n_s == 0 || fw_parse_u32(n_s, &n) != 0 || n == 0 || n > FW_MAX_ITERATIONS) {
		send_error(r->seq, "badarg", "n");
		return;
	}
	if (w_s != 0 && (fw_parse_u32(w_s, &warmup) != 0 || warmup > FW_MAX_WARMUP)) {
		send_error(r->seq, "badarg", "warmup");
		return;
	}
	kem = alg->kem;
	/* FW_HAVE_SIG is 0 in a build whose table has no signature scheme: the signature path
	 * and its buffers (tens of KiB) are then compiled out. */
	if (FW_HAVE_SIG && alg->kind == FW_SIG && sig_args(r, alg, op, &sb) != 0)
		return;

	fw_frame_begin("BENCH");
	fw_kv_u64("re", r->seq);
	fw_kv_str("alg", alg->name);
	fw_kv_str("op", op_names[op]);
	fw_kv_u64("n", n);
	fw_kv_u64("warmup", warmup);
	if (FW_HAVE_SIG && alg->kind == FW_SIG) {
		fw_kv_u64("msglen", sb.mlen);
		fw_kv_u64("det", (uint64_t)sb.det);
		if (sb.fault)
			fw_kv_str("fault", "sig");
	}
	fw_frame_end();
	if (FW_HAVE_SIG && alg->kind == FW_SIG) {
		sig_bench(r->seq, &sb, n, warmup);
		return;
	}

	/* One key pair (and for decaps a ciphertext per iteration) from the DRBG. */
	if (op != OP_KEYGEN) {
		fw_drbg_read(b_coins, kem->keygen_coins);
		if (kem->keygen(b_ek, b_dk, b_coins) != 0) {
			send_error(r->seq, "setup", "keygen");
			return;
		}
	}
	for (i = 0; i < warmup + n; i++) {
		why = bench_one(kem, op, &count, &stack);
		busy_poll();
		if (i < warmup)
			continue;
		fw_frame_begin("SAMPLE");
		fw_kv_u64("re", r->seq);
		fw_kv_u64("i", i - warmup);
		fw_kv_u64("count", count);
		fw_kv_u64("stack", stack);
		fw_kv_u64("ok", why == 0);
		if (why != 0)
			fw_kv_str("reason", why);
		fw_frame_end();
		if (why != 0) {
			nfail++;
			continue;
		}
		if (nok == 0 || count < cmin)
			cmin = count;
		if (count > cmax)
			cmax = count;
		if (stack > stack_max)
			stack_max = stack;
		nok++;
	}
	fw_frame_begin("SUMMARY");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("n", n);
	fw_kv_u64("ok", nok);
	fw_kv_u64("fail", nfail);
	if (nok > 0) {
		fw_kv_u64("min", cmin);
		fw_kv_u64("max", cmax);
		fw_kv_u64("stack_max", stack_max);
	}
	fw_frame_end();
}

/* ---- SELFTEST ---- */

#ifdef FW_ALGSET_MLKEM512
/* On a 16 KiB board the self-test borrows BENCH's key buffers (the two never run at
 * once: one request runs at a time). */
#define st_a b_dk
#define st_b b_ek
static uint8_t st_k[64], st_md[256];
#else
static uint8_t st_a[FW_KEM_MAX_DK], st_b[FW_KEM_MAX_CT], st_k[64], st_md[256];
#endif
static uint32_t st_pass, st_fail, st_groups;

/* st_full: SELFTEST full=1, which also runs the slow SLH-DSA groups (the "s" sets' keyGen,
 * billions of instructions each in an emulator, and the "f" sets' sigGen). Without it those
 * groups are reported with skipped=<vectors> and nothing run. */
static int st_full;

static void st_skipped(uint32_t re, const char *alg, const char *fn, uint32_t n)
{
	fw_frame_begin("RESULT");
	fw_kv_u64("re", re);
	fw_kv_str("alg", alg);
	fw_kv_str("fn", fn);
	fw_kv_u64("pass", 0);
	fw_kv_u64("fail", 0);
	fw_kv_u64("skipped", n);
	fw_frame_end();
	st_groups++;
}

static int slh_small_set(const char *alg)
{
	size_t l = strlen(alg);
	return l > 0 && alg[l - 1] == 's';
}

static void st_group(uint32_t re, const char *alg, const char *fn, uint32_t pass, uint32_t fail,
		     uint32_t first_fail)
{
	fw_frame_begin("RESULT");
	fw_kv_u64("re", re);
	fw_kv_str("alg", alg);
	fw_kv_str("fn", fn);
	fw_kv_u64("pass", pass);
	fw_kv_u64("fail", fail);
	if (fail > 0)
		fw_kv_u64("first_fail", first_fail);
	fw_frame_end();
	st_pass += pass;
	st_fail += fail;
	st_groups++;
}

#define ST_COUNT(ok, tc)                 \
	do {                             \
		if (ok)                  \
			pass++;          \
		else if (fail++ == 0)    \
			first = (tc);    \
	} while (0)

static void selftest_kem(uint32_t re, const struct fw_kat_kem *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_kem_ops *kem;
	uint32_t i, pass, fail, first;

	if (alg == 0) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	kem = alg->kem;

	pass = fail = first = 0;
	for (i = 0; i < v->n_keygen; i++) {
		const struct fw_kat_keygen *t = &v->keygen[i];
		uint8_t coins[64];
		memcpy(coins, t->d, 32);
		memcpy(coins + 32, t->z, 32);
		ST_COUNT(kem->keygen(st_b, st_a, coins) == 0 && memcmp(st_b, t->ek, kem->ek_len) == 0 &&
				 memcmp(st_a, t->dk, kem->dk_len) == 0,
			 t->tc);
		busy_poll();
	}
	st_group(re, v->alg, "keyGen", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_encap; i++) {
		const struct fw_kat_encap *t = &v->encap[i];
		ST_COUNT(kem->encaps_internal(st_b, st_k, t->ek, t->m) == 0 &&
				 memcmp(st_b, t->c, kem->ct_len) == 0 && memcmp(st_k, t->k, kem->ss_len) == 0,
			 t->tc);
		busy_poll();
	}
	st_group(re, v->alg, "encapsulation", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_decap; i++) {
		const struct fw_kat_decap *t = &v->decap[i];
		ST_COUNT(kem->decaps_internal(st_k, t->c, t->dk) == 0 &&
				 memcmp(st_k, t->k, kem->ss_len) == 0,
			 t->tc);
		busy_poll();
	}
	st_group(re, v->alg, "decapsulation", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_ekcheck; i++) {
		const struct fw_kat_keycheck *t = &v->ekcheck[i];
		ST_COUNT((kem->check_ek(t->key) == 0) == (t->pass != 0), t->tc);
	}
	st_group(re, v->alg, "encapsulationKeyCheck", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_dkcheck; i++) {
		const struct fw_kat_keycheck *t = &v->dkcheck[i];
		ST_COUNT((kem->check_dk(t->key) == 0) == (t->pass != 0), t->tc);
	}
	st_group(re, v->alg, "decapsulationKeyCheck", pass, fail, first);
}

static void selftest_sig(uint32_t re, const struct fw_kat_sig *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_sig_ops *sig;
	uint32_t i, pass, fail, first;
	unsigned int rounds;

	if (alg == 0 || alg->kind != FW_SIG) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	sig = alg->sig;

	if (v->internal && !st_full && slh_small_set(v->alg)) {
		st_skipped(re, v->alg, "keyGen", v->n_keygen);
		goto siggen;
	}
	pass = fail = first = 0;
	for (i = 0; i < v->n_keygen; i++) {
		const struct fw_kat_sig_keygen *t = &v->keygen[i];
		ST_COUNT(sig->keygen(s_pk, s_sk, t->seed) == 0 && memcmp(s_pk, t->pk, sig->pk_len) == 0 &&
				 memcmp(s_sk, t->sk, sig->sk_len) == 0,
			 t->tc);
		busy_poll();
	}
	st_group(re, v->alg, "keyGen", pass, fail, first);

siggen:
	if (v->internal && !st_full && v->n_siggen > 0) {
		st_skipped(re, v->alg, "sigGen", v->n_siggen);
		goto sigver;
	}
	pass = fail = first = 0;
	for (i = 0; i < v->n_siggen; i++) {
		const struct fw_kat_siggen *t = &v->siggen[i];
		ST_COUNT((v->internal ? sig->sign_internal(s_sig, t->sk, t->msg, t->mlen, 0, &rounds)
				      : sig->sign(s_sig, t->sk, t->msg, t->mlen, t->ctx, t->ctxlen, 0, &rounds)) == 0 &&
				 memcmp(s_sig, t->sig, sig->sig_len) == 0,
			 t->tc);
		busy_poll();
	}
	/* SLH-DSA sets without sigGen vectors (all but SHAKE-128f and SHA2-256f: the "s" sets
	 * sign for too long in an emulator): no group. */
	if (v->n_siggen > 0 || !v->internal)
		st_group(re, v->alg, "sigGen", pass, fail, first);

sigver:
	pass = fail = first = 0;
	for (i = 0; i < v->n_sigver; i++) {
		const struct fw_kat_sigver *t = &v->sigver[i];
		ST_COUNT(((t->siglen != sig->sig_len ? -1
			   : v->internal ? sig->verify_internal(t->sig, t->pk, t->msg, t->mlen)
				       : sig->verify(t->sig, t->pk, t->msg, t->mlen, t->ctx, t->ctxlen)) == 0) ==
				 (t->pass != 0),
			 t->tc);
		busy_poll();
	}
	st_group(re, v->alg, "sigVer", pass, fail, first);
}

static int hash_one(const struct fw_kat_hash *h, uint8_t *out)
{
	if (h->mdlen > sizeof st_md)
		return -1;
	if (fw_streq(h->alg, "SHA-256") && h->mdlen == 32)
		sha256(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA-512") && h->mdlen == 64)
		sha512(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA3-256") && h->mdlen == 32)
		sha3_256(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA3-512") && h->mdlen == 64)
		sha3_512(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHAKE128"))
		shake128(out, h->mdlen, h->msg, h->len);
	else if (fw_streq(h->alg, "SHAKE256"))
		shake256(out, h->mdlen, h->msg, h->len);
	else
		return -1;
	return 0;
}

#if FW_HAVE_TEL
/* ascon_one checks one Ascon KAT record: an AEAD record seals to CT || tag, opens back to PT,
 * and refuses the ciphertext with its last tag bit flipped; a hash record gives MD. With
 * wrong set (SELFTEST fault=ascon) each record runs through another mode than its own
 * (SP 800-232 AEAD128 records through v1.2 Ascon-128a, v1.2 records through AEAD128,
 * Hash256 through XOF128, XOF128 through CXOF128 with an empty Z, CXOF128 through XOF128):
 * every record must then fail, which shows a vector wired to the wrong mode is caught. */
static int ascon_one(const struct fw_kat_ascon *v, int wrong)
{
	uint8_t *ct = st_a, *pt = st_b, tag[ASCON_TAGBYTES];
	static const ascon_mode aead_wrong[3] = {ASCON_128A_V12, ASCON_AEAD128, ASCON_AEAD128};
	ascon_mode mode;
	unsigned int hmode;

	if (v->outlen > sizeof st_md || (v->mode > 2))
		return 0;
	if (v->key == 0) { /* a hash record */
		hmode = wrong ? (v->mode == 0 ? 1u : v->mode == 1 ? 2u : 1u) : v->mode;
		if (hmode == 0) {
			if (v->outlen != ASCON_HASH256_BYTES)
				return 0;
			ascon_hash256(st_md, v->in, v->inlen);
		} else if (hmode == 1) {
			ascon_xof128(st_md, v->outlen, v->in, v->inlen);
		} else if (ascon_cxof128(st_md, v->outlen, v->ad, wrong ? 0 : v->adlen, v->in, v->inlen) != 0) {
			return 0;
		}
		return memcmp(st_md, v->out, v->outlen) == 0;
	}
	if (v->outlen != v->inlen + ASCON_TAGBYTES || v->inlen > sizeof st_b)
		return 0;
	mode = wrong ? aead_wrong[v->mode] : (ascon_mode)v->mode;
	ascon_aead_encrypt(mode, ct, tag, v->in, v->inlen, v->ad, v->adlen, v->nonce, v->key);
	if (memcmp(ct, v->out, v->inlen) != 0 || memcmp(tag, v->out + v->inlen, ASCON_TAGBYTES) != 0)
		return 0;
	if (ascon_aead_decrypt(mode, pt, v->out, v->inlen, v->out + v->inlen, ASCON_TAGBYTES, v->ad,
			       v->adlen, v->nonce, v->key) != 0 ||
	    memcmp(pt, v->in, v->inlen) != 0)
		return 0;
	memcpy(tag, v->out + v->inlen, ASCON_TAGBYTES);
	tag[ASCON_TAGBYTES - 1] ^= 0x80;
	return ascon_aead_decrypt(mode, pt, v->out, v->inlen, tag, ASCON_TAGBYTES, v->ad, v->adlen,
				  v->nonce, v->key) != 0;
}

/* selftest_ascon runs the Ascon KAT records, one group per algorithm (fn=kat); first_fail
 * is the record's Count. */
static void selftest_ascon(uint32_t re, int wrong)
{
	uint32_t i, j, pass, fail, first;

	for (i = 0; i < fw_n_kat_ascons; i = j) {
		pass = fail = first = 0;
		for (j = i; j < fw_n_kat_ascons && fw_streq(fw_kat_ascons[j].alg, fw_kat_ascons[i].alg); j++) {
			ST_COUNT(ascon_one(&fw_kat_ascons[j], wrong), fw_kat_ascons[j].count);
			busy_poll();
		}
		st_group(re, fw_kat_ascons[i].alg, "kat", pass, fail, first);
	}
}
#endif

static void do_selftest(const struct fw_req *r)
{
	uint32_t i, j, pass, fail, first;
	const char *full = fw_req_get(r, "full");
	const char *fault = fw_req_get(r, "fault");

	if (full != 0 && !fw_streq(full, "0") && !fw_streq(full, "1")) {
		send_error(r->seq, "badarg", "full");
		return;
	}
	if (fault != 0 && !(FW_HAVE_TEL && fw_streq(fault, "ascon"))) {
		send_error(r->seq, "badarg", "fault");
		return;
	}
	st_full = full != 0 && fw_streq(full, "1");

	st_pass = st_fail = st_groups = 0;
	/* fault=ascon runs the Ascon groups alone, each through a wrong mode. */
	for (i = 0; fault == 0 && i < fw_n_kat_hashes; i = j) {
		/* Hash vectors are grouped by algorithm, in table order. */
		pass = fail = first = 0;
		for (j = i; j < fw_n_kat_hashes && fw_streq(fw_kat_hashes[j].alg, fw_kat_hashes[i].alg); j++)
			ST_COUNT(hash_one(&fw_kat_hashes[j], st_md) == 0 &&
					 memcmp(st_md, fw_kat_hashes[j].md, fw_kat_hashes[j].mdlen) == 0,
				 j - i);
		st_group(r->seq, fw_kat_hashes[i].alg, "hash", pass, fail, first);
	}
	for (i = 0; fault == 0 && i < fw_n_kat_kems; i++)
		selftest_kem(r->seq, &fw_kat_kems[i]);
	for (i = 0; FW_HAVE_SIG && fault == 0 && i < fw_n_kat_sigs; i++)
		selftest_sig(r->seq, &fw_kat_sigs[i]);
#if FW_HAVE_TEL
	selftest_ascon(r->seq, fault != 0);
#endif
	fw_frame_begin("SELFTEST");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("pass", st_pass);
	fw_kv_u64("fail", st_fail);
	fw_kv_u64("groups", st_groups);
	fw_kv_str("source", fw_kat_source);
	fw_frame_end();
}

/* ---- main loop ---- */

static void dispatch(const struct fw_req *r)
{
	if (fw_streq(r->type, "RESEND")) {
		do_resend(r);
		return;
	}
	if (fw_streq(r->type, "HELLO")) {
		/* HELLO starts a session: forget the last request. */
		have_last_req = 0;
		send_hello(r->seq);
		return;
	}
	if (have_last_req && r->seq == last_req_seq) {
		if (fw_resend(last_req_first_tx) != 0)
			send_error(r->seq, "gone", 0);
		return;
	}
	have_last_req = 1;
	last_req_seq = r->seq;
	last_req_first_tx = fw_next_seq();
	cur_req_seq = r->seq;
	if (fw_streq(r->type, "SEED"))
		do_seed(r);
	else if (fw_streq(r->type, "BENCH"))
		do_bench(r);
	else if (fw_streq(r->type, "SELFTEST"))
		do_selftest(r);
	else if (fw_streq(r->type, "ALGS"))
		do_algs(r);
	else if (fw_tel_dispatch(r))
		; /* TELEK, TELHS, TELSEAL, AEADBENCH (telreq.c) */
	else
		send_error(r->seq, "unknown", r->type);
	cur_req_seq = 0;
}

void fw_main(void)
{
	static const char banner[] = "pqrepro-fw " FW_VERSION " ready\n";
	struct fw_req r;
	int rc;

	plat_init();
	/* Noise for the runner to skip, and an announcement it may miss. */
	plat_write(banner, sizeof banner - 1);
	send_hello(0);
	for (;;) {
		rc = fw_rx_take_deferred(&r);
		if (rc == 0)
			rc = fw_rx_poll(&r);
		if (rc > 0)
			dispatch(&r);
		else if (rc == FW_RX_OVERFLOW)
			send_error(r.seq, "overflow", "line");
		else if (rc < 0)
			send_error(0, "badframe", 0);
		else
			plat_idle();
	}
}
