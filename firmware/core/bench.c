/* BENCH (PROTOCOL.md): one KEM or signature operation per sample, its inputs drawn from
 * the DRBG before the counter starts, timed on a painted stack, and its output checked
 * before the count is kept; the samples go through the shared loop of tally.h.
 *
 * LOOP (PROTOCOL.md): the same operation, inputs and checks, back to back until the timed
 * calls' counts add up to a budget (a power meter's load window), each call made between
 * the edges of the board's marker output (plat_marker) instead of on a painted stack. */
#include "fw.h"

#include "../crypto/pqmem.h"
#include "algs.h"
#include "drbg.h"
#include "hashshare.h"
#include "proto.h"
#include "req.h"
#include "tally.h"

#define FW_MAX_ITERATIONS 100000u
/* Longest fixed message a request can carry (msg=, hex, so that the request stays within
 * FW_MAX_LINE); the longest a BENCH draws (msglen=) is FW_SIG_MAX_MSG (req.h). */
#define FW_SIG_MAX_FIXED 128u
#define FW_MAX_WARMUP 1000u

enum bench_op { OP_KEYGEN, OP_ENCAPS, OP_DECAPS, OP_SIGN, OP_VERIFY };

static const char *const op_names[] = {"keygen", "encaps", "decaps", "sign", "verify"};

/* bench_marked is set while a LOOP runs: each timed call is then made directly, between
 * the marker's edges, instead of on a painted stack (painting would fall inside the marked
 * span; BENCH measures the stack, LOOP does not). */
static int bench_marked;

/* timed_run makes one timed call: on a painted stack for BENCH (returning the bytes it
 * touched), between the marker's edges for LOOP (returning 0). */
static uint32_t timed_run(void (*fn)(void *), void *arg)
{
	if (!bench_marked)
		return plat_stack_run(fn, arg);
	plat_marker(1);
	fn(arg);
	plat_marker(0);
	return 0;
}

/* timed_call makes one timed call (timed_run; its stack use into s->stack); in the hashing
 * pass the hash functions are redirected to their counting twins around it and their tally
 * goes into s. Nothing of the pass runs between the job's counter reads. Returns -1 when the
 * hash functions could not be redirected. */
static int timed_call(void (*job)(void *), void *arg, struct fw_sample *s, int hash)
{
	struct fw_hash_tally t;
	s->has_hash = hash;
	if (hash && fw_hash_begin() != 0)
		return -1;
	s->stack = timed_run(job, arg);
	if (hash) {
		t = fw_hash_end();
		s->hash = t.count;
		s->hash_calls = t.calls;
	}
	return 0;
}

/* ---- KEM operations ---- */

uint8_t fw_bench_ek[FW_KEM_MAX_EK], fw_bench_dk[FW_KEM_MAX_DK];
static uint8_t b_ct[FW_KEM_MAX_CT];
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
		j->rc = j->kem->keygen(fw_bench_ek, fw_bench_dk, b_coins);
		break;
	case OP_ENCAPS:
		j->rc = j->kem->encaps(b_ct, b_ss1, fw_bench_ek, b_coins);
		break;
	case OP_DECAPS:
		j->rc = j->kem->decaps(b_ss2, b_ct, fw_bench_dk);
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
static const char *bench_one(const struct fw_kem_ops *kem, enum bench_op op, struct fw_sample *s,
			     int hash)
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
		if (kem->encaps(b_ct, b_ss1, fw_bench_ek, b_coins) != 0)
			return "setup";
		break;
	default:
		return "setup";
	}
	if (timed_call(bench_run_job, &j, s, hash) != 0)
		return "hash-patch";
	s->count = j.count;
	if (j.rc != 0)
		return "rc";
	/* Check the result before it counts: decapsulation must return the
	 * secret encapsulation produced. */
	switch (op) {
	case OP_KEYGEN:
		fw_drbg_read(b_coins, kem->encaps_coins);
		if (kem->encaps(b_ct, b_ss1, fw_bench_ek, b_coins) != 0)
			return "check-encaps";
		/* fall through */
	case OP_ENCAPS:
	case OP_DECAPS:
		if (kem->decaps(b_ss2, b_ct, fw_bench_dk) != 0)
			return "check-decaps";
		if (memcmp(b_ss1, b_ss2, kem->ss_len) != 0)
			return "mismatch";
		break;
	default:
		break;
	}
	return 0;
}

