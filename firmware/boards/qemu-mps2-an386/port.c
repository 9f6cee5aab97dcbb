/* QEMU mps2-an386 port: Cortex-M4, CMSDK APB UART0 at 0x40004000 (RX interrupt 0),
 * SysTick on the 25 MHz core clock (40 instructions per tick under -icount shift=0).
 * The code is the MPS2 family's, ../cmsdk/cmsdk.c, compiled with this board's macros
 * (board.mk). */
#include "../cmsdk/cmsdk.h"

#include "../../core/fw.h"

const struct fw_board fw_board_info = {
	.board = "qemu-mps2-an386",
	.chip = "cortex-m4",
	.clock_hz = CMSDK_CLOCK_HZ,
	.counter = "systick",
	.unit = "instructions",
	.resolution = CMSDK_INSNS_PER_TICK,
};
