/* QEMU mps2-an386 port: Cortex-M4, CMSDK APB UART0 at 0x40004000, SysTick
 * on the 25 MHz core clock extended to 64 bits by its wrap interrupt.
 *
 * Under QEMU's -icount shift=0 every instruction advances virtual time by
 * 1 ns, so one SysTick tick (40 ns) is 40 instructions: plat_counter returns
 * ticks * 40 and HELLO reports unit=instructions resolution=40. These are
 * emulated instruction counts, not cycles of a real Cortex-M4. */
#include <stdint.h>

#include "../../core/fw.h"

#define REG(a) (*(volatile uint32_t *)(a))

#define UART0 0x40004000u
#define UART_DATA REG(UART0 + 0x00)
#define UART_STATE REG(UART0 + 0x04) /* bit0 TX full, bit1 RX full */
#define UART_CTRL REG(UART0 + 0x08)  /* bit0 TX enable, bit1 RX enable */
#define UART_BAUDDIV REG(UART0 + 0x10)

#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu

#define CLOCK_HZ 25000000u
#define INSNS_PER_TICK 40u /* 1e9 ns / 25 MHz, at 1 ns per instruction */

const struct fw_board fw_board_info = {
	"qemu-mps2-an386", "cortex-m4", CLOCK_HZ, "systick", "instructions", INSNS_PER_TICK,
};

static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

void plat_init(void)
{
	UART_BAUDDIV = 16;
	UART_CTRL = 3;
	SYST_RVR = SYST_RELOAD;
	SYST_CVR = 0;
	SYST_CSR = 7; /* enable, interrupt, core clock */
}

int plat_getc(void)
{
	if ((UART_STATE & 2u) == 0)
		return -1;
	return (int)(UART_DATA & 0xFFu);
}

void plat_write(const char *s, size_t n)
{
	while (n--) {
		while (UART_STATE & 1u)
			;
		UART_DATA = (uint8_t)*s++;
	}
}

void plat_idle(void) {}

/* plat_counter_align restarts SysTick's 40-instruction tick phase: writing
 * SYST_CVR clears it, and the reload comes a fixed number of instructions
 * later, so from here on the instruction stream, and so the count, no longer
 * depends on how many polling loops ran while waiting for the UART. */
void plat_counter_align(void)
{
	SYST_CVR = 0;
	while (SYST_CVR == 0)
		;
}

uint64_t plat_counter(void)
{
	uint32_t w, v;
	do {
		w = systick_wraps;
		v = SYST_CVR;
	} while (w != systick_wraps);
	return ((uint64_t)w * (SYST_RELOAD + 1u) + (SYST_RELOAD - v)) * INSNS_PER_TICK;
}
