package firmware

import (
	"bufio"
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
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// serialBoard is an emulated board driven frame by frame: requests out, frames in.
type serialBoard struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	seq   int
}

// bootSerialBoard boots board's firmware under its emulator with -icount shift=0, or skips.
func bootSerialBoard(t *testing.T, board string) *serialBoard {
	t.Helper()
	vars, err := boardMK(filepath.Join("boards", board, "board.mk"))
	if err != nil {
		t.Fatal(err)
	}
	qemu := strings.Fields(vars["BOARD_QEMU"])
	elf := filepath.Join("build", board, "pqrepro-fw.elf")
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
	if f := b.next(); f.typ != "HELLO" || f.kv["tls_io"] != "serial" {
		t.Fatalf("boot HELLO %+v, want tls_io=serial", f)
	}
	return b
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

// provisionCA sends the CA's DER in TLSCA chunks of 128 bytes and returns the pin's hash field.
func (b *serialBoard) provisionCA(der []byte) string {
	b.t.Helper()
	var f boardFrame
	for off := 0; off < len(der); off += 128 {
		end := min(off+128, len(der))
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

// readRecords reads whole TLS records from conn until none follows within a short pause.
func readRecords(conn net.Conn) ([][]byte, error) {
	var recs [][]byte
	br := bufio.NewReader(conn)
	for {
		if len(recs) > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		} else {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		}
		hdr := make([]byte, 5)
		if _, err := io.ReadFull(br, hdr); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && len(recs) > 0 && br.Buffered() == 0 {
				return recs, nil
			}
			return recs, err
		}
		body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
		if _, err := io.ReadFull(br, body); err != nil {
			return recs, err
		}
		recs = append(recs, append(hdr, body...))
	}
}

// feed sends records to the board as TLSIN frames: each record in chunks of at most 128 bytes,
// end=1 on the last chunk of the last record.
func (b *serialBoard) feed(i int, recs [][]byte) {
	b.t.Helper()
	off := 0
	for ri, r := range recs {
		for o := 0; o < len(r); o += 128 {
			e := min(o+128, len(r))
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

// serialHandshake relays one handshake between the board and conn; it returns the HANDSHAKE frame.
func (b *serialBoard) serialHandshake(i int, conn net.Conn) boardFrame {
	b.t.Helper()
	for {
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
			b.t.Fatalf("the server sent nothing: %v", err)
		}
		b.feed(i, recs)
	}
}

// TestTLSSerialOnBoard runs one ML-KEM-512 × ML-DSA-44 cell on qemu-mps2-an386 against the
// project's Go engine over the serial line (TLSCA, TLS io=serial, TLSIN; the test relays as the
// runner does): the handshake completes and the echo returns; then a cell whose pinned CA is
// another one ends in unknown_ca sent by the board.
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			srv := tls13.Server(c, &tls13.Config{
				Groups: []tls13.Group{tls13.MLKEM512}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
				Certificates: ch.Certificates(), PrivateKey: ch.Key,
			})
			err = srv.Handshake()
			if err == nil {
				buf := make([]byte, 64)
				var n int
				if n, err = srv.Read(buf); err == nil {
					_, err = srv.Write(buf[:n])
				}
			}
			srvErr <- err
			c.Close()
		}
	}()
	for _, tc := range []struct {
		name  string
		ca    []byte
		ok    string
		alert string
	}{
		{"engine", ch.CADER, "1", ""},
		{"wrong CA", other.CADER, "0", strconv.Itoa(int(tls13.AlertUnknownCA))},
	} {
		cah := b.provisionCA(tc.ca)
		if want := sha256.Sum256(tc.ca); cah != hex.EncodeToString(want[:16]) {
			t.Fatalf("%s: pinned ca=%s", tc.name, cah)
		}
		b.send("SEED", "seed=00112233")
		b.expect("SEED")
		b.send("TLS", fmt.Sprintf("io=serial group=512 sig=2308 sni=board.pqrepro.test ca=%s n=1 warmup=0 echo=32 now=%d", cah, now.Unix()))
		b.expect("TLS")
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		hs := b.serialHandshake(0, conn)
		conn.Close()
		done := b.expect("TLSDONE")
		err = <-srvErr
		t.Logf("%s: HANDSHAKE %v; TLSDONE %v; server: %v", tc.name, hs.kv, done.kv, err)
		if hs.kv["ok"] != tc.ok || hs.kv["alert"] != tc.alert {
			t.Fatalf("%s: ok=%s alert=%s, want ok=%s alert=%s", tc.name, hs.kv["ok"], hs.kv["alert"], tc.ok, tc.alert)
		}
		if tc.ok == "1" && (err != nil || hs.kv["group"] != "512" || hs.kv["sig"] != "2308") {
			t.Fatalf("%s: server %v, HANDSHAKE %v", tc.name, err, hs.kv)
		}
		if tc.ok == "0" {
			var ae *tls13.AlertError
			if !errors.As(err, &ae) || !ae.Remote || ae.Alert != tls13.AlertUnknownCA {
				t.Fatalf("%s: server %v, want the board's unknown_ca", tc.name, err)
			}
		}
	}
}
