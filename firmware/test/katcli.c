/* katcli: a host-only test driver for the crypto code. It reads one command
 * per line on stdin and prints one result line on stdout; the Go tests in
 * this directory use it to check the C code against NIST's ACVP vectors,
 * Go's standard library hashes and circl's ML-KEM on random inputs.
 *
 *   sha256|sha512|sha3-256|sha3-512 HEX          -> HEX
 *   shake128|shake256 OUTLEN HEX                 -> HEX
 *   keygen SET D Z                               -> EK DK
 *   encaps SET EK M      (with the modulus check) -> C K | fail
 *   decaps SET DK C      (with the hash check)    -> K | fail
 *   checkek SET EK / checkdk SET DK              -> ok | fail
 *   ascon-seal MODE KEY NONCE PT AD              -> CT||TAG (16-byte tag)
 *   ascon-open MODE KEY NONCE CT||TAG AD TAGLEN  -> PT | fail
 *   ascon-hash256 HEX                            -> HEX (32 bytes)
 *   ascon-xof128 OUTLEN HEX                      -> HEX
 *   ascon-cxof128 OUTLEN Z HEX                   -> HEX | fail (Z too long)
 *   mldsa-keygen DSET XI                         -> PK SK
 *   mldsa-sign DSET IFACE SK MSG CTX RND [OID]   -> SIG ROUNDS | fail
 *   mldsa-verify DSET IFACE PK MSG CTX SIG [OID] -> ok | fail
 *   slhdsa-keygen SSET SKSEED SKPRF PKSEED       -> PK SK
 *   slhdsa-sign SSET IFACE SK MSG CTX ADDRND [OID]  -> SIG | fail
 *   slhdsa-verify SSET IFACE PK MSG CTX SIG [OID]   -> ok | fail
 *   slhdsa-sizes SSET                            -> N PK SK SIG
 *   tel-frames EK M DEV PSK PT[,PT...]           -> HS FRAME... | fail
 *       (the telemetry scheme's pinned handshake to EK with randomness M, device id DEV,
 *       then one frame per plaintext, counters from 0: firmware/TELEMETRY.md)
 *   hmac-sha256 KEY MSG                          -> TAG (32 bytes)
 *   hkdf-sha256 IKM SALT INFO SIZE               -> OKM | fail (SIZE > 255 * 32)
 *   hkdf-label SECRET LABEL CONTEXT LEN          -> OUT | fail (LABEL in hex, "tls13 " added)
 *   derive-secret SECRET LABEL HASH              -> OUT (LABEL in hex, HASH 32 bytes)
 *   aesgcm-seal KEY IV AAD PT                    -> CT||TAG | fail (not AES-128, 96-bit IV)
 *   aesgcm-open KEY IV AAD CT||TAG               -> PT | fail
 *   x509 DER NOW HOST                            -> NAME=VALUE ... | refused CODE
 *       (the certificate's fields as x509.h reads them, hex unless a number: tbs sigoid sigalg
 *       sig serial issuer subject notbefore notafter spkioid spkialg pk ca ku (-1 if absent)
 *       san (dNSNames, comma-separated hex, "-" if none) host (1 if HOST, hex, matches) valid
 *       (x509_valid_at at Unix time NOW); CODE is x509.h's negative error)
 *   tlsc-start GROUP SNI CA NOW RANDOM SEED [ECDH] -> OUT | fail
 *       (the TLS 1.3 client of crypto/tls13 started for group GROUP (decimal codepoint), server
 *       name SNI (hex), trust anchor CA (DER), Unix time NOW, ClientHello RANDOM (32 bytes),
 *       ML-KEM SEED (64 bytes) and the ECDH secret (32 bytes; X25519, P-256 and the hybrid need
 *       it); OUT is the bytes it sends)
 *   tlsc-feed IN                                 -> STATE SENT RECEIVED OUT APP GROUP SCHEME
 *       (IN fed to the client; STATE its state number, SENT and RECEIVED the alerts' descriptions
 *       or -1, OUT the bytes it sends, APP the application data it received, both then taken,
 *       GROUP its group and SCHEME the CertificateVerify's scheme it verified or 0, decimal)
 *   tlsc-write DATA                              -> OUT | fail
 *   tlss-key KEY LEAF                            -> SET MATCH
 *       (tls13s_key_set on the key blob KEY: SET 1 when it took it, else 0; MATCH 1 when
 *       tls13s_key_matches the certificate LEAF, DER)
 *   tlss-start GROUP KEY LEAF RANDOM KEMRND ECDH SIGRND -> ok | fail
 *       (the TLS 1.3 server of crypto/tls13 started for group GROUP (decimal codepoint) with the
 *       key blob KEY, the certificate LEAF (DER), ServerHello RANDOM, ML-KEM encapsulation's m
 *       KEMRND, ECDH secret ECDH and signature randomness SIGRND, 32 bytes each or "-" for none)
 *   tlss-feed IN                                 -> STATE SENT RECEIVED OUT APP GROUP SCHEME ROUNDS HRR
 *       (IN fed to the server; as tlsc-feed, with the CertificateVerify's scheme it signed with
 *       or 0, the ML-DSA rejection rounds of that signature and 1 after a HelloRetryRequest)
 *   tlss-write DATA                              -> OUT | fail
 *   tlss-close                                   -> OUT | fail (close_notify)
 *   tel-fs SIGPK DEV PSK NONCE OFFER NOW M PT[,PT...] -> RQ HS FRAME... | refused REASON
 *       (the forward-secret handshake: the request for NONCE, the OFFER checked against the
 *       pinned ML-DSA-44 key SIGPK at Unix time NOW, encapsulation with randomness M, then
 *       one frame per plaintext; REASON is malformed, signature, nonce or expired)
 * SET is 512, 768 or 1024; DSET is 44, 65 or 87; MODE is aead128, 128v12 or
 * 128av12; IFACE is pure (ML-DSA.Sign/Verify with CTX), internal (MSG is
 * M'), mu (MSG is the 64-byte external mu) or prehash (MSG is PH(M), OID
 * its DER OID). RND "-" signs deterministically (rnd NULL); CTX is ignored
 * by internal and mu. SSET is an SLH-DSA set as FIPS 205 names it without
 * the "SLH-DSA-" prefix (SHA2-128s ... SHAKE-256f); its IFACE is pure,
 * internal or prehash as for ML-DSA, and ADDRND "-" signs deterministically.
 * An empty byte string is written "-". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../crypto/aesgcm/aesgcm.h"
#include "../crypto/ascon/ascon.h"
#include "../crypto/hkdf/hkdf.h"
#include "../crypto/keccak/keccak.h"
#include "../crypto/mldsa/mldsa.h"
#include "../crypto/mlkem/mlkem.h"
#include "../crypto/slhdsa/slhdsa.h"
#include "../crypto/sha2/sha2.h"
#include "../crypto/telemetry/tel.h"
#include "../crypto/tls13/tls13c.h"
#include "../crypto/tls13/tls13s.h"
#include "../crypto/x509/x509.h"
#include "hexio.h"

#define MAXBYTES 65536

struct kem {
	const char *name;
	size_t ek, dk, ct;
	int (*keygen)(uint8_t *, uint8_t *, const uint8_t *, const uint8_t *);
	int (*encaps)(uint8_t *, uint8_t *, const uint8_t *, const uint8_t *);
	int (*decaps)(uint8_t *, const uint8_t *, const uint8_t *);
	int (*check_ek)(const uint8_t *);
	int (*check_dk)(const uint8_t *);
};

static const struct kem kems[] = {
	{"512", MLKEM512_EKBYTES, MLKEM512_DKBYTES, MLKEM512_CTBYTES, mlkem512_keygen_internal,
	 mlkem512_encaps, mlkem512_decaps, mlkem512_check_ek, mlkem512_check_dk},
	{"768", MLKEM768_EKBYTES, MLKEM768_DKBYTES, MLKEM768_CTBYTES, mlkem768_keygen_internal,
	 mlkem768_encaps, mlkem768_decaps, mlkem768_check_ek, mlkem768_check_dk},
	{"1024", MLKEM1024_EKBYTES, MLKEM1024_DKBYTES, MLKEM1024_CTBYTES, mlkem1024_keygen_internal,
	 mlkem1024_encaps, mlkem1024_decaps, mlkem1024_check_ek, mlkem1024_check_dk},
};

struct dsa {
	const char *name;
	size_t pk, sk, sig;
	int (*keygen)(uint8_t *, uint8_t *, const uint8_t *);
	int (*sign_mu)(uint8_t *, const uint8_t *, const uint8_t *, const uint8_t *, unsigned int *);
	int (*sign_internal)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *,
			     unsigned int *);
	int (*sign)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t,
		    const uint8_t *, unsigned int *);
	int (*sign_prehash)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t,
			    const uint8_t *, size_t, const uint8_t *, unsigned int *);
	int (*verify_mu)(const uint8_t *, const uint8_t *, const uint8_t *);
	int (*verify_internal)(const uint8_t *, const uint8_t *, const uint8_t *, size_t);
	int (*verify)(const uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t);
	int (*verify_prehash)(const uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *,
			      size_t, const uint8_t *, size_t);
};

#define DSA(p, P)                                                                              \
	{#p + 5, P##_PKBYTES, P##_SKBYTES, P##_SIGBYTES, p##_keygen_internal, p##_sign_mu,        \
	 p##_sign_internal, p##_sign, p##_sign_prehash, p##_verify_mu, p##_verify_internal,       \
	 p##_verify, p##_verify_prehash}

static const struct dsa dsas[] = {DSA(mldsa44, MLDSA44), DSA(mldsa65, MLDSA65), DSA(mldsa87, MLDSA87)};

struct slh {
	const char *name;
	size_t n, pk, sk, sig;
	int (*keygen)(uint8_t *, uint8_t *, const uint8_t *, const uint8_t *, const uint8_t *);
	int (*sign_internal)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *);
	int (*sign)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t,
		    const uint8_t *);
	int (*sign_prehash)(uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t,
			    const uint8_t *, size_t, const uint8_t *);
	int (*verify_internal)(const uint8_t *, const uint8_t *, const uint8_t *, size_t);
	int (*verify)(const uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *, size_t);
	int (*verify_prehash)(const uint8_t *, const uint8_t *, const uint8_t *, size_t, const uint8_t *,
			      size_t, const uint8_t *, size_t);
};

#define SLH(name, p, P)                                                                        \
	{name, P##_N, P##_PKBYTES, P##_SKBYTES, P##_SIGBYTES, p##_keygen_internal,               \
	 p##_sign_internal, p##_sign, p##_sign_prehash, p##_verify_internal, p##_verify,          \
	 p##_verify_prehash}

static const struct slh slhs[] = {
	SLH("SHA2-128s", slhdsa_sha2_128s, SLHDSA_SHA2_128S),
	SLH("SHA2-128f", slhdsa_sha2_128f, SLHDSA_SHA2_128F),
	SLH("SHA2-192s", slhdsa_sha2_192s, SLHDSA_SHA2_192S),
	SLH("SHA2-192f", slhdsa_sha2_192f, SLHDSA_SHA2_192F),
	SLH("SHA2-256s", slhdsa_sha2_256s, SLHDSA_SHA2_256S),
	SLH("SHA2-256f", slhdsa_sha2_256f, SLHDSA_SHA2_256F),
	SLH("SHAKE-128s", slhdsa_shake_128s, SLHDSA_SHAKE_128S),
	SLH("SHAKE-128f", slhdsa_shake_128f, SLHDSA_SHAKE_128F),
	SLH("SHAKE-192s", slhdsa_shake_192s, SLHDSA_SHAKE_192S),
	SLH("SHAKE-192f", slhdsa_shake_192f, SLHDSA_SHAKE_192F),
	SLH("SHAKE-256s", slhdsa_shake_256s, SLHDSA_SHAKE_256S),
	SLH("SHAKE-256f", slhdsa_shake_256f, SLHDSA_SHAKE_256F),
};

static uint8_t a[MAXBYTES], b[MAXBYTES], o1[MAXBYTES], o2[MAXBYTES];

static long unhex(uint8_t *out, const char *s)
{
	return hexio_unhex(out, MAXBYTES, s);
}

static void puthex(const uint8_t *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		printf("%02X", p[i]);
}

static const struct kem *find(const char *name)
{
	size_t i;
	for (i = 0; i < sizeof kems / sizeof kems[0]; i++)
		if (strcmp(kems[i].name, name) == 0)
			return &kems[i];
	return NULL;
}

static char line[4 * MAXBYTES];

static int ascon_mode_of(const char *name, ascon_mode *m)
{
	if (strcmp(name, "aead128") == 0)
		*m = ASCON_AEAD128;
	else if (strcmp(name, "128v12") == 0)
		*m = ASCON_128_V12;
	else if (strcmp(name, "128av12") == 0)
		*m = ASCON_128A_V12;
	else
		return -1;
	return 0;
}

/* ascon runs an ascon-* command; it returns -1 on malformed arguments. */
static int ascon(const char *cmd, char *x, char *y, char *z, char *v, char *w, char *u)
{
	static uint8_t key[MAXBYTES], nonce[MAXBYTES];
	long n, na, nk, nn;
	ascon_mode mode;
	if (strcmp(cmd, "ascon-hash256") == 0) {
		if (x == NULL || (n = unhex(a, x)) < 0)
			return -1;
		ascon_hash256(o1, a, (size_t)n);
		puthex(o1, ASCON_HASH256_BYTES);
		return 0;
	}
	if (strcmp(cmd, "ascon-xof128") == 0 || strcmp(cmd, "ascon-cxof128") == 0) {
		int cx = cmd[6] == 'c';
		size_t outlen = x ? (size_t)atol(x) : 0;
		char *msg = cx ? z : y;
		long nz = 0;
		if (msg == NULL || outlen > MAXBYTES || (n = unhex(a, msg)) < 0)
			return -1;
		if (cx && (nz = unhex(b, y)) < 0)
			return -1;
		if (cx) {
			if (ascon_cxof128(o1, outlen, b, (size_t)nz, a, (size_t)n) != 0) {
				printf("fail");
				return 0;
			}
		} else
			ascon_xof128(o1, outlen, a, (size_t)n);
		puthex(o1, outlen);
		return 0;
	}
	if (x == NULL || ascon_mode_of(x, &mode) != 0 || y == NULL || z == NULL || v == NULL || w == NULL)
		return -1;
	if ((nk = unhex(key, y)) != ASCON_KEYBYTES || (nn = unhex(nonce, z)) != ASCON_NONCEBYTES ||
	    (n = unhex(a, v)) < 0 || (na = unhex(b, w)) < 0)
		return -1;
	if (strcmp(cmd, "ascon-seal") == 0) {
		if (n + ASCON_TAGBYTES > MAXBYTES)
			return -1;
		ascon_aead_encrypt(mode, o1, o1 + n, a, (size_t)n, b, (size_t)na, nonce, key);
		puthex(o1, (size_t)n + ASCON_TAGBYTES);
		return 0;
	}
	if (strcmp(cmd, "ascon-open") == 0) {
		long taglen = u ? atol(u) : -1;
		if (taglen < 0 || taglen > n)
			return -1;
		if (ascon_aead_decrypt(mode, o1, a, (size_t)(n - taglen), a + n - taglen, (size_t)taglen, b,
				       (size_t)na, nonce, key) != 0) {
			size_t i;
			for (i = 0; i < (size_t)(n - taglen); i++)
				if (o1[i] != 0)
					return -1; /* plaintext left behind: a bug, not a refusal */
			printf("fail");
		} else
			puthex(o1, (size_t)(n - taglen));
		return 0;
	}
	return -1;
}

