/* Constant-time helpers. The value barrier stops the compiler from turning
 * mask arithmetic back into branches. */
#ifndef PQ_CT_H
#define PQ_CT_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t ct_barrier_u32(uint32_t x)
{
#if defined(__GNUC__)
	__asm__("" : "+r"(x));
#endif
	return x;
}

/* ct_neq returns 1 if a and b differ in their first n bytes, else 0, in time
 * that depends on n only. */
static inline uint32_t ct_neq(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint32_t r = 0;
	size_t i;
	for (i = 0; i < n; i++)
		r |= (uint32_t)(a[i] ^ b[i]);
	r = ct_barrier_u32(r);
	return (uint32_t)(-r) >> 31;
}

/* ct_cmov copies x into r when cond is 1 and leaves r alone when it is 0. */
static inline void ct_cmov(uint8_t *r, const uint8_t *x, size_t n, uint32_t cond)
{
	uint8_t mask = (uint8_t)(-ct_barrier_u32(cond));
	size_t i;
	for (i = 0; i < n; i++)
		r[i] ^= (uint8_t)(mask & (r[i] ^ x[i]));
}

#endif
