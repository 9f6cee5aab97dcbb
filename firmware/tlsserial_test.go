package firmware

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// serialBoard is an emulated board driven frame by frame: requests out, frames in.
type serialBoard struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	seq   int
	// flights is how many records each server flight of the last handshake held.
	flights []int
	// hello is the boot HELLO.
	hello boardFrame
}

// bootSerialBoard makes board's firmware (make <board>, when make and the board's compiler are
// installed, so the image is never older than its sources) and boots it under its emulator with
// -icount shift=0, or skips.
func bootSerialBoard(t *testing.T, board string) *serialBoard {
	t.Helper()
	vars, err := boardMK(filepath.Join("boards", board, "board.mk"))
	if err != nil {
		t.Fatal(err)
	}
	qemu := strings.Fields(vars["BOARD_QEMU"])
	elf := filepath.Join("build", board, "pqrepro-fw.elf")
	makeBoard(t, board, strings.Fields(vars["BOARD_CC"]))
	if _, err := os.Stat(elf); err != nil {
		t.Skipf("%s not built (make firmware)", elf)
	}
	if _, err := exec.LookPath(qemu[0]); err != nil {
		t.Skipf("%s not installed", qemu[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	args := append(append([]string{}, qemu[1:]...), "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-icount", "shift=0", "-kernel", elf)
	cmd := exec.CommandContext(ctx, qemu[0], args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	b := &serialBoard{t: t, in: in, lines: make(chan string, 1024)}
	go func() {
		defer close(b.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 4096), 4096)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
	}()
	if b.hello = b.next(); b.hello.typ != "HELLO" || b.hello.kv["tls_io"] != "serial" {
		t.Fatalf("boot HELLO %+v, want tls_io=serial", b.hello)
	}
	return b
}

// makeBoard runs make board when make and cc are installed, under the lock other packages'
// tests take around firmware builds (build/.make.lock).
func makeBoard(t *testing.T, board string, cc []string) {
	t.Helper()
	for _, tool := range append([]string{"make"}, cc...) {
		if _, err := exec.LookPath(tool); err != nil {
			return
		}
	}
	_ = os.MkdirAll("build", 0o755)
	if lock, err := os.OpenFile(filepath.Join("build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644); err == nil {
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		defer lock.Close()
	}
	out, err := exec.Command("make", board).CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", board, err, out)
	}
}

type boardFrame struct {
	typ string
	kv  map[string]string
}

// next returns the next frame the board wrote (lines that are not frames are skipped).
func (b *serialBoard) next() boardFrame {
	b.t.Helper()
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				b.t.Fatal("the emulator stopped")
			}
			if !strings.HasPrefix(l, "@") {
				continue
			}
			l = l[:strings.LastIndexByte(l, '*')]
			parts := strings.SplitN(l, ":", 3)
			f := boardFrame{typ: parts[1], kv: map[string]string{}}
			for _, kv := range strings.Fields(parts[2]) {
				k, v, _ := strings.Cut(kv, "=")
				f.kv[k] = v
			}
			return f
		case <-time.After(5 * time.Minute):
			b.t.Fatal("no frame in time")
		}
	}
}