/* mldsa runs an mldsa-* command; it returns -1 on malformed arguments. */
static int mldsa(const char *cmd, char *set, char *iface, char *key, char *msg, char *ctx, char *last,
		 char *oidhex)
{
	static uint8_t c[MAXBYTES], r[MAXBYTES], oid[MAXBYTES];
	const struct dsa *d = NULL;
	long nk, nm, nc, nr, no = 0;
	size_t i;
	int rc;
	unsigned int rounds = 0;
	for (i = 0; set != NULL && i < sizeof dsas / sizeof dsas[0]; i++)
		if (strcmp(dsas[i].name, set) == 0)
			d = &dsas[i];
	if (d == NULL)
		return -1;
	if (strcmp(cmd, "mldsa-keygen") == 0) {
		if (iface == NULL || unhex(a, iface) != 32)
			return -1;
		d->keygen(o1, o2, a);
		puthex(o1, d->pk);
		printf(" ");
		puthex(o2, d->sk);
		return 0;
	}
	if (iface == NULL || key == NULL || msg == NULL || ctx == NULL || last == NULL)
		return -1;
	nk = unhex(a, key);
	nm = unhex(b, msg);
	nc = unhex(c, ctx);
	nr = unhex(r, last);
	if (nm < 0 || nc < 0 || nr < 0 || (oidhex != NULL && (no = unhex(oid, oidhex)) < 0))
		return -1;
	if (strcmp(cmd, "mldsa-sign") == 0) {
		const uint8_t *rnd = nr == 0 ? NULL : r;
		if (nk != (long)d->sk || (nr != 0 && nr != MLDSA_RNDBYTES))
			return -1;
		if (strcmp(iface, "pure") == 0)
			rc = d->sign(o1, a, b, (size_t)nm, c, (size_t)nc, rnd, &rounds);
		else if (strcmp(iface, "internal") == 0)
			rc = d->sign_internal(o1, a, b, (size_t)nm, rnd, &rounds);
		else if (strcmp(iface, "mu") == 0 && nm == MLDSA_MUBYTES)
			rc = d->sign_mu(o1, a, b, rnd, &rounds);
		else if (strcmp(iface, "prehash") == 0 && no > 0)
			rc = d->sign_prehash(o1, a, b, (size_t)nm, oid, (size_t)no, c, (size_t)nc, rnd, &rounds);
		else
			return -1;
		if (rc != 0)
			printf("fail");
		else {
			puthex(o1, d->sig);
			printf(" %u", rounds);
		}
		return 0;
	}
	if (strcmp(cmd, "mldsa-verify") == 0) {
		if (nk != (long)d->pk)
			return -1;
		if (nr != (long)d->sig) {
			printf("fail"); /* a signature of the wrong length never verifies */
			return 0;
		}
		if (strcmp(iface, "pure") == 0)
			rc = d->verify(r, a, b, (size_t)nm, c, (size_t)nc);
		else if (strcmp(iface, "internal") == 0)
			rc = d->verify_internal(r, a, b, (size_t)nm);
		else if (strcmp(iface, "mu") == 0 && nm == MLDSA_MUBYTES)
			rc = d->verify_mu(r, a, b);
		else if (strcmp(iface, "prehash") == 0 && no > 0)
			rc = d->verify_prehash(r, a, b, (size_t)nm, oid, (size_t)no, c, (size_t)nc);
		else
			return -1;
		printf(rc == 0 ? "ok" : "fail");
		return 0;
	}
	return -1;
}

