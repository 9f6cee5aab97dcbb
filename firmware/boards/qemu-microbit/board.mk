# qemu-microbit: nRF51 Cortex-M0 on QEMU's microbit.
# The variables a board.mk sets are listed in ../../Makefile ("Boards").
BOARD_CC := arm-none-eabi-gcc
BOARD_SIZE := arm-none-eabi-size
# Cortex-M0 (Armv6-M: no divide instruction, no 32x32->64 multiply; libgcc's helpers) with
# 16 KiB of RAM: the declared subset ML-KEM-512 (core/algs.h), a ring of 8 frames.
BOARD_CFLAGS := -mcpu=cortex-m0 -mthumb -mfloat-abi=soft -DFW_ALGSET_MLKEM512 -DFW_RING=8
BOARD_SRC := boards/qemu-microbit/port.c
BOARD_CRYPTO := crypto/keccak/keccak.c crypto/sha2/sha2.c crypto/mlkem/mlkem512.c
BOARD_ALGS := -algs ML-KEM-512
BOARD_LDLIBS := -lgcc
BOARD_QEMU := qemu-system-arm -M microbit
