package firmware

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// x509Fields runs katcli's x509 command and returns its NAME=VALUE fields, or the refusal code
// under "refused".
func x509Fields(t *testing.T, k *katcli, der []byte, now int64, host string) map[string]string {
	t.Helper()
	out := k.do(t, "x509", hex.EncodeToString(der), strconv.FormatInt(now, 10), hex.EncodeToString([]byte(host)))
	f := strings.Fields(out)
	m := map[string]string{}
	if len(f) == 2 && f[0] == "refused" {
		m["refused"] = f[1]
		return m
	}
	if len(f) == 0 || f[0] != "ok" {
		t.Fatalf("katcli x509: %q", out)
	}
	for _, kv := range f[1:] {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("katcli x509: field %q", kv)
		}
		if val == "-" {
			val = ""
		}
		m[name] = strings.ToLower(val)
	}
	return m
}

// certOuter is the certificate's outer structure, read with encoding/asn1 (independently of
// both crypto/x509 and the C) for the algorithm identifiers crypto/x509 does not expose as OIDs.
type certOuter struct {
	TBS    asn1.RawValue
	SigAlg pkix.AlgorithmIdentifier
	Sig    asn1.BitString
}

type spkiOuter struct {
	Alg pkix.AlgorithmIdentifier
	Key asn1.BitString
}

func oidContents(t *testing.T, oid asn1.ObjectIdentifier) string {
	t.Helper()
	der, err := asn1.Marshal(oid)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(der[2:])
}

// checkCertFields compares the C reader's fields of der with crypto/x509's and encoding/asn1's.
func checkCertFields(t *testing.T, k *katcli, der []byte, wantAlg int) {
	t.Helper()
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	var outer certOuter
	var spki spkiOuter
	if _, err := asn1.Unmarshal(der, &outer); err != nil {
		t.Fatal(err)
	}
	if _, err := asn1.Unmarshal(cert.RawSubjectPublicKeyInfo, &spki); err != nil {
		t.Fatal(err)
	}
	host := "none.invalid"
	if len(cert.DNSNames) > 0 {
		host = cert.DNSNames[0]
	}
	mid := cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 2).Unix()
	m := x509Fields(t, k, der, mid, host)
	if m["refused"] != "" {
		t.Fatalf("C refused a crypto/x509 certificate: %s", m["refused"])
	}
	hx := hex.EncodeToString
	ku := int64(cert.KeyUsage)
	if cert.KeyUsage == 0 {
		ku = -1
	}
	var sans []string
	for _, n := range cert.DNSNames {
		sans = append(sans, hx([]byte(n)))
	}
	want := map[string]string{
		"tbs": hx(cert.RawTBSCertificate), "sig": hx(cert.Signature),
		"sigoid": oidContents(t, outer.SigAlg.Algorithm), "sigalg": fmt.Sprint(wantAlg),
		"serial": hx(serialContents(cert.SerialNumber)), "issuer": hx(cert.RawIssuer), "subject": hx(cert.RawSubject),
		"notbefore": fmt.Sprint(cert.NotBefore.Unix()), "notafter": fmt.Sprint(cert.NotAfter.Unix()),
		"spkioid": oidContents(t, spki.Alg.Algorithm), "spkialg": fmt.Sprint(wantAlg), "pk": hx(spki.Key.Bytes),
		"ca": map[bool]string{true: "1", false: "0"}[cert.IsCA], "ku": fmt.Sprint(ku),
		"san": strings.Join(sans, ","), "host": map[bool]string{true: "1", false: "0"}[len(cert.DNSNames) > 0], "valid": "0",
	}
	for name, w := range want {
		if m[name] != w {
			g := m[name]
			if len(g) > 80 {
				g = g[:80] + "..."
			}
			t.Errorf("field %s: C %s, want %.80s", name, g, w)
		}
	}
	if len(m) != len(want) {
		t.Errorf("C printed %d fields, want %d", len(m), len(want))
	}
	// Validity, inclusive at both ends, against Go's times.
	for _, c := range []struct {
		now  int64
		want string
	}{
		{cert.NotBefore.Unix() - 1, "-1"}, {cert.NotBefore.Unix(), "0"}, {cert.NotAfter.Unix(), "0"}, {cert.NotAfter.Unix() + 1, "1"},
	} {
		if got := x509Fields(t, k, der, c.now, host)["valid"]; got != c.want {
			t.Errorf("valid at %d = %s, want %s", c.now, got, c.want)
		}
	}
	// Host names, against crypto/x509's VerifyHostname (no wildcards in these certificates).
	for _, h := range []string{host, strings.ToUpper(host), host + ".", "x" + host, host[1:], "other.example", ""} {
		want := "0"
		if h != "" && !strings.HasSuffix(h, ".") && cert.VerifyHostname(h) == nil {
			want = "1"
		}
		if got := x509Fields(t, k, der, mid, h)["host"]; got != want {
			t.Errorf("host %q: C %s, want %s", h, got, want)
		}
	}
}

// serialContents is a positive serial number's DER INTEGER contents.
func serialContents(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return b
}