/* slhdsa runs an slhdsa-* command; it returns -1 on malformed arguments. */
static int slhdsa(const char *cmd, char *set, char *iface, char *key, char *msg, char *ctx, char *last,
		  char *oidhex)
{
	static uint8_t c[MAXBYTES], r[MAXBYTES], oid[MAXBYTES];
	const struct slh *d = NULL;
	long nk, nm, nc, nr, no = 0;
	size_t i;
	int rc;
	for (i = 0; set != NULL && i < sizeof slhs / sizeof slhs[0]; i++)
		if (strcmp(slhs[i].name, set) == 0)
			d = &slhs[i];
	if (d == NULL)
		return -1;
	if (strcmp(cmd, "slhdsa-sizes") == 0) {
		printf("%zu %zu %zu %zu", d->n, d->pk, d->sk, d->sig);
		return 0;
	}
	if (strcmp(cmd, "slhdsa-keygen") == 0) {
		if (iface == NULL || key == NULL || msg == NULL || unhex(a, iface) != (long)d->n ||
		    unhex(b, key) != (long)d->n || unhex(c, msg) != (long)d->n)
			return -1;
		d->keygen(o1, o2, a, b, c);
		puthex(o1, d->pk);
		printf(" ");
		puthex(o2, d->sk);
		return 0;
	}
	if (iface == NULL || key == NULL || msg == NULL || ctx == NULL || last == NULL)
		return -1;
	nk = unhex(a, key);
	nm = unhex(b, msg);
	nc = unhex(c, ctx);
	nr = unhex(r, last);
	if (nm < 0 || nc < 0 || nr < 0 || (oidhex != NULL && (no = unhex(oid, oidhex)) < 0))
		return -1;
	if (strcmp(cmd, "slhdsa-sign") == 0) {
		const uint8_t *rnd = nr == 0 ? NULL : r;
		if (nk != (long)d->sk || (nr != 0 && nr != (long)d->n))
			return -1;
		if (strcmp(iface, "pure") == 0)
			rc = d->sign(o1, a, b, (size_t)nm, c, (size_t)nc, rnd);
		else if (strcmp(iface, "internal") == 0)
			rc = d->sign_internal(o1, a, b, (size_t)nm, rnd);
		else if (strcmp(iface, "prehash") == 0 && no > 0)
			rc = d->sign_prehash(o1, a, b, (size_t)nm, oid, (size_t)no, c, (size_t)nc, rnd);
		else
			return -1;
		if (rc != 0)
			printf("fail");
		else
			puthex(o1, d->sig);
		return 0;
	}
	if (strcmp(cmd, "slhdsa-verify") == 0) {
		if (nk != (long)d->pk)
			return -1;
		if (nr != (long)d->sig) {
			printf("fail"); /* a signature of the wrong length never verifies */
			return 0;
		}
		if (strcmp(iface, "pure") == 0)
			rc = d->verify(r, a, b, (size_t)nm, c, (size_t)nc);
		else if (strcmp(iface, "internal") == 0)
			rc = d->verify_internal(r, a, b, (size_t)nm);
		else if (strcmp(iface, "prehash") == 0 && no > 0)
			rc = d->verify_prehash(r, a, b, (size_t)nm, oid, (size_t)no, c, (size_t)nc);
		else
			return -1;
		printf(rc == 0 ? "ok" : "fail");
		return 0;
	}
	return -1;
}

