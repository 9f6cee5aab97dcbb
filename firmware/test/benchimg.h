/* benchimg: what the count images share (test/c25519bench.c, p256bench.c, rsabench.c,
 * tlsreplay.c: board images, not the firmware). Each prints its results as lines of
 * "tag key=value ..." over the UART, then "DONE", which the Go tests read (countimage_test.go);
 * benchimg.c is compiled into each image by its Makefile rule. */
#ifndef BENCHIMG_H
#define BENCHIMG_H

#include "../core/fw.h"

/* put writes s; put_u64 v in decimal; put_int v in decimal with its sign; put_hex n bytes in
 * lowercase hex. */
void put(const char *s);
void put_u64(uint64_t v);
void put_int(int v);
void put_hex(const uint8_t *p, size_t n);
/* put_num writes a label (" count=") and v in decimal. */
void put_num(const char *label, uint64_t v);
/* put_board writes " board=<board> unit=<counter unit>" (fw_board_info). */
void put_board(void);
/* bench_done writes "DONE" and idles for ever. */
void bench_done(void) __attribute__((noreturn));

/* BENCH_COUNT(dst, stmt) runs stmt between two reads of the board's counter and stores the
 * difference in dst; stmt is all that is counted. */
#define BENCH_COUNT(dst, stmt)                                                                     \
	do {                                                                                       \
		uint64_t t0_, t1_;                                                                 \
		plat_counter_align();                                                              \
		t0_ = plat_counter();                                                              \
		stmt;                                                                              \
		t1_ = plat_counter();                                                              \
		plat_timed_end();                                                                  \
		dst = t1_ - t0_;                                                                   \
	} while (0)

#endif
