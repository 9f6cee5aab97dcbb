/* A minimal DER and X.509 reader; see x509.h. */
#include "x509.h"

#include "../pqmem.h"

/* der: a cursor over bytes still to read. */
struct der {
	const uint8_t *p;
	size_t n;
};

/* der_next reads one TLV: its tag, its contents (val) and, when whole is not NULL, the TLV with
 * tag and length. Only low tag numbers and definite, minimal lengths up to 0xffff are DER here. */
static int der_next(struct der *d, uint8_t *tag, struct x509_span *val, struct x509_span *whole)
{
	size_t hdr = 2, len;
	if (d->n < 2 || (d->p[0] & 0x1f) == 0x1f)
		return -1;
	len = d->p[1];
	if (len == 0x81) {
		if (d->n < 3 || d->p[2] < 0x80)
			return -1;
		len = d->p[2];
		hdr = 3;
	} else if (len == 0x82) {
		if (d->n < 4 || d->p[2] == 0)
			return -1;
		len = (size_t)d->p[2] << 8 | d->p[3];
		hdr = 4;
	} else if (len >= 0x80) {
		return -1;
	}
	if (len > d->n - hdr)
		return -1;
	*tag = d->p[0];
	val->p = d->p + hdr;
	val->n = len;
	if (whole != NULL) {
		whole->p = d->p;
		whole->n = hdr + len;
	}
	d->p += hdr + len;
	d->n -= hdr + len;
	return 0;
}

/* der_expect reads one TLV that must have tag, and returns its contents as a cursor too. */
static int der_expect(struct der *d, uint8_t tag, struct x509_span *val, struct der *inner)
{
	uint8_t t;
	struct x509_span v;
	if (der_next(d, &t, &v, NULL) != 0 || t != tag)
		return -1;
	if (val != NULL)
		*val = v;
	if (inner != NULL) {
		inner->p = v.p;
		inner->n = v.n;
	}
	return 0;
}

static int der_peek(const struct der *d)
{
	return d->n > 0 ? d->p[0] : -1;
}

static int span_eq(struct x509_span a, const uint8_t *b, size_t n)
{
	return a.n == n && memcmp(a.p, b, n) == 0;
}

/* id-ml-dsa-44/65/87: 2.16.840.1.101.3.4.3.17/18/19 (RFC 9881). */
static const uint8_t oid_mldsa[8] = {0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03};
/* id-Ed25519 1.3.101.112; id-ecPublicKey 1.2.840.10045.2.1 and prime256v1 1.2.840.10045.3.1.7;
 * ecdsa-with-SHA256 1.2.840.10045.4.3.2; rsaEncryption 1.2.840.113549.1.1.1 and
 * sha256WithRSAEncryption 1.2.840.113549.1.1.11. */
static const uint8_t oid_ed25519[3] = {0x2b, 0x65, 0x70};
static const uint8_t oid_ec_pub[7] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01};
static const uint8_t der_p256[10] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
static const uint8_t oid_ecdsa_sha256[8] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02};
static const uint8_t oid_rsa_enc[9] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01};
static const uint8_t oid_rsa_sha256[9] = {0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b};
static const uint8_t der_null[2] = {0x05, 0x00};

/* alg_id reads an AlgorithmIdentifier: its OID, and which algorithm it names, as a key's
 * algorithm (key != 0) or a signature's. A known algorithm's parameters must be as x509.h says
 * (X509_EALG otherwise); an EC key on another curve is X509_ALG_OTHER. */
static int alg_id(struct x509_span seq, struct x509_span *oid, enum x509_alg *alg, int key)
{
	struct der d = {seq.p, seq.n};
	struct x509_span params;
	*alg = X509_ALG_OTHER;
	if (der_expect(&d, 0x06, oid, NULL) != 0 || oid->n == 0)
		return X509_EDER;
	params.p = d.p;
	params.n = d.n;
	if (oid->n == 9 && memcmp(oid->p, oid_mldsa, 8) == 0 && oid->p[8] >= 17 && oid->p[8] <= 19) {
		static const enum x509_alg sets[3] = {X509_ALG_MLDSA44, X509_ALG_MLDSA65, X509_ALG_MLDSA87};
		if (d.n != 0)
			return X509_EALG;
		*alg = sets[oid->p[8] - 17];
	} else if (span_eq(*oid, oid_ed25519, sizeof oid_ed25519)) {
		if (d.n != 0)
			return X509_EALG;
		*alg = X509_ALG_ED25519;
	} else if (key && span_eq(*oid, oid_ec_pub, sizeof oid_ec_pub)) {
		uint8_t tag;
		struct x509_span v;
		if (der_next(&d, &tag, &v, NULL) != 0 || d.n != 0)
			return X509_EALG; /* ECParameters: one namedCurve OID (RFC 5480) */
		if (span_eq(params, der_p256, sizeof der_p256))
			*alg = X509_ALG_P256;
	} else if (!key && span_eq(*oid, oid_ecdsa_sha256, sizeof oid_ecdsa_sha256)) {
		if (d.n != 0)
			return X509_EALG;
		*alg = X509_ALG_P256;
	} else if (span_eq(*oid, key ? oid_rsa_enc : oid_rsa_sha256, sizeof oid_rsa_enc)) {
		if (!span_eq(params, der_null, sizeof der_null))
			return X509_EALG;
		*alg = X509_ALG_RSA;
	}
	return X509_OK;
}

