/* The MPS2 family (qemu-mps2-an386, qemu-mps2-an505), one unit compiled per board with
 * the board's macros (cmsdk.h): a CMSDK APB UART received by interrupt into a ring buffer,
 * SysTick on the core clock extended to 64 bits by its wrap interrupt, and the vector table
 * and reset handler. The board's port.c says what HELLO reports (fw_board_info).
 *
 * Under QEMU's -icount shift=0 every instruction advances virtual time by 1 ns, so one
 * SysTick tick is 1e9 / CMSDK_CLOCK_HZ instructions: plat_counter returns ticks times that
 * and HELLO reports unit=instructions. These are emulated instruction counts, not cycles
 * of any real core. (QEMU does not model the DWT cycle counter: CYCCNT reads zero.) */
#include "cmsdk.h"

#include <stdint.h>

#include "../../core/fw.h"
#include "../baremetal/rxring.h"

#define REG(a) (*(volatile uint32_t *)(a))

#define UART_BASE CMSDK_UART_BASE
#define UART_RX_IRQ CMSDK_UART_RX_IRQ

#define UART_DATA REG(UART_BASE + 0x00)
#define UART_STATE REG(UART_BASE + 0x04)    /* bit0 TX full, bit1 RX full */
#define UART_CTRL REG(UART_BASE + 0x08)     /* bit0 TX en, bit1 RX en, bit3 RX interrupt en */
#define UART_INTCLEAR REG(UART_BASE + 0x0C) /* write 1 to clear: bit0 TX, bit1 RX */
#define UART_BAUDDIV REG(UART_BASE + 0x10)

#define NVIC_ISER(n) REG(0xE000E100u + 4u * (n))
#define NVIC_ICER(n) REG(0xE000E180u + 4u * (n))
#define UART_IRQ_WORD (UART_RX_IRQ / 32u)
#define UART_IRQ_BIT (1u << (UART_RX_IRQ % 32u))

#define SYST_CSR REG(0xE000E010u)
#define SYST_RVR REG(0xE000E014u)
#define SYST_CVR REG(0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu

#define INSNS_PER_TICK CMSDK_INSNS_PER_TICK

static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

void UART_RX_Handler(void)
{
	/* Clear first: a byte that arrives while the data register is read raises the
	 * interrupt again instead of being left behind. */
	UART_INTCLEAR = 2u;
	while (UART_STATE & 2u) {
		uint8_t c = (uint8_t)(UART_DATA & 0xFFu);
		rx_push(c);
	}
}

void plat_init(void)
{
	UART_BAUDDIV = 16;
	UART_CTRL = 1u | 2u | 8u; /* TX, RX, RX interrupt */
	SYST_RVR = SYST_RELOAD;
	SYST_CVR = 0;
	SYST_CSR = 7; /* enable, interrupt, core clock */
	NVIC_ISER(UART_IRQ_WORD) = UART_IRQ_BIT;
}

int plat_getc(void) { return rx_take(); }

void plat_write(const char *s, size_t n)
{
	while (n--) {
		while (UART_STATE & 1u)
			;
		UART_DATA = (uint8_t)*s++;
	}
}

/* plat_idle sleeps until an interrupt (a received byte, or SysTick's wrap every 2^24
 * ticks). Interrupts are masked around the check, so a byte that arrived after the
 * firmware last looked still wakes WFI (a pending interrupt ends WFI even when masked). */
void plat_idle(void)
{
	__asm__ volatile("cpsid i" ::: "memory");
	if (rx_empty())
		__asm__ volatile("dsb\n\twfi" ::: "memory");
	__asm__ volatile("cpsie i" ::: "memory");
}

/* plat_counter_align masks the UART interrupt for the timed region (a byte arriving
 * mid-measurement waits in the UART's data register, and the handler runs after
 * plat_timed_end) and restarts SysTick's tick phase: writing SYST_CVR clears it, and
 * the reload comes a fixed number of instructions later, so from here on the count no
 * longer depends on how long the firmware waited for input. */
void plat_counter_align(void)
{
	NVIC_ICER(UART_IRQ_WORD) = UART_IRQ_BIT;
	__asm__ volatile("dsb\n\tisb" ::: "memory");
	SYST_CVR = 0;
	while (SYST_CVR == 0)
		;
}

void plat_timed_end(void) { NVIC_ISER(UART_IRQ_WORD) = UART_IRQ_BIT; }

uint64_t plat_counter(void)
{
	uint32_t w, v;
	do {
		w = systick_wraps;
		v = SYST_CVR;
	} while (w != systick_wraps);
	return ((uint64_t)w * (SYST_RELOAD + 1u) + (SYST_RELOAD - v)) * INSNS_PER_TICK;
}

/* ---- vector table and reset ---- */

extern uint32_t __stack_top[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern const uint32_t __data_load[];

void Reset_Handler(void);
static void Fault_Handler(void);

/* Core exceptions, then every external interrupt up to the UART's: only SysTick and the
 * UART RX interrupt are enabled; anything else that fires is reported as a fault. */
#define IRQ_DEFAULTS_8 Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler, \
	Fault_Handler, Fault_Handler, Fault_Handler, Fault_Handler
__attribute__((section(".vectors"), used)) static void (*const vectors[16 + UART_RX_IRQ + 1])(void) = {
	(void (*)(void))(uintptr_t)__stack_top,
	Reset_Handler,
	Fault_Handler, /* NMI */
	Fault_Handler, /* HardFault */
	Fault_Handler, /* MemManage */
	Fault_Handler, /* BusFault */
	Fault_Handler, /* UsageFault */
	Fault_Handler, /* SecureFault (Armv8-M; reserved on Armv7-M) */
	0, 0, 0,
	Fault_Handler, /* SVCall */
	Fault_Handler, /* DebugMon */
	0,
	Fault_Handler, /* PendSV */
	SysTick_Handler,
#if UART_RX_IRQ >= 32
	IRQ_DEFAULTS_8, IRQ_DEFAULTS_8, IRQ_DEFAULTS_8, IRQ_DEFAULTS_8,
#endif
	[16 + UART_RX_IRQ] = UART_RX_Handler,
};

/* A fault prints a plain (unframed) line and stops; the runner times out and keeps the
 * line in its log. */
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
