package firmware

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// The board as the TLS server over the serial line (PROTOCOL.md "The board as the server"):
// the tests provision a leaf and its key (TLSLEAF, TLSKEY) and relay a client's connection per
// handshake to the board as the runner does (runner/wire TLSServeSerial).

// provisionServer sends the leaf's DER (TLSLEAF) and the key blob (TLSKEY) and returns the
// last TLSLEAF and TLSKEY answers.
func (b *serialBoard) provisionServer(leaf, blob []byte) (leafAns, keyAns boardFrame) {
	b.t.Helper()
	for _, p := range []struct {
		typ  string
		data []byte
		ans  *boardFrame
	}{{"TLSLEAF", leaf, &leafAns}, {"TLSKEY", blob, &keyAns}} {
		for off := 0; off < len(p.data); off += serialChunk {
			end := min(off+serialChunk, len(p.data))
			b.send(p.typ, fmt.Sprintf("off=%d total=%d d=%x", off, len(p.data), p.data[off:end]))
			*p.ans = b.expect(p.typ)
		}
	}
	return leafAns, keyAns
}

// provisionChain provisions ch's leaf and key and fails unless both are taken; it returns the
// fingerprints a TLS role=server request names.
func (b *serialBoard) provisionChain(ch *tlscert.Chain) (leafH, keyH string) {
	b.t.Helper()
	blob, err := ch.KeyBlob()
	if err != nil {
		b.t.Fatal(err)
	}
	la, ka := b.provisionServer(ch.LeafDER, blob)
	if la.kv["pinned"] != "1" || ka.kv["loaded"] != "1" {
		b.t.Fatalf("%v: TLSLEAF %v, TLSKEY %v", ch.Scheme, la.kv, ka.kv)
	}
	return la.kv["leaf"], ka.kv["key"]
}

// serveOne relays one handshake with the board as the server: the client (started by the
// caller, connecting to ln) is accepted, its records fed to the board, the board's bytes
// written back, until want=none; the connection is then closed and the HANDSHAKE returned.
func (b *serialBoard) serveOne(i int, ln net.Listener) boardFrame {
	b.t.Helper()
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(time.Minute))
	conn, err := ln.Accept()
	if err != nil {
		b.t.Fatal(err)
	}
	defer conn.Close()
	b.flights = nil
	for {
		out, want := b.boardOut()
		if len(out) > 0 {
			if _, err := conn.Write(out); err != nil {
				b.t.Logf("write to the client: %v", err)
			}
		}
		if want == "none" {
			return b.expect("HANDSHAKE")
		}
		recs, err := readRecords(conn)
		if len(recs) == 0 {
			b.t.Fatalf("the client sent nothing the board waits for (want=%s): %v", want, err)
		}
		b.flights = append(b.flights, len(recs))
		b.feed(i, recs)
	}
}

// serverCell is one TLS role=server request of n handshakes (no warm-up, echo bytes echoed)
// after SEED seed; client(addr, i) runs handshake i's client against addr and its error is
// checked. It returns the HANDSHAKE frames.
func (b *serialBoard) serverCell(seed string, g tls13.Group, s tls13.SignatureScheme, leafH, keyH string, n, echo int, sigrnd string,
	client func(addr string, i int) error) []boardFrame {
	b.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.t.Fatal(err)
	}
	defer ln.Close()
	b.send("SEED", "seed="+seed)
	b.expect("SEED")
	b.send("TLS", fmt.Sprintf("io=serial role=server group=%d sig=%d leaf=%s key=%s n=%d warmup=0 echo=%d sigrnd=%s", uint16(g), uint16(s), leafH, keyH, n, echo, sigrnd))
	if f := b.expect("TLS"); f.kv["role"] != "server" {
		b.t.Fatalf("TLS answer %v", f.kv)
	}
	var hss []boardFrame
	for i := range n {
		res := make(chan error, 1)
		go func() { res <- client(ln.Addr().String(), i) }()
		hs := b.serveOne(i, ln)
		if err := <-res; err != nil {
			b.t.Fatalf("%v/%v handshake %d: the client: %v (board %v)", g, s, i, err, hs.kv)
		}
		hss = append(hss, hs)
	}
	ok := 0
	for _, hs := range hss {
		if hs.kv["ok"] == "1" {
			ok++
		}
	}
	if done := b.expect("TLSDONE"); done.kv["n"] != strconv.Itoa(n) || done.kv["ok"] != strconv.Itoa(ok) {
		b.t.Fatalf("TLSDONE %v after %d handshakes, %d ok", done.kv, n, ok)
	}
	return hss
}