// send writes one request, a few bytes at a time (the emulated UARTs hold little).
func (b *serialBoard) send(typ, payload string) {
	b.t.Helper()
	b.seq++
	line := requestLine(b.seq, typ, payload)
	for off := 0; off < len(line); off += 8 {
		if _, err := b.in.Write(line[off:min(off+8, len(line))]); err != nil {
			b.t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// expect reads the next frame and fails unless it is of type typ.
func (b *serialBoard) expect(typ string) boardFrame {
	b.t.Helper()
	f := b.next()
	if f.typ != typ {
		b.t.Fatalf("frame %s %v, want %s", f.typ, f.kv, typ)
	}
	return f
}

// serialChunk is the most binary bytes per TLSCA or TLSIN frame: the board's TLS_CHUNK with
// 512-byte frames, as the runner's relay sends (runner/wire TLSChunkWide).
const serialChunk = 224

// provisionCA sends the CA's DER in TLSCA chunks of serialChunk bytes and returns the pin's hash field.
func (b *serialBoard) provisionCA(der []byte) string {
	b.t.Helper()
	var f boardFrame
	for off := 0; off < len(der); off += serialChunk {
		end := min(off+serialChunk, len(der))
		b.send("TLSCA", fmt.Sprintf("off=%d total=%d ca=%x", off, len(der), der[off:end]))
		f = b.expect("TLSCA")
	}
	if f.kv["pinned"] != "1" {
		b.t.Fatalf("TLSCA: %v", f.kv)
	}
	return f.kv["ca"]
}

// boardOut reads TLSO frames up to TLSOUT and returns the bytes and TLSOUT's want=.
func (b *serialBoard) boardOut() ([]byte, string) {
	b.t.Helper()
	var out []byte
	for {
		f := b.next()
		switch f.typ {
		case "TLSO":
			d, err := hex.DecodeString(f.kv["d"])
			if err != nil {
				b.t.Fatal(err)
			}
			out = append(out, d...)
		case "TLSOUT":
			if n, _ := strconv.Atoi(f.kv["len"]); n != len(out) {
				b.t.Fatalf("TLSOUT len=%s, got %d bytes", f.kv["len"], len(out))
			}
			return out, f.kv["want"]
		default:
			b.t.Fatalf("frame %s %v while reading the board's bytes", f.typ, f.kv)
		}
	}
}

// readRecords reads whole TLS records from conn until none begins within a short pause (the
// runner's 25 ms: the servers write a flight at once); once a record has begun the rest of it
// gets 30 s, as the runner's relay does, so that a record TCP delivers in pieces is not cut.
func readRecords(conn net.Conn) ([][]byte, error) {
	var recs [][]byte
	br := bufio.NewReader(conn)
	for {
		if len(recs) > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(25 * time.Millisecond))
		} else {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		}
		if _, err := br.Peek(1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && len(recs) > 0 {
				return recs, nil
			}
			return recs, err
		}
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(br, hdr); err != nil {
			return recs, err
		}
		body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
		if _, err := io.ReadFull(br, body); err != nil {
			return recs, err
		}
		recs = append(recs, append(hdr, body...))
	}
}

// feed sends records to the board as TLSIN frames: each record in chunks of at most
// serialChunk bytes, end=1 on the last chunk of the last record.
func (b *serialBoard) feed(i int, recs [][]byte) {
	b.t.Helper()
	off := 0
	for ri, r := range recs {
		for o := 0; o < len(r); o += serialChunk {
			e := min(o+serialChunk, len(r))
			end := ""
			if ri == len(recs)-1 && e == len(r) {
				end = " end=1"
			}
			b.send("TLSIN", fmt.Sprintf("i=%d off=%d d=%x%s", i, off, r[o:e], end))
			b.expect("TLSIN")
			off += e - o
		}
	}
}

// serialHandshake relays one handshake between the board and conn and returns the HANDSHAKE
// frame. tamper, when set, changes the server's first flight (its records joined) on its way
// to the board, as a line in between would; the bytes are split into records again after it.
func (b *serialBoard) serialHandshake(i int, conn net.Conn, tamper func([]byte) []byte) boardFrame {
	b.t.Helper()
	b.flights = nil
	for first := true; ; first = false {
		out, want := b.boardOut()
		if len(out) > 0 {
			if _, err := conn.Write(out); err != nil {
				b.t.Logf("write to the server: %v", err)
			}
		}
		if want == "none" {
			return b.expect("HANDSHAKE")
		}
		recs, err := readRecords(conn)
		if len(recs) == 0 {
			b.t.Fatalf("the server sent nothing the board waits for (want=%s): %v", want, err)
		}
		if first && tamper != nil {
			recs = splitRecords(tamper(bytes.Join(recs, nil)))
		}
		b.flights = append(b.flights, len(recs))
		b.feed(i, recs)
	}
}

// splitRecords cuts b into TLS records by their headers' lengths (a short tail stays one piece).
func splitRecords(b []byte) [][]byte {
	var recs [][]byte
	for len(b) > 0 {
		n := len(b)
		if len(b) >= 5 {
			n = min(len(b), 5+(int(b[3])<<8|int(b[4])))
		}
		recs = append(recs, b[:n])
		b = b[n:]
	}
	return recs
}

// engineCell serves the Go engine with cfg on a local port for one connection: a full
// handshake (its group and CertificateVerify scheme must be cfg's first ones), then the
// client's bytes echoed once. The handshake's (or echo's) error goes to the
// channel.
func engineCell(t *testing.T, cfg *tls13.Config) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			res <- err
			return
		}
		defer c.Close()
		srv := tls13.Server(c, cfg)
		err = srv.Handshake()
		if st := srv.State(); err == nil && (st.Group != cfg.Groups[0] || st.Scheme != cfg.SignatureSchemes[0]) {
			err = fmt.Errorf("the engine negotiated %v/%v, not %v/%v", st.Group, st.Scheme, cfg.Groups[0], cfg.SignatureSchemes[0])
		}
		if err == nil {
			buf := make([]byte, 1024)
			var n int
			if n, err = srv.Read(buf); err == nil {
				if !echoLine(buf[:n]) {
					err = fmt.Errorf("the board's echo %q is not a line that reads the same backwards", buf[:n])
				} else {
					_, err = srv.Write(buf[:n])
				}
			}
		}
		res <- err
	}()
	return ln.Addr().String(), res
}

