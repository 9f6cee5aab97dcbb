/* Parts shared by the bare-metal ports: stack painting against the linker's
 * stack region, and the build-id note the linker script keeps. */
#include <stdint.h>

#include "../../core/fw.h"

/* Provided by the board's linker script. */
extern uint32_t __stack_limit[];
extern const uint8_t __build_id_start[], __build_id_end[];

#define PAINT 0x5AA5C33Cu

/* paint fills the stack from just below its own frame down to the limit. */
__attribute__((noinline)) static void paint(void)
{
	volatile uint32_t marker = 0;
	uint32_t *p = (uint32_t *)((uintptr_t)&marker & ~(uintptr_t)3) - 16;
	while (p > __stack_limit)
		*--p = PAINT;
	(void)marker;
}

__attribute__((noinline)) uint32_t plat_stack_run(void (*fn)(void *), void *arg)
{
	volatile uint32_t top_marker = 0;
	uintptr_t top = (uintptr_t)&top_marker;
	uint32_t *p = __stack_limit;

	paint();
	fn(arg);
	while ((uintptr_t)p < top && *p == PAINT)
		p++;
	return (uint32_t)(top - (uintptr_t)p);
}

/* A board without a marker output (the QEMU boards): LOOP's toggles do nothing. A port with
 * one (rp.c) defines its own. */
__attribute__((weak)) void plat_marker(int on)
{
	(void)on;
}

size_t plat_build_id(const uint8_t **id)
{
	/* ELF note: namesz, descsz, type, "GNU\0", then the id. */
	const uint8_t *n = __build_id_start;
	uint32_t namesz, descsz;
	if (__build_id_end - __build_id_start < 16)
		return 0;
	namesz = (uint32_t)n[0] | (uint32_t)n[1] << 8 | (uint32_t)n[2] << 16 | (uint32_t)n[3] << 24;
	descsz = (uint32_t)n[4] | (uint32_t)n[5] << 8 | (uint32_t)n[6] << 16 | (uint32_t)n[7] << 24;
	*id = n + 12 + ((namesz + 3) & ~3u);
	if (*id + descsz > __build_id_end)
		return 0;
	return descsz;
}
