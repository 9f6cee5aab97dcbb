/* Frame encoding, the resend ring and the receive line assembler. */
#include "proto.h"

#include "../crypto/pqmem.h"
#include "fw.h"

static const uint32_t crc_nibble[16] = {
	0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4,
	0x4DB26158, 0x5005713C, 0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C,
	0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C,
};

uint32_t fw_crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	while (n--) {
		c ^= *p++;
		c = (c >> 4) ^ crc_nibble[c & 15];
		c = (c >> 4) ^ crc_nibble[c & 15];
	}
	return c ^ 0xFFFFFFFFu;
}

static const char hexdig[] = "0123456789abcdef";

/* Transmit state: the frame being built and the ring of sent frames. */
static struct {
	uint32_t seq;
	uint16_t len;
	char line[FW_MAX_LINE];
} ring[FW_RING];
static uint32_t tx_seq;
static char txbuf[FW_MAX_LINE];
static size_t txlen;
static int txfields, txoverflow;

uint32_t fw_next_seq(void) { return tx_seq; }

static void tx_put(const char *s, size_t n)
{
	/* Keep room for "*xxxxxxxx\n". */
	if (txlen + n + 10 > FW_MAX_LINE) {
		txoverflow = 1;
		return;
	}
	memcpy(txbuf + txlen, s, n);
	txlen += n;
}

static size_t fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

void fw_frame_begin(const char *type)
{
	char num[20];
	txlen = 0;
	txfields = 0;
	txoverflow = 0;
	tx_put("@", 1);
	tx_put(num, fmt_u64(num, tx_seq));
	tx_put(":", 1);
	tx_put(type, strlen(type));
	tx_put(":", 1);
}

static void kv_key(const char *key)
{
	if (txfields++ > 0)
		tx_put(" ", 1);
	tx_put(key, strlen(key));
	tx_put("=", 1);
}

void fw_kv_str(const char *key, const char *val)
{
	kv_key(key);
	tx_put(val, strlen(val));
}

void fw_kv_strn(const char *key, const char *val, size_t n)
{
	kv_key(key);
	tx_put(val, n);
}

void fw_kv_u64(const char *key, uint64_t v)
{
	char num[20];
	kv_key(key);
	tx_put(num, fmt_u64(num, v));
}

void fw_kv_hex(const char *key, const uint8_t *p, size_t n)
{
	size_t i;
	kv_key(key);
	for (i = 0; i < n; i++) {
		char h[2] = {hexdig[p[i] >> 4], hexdig[p[i] & 15]};
		tx_put(h, 2);
	}
}

void fw_frame_end(void)
{
	uint32_t crc;
	int i;

	if (txoverflow) {
		/* A frame that does not fit is replaced by an error, never cut. */
		fw_frame_begin("ERROR");
		fw_kv_str("code", "overflow");
	}
	crc = fw_crc32((const uint8_t *)txbuf + 1, txlen - 1);
	txbuf[txlen++] = '*';
	for (i = 7; i >= 0; i--)
		txbuf[txlen++] = hexdig[(crc >> (4 * i)) & 15];
	txbuf[txlen++] = '\n';
	ring[tx_seq % FW_RING].seq = tx_seq;
	ring[tx_seq % FW_RING].len = (uint16_t)txlen;
	memcpy(ring[tx_seq % FW_RING].line, txbuf, txlen);
	tx_seq++;
	plat_write(txbuf, txlen);
}

int fw_resend(uint32_t from)
{
	uint32_t s;
	if (from >= tx_seq)
		return 0;
	if (tx_seq - from > FW_RING)
		return -1;
	for (s = from; s < tx_seq; s++)
		plat_write(ring[s % FW_RING].line, ring[s % FW_RING].len);
	return 0;
}

/* Receive state. */
static char rxbuf[FW_MAX_LINE];
static size_t rxlen;
static int rxoverflow;

int fw_streq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fw_parse_u32(const char *s, uint32_t *out)
{
	uint64_t v = 0;
	if (*s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > 0xFFFFFFFFu)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int fw_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (0x7FFFFFFFFFFFFFFFull - 9u) / 10u)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

long fw_parse_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s), i;
	if (n % 2 != 0 || n / 2 > max)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

const char *fw_req_get(const struct fw_req *r, const char *key)
{
	unsigned int i;
	for (i = 0; i < r->nfields; i++)
		if (fw_streq(r->key[i], key))
			return r->val[i];
	return 0;
}