// serverEcho is the line a client sends for the board to echo: echo bytes, hex digits, '\n'.
func serverEcho(r *mrand.ChaCha8, echo int) []byte {
	line := make([]byte, echo)
	for i := range line[:echo-1] {
		line[i] = "0123456789abcdef"[r.Uint64()&15]
	}
	line[echo-1] = '\n'
	return line
}

// engineClient is the Go engine's client for the cell (its group and scheme alone, ch's CA
// the one root, the leaf's validity as now), deterministic from seed when seed is set: it
// completes the handshake, checks the negotiated group and scheme, sends the echo line and
// reads it back.
func engineClient(ch *tlscert.Chain, g tls13.Group, s tls13.SignatureScheme, now time.Time, seed []byte, echo int) func(string, int) error {
	cfg := &tls13.Config{Groups: []tls13.Group{g}, SignatureSchemes: []tls13.SignatureScheme{s}, RootCAs: ch.Pool(),
		ServerName: "board.pqrepro.test", Time: func() time.Time { return now }}
	var seedKey [32]byte
	copy(seedKey[:], seed)
	rng := mrand.NewChaCha8(seedKey)
	if seed != nil {
		cfg.Rand, cfg.Deterministic = rng, true
	}
	return func(addr string, _ int) error {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Minute))
		c := tls13.Client(conn, cfg)
		if err := c.Handshake(); err != nil {
			return err
		}
		if st := c.State(); st.Group != g || st.Scheme != s {
			return fmt.Errorf("negotiated %v/%v", st.Group, st.Scheme)
		}
		line := serverEcho(rng, echo)
		if _, err := c.Write(line); err != nil {
			return err
		}
		got := make([]byte, len(line))
		if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, line) {
			return fmt.Errorf("echo %q back for %q: %v", got, line, err)
		}
		return nil
	}
}

// opensslClient is OpenSSL's s_client for the cell against the board: the negotiated group and
// scheme it reports must be the cell's, the chain verified, and the echo line must come back.
func opensslClient(t *testing.T, ossl *interop.OpenSSL, ch *tlscert.Chain, cell interop.Cell, echo int) func(string, int) error {
	rng := mrand.NewChaCha8([32]byte{1})
	return func(addr string, _ int) error {
		line := serverEcho(rng, echo)
		rep, err := ossl.RunOpenSSLClient(t.Context(), cell, ch, "board.pqrepro.test", addr, []string{strings.TrimSuffix(string(line), "\n")}, t.TempDir())
		if err != nil {
			return err
		}
		group, sigalg, _ := cell.OpenSSLNames()
		switch {
		case !rep.Verified:
			return fmt.Errorf("s_client did not verify the board's chain")
		case !strings.EqualFold(rep.Group, group) && !(cell.Group == tls13.P256 && rep.Group == "prime256v1"):
			return fmt.Errorf("s_client negotiated group %s, want %s", rep.Group, group)
		case !strings.EqualFold(rep.Scheme, sigalg) && !strings.EqualFold(strings.ReplaceAll(rep.Scheme, "_", ""), strings.ReplaceAll(sigalg, "_", "")):
			return fmt.Errorf("s_client: peer signature type %s, want %s", rep.Scheme, sigalg)
		case !strings.Contains(rep.Output, string(line)):
			return fmt.Errorf("s_client did not receive the echo %q", line)
		}
		return nil
	}
}

