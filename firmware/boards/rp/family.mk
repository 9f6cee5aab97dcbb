# The Raspberry Pi family's part of a member's board.mk (included after its own settings):
# the Arm toolchain, the family's unit, compiled with the RP2350 macro the board sets in
# BOARD_DEFS (rp.h), and the UF2 image for picotool or the bootloader's USB drive.
BOARD_CC := arm-none-eabi-gcc
BOARD_SIZE := arm-none-eabi-size
BOARD_SRC += boards/rp/rp.c
BOARD_LDLIBS := -lgcc
BOARD_IMAGE := $(BUILD)/$(BOARD)/pqrepro-fw.uf2
