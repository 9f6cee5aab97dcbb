/* The sample loop BENCH and AEADBENCH share (tally.h). */
#include "tally.h"

#include "proto.h"
#include "req.h"

/* fw_stats is what SUMMARY reports of the samples whose check passed. */
struct fw_stats {
	uint32_t ok, fail, stack_max;
	uint64_t min, max;
};

static void send_sample(uint32_t re, uint32_t i, const struct fw_sample *s)
{
	fw_frame_begin("SAMPLE");
	fw_kv_u64("re", re);
	fw_kv_u64("i", i);
	fw_kv_u64("count", s->count);
	fw_kv_u64("stack", s->stack);
	if (s->extra_key != 0)
		fw_kv_u64(s->extra_key, s->extra);
	if (s->has_hash) {
		fw_kv_u64("hash", s->hash);
		fw_kv_u64("hcalls", s->hash_calls);
	}
	fw_kv_u64("ok", s->why == 0);
	if (s->why != 0)
		fw_kv_str("reason", s->why);
	fw_frame_end();
}

static void stats_add(struct fw_stats *st, const struct fw_sample *s)
{
	if (s->why != 0) {
		st->fail++;
		return;
	}
	if (st->ok == 0 || s->count < st->min)
		st->min = s->count;
	if (s->count > st->max)
		st->max = s->count;
	if (s->stack > st->stack_max)
		st->stack_max = s->stack;
	st->ok++;
}

static void send_summary(uint32_t re, uint32_t n, const struct fw_stats *st)
{
	fw_frame_begin("SUMMARY");
	fw_kv_u64("re", re);
	fw_kv_u64("n", n);
	fw_kv_u64("ok", st->ok);
	fw_kv_u64("fail", st->fail);
	if (st->ok > 0) {
		fw_kv_u64("min", st->min);
		fw_kv_u64("max", st->max);
		fw_kv_u64("stack_max", st->stack_max);
	}
	fw_frame_end();
}

void fw_tally(uint32_t re, uint32_t n, uint32_t warmup, fw_sample_fn fn, void *ctx)
{
	struct fw_sample s = {0};
	struct fw_stats st = {0};
	uint32_t i;

	for (i = 0; i < warmup + n; i++) {
		uint32_t k = i < warmup ? i : i - warmup;
		fn(ctx, k, &s);
		fw_busy_poll();
		if (i < warmup)
			continue;
		send_sample(re, k, &s);
		stats_add(&st, &s);
	}
	send_summary(re, n, &st);
}
