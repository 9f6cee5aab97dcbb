/* QEMU mps2-an386 port: Cortex-M4, CMSDK APB UART0 at 0x40004000 (RX interrupt 0),
 * SysTick on the 25 MHz core clock (40 instructions per tick under -icount shift=0).
 * The code is shared with the an505 port: ../cmsdk/cmsdk.c. */
#define BOARD_NAME "qemu-mps2-an386"
#define BOARD_CHIP "cortex-m4"
#define CLOCK_HZ 25000000u
#define UART_BASE 0x40004000u
#define UART_RX_IRQ 0u

#include "../cmsdk/cmsdk.c"
