package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/energy"
	"pqrepro/experiments"
	"pqrepro/internal/shareddata"
	"pqrepro/tls13/interop"
)

// meteredOpenSSLManifest is the first check of paper002's C002-05 (ML-KEM-768 against
// ECDH-P256 key generation, energy per iteration of whole openssl processes) as a small
// openssl-cli run with a metered pass.
const meteredOpenSSLManifest = `apiVersion: pqrepro/v1
kind: kem-bench
metadata:
  paper: paper002
  name: metered-openssl-sim
spec:
  algorithms: [ML-KEM-768, ECDH-P256]
  operations: [keygen]
  warmup: 0
  iterations: 8
  method: openssl-cli
  seed: "s1"
  boards: [host]
  energy:
    idle: 10s
    load: 6s
`

// TestMeteredOpenSSLRun: pqrepro run of an openssl-cli manifest on the host with the simulated
// FNB58 (paper002's Pi 4 idle and ECDSA keygen captures) gives each cell an energy per
// iteration from a load window of its openssl commands run back to back, labelled simulated,
// with T_op the cell's median process time; verify re-derives it from power.csv; and
// paper002's C002-05, whose check applies to openssl-cli runs' energy, is untestable on it
// because the meter is simulated (a replayed capture is not a measurement).
func TestMeteredOpenSSLRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o, err := interop.FindOpenSSL(ctx)
	if err != nil {
		t.Fatalf("%v (run scripts/openssl-root, or set PQREPRO_OPENSSL_ROOT)", err)
	}
	simLockstep = true
	t.Cleanup(func() { simLockstep = false })
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4", "csv_files")
	tmp := t.TempDir()
	manifest, keys, out := filepath.Join(tmp, "m.yaml"), filepath.Join(tmp, "keys"), filepath.Join(tmp, "bundle")
	if err := os.WriteFile(manifest, []byte(meteredOpenSSLManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "sim:fnb58:" + filepath.Join(dir, "01_pi4_baseline.csv") + "," + filepath.Join(dir, "03_pi4_keys_ecdsa.csv")
	code, stdout, stderr := pq(t, "run", manifest, "--quiet", "--keys", keys, "--out", out, "--meter", spec, "--openssl-root", o.Root)
	if code != 0 || !strings.Contains(stdout, "adds 10s idle + 2 cells × 6s load = 22s") ||
		!strings.Contains(stdout, "energy: ML-KEM-768 keygen: ") || !strings.Contains(stdout, "energy: ECDH-P256 keygen: ") ||
		!strings.Contains(stdout, "[simulated meter: a replayed capture") {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := artifacts.ReadBundle(out)
	if err != nil {
		t.Fatal(err)
	}
	runLog := string(b.Files[artifacts.FileLog])
	for _, line := range strings.Split(runLog, "\n") {
		if strings.Contains(line, "the load window ran") {
			t.Log(line)
		}
	}
	if strings.Count(runLog, "openssl commands back to back") != 2 {
		t.Errorf("log.txt: want each cell's load window logged with its iterations\n%s", runLog)
	}
	res, env := parsed(t, b)
	if env.Meter == nil || !env.Meter.Simulated || env.OpenSSL == nil {
		t.Fatalf("environment: meter %+v, openssl %+v: want the simulated fnb58 and the openssl used", env.Meter, env.OpenSSL)
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
		if c.Status != artifacts.StatusOK || e == nil || e.Windows == nil || !e.Simulated || !strings.Contains(e.Source, "simulated meter") {
			t.Fatalf("%s %s: %s, energy %+v: want a simulated, labelled metered figure", c.Algorithm, c.Operation, c.Status, e)
		}
		if len(c.Commands) != 2 || c.Stats == nil || c.Stats.N != 8 {
			t.Fatalf("%s %s: %d commands, stats %+v: want genpkey and pkey timed over 8 iterations", c.Algorithm, c.Operation, len(c.Commands), c.Stats)
		}
		tOp, err := energy.CellTOp(c, 0)
		if err != nil || tOp != c.Stats.Median*1e-9 || e.Windows.TOp != tOp {
			t.Fatalf("%s %s: T_op %g (%v), recorded %g: want the median iteration %g ns", c.Algorithm, c.Operation, tOp, err, e.Windows.TOp, c.Stats.Median)
		}
		want, err := energy.FromPower(p.Idle, p.Load[artifacts.CellKey{Algorithm: c.Algorithm, Operation: c.Operation}], 100, tOp, e.Source, true)
		if err != nil {
			t.Fatal(err)
		}
		if *want.JoulesPerOp != *e.JoulesPerOp || *want.Windows != *e.Windows {
			t.Errorf("%s %s: %+v recorded, power.csv gives %+v", c.Algorithm, c.Operation, e.Windows, want.Windows)
		}
		t.Logf("%s %s: %.6g J per iteration [%.6g, %.6g], idle %.4g W, load %.4g W, T_op %.4g s (simulated meter)", c.Algorithm, c.Operation, e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi, e.Windows.IdleWatts, e.Windows.LoadWatts, e.Windows.TOp)
	}
	code, stdout, stderr = pq(t, "verify", out)
	if code != 0 || !strings.Contains(stdout, "energy re-derives from power.csv") {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	claimOnSimulated(t, b)
}

// claimOnSimulated checks paper002's C002-05 on the simulated-meter bundle: its energy check
// applies to openssl-cli runs and the cells have metered energy, but a replayed capture is not
// a measurement, so it is untestable with that reason.
func claimOnSimulated(t *testing.T, b *artifacts.Bundle) {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Paper("paper002")
	if !ok {
		t.Fatal("no paper002")
	}
	cl, ok := p.Claim("C002-05")
	if !ok {
		t.Fatal("no C002-05")
	}
	run, err := compare.RunFromBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	cr := compare.CheckClaim(cl, run, artifacts.MethodOpenSSLCLI)
	if len(cr.Checks) != 1 || cr.Checks[0].Verdict != compare.Untestable || !strings.Contains(cr.Checks[0].Detail, artifacts.SimulatedMeterLabel) {
		t.Fatalf("C002-05 on a simulated meter: %s %+v: want its check untestable, the simulated meter named", cr.Verdict, cr.Checks)
	}
	t.Logf("C002-05: %s; its check %s: %s", cr.Verdict, cr.Checks[0].Verdict, cr.Checks[0].Detail)
}
