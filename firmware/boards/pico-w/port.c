/* Raspberry Pi Pico W port: RP2040 (two Cortex-M0+ cores, Armv6-M; the firmware runs on
 * core 0), 264 KiB of SRAM, 2 MiB W25Q16JV QSPI flash. The second-stage boot (boot2.S,
 * checksummed by tools/rpimage) sets up execute-in-place and enters the vector table at
 * 0x10000100. The code is in ../rp/rp.c, shared with pico2-w; the Wi-Fi chip (CYW43439)
 * is not used. */
#define BOARD_NAME "pico-w"
#define BOARD_CHIP "cortex-m0plus"
#define RP2350 0

#include "../rp/rp.c"
