package interop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata files are s_server -trace and s_client outputs of OpenSSL 3.5.9 with an Ed25519
// certificate: a HelloRetryRequest into MLKEM768 (the client's key share was x25519), plain
// x25519 and plain P-256.

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseServerTrace(t *testing.T) {
	for _, tc := range []struct {
		file  string
		group uint16
		retry bool
	}{
		{"s_server-hrr-mlkem768-ed25519.trace", 513, true},
		{"s_server-x25519-ed25519.trace", 29, false},
		{"s_server-p256-ed25519.trace", 23, false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := readTestdata(t, tc.file)
			rep, err := ParseServerTrace(out)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Group != tc.group || rep.Scheme != 0x0807 || rep.HelloRetry != tc.retry {
				t.Errorf("group %d scheme %#04x retry %v, want %d 0x0807 %v", rep.Group, rep.Scheme, rep.HelloRetry, tc.group, tc.retry)
			}
			if rep.CipherSuite != 0x1301 {
				t.Errorf("cipher suite %#04x, want 0x1301", rep.CipherSuite)
			}
			if rep.Alert != "close notify(0)" {
				t.Errorf("alert %q, want the client's close notify(0)", rep.Alert)
			}
			// Cut before the CertificateVerify: no scheme, an error.
			i := strings.Index(out, "CertificateVerify,")
			if _, err := ParseServerTrace(out[:i]); err == nil {
				t.Errorf("a trace without CertificateVerify parsed")
			}
			// Only what the server received (the ClientHello's key share too names a group):
			// no ServerHello sent, an error.
			recv := strings.ReplaceAll(out, "Sent TLS Record", "Received TLS Record")
			if _, err := ParseServerTrace(recv); err == nil {
				t.Errorf("a trace of received records only parsed")
			}
		})
	}
}

func TestParseClientReport(t *testing.T) {
	for _, tc := range []struct{ file, group string }{
		{"s_client-hrr-mlkem768-ed25519.txt", "MLKEM768"},
		{"s_client-x25519-ed25519.txt", "X25519"},
		{"s_client-p256-ed25519.txt", "prime256v1"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := readTestdata(t, tc.file)
			rep, err := ParseClientReport(out)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Group != tc.group || rep.Scheme != "ed25519" || !rep.Verified || rep.PeerName != "localhost" || rep.Cipher != "TLS_AES_128_GCM_SHA256" {
				t.Errorf("got %+v", *rep)
			}
			if !hasLine(rep.Output, "olleh") {
				t.Errorf("the reversed line is not in the output")
			}
			failed := strings.Replace(out, "Verification: OK", "Verification error: unable to get local issuer certificate", 1)
			if rep, err := ParseClientReport(failed); err != nil || rep.Verified {
				t.Errorf("a failed verification reads as verified=%v (%v)", rep != nil && rep.Verified, err)
			}
			if _, err := ParseClientReport(strings.ReplaceAll(out, "Peer signature type", "Peer signing digest")); err == nil {
				t.Errorf("output without the signature type parsed")
			}
		})
	}
}

func FuzzParseServerTrace(f *testing.F) {
	for _, name := range []string{"s_server-hrr-mlkem768-ed25519.trace", "s_server-x25519-ed25519.trace", "s_server-p256-ed25519.trace"} {
		f.Add(readTestdata(f, name))
	}
	f.Add("Sent TLS Record\n    ServerHello, Length=1\n            NamedGroup: x (65536)\n")
	f.Fuzz(func(t *testing.T, out string) {
		rep, err := ParseServerTrace(out)
		if err == nil && (rep == nil || rep.Scheme == 0 && !strings.Contains(out, "(0x0000)")) {
			t.Fatalf("no error and no scheme: %+v", rep)
		}
	})
}

func FuzzParseClientReport(f *testing.F) {
	for _, name := range []string{"s_client-hrr-mlkem768-ed25519.txt", "s_client-x25519-ed25519.txt", "s_client-p256-ed25519.txt"} {
		f.Add(readTestdata(f, name))
	}
	f.Add("Peer Temp Key: ECDH,\nPeer signature type: x\n")
	f.Fuzz(func(t *testing.T, out string) {
		rep, err := ParseClientReport(out)
		if err == nil && (rep.Group == "" || rep.Scheme == "") {
			t.Fatalf("no error but empty group or scheme: %+v", rep)
		}
	})
}
