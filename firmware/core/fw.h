/* The portable firmware core and the interface every board port implements.
 *
 * A port supplies the plat_* functions and fw_board_info, and calls
 * fw_main() from its entry point. Everything else (protocol, dispatcher,
 * DRBG, benchmark loop, self-test) is in core/ and is the same on every
 * board, including the host build used by the Go tests. */
#ifndef FW_H
#define FW_H

#include <stddef.h>
#include <stdint.h>

/* The firmware's name and version in HELLO; a build with another implementation sets its own
 * (make FW_NAME=... FW_VERSION=..., BYOI.md). */
#ifndef FW_NAME
#define FW_NAME "pqrepro-fw"
#endif
#ifndef FW_VERSION
#define FW_VERSION "0.1.0"
#endif
#define FW_PROTO 2

/* FW_MAX_LINE bounds every frame in either direction, newline included: 512 on a board with
 * the TLS client (its HELLO lists the groups and schemes it speaks), 384 elsewhere (the RAM of
 * the line buffers: proto.c keeps five). The runner reads it from HELLO's max_line. */
#if defined(FW_HAVE_TLS) && FW_HAVE_TLS
#define FW_MAX_LINE 512
#else
#define FW_MAX_LINE 384
#endif
/* FW_RING is how many recent frames the firmware keeps for RESEND: more than a SELFTEST
 * sends (one RESULT per vector group, 56 of them), so frames the pty dropped while QEMU had not yet seen
 * the port reopened can all be re-sent. A board with 16 KiB of RAM keeps fewer (-DFW_RING). */
#ifndef FW_RING
#define FW_RING 96
#endif

/* fw_board describes the board as the firmware reports it in HELLO. */
struct fw_board {
	const char *board;   /* port name, e.g. "qemu-mps2-an386" */
	const char *chip;    /* core, e.g. "cortex-m4" */
	uint32_t clock_hz;   /* nominal core clock; 0 when the board has none */
	const char *counter; /* what plat_counter reads, e.g. "minstret" */
	const char *unit;    /* what one count is: "instructions", "ns", "cycles" */
	uint32_t resolution; /* plat_counter advances in steps of this many units */
	const char *marker;  /* the output plat_marker drives, e.g. "gpio2"; 0 when none */
};

extern const struct fw_board fw_board_info;

/* plat_init sets up the UART and the counter. */
void plat_init(void);
/* plat_getc returns the next received byte, or -1 at once if none is waiting. */
int plat_getc(void);
/* plat_write sends n bytes, blocking until they are handed to the UART. */
void plat_write(const char *s, size_t n);
/* plat_idle is called when the firmware has nothing to do (may wait for input:
 * a port that receives by interrupt sleeps until the next one). */
void plat_idle(void);
/* plat_counter returns the free-running counter in fw_board_info.unit. */
uint64_t plat_counter(void);
/* plat_counter_align is called just before the counter is read at the start
 * of a measurement. A port whose counter is coarser than one unit restarts
 * its phase here, so that a count depends only on the instructions measured,
 * not on how long the firmware waited for input before (a no-op elsewhere). */
void plat_counter_align(void);
/* plat_timed_end is called just after the counter is read at the end of a
 * measurement. A port that receives by interrupt masks its UART interrupt in
 * plat_counter_align and unmasks it here, so no handler runs inside a timed
 * region (a no-op elsewhere). */
void plat_timed_end(void);
/* plat_stack_run calls fn(arg) on a stack painted with a known pattern and
 * returns how many bytes of it fn (and the call into it) touched. */
uint32_t plat_stack_run(void (*fn)(void *), void *arg);
/* plat_marker drives the board's marker output (fw_board_info.marker) high (on 1) or low
 * (on 0): LOOP raises it just before each timed call and lowers it just after, so a power
 * meter's logic input marks every operation. A no-op on a board without one. */
void plat_marker(int on);
/* plat_build_id points *id at the linker's build-id and returns its length
 * (0 when there is none). */
size_t plat_build_id(const uint8_t **id);

/* fw_main runs the firmware: it never returns on a board. */
void fw_main(void);

#endif
