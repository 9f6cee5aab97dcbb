# qemu-mps2-an505: Cortex-M33 (Secure state) on QEMU's mps2-an505, of the MPS2 family
# (../cmsdk). The variables a board.mk sets are listed in ../../Makefile ("Boards").
# Cortex-M33 as GCC knows it (DSP extension and FPU, as on the RP2350); soft-float ABI:
# the firmware has no floating point.
BOARD_CFLAGS := -mcpu=cortex-m33 -mthumb -mfloat-abi=soft -DFW_HAVE_TLS=1 -DFW_HAVE_TLS_SERVER=1 -DTLS13C_PHASE_COUNTER -DFW_HASH_PATCH=1
# The TLS client over the serial line (core/tlsreq.c, PROTOCOL.md "TLS over the serial line").
BOARD_CRYPTO := $(CRYPTO) $(TLS_CRYPTO)
BOARD_DEFS := -DCMSDK_CLOCK_HZ=20000000u -DCMSDK_UART_BASE=0x50200000u -DCMSDK_UART_RX_IRQ=32u
BOARD_SRC := boards/qemu-mps2-an505/port.c
BOARD_QEMU := qemu-system-arm -M mps2-an505
include boards/cmsdk/family.mk
BOARD_WYCHEPROOF := 1