struct kem_bench {
	const struct fw_kem_ops *kem;
	enum bench_op op;
	int hash; /* the hashing pass (hash=1) */
};

static void kem_sample(void *ctx, uint32_t i, struct fw_sample *s)
{
	const struct kem_bench *b = ctx;
	(void)i;
	s->why = bench_one(b->kem, b->op, s, b->hash);
}

/* kem_setup makes a KEM run's setup key pair from the DRBG (encaps and decaps; decaps then
 * makes a ciphertext per iteration); on failure it answers ERROR and returns -1. */
static int kem_setup(uint32_t re, const struct kem_bench *b)
{
	if (b->op != OP_KEYGEN) {
		fw_drbg_read(b_coins, b->kem->keygen_coins);
		if (b->kem->keygen(fw_bench_ek, fw_bench_dk, b_coins) != 0) {
			fw_send_error(re, "setup", "keygen");
			return -1;
		}
	}
	return 0;
}

/* ---- signature operations ---- */

uint8_t fw_bench_pk[FW_SIG_MAX_PK], fw_bench_sk[FW_SIG_MAX_SK], fw_bench_sig[FW_SIG_MAX_SIG];
static uint8_t s_msg[FW_SIG_MAX_MSG], s_rnd[FW_SIG_MAX_COINS], s_xi[FW_SIG_MAX_COINS];

/* sig_bench is one signature BENCH's parameters. */
struct sig_bench {
	const struct fw_sig_ops *sig;
	enum bench_op op;
	uint32_t mlen;   /* message length */
	int fixed;       /* the message came with the request (msg=) */
	int det;         /* deterministic signing (rnd = NULL) */
	int fault;       /* test hook: corrupt the signature before it is checked */
	int hash;        /* the hashing pass (hash=1) */
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
		j->rc = b->sig->keygen(fw_bench_pk, fw_bench_sk, s_xi);
		break;
	case OP_SIGN:
		j->rc = b->sig->sign(fw_bench_sig, fw_bench_sk, s_msg, b->mlen, 0, 0, b->det ? 0 : s_rnd, &j->rounds);
		break;
	default:
		j->rc = b->sig->verify(fw_bench_sig, fw_bench_pk, s_msg, b->mlen, 0, 0);
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
	return b->sig->sign(fw_bench_sig, fw_bench_sk, s_msg, b->mlen, 0, 0, b->det ? 0 : s_rnd, rounds);
}

/* sig_one prepares inputs, measures one operation and checks its output:
 * every signature is verified before its count is kept. Returns 0 on
 * success or a reason string; *rounds is the signing rounds (sign only). */
