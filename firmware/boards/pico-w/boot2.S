/* RP2040 second-stage boot for the Pico W's W25Q16JV flash (any 25-series flash that
 * answers the standard 03h read). The bootrom copies the first 256 bytes of flash to the top
 * of SRAM (0x20041f00), checks the CRC-32 in the last 4 (tools/rpimage appends it) and
 * runs them. This code configures the XIP SSI for serial 03h reads, 32-bit frames of one
 * address each, SCK = clk_sys / 4, and then enters the image through its vector table at
 * 0x10000100 (VTOR, MSP, reset handler). It uses no absolute address of its own, so it also
 * runs in place at 0x10000000 (as under rp2040js). The 03h read is the slowest mode but works
 * with every flash and needs no status-register write; code runs from SRAM anyway (rp.c). */
	.syntax unified
	.cpu cortex-m0plus
	.thumb

	.equ SSI_BASE, 0x18000000
	.equ SSI_CTRLR0, 0x00
	.equ SSI_CTRLR1, 0x04
	.equ SSI_SSIENR, 0x08
	.equ SSI_BAUDR, 0x14
	.equ SSI_SPI_CTRLR0, 0xf4
	/* CTRLR0: SPI_FRF 0 (standard), DFS_32 31 (32-bit frames), TMOD 3 (EEPROM read) */
	.equ CTRLR0_XIP, (0 << 21) | (31 << 16) | (3 << 8)
	/* SPI_CTRLR0: XIP_CMD 03h, WAIT_CYCLES 0, INST_L 2 (8 bits), ADDR_L 6 (24 bits),
	 * TRANS_TYPE 0 (instruction and address on one line) */
	.equ SPI_CTRLR0_XIP, (0x03 << 24) | (0 << 11) | (2 << 8) | (6 << 2) | 0
	.equ CLKDIV, 4
	.equ VTOR, 0xe000ed08
	.equ IMAGE_VECTORS, 0x10000100

	.section .text.boot2, "ax"
	.global boot2_entry
	.type boot2_entry, %function
boot2_entry:
	ldr r3, =SSI_BASE
	movs r1, #0
	str r1, [r3, #SSI_SSIENR]   /* the SSI is configured only while disabled */
	movs r1, #CLKDIV
	str r1, [r3, #SSI_BAUDR]
	ldr r1, =CTRLR0_XIP
	str r1, [r3, #SSI_CTRLR0]
	ldr r1, =SPI_CTRLR0_XIP
	ldr r0, =(SSI_BASE + SSI_SPI_CTRLR0)
	str r1, [r0]
	movs r1, #0
	str r1, [r3, #SSI_CTRLR1]   /* NDF 0: one data frame per XIP access */
	movs r1, #1
	str r1, [r3, #SSI_SSIENR]
	/* enter the image */
	ldr r0, =IMAGE_VECTORS
	ldr r1, =VTOR
	str r0, [r1]
	ldmia r0!, {r1, r2}
	msr msp, r1
	bx r2
	.ltorg
	.size boot2_entry, . - boot2_entry