/* bit_string reads a BIT STRING's bytes, requiring no unused bits. */
static int bit_string(struct der *d, struct x509_span *bits)
{
	struct x509_span v;
	if (der_expect(d, 0x03, &v, NULL) != 0 || v.n < 1 || v.p[0] != 0)
		return -1;
	bits->p = v.p + 1;
	bits->n = v.n - 1;
	return 0;
}

static int digits(const uint8_t *p, int n, int *out)
{
	int i, v = 0;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*out = v;
	return 0;
}

/* days_from_civil: days since 1970-01-01 of a proleptic Gregorian date, years 0 to 9999, in
 * 32-bit arithmetic (no 64-bit division for a board's libgcc to supply). */
static int32_t days_from_civil(int32_t y, int32_t m, int32_t d)
{
	int32_t era, yoe, doy, doe;
	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* x509_time reads a UTCTime (YYMMDDHHMMSSZ, 1950-2049) or GeneralizedTime (YYYYMMDDHHMMSSZ). */
static int x509_time(struct der *d, int64_t *out)
{
	static const uint8_t mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	uint8_t tag;
	struct x509_span v;
	int y, mo, dd, h, mi, s, yl;
	if (der_next(d, &tag, &v, NULL) != 0)
		return X509_EDER;
	if (tag == 0x17 && v.n == 13)
		yl = 2;
	else if (tag == 0x18 && v.n == 15)
		yl = 4;
	else
		return X509_ETIME;
	if (v.p[v.n - 1] != 'Z' || digits(v.p, yl, &y) != 0 || digits(v.p + yl, 2, &mo) != 0 ||
	    digits(v.p + yl + 2, 2, &dd) != 0 || digits(v.p + yl + 4, 2, &h) != 0 ||
	    digits(v.p + yl + 6, 2, &mi) != 0 || digits(v.p + yl + 8, 2, &s) != 0)
		return X509_ETIME;
	if (yl == 2)
		y += y < 50 ? 2000 : 1900;
	if (mo < 1 || mo > 12 || dd < 1 || dd > mdays[mo - 1] || h > 23 || mi > 59 || s > 59)
		return X509_ETIME;
	if (mo == 2 && dd == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return X509_ETIME;
	*out = (int64_t)days_from_civil(y, mo, dd) * 86400 + h * 3600 + mi * 60 + s;
	return X509_OK;
}

/* general_names checks a SAN's GeneralNames: a SEQUENCE of context-tagged names, each dNSName
 * (tag 0x82) of printable ASCII. */
static int general_names(struct x509_cert *c, struct x509_span ext)
{
	struct der d = {ext.p, ext.n}, names;
	struct x509_span v;
	uint8_t tag;
	if (der_expect(&d, 0x30, &v, &names) != 0 || d.n != 0)
		return X509_EEXT;
	c->san = v;
	c->has_san = 1;
	while (names.n > 0) {
		size_t i;
		if (der_next(&names, &tag, &v, NULL) != 0 || (tag & 0xc0) != 0x80)
			return X509_EEXT;
		if (tag != 0x82)
			continue;
		if (v.n == 0)
			return X509_EEXT;
		for (i = 0; i < v.n; i++)
			if (v.p[i] < 0x21 || v.p[i] > 0x7e)
				return X509_EEXT;
	}
	return X509_OK;
}

/* basic_constraints reads cA (pathLenConstraint is not used: chains here are CA -> leaf). */
static int basic_constraints(struct x509_cert *c, struct x509_span ext)
{
	struct der d = {ext.p, ext.n}, bc;
	struct x509_span v;
	if (der_expect(&d, 0x30, NULL, &bc) != 0 || d.n != 0)
		return X509_EEXT;
	if (der_peek(&bc) == 0x01) {
		if (der_expect(&bc, 0x01, &v, NULL) != 0 || v.n != 1 || v.p[0] != 0xff)
			return X509_EEXT; /* DER: a FALSE default is omitted */
		c->is_ca = 1;
	}
	if (der_peek(&bc) == 0x02 && der_expect(&bc, 0x02, &v, NULL) != 0)
		return X509_EEXT;
	return bc.n == 0 ? X509_OK : X509_EEXT;
}

static int key_usage(struct x509_cert *c, struct x509_span ext)
{
	struct der d = {ext.p, ext.n};
	struct x509_span v;
	size_t i;
	if (der_expect(&d, 0x03, &v, NULL) != 0 || d.n != 0 || v.n < 2 || v.n > 3 || v.p[0] > 7)
		return X509_EEXT;
	c->key_usage = 0;
	for (i = 0; i < 8 * (v.n - 1); i++)
		if (v.p[1 + i / 8] & (0x80 >> (i % 8)))
			c->key_usage |= 1u << i;
	c->has_key_usage = 1;
	return X509_OK;
}

/* extension reads one Extension; seen holds a bit per known extension (bit id - SKI), for
 * duplicates. */
static int extension(struct x509_cert *c, struct x509_span seq, uint32_t *seen)
{
	/* id-ce 2.5.29.n: 55 1D n */
	enum { SKI = 14, KU = 15, SAN = 17, BC = 19, AKI = 35, EKU = 37 };
	struct der d = {seq.p, seq.n};
	struct x509_span oid, crit, val;
	int critical = 0, id = -1;
	if (der_expect(&d, 0x06, &oid, NULL) != 0)
		return X509_EEXT;
	if (der_peek(&d) == 0x01) {
		if (der_expect(&d, 0x01, &crit, NULL) != 0 || crit.n != 1 || crit.p[0] != 0xff)
			return X509_EEXT;
		critical = 1;
	}
	if (der_expect(&d, 0x04, &val, NULL) != 0 || d.n != 0)
		return X509_EEXT;
	if (oid.n == 3 && oid.p[0] == 0x55 && oid.p[1] == 0x1d)
		id = oid.p[2];
	switch (id) {
	case SKI: case KU: case SAN: case BC: case AKI: case EKU:
		if (*seen & (1u << (id - SKI)))
			return X509_EEXT;
		*seen |= 1u << (id - SKI);
		break;
	default:
		return critical ? X509_ECRITICAL : X509_OK;
	}
	if (id == SAN)
		return general_names(c, val);
	if (id == BC)
		return basic_constraints(c, val);
	if (id == KU)
		return key_usage(c, val);
	return X509_OK; /* SKI, AKI, EKU: known, not used by the client */
}

static int extensions(struct x509_cert *c, struct der *tbs)
{
	struct der outer, list;
	struct x509_span e;
	uint32_t seen = 0;
	int r;
	if (der_expect(tbs, 0xa3, NULL, &outer) != 0 || der_expect(&outer, 0x30, NULL, &list) != 0 ||
	    outer.n != 0 || list.n == 0)
		return X509_EDER;
	while (list.n > 0) {
		if (der_expect(&list, 0x30, &e, NULL) != 0)
			return X509_EDER;
		if ((r = extension(c, e, &seen)) != X509_OK)
			return r;
	}
	return X509_OK;
}

static int spki(struct x509_cert *c, struct der *tbs)
{
	static const size_t pklen[3] = {1312, 1952, 2592};
	struct der s;
	struct x509_span alg;
	int r;
	if (der_expect(tbs, 0x30, NULL, &s) != 0 || der_expect(&s, 0x30, &alg, NULL) != 0)
		return X509_EDER;
	if ((r = alg_id(alg, &c->spki_oid, &c->spki_alg, 1)) != X509_OK)
		return r;
	if (bit_string(&s, &c->pubkey) != 0 || s.n != 0)
		return X509_EDER;
	switch (c->spki_alg) {
	case X509_ALG_MLDSA44:
	case X509_ALG_MLDSA65:
	case X509_ALG_MLDSA87: {
		int i = c->spki_alg == X509_ALG_MLDSA44 ? 0 : c->spki_alg == X509_ALG_MLDSA65 ? 1 : 2;
		return c->pubkey.n == pklen[i] ? X509_OK : X509_EALG;
	}
	case X509_ALG_ED25519:
		return c->pubkey.n == 32 ? X509_OK : X509_EALG;
	case X509_ALG_P256:
		return c->pubkey.n == 65 && c->pubkey.p[0] == 0x04 ? X509_OK : X509_EALG;
	case X509_ALG_RSA:
		return c->pubkey.n > 0 ? X509_OK : X509_EALG;
	default:
		return X509_OK;
	}
}

/* tbs_certificate reads the TBSCertificate's fields; sigalg is the outer AlgorithmIdentifier. */
static int tbs_certificate(struct x509_cert *c, struct der *t, struct x509_span sigalg)
{
	struct der ver, val;
	struct x509_span v, alg;
	int r, v3 = 0;
	if (der_peek(t) == 0xa0) {
		if (der_expect(t, 0xa0, NULL, &ver) != 0 || der_expect(&ver, 0x02, &v, NULL) != 0 || ver.n != 0)
			return X509_EDER;
		if (v.n != 1 || v.p[0] != 2)
			return X509_EVERSION;
		v3 = 1;
	}
	if (der_expect(t, 0x02, &c->serial, NULL) != 0 || c->serial.n == 0 || c->serial.n > 21)
		return X509_EDER;
	if (der_next(t, (uint8_t[1]){0}, &v, &alg) != 0 || alg.p[0] != 0x30)
		return X509_EDER;
	if (!span_eq(alg, sigalg.p, sigalg.n))
		return X509_EALG;
	if (der_next(t, (uint8_t[1]){0}, &v, &c->issuer) != 0 || c->issuer.p[0] != 0x30)
		return X509_EDER;
	if (der_expect(t, 0x30, NULL, &val) != 0)
		return X509_EDER;
	if ((r = x509_time(&val, &c->not_before)) != X509_OK || (r = x509_time(&val, &c->not_after)) != X509_OK)
		return r;
	if (val.n != 0)
		return X509_EDER;
	if (der_next(t, (uint8_t[1]){0}, &v, &c->subject) != 0 || c->subject.p[0] != 0x30)
		return X509_EDER;
	if ((r = spki(c, t)) != X509_OK)
		return r;
	if (der_peek(t) == 0x81 && (!v3 || der_expect(t, 0x81, NULL, NULL) != 0))
		return X509_EDER;
	if (der_peek(t) == 0x82 && (!v3 || der_expect(t, 0x82, NULL, NULL) != 0))
		return X509_EDER;
	if (der_peek(t) == 0xa3) {
		if (!v3)
			return X509_EVERSION;
		if ((r = extensions(c, t)) != X509_OK)
			return r;
	}
	return t->n == 0 ? X509_OK : X509_EDER;
}

int x509_parse(struct x509_cert *c, const uint8_t *der, size_t len)
{
	struct der all = {der, len}, cert, tbs;
	struct x509_span v, sigalg, sigalg_seq;
	uint8_t tag;
	enum x509_alg alg;
	int r;
	memset(c, 0, sizeof *c);
	if (len > X509_MAX_DER)
		return X509_ESIZE;
	if (der_expect(&all, 0x30, NULL, &cert) != 0 || all.n != 0)
		return X509_EDER;
	if (der_next(&cert, &tag, &v, &c->tbs) != 0 || tag != 0x30)
		return X509_EDER;
	tbs.p = v.p;
	tbs.n = v.n;
	if (der_next(&cert, &tag, &sigalg_seq, &sigalg) != 0 || tag != 0x30)
		return X509_EDER;
	if ((r = alg_id(sigalg_seq, &c->sig_oid, &alg, 0)) != X509_OK)
		return r;
	c->sig_alg = alg;
	if (bit_string(&cert, &c->sig) != 0 || cert.n != 0)
		return X509_EDER;
	return tbs_certificate(c, &tbs, sigalg);
}

int x509_san_dns(const struct x509_cert *c, size_t i, struct x509_span *name)
{
	struct der d = {c->san.p, c->san.n};
	struct x509_span v;
	uint8_t tag;
	while (d.n > 0) {
		if (der_next(&d, &tag, &v, NULL) != 0)
			return -1;
		if (tag != 0x82)
			continue;
		if (i-- == 0) {
			*name = v;
			return 0;
		}
	}
	return -1;
}

static uint8_t lower(uint8_t ch)
{
	return ch >= 'A' && ch <= 'Z' ? (uint8_t)(ch + 32) : ch;
}

int x509_match_host(const struct x509_cert *c, const char *host, size_t len)
{
	struct x509_span name;
	size_t i, j;
	if (len == 0)
		return 0;
	for (i = 0; x509_san_dns(c, i, &name) == 0; i++) {
		if (name.n != len)
			continue;
		for (j = 0; j < len && lower(name.p[j]) == lower((uint8_t)host[j]); j++)
			;
		if (j == len)
			return 1;
	}
	return 0;
}

int x509_valid_at(const struct x509_cert *c, int64_t now)
{
	if (now < c->not_before)
		return -1;
	return now > c->not_after ? 1 : 0;
}