/* tel runs tel-frames: the handshake payload, then one frame per comma-separated plaintext. */
static int tel(char *ek, char *m, char *dev, char *psk, char *pts)
{
	static struct tel_pin pin;
	static struct tel_session s;
	static uint8_t hs[TEL_HS], ss[32], frame[TEL_MAX_PAYLOAD + TEL_OVERHEAD];
	long nk, nm, np, n;
	uint64_t ctr;
	char *pt;
	if (pts == NULL || (nk = unhex(a, ek)) != TEL_EK || (nm = unhex(b, m)) != 32 ||
	    (np = unhex(o2, psk)) < 0)
		return -1;
	if (tel_pin_key(&pin, a) != 0 || tel_encaps(hs, ss, &pin, b) != 0 ||
	    tel_derive(&s, &pin, hs, ss, dev, strlen(dev), o2, (size_t)np) != 0) {
		printf("fail");
		return 0;
	}
	puthex(hs, TEL_HS);
	for (pt = strtok(pts, ","); pt != NULL; pt = strtok(NULL, ",")) {
		if ((n = unhex(o1, pt)) < 0 || n > TEL_MAX_PAYLOAD)
			return -1;
		if (tel_seal(&s, frame, o1, (size_t)n, &ctr) != 0) {
			printf(" fail");
			return 0;
		}
		printf(" ");
		puthex(frame, (size_t)n + TEL_OVERHEAD);
	}
	return 0;
}

