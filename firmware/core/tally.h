/* The one sample loop of BENCH and AEADBENCH (PROTOCOL.md): warm-up iterations run and
 * are not reported, then each of n iterations is a SAMPLE frame, and a SUMMARY closes the
 * run with the minimum, maximum and largest stack of the samples whose check passed. */
#ifndef FW_TALLY_H
#define FW_TALLY_H

#include <stdint.h>

/* fw_sample is what one iteration measured. The loop keeps one across the iterations: an
 * iteration that fails before its timed call leaves count and stack as the last one set
 * them (its SAMPLE says ok=0 and the SUMMARY leaves it out). */
struct fw_sample {
	uint64_t count;        /* the timed operation, in fw_board_info.unit */
	uint32_t stack;        /* bytes of the painted stack it touched */
	const char *extra_key; /* a field sent after stack= (rounds=, size=), or 0 for none */
	uint64_t extra;
	/* The hashing pass (BENCH hash=1, hashshare.h): the counter's advance inside the hash
	 * functions and their outermost calls, sent as hash= and hcalls= when has_hash is set. */
	int has_hash;
	uint64_t hash;
	uint32_t hash_calls;
	const char *why;       /* 0 when the iteration's check passed, else the reason */
};

/* fw_sample_fn runs one iteration into *s: i counts the warm-up iterations from 0, then
 * the samples from 0 again. */
typedef void (*fw_sample_fn)(void *ctx, uint32_t i, struct fw_sample *s);

/* fw_tally runs warmup + n iterations of fn for request re, polling for input after each,
 * and sends their SAMPLE frames and the SUMMARY. */
void fw_tally(uint32_t re, uint32_t n, uint32_t warmup, fw_sample_fn fn, void *ctx);

#endif
