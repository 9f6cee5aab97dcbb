package tlsmatrix

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/runner"
	"pqrepro/runner/device"
	"pqrepro/runner/wire"
	"pqrepro/runner/wire/wiretest"
	"pqrepro/tls13"
	"pqrepro/tls13/interop"
	"pqrepro/tls13/tlscert"
)

// opensslBoard is a board with a TLS client, played by OpenSSL's s_client: no Pico W or ESP32
// with wolfSSL exists here, so the serial side is a script (wiretest.Board) and every handshake
// is a real s_client process against the runner's engine server. It pins the CAs in caDir,
// as a board built with them would, and reports each handshake's wall time as its own.
func opensslBoard(t *testing.T, o *interop.OpenSSL, caDir string, fault string) *wiretest.Board {
	var groups, sigs []string
	for _, g := range artifacts.TLSGroups() {
		groups = append(groups, strconv.Itoa(int(g.Codepoint)))
	}
	for _, s := range artifacts.TLSSignatures() {
		sigs = append(sigs, strconv.Itoa(int(s.Codepoint)))
	}
	return &wiretest.Board{
		Hello: []wire.Field{{Key: "fw", Value: "s_client-board"}, {Key: "ver", Value: "0"}, {Key: "board", Value: "openssl-stand-in"},
			{Key: "tls_groups", Value: strings.Join(groups, ",")}, {Key: "tls_sigs", Value: strings.Join(sigs, ",")}, {Key: "tls", Value: "openssl-3.5"}},
		Handler: func(req wire.Frame, send func(string, ...wire.Field) error) error {
			if req.Type == "SEED" {
				seed, _ := req.Get("seed")
				return send("SEED", wire.Field{Key: "len", Value: strconv.Itoa(len(seed) / 2)})
			}
			if req.Type != "TLS" {
				return send("ERROR", wire.Field{Key: "code", Value: "unknown"})
			}
			get := func(k string) string { v, _ := req.Get(k); return v }
			num := func(k string) int { v, _ := strconv.Atoi(get(k)); return v }
			cell := interop.Cell{Group: tls13.Group(num("group")), Scheme: tls13.SignatureScheme(num("sig"))}
			ca, err := tlscert.LoadOrCreateCA(caDir, cell.Scheme, time.Now())
			if err != nil || hex.EncodeToString(ca.Fingerprint()) != get("ca") {
				return send("ERROR", wire.Field{Key: "code", Value: "badarg"}, wire.Field{Key: "msg", Value: "ca"})
			}
			caFile, _ := tlscert.CAFiles(caDir, cell.Scheme)
			groupName, sigName, err := cell.OpenSSLNames()
			if err != nil {
				return err
			}
			if err := send("TLS", req.Fields...); err != nil {
				return err
			}
			n, warm, echo := num("n"), num("warmup"), num("echo")
			ok := 0
			for i := -warm; i < n; i++ {
				line := strings.Repeat(fmt.Sprintf("%x", i+100), echo)[:echo-1]
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cmd := o.Command(ctx, "s_client", "-tls1_3", "-ign_eof", "-groups", groupName, "-sigalgs", sigName,
					"-CAfile", caFile, "-verify_return_error", "-verify_hostname", get("sni"), "-servername", get("sni"),
					"-connect", get("host")+":"+get("port"))
				cmd.Stdin = strings.NewReader(line + "\n")
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				t0 := time.Now()
				runErr := cmd.Run()
				us := time.Since(t0).Microseconds()
				cancel()
				if i < 0 {
					continue
				}
				fields := []wire.Field{{Key: "i", Value: strconv.Itoa(i)}}
				rep, perr := interop.ParseClientReport(out.String())
				switch {
				case runErr != nil || perr != nil || !rep.Verified:
					fields = append(fields, wire.Field{Key: "ok", Value: "0"}, wire.Field{Key: "reason", Value: "handshake"})
				case !strings.Contains(out.String(), line):
					fields = append(fields, wire.Field{Key: "ok", Value: "0"}, wire.Field{Key: "reason", Value: "echo"})
				default:
					g, s := get("group"), get("sig")
					if fault == "group" {
						g = "29"
					}
					fields = append(fields, wire.Field{Key: "us", Value: strconv.FormatInt(max(us, 1), 10)}, wire.Field{Key: "heap", Value: "40000"},
						wire.Field{Key: "group", Value: g}, wire.Field{Key: "sig", Value: s}, wire.Field{Key: "ok", Value: "1"})
					ok++
				}
				if err := send("HANDSHAKE", fields...); err != nil {
					return err
				}
			}
			return send("TLSDONE", wire.Field{Key: "n", Value: strconv.Itoa(n)}, wire.Field{Key: "ok", Value: strconv.Itoa(ok)},
				wire.Field{Key: "fail", Value: strconv.Itoa(n - ok)})
		},
	}
}

// tlsBoard is a runner.Board over a scripted board's line.
type tlsBoard struct {
	c   *wire.Conn
	opt device.RunOptions
}

func (b *tlsBoard) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	return artifacts.BoardIdentity{Class: "pico-w", Name: "openssl-stand-in", Assurance: artifacts.AssuranceHardware}, nil
}

func (b *tlsBoard) Run(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	h, err := b.c.Hello(ctx)
	if err != nil {
		return nil, err
	}
	return device.Run(ctx, b.c, h, m, obs, log, b.opt)
}