// echoLine reports whether b is the board's echo (PROTOCOL.md): hex digits that read the same
// backwards, then '\n', so that s_server -rev returns it unchanged.
func echoLine(b []byte) bool {
	line, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok {
		return false
	}
	for i, c := range line {
		if c != line[len(line)-1-i] || !strings.ContainsRune("0123456789abcdef", rune(c)) {
			return false
		}
	}
	return true
}

// boardCell is one TLS io=serial request of one handshake (n=1, no warm-up, 32 bytes echoed)
// relayed to addr; the board's DRBG is seeded with seed first. It returns the HANDSHAKE frame.
func (b *serialBoard) boardCell(addr, seed string, g tls13.Group, s tls13.SignatureScheme, sni, cah string, now time.Time, tamper func([]byte) []byte) boardFrame {
	b.t.Helper()
	b.send("SEED", "seed="+seed)
	b.expect("SEED")
	b.send("TLS", fmt.Sprintf("io=serial group=%d sig=%d sni=%s ca=%s n=1 warmup=0 echo=32 now=%d", uint16(g), uint16(s), sni, cah, now.Unix()))
	b.expect("TLS")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.t.Fatal(err)
	}
	hs := b.serialHandshake(0, conn, tamper)
	conn.Close()
	fail := map[string]string{"1": "0", "0": "1"}[hs.kv["ok"]]
	if done := b.expect("TLSDONE"); done.kv["n"] != "1" || done.kv["ok"] != hs.kv["ok"] || done.kv["fail"] != fail {
		b.t.Fatalf("TLSDONE %v after HANDSHAKE %v", done.kv, hs.kv)
	}
	return hs
}

// handshakeFigures is a HANDSHAKE report's count and phases, for the log.
func handshakeFigures(hs boardFrame) string {
	return fmt.Sprintf("count=%s (kex %s, chain %s, cv %s, ksrec %s, rest %s) stack=%s", hs.kv["count"], hs.kv["count_kex"],
		hs.kv["count_chain"], hs.kv["count_cv"], hs.kv["count_ksrec"], hs.kv["count_rest"], hs.kv["stack"])
}

