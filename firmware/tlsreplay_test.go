package firmware

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTLSClientReplayOnBoards builds the replay image (make tls-replay: test/tlsreplay.c, the
// board's port and the C TLS client, not the firmware) for qemu-mps2-an386, qemu-mps2-an505 and
// qemu-riscv32-virt, boots each under -icount shift=0 and checks that the client, fed the
// recorded flight of testdata/tls13c, sends the recorded ClientHello, ends connected and sends
// the same Finished as the host build; that two runs give identical instruction counts and stack
// marks; and that the AES-128-GCM seal of a 2^14-byte record gives Go's tag. It logs the counts
// (firmware/README.md).
func TestTLSClientReplayOnBoards(t *testing.T) {
	k := startKatcli(t)
	flight, err := os.ReadFile(filepath.Join(tls13cDir, "flight.bin"))
	if err != nil {
		t.Fatal(err)
	}
	startRecorded(t, k)
	hostFin := hex.EncodeToString(tlscFeed(t, k, flight).out)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	var out bytes.Buffer
	mk := exec.Command("make", "tls-replay")
	mk.Stdout, mk.Stderr = &out, &out
	if err := mk.Run(); err != nil {
		if _, lerr := exec.LookPath("arm-none-eabi-gcc"); lerr != nil {
			t.Skipf("no cross compiler: %v", lerr)
		}
		t.Fatalf("make tls-replay: %v\n%s", err, out.String())
	}
	key, iv := make([]byte, 16), make([]byte, 12)
	key[0], iv[0] = 1, 2
	blk, _ := aes.NewCipher(key)
	g, _ := cipher.NewGCM(blk)
	sealed := g.Seal(nil, iv, make([]byte, 16384), make([]byte, 5))
	wantTag := hex.EncodeToString(sealed[16384:])
	for _, b := range []struct{ name, qemu string }{
		{"qemu-mps2-an386", "qemu-system-arm -M mps2-an386"},
		{"qemu-mps2-an505", "qemu-system-arm -M mps2-an505"},
		{"qemu-riscv32-virt", "qemu-system-riscv32 -M virt -bios none"},
	} {
		t.Run(b.name, func(t *testing.T) {
			q := strings.Fields(b.qemu)
			if _, err := exec.LookPath(q[0]); err != nil {
				t.Skipf("%s not installed", q[0])
			}
			lines := bootReplay(t, q, filepath.Join("build", "tls-replay", b.name, "tlsreplay.elf"))
			var tls, aesl []map[string]string
			for _, l := range lines {
				f := strings.Fields(l)
				m := map[string]string{}
				for _, kv := range f[1:] {
					n, v, _ := strings.Cut(kv, "=")
					m[n] = v
				}
				switch f[0] {
				case "tlsreplay":
					tls = append(tls, m)
				case "aesgcm":
					aesl = append(aesl, m)
				}
			}
			if len(tls) != 2 || len(aesl) != 2 {
				t.Fatalf("board printed %q", lines)
			}
			for _, m := range tls {
				if m["state"] != "6" || m["ok"] != "1" || m["out"] != hostFin {
					t.Fatalf("board run: state %s, ok %s, Finished %s, host's %s", m["state"], m["ok"], m["out"], hostFin)
				}
			}
			for _, f := range []string{"start", "input", "stack", "kex", "chain", "cv", "ksrec"} {
				if tls[0][f] != tls[1][f] {
					t.Errorf("%s differs between runs: %s, %s", f, tls[0][f], tls[1][f])
				}
			}
			for _, m := range aesl {
				if m["tag"] != wantTag {
					t.Fatalf("AES-GCM tag %s, Go's %s", m["tag"], wantTag)
				}
			}
			if aesl[0]["seal16k"] != aesl[1]["seal16k"] {
				t.Errorf("AES-GCM counts differ between runs: %s, %s", aesl[0]["seal16k"], aesl[1]["seal16k"])
			}
			num := func(f string) uint64 {
				v, err := strconv.ParseUint(tls[0][f], 10, 64)
				if err != nil {
					t.Fatalf("field %s: %v", f, err)
				}
				return v
			}
			total, phases := num("start")+num("input"), num("kex")+num("chain")+num("cv")+num("ksrec")
			if num("kex") == 0 || num("chain") == 0 || num("cv") == 0 || num("ksrec") == 0 || phases > total {
				t.Fatalf("phases kex %d, chain %d, cv %d, ksrec %d against a total of %d", num("kex"), num("chain"), num("cv"), num("ksrec"), total)
			}
			t.Logf("%s (%s): tls13c_start %s, tls13c_input on the flight %s (total %d: key exchange %s, chain %s, CertificateVerify %s, key schedule and records %s, rest %d), stack %s B; AES-128-GCM seal of 16 KiB %s (stack %s B)",
				b.name, tls[0]["unit"], tls[0]["start"], tls[0]["input"], total, tls[0]["kex"], tls[0]["chain"], tls[0]["cv"], tls[0]["ksrec"], total-phases, tls[0]["stack"], aesl[0]["seal16k"], aesl[0]["stack"])
		})
	}
}

// bootReplay boots elf in QEMU (-icount shift=0, serial on stdio) and returns the lines it
// prints before DONE.
func bootReplay(t *testing.T, qemu []string, elf string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	args := append(append([]string{}, qemu[1:]...), "-display", "none", "-monitor", "none",
		"-serial", "stdio", "-icount", "shift=0", "-kernel", elf)
	cmd := exec.CommandContext(ctx, qemu[0], args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "DONE" {
			return lines
		}
		lines = append(lines, l)
	}
	t.Fatalf("the board stopped before DONE: %q", lines)
	return nil
}
