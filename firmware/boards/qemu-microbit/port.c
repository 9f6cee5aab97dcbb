/* QEMU microbit port: nRF51822 (Cortex-M0, Armv6-M), the RP2040's core class (the Pico W's
 * RP2040 has two Cortex-M0+ cores). 16 KiB of RAM and 256 KiB of flash hold a declared
 * subset only: ML-KEM-512 (FW_ALGSET_MLKEM512; docs/BOARDS.md says what does not fit).
 *
 * UART0 at 0x40002000, received by interrupt (UART0 IRQ 2, RXDRDY) into a ring buffer.
 * Counter: TIMER0 at 0x40008000, 32-bit, PRESCALER 1 (8 MHz, 125 ns a tick). Under QEMU's
 * -icount shift=0 every instruction advances virtual time by 1 ns, and the nRF51 timer
 * model counts virtual time, so one tick is exactly 125 instructions: plat_counter returns
 * ticks * 125 and HELLO says unit=instructions resolution=125. These are emulated
 * instruction counts, not cycles of any Cortex-M0 (QEMU's microbit has no cycle counter;
 * at PRESCALER 0 a tick would be 62.5 instructions, not a whole number). */
#include <stdint.h>

#include "../../core/fw.h"
/* The receive ring (rxring.h) is a quarter of the other ports': 16 KiB of RAM. */
#define RX_RING 256u
#include "../baremetal/rxring.h"

#define REG(a) (*(volatile uint32_t *)(a))

#define UART0 0x40002000u
#define UART_STARTRX REG(UART0 + 0x000)
#define UART_STARTTX REG(UART0 + 0x008)
#define UART_RXDRDY REG(UART0 + 0x108)
#define UART_TXDRDY REG(UART0 + 0x11C)
#define UART_INTENSET REG(UART0 + 0x304)
#define UART_ENABLE REG(UART0 + 0x500)
#define UART_PSELTXD REG(UART0 + 0x50C)
#define UART_PSELRXD REG(UART0 + 0x514)
#define UART_RXD REG(UART0 + 0x518)
#define UART_TXD REG(UART0 + 0x51C)
#define UART_BAUDRATE REG(UART0 + 0x524)
#define UART_IRQ 2u

#define TIMER0 0x40008000u
#define TIMER_START REG(TIMER0 + 0x000)
#define TIMER_CLEAR REG(TIMER0 + 0x00C)
#define TIMER_CAPTURE0 REG(TIMER0 + 0x040)
#define TIMER_MODE REG(TIMER0 + 0x504)
#define TIMER_BITMODE REG(TIMER0 + 0x508)
#define TIMER_PRESCALER REG(TIMER0 + 0x510)
#define TIMER_CC0 REG(TIMER0 + 0x540)

#define NVIC_ISER REG(0xE000E100u)
#define NVIC_ICER REG(0xE000E180u)

#define INSNS_PER_TICK 125u /* 1e9 ns / 8 MHz, at 1 ns per instruction */

const struct fw_board fw_board_info = {
	.board = "qemu-microbit",
	.chip = "cortex-m0",
	.clock_hz = 16000000u,
	.counter = "nrf51-timer0",
	.unit = "instructions",
	.resolution = INSNS_PER_TICK,
};

void UART0_Handler(void)
{
	while (UART_RXDRDY) {
		uint8_t c;
		UART_RXDRDY = 0;
		c = (uint8_t)UART_RXD;
		rx_push(c);
	}
}

void plat_init(void)
{
	UART_PSELTXD = 24; /* the micro:bit's USB UART pins; QEMU ignores them */
	UART_PSELRXD = 25;
	UART_BAUDRATE = 0x01D7E000u; /* 115200 */
	UART_ENABLE = 4;
	UART_INTENSET = 1u << 2; /* RXDRDY */
	UART_STARTTX = 1;
	UART_STARTRX = 1;
	NVIC_ISER = 1u << UART_IRQ;
	TIMER_MODE = 0;
	TIMER_BITMODE = 3; /* 32 bits */
	TIMER_PRESCALER = 1;
	TIMER_CLEAR = 1;
	TIMER_START = 1;
}

int plat_getc(void) { return rx_take(); }

void plat_write(const char *s, size_t n)
{
	while (n--) {
		UART_TXDRDY = 0;
		UART_TXD = (uint8_t)*s++;
		while (UART_TXDRDY == 0)
			;
	}
}

void plat_idle(void)
{
	__asm__ volatile("cpsid i" ::: "memory");
	if (rx_empty())
		__asm__ volatile("dsb\n\twfi" ::: "memory");
	__asm__ volatile("cpsie i" ::: "memory");
}

/* The counter is 32 bits wide (a wrap every 537 s at 8 MHz), extended to 64 by noticing
 * wraps between reads; plat_counter_align clears it, which also restarts the tick phase,
 * so a count depends only on the instructions measured. */
static uint32_t ctr_last, ctr_hi;

void plat_counter_align(void)
{
	NVIC_ICER = 1u << UART_IRQ;
	__asm__ volatile("dsb\n\tisb" ::: "memory");
	TIMER_CLEAR = 1;
	ctr_last = 0;
	ctr_hi = 0;
}

void plat_timed_end(void) { NVIC_ISER = 1u << UART_IRQ; }

uint64_t plat_counter(void)
{
	uint32_t v;
	TIMER_CAPTURE0 = 1;
	v = TIMER_CC0;
	if (v < ctr_last)
		ctr_hi++;
	ctr_last = v;
	return ((uint64_t)ctr_hi << 32 | v) * INSNS_PER_TICK;
}

/* ---- vector table and reset ---- */

extern uint32_t __stack_top[], __data_start[], __data_end[], __bss_start[], __bss_end[];
extern const uint32_t __data_load[];

void Reset_Handler(void);
static void Fault_Handler(void);

__attribute__((section(".vectors"), used)) static void (*const vectors[16 + UART_IRQ + 1])(void) = {
	(void (*)(void))(uintptr_t)__stack_top,
	Reset_Handler,
	Fault_Handler, /* NMI */
	Fault_Handler, /* HardFault */
	0, 0, 0, 0, 0, 0, 0,
	Fault_Handler, /* SVCall */
	0, 0,
	Fault_Handler, /* PendSV */
	Fault_Handler, /* SysTick (not used) */
	Fault_Handler, /* POWER_CLOCK */
	Fault_Handler, /* RADIO */
	UART0_Handler,
};

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