// TestTLSSerialOnBoard runs ML-KEM-768 × ML-DSA-44 cells on qemu-mps2-an386 against the
// project's Go engine over the serial line (TLSCA, TLS io=serial, TLSIN; the test relays as the
// runner does): the handshake completes and the echo returns; then each failure of
// TestTLSClientAlerts on the board — a pinned CA that did not issue the leaf, a name the leaf
// does not carry, a time after its validity, a CertificateVerify signed by another key, a
// record tampered with in the relay, a ServerHello key share for another group or of the wrong
// length — ends in the alert the Go engine sends for it, sent by the board (HANDSHAKE ok=0
// reason=handshake alert=N) and received by the engine.
func TestTLSSerialOnBoard(t *testing.T) {
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
	var pinned string
	for _, tc := range []struct {
		name   string
		ca     []byte
		sni    string
		now    time.Time
		key    *tlscert.Chain // whose leaf key signs CertificateVerify (nil: ch's)
		tamper func([]byte) []byte
		alert  tls13.Alert // 0: the handshake completes
	}{
		{name: "engine"},
		{name: "wrong CA", ca: other.CADER, alert: tls13.AlertUnknownCA},
		{name: "wrong host name", sni: "other.pqrepro.test", alert: tls13.AlertBadCertificate},
		{name: "expired", now: now.Add(48 * time.Hour), alert: tls13.AlertCertificateExpired},
		{name: "CertificateVerify by another key", key: other, alert: tls13.AlertDecryptError},
		{name: "tampered record", tamper: func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, alert: tls13.AlertBadRecordMAC},
		{name: "key share for another group", tamper: shareGroup(uint16(tls13.MLKEM512)), alert: tls13.AlertIllegalParameter},
		{name: "key share of the wrong length", tamper: shareShort, alert: tls13.AlertIllegalParameter},
	} {
		if tc.ca == nil {
			tc.ca = ch.CADER
		}
		if tc.sni == "" {
			tc.sni = "board.pqrepro.test"
		}
		if tc.now.IsZero() {
			tc.now = now
		}
		key := ch.Key
		if tc.key != nil {
			key = tc.key.Key
		}
		if want := sha256.Sum256(tc.ca); pinned != hex.EncodeToString(want[:16]) {
			if pinned = b.provisionCA(tc.ca); pinned != hex.EncodeToString(want[:16]) {
				t.Fatalf("%s: pinned ca=%s", tc.name, pinned)
			}
		}
		addr, srvErr := engineCell(t, &tls13.Config{
			Groups: []tls13.Group{tls13.MLKEM768}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
			Certificates: ch.Certificates(), PrivateKey: key,
		})
		hs := b.boardCell(addr, "00112233", tls13.MLKEM768, tls13.MLDSA44, tc.sni, pinned, tc.now, tc.tamper)
		err := <-srvErr
		t.Logf("%s: HANDSHAKE %v; server: %v", tc.name, hs.kv, err)
		if tc.alert == 0 {
			if hs.kv["ok"] != "1" || err != nil || hs.kv["group"] != "513" || hs.kv["sig"] != "2308" {
				t.Fatalf("%s: server %v, HANDSHAKE %v", tc.name, err, hs.kv)
			}
			continue
		}
		if hs.kv["ok"] != "0" || hs.kv["reason"] != "handshake" || hs.kv["alert"] != strconv.Itoa(int(tc.alert)) {
			t.Fatalf("%s: ok=%s reason=%s alert=%s, want ok=0 reason=handshake alert=%d (%v)", tc.name,
				hs.kv["ok"], hs.kv["reason"], hs.kv["alert"], tc.alert, tc.alert)
		}
		var ae *tls13.AlertError
		if !errors.As(err, &ae) || !ae.Remote || ae.Alert != tc.alert {
			t.Fatalf("%s: server %v, want the board's %v", tc.name, err, tc.alert)
		}
	}
}

