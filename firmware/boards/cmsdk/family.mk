# The MPS2 family's part of a member's board.mk (included after its own settings): the Arm
# toolchain and the family's unit, compiled with the CMSDK_* macros the board sets in
# BOARD_DEFS (cmsdk.h).
BOARD_CC := arm-none-eabi-gcc
BOARD_SIZE := arm-none-eabi-size
BOARD_SRC += boards/cmsdk/cmsdk.c
BOARD_LDLIBS := -lgcc
