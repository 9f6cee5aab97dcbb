package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/energy"
	"pqrepro/internal/shareddata"
)

const meteredManifest = `apiVersion: pqrepro/v1
kind: kem-bench
metadata:
  paper: paper002
  name: metered-sim
spec:
  algorithms: [ML-KEM-768]
  operations: [keygen, encaps]
  warmup: 2
  iterations: 20
  seed: "s1"
  boards: [host]
  energy:
    idle: 10s
    load: 6s
`

// TestMeteredRunThenVerify: pqrepro run on the host with the simulated FNB58 replaying
// paper002's Pi 4 idle capture and ECDSA keygen load capture writes power.csv and a simulated,
// labelled energy per cell; verify re-derives the same figures from power.csv; submit refuses
// the bundle; an edited power.csv is refused, re-signed (its energy no longer follows) or not
// (the signature breaks).
func TestMeteredRunThenVerify(t *testing.T) {
	simLockstep = true
	t.Cleanup(func() { simLockstep = false })
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4", "csv_files")
	tmp := t.TempDir()
	manifest, keys, out := filepath.Join(tmp, "m.yaml"), filepath.Join(tmp, "keys"), filepath.Join(tmp, "bundle")
	os.WriteFile(manifest, []byte(meteredManifest), 0o644)
	spec := "sim:fnb58:" + filepath.Join(dir, "01_pi4_baseline.csv") + "," + filepath.Join(dir, "03_pi4_keys_ecdsa.csv")
	code, stdout, stderr := pq(t, "run", manifest, "--quiet", "--keys", keys, "--out", out, "--meter", spec)
	if code != 0 || !strings.Contains(stdout, "simulated meter") || !strings.Contains(stdout, "adds 10s idle + 2 cells × 6s load = 22s") ||
		!strings.Contains(stdout, "energy: ML-KEM-768 keygen: ") || !strings.Contains(stdout, "[simulated meter: a replayed capture") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := artifacts.ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	res, env := parsed(t, b)
	if env.Meter == nil || !env.Meter.Simulated || env.Meter.Kind != "fnb58" || env.Meter.Rate != 100 {
		t.Fatalf("environment meter %+v: want the simulated fnb58 at 100/s", env.Meter)
	}
	p, err := artifacts.ParsePower(b.Files[artifacts.FilePower])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Idle.Volts) != 1000 || len(p.Load) != 2 {
		t.Fatalf("power.csv: %d idle samples, %d load windows; want 1000 and 2", len(p.Idle.Volts), len(p.Load))
	}
	for _, c := range res.Cells {
		e := c.Energy
		if e == nil || e.Windows == nil || !e.Simulated || !strings.Contains(e.Source, "simulated meter") {
			t.Fatalf("%s %s: energy %+v: want a simulated, labelled metered figure", c.Algorithm, c.Operation, e)
		}
		tOp, _ := energy.CellTOp(c, 0)
		want, err := energy.FromPower(p.Idle, p.Load[artifacts.CellKey{Algorithm: c.Algorithm, Operation: c.Operation}], 100, tOp, e.Source, true)
		if err != nil {
			t.Fatal(err)
		}
		if *want.JoulesPerOp != *e.JoulesPerOp || *want.Windows != *e.Windows {
			t.Errorf("%s %s: %+v recorded, power.csv gives %+v", c.Algorithm, c.Operation, e.Windows, want.Windows)
		}
		if w := e.Windows; !(w.Lo <= e.JoulesPerOp.Median && e.JoulesPerOp.Median <= w.Hi && e.JoulesPerOp.Median > 0) {
			t.Errorf("%s %s: %g J outside [%g, %g]", c.Algorithm, c.Operation, e.JoulesPerOp.Median, w.Lo, w.Hi)
		}
		t.Logf("%s %s: %.6g J/op [%.6g, %.6g], idle %.4g W, load %.4g W, T_op %.4g s (simulated meter)", c.Algorithm, c.Operation, e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi, e.Windows.IdleWatts, e.Windows.LoadWatts, e.Windows.TOp)
	}
	code, stdout, stderr = pq(t, "verify", out)
	if code != 0 || !strings.Contains(stdout, "energy re-derives from power.csv") || !strings.Contains(stdout, "ok  power.csv sha256") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := artifacts.CheckPublishable(b); !errors.Is(err, artifacts.ErrSimulatedMeter) {
		t.Errorf("submit's check: %v, want the simulated meter refused", err)
	}
	code, _, stderr = pq(t, "submit", out, "--portal", "http://127.0.0.1:1", "--token", "t")
	if code == 0 || !strings.Contains(stderr, "is not submitted") || !strings.Contains(stderr, "simulated meter") {
		t.Errorf("submit: exit %d %s", code, stderr)
	}
	editedPowerRefused(t, out, keys)
}

func parsed(t *testing.T, b *artifacts.Bundle) (*artifacts.Result, *artifacts.Environment) {
	t.Helper()
	res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	return res, &env
}

// editedPowerRefused: one load sample's current raised by a tenth is refused by verify, both
// when the bundle is re-signed (the energy no longer follows) and when it is not (the
// signature breaks).
func editedPowerRefused(t *testing.T, out, keys string) {
	t.Helper()
	b, err := artifacts.ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := artifacts.ParsePower(b.Files[artifacts.FilePower])
	if err != nil {
		t.Fatal(err)
	}
	w := p.Load[p.Order[0]]
	w.Amps[7] *= 1.1
	b.Files[artifacts.FilePower] = artifacts.FormatPower(p)
	unsigned := filepath.Join(t.TempDir(), "unsigned")
	if err := artifacts.WriteDir(unsigned, b); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := pq(t, "verify", unsigned)
	if code == 0 || !strings.Contains(stdout+stderr, artifacts.FilePower) {
		t.Errorf("an edited power.csv, not re-signed: exit %d\n%s%s", code, stdout, stderr)
	}
	id, err := identity.LoadIdentity(keys)
	if err != nil {
		t.Fatal(err)
	}
	v, err := attest.Verify(&artifacts.Bundle{Files: mustRead(t, out)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	delete(b.Files, artifacts.FileAttestation)
	if err := attest.Sign(b, id, v.Statement.Predicate); err != nil {
		t.Fatal(err)
	}
	resigned := filepath.Join(t.TempDir(), "resigned")
	if err := artifacts.WriteDir(resigned, b); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = pq(t, "verify", resigned)
	if code == 0 || !strings.Contains(stderr, "energy does not re-derive") || !strings.Contains(stderr, "energy does not follow from power.csv") {
		t.Errorf("an edited power.csv, re-signed: exit %d\n%s%s", code, stdout, stderr)
	}
}

func mustRead(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	b, err := artifacts.ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	return b.Files
}
