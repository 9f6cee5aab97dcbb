/* TELEK, TELHS, TELSK, TELRQ, TELOF, TELFS, TELSEAL and AEADBENCH: the board as the telemetry device (telreq.h,
 * firmware/PROTOCOL.md "Telemetry device", firmware/TELEMETRY.md). */
#include "telreq.h"

#include "fw.h"

#if FW_HAVE_TEL

#include "../crypto/ascon/ascon.h"
#include "../crypto/pqmem.h"
#include "../crypto/telemetry/tel.h"
#include "drbg.h"
#include "req.h"
#include "tally.h"

/* TEL_CHUNK bytes of binary per frame (hex doubles them): a TELF or TELCT frame stays well
 * inside FW_MAX_LINE. */
#define TEL_CHUNK 128
#define TEL_MAX_SIZES 32
#define TEL_MAX_N 100000u
#define TEL_MAX_WARMUP 1000u
#define TEL_MAX_AD 128

static struct tel_pin t_pin;
static uint32_t t_have;  /* bytes of the gateway key received, from 0, in order */
static int t_pinned;     /* the whole key arrived and passed the modulus check */
static uint8_t t_ek[TEL_EK];
static struct tel_session t_sess;
static uint8_t t_hs[TEL_HS], t_ss[32], t_m[32];
static char t_dev[TEL_MAX_DEV + 1];
static uint8_t t_psk[TEL_MAX_PSK];
/* One frame (sealed in place) and, for AEADBENCH, a plaintext to compare with. */
static uint8_t t_frame[TEL_MAX_PAYLOAD + TEL_OVERHEAD];
static uint8_t t_pt[TEL_MAX_PAYLOAD];
static uint8_t t_key[16], t_nonce[16], t_ad[TEL_MAX_AD];
/* Forward-secret mode: the pinned ML-DSA-44 gateway key (received in chunks, checked once),
 * the outstanding request's nonce, the offer (received in chunks) and the ephemeral key. */
static uint8_t t_sigpk[TEL_SIGPK], t_sigpkh[32];
static uint32_t t_sk_have;
static int t_sk_pinned;
static uint8_t t_rq_nonce[TEL_NONCE];
static int t_rq_open; /* a request is outstanding: TELFS may complete it once */
static size_t t_rq_devlen, t_rq_psklen;
/* The offer shares the frame buffer (the RP2040's SRAM has no room for both): TELSEAL and
 * AEADBENCH discard an offer received and not yet checked. */
#define t_offer t_frame
_Static_assert(TEL_OFFER <= TEL_MAX_PAYLOAD + TEL_OVERHEAD, "the offer fits the frame buffer");
static uint32_t t_of_have;
static struct tel_pin t_eph;
static uint8_t t_hs_fs[TEL_HS_FS];

/* parse_sizes reads sizes=<n,n,...>: 1..TEL_MAX_SIZES sizes, each at most max. */
static int parse_sizes(const char *s, uint32_t *sizes, unsigned int *k, uint32_t max)
{
	unsigned int n = 0;
	uint32_t v;
	if (s == 0 || *s == 0)
		return -1;
	for (;;) {
		v = 0;
		if (*s < '0' || *s > '9')
			return -1;
		while (*s >= '0' && *s <= '9') {
			v = v * 10 + (uint32_t)(*s - '0');
			if (v > max)
				return -1;
			s++;
		}
		if (n == TEL_MAX_SIZES)
			return -1;
		sizes[n++] = v;
		if (*s == 0)
			break;
		if (*s++ != ',')
			return -1;
	}
	*k = n;
	return 0;
}

