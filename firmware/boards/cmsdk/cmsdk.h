/* The MPS2 family's board contract: what a board's board.mk defines for cmsdk.c (and its
 * port.c) to be compiled with, as -D flags in BOARD_DEFS:
 *
 *   CMSDK_CLOCK_HZ      the SysTick clock (QEMU's sysclk for the machine)
 *   CMSDK_UART_BASE     CMSDK UART0 (the secure alias on an Armv8-M board)
 *   CMSDK_UART_RX_IRQ   its RX interrupt, an NVIC external interrupt number */
#ifndef CMSDK_H
#define CMSDK_H

#if !defined(CMSDK_CLOCK_HZ) || !defined(CMSDK_UART_BASE) || !defined(CMSDK_UART_RX_IRQ)
#error "define CMSDK_CLOCK_HZ, CMSDK_UART_BASE and CMSDK_UART_RX_IRQ in the board's board.mk"
#endif

/* Instructions per SysTick tick, at QEMU's 1 ns per instruction (-icount shift=0): what
 * HELLO reports as resolution. */
#define CMSDK_INSNS_PER_TICK (1000000000u / CMSDK_CLOCK_HZ)

#endif
