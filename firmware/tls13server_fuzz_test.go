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
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// The recorded exchange of the C server (testdata/tls13s): its leaf and key blob (ML-DSA-44,
// a test key of no one's), the Go engine client's ClientHello (X25519MLKEM768) and the client's
// second flight (ChangeCipherSpec and Finished) answering the server's flight for the fixed
// randomness below, deterministic ML-DSA. `go test ./firmware -run TestTLSServerRecordedExchange
// -update` records a new one and FuzzTLSServerInput's seeds made from it.
var (
	recordedServerRandom = bytes.Repeat([]byte{0x3c}, 32)
	recordedServerKEM    = bytes.Repeat([]byte{0xc3}, 32)
	recordedServerECDH   = bytes.Repeat([]byte{0x69}, 32)
	tls13sDir            = filepath.Join("testdata", "tls13s")
)

// startRecordedServer starts the C server as the recorded exchange did.
func startRecordedServer(t testing.TB, k *katcli) {
	t.Helper()
	leaf, err := os.ReadFile(filepath.Join(tls13sDir, "leaf.der"))
	if err != nil {
		t.Fatal(err)
	}
	blob, err := os.ReadFile(filepath.Join(tls13sDir, "key.bin"))
	if err != nil {
		t.Fatal(err)
	}
	hx := hex.EncodeToString
	if r := k.do(t, "tlss-start", fmt.Sprint(uint16(tls13.X25519MLKEM768)), hx(blob), hx(leaf), hx(recordedServerRandom),
		hx(recordedServerKEM), hx(recordedServerECDH), "-"); r != "ok" {
		t.Fatalf("tlss-start: %s", r)
	}
}

// TestTLSServerRecordedExchange replays the recorded ClientHello into the C server in pieces of
// several sizes (one byte at a time included): each time it sends the same flight (it is a
// function of its inputs, the ML-DSA signature deterministic) and waits for the Finished; the
// recorded client Finished, which was computed over that flight, then connects it.
func TestTLSServerRecordedExchange(t *testing.T) {
	k := startKatcli(t)
	if *update {
		recordTLS13S(t, k)
	}
	hello, err := os.ReadFile(filepath.Join(tls13sDir, "clienthello.bin"))
	if err != nil {
		t.Fatal(err)
	}
	fin, err := os.ReadFile(filepath.Join(tls13sDir, "clientfinished.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var flight []byte
	for _, size := range []int{len(hello), 500, 100, 7, 1} {
		startRecordedServer(t, k)
		var res tlssResult
		var out []byte
		for i := 0; i < len(hello); i += size {
			res = tlssFeed(t, k, hello[i:min(i+size, len(hello))])
			out = append(out, res.out...)
		}
		if res.state != tlssWaitFin {
			t.Fatalf("pieces of %d bytes: state %d, alert %d", size, res.state, res.sent)
		}
		if flight == nil {
			flight = out
		} else if !bytes.Equal(out, flight) {
			t.Fatalf("pieces of %d bytes: another flight", size)
		}
		if res = tlssFeed(t, k, fin); res.state != tlssConnected {
			t.Fatalf("pieces of %d bytes: the recorded Finished: state %d, alert %d", size, res.state, res.sent)
		}
	}
}

// FuzzTLSServerInput feeds arbitrary client bytes to the C server (started as in the recorded
// exchange) through the sanitizer build of katcli: it must not crash, must end waiting for more
// or failed with an alert it sent or received, and may be connected only on the recorded
// ClientHello and Finished. The seed corpus holds the recorded exchange and damaged forms.
func FuzzTLSServerInput(f *testing.F) {
	k := startKatcliBuild(f, "build/host/katcli-asan")
	hello, err := os.ReadFile(filepath.Join(tls13sDir, "clienthello.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 30000 {
			return
		}
		startRecordedServer(t, k)
		res := tlssFeed(t, k, in)
		switch {
		case res.state == tlssFailed:
			if res.sent < 0 && res.received < 0 {
				t.Fatal("failed with no alert")
			}
			if res.sent >= 0 && len(res.out) == 0 {
				t.Fatal("an alert was not sent")
			}
		case res.state == tlssConnected:
			if !bytes.HasPrefix(in, hello) {
				t.Fatal("connected on input that does not start with the recorded ClientHello")
			}
		case res.state < tlssWaitCH || res.state > tlssFailed+1:
			t.Fatalf("state %d", res.state)
		}
	})
}

// recordTLS13S records the exchange into testdata/tls13s with the Go engine's client and writes
// FuzzTLSServerInput's seeds.
func recordTLS13S(t *testing.T, k *katcli) {
	ch, err := tlscert.New(tls13.MLDSA44, tlssHost, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := ch.KeyBlob()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tls13sDir, "leaf.der"), ch.LeafDER)
	write(filepath.Join(tls13sDir, "key.bin"), blob)
	startRecordedServer(t, k)
	cEnd, sEnd := net.Pipe()
	defer sEnd.Close()
	go func() {
		tls13.Client(cEnd, interop.EngineClientConfig(interop.Cell{Group: tls13.X25519MLKEM768, Scheme: tls13.MLDSA44}, ch, tlssHost)).Handshake()
		cEnd.Close()
	}()
	var hello, fin []byte
	buf := make([]byte, 1<<16)
	for res := (tlssResult{state: tlssWaitCH}); res.state != tlssConnected; {
		sEnd.SetDeadline(time.Now().Add(30 * time.Second))
		n, err := sEnd.Read(buf)
		if err != nil {
			t.Fatalf("read from the client: %v (server state %d)", err, res.state)
		}
		if res.state == tlssWaitCH {
			hello = append(hello, buf[:n]...)
		} else {
			fin = append(fin, buf[:n]...)
		}
		if res = tlssFeed(t, k, buf[:n]); res.state == tlssFailed {
			t.Fatalf("the server failed: alert %d", res.sent)
		}
		if len(res.out) > 0 {
			if _, err := sEnd.Write(res.out); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(filepath.Join(tls13sDir, "clienthello.bin"), hello)
	write(filepath.Join(tls13sDir, "clientfinished.bin"), fin)
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0x80; return b }
	for name, b := range map[string][]byte{
		"clienthello": hello, "exchange": append(bytes.Clone(hello), fin...), "clienthello-half": hello[:len(hello)/2],
		"clienthello-bad-length": flip(hello, 8), "clienthello-bad-ext": flip(hello, 5+4+2+32+1+32+2+2+1+1+2),
		"finished-bad-tag": append(bytes.Clone(hello), flip(fin, len(fin)-1)...), "finished-only": fin,
		"alert": {21, 3, 3, 0, 2, 2, 40}, "ccs": {20, 3, 3, 0, 1, 1}, "huge-record": {22, 3, 1, 0xff, 0xff},
	} {
		write(filepath.Join("testdata", "fuzz", "FuzzTLSServerInput", name), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)))
	}
}