// checkServed fails unless hs is an ok server-role report of group g and scheme s with a
// positive count, rounds (1 for non-ML-DSA schemes) and two or more segments.
func checkServed(t *testing.T, hs boardFrame, g tls13.Group, s tls13.SignatureScheme) {
	t.Helper()
	rounds, _ := strconv.Atoi(hs.kv["rounds"])
	mldsa := s == tls13.MLDSA44 || s == tls13.MLDSA65 || s == tls13.MLDSA87
	if hs.kv["ok"] != "1" || hs.kv["role"] != "server" || hs.kv["group"] != strconv.Itoa(int(g)) || hs.kv["sig"] != strconv.Itoa(int(s)) ||
		rounds < 1 || (!mldsa && rounds != 1) || hs.kv["count"] == "0" || hs.kv["segments"] < "2" {
		t.Fatalf("%v/%v: HANDSHAKE %v", g, s, hs.kv)
	}
}

// serverFigures is a server HANDSHAKE's count, phases and rounds, for the log.
func serverFigures(hs boardFrame) string {
	return fmt.Sprintf("count=%s (kex %s, sign %s, ksrec %s, rest %s) rounds=%s segments=%s stack=%s", hs.kv["count"], hs.kv["count_kex"],
		hs.kv["count_cv"], hs.kv["count_ksrec"], hs.kv["count_rest"], hs.kv["rounds"], hs.kv["segments"], hs.kv["stack"])
}

// TestTLSServerOnBoard runs ML-KEM-768 × ML-DSA-44 with qemu-mps2-an386 as the server against
// the Go engine's client, then the refusals: a key that is not the leaf's (loaded=0
// msg=mismatch), a key blob the board cannot read (msg=parse), TLS role=server naming no
// loaded key (ERROR badarg msg=key), repeatability (the same cell twice with sigrnd=det and the
// same seeds gives the same counts) and a HelloRetryRequest (hrr=1, three segments).
func TestTLSServerOnBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("boots an emulated board")
	}
	b := bootSerialBoard(t, "qemu-mps2-an386")
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ch, err := tlscert.New(tls13.MLDSA44, "board.pqrepro.test", now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlscert.New(tls13.MLDSA44, "board.pqrepro.test", now)
	if err != nil {
		t.Fatal(err)
	}
	otherBlob, _ := other.KeyBlob()
	if la, ka := b.provisionServer(ch.LeafDER, otherBlob); la.kv["pinned"] != "1" || ka.kv["loaded"] != "0" || ka.kv["msg"] != "mismatch" {
		t.Fatalf("another key: TLSLEAF %v, TLSKEY %v", la.kv, ka.kv)
	}
	leafH := hex.EncodeToString(sha256Prefix(ch.LeafDER))
	b.send("TLS", fmt.Sprintf("io=serial role=server group=513 sig=2308 leaf=%s key=%s n=1 warmup=0 echo=32 sigrnd=det", leafH, hex.EncodeToString(sha256Prefix(otherBlob))))
	if f := b.expect("ERROR"); f.kv["code"] != "badarg" || f.kv["msg"] != "key" {
		t.Fatalf("TLS role=server without a key: %v", f.kv)
	}
	if _, ka := b.provisionServer(ch.LeafDER, []byte{0x09, 0x04, 1, 2, 3}); ka.kv["loaded"] != "0" || ka.kv["msg"] != "parse" {
		t.Fatalf("a short key: TLSKEY %v", ka.kv)
	}
	leafH, keyH := b.provisionChain(ch)
	var counts []string
	for run := range 2 {
		client := engineClient(ch, tls13.MLKEM768, tls13.MLDSA44, now, []byte("repeat"), 32)
		hss := b.serverCell("00112233", tls13.MLKEM768, tls13.MLDSA44, leafH, keyH, 2, 32, "det", client)
		for _, hs := range hss {
			checkServed(t, hs, tls13.MLKEM768, tls13.MLDSA44)
			t.Logf("run %d: %s", run, serverFigures(hs))
			counts = append(counts, hs.kv["count"]+"/"+hs.kv["rounds"])
		}
	}
	if fmt.Sprint(counts[:2]) != fmt.Sprint(counts[2:]) {
		t.Fatalf("two runs with the same seeds and sigrnd=det: counts/rounds %v then %v", counts[:2], counts[2:])
	}
	// A client whose key share is for X25519 but which also offers ML-KEM-768: the board asks
	// again (HelloRetryRequest), a third segment for the second ClientHello.
	hrr := func(addr string, _ int) error {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer conn.Close()
		c := tls13.Client(conn, &tls13.Config{Groups: []tls13.Group{tls13.X25519, tls13.MLKEM768}, KeyShares: []tls13.Group{tls13.X25519},
			SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44}, RootCAs: ch.Pool(), ServerName: "board.pqrepro.test", Time: func() time.Time { return now }})
		if err := c.Handshake(); err != nil {
			return err
		}
		if st := c.State(); !st.HelloRetry || st.Group != tls13.MLKEM768 {
			return fmt.Errorf("state %+v, want a retry into ML-KEM-768", st)
		}
		return nil
	}
	hs := b.serverCell("00112233", tls13.MLKEM768, tls13.MLDSA44, leafH, keyH, 1, 0, "det", hrr)[0]
	checkServed(t, hs, tls13.MLKEM768, tls13.MLDSA44)
	if hs.kv["hrr"] != "1" || hs.kv["segments"] != "3" {
		t.Fatalf("after a HelloRetryRequest: HANDSHAKE %v", hs.kv)
	}
	t.Logf("with a HelloRetryRequest: %s", serverFigures(hs))
}