/* send_chunks sends p (n bytes) as <type> frames of TEL_CHUNK bytes: re, [i,] off, <key>. */
static void send_chunks(const char *type, const char *key, uint32_t re, int with_i, uint32_t i,
			const uint8_t *p, size_t n)
{
	size_t off, l;
	for (off = 0; off < n || (n == 0 && off == 0); off += TEL_CHUNK) {
		l = n - off < TEL_CHUNK ? n - off : TEL_CHUNK;
		fw_frame_begin(type);
		fw_kv_u64("re", re);
		if (with_i)
			fw_kv_u64("i", i);
		fw_kv_u64("off", off);
		fw_kv_hex(key, p + off, l);
		fw_frame_end();
		if (n == 0)
			break;
	}
}

/* recv_chunk reads off= and the next piece of a value sent in chunks (TELEK, TELSK, TELOF:
 * field key, hex, into buf of size bytes, of which *have have arrived; off= is 0 to start
 * again or *have to go on) and begins the reply frame type with re=, off=, len= and have=,
 * for the caller to finish. On a bad field it answers ERROR and returns -1; else off. */
static long recv_chunk(const struct fw_req *r, const char *type, const char *key, uint8_t *buf,
		       uint32_t size, uint32_t *have)
{
	const char *off_s = fw_req_get(r, "off"), *v = fw_req_get(r, key);
	uint32_t off;
	long n;
	if (off_s == 0 || fw_parse_u32(off_s, &off) != 0 || (off != 0 && off != *have)) {
		fw_send_error(r->seq, "badarg", "off");
		return -1;
	}
	if (v == 0 || (n = fw_parse_hex(v, buf + off, off < size ? size - off : 0)) <= 0) {
		fw_send_error(r->seq, "badarg", key);
		return -1;
	}
	*have = off + (uint32_t)n;
	fw_frame_begin(type);
	fw_kv_u64("re", r->seq);
	fw_kv_u64("off", off);
	fw_kv_u64("len", (uint64_t)n);
	fw_kv_u64("have", *have);
	return (long)off;
}

/* dev_psk reads a session's dev= (checked, *dev and *dl) and psk= (into t_psk, *psklen; none
 * is empty). On a bad field it answers ERROR and returns -1. */
static int dev_psk(const struct fw_req *r, const char **dev, size_t *dl, size_t *psklen)
{
	const char *psk = fw_req_get(r, "psk");
	long n = 0;
	*dev = fw_req_get(r, "dev");
	*dl = *dev ? strlen(*dev) : 0;
	if (*dev == 0 || tel_valid_device(*dev, *dl) != 0) {
		fw_send_error(r->seq, "badarg", "dev");
		return -1;
	}
	if (psk != 0 && (n = fw_parse_hex(psk, t_psk, TEL_MAX_PSK)) < 0) {
		fw_send_error(r->seq, "badarg", "psk");
		return -1;
	}
	*psklen = (size_t)n;
	return 0;
}

/* TELEK off=<n> ek=<hex>: the next chunk of the gateway's encapsulation key. */
static void do_telek(const struct fw_req *r)
{
	long off = recv_chunk(r, "TELEK", "ek", t_ek, TEL_EK, &t_have);
	if (off < 0)
		return;
	if (off == 0)
		t_pinned = 0;
	if (t_have == TEL_EK) {
		/* Provisioning, untimed: the modulus check and H(ek). */
		t_pinned = tel_pin_key(&t_pin, t_ek) == 0;
		fw_kv_u64("pinned", (uint64_t)t_pinned);
		if (t_pinned)
			fw_kv_hex("ekh", t_pin.ekh, 8);
	}
	fw_frame_end();
}

struct hs_job {
	size_t devlen, psklen;
	int rc;
	uint64_t c_encaps, c_kdf;
};

/* hs_run is the timed handshake: ML-KEM-512 encapsulation, then H(ct) and the key
 * derivation, with the counter read between them. */
