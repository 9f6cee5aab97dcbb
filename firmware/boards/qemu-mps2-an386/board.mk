# qemu-mps2-an386: Cortex-M4 on QEMU's mps2-an386, of the MPS2 family (../cmsdk).
# The variables a board.mk sets are listed in ../../Makefile ("Boards").
BOARD_CFLAGS := -mcpu=cortex-m4 -mthumb -mfloat-abi=soft -DFW_HAVE_TLS=1 -DFW_HAVE_TLS_SERVER=1 -DTLS13C_PHASE_COUNTER -DFW_HASH_PATCH=1
# The TLS client over the serial line (core/tlsreq.c, PROTOCOL.md "TLS over the serial line").
BOARD_CRYPTO := $(CRYPTO) $(TLS_CRYPTO)
BOARD_DEFS := -DCMSDK_CLOCK_HZ=25000000u -DCMSDK_UART_BASE=0x40004000u -DCMSDK_UART_RX_IRQ=0u
BOARD_SRC := boards/qemu-mps2-an386/port.c
BOARD_QEMU := qemu-system-arm -M mps2-an386
include boards/cmsdk/family.mk
BOARD_WYCHEPROOF := 1
