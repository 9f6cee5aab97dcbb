package firmware

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// The recorded exchange (testdata/tls13c): the Go engine's first flight (ServerHello through
// Finished, ML-KEM-512 with an ML-DSA-44 chain) answering the C client's ClientHello for the
// fixed random and ML-KEM seed below, and the CA the client trusts. `go test ./firmware -run
// TestTLSClientRecordedFlight -update` records a new one (a new chain: every file changes) and
// the fuzz seeds made from it.
var (
	recordedRandom = bytes.Repeat([]byte{0x5a}, 32)
	recordedSeed   = bytes.Repeat([]byte{0xa5}, 64)
	recordedNow    = int64(1796194800) // 2026-12-02 06:00:00 UTC, inside the chain's validity
	recordedHost   = "board.pqrepro.test"
	tls13cDir      = filepath.Join("testdata", "tls13c")
)

// startRecorded starts the C client as the recorded exchange did and returns its ClientHello.
func startRecorded(t testing.TB, k *katcli) []byte {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(tls13cDir, "ca.der"))
	if err != nil {
		t.Fatal(err)
	}
	hx := hex.EncodeToString
	out := k.do(t, "tlsc-start", "512", hx([]byte(recordedHost)), hx(ca), fmt.Sprint(recordedNow), hx(recordedRandom), hx(recordedSeed))
	b, err := hex.DecodeString(out)
	if err != nil {
		t.Fatalf("tlsc-start: %q", out)
	}
	return b
}

// TestTLSClientRecordedFlight replays the recorded server flight into the C client in pieces of
// several sizes (one byte at a time included), so records and handshake messages arrive split
// anywhere: each time the client sends the same ClientHello, ends connected and sends the same
// Finished.
func TestTLSClientRecordedFlight(t *testing.T) {
	k := startKatcli(t)
	if *update {
		recordTLS13C(t, k)
	}
	flight, err := os.ReadFile(filepath.Join(tls13cDir, "flight.bin"))
	if err != nil {
		t.Fatal(err)
	}
	hello, err := os.ReadFile(filepath.Join(tls13cDir, "clienthello.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var fin []byte
	for _, size := range []int{len(flight), 5000, 1000, 100, 7, 1} {
		if got := startRecorded(t, k); !bytes.Equal(got, hello) {
			t.Fatalf("the ClientHello differs from the recorded one")
		}
		var res tlscResult
		var out []byte
		for i := 0; i < len(flight); i += size {
			res = tlscFeed(t, k, flight[i:min(i+size, len(flight))])
			out = append(out, res.out...)
			if res.state == tlscFailed {
				t.Fatalf("pieces of %d bytes: failed at byte %d, alert %d", size, i, res.sent)
			}
		}
		if res.state != tlscConnected {
			t.Fatalf("pieces of %d bytes: state %d", size, res.state)
		}
		if fin == nil {
			fin = out
		} else if !bytes.Equal(out, fin) {
			t.Fatalf("pieces of %d bytes: another client Finished", size)
		}
	}
}

// FuzzTLSClientInput feeds arbitrary server bytes to the C client (started as in the recorded
// exchange) through the sanitizer build of katcli: it must not crash, must end either waiting
// for more or failed with an alert it sent or received, and may be connected only after the
// whole recorded flight. The seed corpus holds the recorded flight and damaged forms of it.
func FuzzTLSClientInput(f *testing.F) {
	k := startKatcliBuild(f, "build/host/katcli-asan")
	flight, err := os.ReadFile(filepath.Join(tls13cDir, "flight.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 30000 {
			return
		}
		startRecorded(t, k)
		res := tlscFeed(t, k, in)
		switch {
		case res.state == tlscFailed:
			if res.sent < 0 && res.received < 0 {
				t.Fatal("failed with no alert")
			}
			if res.sent >= 0 && len(res.out) == 0 {
				t.Fatal("an alert was not sent")
			}
		case res.state == tlscConnected:
			if !bytes.HasPrefix(in, flight[:len(flight)-64]) {
				t.Fatal("connected on input that is not the recorded flight")
			}
		case res.state < 1 || res.state > 8:
			t.Fatalf("state %d", res.state)
		}
	})
}

// recordTLS13C records the exchange into testdata/tls13c and writes FuzzTLSClientInput's seeds.
func recordTLS13C(t *testing.T, k *katcli) {
	ch, err := tlscert.New(tls13.MLDSA44, recordedHost, time.Unix(recordedNow, 0).Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	write := func(path string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tls13cDir, "ca.der"), ch.CADER)
	cEnd, sEnd := net.Pipe()
	defer cEnd.Close()
	srv := tls13.Server(sEnd, &tls13.Config{Groups: []tls13.Group{tls13.MLKEM512},
		SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44}, Certificates: ch.Certificates(), PrivateKey: ch.Key})
	go func() { srv.Handshake(); sEnd.Close() }()
	hello := startRecorded(t, k)
	write(filepath.Join(tls13cDir, "clienthello.bin"), hello)
	if _, err := cEnd.Write(hello); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, err := cEnd.Read(buf) // the engine writes its flight in one write
	if err != nil {
		t.Fatal(err)
	}
	fl := buf[:n]
	write(filepath.Join(tls13cDir, "flight.bin"), fl)
	flip := func(i int) []byte { b := bytes.Clone(fl); b[i] ^= 0x80; return b }
	sh := 5 + (int(fl[3])<<8 | int(fl[4]))
	for name, b := range map[string][]byte{
		"flight": fl, "flight-half": fl[:n/2], "serverhello-only": fl[:sh],
		"flight-bad-tag": flip(n - 1), "flight-bad-version": flip(10), "alert": {21, 3, 3, 0, 2, 2, 40},
		"ccs": {20, 3, 3, 0, 1, 1}, "huge-record": {22, 3, 3, 0xff, 0xff},
	} {
		write(filepath.Join("testdata", "fuzz", "FuzzTLSClientInput", name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)))
	}
}