/* telfs runs tel-fs. */
static int telfs(char *sigpk, char *dev, char *psk, char *nonce, char *offer, char *now_s, char *m,
		 char *pts)
{
	static struct tel_pin eph;
	static struct tel_session s;
	static uint8_t rq[TEL_RQ], hs[TEL_HS_FS], ss[32], frame[TEL_MAX_PAYLOAD + TEL_OVERHEAD];
	static uint8_t pk[TEL_SIGPK], nc[TEL_NONCE], mm[32];
	long np, no, n;
	uint64_t ctr, expiry, now;
	char *pt, *end;
	int rc;
	if (pts == NULL || unhex(pk, sigpk) != TEL_SIGPK || unhex(nc, nonce) != TEL_NONCE ||
	    unhex(mm, m) != 32 || (np = unhex(o2, psk)) < 0 || (no = unhex(a, offer)) < 0)
		return -1;
	now = strtoull(now_s, &end, 10);
	if (*end != 0)
		return -1;
	tel_fs_request(rq, nc);
	rc = tel_fs_verify(a, (size_t)no, pk, dev, strlen(dev));
	if (rc == TEL_OFFER_OK)
		rc = tel_fs_accept(&eph, &expiry, a, nc, now);
	if (rc != TEL_OFFER_OK) {
		printf("refused %s", tel_offer_reason(rc));
		return 0;
	}
	if (tel_fs_encaps(hs, ss, &eph, nc, mm) != 0 ||
	    tel_derive_fs(&s, &eph, hs, ss, expiry, dev, strlen(dev), o2, (size_t)np) != 0) {
		printf("fail");
		return 0;
	}
	puthex(rq, TEL_RQ);
	printf(" ");
	puthex(hs, TEL_HS_FS);
	for (pt = strtok(pts, ","); pt != NULL; pt = strtok(NULL, ",")) {
		if ((n = unhex(o1, pt)) < 0 || n > TEL_MAX_PAYLOAD)
			return -1;
		if (tel_seal(&s, frame, o1, (size_t)n, &ctr) != 0) {
			printf(" fail");
			return 0;
		}
		printf(" ");
		puthex(frame, (size_t)n + TEL_OVERHEAD);
	}
	return 0;
}

static void putspan(const char *name, struct x509_span s)
{
	printf(" %s=", name);
	if (s.n == 0)
		printf("-");
	puthex(s.p, s.n);
}

