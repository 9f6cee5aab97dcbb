/* Cortex-M4 vector table and reset handler for the mps2-an386 port. */
#include <stdint.h>

#include "../../core/fw.h"

extern uint32_t __stack_top[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern const uint32_t __data_load[];

void Reset_Handler(void);
void SysTick_Handler(void);
static void Fault_Handler(void);

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
	(void (*)(void))(uintptr_t)__stack_top,
	Reset_Handler,
	Fault_Handler, /* NMI */
	Fault_Handler, /* HardFault */
	Fault_Handler, /* MemManage */
	Fault_Handler, /* BusFault */
	Fault_Handler, /* UsageFault */
	0, 0, 0, 0,
	Fault_Handler, /* SVCall */
	Fault_Handler, /* DebugMon */
	0,
	Fault_Handler, /* PendSV */
	SysTick_Handler,
};

/* A fault prints a plain (unframed) line and stops; the runner times out and
 * keeps the line in its log. */
static void Fault_Handler(void)
{
	static const char msg[] = "\nFAULT\n";
	plat_write(msg, sizeof msg - 1);
	for (;;)
		;
}

void Reset_Handler(void)
{
	uint32_t *d = __data_start;
	const uint32_t *s = __data_load;
	while (d < __data_end)
		*d++ = *s++;
	for (d = __bss_start; d < __bss_end; d++)
		*d = 0;
	fw_main();
	for (;;)
		;
}
