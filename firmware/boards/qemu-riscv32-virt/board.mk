# qemu-riscv32-virt: rv32imac on QEMU's virt machine, no firmware below it (-bios none).
# The variables a board.mk sets are listed in ../../Makefile ("Boards").
BOARD_CC := riscv64-unknown-elf-gcc
BOARD_SIZE := riscv64-unknown-elf-size
BOARD_CFLAGS := -march=rv32imac_zicsr -mabi=ilp32 -mcmodel=medany -DFW_HAVE_TLS=1 -DFW_HAVE_TLS_SERVER=1 -DTLS13C_PHASE_COUNTER -DFW_HASH_PATCH=1
# The TLS client over the serial line (core/tlsreq.c, PROTOCOL.md "TLS over the serial line").
BOARD_CRYPTO := $(CRYPTO) $(TLS_CRYPTO)
BOARD_SRC := boards/qemu-riscv32-virt/port.c
BOARD_ASM := start.o
# GCC 12 does not match the _zicsr spelling to its rv32imac multilib: name it.
BOARD_LDLIBS := $(shell $(BOARD_CC) -march=rv32imac -mabi=ilp32 -print-libgcc-file-name 2>/dev/null) \
	-Wl,--no-warn-rwx-segments
BOARD_QEMU := qemu-system-riscv32 -M virt -bios none
BOARD_WYCHEPROOF := 1