static const char *sig_one(const struct sig_bench *b, struct fw_sample *s, unsigned int *rounds)
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
			fw_bench_sig[0] ^= 1;
		break;
	}
	if (timed_call(sig_run_job, &j, s, b->hash) != 0)
		return "hash-patch";
	s->count = j.count;
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
			fw_bench_sig[0] ^= 1;
		if (b->sig->verify(fw_bench_sig, fw_bench_pk, s_msg, b->mlen, 0, 0) != 0)
			return "check-verify";
		break;
	case OP_SIGN:
		if (j.rc != 0)
			return "rc";
		if (b->fault)
			fw_bench_sig[0] ^= 1;
		if (b->sig->verify(fw_bench_sig, fw_bench_pk, s_msg, b->mlen, 0, 0) != 0)
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
	b->hash = 0;
	if (msg != 0 && ml == 0) {
		l = fw_parse_hex(msg, s_msg, FW_SIG_MAX_FIXED);
		if (l < 0) {
			fw_send_error(r->seq, "badarg", "msg");
			return -1;
		}
		b->mlen = (uint32_t)l;
		b->fixed = 1;
	} else if (ml != 0 && msg == 0) {
		if (fw_parse_u32(ml, &v) != 0 || v > FW_SIG_MAX_MSG) {
			fw_send_error(r->seq, "badarg", "msglen");
			return -1;
		}
		b->mlen = v;
	} else {
		fw_send_error(r->seq, "badarg", "msglen");
		return -1;
	}
	if (det != 0) {
		if (fw_parse_u32(det, &v) != 0 || v > 1) {
			fw_send_error(r->seq, "badarg", "det");
			return -1;
		}
		b->det = (int)v;
	}
	if (fault != 0) {
		if (!fw_streq(fault, "sig")) {
			fw_send_error(r->seq, "badarg", "fault");
			return -1;
		}
		b->fault = 1;
	}
	return 0;
}

static void sig_sample(void *ctx, uint32_t i, struct fw_sample *s)
{
	const struct sig_bench *b = ctx;
	unsigned int rounds;
	(void)i;
	s->why = sig_one(b, s, &rounds);
	if (b->op == OP_SIGN && b->sig->has_rounds) {
		s->extra_key = "rounds";
		s->extra = rounds;
	}
}

/* sig_setup makes a signature run's setup key pair from the DRBG (sign and verify); on
 * failure it answers ERROR and returns -1. */
static int sig_setup(uint32_t re, const struct sig_bench *b)
{
	if (b->op != OP_KEYGEN) {
		fw_drbg_read(s_xi, b->sig->keygen_coins);
		if (b->sig->keygen(fw_bench_pk, fw_bench_sk, s_xi) != 0) {
			fw_send_error(re, "setup", "keygen");
			return -1;
		}
	}
	return 0;
}

/* ---- the request ---- */

/* bench_req is what every BENCH names: the algorithm, the operation, the samples and the
 * warm-up iterations; a LOOP names its budget and at most how many operations instead. */
struct bench_req {
	const struct fw_alg *alg;
	enum bench_op op;
	uint32_t n, warmup;
	uint64_t budget; /* LOOP: counter units the timed calls add up to */
	int hash;        /* BENCH hash=1: the untimed hashing pass (hashshare.h) */
};

/* hash_arg reads hash= (0 or 1). The pass is refused (unsupported) when this build cannot
 * redirect its hash functions (msg=hash) and for an implementation the build brought, whose
 * hashing is its own code (msg=hash-impl). */
static int hash_arg(const struct fw_req *r, struct bench_req *q)
{
	const char *h_s = fw_req_get(r, "hash");
	uint32_t v = 0;
	if (h_s != 0 && (fw_parse_u32(h_s, &v) != 0 || v > 1)) {
		fw_send_error(r->seq, "badarg", "hash");
		return -1;
	}
	q->hash = (int)v;
	if (q->hash && fw_alg_user(q->alg)) {
		fw_send_error(r->seq, "unsupported", "hash-impl");
		return -1;
	}
	if (q->hash && !fw_hash_available()) {
		fw_send_error(r->seq, "unsupported", "hash");
		return -1;
	}
	return 0;
}

/* bench_op_args reads alg= and op=; on a bad field it answers ERROR and returns -1. */
static int bench_op_args(const struct fw_req *r, struct bench_req *q)
{
	const char *alg_s = fw_req_get(r, "alg"), *op_s = fw_req_get(r, "op");
	const struct fw_alg *alg = alg_s ? fw_alg_find(alg_s) : 0;
	enum bench_op op;

	if (alg == 0) {
		fw_send_error(r->seq, "unsupported", "alg");
		return -1;
	}
	if (op_s == 0) {
		fw_send_error(r->seq, "badarg", "op");
		return -1;
	}
	for (op = OP_KEYGEN; op <= OP_VERIFY; op++)
		if (fw_streq(op_s, op_names[op]))
			break;
	if (op > OP_VERIFY || (alg->kind == FW_KEM && (op == OP_SIGN || op == OP_VERIFY)) ||
	    (alg->kind == FW_SIG && (op == OP_ENCAPS || op == OP_DECAPS))) {
		fw_send_error(r->seq, "unsupported", "op");
		return -1;
	}
	q->alg = alg;
	q->op = op;
	q->warmup = 0;
	q->budget = 0;
	q->hash = 0;
	return 0;
}

