/* What the request handlers share, internal to core/. fw.c runs the main loop and
 * dispatches each request (PROTOCOL.md) to its family's file:
 *
 *   fw.c        the loop, RESEND, duplicate suppression, ERROR, the busy poll
 *   hello.c     HELLO, ALGS, SEED: what the board is and holds, and its DRBG seed
 *   bench.c     BENCH: KEM and signature operations timed on a painted stack; LOOP: one
 *               of them back to back for a budget, between the marker's edges
 *   selftest.c  SELFTEST: the known-answer tests of vectors.h
 *   telreq.c    TELEK ... TELSEAL and AEADBENCH: the telemetry device (telreq.h)
 *   tally.c     the SAMPLE/SUMMARY loop BENCH and AEADBENCH share (tally.h) */
#ifndef FW_REQ_H
#define FW_REQ_H

#include <stdint.h>

#include "algs.h"
#include "proto.h"

/* FW_SIG_MAX_MSG is the longest message a signature BENCH draws (msglen=), which HELLO
 * reports as max_msg; 0 on a board without signature schemes. */
#if FW_HAVE_SIG
#define FW_SIG_MAX_MSG 4096u
#else
#define FW_SIG_MAX_MSG 0u
#endif

/* fw_send_error answers request re with ERROR code= and, unless msg is 0, msg=. */
void fw_send_error(uint32_t re, const char *code, const char *msg);

/* fw_busy_poll serves RESEND (and queues or refuses other requests) between the iterations
 * of a long request. */
void fw_busy_poll(void);

void fw_send_hello(uint32_t re);
void fw_do_algs(const struct fw_req *r);
void fw_do_seed(const struct fw_req *r);
void fw_do_bench(const struct fw_req *r);
void fw_do_loop(const struct fw_req *r);
void fw_do_selftest(const struct fw_req *r);

/* Buffers BENCH owns and SELFTEST borrows (one request runs at a time): the KEM key pair
 * (on a 16 KiB board the self-test's only large buffers) and the signature key pair and
 * signature. */
extern uint8_t fw_bench_ek[FW_KEM_MAX_EK], fw_bench_dk[FW_KEM_MAX_DK];
extern uint8_t fw_bench_pk[FW_SIG_MAX_PK], fw_bench_sk[FW_SIG_MAX_SK], fw_bench_sig[FW_SIG_MAX_SIG];

#endif
