/* QEMU mps2-an505 port: Cortex-M33 (Armv8-M mainline) in the SSE-200 subsystem, running
 * in the Secure state as it comes out of reset (no SAU regions, no non-secure image).
 * CMSDK APB UART0 through its secure alias 0x50200000 (RX interrupt 32), SysTick (the
 * secure one) on the 20 MHz system clock: 50 instructions per tick under -icount
 * shift=0. The code is the MPS2 family's, ../cmsdk/cmsdk.c, compiled with this board's
 * macros (board.mk). */
#include "../cmsdk/cmsdk.h"

#include "../../core/fw.h"

const struct fw_board fw_board_info = {
	.board = "qemu-mps2-an505",
	.chip = "cortex-m33",
	.clock_hz = CMSDK_CLOCK_HZ,
	.counter = "systick",
	.unit = "instructions",
	.resolution = CMSDK_INSNS_PER_TICK,
};
