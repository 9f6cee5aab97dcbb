package firmware

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
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
	makeCountImages(t, "tls-replay")
	wantTag := goRecordTag()
	for _, b := range countBoards {
		t.Run(b.name, func(t *testing.T) {
			lines := bootCountImage(t, b, filepath.Join("build", "tls-replay", b.name, "tlsreplay.elf"))
			tls, aesl := countRecords(lines, "tlsreplay"), countRecords(lines, "aesgcm")
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
