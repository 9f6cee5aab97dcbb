/* QEMU riscv32 virt port: NS16550A UART at 0x10000000, received by interrupt (PLIC
 * source 10, machine mode on hart 0) into a ring buffer; counter minstret.
 * Under QEMU's -icount shift=0 minstret is the exact, repeatable number of
 * retired (emulated) instructions; it is not a cycle count of any silicon. */
#include <stdint.h>

#include "../../core/fw.h"
#include "../baremetal/rxring.h"

#define UART0 0x10000000u
#define UART_REG(o) (*(volatile uint8_t *)(UART0 + (o)))
#define UART_RBR_THR UART_REG(0)
#define UART_IER UART_REG(1) /* bit0 received-data interrupt */
#define UART_FCR UART_REG(2)
#define UART_LCR UART_REG(3)
#define UART_LSR UART_REG(5) /* bit0 data ready, bit5 THR empty */

#define UART_IRQ 10u
#define PLIC_REG(o) (*(volatile uint32_t *)(0x0C000000u + (o)))
#define PLIC_PRIORITY(n) PLIC_REG(4u * (n))
#define PLIC_ENABLE0 PLIC_REG(0x2000u)    /* context 0: hart 0, machine mode; sources 0..31 */
#define PLIC_THRESHOLD0 PLIC_REG(0x200000u)
#define PLIC_CLAIM0 PLIC_REG(0x200004u)

#define MIE_MEIE (1u << 11)
#define MSTATUS_MIE (1u << 3)

const struct fw_board fw_board_info = {
	.board = "qemu-riscv32-virt",
	.chip = "rv32imac",
	.clock_hz = 0, /* virt has no defined core clock, so clock_hz is absent from HELLO */
	.counter = "minstret",
	.unit = "instructions",
	.resolution = 1,
};

static void uart_drain(void)
{
	while (UART_LSR & 0x01u) {
		rx_push(UART_RBR_THR);
	}
}

/* trap: external interrupts are claimed from the PLIC; an exception is a fault, reported
 * with a plain (unframed) line, after which the firmware stops. */
__attribute__((interrupt("machine"), aligned(4))) static void trap(void)
{
	uint32_t cause, src;
	__asm__ volatile("csrr %0, mcause" : "=r"(cause));
	if ((cause & 0x80000000u) == 0) {
		static const char msg[] = "\nFAULT\n";
		plat_write(msg, sizeof msg - 1);
		for (;;)
			;
	}
	while ((src = PLIC_CLAIM0) != 0) {
		if (src == UART_IRQ)
			uart_drain();
		PLIC_CLAIM0 = src;
	}
}

void plat_init(void)
{
	UART_IER = 0;
	/* The receive interrupt comes at 14 bytes in the FIFO, or when bytes have waited there
	 * four character times (QEMU's timeout, on the virtual clock; divisor 1 makes a character
	 * time the shortest). QEMU moves as many bytes from the runner as the FIFO is below its
	 * trigger level, so at 14 a request crosses in 14-byte steps, each one round of QEMU's
	 * main loop and one wake-up of the CPU; at 1 (FCR 0x07) it crossed a byte a round, about
	 * four times slower (BenchmarkQEMULine). No handler runs in a timed region either way. */
	UART_LCR = 0x80;  /* DLAB: the divisor latch */
	UART_RBR_THR = 1; /* DLL */
	UART_IER = 0;     /* DLM */
	UART_LCR = 0x03;  /* 8N1 */
	UART_FCR = 0xC7;  /* FIFOs on and cleared, trigger level 14 */
	__asm__ volatile("csrw mtvec, %0" ::"r"((uintptr_t)trap));
	PLIC_PRIORITY(UART_IRQ) = 1;
	PLIC_THRESHOLD0 = 0;
	PLIC_ENABLE0 = 1u << UART_IRQ;
	UART_IER = 0x01;
	__asm__ volatile("csrs mie, %0" ::"r"(MIE_MEIE));
	__asm__ volatile("csrs mstatus, %0" ::"r"(MSTATUS_MIE));
}

int plat_getc(void) { return rx_take(); }

void plat_write(const char *s, size_t n)
{
	while (n--) {
		while ((UART_LSR & 0x20u) == 0)
			;
		UART_RBR_THR = (uint8_t)*s++;
	}
}

/* plat_idle sleeps until an interrupt. mstatus.MIE is cleared around the check, so a
 * byte that arrived after the firmware last looked still ends WFI (WFI wakes on a pending
 * enabled interrupt whatever mstatus.MIE says) and is taken once MIE is set again. */
void plat_idle(void)
{
	__asm__ volatile("csrc mstatus, %0" ::"r"(MSTATUS_MIE) : "memory");
	if (rx_empty())
		__asm__ volatile("wfi" ::: "memory");
	__asm__ volatile("csrs mstatus, %0" ::"r"(MSTATUS_MIE) : "memory");
}

/* No handler runs inside a timed region: the external interrupt is masked from here to
 * plat_timed_end (bytes wait in the UART's FIFO). minstret needs no phase alignment. */
void plat_counter_align(void) { __asm__ volatile("csrc mie, %0" ::"r"(MIE_MEIE) : "memory"); }

void plat_timed_end(void) { __asm__ volatile("csrs mie, %0" ::"r"(MIE_MEIE) : "memory"); }

uint64_t plat_counter(void)
{
	uint32_t hi, lo, hi2;
	do {
		__asm__ volatile("csrr %0, minstreth" : "=r"(hi));
		__asm__ volatile("csrr %0, minstret" : "=r"(lo));
		__asm__ volatile("csrr %0, minstreth" : "=r"(hi2));
	} while (hi != hi2);
	return (uint64_t)hi << 32 | lo;
}