// TestTLSSerialAllCellsOnBoard runs the 36 cells of the matrix (ML-KEM-512/768/1024, X25519,
// P-256 and X25519MLKEM768 × ML-DSA-44/65/87, Ed25519, ECDSA-P256 and RSA-PSS) on each emulated
// board with the client (qemu-mps2-an386, the Cortex-M4; qemu-mps2-an505, the Cortex-M33 of the
// Pico 2 W; qemu-riscv32-virt), one emulator process per board, the boards side by side, over
// the serial line: each cell against the Go engine and against OpenSSL 3.5's s_server (the
// Debian 13 root, found as tls13/interop finds it; that half is skipped with its reason
// without it), the board's DRBG seeded alike before both so its own ClientHello and key shares
// are the same. Each handshake completes, the negotiated group and scheme are the cell's on the
// board (HANDSHAKE group= sig=) and on the server (s_server's trace; the engine is limited to
// them), and the 32 echo bytes return (the engine echoes them, s_server -rev reverses the line,
// which reads the same backwards). It logs the board's instructions per handshake and per phase.
func TestTLSSerialAllCellsOnBoard(t *testing.T) {
	if testing.Short() {
		t.Skip("boots emulated boards")
	}
	if oerr := onEmulatedBoards(t, allCellsOnBoard); oerr != nil {
		t.Logf("the 36 cells ran against the engine only; no OpenSSL 3.5 to interoperate with: %v", oerr)
	}
}

// onEmulatedBoards runs cells on each emulated board (qemu-mps2-an386, qemu-mps2-an505,
// qemu-riscv32-virt) in a parallel subtest of t, with OpenSSL 3.5 as tls13/interop finds it
// (ossl nil without it, and oerr says why); it returns oerr.
func onEmulatedBoards(t *testing.T, cells func(t *testing.T, board string, ossl *interop.OpenSSL, oerr error)) error {
	ossl, oerr := interop.FindOpenSSL(t.Context())
	if oerr == nil {
		t.Logf("peer: %s", ossl.Version)
	}
	for _, board := range []string{"qemu-mps2-an386", "qemu-mps2-an505", "qemu-riscv32-virt"} {
		t.Run(board, func(t *testing.T) {
			t.Parallel()
			cells(t, board, ossl, oerr)
		})
	}
	return oerr
}

// allCellsOnBoard is TestTLSSerialAllCellsOnBoard on one board; ossl is nil (oerr says why)
// without OpenSSL 3.5.
func allCellsOnBoard(t *testing.T, board string, ossl *interop.OpenSSL, oerr error) {
	b := bootSerialBoard(t, board)
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, s := range matrixSchemes {
		ch, err := tlscert.New(s, "board.pqrepro.test", now)
		if err != nil {
			t.Fatal(err)
		}
		cah := b.provisionCA(ch.CADER)
		for _, g := range matrixGroups {
			cell := interop.Cell{Group: g, Scheme: s}
			seed := hex.EncodeToString([]byte(cell.String()))
			check := func(peer string, hs boardFrame) {
				t.Helper()
				if hs.kv["ok"] != "1" || hs.kv["group"] != strconv.Itoa(int(g)) || hs.kv["sig"] != strconv.Itoa(int(s)) {
					t.Fatalf("%v against %s: HANDSHAKE %v", cell, peer, hs.kv)
				}
				t.Logf("%v against %s: %s segments=%s; records per server flight %v", cell, peer, handshakeFigures(hs), hs.kv["segments"], b.flights)
			}
			addr, srvErr := engineCell(t, &tls13.Config{
				Groups: []tls13.Group{g}, SignatureSchemes: []tls13.SignatureScheme{s},
				Certificates: ch.Certificates(), PrivateKey: ch.Key,
			})
			hs := b.boardCell(addr, seed, g, s, "board.pqrepro.test", cah, now, nil)
			if err := <-srvErr; err != nil {
				t.Fatalf("%v: the engine: %v (board %v)", cell, err, hs.kv)
			}
			check("the engine", hs)
			if oerr != nil {
				continue
			}
			srv, err := ossl.StartOpenSSLServer(t.Context(), cell, ch, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			hs = b.boardCell(srv.Addr, seed, g, s, "board.pqrepro.test", cah, now, nil)
			rep, err := srv.Wait()
			if err != nil {
				t.Fatalf("%v: %v (board %v)", cell, err, hs.kv)
			}
			if rep.Group != uint16(g) || rep.Scheme != uint16(s) || rep.CipherSuite != uint16(tls13.TLS_AES_128_GCM_SHA256) {
				t.Fatalf("%v: s_server negotiated group %#04x, scheme %#04x, suite %#04x", cell, rep.Group, rep.Scheme, rep.CipherSuite)
			}
			check("s_server", hs)
		}
	}
}