/* parse_line checks and splits rxbuf[0:rxlen] in place. */
static int parse_line(struct fw_req *req)
{
	char *line = rxbuf, *star = 0, *p, *type, *payload;
	uint32_t crc = 0;
	size_t i;
	int v;

	line[rxlen] = 0;
	for (i = rxlen; i > 0; i--)
		if (line[i - 1] == '*') {
			star = line + i - 1;
			break;
		}
	if (star == 0 || line + rxlen - star != 9)
		return -1;
	for (p = star + 1; *p; p++) {
		if ((v = hexval(*p)) < 0)
			return -1;
		crc = crc << 4 | (uint32_t)v;
	}
	if (fw_crc32((const uint8_t *)line + 1, (size_t)(star - line - 1)) != crc)
		return -1;
	*star = 0;
	/* @seq:TYPE:payload */
	type = line + 1;
	while (*type && *type != ':')
		type++;
	if (*type != ':')
		return -1;
	*type++ = 0;
	if (fw_parse_u32(line + 1, &req->seq) != 0)
		return -1;
	payload = type;
	while (*payload && *payload != ':')
		payload++;
	if (*payload != ':')
		return -1;
	*payload++ = 0;
	req->type = type;
	req->nfields = 0;
	p = payload;
	while (*p) {
		char *k = p, *eq;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = 0;
		if (*k == 0)
			continue;
		for (eq = k; *eq && *eq != '='; eq++)
			;
		if (*eq != '=' || req->nfields == FW_MAX_FIELDS)
			return -1;
		*eq = 0;
		req->key[req->nfields] = k;
		req->val[req->nfields] = eq + 1;
		req->nfields++;
	}
	return 1;
}

/* overflow_seq reads the sequence number at the start of a line that did not fit rxbuf
 * ("@<seq>:..."; the buffer keeps the line's first bytes): FW_RX_OVERFLOW with req->seq
 * set when it is there and not 0, else -1 (a bad frame like any other). */
static int overflow_seq(struct fw_req *req)
{
	size_t i;
	uint32_t v = 0;
	for (i = 1; i < rxlen && rxbuf[i] >= '0' && rxbuf[i] <= '9'; i++) {
		if (i > 10 || (i == 2 && rxbuf[1] == '0'))
			return -1;
		v = v * 10u + (uint32_t)(rxbuf[i] - '0');
	}
	if (i == 1 || i >= rxlen || rxbuf[i] != ':' || v == 0)
		return -1;
	rxbuf[i] = 0;
	if (fw_parse_u32(rxbuf + 1, &req->seq) != 0)
		return -1;
	req->type = "";
	req->nfields = 0;
	return FW_RX_OVERFLOW;
}

int fw_rx_poll(struct fw_req *req)
{
	int c;
	while ((c = plat_getc()) >= 0) {
		if (c == '\r')
			continue;
		if (c == '@') {
			/* '@' only starts a frame (PROTOCOL.md): whatever came before it on the line
			 * (noise, or a frame whose newline was lost) is dropped, not run together. */
			rxlen = 0;
			rxoverflow = 0;
		}
		if (c != '\n') {
			if (rxlen + 1 >= sizeof rxbuf)
				rxoverflow = 1;
			else
				rxbuf[rxlen++] = (char)c;
			continue;
		}
		/* A complete line. Lines that do not start with '@' are noise. */
		{
			int r = 0;
			if (rxlen > 0 && rxbuf[0] == '@')
				r = rxoverflow ? overflow_seq(req) : parse_line(req);
			rxlen = 0;
			rxoverflow = 0;
			if (r != 0)
				return r;
		}
	}
	return 0;
}

/* One request that arrived while the firmware was busy is kept here and run
 * afterwards; the runner sends one request at a time, so one slot is enough. */
static char pendbuf[FW_MAX_LINE], curbuf[FW_MAX_LINE];
static struct fw_req pend;
static int have_pend;

static void reloc(struct fw_req *dst, const struct fw_req *src, const char *from, char *to)
{
	unsigned int i;
	*dst = *src;
	dst->type = to + (src->type - from);
	for (i = 0; i < src->nfields; i++) {
		dst->key[i] = to + (src->key[i] - from);
		dst->val[i] = to + (src->val[i] - from);
	}
}

int fw_rx_defer(const struct fw_req *r)
{
	if (have_pend)
		return -1;
	memcpy(pendbuf, rxbuf, sizeof rxbuf);
	reloc(&pend, r, rxbuf, pendbuf);
	have_pend = 1;
	return 0;
}

int fw_rx_take_deferred(struct fw_req *r)
{
	if (!have_pend)
		return 0;
	memcpy(curbuf, pendbuf, sizeof pendbuf);
	reloc(r, &pend, pendbuf, curbuf);
	have_pend = 0;
	return 1;
}