static void hs_run(void *arg)
{
	struct hs_job *j = arg;
	uint64_t t0, t1, t2;
	plat_counter_align();
	t0 = plat_counter();
	j->rc = tel_encaps(t_hs, t_ss, &t_pin, t_m);
	t1 = plat_counter();
	if (j->rc == 0)
		j->rc = tel_derive(&t_sess, &t_pin, t_hs, t_ss, t_dev, j->devlen, t_psk, j->psklen);
	t2 = plat_counter();
	plat_timed_end();
	j->c_encaps = t1 - t0;
	j->c_kdf = t2 - t1;
}

/* TELHS dev=<id> [psk=<hex>]: a new session (m from the DRBG), the handshake payload in
 * TELCT frames, then TELHS with the counts. */
static void do_telhs(const struct fw_req *r)
{
	const char *dev;
	struct hs_job j;
	uint32_t stack;

	if (dev_psk(r, &dev, &j.devlen, &j.psklen) != 0)
		return;
	if (!t_pinned) {
		fw_send_error(r->seq, "setup", "ek");
		return;
	}
	memcpy(t_dev, dev, j.devlen + 1);
	j.rc = -1;
	j.c_encaps = j.c_kdf = 0;
	/* Any earlier session ends here: its counter is never used again. */
	t_sess.open = 0;
	fw_drbg_read(t_m, sizeof t_m);
	stack = plat_stack_run(hs_run, &j);
	memset(t_ss, 0, sizeof t_ss);
	memset(t_m, 0, sizeof t_m);
	if (j.rc != 0) {
		t_sess.open = 0;
		fw_send_error(r->seq, "setup", "handshake");
		return;
	}
	send_chunks("TELCT", "hs", r->seq, 0, 0, t_hs, TEL_HS);
	fw_frame_begin("TELHS");
	fw_kv_u64("re", r->seq);
	fw_kv_hex("sid", t_sess.sid, TEL_SID);
	fw_kv_u64("len", TEL_HS);
	fw_kv_u64("count", j.c_encaps + j.c_kdf);
	fw_kv_u64("count_encaps", j.c_encaps);
	fw_kv_u64("count_kdf", j.c_kdf);
	fw_kv_u64("stack", stack);
	fw_kv_u64("ok", 1);
	fw_frame_end();
}

/* TELSK off=<n> pk=<hex>: the next chunk of the pinned ML-DSA-44 gateway public key. When the
 * 1,312 bytes are in, the key is pinned once: its Ascon-Hash256 (pkh, first 8 bytes) is what
 * the runner compares with the gateway's. */
static void do_telsk(const struct fw_req *r)
{
	long off = recv_chunk(r, "TELSK", "pk", t_sigpk, TEL_SIGPK, &t_sk_have);
	if (off < 0)
		return;
	if (off == 0)
		t_sk_pinned = 0;
	if (t_sk_have == TEL_SIGPK) {
		ascon_hash256(t_sigpkh, t_sigpk, TEL_SIGPK);
		t_sk_pinned = 1;
		fw_kv_u64("pinned", 1);
		fw_kv_hex("pkh", t_sigpkh, 8);
	}
	fw_frame_end();
}

/* TELRQ dev=<id> [psk=<hex>]: a forward-secret key request, its nonce from the DRBG. Any
 * earlier request and session end here. */
static void do_telrq(const struct fw_req *r)
{
	const char *dev;
	uint8_t rq[TEL_RQ];
	size_t dl, psklen;

	if (dev_psk(r, &dev, &dl, &psklen) != 0)
		return;
	if (!t_sk_pinned) {
		fw_send_error(r->seq, "setup", "pk");
		return;
	}
	memcpy(t_dev, dev, dl + 1);
	t_rq_devlen = dl;
	t_rq_psklen = psklen;
	t_sess.open = 0;
	fw_drbg_read(t_rq_nonce, sizeof t_rq_nonce);
	t_rq_open = 1;
	t_of_have = 0;
	tel_fs_request(rq, t_rq_nonce);
	fw_frame_begin("TELRQ");
	fw_kv_u64("re", r->seq);
	fw_kv_hex("rq", rq, TEL_RQ);
	fw_frame_end();
}