// sha256Prefix is the first 16 bytes of b's SHA-256, a fingerprint as the board gives it.
func sha256Prefix(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:16]
}

// TestTLSServerAllCellsOnBoard runs the 36 cells of the matrix with the board as the server on
// each emulated board (qemu-mps2-an386, qemu-mps2-an505, qemu-riscv32-virt), one emulator per
// board, the boards side by side: each cell served to the Go engine's client and to OpenSSL
// 3.5's s_client (that half skipped with its reason without it), the board's DRBG seeded alike
// before both. Each handshake completes; the group and scheme are the cell's on the board
// (HANDSHAKE group= sig=) and on the client (the engine is limited to them; s_client reports
// what it negotiated and that it verified the chain); the echo line returns. The board's
// signatures are thereby verified by Go's crypto and by OpenSSL. It logs the board's
// instructions per handshake, per phase, and the signature's rounds.
func TestTLSServerAllCellsOnBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("boots emulated boards")
	}
	if oerr := onEmulatedBoards(t, serverCellsOnBoard); oerr != nil {
		t.Logf("the 36 cells were served to the engine only; no OpenSSL 3.5 to interoperate with: %v", oerr)
	}
}

// serverCellsOnBoard is TestTLSServerAllCellsOnBoard on one board.
func serverCellsOnBoard(t *testing.T, board string, ossl *interop.OpenSSL, oerr error) {
	b := bootSerialBoard(t, board)
	if f := b.hello; f.kv["tls_roles"] != "client,server" {
		t.Fatalf("HELLO tls_roles=%q, want client,server", f.kv["tls_roles"])
	}
	// s_client checks the chain's validity against the machine's clock: the chains are
	// issued now (a chain issued at a fixed time expires a day later and fails the test).
	now := time.Now().UTC().Truncate(time.Second)
	for _, s := range matrixSchemes {
		ch, err := tlscert.New(s, "board.pqrepro.test", now)
		if err != nil {
			t.Fatal(err)
		}
		leafH, keyH := b.provisionChain(ch)
		for _, g := range matrixGroups {
			cell := interop.Cell{Group: g, Scheme: s}
			seed := hex.EncodeToString([]byte(cell.String()))
			hs := b.serverCell(seed, g, s, leafH, keyH, 1, 32, "hedged", engineClient(ch, g, s, now, nil, 32))[0]
			checkServed(t, hs, g, s)
			t.Logf("%v to the engine: %s", cell, serverFigures(hs))
			if oerr != nil {
				continue
			}
			hs = b.serverCell(seed, g, s, leafH, keyH, 1, 32, "hedged", opensslClient(t, ossl, ch, cell, 32))[0]
			checkServed(t, hs, g, s)
			t.Logf("%v to s_client: %s; records per client flight %v", cell, serverFigures(hs), b.flights)
		}
	}
}
