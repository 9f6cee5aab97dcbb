/* SLH-DSA (FIPS 205) implementation, instantiated once per parameter set by
 * the twelve slhdsa_<family>_<cat><s|f>.c files, which define SLH_SHA2 (1:
 * the SHA2 family, 0: SHAKE), SLH_CAT (128, 192 or 256), SLH_FAST (1: the
 * "f" set, 0: the "s" set), NS(x) (the symbol prefix) and the sizes slhdsa.h
 * gives, which are checked here.
 *
 * Hashes (FIPS 205 11.1 and 11.2): the SHAKE sets use SHAKE256 from the
 * firmware's Keccak for everything. The SHA2 sets use SHA-256 for F and PRF
 * at every category; at category 1 SHA-256 also for H, T, H_msg (MGF1) and
 * PRF_msg (HMAC), at categories 3 and 5 SHA-512 for those four. The 64- (or
 * 128-) byte block PK.seed || 0 is compressed once per operation and the
 * hash state copied for each call; addresses are compressed to 22 bytes.
 *
 * Memory: no allocation and no large buffer. XMSS and FORS trees are built
 * leaf by leaf (treehash) with a stack of one node per level, catching the
 * authentication path and the WOTS+ signature or FORS secret of the signed
 * leaf on the way, so signing builds each tree once and never runs the
 * verification path. T_len and T_k are absorbed chain by chain. Signatures
 * are written straight into the caller's buffer.
 *
 * Constant time: nothing branches on or indexes by a secret. The leaf and
 * tree indices, the FORS indices and the WOTS+ chain lengths come from
 * H_msg's digest and R, which the signature reveals; every secret (SK.seed,
 * SK.prf, chain values) only flows through the hash functions. */
#include <stddef.h>
#include <stdint.h>

#include "../pqmem.h"
#include "slhdsa.h"
#if SLH_SHA2
#include "../sha2/sha2.h"
#else
#include "../keccak/keccak.h"
#endif

#if SLH_CAT == 128 && !SLH_FAST
#define N 16
#define FULLH 63
#define D 7
#define A 12
#define K 14
#define M 30
#elif SLH_CAT == 128 && SLH_FAST
#define N 16
#define FULLH 66
#define D 22
#define A 6
#define K 33
#define M 34
#elif SLH_CAT == 192 && !SLH_FAST
#define N 24
#define FULLH 63
#define D 7
#define A 14
#define K 17
#define M 39
#elif SLH_CAT == 192 && SLH_FAST
#define N 24
#define FULLH 66
#define D 22
#define A 8
#define K 33
#define M 42
#elif SLH_CAT == 256 && !SLH_FAST
#define N 32
#define FULLH 64
#define D 8
#define A 14
#define K 22
#define M 47
#elif SLH_CAT == 256 && SLH_FAST
#define N 32
#define FULLH 68
#define D 17
#define A 9
#define K 35
#define M 49
#else
#error "SLH_CAT must be 128, 192 or 256 and SLH_FAST 0 or 1"
#endif

#define HP (FULLH / D) /* h': height of one XMSS tree */
#define LEN1 (2 * N)   /* lg_w = 4, w = 16 */
#define LEN2 3
#define LEN (LEN1 + LEN2)
#define MD_BYTES ((K * A + 7) / 8)
#define TREE_BITS (FULLH - HP)
#define TREE_BYTES ((TREE_BITS + 7) / 8)
#define LEAF_BYTES ((HP + 7) / 8)
#define FORS_BYTES (K * (1 + A) * N)
#define XMSS_BYTES ((LEN + HP) * N)
#define SIGBYTES (N + FORS_BYTES + D * XMSS_BYTES)
#define MAXH (A > HP ? A : HP)

_Static_assert(N == WANT_N, "n");
_Static_assert(2 * N == WANT_PK, "public key size");
_Static_assert(4 * N == WANT_SK, "secret key size");
_Static_assert(SIGBYTES == WANT_SIG, "signature size");
_Static_assert(HP * D == FULLH, "h = d h'");
_Static_assert(MD_BYTES + TREE_BYTES + LEAF_BYTES == M, "m");
_Static_assert(TREE_BITS <= 64 && HP <= 32 && A <= 31, "index widths");

