# pico2-w: Raspberry Pi Pico 2 W, RP2350 (Cortex-M33, Secure state); a real board of the
# Raspberry Pi family (../rp). The variables a board.mk sets are listed in ../../Makefile
# ("Boards").
BOARD_CFLAGS := -mcpu=cortex-m33 -mthumb -mfloat-abi=soft
BOARD_DEFS := -DRP2350=1
BOARD_SRC := boards/pico2-w/port.c
include boards/rp/family.mk

$(BUILD)/pico2-w/pqrepro-fw.uf2: $(BUILD)/pico2-w/pqrepro-fw.elf $(RPIMAGE_SRC)
	$(RPIMAGE) uf2 -elf firmware/$< -family rp2350-arm-s -o firmware/$@
