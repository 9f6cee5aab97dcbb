/* TLSCA, TLS io=serial and TLSIN: the board's TLS 1.3 client (crypto/tls13) with its records
 * carried over the serial line (tlsreq.h, firmware/PROTOCOL.md "TLS over the serial line");
 * with FW_HAVE_TLS_SERVER also TLSLEAF, TLSKEY and TLS role=server, the board as the server
 * (crypto/tls13/tls13s), the runner playing the client. */
#include "tlsreq.h"

#include "fw.h"

#if FW_HAVE_TLS

#include "../crypto/pqmem.h"
#include "../crypto/sha2/sha2.h"
#include "../crypto/tls13/tls13c.h"
#if FW_HAVE_TLS_SERVER
#include "../crypto/tls13/tls13s.h"
#endif
#include "../crypto/x509/x509.h"
#include "drbg.h"
#include "req.h"

/* TLS_CHUNK bytes of binary per TLSO/TLSIN/TLSCA frame (hex doubles them): 224 when frames reach
 * 512 bytes (the longest, a TLSIN with a ten-digit sequence number and end=1, is then 501 bytes
 * with its check), else 128, as the telemetry requests' chunks. The runner sizes its own the
 * same way from HELLO's max_line (runner/wire/tlsserial.go). */
#define TLS_CHUNK (FW_MAX_LINE >= 512 ? 224 : 128)
#define TLS_CA_MAX 8192u   /* an ML-DSA-87 CA certificate is about 7.5 KB */
/* TLS_IN_MAX: the largest server flight the board buffers (ML-KEM-1024 with ML-DSA-87's is about
 * 14 KB); a board short of RAM sets a smaller one (-DFW_TLS_IN_MAX=...). */
#ifdef FW_TLS_IN_MAX
#define TLS_IN_MAX FW_TLS_IN_MAX
#else
#define TLS_IN_MAX 32768u
#endif
#define TLS_SNI_MAX 64u
#define TLS_MAX_N 1000u
#define TLS_MAX_WARMUP 100u
#define TLS_MAX_ECHO 1024u

static uint8_t s_ca[TLS_CA_MAX];
static uint32_t s_ca_have, s_ca_len;
static int s_ca_pinned;
static uint8_t s_ca_hash[32];

static struct tls13c s_cl;
static uint8_t s_in[TLS_IN_MAX];
static uint32_t s_in_have;
static uint8_t s_echo[TLS_MAX_ECHO];
static uint8_t s_random[32], s_seed[64], s_ecdh[32];
static char s_sni[TLS_SNI_MAX + 1];

#if FW_HAVE_TLS_SERVER
/* The server role's provisioning: the leaf certificate (TLSLEAF) and its key (TLSKEY, the blob
 * of tls13s_key_set, held only while it arrives: zeroed once read into s_key, and s_key zeroed
 * when replaced). The client and the server state are never in use at once. */
#define TLS_LEAF_MAX 8192u
#define TLS_KEY_MAX 1024u
static uint8_t s_leaf[TLS_LEAF_MAX];
static uint32_t s_leaf_have, s_leaf_len;
static int s_leaf_pinned;
static uint8_t s_leaf_hash[32];
static struct x509_cert s_leaf_cert;
static uint8_t s_keyblob[TLS_KEY_MAX];
static uint32_t s_key_have, s_key_len;
static int s_key_loaded;
static uint8_t s_key_hash[32];
static struct tls13s_key s_key;
static struct tls13s s_sv;
static uint8_t s_kem_rnd[32], s_sig_rnd[32];
#endif

/* The cell in progress: its parameters, the handshake i (warm-up ones first), its stage, the
 * counts summed over its compute segments and the tallies. */
enum tls_stage { TS_IDLE, TS_FLIGHT, TS_ECHO };
static struct {
	enum tls_stage stage;
	int server, sigdet; /* the board is the server; its signatures deterministic (sigrnd=det) */
	uint16_t group, sig;
	uint32_t n, warmup, echo, i, ok, fail, segments;
	int64_t now;
	uint64_t count, stack;
	uint64_t phase[TLS13C_PHASES];
} s_cell;

