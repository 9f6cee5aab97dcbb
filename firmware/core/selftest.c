/* SELFTEST (PROTOCOL.md): the known-answer tests of vectors.h, one RESULT per group and a
 * SELFTEST with the totals. */
#include "fw.h"

#include "../crypto/ascon/ascon.h"
#include "../crypto/keccak/keccak.h"
#include "../crypto/pqmem.h"
#include "../crypto/sha2/sha2.h"
#include "algs.h"
#include "proto.h"
#include "req.h"
#include "telreq.h"
#include "vectors.h"


#ifdef FW_ALGSET_MLKEM512
/* On a 16 KiB board the self-test borrows BENCH's key buffers (the two never run at
 * once: one request runs at a time). */
#define st_a fw_bench_dk
#define st_b fw_bench_ek
static uint8_t st_k[64], st_md[256];
#else
static uint8_t st_a[FW_KEM_MAX_DK], st_b[FW_KEM_MAX_CT], st_k[64], st_md[256];
#endif
static uint32_t st_pass, st_fail, st_groups;

/* st_full: SELFTEST full=1, which also runs the slow SLH-DSA groups (the "s" sets' keyGen,
 * billions of instructions each in an emulator, and the "f" sets' sigGen). Without it those
 * groups are reported with skipped=<vectors> and nothing run. */
static int st_full;

static void st_skipped(uint32_t re, const char *alg, const char *fn, uint32_t n)
{
	fw_frame_begin("RESULT");
	fw_kv_u64("re", re);
	fw_kv_str("alg", alg);
	fw_kv_str("fn", fn);
	fw_kv_u64("pass", 0);
	fw_kv_u64("fail", 0);
	fw_kv_u64("skipped", n);
	fw_frame_end();
	st_groups++;
}

static int slh_small_set(const char *alg)
{
	size_t l = strlen(alg);
	return l > 0 && alg[l - 1] == 's';
}

static void st_group(uint32_t re, const char *alg, const char *fn, uint32_t pass, uint32_t fail,
		     uint32_t first_fail)
{
	fw_frame_begin("RESULT");
	fw_kv_u64("re", re);
	fw_kv_str("alg", alg);
	fw_kv_str("fn", fn);
	fw_kv_u64("pass", pass);
	fw_kv_u64("fail", fail);
	if (fail > 0)
		fw_kv_u64("first_fail", first_fail);
	fw_frame_end();
	st_pass += pass;
	st_fail += fail;
	st_groups++;
}

#define ST_COUNT(ok, tc)                 \
	do {                             \
		if (ok)                  \
			pass++;          \
		else if (fail++ == 0)    \
			first = (tc);    \
	} while (0)

