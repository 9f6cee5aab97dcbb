package tls13_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// outsideGoMod is the recipe for an outside Go program that imports the engine (README,
// "Using the engine from another Go module"): the module path is plain pqrepro, which no
// public host serves, so it is required at v0.0.0 and replaced by a checkout.
const outsideGoMod = `module example.test/outside

go 1.27

require pqrepro v0.0.0

replace pqrepro => %s
`

// outsideMain handshakes the engine's client with the engine's server over loopback TCP for
// an ML-KEM-768 × ML-DSA-44 cell and prints what was negotiated.
const outsideMain = `package main

import (
	"fmt"
	"net"
	"os"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

func main() {
	chain, err := tlscert.New(tls13.MLDSA44, "outside.test", time.Now())
	if err != nil {
		fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	srvCfg := &tls13.Config{Groups: []tls13.Group{tls13.MLKEM768}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
		Certificates: chain.Certificates(), PrivateKey: chain.Key}
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		done <- tls13.Server(c, srvCfg).Handshake()
	}()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
	if err != nil {
		fail(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	cli := tls13.Client(conn, &tls13.Config{Groups: []tls13.Group{tls13.MLKEM768}, SignatureSchemes: []tls13.SignatureScheme{tls13.MLDSA44},
		RootCAs: chain.Pool(), ServerName: "outside.test"})
	if err := cli.Handshake(); err != nil {
		fail(err)
	}
	if err := <-done; err != nil {
		fail(err)
	}
	st := cli.State()
	fmt.Printf("negotiated %s %s %s\n", st.Group, st.Scheme, st.CipherSuite)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "outside:", err)
	os.Exit(1)
}
`

// TestOutsideModuleReplace builds a module outside the repository that imports pqrepro/tls13
// through the README's replace recipe, offline (GOPROXY=off: its dependencies come from the
// module cache the repository's build filled), with the toolchain that runs this test, and
// runs it: the engine's client and server complete a handshake.
func TestOutsideModuleReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module (-short)")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":  strings.Replace(outsideGoMod, "%s", repo, 1),
		"go.sum":  string(sum), // the checksums of pqrepro's own dependencies, as its checkout has them
		"main.go": outsideMain,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goBin, err := exec.LookPath("go") // GOTOOLCHAIN below makes it the running version
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	bin := filepath.Join(dir, "outside")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN="+runtime.Version(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the outside module with the replace recipe: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("run the outside program: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "negotiated ML-KEM-768 ML-DSA-44 TLS_AES_128_GCM_SHA256" {
		t.Fatalf("outside program printed %q", got)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "replace pqrepro => "+repo) {
		t.Fatalf("go.mod after the build lost the replace:\n%s", mod)
	}
}
