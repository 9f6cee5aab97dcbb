# pico-w: Raspberry Pi Pico W, RP2040 (Cortex-M0+); a real board of the Raspberry Pi family
# (../rp). The variables a board.mk sets are listed in ../../Makefile ("Boards").
# The RP2040 runs its code from SRAM (264 KiB for code, data and a 32 KiB stack): a resend ring
# of 64 frames (24 KiB, as the other boards' 96 take 37 KiB) keeps the telemetry device's
# buffers in. A real UART loses far fewer lines than QEMU's pty, for which 96 were sized.
# PICO_W_TLS=1 is the rp2040js Pico W's TLS image (../../Makefile, pico-w-rp2040js-tls): the TLS
# client over the serial line (core/tlsreq.c) in the RAM SLH-DSA (its 49,856-byte signature
# buffer and its code), the telemetry device and Ascon held: the declared subset ML-KEM and
# ML-DSA (core/algs.h), and smaller buffers where the protocol's limits are far above what the
# client sends or takes: its output (a ClientHello under 2 KB; the Finished with an echo of at
# most 1,024 bytes), the application data it takes (the echo) and the buffered server flight
# (24 KiB: the largest cell's, ML-KEM-1024 with ML-DSA-87, is about 14 KB); records and
# handshake messages keep the protocol's 16 KiB. The ring keeps 16 frames, more than a
# handshake's answer (rp2040js loses no byte of its line). Without it, the regular image.
PICO_W_TLS_CFLAGS := -DFW_RING=16 -DFW_HAVE_TLS=1 -DTLS13C_PHASE_COUNTER -DFW_ALGSET_MLKEM_MLDSA -DFW_HAVE_TEL=0 \
	-DFW_TLS_IN_MAX=24576u -DTLS13C_OUT_BUF=2560 -DTLS13C_APP_BUF=1024
PICO_W_TLS_CRYPTO := crypto/keccak/keccak.c crypto/sha2/sha2.c crypto/mlkem/mlkem512.c crypto/mlkem/mlkem768.c \
	crypto/mlkem/mlkem1024.c crypto/mldsa/mldsa44.c crypto/mldsa/mldsa65.c crypto/mldsa/mldsa87.c $(TLS_CRYPTO)
BOARD_CFLAGS := -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft $(if $(filter 1,$(PICO_W_TLS)),$(PICO_W_TLS_CFLAGS),-DFW_RING=64)
BOARD_CRYPTO := $(if $(filter 1,$(PICO_W_TLS)),$(PICO_W_TLS_CRYPTO))
PICO_W_TLS_ALGS := -algs ML-KEM-512,ML-KEM-768,ML-KEM-1024,ML-DSA-44,ML-DSA-65,ML-DSA-87
BOARD_ALGS := $(if $(filter 1,$(PICO_W_TLS)),$(PICO_W_TLS_ALGS))
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