/* bench_args reads BENCH's alg=, op=, n= and warmup=; on a bad field it answers ERROR and
 * returns -1. */
static int bench_args(const struct fw_req *r, struct bench_req *q)
{
	const char *n_s = fw_req_get(r, "n"), *w_s = fw_req_get(r, "warmup");

	if (bench_op_args(r, q) != 0)
		return -1;
	if (n_s == 0 || fw_parse_u32(n_s, &q->n) != 0 || q->n == 0 || q->n > FW_MAX_ITERATIONS) {
		fw_send_error(r->seq, "badarg", "n");
		return -1;
	}
	if (w_s != 0 && (fw_parse_u32(w_s, &q->warmup) != 0 || q->warmup > FW_MAX_WARMUP)) {
		fw_send_error(r->seq, "badarg", "warmup");
		return -1;
	}
	return hash_arg(r, q);
}

/* kv_sig adds a signature run's fields (msglen, det, fault) to the frame being built, which
 * BENCH and LOOP both echo; nothing for a KEM (sb 0). */
static void kv_sig(const struct sig_bench *sb)
{
	if (sb == 0)
		return;
	fw_kv_u64("msglen", sb->mlen);
	fw_kv_u64("det", (uint64_t)sb->det);
	if (sb->fault)
		fw_kv_str("fault", "sig");
}

/* send_bench announces the run; sb is the signature BENCH's parameters, 0 for a KEM. */
static void send_bench(uint32_t re, const struct bench_req *q, const struct sig_bench *sb)
{
	fw_frame_begin("BENCH");
	fw_kv_u64("re", re);
	fw_kv_str("alg", q->alg->name);
	fw_kv_str("op", op_names[q->op]);
	fw_kv_u64("n", q->n);
	fw_kv_u64("warmup", q->warmup);
	if (q->hash)
		fw_kv_u64("hash", 1);
	kv_sig(sb);
	fw_frame_end();
}

/* bench_prepare reads a BENCH's or LOOP's signature fields (msg=, msglen=, det=, fault=)
 * and makes the run's setup key pair; it returns the sample function and its context, or
 * 0 after answering ERROR. kb and sb are the caller's storage for the context. */
static fw_sample_fn bench_prepare(const struct fw_req *r, const struct bench_req *q, int announce,
				  struct kem_bench *kb, struct sig_bench *sb, void **ctx)
{
	/* FW_HAVE_SIG is 0 in a build whose table has no signature scheme: the signature path
	 * and its buffers (tens of KiB) are then compiled out. */
	int sig = FW_HAVE_SIG && q->alg->kind == FW_SIG;

	if (sig && sig_args(r, q->alg, q->op, sb) != 0)
		return 0;
	if (announce)
		send_bench(r->seq, q, sig ? sb : 0);
	if (sig) {
		sb->hash = q->hash;
		*ctx = sb;
		return sig_setup(r->seq, sb) == 0 ? sig_sample : 0;
	}
	kb->kem = q->alg->kem;
	kb->op = q->op;
	kb->hash = q->hash;
	*ctx = kb;
	return kem_setup(r->seq, kb) == 0 ? kem_sample : 0;
}

void fw_do_bench(const struct fw_req *r)
{
	struct bench_req q;
	struct kem_bench kb;
	struct sig_bench sb;
	void *ctx;
	fw_sample_fn fn;

	if (bench_args(r, &q) != 0)
		return;
	fn = bench_prepare(r, &q, 1, &kb, &sb, &ctx);
	if (fn != 0)
		fw_tally(r->seq, q.n, q.warmup, fn, ctx);
}

