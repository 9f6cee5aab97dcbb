/* HELLO, ALGS and SEED (PROTOCOL.md): what the board is, which algorithms it holds and
 * whose code they are, and the seed of its DRBG. */
#include "fw.h"

#include "../crypto/pqmem.h"
#include "algs.h"
#include "drbg.h"
#include "impl.h"
#include "proto.h"
#include "req.h"
#include "tlsreq.h"


/* FW_ALGS_CHARS bounds the algs= list of one ALG frame, so that the frame fits FW_MAX_LINE
 * with room to spare whatever names the table holds. A frame that also carries an
 * implementation (impl=, impl_ver=, impl_src=) has that much less room (algs_cap). */
#define FW_ALGS_CHARS 200
/* The rest of an ALG frame: "@<seq>:ALG:re=<seq> kind=sig impl= impl_commit= impl_src= algs=",
 * the CRC and the newline, with room to spare. */
#define FW_ALG_FRAME_FIXED 90

static const char *const kind_names[] = {"", "kem", "sig"};

/* algs_cap is how many characters of names an ALG frame carrying im (or none) may hold. */
static size_t algs_cap(const struct fw_impl *im)
{
	size_t left;
	if (im == 0)
		return FW_ALGS_CHARS;
	left = FW_MAX_LINE - FW_ALG_FRAME_FIXED - im->name_len - im->version_len - im->source_len;
	return left < FW_ALGS_CHARS ? left : FW_ALGS_CHARS;
}

static void send_alg(uint32_t re, unsigned int kind, const char *names, const struct fw_impl *im)
{
	fw_frame_begin("ALG");
	fw_kv_u64("re", re);
	fw_kv_str("kind", kind_names[kind]);
	if (im) {
		/* A value cannot hold ':' (PROTOCOL.md, Frames): the table's "commit:<hex>" is sent
		 * as impl_commit=<hex>, a version as impl_ver=. */
		static const char commit[] = "commit:";
		const size_t cl = sizeof commit - 1;
		fw_kv_strn("impl", im->name, im->name_len);
		if (im->version_len > cl && memcmp(im->version, commit, cl) == 0)
			fw_kv_strn("impl_commit", im->version + cl, im->version_len - cl);
		else
			fw_kv_strn("impl_ver", im->version, im->version_len);
		fw_kv_strn("impl_src", im->source, im->source_len);
	}
	fw_kv_str("algs", names);
	fw_frame_end();
}

/* do_algs answers ALGS: the algorithm table as ALG frames (one kind and one implementation
 * each, names comma-separated, at most algs_cap characters), then ALGS with the totals. An
 * algorithm's implementation comes from the implementation table (core/impl.h); one without
 * a line there is listed in a frame without impl=. */
void fw_do_algs(const struct fw_req *r)
{
	char buf[FW_ALGS_CHARS + 1];
	size_t n, l;
	unsigned int i, k, frames = 0;
	struct fw_impl cur = {0}, im = {0};
	int have_cur = 0, have_im = 0;

	for (k = FW_KEM; k <= FW_SIG; k++) {
		n = 0;
		for (i = 0; i <= fw_nalgs; i++) {
			int flush = i == fw_nalgs;
			if (!flush && fw_algs[i].kind != (enum fw_alg_kind)k)
				continue;
			l = 0;
			if (!flush) {
				l = strlen(fw_algs[i].name);
				have_im = fw_impl_find(fw_algs[i].name, &im) == 0;
			}
			if (n > 0 && (flush || n + 1 + l > algs_cap(have_cur ? &cur : 0) || have_im != have_cur ||
				      (have_im && !fw_impl_same(&im, &cur)))) {
				buf[n] = 0;
				send_alg(r->seq, k, buf, have_cur ? &cur : 0);
				frames++;
				n = 0;
			}
			if (flush || l > algs_cap(have_im ? &im : 0))
				continue;
			if (n == 0) {
				cur = im;
				have_cur = have_im;
			} else {
				buf[n++] = ',';
			}
			memcpy(buf + n, fw_algs[i].name, l);
			n += l;
		}
	}
	fw_frame_begin("ALGS");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("n", fw_nalgs);
	fw_kv_u64("frames", frames);
	fw_frame_end();
}

void fw_send_hello(uint32_t re)
{
	const uint8_t *id;
	size_t idlen = plat_build_id(&id);

	fw_frame_begin("HELLO");
	fw_kv_u64("re", re);
	fw_kv_u64("proto", FW_PROTO);
	fw_kv_str("fw", FW_NAME);
	fw_kv_str("ver", FW_VERSION);
	if (idlen > 0)
		fw_kv_hex("build_id", id, idlen);
	fw_kv_str("board", fw_board_info.board);
	fw_kv_str("chip", fw_board_info.chip);
	if (fw_board_info.clock_hz != 0)
		fw_kv_u64("clock_hz", fw_board_info.clock_hz);
	fw_kv_str("counter", fw_board_info.counter);
	fw_kv_str("unit", fw_board_info.unit);
	fw_kv_u64("resolution", fw_board_info.resolution);
	fw_kv_str("stack", "paint");
	fw_kv_str("rng", "shake256-drbg");
	fw_kv_u64("seeded", (uint64_t)fw_drbg_seeded());
	fw_kv_u64("nalgs", fw_nalgs);
	fw_kv_str("ops", FW_HAVE_SIG ? "keygen,encaps,decaps,sign,verify" : "keygen,encaps,decaps");
	fw_kv_u64("max_msg", FW_SIG_MAX_MSG);
	fw_kv_u64("max_line", FW_MAX_LINE);
#if FW_HAVE_TLS
	/* The project's C client (crypto/tls13), its records over this line (tlsreq.c). */
	fw_kv_str("tls_io", "serial");
	fw_kv_str("tls_groups", "512,513,514,29,23,4588");
	fw_kv_str("tls_sigs", "2308,2309,2310,2055,1027,2052");
	/* The roles it plays: the client, and the server (crypto/tls13/tls13s) on images built
	 * with it (FW_HAVE_TLS_SERVER). */
	fw_kv_str("tls_roles", FW_HAVE_TLS_SERVER ? "client,server" : "client");
#endif
	fw_frame_end();
}

void fw_do_seed(const struct fw_req *r)
{
	uint8_t seed[FW_DRBG_MAX_SEED];
	const char *s = fw_req_get(r, "seed");
	long n = s ? fw_parse_hex(s, seed, sizeof seed) : -1;
	if (n < 0) {
		fw_send_error(r->seq, "badarg", "seed");
		return;
	}
	fw_drbg_seed(seed, (size_t)n);
	fw_frame_begin("SEED");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("len", (uint64_t)n);
	fw_frame_end();
}
