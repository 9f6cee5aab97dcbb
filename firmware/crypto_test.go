package firmware

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha3"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cloudflare/circl/kem"
	"github.com/cloudflare/circl/kem/mlkem/mlkem1024"
	"github.com/cloudflare/circl/kem/mlkem/mlkem512"
	"github.com/cloudflare/circl/kem/mlkem/mlkem768"
)

// acvpDir is where the NIST vectors live, relative to this directory.
const acvpDir = "../../shared/test-vectors/acvp"

// katcli drives the host build of the C crypto (test/katcli.c) over a pipe.
type katcli struct {
	mu     sync.Mutex
	in     io.WriteCloser
	out    *bufio.Reader
	stderr string // the file katcli's standard error goes to (a sanitizer's report)
}

func (k *katcli) do(t testing.TB, args ...string) string {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, a := range args {
		if a == "" {
			args[i] = "-"
		}
	}
	if _, err := fmt.Fprintln(k.in, strings.Join(args, " ")); err != nil {
		t.Fatal(err)
	}
	line, err := k.out.ReadString('\n')
	if err != nil {
		report, _ := os.ReadFile(k.stderr)
		t.Fatalf("katcli %s: %v\n%s", args[0], err, report)
	}
	line = strings.TrimSpace(line)
	if line == "error" {
		t.Fatalf("katcli rejected %s", args[0])
	}
	return line
}

func startKatcli(t *testing.T) *katcli { return startKatcliBuild(t, "build/host/katcli") }