/* x509 runs the x509 command. */
static int x509(char *der, char *now_s, char *host)
{
	static struct x509_cert c;
	struct x509_span name;
	long n, nh;
	size_t i;
	int r;
	if (host == NULL || (n = unhex(a, der)) < 0 || (nh = unhex(b, host)) < 0)
		return -1;
	if ((r = x509_parse(&c, a, (size_t)n)) != X509_OK) {
		printf("refused %d", r);
		return 0;
	}
	printf("ok");
	putspan("tbs", c.tbs);
	putspan("sigoid", c.sig_oid);
	printf(" sigalg=%d", (int)c.sig_alg);
	putspan("sig", c.sig);
	putspan("serial", c.serial);
	putspan("issuer", c.issuer);
	putspan("subject", c.subject);
	printf(" notbefore=%lld notafter=%lld", (long long)c.not_before, (long long)c.not_after);
	putspan("spkioid", c.spki_oid);
	printf(" spkialg=%d", (int)c.spki_alg);
	putspan("pk", c.pubkey);
	printf(" ca=%d ku=%ld san=", c.is_ca, c.has_key_usage ? (long)c.key_usage : -1L);
	for (i = 0; x509_san_dns(&c, i, &name) == 0; i++) {
		if (i > 0)
			printf(",");
		puthex(name.p, name.n);
	}
	if (i == 0)
		printf("-");
	printf(" host=%d valid=%d", x509_match_host(&c, (const char *)b, (size_t)nh),
	       x509_valid_at(&c, (int64_t)strtoll(now_s, NULL, 10)));
	return 0;
}

/* tlsc runs the tlsc- commands on one client. */
static int tlsc(const char *cmd, char *x, char *y, char *z, char *v, char *w, char *u, char *e)
{
	static struct tls13c c;
	static uint8_t ca[X509_MAX_DER], ecdh[32];
	static char sni[256];
	static int started;
	long n;
	if (strcmp(cmd, "tlsc-start") == 0) {
		struct tls13c_config cfg;
		long nsni, nca, nr, ns;
		if (u == NULL || strlen(y) > 2 * 255 || strlen(z) > 2 * sizeof ca || (nsni = unhex(a, y)) < 0 ||
		    (nca = unhex(ca, z)) < 0 || (nr = unhex(b, w)) != 32 || (ns = unhex(o2, u)) != 64 ||
		    (e != NULL && (strlen(e) != 64 || unhex(ecdh, e) != 32)))
			return -1;
		memcpy(sni, a, (size_t)nsni);
		sni[nsni] = 0;
		cfg.group = (uint16_t)atol(x);
		cfg.server_name = sni;
		cfg.ca_der = ca;
		cfg.ca_len = (size_t)nca;
		cfg.now = (int64_t)strtoll(v, NULL, 10);
		cfg.random = b;
		cfg.kem_seed = o2;
		cfg.ecdh_secret = e != NULL ? ecdh : NULL;
		started = tls13c_start(&c, &cfg) == 0;
		if (!started) {
			printf("fail");
			return 0;
		}
	} else if (strcmp(cmd, "tlsc-feed") == 0) {
		if (!started || (n = unhex(a, x)) < 0)
			return -1;
		tls13c_input(&c, a, (size_t)n);
		printf("%d %d %d ", (int)c.state, c.alert_sent, c.alert_received);
	} else if (strcmp(cmd, "tlsc-write") == 0) {
		if (!started || (n = unhex(a, x)) < 0)
			return -1;
		if (tls13c_write(&c, a, (size_t)n) != 0) {
			printf("fail");
			return 0;
		}
	} else
		return -1;
	if (c.out_len == 0)
		printf("-");
	puthex(c.out, c.out_len);
	c.out_len = 0;
	if (cmd[5] == 'f') {
		printf(" ");
		if (c.app_len == 0)
			printf("-");
		puthex(c.app, c.app_len);
		c.app_len = 0;
		printf(" %u %u", (unsigned)c.group, (unsigned)c.scheme);
	}
	return 0;
}

/* tlss_key reads a key blob into k and the certificate leaf into c (the DER in der): -1 on
 * malformed arguments, else whether the key was taken (0/1) in *set and whether it matches in
 * *match. */
static int tlss_key(struct tls13s_key *k, uint8_t *der, const char *key, const char *leaf, int *set, int *match)
{
	struct x509_cert c;
	long nk, nl;
	if (leaf == NULL || strlen(leaf) > 2 * X509_MAX_DER || (nk = unhex(o2, key)) < 0 || (nl = unhex(der, leaf)) < 0)
		return -1;
	*set = tls13s_key_set(k, o2, (size_t)nk) == 0;
	*match = *set && x509_parse(&c, der, (size_t)nl) == X509_OK && tls13s_key_matches(k, &c);
	return (int)nl;
}

/* opt32 reads an optional 32-byte argument ("-": none) into buf: buf, NULL, or bad set. */
static const uint8_t *opt32(uint8_t *buf, const char *s, int *bad)
{
	if (s == NULL || strcmp(s, "-") == 0)
		return NULL;
	if (strlen(s) != 64 || hexio_unhex(buf, 32, s) != 32)
		*bad = 1;
	return buf;
}

