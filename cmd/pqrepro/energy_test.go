package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEnergy runs `pqrepro energy paper002` on the traces inside the binary: every published
// energy is printed with its re-derived interval and verdict, and bad input is refused.
func TestEnergy(t *testing.T) {
	code, out, errb := pq(t, "energy", "paper002", "--board", "rpi1-b", "--replicates", "300")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	found := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 10 && f[0] == "rpi1-b" && f[1] == "ML-KEM-768" && f[2] == "keygen" && f[3] == "0.050223016" && f[5] == "0.050223" && f[9] == "inside" {
			found = true
		}
	}
	if !found {
		t.Errorf("no line for the Pi 1's ML-KEM-768 keygen with 0.050223016 J published, 0.050223 J re-derived, inside:\n%s", out)
	}
	for _, want := range []string{"re-derived from the paper's traces",
		"329 published energies: 329 re-derived", "Outside their interval", "C002-01 holds", "TLS handshake"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\nrpi4-b ") {
		t.Error("--board rpi1-b printed a Pi 4 cell")
	}
	code, out, _ = pq(t, "energy", "paper002", "--json", "--replicates", "200")
	var tab struct {
		Cells []struct{ Board, Verdict string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &tab) != nil || len(tab.Cells) != 329 {
		t.Fatalf("--json: exit %d, %d cells", code, len(tab.Cells))
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"energy"}, 2, "usage: pqrepro energy PAPER"},
		{[]string{"energy", "paper009"}, 2, "no paper \"paper009\""},
		{[]string{"energy", "paper001"}, 1, "no power traces"},
		{[]string{"energy", "paper002", "--replicates", "5"}, 1, "replicates 5"},
	} {
		code, _, errb := pq(t, tt.args...)
		if code != tt.code || !strings.Contains(errb, tt.want) {
			t.Errorf("%v: exit %d %q, want %d and %q", tt.args, code, errb, tt.code, tt.want)
		}
	}
}