// TestX509ReaderMatchesGo makes the project's chains (tls13/tlscert: a CA and leaf per
// signature scheme: ML-DSA-44/65/87, Ed25519, ECDSA P-256 with SHA-256, RSA-2048 with PKCS #1
// v1.5 certificate signatures) and compares every field the C reader gives with crypto/x509's,
// the algorithm x509.h names included, validity and host checks too.
func TestX509ReaderMatchesGo(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		scheme tls13.SignatureScheme
		alg    int
	}{{tls13.MLDSA44, 44}, {tls13.MLDSA65, 65}, {tls13.MLDSA87, 87}, {tls13.Ed25519, 1}, {tls13.ECDSAP256SHA256, 2}, {tls13.RSAPSSRSAESHA256, 3}} {
		t.Run(c.scheme.String(), func(t *testing.T) {
			ch, err := tlscert.New(c.scheme, "board.pqrepro.test", now)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("leaf", func(t *testing.T) { checkCertFields(t, k, ch.LeafDER, c.alg) })
			t.Run("ca", func(t *testing.T) { checkCertFields(t, k, ch.CADER, c.alg) })
			if len(ch.LeafDER) > 4096 {
				t.Logf("%v leaf: %d bytes of DER", c.scheme, len(ch.LeafDER))
			}
		})
	}
}

// TestX509ReaderRefuses checks that the C reader refuses what is not a well-formed certificate:
// every truncation, trailing bytes, non-minimal and indefinite lengths, a signature algorithm
// that differs inside and outside the TBS, an ML-DSA key of the wrong size or with parameters,
// an unknown critical extension, a duplicate extension and malformed times.
func TestX509ReaderRefuses(t *testing.T) {
	k := startKatcli(t)
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ch, err := tlscert.New(tls13.MLDSA44, "board.pqrepro.test", now)
	if err != nil {
		t.Fatal(err)
	}
	der := ch.LeafDER
	refused := func(name string, b []byte, code string) {
		t.Helper()
		got := x509Fields(t, k, b, now.Unix(), "board.pqrepro.test")["refused"]
		if got == "" || (code != "" && got != code) {
			t.Errorf("%s: C gave %q, want refused %s", name, got, code)
		}
	}
	for n := 0; n < len(der); n += 1 + n/64 {
		refused(fmt.Sprintf("first %d bytes", n), der[:n], "")
	}
	refused("a trailing byte", append(bytes.Clone(der), 0), "-1")
	// The outer SEQUENCE's length 82 hh ll written 83 00 hh ll (non-minimal), and 80 (indefinite).
	if der[1] != 0x82 {
		t.Fatalf("leaf does not start 30 82: % x", der[:4])
	}
	refused("a non-minimal length", append([]byte{0x30, 0x83, 0x00}, der[2:]...), "-1")
	refused("an indefinite length", append(append([]byte{0x30, 0x80}, der[4:]...), 0, 0), "-1")
	// The outer signature OID's last byte (0x11, id-ml-dsa-44) made 0x12: it no longer matches the TBS's.
	oid := []byte{0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, 0x11}
	i := bytes.LastIndex(der, oid)
	if i < 0 || i < len(ch.Leaf.RawTBSCertificate) {
		t.Fatal("no outer ML-DSA-44 OID after the TBS")
	}
	b := bytes.Clone(der)
	b[i+len(oid)-1] = 0x12
	refused("outer and TBS signature algorithms differ", b, "-4")
	// The SPKI's OID made id-ml-dsa-65: a 1,312-byte key is the wrong size for it.
	j := bytes.Index(ch.Leaf.RawTBSCertificate, ch.Leaf.RawSubjectPublicKeyInfo)
	s := bytes.Index(der[j+4:], oid)
	b = bytes.Clone(der)
	b[j+4+s+len(oid)-1] = 0x12
	refused("an ML-DSA-65 OID on an ML-DSA-44 key", b, "-4")
	// Times: the notBefore UTCTime's 'Z' replaced, and its month made 13.
	tm := bytes.Index(der, append([]byte{0x17, 13}, ch.Leaf.NotBefore.UTC().Format("060102150405Z")...))
	if tm < 0 {
		t.Fatal("no notBefore UTCTime in the leaf")
	}
	b = bytes.Clone(der)
	b[tm+2+12] = '0'
	refused("a time without Z", b, "-5")
	b = bytes.Clone(der)
	b[tm+2+2], b[tm+2+3] = '1', '3'
	refused("month 13", b, "-5")
	// Extensions: an unknown one marked critical, and the SAN twice.
	issue := func(extra []pkix.Extension) []byte {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "board.pqrepro.test"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: []string{"board.pqrepro.test"},
			ExtraExtensions: extra,
		}
		out, err := x509.CreateCertificate(rand.Reader, tmpl, ch.CA, ch.Key.Public(), ch.CAKey)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	unknown := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}
	refused("an unknown critical extension", issue([]pkix.Extension{{Id: unknown, Critical: true, Value: []byte{5, 0}}}), "-6")
	if m := x509Fields(t, k, issue([]pkix.Extension{{Id: unknown, Value: []byte{5, 0}}}), now.Unix(), "board.pqrepro.test"); m["refused"] != "" || m["host"] != "1" {
		t.Errorf("an unknown non-critical extension: %v", m["refused"])
	}
	san, _ := asn1.Marshal([]asn1.RawValue{{Class: 2, Tag: 2, Bytes: []byte("other.pqrepro.test")}})
	sanExt := pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 17}, Value: san}
	refused("two SAN extensions", issue([]pkix.Extension{sanExt, sanExt}), "-7")
}