// startKatcliBuild makes target (katcli, or its sanitizer build) and starts it.
func startKatcliBuild(t testing.TB, target string) *katcli {
	t.Helper()
	for _, tool := range []string{"make", "cc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: cannot build the host crypto", tool)
		}
	}
	var out bytes.Buffer
	mk := exec.Command("make", target)
	mk.Stdout, mk.Stderr = &out, &out
	if err := mk.Run(); err != nil {
		t.Fatalf("make %s: %v\n%s", target, err, out.String())
	}
	cmd := exec.Command(target)
	errFile, err := os.Create(filepath.Join(t.TempDir(), "katcli.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return &katcli{in: in, out: bufio.NewReaderSize(stdout, 1<<20), stderr: errFile.Name()}
}

func loadACVP(t *testing.T, dir string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(acvpDir, dir, "internalProjection.json"))
	if err != nil {
		t.Skipf("ACVP vectors not available: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func setName(ps string) string { return strings.TrimPrefix(ps, "ML-KEM-") }

// TestACVP checks the C ML-KEM against every NIST ACVP vector.
func TestACVP(t *testing.T) {
	k := startKatcli(t)
	counts := map[string]int{}
	for _, g := range loadACVP(t, "ML-KEM-keyGen-FIPS203")["testGroups"].([]any) {
		grp := g.(map[string]any)
		set := setName(grp["parameterSet"].(string))
		for _, x := range grp["tests"].([]any) {
			tc := x.(map[string]any)
			got := k.do(t, "keygen", set, tc["d"].(string), tc["z"].(string))
			if want := tc["ek"].(string) + " " + tc["dk"].(string); got != want {
				t.Errorf("ML-KEM-%s keyGen tcId %v: wrong ek/dk", set, tc["tcId"])
			}
			counts["keyGen"]++
		}
	}
	for _, g := range loadACVP(t, "ML-KEM-encapDecap-FIPS203")["testGroups"].([]any) {
		grp := g.(map[string]any)
		set := setName(grp["parameterSet"].(string))
		fn := grp["function"].(string)
		for _, x := range grp["tests"].([]any) {
			tc := x.(map[string]any)
			str := func(k string) string { s, _ := tc[k].(string); return s }
			var ok bool
			switch fn {
			case "encapsulation":
				ok = k.do(t, "encaps", set, str("ek"), str("m")) == str("c")+" "+str("k")
			case "decapsulation":
				ok = k.do(t, "decaps", set, str("dk"), str("c")) == str("k")
			case "encapsulationKeyCheck":
				ok = (k.do(t, "checkek", set, str("ek")) == "ok") == tc["testPassed"].(bool)
			case "decapsulationKeyCheck":
				ok = (k.do(t, "checkdk", set, str("dk")) == "ok") == tc["testPassed"].(bool)
			default:
				t.Fatalf("unknown ACVP function %q", fn)
			}
			if !ok {
				t.Errorf("ML-KEM-%s %s tcId %v (%v): mismatch", set, fn, tc["tcId"], tc["reason"])
			}
			counts[fn]++
		}
	}
	want := map[string]int{"keyGen": 75, "encapsulation": 75, "decapsulation": 30,
		"encapsulationKeyCheck": 30, "decapsulationKeyCheck": 30}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("ran %v vectors, want %v", counts, want)
	}
}

// TestCirclCrossCheck compares the C ML-KEM with circl on random inputs,
// including random (so almost surely invalid) ciphertexts, which exercise
// implicit rejection.
func TestCirclCrossCheck(t *testing.T) {
	k := startKatcli(t)
	schemes := map[string]kem.Scheme{"512": mlkem512.Scheme(), "768": mlkem768.Scheme(), "1024": mlkem1024.Scheme()}
	for _, set := range []string{"512", "768", "1024"} {
		s := schemes[set]
		t.Run("ML-KEM-"+set, func(t *testing.T) {
			for i := 0; i < 40; i++ {
				seed, m := make([]byte, 64), make([]byte, 32)
				rand.Read(seed)
				rand.Read(m)
				pk, sk := s.DeriveKeyPair(seed)
				ek, _ := pk.MarshalBinary()
				dk, _ := sk.MarshalBinary()
				got := strings.Fields(k.do(t, "keygen", set, hex.EncodeToString(seed[:32]), hex.EncodeToString(seed[32:])))
				if len(got) != 2 || got[0] != strings.ToUpper(hex.EncodeToString(ek)) || got[1] != strings.ToUpper(hex.EncodeToString(dk)) {
					t.Fatalf("keygen differs from circl for seed %x", seed)
				}
				ct, ss, err := s.EncapsulateDeterministically(pk, m)
				if err != nil {
					t.Fatal(err)
				}
				want := strings.ToUpper(hex.EncodeToString(ct) + " " + hex.EncodeToString(ss))
				if k.do(t, "encaps", set, got[0], hex.EncodeToString(m)) != want {
					t.Fatalf("encaps differs from circl for seed %x m %x", seed, m)
				}
				bad := make([]byte, len(ct))
				rand.Read(bad)
				for _, c := range [][]byte{ct, bad} {
					ss2, err := s.Decapsulate(sk, c)
					if err != nil {
						t.Fatal(err)
					}
					if k.do(t, "decaps", set, got[1], hex.EncodeToString(c)) != strings.ToUpper(hex.EncodeToString(ss2)) {
						t.Fatalf("decaps differs from circl for seed %x ct %x", seed, c)
					}
				}
			}
		})
	}
}

// TestHashes compares the C hashes with Go's standard library on random
// messages of every length up to past three blocks of the widest rate.
func TestHashes(t *testing.T) {
	k := startKatcli(t)
	msg := make([]byte, 520)
	rand.Read(msg)
	up := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	for n := 0; n <= len(msg); n++ {
		m := msg[:n]
		h := hex.EncodeToString(m)
		s256, s512 := sha256.Sum256(m), sha512.Sum512(m)
		s3256, s3512 := sha3.Sum256(m), sha3.Sum512(m)
		checks := []struct {
			args []string
			want string
		}{
			{[]string{"sha256", h}, up(s256[:])},
			{[]string{"sha512", h}, up(s512[:])},
			{[]string{"sha3-256", h}, up(s3256[:])},
			{[]string{"sha3-512", h}, up(s3512[:])},
			{[]string{"shake128", fmt.Sprint(n), h}, up(sha3.SumSHAKE128(m, n))},
			{[]string{"shake256", fmt.Sprint(n + 1), h}, up(sha3.SumSHAKE256(m, n+1))},
		}
		for _, c := range checks {
			if got := k.do(t, c.args...); got != c.want {
				t.Fatalf("%s of %d bytes: got %s, want %s", c.args[0], n, got, c.want)
			}
		}
	}
}