func boardConn(t *testing.T, b *wiretest.Board) *wire.Conn {
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	go func() { b.Serve(reqR, respW); respW.Close() }()
	c := wire.NewConn(struct {
		io.Reader
		io.Writer
	}{respR, reqW}, wire.Options{SilenceTimeout: 30 * time.Second})
	t.Cleanup(func() { reqW.Close(); respR.Close(); c.Close() })
	return c
}

func tlsManifest(t *testing.T) *artifacts.Manifest {
	y := `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: paper000, name: board-test}
spec:
  tls:
    groups: [ML-KEM-512, X25519]
    signatures: [ML-DSA-44, RSA-PSS]
    batch: 2
    echo: 16
  warmup: 1
  iterations: 3
  seed: board-test
  boards: [pico-w]
`
	m, err := artifacts.ParseManifest([]byte(y), "test")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTLSMatrixOnABoard runs a tls-matrix on a board whose TLS client is OpenSSL's s_client:
// the runner serves each cell with the engine, tells the board where to connect, and publishes
// a bundle whose cells re-derive; every handshake is checked on both ends.
func TestTLSMatrixOnABoard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o, err := interop.FindOpenSSL(ctx)
	if err != nil {
		t.Fatalf("%v (run scripts/openssl-root, or set PQREPRO_OPENSSL_ROOT)", err)
	}
	caDir := t.TempDir()
	c := boardConn(t, opensslBoard(t, o, caDir, ""))
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	m := tlsManifest(t)
	b, res, err := runner.Execute(ctx, &tlsBoard{c: c, opt: device.RunOptions{TLSCADir: caDir, Executors: boardKinds}}, m, runner.Options{Identity: id, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 {
		t.Fatalf("%d cells", len(res.Cells))
	}
	for _, cl := range res.Cells {
		if cl.Status != artifacts.StatusOK {
			t.Fatalf("%s: %s %s", cl.Algorithm, cl.Status, cl.Error)
		}
		tc := cl.TLS
		if cl.Unit != artifacts.UnitMicroseconds || cl.Stats.N != 3 || tc == nil || tc.ClientCPU != nil || tc.ServerCPU == nil ||
			tc.ServerCPU.N != 2 || !strings.Contains(tc.Client, "openssl-3.5") || tc.ChainBytes == 0 || len(tc.Phases) == 0 {
			t.Fatalf("%s: %+v %+v", cl.Algorithm, cl, tc)
		}
		for _, p := range tc.Phases {
			if p.Side != artifacts.SideServer || p.Stats.N != 3 {
				t.Fatalf("%s: phase %+v", cl.Algorithm, p)
			}
		}
		if cl.Memory == nil || cl.Memory.PeakHeapBytes == nil || *cl.Memory.PeakHeapBytes != 40000 {
			t.Fatalf("%s: memory %+v", cl.Algorithm, cl.Memory)
		}
	}
	if _, _, err := artifacts.RederiveBundle(b); err != nil {
		t.Fatalf("the bundle does not re-derive: %v", err)
	}
	// The CAs stay in the folder for the next run, as the board pinned them.
	for _, s := range []string{"ML-DSA-44", "RSA-PSS"} {
		data, err := os.ReadFile(filepath.Join(caDir, s+"-ca.pem"))
		if blk, _ := pem.Decode(data); err != nil || blk == nil {
			t.Fatalf("CA %s not kept: %v", s, err)
		}
	}
}

// TestTLSBoardFaults: a board that pinned another CA refuses, and a board reporting another
// group than the server negotiated fails its cell; nothing is counted.
func TestTLSBoardFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o, err := interop.FindOpenSSL(ctx)
	if err != nil {
		t.Fatalf("%v (run scripts/openssl-root, or set PQREPRO_OPENSSL_ROOT)", err)
	}
	m := tlsManifest(t)
	m.Spec.TLS.Groups, m.Spec.TLS.Signatures = []string{"ML-KEM-512"}, []string{"ML-DSA-44"}
	for _, tt := range []struct{ name, fault, want string }{
		{"other CA pinned", "ca", "refused the TLS request: badarg ca"},
		{"other group reported", "group", "negotiated group 29"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			boardCAs, runnerCAs := t.TempDir(), t.TempDir()
			if tt.fault != "ca" {
				boardCAs = runnerCAs
			}
			c := boardConn(t, opensslBoard(t, o, boardCAs, tt.fault))
			h, err := c.Hello(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			cells, err := device.Run(ctx, c, h, m, runner.NopObserver{}, &log, device.RunOptions{TLSCADir: runnerCAs, Executors: boardKinds})
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != 1 || cells[0].Cell.Status != artifacts.StatusFailed || !strings.Contains(cells[0].Cell.Error, tt.want) || len(cells[0].Samples) != 0 {
				t.Fatalf("cells %+v", cells)
			}
		})
	}
}

// TestTLSCellsSkippedWithoutAClient: firmware without a TLS client skips every cell, saying so.
func TestTLSCellsSkippedWithoutAClient(t *testing.T) {
	c := boardConn(t, &wiretest.Board{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := c.Hello(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := device.Run(ctx, c, h, tlsManifest(t), runner.NopObserver{}, io.Discard, device.RunOptions{TLSCADir: t.TempDir(), Executors: boardKinds})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cells {
		if r.Cell.Status != artifacts.StatusSkipped || !strings.Contains(r.Cell.Error, "no TLS client") {
			t.Fatalf("cell %+v", r.Cell)
		}
	}
}

// boardKinds is the device table with this package's executor.
var boardKinds = device.Kinds{artifacts.KindTLSMatrix: Board}