/* tlss runs the tlss- commands on one server. */
static int tlss(const char *cmd, char *x, char *y, char *z, char *v, char *w, char *u, char *e)
{
	static struct tls13s s;
	static struct tls13s_key key;
	static uint8_t leaf[X509_MAX_DER], rnd[4][32];
	static int started;
	int set, match, bad = 0;
	long n;
	if (strcmp(cmd, "tlss-key") == 0) {
		if (tlss_key(&key, leaf, x, y, &set, &match) < 0)
			return -1;
		printf("%d %d", set, match);
		return 0;
	}
	if (strcmp(cmd, "tlss-start") == 0) {
		struct tls13s_config cfg;
		if (e == NULL || (n = tlss_key(&key, leaf, y, z, &set, &match)) < 0)
			return -1;
		cfg.group = (uint16_t)atol(x);
		cfg.key = &key;
		cfg.leaf_der = leaf;
		cfg.leaf_len = (size_t)n;
		cfg.random = opt32(rnd[0], v, &bad);
		cfg.kem_rnd = opt32(rnd[1], w, &bad);
		cfg.ecdh_secret = opt32(rnd[2], u, &bad);
		cfg.sig_rnd = opt32(rnd[3], e, &bad);
		if (bad)
			return -1;
		started = set && tls13s_start(&s, &cfg) == 0;
		printf(started ? "ok" : "fail");
		return 0;
	}
	if (!started)
		return -1;
	if (strcmp(cmd, "tlss-feed") == 0) {
		if ((n = unhex(a, x)) < 0)
			return -1;
		tls13s_input(&s, a, (size_t)n);
		printf("%d %d %d ", (int)s.state, s.alert_sent, s.alert_received);
	} else if (strcmp(cmd, "tlss-write") == 0 || strcmp(cmd, "tlss-close") == 0) {
		if (cmd[5] == 'w' && (n = unhex(a, x)) < 0)
			return -1;
		if ((cmd[5] == 'w' ? tls13s_write(&s, a, (size_t)n) : tls13s_close(&s)) != 0) {
			printf("fail");
			return 0;
		}
	} else
		return -1;
	if (s.out_len == 0)
		printf("-");
	puthex(s.out, s.out_len);
	s.out_len = 0;
	if (cmd[5] == 'f') {
		printf(" ");
		if (s.app_len == 0)
			printf("-");
		puthex(s.app, s.app_len);
		s.app_len = 0;
		printf(" %u %u %u %d", (unsigned)s.group, (unsigned)s.scheme, s.rounds, s.hrr);
	}
	return 0;
}

/* tlsprim runs the TLS 1.3 primitives' commands (hmac-, hkdf-, derive-secret, aesgcm-). */
static int tlsprim(const char *cmd, char *x, char *y, char *z, char *v)
{
	static uint8_t key[256], iv[1024], label[256];
	static char lab[257];
	long nx, ny, nz;
	if (strcmp(cmd, "hmac-sha256") == 0) {
		if (y == NULL || (nx = unhex(a, x)) < 0 || (ny = unhex(b, y)) < 0)
			return -1;
		hmac_sha256(o1, a, (size_t)nx, b, (size_t)ny);
		puthex(o1, HMAC_SHA256_BYTES);
		return 0;
	}
	if (strcmp(cmd, "hkdf-sha256") == 0) {
		uint8_t prk[32];
		long size;
		if (v == NULL || (nx = unhex(a, x)) < 0 || (ny = unhex(b, y)) < 0 || (nz = unhex(o2, z)) < 0 ||
		    (size = atol(v)) < 0 || size > MAXBYTES)
			return -1;
		hkdf_sha256_extract(prk, b, (size_t)ny, a, (size_t)nx);
		if (hkdf_sha256_expand(o1, (size_t)size, prk, sizeof prk, o2, (size_t)nz) != 0)
			printf("fail");
		else
			puthex(o1, (size_t)size);
		return 0;
	}
	if (strcmp(cmd, "hkdf-label") == 0 || strcmp(cmd, "derive-secret") == 0) {
		long nl, size = 32;
		int r;
		if (z == NULL || (nx = unhex(a, x)) != 32 || y == NULL || strlen(y) > 2 * 255 ||
		    (nl = unhex(label, y)) < 0 || (nz = unhex(b, z)) < 0)
			return -1;
		if (cmd[0] == 'h' && (v == NULL || (size = atol(v)) < 0 || size > MAXBYTES))
			return -1;
		memcpy(lab, label, (size_t)nl);
		lab[nl] = 0;
		if (strlen(lab) != (size_t)nl)
			return -1;
		if (cmd[0] == 'd')
			r = nz == 32 ? tls13_derive_secret(o1, a, lab, b) : -1;
		else
			r = hkdf_expand_label(o1, (size_t)size, a, lab, b, (size_t)nz);
		if (r != 0)
			printf("fail");
		else
			puthex(o1, (size_t)size);
		return 0;
	}
	if (strcmp(cmd, "aesgcm-seal") == 0 || strcmp(cmd, "aesgcm-open") == 0) {
		static aes128gcm_ctx c;
		long nk, ni, nt;
		if (v == NULL || strlen(x) > 2 * sizeof key || strlen(y) > 2 * sizeof iv)
			return -1;
		if ((nk = unhex(key, x)) < 0 || (ni = unhex(iv, y)) < 0 || (nz = unhex(a, z)) < 0 ||
		    (nt = unhex(b, v)) < 0 || nt > MAXBYTES - AESGCM_TAGBYTES)
			return -1;
		if (nk != AES128_KEYBYTES || ni != AESGCM_IVBYTES) {
			printf("fail");
			return 0;
		}
		aes128gcm_init(&c, key);
		if (cmd[7] == 's') {
			if (aes128gcm_seal(&c, o1, iv, a, (size_t)nz, b, (size_t)nt) != 0)
				printf("fail");
			else
				puthex(o1, (size_t)nt + AESGCM_TAGBYTES);
		} else {
			if (aes128gcm_open(&c, o1, iv, a, (size_t)nz, b, (size_t)nt) != 0)
				printf("fail");
			else
				puthex(o1, (size_t)nt - AESGCM_TAGBYTES);
		}
		aes128gcm_wipe(&c);
		return 0;
	}
	return -1;
}

