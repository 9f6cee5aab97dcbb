/* tlsreplay: a board image (not the firmware) that runs the C TLS client on the recorded exchange
 * of testdata/tls13c (the Go engine's flight for ML-KEM-512 with an ML-DSA-44 chain, answering
 * the ClientHello of a fixed random and ML-KEM seed), twice, and prints per run the counts of
 * tls13c_start (ML-KEM-512 key generation and the ClientHello) and of tls13c_input on the whole
 * flight (decapsulation, key schedule, record decryption, the leaf's and CertificateVerify's
 * ML-DSA-44 verification, both Finished), the painted stack high-water mark, the final state and
 * the client's phase counts over both calls (tls13c.h: key exchange, chain, CertificateVerify, key
 * schedule and records), the client's Finished record, for tlsreplay_test.go to compare with the host build's; then the
 * count of sealing one 2^14-byte record with AES-128-GCM (a 5-byte AAD, as a record header). */
#include "benchimg.h"
#include "../crypto/pqmem.h"
#include "../crypto/tls13/tls13c.h"

extern const uint8_t tls_flight[], tls_flight_end[], tls_ca[], tls_ca_end[], tls_hello[], tls_hello_end[];

static struct tls13c client;
static uint8_t random_bytes[32], kem_seed[64];
static uint64_t t_start, t_input, t_aes;
static uint8_t record[TLS13C_PLAINTEXT_MAX + AESGCM_TAGBYTES];
static int hello_ok, rc;

static void run(void *arg)
{
	struct tls13c_config cfg = {
		.group = 0x0200,
		.server_name = "board.pqrepro.test",
		.ca_der = tls_ca,
		.ca_len = (size_t)(tls_ca_end - tls_ca),
		.now = 1796194800,
		.random = random_bytes,
		.kem_seed = kem_seed,
	};
	uint64_t t0, t1, t2, t3;
	(void)arg;
	plat_counter_align();
	t0 = plat_counter();
	rc = tls13c_start(&client, &cfg);
	t1 = plat_counter();
	hello_ok = rc == 0 && client.out_len == (size_t)(tls_hello_end - tls_hello) &&
		   memcmp(client.out, tls_hello, client.out_len) == 0;
	client.out_len = 0;
	t2 = plat_counter();
	rc |= tls13c_input(&client, tls_flight, (size_t)(tls_flight_end - tls_flight));
	t3 = plat_counter();
	plat_timed_end();
	t_start = t1 - t0;
	t_input = t3 - t2;
}

/* aes_record seals one full record (2^14 bytes of zeros) under a fixed key: the record layer's
 * cost per 16 KiB apart from the handshake. */
static void aes_record(void *arg)
{
	static aes128gcm_ctx ctx;
	static const uint8_t key[16] = {1}, iv[12] = {2}, header[5] = {0};
	(void)arg;
	memset(record, 0, sizeof record);
	aes128gcm_init(&ctx, key);
	BENCH_COUNT(t_aes, aes128gcm_seal(&ctx, record, iv, header, sizeof header, record, TLS13C_PLAINTEXT_MAX));
}

void fw_main(void)
{
	int i;
	plat_init();
	memset(random_bytes, 0x5a, sizeof random_bytes);
	memset(kem_seed, 0xa5, sizeof kem_seed);
	for (i = 0; i < 2; i++) {
		uint32_t stack = plat_stack_run(run, NULL);
		put("tlsreplay");
		put_board();
		put_num(" start=", t_start);
		put_num(" input=", t_input);
		put_num(" stack=", stack);
		put_num(" kex=", client.phase[TLS13C_PH_KEX]);
		put_num(" chain=", client.phase[TLS13C_PH_CHAIN]);
		put_num(" cv=", client.phase[TLS13C_PH_CV]);
		put_num(" ksrec=", client.phase[TLS13C_PH_KS_RECORD]);
		put_num(" state=", (uint64_t)client.state);
		put(rc == 0 && hello_ok ? " ok=1" : " ok=0");
		put(" out=");
		put_hex(client.out, client.out_len);
		put("\n");
	}
	for (i = 0; i < 2; i++) {
		uint32_t stack = plat_stack_run(aes_record, NULL);
		put("aesgcm board=");
		put(fw_board_info.board);
		put_num(" seal16k=", t_aes);
		put_num(" stack=", stack);
		put(" tag=");
		put_hex(record + TLS13C_PLAINTEXT_MAX, AESGCM_TAGBYTES);
		put("\n");
	}
	bench_done();
}
