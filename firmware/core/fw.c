/* The main loop and the dispatcher (firmware/PROTOCOL.md): RESEND, duplicate suppression,
 * ERROR and the poll a long request makes between iterations live here; each request
 * family has its own file (req.h lists them). */
#include "fw.h"

#include "proto.h"
#include "req.h"
#include "telreq.h"
#include "tlsreq.h"

/* Request bookkeeping for duplicate suppression: a request that arrives again
 * with the seq of the last executed one is answered by replaying its frames. */
static uint32_t last_req_seq, last_req_first_tx;
static int have_last_req;

/* The request being executed; 0 when idle. Used to answer RESEND and
 * duplicates while a long command polls the UART. */
static uint32_t cur_req_seq;

void fw_send_error(uint32_t re, const char *code, const char *msg)
{
	fw_frame_begin("ERROR");
	fw_kv_u64("re", re);
	fw_kv_str("code", code);
	if (msg)
		fw_kv_str("msg", msg);
	fw_frame_end();
}

static void do_resend(const struct fw_req *r)
{
	const char *from = fw_req_get(r, "from");
	uint32_t f;
	if (from == 0 || fw_parse_u32(from, &f) != 0) {
		fw_send_error(r->seq, "badarg", "from");
		return;
	}
	if (fw_resend(f) != 0)
		fw_send_error(r->seq, "gone", 0);
}

/* fw_busy_poll handles input that arrives while a command runs: RESEND is
 * served, a repeat of the running request is ignored (its frames are on the
 * way and the runner can ask for any it missed), one other request is kept
 * for later and any further one is refused with ERROR code=busy. */
void fw_busy_poll(void)
{
	struct fw_req r;
	int rc;
	while ((rc = fw_rx_poll(&r)) != 0) {
		if (rc == FW_RX_OVERFLOW)
			fw_send_error(r.seq, "overflow", "line");
		else if (rc < 0)
			fw_send_error(0, "badframe", 0);
		else if (fw_streq(r.type, "RESEND"))
			do_resend(&r);
		else if (r.seq != cur_req_seq && fw_rx_defer(&r) != 0)
			fw_send_error(r.seq, "busy", 0);
	}
}

/* ---- main loop ---- */

static void dispatch(const struct fw_req *r)
{
	if (fw_streq(r->type, "RESEND")) {
		do_resend(r);
		return;
	}
	if (fw_streq(r->type, "HELLO")) {
		/* HELLO starts a session: forget the last request. */
		have_last_req = 0;
		fw_send_hello(r->seq);
		return;
	}
	if (have_last_req && r->seq == last_req_seq) {
		if (fw_resend(last_req_first_tx) != 0)
			fw_send_error(r->seq, "gone", 0);
		return;
	}
	have_last_req = 1;
	last_req_seq = r->seq;
	last_req_first_tx = fw_next_seq();
	cur_req_seq = r->seq;
	if (fw_streq(r->type, "SEED"))
		fw_do_seed(r);
	else if (fw_streq(r->type, "BENCH"))
		fw_do_bench(r);
	else if (fw_streq(r->type, "LOOP"))
		fw_do_loop(r);
	else if (fw_streq(r->type, "SELFTEST"))
		fw_do_selftest(r);
	else if (fw_streq(r->type, "ALGS"))
		fw_do_algs(r);
	else if (fw_tel_dispatch(r))
		; /* TELEK, TELHS, TELSEAL, AEADBENCH (telreq.c) */
	else if (fw_tls_dispatch(r))
		; /* TLSCA, TLS io=serial, TLSIN (tlsreq.c) */
	else
		fw_send_error(r->seq, "unknown", r->type);
	cur_req_seq = 0;
}

void fw_main(void)
{
	static const char banner[] = FW_NAME " " FW_VERSION " ready\n";
	struct fw_req r;
	int rc;

	plat_init();
	/* Noise for the runner to skip, and an announcement it may miss. */
	plat_write(banner, sizeof banner - 1);
	fw_send_hello(0);
	for (;;) {
		rc = fw_rx_take_deferred(&r);
		if (rc == 0)
			rc = fw_rx_poll(&r);
		if (rc > 0)
			dispatch(&r);
		else if (rc == FW_RX_OVERFLOW)
			fw_send_error(r.seq, "overflow", "line");
		else if (rc < 0)
			fw_send_error(0, "badframe", 0);
		else
			plat_idle();
	}
}

