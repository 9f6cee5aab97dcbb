package firmware

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzX509Reader drives the C X.509 reader (katcli's x509 command, built with AddressSanitizer
// and UBSan, so an out-of-bounds read or an overflow kills it and fails the target) with arbitrary
// bytes. What it accepts must be consistent: every span it reports lies inside the input, and the
// TBS is a prefix of the certificate's contents. The seed corpus (testdata/fuzz/FuzzX509Reader)
// holds an ML-DSA-44 leaf and CA from tls13/tlscert and a few damaged forms of them, and the
// Ed25519, ECDSA P-256 and RSA-2048 (sha256WithRSAEncryption) CAs and leaves tlscert makes.
func FuzzX509Reader(f *testing.F) {
	k := startKatcliBuild(f, "build/host/katcli-asan")
	f.Fuzz(func(t *testing.T, der []byte) {
		if len(der) > 20000 {
			return
		}
		m := x509Fields(t, k, der, 1796000000, "board.pqrepro.test")
		if m["refused"] != "" {
			if !strings.HasPrefix(m["refused"], "-") {
				t.Fatalf("refusal code %q", m["refused"])
			}
			return
		}
		in := hex.EncodeToString(der)
		for _, name := range []string{"tbs", "sig", "serial", "issuer", "subject", "sigoid", "spkioid", "pk"} {
			if !strings.Contains(in, m[name]) {
				t.Fatalf("field %s is not in the input", name)
			}
		}
		for _, n := range strings.Split(m["san"], ",") {
			if !strings.Contains(in, n) {
				t.Fatalf("SAN entry %s is not in the input", n)
			}
		}
		tbs, _ := hex.DecodeString(m["tbs"])
		if i := bytes.Index(der, tbs); i < 2 || i > 6 {
			t.Fatalf("TBS at offset %d", i)
		}
	})
}