static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (s == 0 || *s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (0x7fffffffffffffffull - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* get_u32 reads key as a decimal in [lo, hi] into *out; on a bad or missing field it answers
 * ERROR badarg msg=key and returns -1. */
static int get_u32(const struct fw_req *r, const char *key, uint32_t lo, uint32_t hi, uint32_t *out)
{
	const char *s = fw_req_get(r, key);
	if (s == 0 || fw_parse_u32(s, out) != 0 || *out < lo || *out > hi) {
		fw_send_error(r->seq, "badarg", key);
		return -1;
	}
	return 0;
}

/* chunk reads one chunk of a provisioning request (TLSCA, TLSLEAF, TLSKEY): off= total= and
 * the hex in field into buf (at most max bytes in all), in order (off is 0, starting over, or
 * *have with the same total). It answers ERROR badarg and returns -1 on a bad one, else sets
 * *off, *have and *len and returns the bytes taken. */
static long chunk(const struct fw_req *r, const char *field, uint8_t *buf, uint32_t max, uint32_t *off,
		  uint32_t *have, uint32_t *len)
{
	uint32_t total;
	const char *v = fw_req_get(r, field);
	long n;
	if (get_u32(r, "total", 1, max, &total) != 0 || get_u32(r, "off", 0, max, off) != 0)
		return -1;
	if (*off != 0 && (*off != *have || total != *len)) {
		fw_send_error(r->seq, "badarg", "off");
		return -1;
	}
	if (v == 0 || (n = fw_parse_hex(v, buf + *off, total - *off < TLS_CHUNK ? total - *off : TLS_CHUNK)) <= 0) {
		fw_send_error(r->seq, "badarg", field);
		return -1;
	}
	*len = total;
	*have = *off + (uint32_t)n;
	return n;
}

/* chunk_frame begins the answer to a provisioning chunk: typ re= off= len= have=. */
static void chunk_frame(const char *typ, uint32_t re, uint32_t off, long n, uint32_t have)
{
	fw_frame_begin(typ);
	fw_kv_u64("re", re);
	fw_kv_u64("off", off);
	fw_kv_u64("len", (uint64_t)n);
	fw_kv_u64("have", have);
}

/* fingerprint_is: whether the request's field key is the 32 hex digits of the first 16 bytes
 * of h. */
static int fingerprint_is(const struct fw_req *r, const char *key, const uint8_t *h)
{
	const char *v = fw_req_get(r, key);
	uint8_t b[16];
	return v != 0 && fw_parse_hex(v, b, sizeof b) == (long)sizeof b && memcmp(b, h, sizeof b) == 0;
}

/* pin_cert parses the len bytes of DER at der into c and hashes them into h (SHA-256), and adds
 * pinned= to the open frame and, when it parsed, key=<h's first 16 bytes>; whether it parsed. */
static int pin_cert(struct x509_cert *c, const uint8_t *der, uint32_t len, uint8_t h[32], const char *key)
{
	int pinned = x509_parse(c, der, len) == X509_OK;
	sha256(h, der, len);
	fw_kv_u64("pinned", (uint64_t)pinned);
	if (pinned)
		fw_kv_hex(key, h, 16);
	return pinned;
}

/* TLSCA off= total= ca=<hex>: the next chunk of the trust anchor (DER, total bytes); with the
 * last one the board parses it and answers pinned=1 ca=<first 16 bytes of its SHA-256>. */
static void do_tlsca(const struct fw_req *r)
{
	uint32_t off;
	long n = chunk(r, "ca", s_ca, TLS_CA_MAX, &off, &s_ca_have, &s_ca_len);
	if (n < 0)
		return;
	if (off == 0)
		s_ca_pinned = 0;
	chunk_frame("TLSCA", r->seq, off, n, s_ca_have);
	if (s_ca_have == s_ca_len) {
		struct x509_cert c;
		s_ca_pinned = pin_cert(&c, s_ca, s_ca_len, s_ca_hash, "ca");
	}
	fw_frame_end();
}

/* send_bytes sends the n bytes at out as TLSO frames (re, i, off, d) and TLSOUT with their
 * length and what the board waits for next (want=flight|echo|none). */
static void send_bytes(uint32_t re, const uint8_t *out, size_t n, const char *want)
{
	size_t off, l;
	for (off = 0; off < n; off += TLS_CHUNK) {
		l = n - off < TLS_CHUNK ? n - off : TLS_CHUNK;
		fw_frame_begin("TLSO");
		fw_kv_u64("re", re);
		fw_kv_u64("i", s_cell.i);
		fw_kv_u64("off", off);
		fw_kv_hex("d", out + off, l);
		fw_frame_end();
	}
	fw_frame_begin("TLSOUT");
	fw_kv_u64("re", re);
	fw_kv_u64("i", s_cell.i);
	fw_kv_u64("len", n);
	fw_kv_str("want", want);
	fw_frame_end();
}

/* send_out sends the client's output (send_bytes) and empties it. */
static void send_out(uint32_t re, const char *want)
{
	send_bytes(re, s_cl.out, s_cl.out_len, want);
	s_cl.out_len = 0;
}

struct seg_job {
	int start; /* 1: tls13c_start; 0: tls13c_input on s_in */
	int rc;
	uint64_t count;
};

/* seg_run is one compute segment: the ClientHello, or the server's bytes buffered on the board. */
static void seg_run(void *arg)
{
	struct seg_job *j = arg;
	uint64_t t0, t1;
	struct tls13c_config cfg = {
		.group = s_cell.group,
		.server_name = s_sni,
		.ca_der = s_ca,
		.ca_len = s_ca_len,
		.now = s_cell.now,
		.random = s_random,
		.kem_seed = s_seed,
		.ecdh_secret = s_ecdh,
	};
	plat_counter_align();
	t0 = plat_counter();
	if (j->start)
		j->rc = tls13c_start(&s_cl, &cfg);
	else
		j->rc = tls13c_input(&s_cl, s_in, s_in_have);
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
}

/* segment runs one compute segment on the painted stack and adds its count to the handshake's. */
static int segment(int start)
{
	struct seg_job j = {start, -1, 0};
	uint32_t stack = plat_stack_run(seg_run, &j);
	s_cell.count += j.count;
	s_cell.segments++;
	if (stack > s_cell.stack)
		s_cell.stack = stack;
	return j.rc;
}

/* begin_handshake starts handshake s_cell.i: ClientHello random, ML-KEM seed and ECDH secret
 * (the X25519 or P-256 private value) from the DRBG (untimed), tls13c_start timed, the
 * ClientHello out. A P-256 scalar outside [1, n-1] (about 2^-32 of draws) fails the start and
 * the cell answers ERROR setup, as any other failed start: the board does not draw again inside
 * the timed segment. */
static void begin_handshake(uint32_t re)
{
	s_cell.count = s_cell.stack = 0;
	s_cell.segments = 0;
	s_in_have = 0;
	fw_drbg_read(s_random, sizeof s_random);
	fw_drbg_read(s_seed, sizeof s_seed);
	fw_drbg_read(s_ecdh, sizeof s_ecdh);
	if (segment(1) != 0) {
		s_cell.stage = TS_IDLE;
		fw_send_error(re, "setup", "client");
		return;
	}
	s_cell.stage = TS_FLIGHT;
	send_out(re, "flight");
}

/* sig_of: the SignatureScheme a leaf key of algorithm a signs CertificateVerify with (an RSA
 * key: rsa_pss_rsae_sha256), or 0. */
static uint16_t sig_of(enum x509_alg a)
{
	switch (a) {
	case X509_ALG_MLDSA44:
		return 0x0904;
	case X509_ALG_MLDSA65:
		return 0x0905;
	case X509_ALG_MLDSA87:
		return 0x0906;
	case X509_ALG_ED25519:
		return 0x0807;
	case X509_ALG_P256:
		return 0x0403;
	case X509_ALG_RSA:
		return 0x0804;
	default:
		return 0;
	}
}

/* in_list: whether v is one of the n codepoints at l. */
static int in_list(uint32_t v, const uint16_t *l, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (l[i] == v)
			return 1;
	return 0;
}

/* The groups and schemes the client speaks, as HELLO's tls_groups= and tls_sigs= list them. */
static const uint16_t tls_groups[] = {0x0200, 0x0201, 0x0202, 0x001d, 0x0017, 0x11ec};
static const uint16_t tls_sigs[] = {0x0904, 0x0905, 0x0906, 0x0807, 0x0403, 0x0804};

#if FW_HAVE_TLS_SERVER
static void begin_server_handshake(uint32_t re);
#endif

/* next_handshake starts the handshake after s_cell.i in the cell's role, or sends TLSDONE
 * after the last. */
static void next_handshake(uint32_t re)
{
	if (++s_cell.i < s_cell.warmup + s_cell.n) {
#if FW_HAVE_TLS_SERVER
		if (s_cell.server) {
			begin_server_handshake(re);
			return;
		}
#endif
		begin_handshake(re);
		return;
	}
	s_cell.stage = TS_IDLE;
	fw_frame_begin("TLSDONE");
	fw_kv_u64("re", re);
	fw_kv_u64("n", s_cell.n);
	fw_kv_u64("ok", s_cell.ok);
	fw_kv_u64("fail", s_cell.fail);
	fw_frame_end();
}

/* tally counts handshake s_cell.i's outcome unless it was a warm-up one. */
static void tally(int ok)
{
	if (s_cell.i < s_cell.warmup)
		return;
	if (ok)
		s_cell.ok++;
	else
		s_cell.fail++;
}

/* kv_outcome adds a HANDSHAKE frame's ok=, and on a failure its reason= and the alert the board
 * sent, else the one it received (none: no alert=). */
static void kv_outcome(int ok, const char *reason, int sent, int received)
{
	fw_kv_u64("ok", (uint64_t)ok);
	if (!ok) {
		fw_kv_str("reason", reason);
		if (sent >= 0)
			fw_kv_u64("alert", (uint64_t)sent);
		else if (received >= 0)
			fw_kv_u64("alert", (uint64_t)received);
	}
}

/* report sends HANDSHAKE for handshake s_cell.i (warm-up ones are not reported) and starts the
 * next, or sends TLSDONE after the last; every frame answers request re (the TLS or TLSIN that
 * ended the handshake), as the runner matches frames to the request they answer. */
static void report(uint32_t re, int ok, const char *reason)
{
	uint64_t sum = 0;
	unsigned int p;
	if (s_cell.i >= s_cell.warmup) {
		fw_frame_begin("HANDSHAKE");
		fw_kv_u64("re", re);
		fw_kv_u64("i", s_cell.i - s_cell.warmup);
		fw_kv_u64("count", s_cell.count);
		for (p = 0; p < TLS13C_PHASES; p++)
			sum += s_cell.phase[p];
		fw_kv_u64("count_kex", s_cell.phase[TLS13C_PH_KEX]);
		fw_kv_u64("count_chain", s_cell.phase[TLS13C_PH_CHAIN]);
		fw_kv_u64("count_cv", s_cell.phase[TLS13C_PH_CV]);
		fw_kv_u64("count_ksrec", s_cell.phase[TLS13C_PH_KS_RECORD]);
		fw_kv_u64("count_rest", s_cell.count >= sum ? s_cell.count - sum : 0);
		fw_kv_u64("segments", s_cell.segments);
		fw_kv_u64("stack", s_cell.stack);
		fw_kv_u64("group", s_cell.group);
		fw_kv_u64("sig", sig_of(s_cl.leaf_alg));
		kv_outcome(ok, reason, s_cl.alert_sent, s_cl.alert_received);
		fw_frame_end();
	}
	tally(ok);
	next_handshake(re);
}

/* cell_algs reads the fields both roles' TLS requests begin with: io=serial, and a group and a
 * sig from the lists into *g and *s; ERROR badarg and -1 on a bad one. */
static int cell_algs(const struct fw_req *r, uint32_t *g, uint32_t *s)
{
	const char *io = fw_req_get(r, "io");
	if (io == 0 || !fw_streq(io, "serial")) {
		fw_send_error(r->seq, "badarg", "io");
		return -1;
	}
	if (get_u32(r, "group", 0, 0xffff, g) != 0 || get_u32(r, "sig", 0, 0xffff, s) != 0)
		return -1;
	if (!in_list(*g, tls_groups, sizeof tls_groups / sizeof tls_groups[0])) {
		fw_send_error(r->seq, "badarg", "group");
		return -1;
	}
	if (!in_list(*s, tls_sigs, sizeof tls_sigs / sizeof tls_sigs[0])) {
		fw_send_error(r->seq, "badarg", "sig");
		return -1;
	}
	return 0;
}

/* cell_counts reads both roles' n=, warmup= and echo= into s_cell; ERROR badarg and -1 on a bad
 * one. */
static int cell_counts(const struct fw_req *r)
{
	if (get_u32(r, "n", 1, TLS_MAX_N, &s_cell.n) != 0 || get_u32(r, "warmup", 0, TLS_MAX_WARMUP, &s_cell.warmup) != 0 ||
	    get_u32(r, "echo", 0, TLS_MAX_ECHO, &s_cell.echo) != 0)
		return -1;
	return 0;
}

/* tls_params reads TLS io=serial's fields into s_cell and s_sni; ERROR and -1 on a bad one. */
static int tls_params(const struct fw_req *r)
{
	const char *sni = fw_req_get(r, "sni");
	uint32_t g, s;
	uint64_t now;
	if (cell_algs(r, &g, &s) != 0)
		return -1;
	if (cell_counts(r) != 0)
		return -1;
	if (sni == 0 || *sni == 0 || strlen(sni) > (size_t)TLS_SNI_MAX) {
		fw_send_error(r->seq, "badarg", "sni");
		return -1;
	}
	if (parse_u64(fw_req_get(r, "now"), &now) != 0) {
		fw_send_error(r->seq, "badarg", "now");
		return -1;
	}
	if (!s_ca_pinned || !fingerprint_is(r, "ca", s_ca_hash)) {
		fw_send_error(r->seq, "badarg", "ca");
		return -1;
	}
	memcpy(s_sni, sni, strlen(sni) + 1);
	s_cell.group = (uint16_t)g;
	s_cell.sig = (uint16_t)s;
	s_cell.now = (int64_t)now;
	return 0;
}

#if FW_HAVE_TLS_SERVER

/* The board as the TLS server (FW_HAVE_TLS_SERVER; PROTOCOL.md "The board as the server"). */

/* wipe zeroes n bytes at p through a volatile pointer, so that the stores of key material that
 * is not read again are kept. */
static void wipe(void *p, size_t n)
{
	volatile uint8_t *v = p;
	while (n--)
		*v++ = 0;
}

/* TLSLEAF off= total= d=<hex>: the next chunk of the leaf certificate the board sends (DER);
 * with the last one the board parses it and answers pinned=1 leaf=<first 16 bytes of its
 * SHA-256> (or pinned=0). A new leaf drops the key loaded for the old one. */
static void do_tlsleaf(const struct fw_req *r)
{
	uint32_t off;
	long n = chunk(r, "d", s_leaf, TLS_LEAF_MAX, &off, &s_leaf_have, &s_leaf_len);
	if (n < 0)
		return;
	if (off == 0) {
		s_leaf_pinned = s_key_loaded = 0;
		tls13s_key_wipe(&s_key);
	}
	chunk_frame("TLSLEAF", r->seq, off, n, s_leaf_have);
	if (s_leaf_have == s_leaf_len)
		s_leaf_pinned = pin_cert(&s_leaf_cert, s_leaf, s_leaf_len, s_leaf_hash, "leaf");
	fw_frame_end();
}

/* key_load reads the whole key blob into s_key (untimed: ML-DSA's key expansion, the public
 * key derived) and checks it against the pinned leaf; the blob is zeroed either way. The
 * reason it is not loaded (parse, noleaf, mismatch), or 0. */
static const char *key_load(void)
{
	const char *why = 0;
	if (tls13s_key_set(&s_key, s_keyblob, s_key_len) != 0)
		why = "parse";
	else if (!s_leaf_pinned)
		why = "noleaf";
	else if (!tls13s_key_matches(&s_key, &s_leaf_cert))
		why = "mismatch";
	sha256(s_key_hash, s_keyblob, s_key_len);
	wipe(s_keyblob, sizeof s_keyblob);
	if (why != 0)
		tls13s_key_wipe(&s_key);
	s_key_loaded = why == 0;
	return why;
}

/* TLSKEY off= total= d=<hex>: the next chunk of the leaf's private key (tls13s_key_set's blob:
 * scheme, then the key); with the last one loaded=1 key=<first 16 bytes of the blob's SHA-256>
 * or loaded=0 msg=parse|noleaf|mismatch. The key held before is zeroed at off=0. */
static void do_tlskey(const struct fw_req *r)
{
	uint32_t off;
	long n;
	const char *why;
	if (fw_req_get(r, "off") != 0 && fw_streq(fw_req_get(r, "off"), "0")) {
		s_key_loaded = 0;
		tls13s_key_wipe(&s_key);
		wipe(s_keyblob, sizeof s_keyblob);
	}
	n = chunk(r, "d", s_keyblob, TLS_KEY_MAX, &off, &s_key_have, &s_key_len);
	if (n < 0)
		return;
	chunk_frame("TLSKEY", r->seq, off, n, s_key_have);
	if (s_key_have == s_key_len) {
		why = key_load();
		fw_kv_u64("loaded", (uint64_t)s_key_loaded);
		if (why != 0)
			fw_kv_str("msg", why);
		else
			fw_kv_hex("key", s_key_hash, 16);
	}
	fw_frame_end();
}

/* server_params reads TLS role=server's fields into s_cell; ERROR and -1 on a bad one. */
static int server_params(const struct fw_req *r)
{
	const char *sr = fw_req_get(r, "sigrnd");
	uint32_t g, s;
	if (cell_algs(r, &g, &s) != 0)
		return -1;
	if (!s_leaf_pinned || !fingerprint_is(r, "leaf", s_leaf_hash)) {
		fw_send_error(r->seq, "badarg", "leaf");
		return -1;
	}
	if (!s_key_loaded || !fingerprint_is(r, "key", s_key_hash) || s_key.scheme != s) {
		fw_send_error(r->seq, "badarg", "key");
		return -1;
	}
	if (cell_counts(r) != 0)
		return -1;
	if (sr == 0 || (!fw_streq(sr, "hedged") && !fw_streq(sr, "det"))) {
		fw_send_error(r->seq, "badarg", "sigrnd");
		return -1;
	}
	s_cell.sigdet = fw_streq(sr, "det");
	s_cell.group = (uint16_t)g;
	s_cell.sig = (uint16_t)s;
	return 0;
}

/* TLS io=serial role=server group= sig= leaf= key= n= warmup= echo= sigrnd=: a cell with the
 * board as the server; the answer echoes it, then the board waits for handshake 0's
 * ClientHello. */
static void do_tls_server(const struct fw_req *r)
{
	if (server_params(r) != 0)
		return;
	s_cell.server = 1;
	s_cell.i = s_cell.ok = s_cell.fail = 0;
	fw_frame_begin("TLS");
	fw_kv_u64("re", r->seq);
	fw_kv_str("io", "serial");
	fw_kv_str("role", "server");
	fw_kv_u64("group", s_cell.group);
	fw_kv_u64("sig", s_cell.sig);
	fw_kv_hex("leaf", s_leaf_hash, 16);
	fw_kv_hex("key", s_key_hash, 16);
	fw_kv_u64("n", s_cell.n);
	fw_kv_u64("warmup", s_cell.warmup);
	fw_kv_u64("echo", s_cell.echo);
	fw_kv_str("sigrnd", s_cell.sigdet ? "det" : "hedged");
	fw_frame_end();
	begin_server_handshake(r->seq);
}

/* send_sv sends the server's output (send_bytes) and empties it. */
static void send_sv(uint32_t re, const char *want)
{
	send_bytes(re, s_sv.out, s_sv.out_len, want);
	s_sv.out_len = 0;
}

/* begin_server_handshake starts handshake s_cell.i with the board as the server: the
 * ServerHello random, ML-KEM encapsulation's m, the ECDH secret and the signature's randomness
 * drawn from the DRBG (untimed; with sigrnd=det ML-DSA's rnd is all zero and ECDSA's nonce RFC
 * 6979's, while a PSS salt is always drawn), tls13s_start (untimed: it only takes the
 * configuration), then TLSOUT len=0 want=flight: the board waits for the ClientHello. */
static void begin_server_handshake(uint32_t re)
{
	struct tls13s_config cfg = {
		.group = s_cell.group,
		.key = &s_key,
		.leaf_der = s_leaf,
		.leaf_len = s_leaf_len,
		.random = s_random,
		.kem_rnd = s_kem_rnd,
		.ecdh_secret = s_ecdh,
		.sig_rnd = s_sig_rnd,
	};
	s_cell.count = s_cell.stack = 0;
	s_cell.segments = 0;
	s_in_have = 0;
	fw_drbg_read(s_random, sizeof s_random);
	fw_drbg_read(s_kem_rnd, sizeof s_kem_rnd);
	fw_drbg_read(s_ecdh, sizeof s_ecdh);
	memset(s_sig_rnd, 0, sizeof s_sig_rnd);
	if (!s_cell.sigdet || s_cell.sig == 0x0804)
		fw_drbg_read(s_sig_rnd, sizeof s_sig_rnd);
	else if (s_cell.sig == 0x0403)
		cfg.sig_rnd = 0;
	if (tls13s_start(&s_sv, &cfg) != 0) {
		s_cell.stage = TS_IDLE;
		fw_send_error(re, "setup", "server");
		return;
	}
	s_cell.stage = TS_FLIGHT;
	send_sv(re, "flight");
}

/* record_end is where the TLS record starting at off of the buffered bytes ends (a record cut
 * short ends with the buffer). */
static uint32_t record_end(uint32_t off)
{
	uint32_t n;
	if (s_in_have - off < 5)
		return s_in_have;
	n = off + 5 + ((uint32_t)s_in[off + 3] << 8 | s_in[off + 4]);
	return n < s_in_have ? n : s_in_have;
}

struct sv_job {
	int rc;
	uint32_t used; /* the buffered bytes the segment consumed */
	uint64_t count;
};

/* sv_run is one compute segment of the server: the buffered client records, one at a time, up
 * to the one that completes the handshake (the client's Finished); records after it (the echo's
 * application data, when they came in the same flight) are left for later, untimed. */
static void sv_run(void *arg)
{
	struct sv_job *j = arg;
	uint32_t off = 0, end;
	uint64_t t0, t1;
	plat_counter_align();
	t0 = plat_counter();
	j->rc = 0;
	while (off < s_in_have && j->rc == 0 && s_sv.state != TLS13S_CONNECTED) {
		end = record_end(off);
		j->rc = tls13s_input(&s_sv, s_in + off, end - off);
		off = end;
	}
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
	j->used = off;
}

/* report_server sends HANDSHAKE role=server for handshake s_cell.i (warm-up ones send none),
 * then starts the next handshake or ends the cell. */
static void report_server(uint32_t re, int ok, const char *reason)
{
	uint64_t sum = s_sv.phase[TLS13S_PH_KEX] + s_sv.phase[TLS13S_PH_CV] + s_sv.phase[TLS13S_PH_KS_RECORD];
	if (s_cell.i >= s_cell.warmup) {
		fw_frame_begin("HANDSHAKE");
		fw_kv_u64("re", re);
		fw_kv_u64("i", s_cell.i - s_cell.warmup);
		fw_kv_str("role", "server");
		fw_kv_u64("count", s_cell.count);
		fw_kv_u64("count_kex", s_sv.phase[TLS13S_PH_KEX]);
		fw_kv_u64("count_chain", 0);
		fw_kv_u64("count_cv", s_sv.phase[TLS13S_PH_CV]);
		fw_kv_u64("count_ksrec", s_sv.phase[TLS13S_PH_KS_RECORD]);
		fw_kv_u64("count_rest", s_cell.count >= sum ? s_cell.count - sum : 0);
		fw_kv_u64("segments", s_cell.segments);
		fw_kv_u64("stack", s_cell.stack);
		fw_kv_u64("group", s_cell.group);
		fw_kv_u64("sig", s_sv.scheme);
		fw_kv_u64("rounds", (uint64_t)s_sv.rounds);
		fw_kv_u64("hrr", (uint64_t)(s_sv.hrr != 0));
		kv_outcome(ok, reason, s_sv.alert_sent, s_sv.alert_received);
		fw_frame_end();
	}
	tally(ok);
	next_handshake(re);
}

/* server_echo answers once the handshake is complete (untimed): the client's line echoed when
 * it is all there (echo bytes ending in '\n'), want=echo while it is not, or the failure. The
 * board then closes the connection with close_notify (a client such as s_client takes a bare
 * end of the connection as an error). */
static void server_echo(uint32_t re)
{
	int ok;
	if (s_cell.echo == 0) {
		(void)tls13s_close(&s_sv);
		send_sv(re, "none");
		report_server(re, 1, 0);
		return;
	}
	if (s_sv.app_len < s_cell.echo && (s_sv.app_len == 0 || s_sv.app[s_sv.app_len - 1] != '\n')) {
		s_cell.stage = TS_ECHO;
		send_sv(re, "echo");
		return;
	}
	ok = s_sv.app_len == s_cell.echo && s_sv.app[s_cell.echo - 1] == '\n' &&
	     tls13s_write(&s_sv, s_sv.app, s_sv.app_len) == 0 && tls13s_close(&s_sv) == 0;
	s_sv.app_len = 0;
	send_sv(re, "none");
	report_server(re, ok, ok ? 0 : "echo");
}

/* server_input works on the client's bytes the board holds (TLSIN end=1): during the
 * handshake one compute segment (sv_run), then the server's answer (its flight, or
 * HelloRetryRequest: want=flight again) or, once the client's Finished is in, the echo; after
 * it the application data, untimed. */
static void server_input(uint32_t re)
{
	struct sv_job j = {-1, 0, 0};
	uint32_t stack;
	int rc = 0;
	if (s_cell.stage == TS_FLIGHT) {
		stack = plat_stack_run(sv_run, &j);
		s_cell.count += j.count;
		s_cell.segments++;
		if (stack > s_cell.stack)
			s_cell.stack = stack;
		rc = j.rc;
	}
	if (rc == 0 && j.used < s_in_have)
		rc = tls13s_input(&s_sv, s_in + j.used, s_in_have - j.used);
	s_in_have = 0;
	if (rc != 0) {
		send_sv(re, "none");
		report_server(re, 0, s_sv.alert_sent >= 0 ? "handshake" : "alert");
		return;
	}
	if (s_sv.state != TLS13S_CONNECTED) {
		send_sv(re, "flight");
		return;
	}
	server_echo(re);
}

#endif

/* TLS io=serial group= sig= sni= ca= n= warmup= echo= now=: a cell; the answer echoes it, then
 * the first handshake's ClientHello follows in TLSO frames. */
static void do_tls(const struct fw_req *r)
{
	const char *role = fw_req_get(r, "role");
	if (role != 0 && !fw_streq(role, "client")) {
#if FW_HAVE_TLS_SERVER
		if (fw_streq(role, "server")) {
			do_tls_server(r);
			return;
		}
#endif
		fw_send_error(r->seq, "badarg", "role");
		return;
	}
	if (tls_params(r) != 0)
		return;
	s_cell.server = 0;
	s_cell.i = s_cell.ok = s_cell.fail = 0;
	fw_frame_begin("TLS");
	fw_kv_u64("re", r->seq);
	fw_kv_str("io", "serial");
	fw_kv_u64("group", s_cell.group);
	fw_kv_u64("sig", s_cell.sig);
	fw_kv_str("sni", s_sni);
	fw_kv_u64("n", s_cell.n);
	fw_kv_u64("warmup", s_cell.warmup);
	fw_kv_u64("echo", s_cell.echo);
	fw_frame_end();
	begin_handshake(r->seq);
}

/* echo_line turns the n DRBG bytes at b into the echo: a line of hex digits that reads the same
 * backwards, then '\n'. An echo server returns it unchanged, and so does OpenSSL's s_server -rev,
 * which answers each line reversed (and nothing before a '\n'). */
static void echo_line(uint8_t *b, uint32_t n)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t j, m = n - 1; /* the characters before '\n' */
	for (j = 0; j < m; j++)
		b[j] = 2 * j < m ? (uint8_t)hex[b[j] & 15] : b[m - 1 - j];
	b[m] = '\n';
}

/* after_flight runs the buffered server bytes (one segment) and answers what follows: more
 * bytes wanted, the Finished (and the echo, untimed) out, or the handshake's failure. */
static void after_flight(uint32_t re)
{
	unsigned int p;
	int rc = segment(0);
	s_in_have = 0;
	if (rc != 0) {
		for (p = 0; p < TLS13C_PHASES; p++)
			s_cell.phase[p] = s_cl.phase[p];
		send_out(re, "none");
		report(re, 0, s_cl.alert_sent >= 0 ? "handshake" : "alert");
		return;
	}
	if (s_cl.state != TLS13C_CONNECTED) {
		send_out(re, "flight");
		return;
	}
	/* The handshake ended with the Finished in s_cl.out: its phases are the handshake's. */
	for (p = 0; p < TLS13C_PHASES; p++)
		s_cell.phase[p] = s_cl.phase[p];
	if (s_cell.echo == 0) {
		send_out(re, "none");
		report(re, 1, 0);
		return;
	}
	fw_drbg_read(s_echo, s_cell.echo);
	echo_line(s_echo, s_cell.echo);
	if (tls13c_write(&s_cl, s_echo, s_cell.echo) != 0) {
		send_out(re, "none");
		report(re, 0, "echo");
		return;
	}
	s_cell.stage = TS_ECHO;
	send_out(re, "echo");
}

/* after_echo checks the echo (untimed): the server's bytes are opened outside any segment. */
static void after_echo(uint32_t re)
{
	int rc = tls13c_input(&s_cl, s_in, s_in_have);
	s_in_have = 0;
	if (rc == 0 && s_cl.app_len < s_cell.echo) {
		send_out(re, "echo");
		return;
	}
	if (rc != 0 || s_cl.app_len != s_cell.echo || memcmp(s_cl.app, s_echo, s_cell.echo) != 0) {
		send_out(re, "none");
		report(re, 0, "echo");
		return;
	}
	s_cl.app_len = 0;
	send_out(re, "none");
	report(re, 1, 0);
}

/* TLSIN i= off= d=<hex> [end=1]: the next chunk of the server's bytes for handshake i, buffered;
 * with end=1 the board works on what it holds. */
static void do_tlsin(const struct fw_req *r)
{
	uint32_t i, off, end = 0;
	const char *v = fw_req_get(r, "d"), *e = fw_req_get(r, "end");
	long n;
	if (s_cell.stage == TS_IDLE) {
		fw_send_error(r->seq, "setup", "tls");
		return;
	}
	if (get_u32(r, "i", 0, TLS_MAX_N + TLS_MAX_WARMUP, &i) != 0 || get_u32(r, "off", 0, TLS_IN_MAX, &off) != 0)
		return;
	if (i != s_cell.i || off != s_in_have) {
		fw_send_error(r->seq, "badarg", i != s_cell.i ? "i" : "off");
		return;
	}
	if (e != 0 && (fw_parse_u32(e, &end) != 0 || end > 1)) {
		fw_send_error(r->seq, "badarg", "end");
		return;
	}
	if (v == 0 || (n = fw_parse_hex(v, s_in + off, TLS_IN_MAX - off < TLS_CHUNK ? TLS_IN_MAX - off : TLS_CHUNK)) <= 0) {
		fw_send_error(r->seq, "badarg", "d");
		return;
	}
	s_in_have = off + (uint32_t)n;
	fw_frame_begin("TLSIN");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("i", i);
	fw_kv_u64("off", off);
	fw_kv_u64("len", (uint64_t)n);
	fw_kv_u64("have", s_in_have);
	fw_frame_end();
	if (!end)
		return;
#if FW_HAVE_TLS_SERVER
	if (s_cell.server) {
		server_input(r->seq);
		return;
	}
#endif
	if (s_cell.stage == TS_FLIGHT)
		after_flight(r->seq);
	else
		after_echo(r->seq);
}

int fw_tls_dispatch(const struct fw_req *r)
{
	if (fw_streq(r->type, "TLSCA"))
		do_tlsca(r);
	else if (fw_streq(r->type, "TLS"))
		do_tls(r);
	else if (fw_streq(r->type, "TLSIN"))
		do_tlsin(r);
#if FW_HAVE_TLS_SERVER
	else if (fw_streq(r->type, "TLSLEAF"))
		do_tlsleaf(r);
	else if (fw_streq(r->type, "TLSKEY"))
		do_tlskey(r);
#endif
	else
		return 0;
	return 1;
}

#else

int fw_tls_dispatch(const struct fw_req *r)
{
	(void)r;
	return 0;
}

#endif
