/* Raspberry Pi Pico 2 W port: RP2350 (two Cortex-M33 cores, Armv8-M mainline with the DSP
 * extension; the firmware runs on core 0 in the Arm Secure state, as the bootrom enters
 * it), 520 KiB of SRAM, 4 MiB QSPI flash. No boot2: the bootrom finds the IMAGE_DEF block
 * below in the first 4 KiB of flash, sets up a plain XIP mode itself and enters the vector
 * table at 0x10000000. The code is the Raspberry Pi family's, ../rp/rp.c, compiled with
 * this board's macros (board.mk: RP2350=1); the Wi-Fi chip (CYW43439) is not used. */
#include "../rp/rp.h"

#include <stdint.h>

#include "../../core/fw.h"

const struct fw_board fw_board_info = {
	.board = "pico2-w",
	.chip = "cortex-m33",
	.clock_hz = RP_SYS_HZ,
	.counter = RP_COUNTER_NAME,
	.unit = "cycles",
	.resolution = 1,
	.marker = RP_MARKER_NAME,
};

/* The RP2350 datasheet's minimum Arm IMAGE_DEF (section 5.9.5.1), right after the vector
 * table: a block of one IMAGE_TYPE item and the LAST item, linked to itself. */
__attribute__((section(".picobin"), used)) static const uint32_t image_def[5] = {
	0xffffded3u, /* PICOBIN_BLOCK_MARKER_START */
	/* IMAGE_TYPE (0x42), 1 word; flags 0x1021: EXE, Secure, Arm, chip RP2350 */
	0x42u | 1u << 8 | 0x1021u << 16,
	0xffu | 1u << 8, /* LAST (0xff, two-byte size): the items before it are 1 word */
	0x00000000u,     /* link to the next block, relative: 0 is this block (a loop of one) */
	0xab123579u,     /* PICOBIN_BLOCK_MARKER_END */
};