int main(void)
{
	while (fgets(line, sizeof line, stdin) != NULL) {
		char *cmd = strtok(line, " \r\n"), *x = strtok(NULL, " \r\n"), *y = strtok(NULL, " \r\n"),
		     *z = strtok(NULL, " \r\n"), *v = strtok(NULL, " \r\n"), *w = strtok(NULL, " \r\n"),
		     *u = strtok(NULL, " \r\n");
		const struct kem *k;
		long n;
		if (cmd == NULL)
			continue;
		if (strcmp(cmd, "tel-fs") == 0) {
			char *mm = strtok(NULL, " \r\n");
			if (telfs(x, y, z, v, w, u, mm, strtok(NULL, " \r\n")) != 0)
				goto bad;
		} else if (strcmp(cmd, "tel-frames") == 0) {
			if (tel(x, y, z, v, w) != 0)
				goto bad;
		} else if (strncmp(cmd, "slhdsa-", 7) == 0) {
			if (slhdsa(cmd, x, y, z, v, w, u, strtok(NULL, " \r\n")) != 0)
				goto bad;
		} else if (strncmp(cmd, "mldsa-", 6) == 0) {
			if (mldsa(cmd, x, y, z, v, w, u, strtok(NULL, " \r\n")) != 0)
				goto bad;
		} else if (strncmp(cmd, "hmac-", 5) == 0 || strncmp(cmd, "hkdf-", 5) == 0 ||
			   strcmp(cmd, "derive-secret") == 0 || strncmp(cmd, "aesgcm-", 7) == 0) {
			if (x == NULL || tlsprim(cmd, x, y, z, v) != 0)
				goto bad;
		} else if (strncmp(cmd, "tlss-", 5) == 0) {
			if (tlss(cmd, x, y, z, v, w, u, strtok(NULL, " \r\n")) != 0)
				goto bad;
		} else if (strncmp(cmd, "tlsc-", 5) == 0) {
			if (x == NULL || tlsc(cmd, x, y, z, v, w, u, strtok(NULL, " \r\n")) != 0)
				goto bad;
		} else if (strcmp(cmd, "x509") == 0) {
			if (x509(x, y, z) != 0)
				goto bad;
		} else if (strncmp(cmd, "ascon-", 6) == 0) {
			if (ascon(cmd, x, y, z, v, w, u) != 0)
				goto bad;
		} else if (strcmp(cmd, "shake128") == 0 || strcmp(cmd, "shake256") == 0) {
			size_t outlen = (size_t)atol(x);
			if (y == NULL || (n = unhex(a, y)) < 0 || outlen > MAXBYTES)
				goto bad;
			(cmd[5] == '1' ? shake128 : shake256)(o1, outlen, a, (size_t)n);
			puthex(o1, outlen);
		} else if (strncmp(cmd, "sha", 3) == 0) {
			if (x == NULL || (n = unhex(a, x)) < 0)
				goto bad;
			if (strcmp(cmd, "sha256") == 0) {
				sha256(o1, a, (size_t)n);
				puthex(o1, 32);
			} else if (strcmp(cmd, "sha512") == 0) {
				sha512(o1, a, (size_t)n);
				puthex(o1, 64);
			} else if (strcmp(cmd, "sha3-256") == 0) {
				sha3_256(o1, a, (size_t)n);
				puthex(o1, 32);
			} else if (strcmp(cmd, "sha3-512") == 0) {
				sha3_512(o1, a, (size_t)n);
				puthex(o1, 64);
			} else
				goto bad;
		} else if (x != NULL && (k = find(x)) != NULL) {
			long ny = y ? unhex(a, y) : -1, nz = z ? unhex(b, z) : -1;
			if (strcmp(cmd, "keygen") == 0 && ny == 32 && nz == 32) {
				k->keygen(o1, o2, a, b);
				puthex(o1, k->ek);
				printf(" ");
				puthex(o2, k->dk);
			} else if (strcmp(cmd, "encaps") == 0 && ny == (long)k->ek && nz == 32) {
				if (k->encaps(o1, o2, a, b) != 0)
					printf("fail");
				else {
					puthex(o1, k->ct);
					printf(" ");
					puthex(o2, 32);
				}
			} else if (strcmp(cmd, "decaps") == 0 && ny == (long)k->dk && nz == (long)k->ct) {
				if (k->decaps(o1, b, a) != 0)
					printf("fail");
				else
					puthex(o1, 32);
			} else if (strcmp(cmd, "checkek") == 0 && ny == (long)k->ek) {
				printf(k->check_ek(a) == 0 ? "ok" : "fail");
			} else if (strcmp(cmd, "checkdk") == 0 && ny == (long)k->dk) {
				printf(k->check_dk(a) == 0 ? "ok" : "fail");
			} else
				goto bad;
		} else
			goto bad;
		printf("\n");
		fflush(stdout);
		continue;
	bad:
		printf("error\n");
		fflush(stdout);
	}
	return 0;
}
