package host

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/energy"
	"pqrepro/experiments"
	"pqrepro/internal/shareddata"
	"pqrepro/runner"
	"pqrepro/runner/meter/sim"
	"pqrepro/runner/method/openssl"
	"pqrepro/tls13/interop"
)

const meteredSrc = `apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: test, name: kem}
spec:
  algorithms: [X25519]
  operations: [keygen, derive]
  warmup: 1
  iterations: 5
  seed: test-seed
  energy: {idle: 8s, load: 5s}
`

func simBench(t *testing.T) *sim.Bench {
	t.Helper()
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4")
	b, err := sim.Open(sim.Spec{Kind: "fnb58", Idle: filepath.Join(dir, "csv_files", "01_pi4_baseline.csv"), Load: filepath.Join(dir, "cfn_files", "02_pi4_keys_rsa.cfn")})
	if err != nil {
		t.Fatal(err)
	}
	b.Lockstep = true
	return b
}

// TestMeteredPass: the simulated FNB58 (paper002's Pi 4 idle and RSA keygen captures) gives
// every cell a simulated metered energy and the bundle a power.csv; a meter unplugged in
// every load window leaves every cell ok without energy, with the reason, and the run signed.
func TestMeteredPass(t *testing.T) {
	m := manifest(t, meteredSrc)
	b, res, err := runner.Execute(context.Background(), &Host{Meter: simBench(t)}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Files[artifacts.FilePower]; !ok {
		t.Fatal("no power.csv")
	}
	var env artifacts.Environment
	json.Unmarshal(b.Files[artifacts.FileEnvironment], &env)
	if env.Meter == nil || !env.Meter.Simulated || !strings.Contains(env.EnergySource, "simulated meter") {
		t.Errorf("environment: meter %+v, energy source %q", env.Meter, env.EnergySource)
	}
	for _, c := range res.Cells {
		if c.Energy == nil || c.Energy.Windows == nil || !c.Energy.Simulated || c.Energy.Windows.IdleSeconds != 8 || c.Energy.Windows.LoadSeconds != 5 {
			t.Errorf("%s %s: energy %+v", c.Algorithm, c.Operation, c.Energy)
		}
	}

	bench := simBench(t)
	bench.UnplugLoadAfter = 30
	_, res, err = runner.Execute(context.Background(), &Host{Meter: bench}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK || c.Energy == nil || c.Energy.JoulesPerOp != nil || !strings.Contains(c.Energy.Absent, "meter unplugged") {
			t.Errorf("%s %s with the meter unplugged: status %s, energy %+v", c.Algorithm, c.Operation, c.Status, c.Energy)
		}
	}
}

const meteredOpenSSLKEM = `apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: test, name: kem-openssl}
spec:
  algorithms: [ML-KEM-512]
  operations: [keygen]
  warmup: 0
  iterations: 3
  method: openssl-cli
  seed: test-seed
  energy: {idle: 6s, load: 5s}
`

const meteredOpenSSLSig = `apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: test, name: sig-openssl}
spec:
  algorithms: [ECDSA-P256]
  operations: [sign]
  warmup: 0
  iterations: 3
  method: openssl-cli
  message: {size: 19600}
  seed: test-seed
  energy: {idle: 6s, load: 5s}
`

// TestMeteredOpenSSLFaults: an openssl-cli cell whose load window loses its meter (unplugged)
// stays ok without energy, with the reason; ECDSA signing with the paper's command fails as
// it did for the paper, and its corrected-command cell, which has no load window of its own
// (power.csv holds one per cell), has no energy and says why; both bundles re-derive.
func TestMeteredOpenSSLFaults(t *testing.T) {
	o, err := interop.FindOpenSSL(context.Background())
	if err != nil {
		t.Fatalf("%v (run scripts/openssl-root, or set PQREPRO_OPENSSL_ROOT)", err)
	}
	bench := simBench(t)
	bench.UnplugLoadAfter = 30
	h := &Host{Meter: bench, OpenSSL: openssl.Config{Root: o.Root}}
	_, res, err := runner.Execute(context.Background(), h, manifest(t, meteredOpenSSLKEM), runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cells[0]; c.Status != artifacts.StatusOK || c.Energy == nil || c.Energy.JoulesPerOp != nil || !strings.Contains(c.Energy.Absent, "meter unplugged") {
		t.Errorf("%s %s with the meter unplugged: status %s, energy %+v", c.Algorithm, c.Operation, c.Status, c.Energy)
	}

	h = &Host{Meter: simBench(t), OpenSSL: openssl.Config{Root: o.Root}}
	b, res, err := runner.Execute(context.Background(), h, manifest(t, meteredOpenSSLSig), runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 || res.Cells[0].Status != artifacts.StatusFailed || res.Cells[1].Status != artifacts.StatusOK {
		t.Fatalf("cells %+v: want the paper's command failed and the corrected one ok", res.Cells)
	}
	if e := res.Cells[1].Energy; e == nil || e.JoulesPerOp != nil || !strings.Contains(e.Absent, "no load window of its own") {
		t.Errorf("the corrected command's cell: energy %+v", e)
	}
	var env artifacts.Environment
	json.Unmarshal(b.Files[artifacts.FileEnvironment], &env)
	if err := energy.RederivePower(res, &env, b.Files[artifacts.FilePower]); err != nil {
		t.Errorf("re-derive: %v", err)
	}
}

const meteredTLS = `apiVersion: pqrepro/v1
kind: tls-matrix
metadata: {paper: test, name: tls-metered}
spec:
  tls:
    groups: [ML-KEM-512, X25519]
    signatures: [ML-DSA-44]
    stacks: [pqrepro, crypto/tls]
    batch: 2
    echo: 16
  warmup: 1
  iterations: 4
  seed: s
  energy: {idle: 6s, load: 5s}
`

// TestMeteredTLSMatrix: a tls-matrix run on the host with the simulated FNB58 gives each
// cell's first stack an energy per handshake from a load window of handshakes back to back
// (T_op its median handshake, both ends on this machine), labelled simulated; the second
// stack has none, with the reason; the bundle's energy re-derives from power.csv.
func TestMeteredTLSMatrix(t *testing.T) {
	var log strings.Builder
	b, res, err := runner.Execute(context.Background(), &Host{Meter: simBench(t)}, manifest(t, meteredTLS), runner.Options{Identity: testIdentity(t), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	metered := 0
	for _, c := range res.Cells {
		switch {
		case c.Status != artifacts.StatusOK:
		case c.Variant == "":
			e := c.Energy
			if e == nil || e.Windows == nil || !e.Simulated || e.Windows.TOp != c.Stats.Median*1e-9 {
				t.Errorf("%s (pqrepro stack): energy %+v: want a simulated figure per handshake with T_op the median", c.Algorithm, e)
				continue
			}
			metered++
			t.Logf("%s: %.4g J per handshake [%.4g, %.4g], T_op %.4g s (simulated meter)", c.Algorithm, e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi, e.Windows.TOp)
		default:
			if c.Energy == nil || !strings.Contains(c.Energy.Absent, "first stack (pqrepro) only") {
				t.Errorf("%s [%s]: energy %+v", c.Algorithm, c.Variant, c.Energy)
			}
		}
	}
	if metered != 2 {
		t.Fatalf("%d metered cells, want ML-KEM-512 and X25519 on the pqrepro stack\n%s", metered, log.String())
	}
	var env artifacts.Environment
	json.Unmarshal(b.Files[artifacts.FileEnvironment], &env)
	if err := energy.RederivePower(res, &env, b.Files[artifacts.FilePower]); err != nil {
		t.Errorf("re-derive: %v", err)
	}
	// paper000's C000-03 on it: its ML-DSA-44 check has both cells' energy, simulated, so it
	// is untestable with that reason.
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Paper("paper000")
	cl, ok := p.Claim("C000-03")
	if !ok {
		t.Fatal("no C000-03")
	}
	run, err := compare.RunFromBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	cr := compare.CheckClaim(cl, run, "")
	if ch := cr.Checks[0]; ch.Verdict != compare.Untestable || !strings.Contains(ch.Detail, artifacts.SimulatedMeterLabel) {
		t.Errorf("C000-03's ML-DSA-44 check on a simulated meter: %s %s", ch.Verdict, ch.Detail)
	}
	t.Logf("C000-03: %s; its ML-DSA-44 check %s: %s", cr.Verdict, cr.Checks[0].Verdict, cr.Checks[0].Detail)
}
