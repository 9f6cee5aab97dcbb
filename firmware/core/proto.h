/* Framing for firmware/PROTOCOL.md: one ASCII line per frame,
 *   @<seq>:<TYPE>:<payload>*<crc32>\n
 * with CRC-32 (IEEE) over everything between '@' and '*'. */
#ifndef FW_PROTO_H
#define FW_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define FW_MAX_FIELDS 16

/* fw_req is a parsed, checksum-verified frame from the runner. Its strings
 * point into the receive buffer and stay valid until the next poll. */
struct fw_req {
	uint32_t seq;
	const char *type;
	unsigned int nfields;
	const char *key[FW_MAX_FIELDS];
	const char *val[FW_MAX_FIELDS];
};

uint32_t fw_crc32(const uint8_t *p, size_t n);

/* Transmit side: begin, add fields, end. fw_frame_end computes the CRC,
 * stores the frame in the resend ring and writes it. */
void fw_frame_begin(const char *type);
void fw_kv_str(const char *key, const char *val);
/* fw_kv_strn adds a field whose value is the n bytes at val (no NUL needed). */
void fw_kv_strn(const char *key, const char *val, size_t n);
void fw_kv_u64(const char *key, uint64_t v);
void fw_kv_hex(const char *key, const uint8_t *p, size_t n);
void fw_frame_end(void);
/* fw_next_seq is the sequence number the next frame will carry. */
uint32_t fw_next_seq(void);
/* fw_resend writes again every frame from seq 'from' on that the ring still
 * holds; it returns -1 if 'from' is older than the ring. */
int fw_resend(uint32_t from);

/* Receive side: fw_rx_poll feeds waiting bytes into the line assembler and
 * returns 1 with *req filled when a complete, valid frame arrived, -1 when a
 * line starting with '@' failed its checksum or parse, FW_RX_OVERFLOW when a
 * line longer than FW_MAX_LINE started with "@<seq>:" (only req->seq is set:
 * the request is answered with ERROR code=overflow), 0 otherwise. */
#define FW_RX_OVERFLOW (-2)
int fw_rx_poll(struct fw_req *req);

/* fw_rx_defer keeps a copy of r (just returned by fw_rx_poll) to be run later;
 * -1 if a request is already waiting. fw_rx_take_deferred hands it back. */
int fw_rx_defer(const struct fw_req *r);
int fw_rx_take_deferred(struct fw_req *r);

const char *fw_req_get(const struct fw_req *r, const char *key);
/* fw_parse_u32 parses a decimal number; returns -1 on error. */
int fw_parse_u32(const char *s, uint32_t *out);
/* fw_parse_u64 parses a decimal number below 2^63; returns -1 on error. */
int fw_parse_u64(const char *s, uint64_t *out);
/* fw_parse_hex decodes hex into out (at most max bytes); returns the length or -1. */
long fw_parse_hex(const char *s, uint8_t *out, size_t max);
int fw_streq(const char *a, const char *b);

#endif
