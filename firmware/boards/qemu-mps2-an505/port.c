/* QEMU mps2-an505 port: Cortex-M33 (Armv8-M mainline) in the SSE-200 subsystem, running
 * in the Secure state as it comes out of reset (no SAU regions, no non-secure image).
 * CMSDK APB UART0 through its secure alias 0x50200000 (RX interrupt 32), SysTick (the
 * secure one) on the 20 MHz system clock: 50 instructions per tick under -icount
 * shift=0. The code is shared with the an386 port: ../cmsdk/cmsdk.c. */
#define BOARD_NAME "qemu-mps2-an505"
#define BOARD_CHIP "cortex-m33"
#define CLOCK_HZ 20000000u
#define UART_BASE 0x50200000u
#define UART_RX_IRQ 32u

#include "../cmsdk/cmsdk.c"
