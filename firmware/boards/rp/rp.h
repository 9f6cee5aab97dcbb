/* The Raspberry Pi family's board contract: what a board's board.mk defines for rp.c (and
 * its port.c) to be compiled with, as a -D flag in BOARD_DEFS:
 *
 *   RP2350   1 for the RP2350 (register map, clocks, counter), 0 for the RP2040
 *
 * and what follows from it for the board's fw_board_info. */
#ifndef RP_H
#define RP_H

#ifndef RP2350
#error "define RP2350 (1 or 0) in the board's board.mk"
#endif

#if RP2350
#define RP_SYS_HZ 150000000u           /* clk_sys: PLL_SYS 1500 MHz / (5 x 2) */
#define RP_COUNTER_NAME "dwt-cyccnt"   /* DWT CYCCNT, extended to 64 bits */
#else
#define RP_SYS_HZ 125000000u           /* clk_sys: PLL_SYS 1500 MHz / (6 x 2) */
#define RP_COUNTER_NAME "systick"      /* SysTick on the processor clock (no DWT on the M0+) */
#endif

/* The marker output LOOP toggles around each timed call (plat_marker), for a power meter's
 * logic input (a PPK2's D0, say): GPIO2, pin 4 of the Pico W and Pico 2 W, next to the
 * UART's pins 1 and 2 and ground at pin 3. */
#define RP_MARKER_GPIO 2u
#define RP_MARKER_NAME "gpio2"

#endif