static void selftest_kem(uint32_t re, const struct fw_kat_kem *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_kem_ops *kem;
	uint32_t i, pass, fail, first;

	if (alg == 0) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	kem = alg->kem;

	pass = fail = first = 0;
	for (i = 0; i < v->n_keygen; i++) {
		const struct fw_kat_keygen *t = &v->keygen[i];
		uint8_t coins[64];
		memcpy(coins, t->d, 32);
		memcpy(coins + 32, t->z, 32);
		ST_COUNT(kem->keygen(st_b, st_a, coins) == 0 && memcmp(st_b, t->ek, kem->ek_len) == 0 &&
				 memcmp(st_a, t->dk, kem->dk_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "keyGen", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_encap; i++) {
		const struct fw_kat_encap *t = &v->encap[i];
		ST_COUNT(kem->encaps_internal(st_b, st_k, t->ek, t->m) == 0 &&
				 memcmp(st_b, t->c, kem->ct_len) == 0 && memcmp(st_k, t->k, kem->ss_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "encapsulation", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_decap; i++) {
		const struct fw_kat_decap *t = &v->decap[i];
		ST_COUNT(kem->decaps_internal(st_k, t->c, t->dk) == 0 &&
				 memcmp(st_k, t->k, kem->ss_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "decapsulation", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_ekcheck; i++) {
		const struct fw_kat_keycheck *t = &v->ekcheck[i];
		ST_COUNT((kem->check_ek(t->key) == 0) == (t->pass != 0), t->tc);
	}
	st_group(re, v->alg, "encapsulationKeyCheck", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_dkcheck; i++) {
		const struct fw_kat_keycheck *t = &v->dkcheck[i];
		ST_COUNT((kem->check_dk(t->key) == 0) == (t->pass != 0), t->tc);
	}
	st_group(re, v->alg, "decapsulationKeyCheck", pass, fail, first);
}

static void selftest_sig(uint32_t re, const struct fw_kat_sig *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_sig_ops *sig;
	uint32_t i, pass, fail, first;
	unsigned int rounds;

	if (alg == 0 || alg->kind != FW_SIG) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	sig = alg->sig;

	if (v->internal && !st_full && slh_small_set(v->alg)) {
		st_skipped(re, v->alg, "keyGen", v->n_keygen);
		goto siggen;
	}
	pass = fail = first = 0;
	for (i = 0; i < v->n_keygen; i++) {
		const struct fw_kat_sig_keygen *t = &v->keygen[i];
		ST_COUNT(sig->keygen(fw_bench_pk, fw_bench_sk, t->seed) == 0 && memcmp(fw_bench_pk, t->pk, sig->pk_len) == 0 &&
				 memcmp(fw_bench_sk, t->sk, sig->sk_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "keyGen", pass, fail, first);

siggen:
	if (v->internal && !st_full && v->n_siggen > 0) {
		st_skipped(re, v->alg, "sigGen", v->n_siggen);
		goto sigver;
	}
	pass = fail = first = 0;
	for (i = 0; i < v->n_siggen; i++) {
		const struct fw_kat_siggen *t = &v->siggen[i];
		ST_COUNT((v->internal ? sig->sign_internal(fw_bench_sig, t->sk, t->msg, t->mlen, 0, &rounds)
				      : sig->sign(fw_bench_sig, t->sk, t->msg, t->mlen, t->ctx, t->ctxlen, 0, &rounds)) == 0 &&
				 memcmp(fw_bench_sig, t->sig, sig->sig_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	/* SLH-DSA sets without sigGen vectors (all but SHAKE-128f and SHA2-256f: the "s" sets
	 * sign for too long in an emulator): no group. */
	if (v->n_siggen > 0 || !v->internal)
		st_group(re, v->alg, "sigGen", pass, fail, first);

sigver:
	pass = fail = first = 0;
	for (i = 0; i < v->n_sigver; i++) {
		const struct fw_kat_sigver *t = &v->sigver[i];
		ST_COUNT(((t->siglen != sig->sig_len ? -1
			   : v->internal ? sig->verify_internal(t->sig, t->pk, t->msg, t->mlen)
				       : sig->verify(t->sig, t->pk, t->msg, t->mlen, t->ctx, t->ctxlen)) == 0) ==
				 (t->pass != 0),
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "sigVer", pass, fail, first);
}

#if FW_WYCHEPROOF
/* The Wycheproof groups (vectors.h), compiled with the build option FW_WYCHEPROOF (the boards
 * that run from SRAM have no room for them): fn is "wycheproof-<group>", first_fail the first failing
 * vector's Wycheproof tcId. A vector marked invalid passes when the operation refuses it. */
static void selftest_wp_kem(uint32_t re, const struct fw_wp_kem *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_kem_ops *kem;
	uint32_t i, pass, fail, first;

	if (alg == 0 || alg->kind != FW_KEM) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	kem = alg->kem;
	pass = fail = first = 0;
	for (i = 0; i < v->n_keydecap; i++) {
		const struct fw_wp_keydecap *t = &v->keydecap[i];
		ST_COUNT(kem->keygen(st_b, st_a, t->seed) == 0 && memcmp(st_b, t->ek, kem->ek_len) == 0 &&
				 kem->decaps(st_k, t->c, st_a) == 0 && memcmp(st_k, t->k, kem->ss_len) == 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "wycheproof-keyGenDecaps", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_encap; i++) {
		const struct fw_wp_encap *t = &v->encap[i];
		int rc = kem->encaps(st_b, st_k, t->ek, t->m);
		ST_COUNT(t->valid ? rc == 0 && memcmp(st_b, t->c, kem->ct_len) == 0 &&
					    memcmp(st_k, t->k, kem->ss_len) == 0
				  : rc != 0,
			 t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "wycheproof-encaps", pass, fail, first);

	pass = fail = first = 0;
	for (i = 0; i < v->n_decap; i++) {
		const struct fw_wp_decap *t = &v->decap[i];
		int rc = kem->decaps(st_k, t->c, t->dk);
		ST_COUNT(t->valid ? rc == 0 && memcmp(st_k, t->k, kem->ss_len) == 0 : rc != 0, t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "wycheproof-decaps", pass, fail, first);
}

static void selftest_wp_sig(uint32_t re, const struct fw_wp_sig *v)
{
	const struct fw_alg *alg = fw_alg_find(v->alg);
	const struct fw_sig_ops *sig;
	uint32_t i, pass, fail, first;

	if (alg == 0 || alg->kind != FW_SIG) {
		st_group(re, v->alg, "missing", 0, 1, 0);
		return;
	}
	sig = alg->sig;
	pass = fail = first = 0;
	for (i = 0; i < v->n_sigver; i++) {
		const struct fw_wp_sigver *t = &v->sigver[i];
		int ok = t->pklen == sig->pk_len && t->siglen == sig->sig_len &&
			 sig->verify(t->sig, t->pk, t->msg, t->mlen, t->ctx, t->ctxlen) == 0;
		ST_COUNT(ok == (t->valid != 0), t->tc);
		fw_busy_poll();
	}
	st_group(re, v->alg, "wycheproof-sigVer", pass, fail, first);
}
#endif

static int hash_one(const struct fw_kat_hash *h, uint8_t *out)
{
	if (h->mdlen > sizeof st_md)
		return -1;
	if (fw_streq(h->alg, "SHA-256") && h->mdlen == 32)
		sha256(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA-512") && h->mdlen == 64)
		sha512(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA3-256") && h->mdlen == 32)
		sha3_256(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHA3-512") && h->mdlen == 64)
		sha3_512(out, h->msg, h->len);
	else if (fw_streq(h->alg, "SHAKE128"))
		shake128(out, h->mdlen, h->msg, h->len);
	else if (fw_streq(h->alg, "SHAKE256"))
		shake256(out, h->mdlen, h->msg, h->len);
	else
		return -1;
	return 0;
}

#if FW_HAVE_TEL
/* ascon_one checks one Ascon KAT record: an AEAD record seals to CT || tag, opens back to PT,
 * and refuses the ciphertext with its last tag bit flipped; a hash record gives MD. With
 * wrong set (SELFTEST fault=ascon) each record runs through another mode than its own
 * (SP 800-232 AEAD128 records through v1.2 Ascon-128a, v1.2 records through AEAD128,
 * Hash256 through XOF128, XOF128 through CXOF128 with an empty Z, CXOF128 through XOF128):
 * every record must then fail, which shows a vector wired to the wrong mode is caught. */
static int ascon_one(const struct fw_kat_ascon *v, int wrong)
{
	uint8_t *ct = st_a, *pt = st_b, tag[ASCON_TAGBYTES];
	static const ascon_mode aead_wrong[3] = {ASCON_128A_V12, ASCON_AEAD128, ASCON_AEAD128};
	ascon_mode mode;
	unsigned int hmode;

	if (v->outlen > sizeof st_md || (v->mode > 2))
		return 0;
	if (v->key == 0) { /* a hash record */
		hmode = wrong ? (v->mode == 0 ? 1u : v->mode == 1 ? 2u : 1u) : v->mode;
		if (hmode == 0) {
			if (v->outlen != ASCON_HASH256_BYTES)
				return 0;
			ascon_hash256(st_md, v->in, v->inlen);
		} else if (hmode == 1) {
			ascon_xof128(st_md, v->outlen, v->in, v->inlen);
		} else if (ascon_cxof128(st_md, v->outlen, v->ad, wrong ? 0 : v->adlen, v->in, v->inlen) != 0) {
			return 0;
		}
		return memcmp(st_md, v->out, v->outlen) == 0;
	}
	if (v->outlen != v->inlen + ASCON_TAGBYTES || v->inlen > sizeof st_b)
		return 0;
	mode = wrong ? aead_wrong[v->mode] : (ascon_mode)v->mode;
	ascon_aead_encrypt(mode, ct, tag, v->in, v->inlen, v->ad, v->adlen, v->nonce, v->key);
	if (memcmp(ct, v->out, v->inlen) != 0 || memcmp(tag, v->out + v->inlen, ASCON_TAGBYTES) != 0)
		return 0;
	if (ascon_aead_decrypt(mode, pt, v->out, v->inlen, v->out + v->inlen, ASCON_TAGBYTES, v->ad,
			       v->adlen, v->nonce, v->key) != 0 ||
	    memcmp(pt, v->in, v->inlen) != 0)
		return 0;
	memcpy(tag, v->out + v->inlen, ASCON_TAGBYTES);
	tag[ASCON_TAGBYTES - 1] ^= 0x80;
	return ascon_aead_decrypt(mode, pt, v->out, v->inlen, tag, ASCON_TAGBYTES, v->ad, v->adlen,
				  v->nonce, v->key) != 0;
}

/* selftest_ascon runs the Ascon KAT records, one group per algorithm (fn=kat); first_fail
 * is the record's Count. */
static void selftest_ascon(uint32_t re, int wrong)
{
	uint32_t i, j, pass, fail, first;

	for (i = 0; i < fw_n_kat_ascons; i = j) {
		pass = fail = first = 0;
		for (j = i; j < fw_n_kat_ascons && fw_streq(fw_kat_ascons[j].alg, fw_kat_ascons[i].alg); j++) {
			ST_COUNT(ascon_one(&fw_kat_ascons[j], wrong), fw_kat_ascons[j].count);
			fw_busy_poll();
		}
		st_group(re, fw_kat_ascons[i].alg, "kat", pass, fail, first);
	}
}
#endif

void fw_do_selftest(const struct fw_req *r)
{
	uint32_t i, j, pass, fail, first;
	const char *full = fw_req_get(r, "full");
	const char *fault = fw_req_get(r, "fault");

	if (full != 0 && !fw_streq(full, "0") && !fw_streq(full, "1")) {
		fw_send_error(r->seq, "badarg", "full");
		return;
	}
	if (fault != 0 && !(FW_HAVE_TEL && fw_streq(fault, "ascon"))) {
		fw_send_error(r->seq, "badarg", "fault");
		return;
	}
	st_full = full != 0 && fw_streq(full, "1");

	st_pass = st_fail = st_groups = 0;
	/* fault=ascon runs the Ascon groups alone, each through a wrong mode. */
	for (i = 0; fault == 0 && i < fw_n_kat_hashes; i = j) {
		/* Hash vectors are grouped by algorithm, in table order. */
		pass = fail = first = 0;
		for (j = i; j < fw_n_kat_hashes && fw_streq(fw_kat_hashes[j].alg, fw_kat_hashes[i].alg); j++)
			ST_COUNT(hash_one(&fw_kat_hashes[j], st_md) == 0 &&
					 memcmp(st_md, fw_kat_hashes[j].md, fw_kat_hashes[j].mdlen) == 0,
				 j - i);
		st_group(r->seq, fw_kat_hashes[i].alg, "hash", pass, fail, first);
	}
	for (i = 0; fault == 0 && i < fw_n_kat_kems; i++)
		selftest_kem(r->seq, &fw_kat_kems[i]);
	for (i = 0; FW_HAVE_SIG && fault == 0 && i < fw_n_kat_sigs; i++)
		selftest_sig(r->seq, &fw_kat_sigs[i]);
#if FW_WYCHEPROOF
	for (i = 0; fault == 0 && i < fw_n_wp_kems; i++)
		selftest_wp_kem(r->seq, &fw_wp_kems[i]);
	for (i = 0; FW_HAVE_SIG && fault == 0 && i < fw_n_wp_sigs; i++)
		selftest_wp_sig(r->seq, &fw_wp_sigs[i]);
#endif
#if FW_HAVE_TEL
	selftest_ascon(r->seq, fault != 0);
#endif
	fw_frame_begin("SELFTEST");
	fw_kv_u64("re", r->seq);
	fw_kv_u64("pass", st_pass);
	fw_kv_u64("fail", st_fail);
	fw_kv_u64("groups", st_groups);
	fw_kv_str("source", fw_kat_source);
	fw_frame_end();
}
