/* QEMU riscv32 virt port: NS16550A UART at 0x10000000, counter minstret.
 * Under QEMU's -icount shift=0 minstret is the exact, repeatable number of
 * retired (emulated) instructions; it is not a cycle count of any silicon. */
#include <stdint.h>

#include "../../core/fw.h"

#define UART0 0x10000000u
#define UART_REG(o) (*(volatile uint8_t *)(UART0 + (o)))
#define UART_RBR_THR UART_REG(0)
#define UART_IER UART_REG(1)
#define UART_FCR UART_REG(2)
#define UART_LCR UART_REG(3)
#define UART_LSR UART_REG(5) /* bit0 data ready, bit5 THR empty */

const struct fw_board fw_board_info = {
	/* virt has no defined core clock, so clock_hz is absent from HELLO. */
	"qemu-riscv32-virt", "rv32imac", 0, "minstret", "instructions", 1,
};

void plat_init(void)
{
	UART_IER = 0;
	UART_LCR = 0x03; /* 8N1 */
	UART_FCR = 0x07; /* FIFOs on and cleared */
}

int plat_getc(void)
{
	if ((UART_LSR & 0x01u) == 0)
		return -1;
	return UART_RBR_THR;
}

void plat_write(const char *s, size_t n)
{
	while (n--) {
		while ((UART_LSR & 0x20u) == 0)
			;
		UART_RBR_THR = (uint8_t)*s++;
	}
}

void plat_idle(void) {}

void plat_counter_align(void) {}

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
