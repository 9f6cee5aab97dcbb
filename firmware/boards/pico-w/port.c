/* Raspberry Pi Pico W port: RP2040 (two Cortex-M0+ cores, Armv6-M; the firmware runs on
 * core 0), 264 KiB of SRAM, 2 MiB W25Q16JV QSPI flash. The second-stage boot (boot2.S,
 * checksummed by tools/rpimage) sets up execute-in-place and enters the vector table at
 * 0x10000100. The code is the Raspberry Pi family's, ../rp/rp.c, compiled with this board's
 * macros (board.mk: RP2350=0); the Wi-Fi chip (CYW43439) is not used. */
#include "../rp/rp.h"

#include "../../core/fw.h"

const struct fw_board fw_board_info = {
	.board = "pico-w",
	.chip = "cortex-m0plus",
	.clock_hz = RP_SYS_HZ,
	.counter = RP_COUNTER_NAME,
	.unit = "cycles",
	.resolution = 1,
	.marker = RP_MARKER_NAME,
};