/* ---- LOOP ---- */

/* FW_LOOP_MAX_OPS is the default and largest max= of a LOOP. */
#define FW_LOOP_MAX_OPS 0xFFFFFFFFu

/* loop_acct is what a LOOP did: the operations whose check passed, the one that failed (at
 * most one: the loop stops there) and the counts of the passed ones. */
struct loop_acct {
	uint32_t ops, fail;
	uint64_t total, min, max;
	const char *why;
};

/* loop_args reads LOOP's alg=, op=, budget= and max=; on a bad field it answers ERROR and
 * returns -1. */
static int loop_args(const struct fw_req *r, struct bench_req *q)
{
	const char *b_s = fw_req_get(r, "budget"), *m_s = fw_req_get(r, "max");

	if (bench_op_args(r, q) != 0)
		return -1;
	if (b_s == 0 || fw_parse_u64(b_s, &q->budget) != 0 || q->budget == 0) {
		fw_send_error(r->seq, "badarg", "budget");
		return -1;
	}
	q->n = FW_LOOP_MAX_OPS;
	if (m_s != 0 && (fw_parse_u32(m_s, &q->n) != 0 || q->n == 0)) {
		fw_send_error(r->seq, "badarg", "max");
		return -1;
	}
	return 0;
}

static void send_loop(uint32_t re, const struct bench_req *q, const struct sig_bench *sb)
{
	fw_frame_begin("LOOP");
	fw_kv_u64("re", re);
	fw_kv_str("alg", q->alg->name);
	fw_kv_str("op", op_names[q->op]);
	fw_kv_u64("budget", q->budget);
	fw_kv_u64("max", q->n);
	kv_sig(sb);
	fw_frame_end();
}

static void send_loopdone(uint32_t re, const struct loop_acct *a)
{
	fw_frame_begin("LOOPDONE");
	fw_kv_u64("re", re);
	fw_kv_u64("ops", a->ops);
	fw_kv_u64("fail", a->fail);
	fw_kv_u64("count", a->total);
	if (a->ops > 0) {
		fw_kv_u64("min", a->min);
		fw_kv_u64("max", a->max);
	}
	fw_kv_str("marker", fw_board_info.marker ? fw_board_info.marker : "none");
	if (a->why != 0)
		fw_kv_str("reason", a->why);
	fw_frame_end();
}

/* loop_run calls fn back to back, each timed call between the marker's edges, until the
 * passed calls' counts reach the budget, max calls were made or one failed, serving RESEND
 * between calls; then it reports what it did. */
static void loop_run(uint32_t re, const struct bench_req *q, fw_sample_fn fn, void *ctx)
{
	struct fw_sample s = {0};
	struct loop_acct a = {0};

	bench_marked = 1;
	while (a.total < q->budget && a.ops < q->n) {
		fn(ctx, a.ops, &s);
		if (s.why != 0) {
			a.fail = 1;
			a.why = s.why;
			break;
		}
		if (a.ops == 0 || s.count < a.min)
			a.min = s.count;
		if (s.count > a.max)
			a.max = s.count;
		a.total += s.count;
		a.ops++;
		fw_busy_poll();
	}
	bench_marked = 0;
	send_loopdone(re, &a);
}

void fw_do_loop(const struct fw_req *r)
{
	struct bench_req q;
	struct kem_bench kb;
	struct sig_bench sb;
	void *ctx;
	fw_sample_fn fn;
	int sig;

	if (loop_args(r, &q) != 0)
		return;
	sig = FW_HAVE_SIG && q.alg->kind == FW_SIG;
	fn = bench_prepare(r, &q, 0, &kb, &sb, &ctx);
	if (fn == 0)
		return;
	send_loop(r->seq, &q, sig ? &sb : 0);
	loop_run(r->seq, &q, fn, ctx);
}
