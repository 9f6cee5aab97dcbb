package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// TestTLSServeWithSClient plays the board with OpenSSL's s_client: pqrepro tls-serve serves an
// ML-KEM-512 + ML-DSA-44 cell, s_client pins the CA the command made, checks the name, sends a
// line and reads it back, twice; the command reports both handshakes and stops.
func TestTLSServeWithSClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := interop.FindOpenSSL(ctx)
	if err != nil {
		t.Fatalf("%v (run scripts/openssl-root, or set PQREPRO_OPENSSL_ROOT)", err)
	}
	caDir := t.TempDir()
	pr, pw := io.Pipe()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- cmdTLSServe(ctx, []string{"--group", "ML-KEM-512", "--sig", "ML-DSA-44", "--listen", "127.0.0.1:0",
			"--ca-dir", caDir, "--echo", "12", "--n", "2"}, io.MultiWriter(pw, &out))
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	addr := ""
	for sc.Scan() {
		if m := regexp.MustCompile(`on (127\.0\.0\.1:\d+);`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		t.Fatalf("no listening address in:\n%s", out.String())
	}
	caFile, _ := tlscert.CAFiles(caDir, tls13.MLDSA44)
	for i := 0; i < 2; i++ {
		cmd := o.Command(ctx, "s_client", "-tls1_3", "-ign_eof", "-groups", "MLKEM512", "-sigalgs", "mldsa44", "-CAfile", caFile,
			"-verify_return_error", "-verify_hostname", "pqrepro.test", "-servername", "pqrepro.test", "-connect", addr)
		cmd.Stdin = strings.NewReader("hello board\n")
		var so, se bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("s_client: %v\n%s\n%s", err, se.String(), so.String())
		}
		rep, err := interop.ParseClientReport(so.String())
		if err != nil || !rep.Verified || rep.Group != "MLKEM512" || rep.Scheme != "mldsa44" || !strings.Contains(so.String(), "hello board") {
			t.Fatalf("s_client report %+v %v\n%s", rep, err, so.String())
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "): handshake "); n != 2 || !strings.Contains(out.String(), "served 2 handshakes") {
		t.Fatalf("output:\n%s", out.String())
	}
	// The CA is kept: a second start reuses it (the board's pinned CA stays valid).
	ca1, err := tlscert.LoadOrCreateCA(caDir, tls13.MLDSA44, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "fingerprint "+hex.EncodeToString(ca1.Fingerprint())) {
		t.Fatalf("the CA changed: output\n%s", out.String())
	}
}

func TestTLSServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--group", "ML-KEM-999", "--sig", "ML-DSA-44"},
		{"--group", "ML-KEM-512", "--sig", "SLH-DSA"},
		{"--group", "ML-KEM-512", "--sig", "ML-DSA-44", "--echo", "-1"},
	} {
		var out bytes.Buffer
		if code := run(context.Background(), append([]string{"tls-serve"}, args...), &out, &out); code != 2 || !strings.Contains(out.String(), "want") {
			t.Errorf("%v: exit %d, %s", args, code, out.String())
		}
	}
}