/* Address types (FIPS 205 4.2). */
#define WOTS_HASH 0
#define WOTS_PK 1
#define TREE 2
#define FORS_TREE 3
#define FORS_ROOTS 4
#define WOTS_PRF 5
#define FORS_PRF 6

/* ---- ADRS: 32 bytes, big-endian words (layer, tree[3], type, w1, w2, w3) ---- */

static void NS(put32)(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t NS(get32)(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void NS(set_layer)(uint8_t a[32], uint32_t l) { NS(put32)(a, l); }

static void NS(set_tree)(uint8_t a[32], uint64_t t)
{
	NS(put32)(a + 4, 0);
	NS(put32)(a + 8, (uint32_t)(t >> 32));
	NS(put32)(a + 12, (uint32_t)t);
}

/* set_type is setTypeAndClear: the three words after the type are zeroed. */
static void NS(set_type)(uint8_t a[32], uint32_t type)
{
	NS(put32)(a + 16, type);
	memset(a + 20, 0, 12);
}

static void NS(set_keypair)(uint8_t a[32], uint32_t i) { NS(put32)(a + 20, i); }
/* word 2 is the chain address (WOTS+) or the tree height (trees). */
static void NS(set_w2)(uint8_t a[32], uint32_t i) { NS(put32)(a + 24, i); }
/* word 3 is the hash address (WOTS+) or the tree index (trees). */
static void NS(set_w3)(uint8_t a[32], uint32_t i) { NS(put32)(a + 28, i); }

/* A message M' in pieces (the prefix, context, OID and M are never copied
 * together). Pieces of length 0 are skipped. */
struct NS(msg) {
	const uint8_t *p[4];
	size_t n[4];
};

/* ---- the hash functions F, H, T_l, PRF, PRF_msg, H_msg ---- */

#if SLH_SHA2

#if N == 16 /* category 1: SHA-256 throughout */
#define BH_CTX sha256_ctx
#define BH_INIT sha256_init
#define BH_UPDATE sha256_update
#define BH_FINAL sha256_final
#define BH_BLOCK 64
#define BH_OUT 32
#else /* categories 3 and 5: SHA-512 for H, T, H_msg and PRF_msg */
#define BH_CTX sha512_ctx
#define BH_INIT sha512_init
#define BH_UPDATE sha512_update
#define BH_FINAL sha512_final
#define BH_BLOCK 128
#define BH_OUT 64
#endif

/* hctx holds SHA-256 (for F and PRF) and the H/T hash after absorbing
 * PK.seed || toByte(0, block - n). */
typedef struct {
	sha256_ctx f;
#if N != 16
	BH_CTX h;
#endif
} NS(hctx);
#if N == 16
#define HCTX_H(c) (&(c)->f)
#else
#define HCTX_H(c) (&(c)->h)
#endif

typedef BH_CTX NS(tctx);

static const uint8_t NS(zeros)[BH_BLOCK] = {0};

static void NS(hctx_init)(NS(hctx) * c, const uint8_t *pk_seed)
{
	sha256_init(&c->f);
	sha256_update(&c->f, pk_seed, N);
	sha256_update(&c->f, NS(zeros), 64 - N);
#if N != 16
	BH_INIT(&c->h);
	BH_UPDATE(&c->h, pk_seed, N);
	BH_UPDATE(&c->h, NS(zeros), BH_BLOCK - N);
#endif
}

/* adrsc is the 22-byte compressed address of FIPS 205 11.2. */
static void NS(adrsc)(uint8_t out[22], const uint8_t a[32])
{
	out[0] = a[3];
	memcpy(out + 1, a + 8, 8);
	out[9] = a[19];
	memcpy(out + 10, a + 20, 12);
}

/* f is F (and PRF, with SK.seed as input): SHA-256 at every category. out
 * may alias in. */
static void NS(f)(const NS(hctx) * c, uint8_t *out, const uint8_t a[32], const uint8_t *in)
{
	sha256_ctx s = c->f;
	uint8_t ac[22], d[32];
	NS(adrsc)(ac, a);
	sha256_update(&s, ac, 22);
	sha256_update(&s, in, N);
	sha256_final(&s, d);
	memcpy(out, d, N);
}

static void NS(t_init)(const NS(hctx) * c, NS(tctx) * t, const uint8_t a[32])
{
	uint8_t ac[22];
	*t = *HCTX_H(c);
	NS(adrsc)(ac, a);
	BH_UPDATE(t, ac, 22);
}

static void NS(t_update)(NS(tctx) * t, const uint8_t *in) { BH_UPDATE(t, in, N); }

static void NS(t_final)(NS(tctx) * t, uint8_t *out)
{
	uint8_t d[BH_OUT];
	BH_FINAL(t, d);
	memcpy(out, d, N);
}

static void NS(msg_update)(BH_CTX *s, const struct NS(msg) * m)
{
	unsigned int i;
	for (i = 0; i < 4; i++)
		if (m->n[i] != 0)
			BH_UPDATE(s, m->p[i], m->n[i]);
}

/* prf_msg is Trunc_n(HMAC-SHA-X(SK.prf, opt_rand || M')). */
static void NS(prf_msg)(uint8_t *out, const uint8_t *sk_prf, const uint8_t *opt_rand,
			const struct NS(msg) * m)
{
	uint8_t pad[BH_BLOCK], d[BH_OUT];
	BH_CTX s;
	unsigned int i;
	memset(pad, 0x36, sizeof pad);
	for (i = 0; i < N; i++)
		pad[i] ^= sk_prf[i];
	BH_INIT(&s);
	BH_UPDATE(&s, pad, BH_BLOCK);
	BH_UPDATE(&s, opt_rand, N);
	NS(msg_update)(&s, m);
	BH_FINAL(&s, d);
	memset(pad, 0x5c, sizeof pad);
	for (i = 0; i < N; i++)
		pad[i] ^= sk_prf[i];
	BH_INIT(&s);
	BH_UPDATE(&s, pad, BH_BLOCK);
	BH_UPDATE(&s, d, BH_OUT);
	BH_FINAL(&s, d);
	memcpy(out, d, N);
	memset(pad, 0, sizeof pad);
}

/* h_msg is MGF1-SHA-X(R || PK.seed || SHA-X(R || PK.seed || PK.root || M'), m). */
static void NS(h_msg)(uint8_t out[M], const uint8_t *r, const uint8_t *pk_seed, const uint8_t *pk_root,
		      const struct NS(msg) * m)
{
	uint8_t seed[2 * N + BH_OUT + 4], d[BH_OUT];
	BH_CTX s;
	uint32_t ctr;
	size_t done;
	BH_INIT(&s);
	BH_UPDATE(&s, r, N);
	BH_UPDATE(&s, pk_seed, N);
	BH_UPDATE(&s, pk_root, N);
	NS(msg_update)(&s, m);
	BH_FINAL(&s, seed + 2 * N);
	memcpy(seed, r, N);
	memcpy(seed + N, pk_seed, N);
	for (ctr = 0, done = 0; done < M; ctr++, done += BH_OUT) {
		NS(put32)(seed + 2 * N + BH_OUT, ctr);
		BH_INIT(&s);
		BH_UPDATE(&s, seed, sizeof seed);
		BH_FINAL(&s, d);
		memcpy(out + done, d, M - done < BH_OUT ? M - done : BH_OUT);
	}
}

#else /* SHAKE */

typedef struct {
	const uint8_t *pk_seed;
} NS(hctx);

typedef keccak_ctx NS(tctx);

static void NS(hctx_init)(NS(hctx) * c, const uint8_t *pk_seed) { c->pk_seed = pk_seed; }

static void NS(t_init)(const NS(hctx) * c, NS(tctx) * t, const uint8_t a[32])
{
	shake256_init(t);
	shake_absorb(t, c->pk_seed, N);
	shake_absorb(t, a, 32);
}

static void NS(t_update)(NS(tctx) * t, const uint8_t *in) { shake_absorb(t, in, N); }

static void NS(t_final)(NS(tctx) * t, uint8_t *out)
{
	shake_finalize(t);
	shake_squeeze(t, out, N);
}

/* f is F (and PRF): SHAKE256(PK.seed || ADRS || in, 8n). out may alias in. */
static void NS(f)(const NS(hctx) * c, uint8_t *out, const uint8_t a[32], const uint8_t *in)
{
	NS(tctx) t;
	NS(t_init)(c, &t, a);
	NS(t_update)(&t, in);
	NS(t_final)(&t, out);
}

static void NS(msg_update)(keccak_ctx *s, const struct NS(msg) * m)
{
	unsigned int i;
	for (i = 0; i < 4; i++)
		if (m->n[i] != 0)
			shake_absorb(s, m->p[i], m->n[i]);
}

/* prf_msg is SHAKE256(SK.prf || opt_rand || M', 8n). */
static void NS(prf_msg)(uint8_t *out, const uint8_t *sk_prf, const uint8_t *opt_rand,
			const struct NS(msg) * m)
{
	keccak_ctx s;
	shake256_init(&s);
	shake_absorb(&s, sk_prf, N);
	shake_absorb(&s, opt_rand, N);
	NS(msg_update)(&s, m);
	shake_finalize(&s);
	shake_squeeze(&s, out, N);
}

/* h_msg is SHAKE256(R || PK.seed || PK.root || M', 8m). */
static void NS(h_msg)(uint8_t out[M], const uint8_t *r, const uint8_t *pk_seed, const uint8_t *pk_root,
		      const struct NS(msg) * m)
{
	keccak_ctx s;
	shake256_init(&s);
	shake_absorb(&s, r, N);
	shake_absorb(&s, pk_seed, N);
	shake_absorb(&s, pk_root, N);
	NS(msg_update)(&s, m);
	shake_finalize(&s);
	shake_squeeze(&s, out, M);
}

#endif

/* h2 is H(PK.seed, ADRS, l || r), the same hash as T. out may alias l or r. */
static void NS(h2)(const NS(hctx) * c, uint8_t *out, const uint8_t a[32], const uint8_t *l,
		   const uint8_t *r)
{
	NS(tctx) t;
	NS(t_init)(c, &t, a);
	NS(t_update)(&t, l);
	NS(t_update)(&t, r);
	NS(t_final)(&t, out);
}

/* ---- WOTS+ (FIPS 205 5) ---- */

/* chain applies F steps times from position start (Alg. 5). */
static void NS(chain)(const NS(hctx) * c, uint8_t *x, unsigned int start, unsigned int steps,
		      uint8_t adrs[32])
{
	unsigned int j;
	for (j = start; j < start + steps; j++) {
		NS(set_w3)(adrs, j);
		NS(f)(c, x, adrs, x);
	}
}

/* digits writes the len base-16 digits of msg and its checksum (Alg. 7,
 * lines 1-9: csum << 4, toByte(csum, 2), base_2b(., 4, 3)). */
static void NS(digits)(uint8_t d[LEN], const uint8_t *msg)
{
	unsigned int i, csum = 0;
	for (i = 0; i < N; i++) {
		d[2 * i] = (uint8_t)(msg[i] >> 4);
		d[2 * i + 1] = (uint8_t)(msg[i] & 15);
	}
	for (i = 0; i < LEN1; i++)
		csum += 15u - d[i];
	csum <<= 4;
	d[LEN1] = (uint8_t)((csum >> 12) & 15);
	d[LEN1 + 1] = (uint8_t)((csum >> 8) & 15);
	d[LEN1 + 2] = (uint8_t)((csum >> 4) & 15);
}

/* wots_leaf computes the WOTS+ public key of the key pair adrs names (type
 * WOTS_HASH, key pair set) (Alg. 6); when sig is not NULL it also writes
 * the WOTS+ signature of the digits d (Alg. 7) on the way up the chains. */
static void NS(wots_leaf)(const NS(hctx) * c, uint8_t *pk, const uint8_t *sk_seed, uint8_t adrs[32],
			  uint8_t *sig, const uint8_t *d)
{
	uint8_t sk_adrs[32], x[N];
	NS(tctx) t;
	unsigned int i;
	uint32_t kp = NS(get32)(adrs + 20);
	memcpy(sk_adrs, adrs, 32);
	NS(set_type)(sk_adrs, WOTS_PRF);
	NS(set_keypair)(sk_adrs, kp);
	{
		uint8_t pk_adrs[32];
		memcpy(pk_adrs, adrs, 32);
		NS(set_type)(pk_adrs, WOTS_PK);
		NS(set_keypair)(pk_adrs, kp);
		NS(t_init)(c, &t, pk_adrs);
	}
	for (i = 0; i < LEN; i++) {
		NS(set_w2)(sk_adrs, i);
		NS(f)(c, x, sk_adrs, sk_seed);
		NS(set_w2)(adrs, i);
		if (sig != NULL) {
			NS(chain)(c, x, 0, d[i], adrs);
			memcpy(sig + i * N, x, N);
			NS(chain)(c, x, d[i], 15u - d[i], adrs);
		} else
			NS(chain)(c, x, 0, 15, adrs);
		NS(t_update)(&t, x);
	}
	NS(t_final)(&t, pk);
	memset(x, 0, sizeof x);
}

/* wots_pk_from_sig is Alg. 8. */
static void NS(wots_pk_from_sig)(const NS(hctx) * c, uint8_t *pk, const uint8_t *sig, const uint8_t *d,
				 uint8_t adrs[32])
{
	uint8_t pk_adrs[32], x[N];
	NS(tctx) t;
	unsigned int i;
	memcpy(pk_adrs, adrs, 32);
	NS(set_type)(pk_adrs, WOTS_PK);
	NS(set_keypair)(pk_adrs, NS(get32)(adrs + 20));
	NS(t_init)(c, &t, pk_adrs);
	for (i = 0; i < LEN; i++) {
		NS(set_w2)(adrs, i);
		memcpy(x, sig + i * N, N);
		NS(chain)(c, x, d[i], 15u - d[i], adrs);
		NS(t_update)(&t, x);
	}
	NS(t_final)(&t, pk);
}

/* ---- trees ---- */

/* fors_leaf writes the FORS leaf of global index gidx (adrs: type
 * FORS_TREE, key pair set) and, when sk is not NULL, its secret (Alg. 14
 * and Alg. 15 at z = 0). */
static void NS(fors_leaf)(const NS(hctx) * c, uint8_t *out, const uint8_t *sk_seed, uint8_t adrs[32],
			  uint32_t gidx, uint8_t *sk)
{
	uint8_t sk_adrs[32];
	memcpy(sk_adrs, adrs, 32);
	NS(set_type)(sk_adrs, FORS_PRF);
	NS(set_keypair)(sk_adrs, NS(get32)(adrs + 20));
	NS(set_w3)(sk_adrs, gidx);
	NS(f)(c, out, sk_adrs, sk_seed);
	if (sk != NULL)
		memcpy(sk, out, N);
	NS(set_w2)(adrs, 0);
	NS(set_w3)(adrs, gidx);
	NS(f)(c, out, adrs, out);
}

/* treehash computes the root of a tree of the given height: an XMSS tree
 * (fors = 0; adrs has the layer and tree address) or FORS tree number base
 * >> A (fors = 1; adrs has type FORS_TREE and the key pair). When auth is
 * not NULL it writes the authentication path of leaf idx there and, at that
 * leaf, the WOTS+ signature of digits d (XMSS) or the FORS secret (FORS)
 * into leafsig. The nodes are those of Alg. 9 and 15, computed bottom-up. */
static void NS(treehash)(const NS(hctx) * c, uint8_t *root, const uint8_t *sk_seed, uint8_t adrs[32],
			 unsigned int height, uint32_t base, uint32_t idx, uint8_t *auth, uint8_t *leafsig,
			 const uint8_t *d, int fors)
{
	uint8_t stack[(MAXH + 1) * N], hs[MAXH + 1];
	unsigned int sp = 0;
	uint32_t l;
	for (l = 0; l < (1u << height); l++) {
		uint8_t *top = stack + sp * N;
		uint8_t *ls = (auth != NULL && l == idx) ? leafsig : NULL;
		if (fors)
			NS(fors_leaf)(c, top, sk_seed, adrs, base + l, ls);
		else {
			NS(set_type)(adrs, WOTS_HASH);
			NS(set_keypair)(adrs, l);
			NS(wots_leaf)(c, top, sk_seed, adrs, ls, d);
		}
		hs[sp++] = 0;
		if (auth != NULL && (l ^ 1u) == idx)
			memcpy(auth, top, N);
		while (sp >= 2 && hs[sp - 1] == hs[sp - 2]) {
			unsigned int z = hs[sp - 1] + 1u;
			if (!fors)
				NS(set_type)(adrs, TREE);
			NS(set_w2)(adrs, z);
			NS(set_w3)(adrs, (base + l) >> z);
			sp--;
			NS(h2)(c, stack + (sp - 1) * N, adrs, stack + (sp - 1) * N, stack + sp * N);
			hs[sp - 1] = (uint8_t)z;
			if (auth != NULL && z < height && ((l >> z) ^ 1u) == (idx >> z))
				memcpy(auth + z * N, stack + (sp - 1) * N, N);
		}
	}
	memcpy(root, stack, N);
}

/* auth_path climbs from node (at height 0, index gidx) to the root along
 * the authentication path (Alg. 11 lines 6-15, Alg. 17 lines 9-19); adrs
 * has the type set. */
static void NS(auth_path)(const NS(hctx) * c, uint8_t *node, uint8_t adrs[32], uint32_t gidx,
			  const uint8_t *auth, unsigned int height)
{
	unsigned int k;
	for (k = 0; k < height; k++) {
		NS(set_w2)(adrs, k + 1);
		NS(set_w3)(adrs, gidx >> (k + 1));
		if (((gidx >> k) & 1) == 0)
			NS(h2)(c, node, adrs, node, auth + k * N);
		else
			NS(h2)(c, node, adrs, auth + k * N, node);
	}
}

/* xmss_pk_from_sig is Alg. 11. */
static void NS(xmss_pk_from_sig)(const NS(hctx) * c, uint8_t *root, uint32_t idx, const uint8_t *sig,
				 const uint8_t *msg, uint8_t adrs[32])
{
	uint8_t d[LEN];
	NS(digits)(d, msg);
	NS(set_type)(adrs, WOTS_HASH);
	NS(set_keypair)(adrs, idx);
	NS(wots_pk_from_sig)(c, root, sig, d, adrs);
	NS(set_type)(adrs, TREE);
	NS(auth_path)(c, root, adrs, idx, sig + LEN * N, HP);
}

/* bits reads the i-th b-bit big-endian digit of x (base_2b, Alg. 4). */
static uint32_t NS(bits)(const uint8_t *x, unsigned int i, unsigned int b)
{
	uint32_t v = 0;
	unsigned int k, p;
	for (k = 0; k < b; k++) {
		p = i * b + k;
		v = (v << 1) | (uint32_t)((x[p >> 3] >> (7 - (p & 7))) & 1);
	}
	return v;
}

/* fors_sign is Alg. 16; it also returns the FORS public key (Alg. 17's
 * result), from the roots the trees give. */
static void NS(fors_sign)(const NS(hctx) * c, uint8_t *sig, uint8_t *pk, const uint8_t *md,
			  const uint8_t *sk_seed, uint8_t adrs[32])
{
	uint8_t roots_adrs[32], root[N];
	NS(tctx) t;
	unsigned int i;
	memcpy(roots_adrs, adrs, 32);
	NS(set_type)(roots_adrs, FORS_ROOTS);
	NS(set_keypair)(roots_adrs, NS(get32)(adrs + 20));
	NS(t_init)(c, &t, roots_adrs);
	for (i = 0; i < K; i++) {
		uint8_t *s = sig + i * (A + 1) * N;
		NS(treehash)(c, root, sk_seed, adrs, A, (uint32_t)i << A, NS(bits)(md, i, A), s + N, s, NULL, 1);
		NS(t_update)(&t, root);
	}
	NS(t_final)(&t, pk);
}

/* fors_pk_from_sig is Alg. 17. */
static void NS(fors_pk_from_sig)(const NS(hctx) * c, uint8_t *pk, const uint8_t *sig, const uint8_t *md,
				 uint8_t adrs[32])
{
	uint8_t roots_adrs[32], node[N];
	NS(tctx) t;
	unsigned int i;
	memcpy(roots_adrs, adrs, 32);
	NS(set_type)(roots_adrs, FORS_ROOTS);
	NS(set_keypair)(roots_adrs, NS(get32)(adrs + 20));
	NS(t_init)(c, &t, roots_adrs);
	for (i = 0; i < K; i++) {
		const uint8_t *s = sig + i * (A + 1) * N;
		uint32_t gidx = ((uint32_t)i << A) + NS(bits)(md, i, A);
		NS(set_w2)(adrs, 0);
		NS(set_w3)(adrs, gidx);
		NS(f)(c, node, adrs, s);
		NS(auth_path)(c, node, adrs, gidx, s + N, A);
		NS(t_update)(&t, node);
	}
	NS(t_final)(&t, pk);
}

/* ht_sign is Alg. 12: each layer's tree is built once, giving its XMSS
 * signature and its root, the next layer's message. */
static void NS(ht_sign)(const NS(hctx) * c, uint8_t *sig, const uint8_t *msg, const uint8_t *sk_seed,
			uint64_t idx_tree, uint32_t idx_leaf)
{
	uint8_t adrs[32], root[N], d[LEN];
	unsigned int j;
	memset(adrs, 0, sizeof adrs);
	memcpy(root, msg, N);
	for (j = 0; j < D; j++) {
		uint8_t *s = sig + j * XMSS_BYTES;
		NS(set_layer)(adrs, j);
		NS(set_tree)(adrs, idx_tree);
		NS(digits)(d, root);
		NS(treehash)(c, root, sk_seed, adrs, HP, 0, idx_leaf, s + LEN * N, s, d, 0);
		idx_leaf = (uint32_t)(idx_tree & ((1u << HP) - 1));
		idx_tree >>= HP;
	}
}

/* ht_verify is Alg. 13; it returns 0 when the root is PK.root. */
static int NS(ht_verify)(const NS(hctx) * c, const uint8_t *msg, const uint8_t *sig, uint64_t idx_tree,
			 uint32_t idx_leaf, const uint8_t *pk_root)
{
	uint8_t adrs[32], node[N];
	unsigned int j;
	memset(adrs, 0, sizeof adrs);
	memcpy(node, msg, N);
	for (j = 0; j < D; j++) {
		NS(set_layer)(adrs, j);
		NS(set_tree)(adrs, idx_tree);
		NS(xmss_pk_from_sig)(c, node, idx_leaf, sig + j * XMSS_BYTES, node, adrs);
		idx_leaf = (uint32_t)(idx_tree & ((1u << HP) - 1));
		idx_tree >>= HP;
	}
	return memcmp(node, pk_root, N) == 0 ? 0 : -1;
}

/* split parses H_msg's digest into md, idx_tree and idx_leaf (Alg. 19
 * lines 7-12). */
static void NS(split)(const uint8_t digest[M], uint64_t *idx_tree, uint32_t *idx_leaf)
{
	uint64_t t = 0;
	uint32_t l = 0;
	unsigned int i;
	for (i = 0; i < TREE_BYTES; i++)
		t = t << 8 | digest[MD_BYTES + i];
	for (i = 0; i < LEAF_BYTES; i++)
		l = l << 8 | digest[MD_BYTES + TREE_BYTES + i];
#if TREE_BITS < 64
	t &= ((uint64_t)1 << TREE_BITS) - 1;
#endif
	*idx_tree = t;
	*idx_leaf = l & ((1u << HP) - 1);
}

/* ---- SLH-DSA (FIPS 205 9 and 10) ---- */

int NS(keygen_internal)(uint8_t *pk, uint8_t *sk, const uint8_t *sk_seed, const uint8_t *sk_prf,
			const uint8_t *pk_seed)
{
	NS(hctx) c;
	uint8_t adrs[32];
	memmove(sk + 2 * N, pk_seed, N);
	memmove(sk, sk_seed, N);
	memmove(sk + N, sk_prf, N);
	NS(hctx_init)(&c, sk + 2 * N);
	memset(adrs, 0, sizeof adrs);
	NS(set_layer)(adrs, D - 1);
	NS(treehash)(&c, sk + 3 * N, sk, adrs, HP, 0, 0, NULL, NULL, NULL, 0);
	memcpy(pk, sk + 2 * N, 2 * N);
	return 0;
}

static int NS(sign_msg)(uint8_t *sig, const uint8_t *sk, const struct NS(msg) * m, const uint8_t *addrnd)
{
	NS(hctx) c;
	uint8_t digest[M], adrs[32], pk_fors[N];
	uint64_t idx_tree;
	uint32_t idx_leaf;
	const uint8_t *sk_seed = sk, *sk_prf = sk + N, *pk_seed = sk + 2 * N, *pk_root = sk + 3 * N;
	NS(hctx_init)(&c, pk_seed);
	NS(prf_msg)(sig, sk_prf, addrnd != NULL ? addrnd : pk_seed, m);
	NS(h_msg)(digest, sig, pk_seed, pk_root, m);
	NS(split)(digest, &idx_tree, &idx_leaf);
	memset(adrs, 0, sizeof adrs);
	NS(set_tree)(adrs, idx_tree);
	NS(set_type)(adrs, FORS_TREE);
	NS(set_keypair)(adrs, idx_leaf);
	NS(fors_sign)(&c, sig + N, pk_fors, digest, sk_seed, adrs);
	NS(ht_sign)(&c, sig + N + FORS_BYTES, pk_fors, sk_seed, idx_tree, idx_leaf);
	return 0;
}

static int NS(verify_msg)(const uint8_t *sig, const uint8_t *pk, const struct NS(msg) * m)
{
	NS(hctx) c;
	uint8_t digest[M], adrs[32], pk_fors[N];
	uint64_t idx_tree;
	uint32_t idx_leaf;
	NS(hctx_init)(&c, pk);
	NS(h_msg)(digest, sig, pk, pk + N, m);
	NS(split)(digest, &idx_tree, &idx_leaf);
	memset(adrs, 0, sizeof adrs);
	NS(set_tree)(adrs, idx_tree);
	NS(set_type)(adrs, FORS_TREE);
	NS(set_keypair)(adrs, idx_leaf);
	NS(fors_pk_from_sig)(&c, pk_fors, sig + N, digest, adrs);
	return NS(ht_verify)(&c, pk_fors, sig + N + FORS_BYTES, idx_tree, idx_leaf, pk + N);
}

/* ctx_msg builds M' = toByte(pre, 1) || toByte(|ctx|, 1) || ctx || oid || m
 * as pieces (Alg. 22 and 23); it returns -1 if ctx is over 255 bytes. */
static int NS(ctx_msg)(struct NS(msg) * out, uint8_t hdr[2], uint8_t pre, const uint8_t *ctx,
		       size_t ctxlen, const uint8_t *oid, size_t oidlen, const uint8_t *m, size_t mlen)
{
	if (ctxlen > 255)
		return -1;
	hdr[0] = pre;
	hdr[1] = (uint8_t)ctxlen;
	out->p[0] = hdr;
	out->n[0] = 2;
	out->p[1] = ctx;
	out->n[1] = ctxlen;
	out->p[2] = oid;
	out->n[2] = oidlen;
	out->p[3] = m;
	out->n[3] = mlen;
	return 0;
}

int NS(sign_internal)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *addrnd)
{
	struct NS(msg) mm = {{m, NULL, NULL, NULL}, {mlen, 0, 0, 0}};
	return NS(sign_msg)(sig, sk, &mm, addrnd);
}

int NS(sign)(uint8_t *sig, const uint8_t *sk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
	     size_t ctxlen, const uint8_t *addrnd)
{
	struct NS(msg) mm;
	uint8_t hdr[2];
	if (NS(ctx_msg)(&mm, hdr, 0, ctx, ctxlen, NULL, 0, m, mlen) != 0)
		return -1;
	return NS(sign_msg)(sig, sk, &mm, addrnd);
}

int NS(sign_prehash)(uint8_t *sig, const uint8_t *sk, const uint8_t *ph, size_t phlen, const uint8_t *oid,
		     size_t oidlen, const uint8_t *ctx, size_t ctxlen, const uint8_t *addrnd)
{
	struct NS(msg) mm;
	uint8_t hdr[2];
	if (NS(ctx_msg)(&mm, hdr, 1, ctx, ctxlen, oid, oidlen, ph, phlen) != 0)
		return -1;
	return NS(sign_msg)(sig, sk, &mm, addrnd);
}

int NS(verify_internal)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen)
{
	struct NS(msg) mm = {{m, NULL, NULL, NULL}, {mlen, 0, 0, 0}};
	return NS(verify_msg)(sig, pk, &mm);
}

int NS(verify)(const uint8_t *sig, const uint8_t *pk, const uint8_t *m, size_t mlen, const uint8_t *ctx,
	       size_t ctxlen)
{
	struct NS(msg) mm;
	uint8_t hdr[2];
	if (NS(ctx_msg)(&mm, hdr, 0, ctx, ctxlen, NULL, 0, m, mlen) != 0)
		return -1;
	return NS(verify_msg)(sig, pk, &mm);
}

int NS(verify_prehash)(const uint8_t *sig, const uint8_t *pk, const uint8_t *ph, size_t phlen,
		       const uint8_t *oid, size_t oidlen, const uint8_t *ctx, size_t ctxlen)
{
	struct NS(msg) mm;
	uint8_t hdr[2];
	if (NS(ctx_msg)(&mm, hdr, 1, ctx, ctxlen, oid, oidlen, ph, phlen) != 0)
		return -1;
	return NS(verify_msg)(sig, pk, &mm);
}
