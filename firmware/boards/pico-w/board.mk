# pico-w: Raspberry Pi Pico W, RP2040 (Cortex-M0+); a real board of the Raspberry Pi family
# (../rp). The variables a board.mk sets are listed in ../../Makefile ("Boards").
# The RP2040 runs its code from SRAM (264 KiB for code, data and a 32 KiB stack): a resend ring
# of 64 frames (24 KiB, as the other boards' 96 take 37 KiB) keeps the telemetry device's
# buffers in. A real UART loses far fewer lines than QEMU's pty, for which 96 were sized.
BOARD_CFLAGS := -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft -DFW_RING=64
BOARD_DEFS := -DRP2350=0
BOARD_SRC := boards/pico-w/port.c
BOARD_ASM := boot2_image.o
# PICO_W_VECTORS narrows the embedded vectors (the rp2040js test image, ../../Makefile).
BOARD_VECGEN := $(PICO_W_VECTORS)
include boards/rp/family.mk

# The image starts with the project's second stage (boot2.S), linked alone, padded and
# checksummed by tools/rpimage, then assembled into the image's .boot2 section.
$(BUILD)/pico-w/boot2.elf: boards/pico-w/boot2.S boards/pico-w/boot2.ld
	@mkdir -p $(BUILD)/pico-w
	$(pico-w_CC) $(BM_CFLAGS) $(pico-w_CFLAGS) -nostdlib -nostartfiles -T boards/pico-w/boot2.ld -o $@ $<

$(BUILD)/pico-w/boot2_image.S: $(BUILD)/pico-w/boot2.elf $(RPIMAGE_SRC)
	$(RPIMAGE) boot2 -elf firmware/$< -o firmware/$@

$(BUILD)/pico-w/boot2_image.o: $(BUILD)/pico-w/boot2_image.S
	$(pico-w_CC) $(BM_CFLAGS) $(pico-w_CFLAGS) -c -o $@ $<

$(BUILD)/pico-w/pqrepro-fw.uf2: $(BUILD)/pico-w/pqrepro-fw.elf $(RPIMAGE_SRC)
	$(RPIMAGE) uf2 -elf firmware/$< -family rp2040 -o firmware/$@