/* TELOF off=<n> of=<hex>: the next chunk of the gateway's offer (3,245 bytes). */
static void do_telof(const struct fw_req *r)
{
	if (recv_chunk(r, "TELOF", "of", t_offer, TEL_OFFER, &t_of_have) >= 0)
		fw_frame_end();
}

/* parse_unix reads a decimal number below 2^63 (Unix seconds); -1 on error. */
static int parse_unix(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == 0)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (0x7fffffffffffffffull - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

struct fs_job {
	uint64_t now, expiry;
	int rc;      /* enum tel_offer_err, or 1 when the encapsulation or derivation failed */
	int stage;   /* 0 verify, 1 accept, 2 handshake */
	uint64_t c_verify, c_accept, c_encaps, c_kdf;
};

/* fs_run is the timed forward-secret handshake: ML-DSA-44 verification of the offer, the nonce,
 * expiry and modulus checks, ML-KEM-512 encapsulation to ek_e, then H(ct) and the key
 * derivation, with the counter read between them. */
static void fs_run(void *arg)
{
	struct fs_job *j = arg;
	uint64_t t0, t1, t2, t3, t4;
	plat_counter_align();
	t0 = plat_counter();
	j->rc = tel_fs_verify(t_offer, t_of_have, t_sigpk, t_dev, t_rq_devlen);
	t1 = plat_counter();
	t2 = t3 = t4 = t1;
	if (j->rc == TEL_OFFER_OK) {
		j->stage = 1;
		j->rc = tel_fs_accept(&t_eph, &j->expiry, t_offer, t_rq_nonce, j->now);
		t2 = plat_counter();
		t3 = t4 = t2;
		if (j->rc == TEL_OFFER_OK) {
			j->stage = 2;
			if (tel_fs_encaps(t_hs_fs, t_ss, &t_eph, t_rq_nonce, t_m) != 0)
				j->rc = 1;
			t3 = plat_counter();
			if (j->rc == 0 && tel_derive_fs(&t_sess, &t_eph, t_hs_fs, t_ss, j->expiry, t_dev,
							 t_rq_devlen, t_psk, t_rq_psklen) != 0)
				j->rc = 1;
			t4 = plat_counter();
		}
	}
	plat_timed_end();
	j->c_verify = t1 - t0;
	j->c_accept = t2 - t1;
	j->c_encaps = t3 - t2;
	j->c_kdf = t4 - t3;
}

/* TELFS now=<Unix seconds>: checks the offer received by TELOF against the pinned key, the
 * outstanding request's nonce and now, encapsulates to its key (m from the DRBG) and opens the
 * session: the handshake payload in TELCT frames, then TELFS with the counts. A refused offer
 * is TELFS ok=0 reason=malformed|signature|nonce|expired; the request stays outstanding (a
 * broker's forgery does not cancel it) until a handshake completes it, once. */
static void do_telfs(const struct fw_req *r)
{
	const char *now_s = fw_req_get(r, "now");
	struct fs_job j;
	uint32_t stack;

	if (now_s == 0 || parse_unix(now_s, &j.now) != 0) {
		fw_send_error(r->seq, "badarg", "now");
		return;
	}
	if (!t_sk_pinned) {
		fw_send_error(r->seq, "setup", "pk");
		return;
	}
	if (!t_rq_open) {
		fw_send_error(r->seq, "setup", "request");
		return;
	}
	j.rc = -1;
	j.stage = 0;
	j.expiry = 0;
	j.c_verify = j.c_accept = j.c_encaps = j.c_kdf = 0;
	t_sess.open = 0;
	fw_drbg_read(t_m, sizeof t_m);
	stack = plat_stack_run(fs_run, &j);
	memset(t_ss, 0, sizeof t_ss);
	memset(t_m, 0, sizeof t_m);
	t_of_have = 0;
	if (j.rc > 0) {
		t_sess.open = 0;
		fw_send_error(r->seq, "setup", "handshake");
		return;
	}
	if (j.rc == TEL_OFFER_OK) {
		t_rq_open = 0;
		send_chunks("TELCT", "hs", r->seq, 0, 0, t_hs_fs, TEL_HS_FS);
	}
	fw_frame_begin("TELFS");
	fw_kv_u64("re", r->seq);
	if (j.rc == TEL_OFFER_OK) {
		fw_kv_hex("sid", t_sess.sid, TEL_SID);
		fw_kv_u64("len", TEL_HS_FS);
		fw_kv_u64("expiry", j.expiry);
	}
	fw_kv_u64("count", j.c_verify + j.c_accept + j.c_encaps + j.c_kdf);
	fw_kv_u64("count_verify", j.c_verify);
	fw_kv_u64("count_accept", j.c_accept);
	fw_kv_u64("count_encaps", j.c_encaps);
	fw_kv_u64("count_kdf", j.c_kdf);
	fw_kv_u64("stack", stack);
	fw_kv_u64("ok", j.rc == TEL_OFFER_OK);
	if (j.rc != TEL_OFFER_OK)
		fw_kv_str("reason", tel_offer_reason(j.rc));
	fw_frame_end();
}

struct seal_job {
	size_t plen;
	int rc;
	uint64_t ctr, count;
};

static void seal_run(void *arg)
{
	struct seal_job *j = arg;
	uint64_t t0, t1;
	plat_counter_align();
	t0 = plat_counter();
	j->rc = tel_seal(&t_sess, t_frame, t_frame + 8, j->plen, &j->ctr);
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
}

/* TELSEAL n=<frames> sizes=<list>: frame i seals a DRBG payload of sizes[i % k] bytes
 * under the session's next counter; TELF frames carry it, TELSEALED its count. */
static void do_telseal(const struct fw_req *r)
{
	t_of_have = 0; /* the frame buffer holds the offer until TELFS */
	const char *n_s = fw_req_get(r, "n");
	uint32_t sizes[TEL_MAX_SIZES], n, i, stack, nok = 0;
	unsigned int k;
	uint8_t pth[32];
	struct seal_job j;

	if (n_s == 0 || fw_parse_u32(n_s, &n) != 0 || n == 0 || n > TEL_MAX_N) {
		fw_send_error(r->seq, "badarg", "n");
		return;
	}
	if (parse_sizes(fw_req_get(r, "sizes"), sizes, &k, TEL_MAX_PAYLOAD) != 0) {
		fw_send_error(r->seq, "badarg", "sizes");
		return;
	}
	if (!t_sess.open) {
		fw_send_error(r->seq, "setup", "session");
		return;
	}
	fw_frame_begin("TELSEAL");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("n", n);
	fw_kv_u64("sizes", k);
	fw_kv_hex("sid", t_sess.sid, TEL_SID);
	fw_frame_end();
	for (i = 0; i < n; i++) {
		j.plen = sizes[i % k];
		j.rc = -1;
		j.ctr = j.count = 0;
		/* The payload, drawn and hashed before the counter starts. */
		fw_drbg_read(t_frame + 8, j.plen);
		ascon_hash256(pth, t_frame + 8, j.plen);
		stack = plat_stack_run(seal_run, &j);
		if (j.rc == 0)
			send_chunks("TELF", "d", r->seq, 1, i, t_frame, j.plen + TEL_OVERHEAD);
		fw_frame_begin("TELSEALED");
		fw_kv_u64("re", r->seq);
		fw_kv_u64("i", i);
		fw_kv_u64("ctr", j.ctr);
		fw_kv_u64("size", j.plen);
		fw_kv_u64("len", j.rc == 0 ? j.plen + TEL_OVERHEAD : 0);
		fw_kv_hex("pth", pth, 32);
		fw_kv_u64("count", j.count);
		fw_kv_u64("stack", stack);
		fw_kv_u64("ok", j.rc == 0);
		if (j.rc != 0)
			fw_kv_str("reason", "session");
		fw_frame_end();
		nok += j.rc == 0;
		fw_busy_poll();
	}
	fw_frame_begin("TELDONE");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("n", n);
	fw_kv_u64("ok", nok);
	fw_kv_u64("fail", n - nok);
	fw_kv_u64("next", t_sess.next);
	fw_frame_end();
}

/* ---- AEADBENCH ---- */

static const struct {
	const char *name;
	ascon_mode mode;
} aeads[] = {
	{.name = "Ascon-AEAD128", .mode = ASCON_AEAD128},
	{.name = "Ascon-128a-v1.2", .mode = ASCON_128A_V12},
	{.name = "Ascon-128-v1.2", .mode = ASCON_128_V12},
};

struct aead_job {
	ascon_mode mode;
	int open;
	size_t plen, adlen;
	int rc;
	uint64_t count;
};

/* aead_run: one seal (t_pt -> C || tag in t_frame) or one open (C || tag in t_frame, in
 * place), between two counter reads. */
static void aead_run(void *arg)
{
	struct aead_job *j = arg;
	uint64_t t0, t1;
	j->rc = 0;
	plat_counter_align();
	t0 = plat_counter();
	if (j->open)
		j->rc = ascon_aead_decrypt(j->mode, t_frame, t_frame, j->plen, t_frame + j->plen,
					   ASCON_TAGBYTES, t_ad, j->adlen, t_nonce, t_key);
	else
		ascon_aead_encrypt(j->mode, t_frame, t_frame + j->plen, t_pt, j->plen, t_ad,
				   j->adlen, t_nonce, t_key);
	t1 = plat_counter();
	plat_timed_end();
	j->count = t1 - t0;
}

/* aead_one draws a key, nonce, associated data and plaintext, measures one operation and
 * checks it: a seal must open to its plaintext, an open must return it. */
static const char *aead_one(struct aead_job *j, uint32_t *stack)
{
	fw_drbg_read(t_key, sizeof t_key);
	fw_drbg_read(t_nonce, sizeof t_nonce);
	fw_drbg_read(t_ad, j->adlen);
	fw_drbg_read(t_pt, j->plen);
	if (j->open)
		ascon_aead_encrypt(j->mode, t_frame, t_frame + j->plen, t_pt, j->plen, t_ad, j->adlen,
				   t_nonce, t_key);
	*stack = plat_stack_run(aead_run, j);
	if (j->rc != 0)
		return "open";
	if (!j->open && ascon_aead_decrypt(j->mode, t_frame, t_frame, j->plen, t_frame + j->plen,
					   ASCON_TAGBYTES, t_ad, j->adlen, t_nonce, t_key) != 0)
		return "check-open";
	if (memcmp(t_frame, t_pt, j->plen) != 0)
		return "mismatch";
	return 0;
}

/* aead_bench is one AEADBENCH's job and the sizes its samples cycle through. */
struct aead_bench {
	struct aead_job j;
	uint32_t sizes[TEL_MAX_SIZES];
	unsigned int k;
};

static void aead_sample(void *ctx, uint32_t i, struct fw_sample *s)
{
	struct aead_bench *b = ctx;
	/* Warm-up iterations cycle through the sizes too; sample i is of sizes[i % k]. */
	b->j.plen = b->sizes[i % b->k];
	b->j.count = 0;
	s->why = aead_one(&b->j, &s->stack);
	s->count = b->j.count;
	s->extra_key = "size";
	s->extra = b->j.plen;
}

/* aead_args reads an AEADBENCH's fields into *b, *n and *warmup and returns the AEAD's index
 * in aeads; on a bad field it answers ERROR and returns -1. */
static int aead_args(const struct fw_req *r, struct aead_bench *b, uint32_t *n, uint32_t *warmup)
{
	const char *a_s = fw_req_get(r, "aead"), *op = fw_req_get(r, "op");
	const char *n_s = fw_req_get(r, "n"), *w_s = fw_req_get(r, "warmup"), *ad_s = fw_req_get(r, "adlen");
	uint32_t adlen = 0;
	unsigned int a;

	for (a = 0; a < sizeof aeads / sizeof aeads[0]; a++)
		if (a_s != 0 && fw_streq(a_s, aeads[a].name))
			break;
	if (a == sizeof aeads / sizeof aeads[0]) {
		fw_send_error(r->seq, "unsupported", "aead");
		return -1;
	}
	if (op == 0 || !(fw_streq(op, "seal") || fw_streq(op, "open"))) {
		fw_send_error(r->seq, "unsupported", "op");
		return -1;
	}
	*warmup = 0;
	if (n_s == 0 || fw_parse_u32(n_s, n) != 0 || *n == 0 || *n > TEL_MAX_N) {
		fw_send_error(r->seq, "badarg", "n");
		return -1;
	}
	if (w_s != 0 && (fw_parse_u32(w_s, warmup) != 0 || *warmup > TEL_MAX_WARMUP)) {
		fw_send_error(r->seq, "badarg", "warmup");
		return -1;
	}
	if (ad_s != 0 && (fw_parse_u32(ad_s, &adlen) != 0 || adlen > TEL_MAX_AD)) {
		fw_send_error(r->seq, "badarg", "adlen");
		return -1;
	}
	if (parse_sizes(fw_req_get(r, "sizes"), b->sizes, &b->k, TEL_MAX_PAYLOAD) != 0) {
		fw_send_error(r->seq, "badarg", "sizes");
		return -1;
	}
	b->j.mode = aeads[a].mode;
	b->j.open = fw_streq(op, "open");
	b->j.adlen = adlen;
	return (int)a;
}

/* AEADBENCH aead= op=seal|open sizes=<list> adlen= n= warmup=: sample i is of sizes[i % k]
 * bytes; SAMPLE and SUMMARY as BENCH (tally.h), SAMPLE also size=. */
static void do_aeadbench(const struct fw_req *r)
{
	struct aead_bench b;
	uint32_t n, warmup;
	int a;

	t_of_have = 0; /* the frame buffer holds the offer until TELFS */
	a = aead_args(r, &b, &n, &warmup);
	if (a < 0)
		return;
	fw_frame_begin("AEADBENCH");
	fw_kv_u64("re", r->seq);
	fw_kv_str("aead", aeads[a].name);
	fw_kv_str("op", b.j.open ? "open" : "seal");
	fw_kv_u64("n", n);
	fw_kv_u64("warmup", warmup);
	fw_kv_u64("adlen", b.j.adlen);
	fw_kv_u64("sizes", b.k);
	fw_frame_end();
	fw_tally(r->seq, n, warmup, aead_sample, &b);
}

int fw_tel_dispatch(const struct fw_req *r)
{
	if (fw_streq(r->type, "TELEK"))
		do_telek(r);
	else if (fw_streq(r->type, "TELHS"))
		do_telhs(r);
	else if (fw_streq(r->type, "TELSK"))
		do_telsk(r);
	else if (fw_streq(r->type, "TELRQ"))
		do_telrq(r);
	else if (fw_streq(r->type, "TELOF"))
		do_telof(r);
	else if (fw_streq(r->type, "TELFS"))
		do_telfs(r);
	else if (fw_streq(r->type, "TELSEAL"))
		do_telseal(r);
	else if (fw_streq(r->type, "AEADBENCH"))
		do_aeadbench(r);
	else
		return 0;
	return 1;
}

#else

int fw_tel_dispatch(const struct fw_req *r)
{
	(void)r;
	return 0;
}

#endif
