package serialport

import (
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/energy"
	"pqrepro/internal/shareddata"
	"pqrepro/runner/meter/sim"
)

// TestMeteredFirmwareBoard meters the host build of the firmware behind a pty, as a lab's
// board on its UART, with the simulated FNB58 replaying paper002's Pi 4 captures (the meter
// is the only part not real): the idle window while the board waits, then a load window per
// ok cell while the board runs LOOP for the window's length; each cell's energy is the
// simulated, labelled figure power.csv re-derives with the cell's own median as T_op, and
// the log says how many operations LOOP ran (the board's counts add up to the window).
func TestMeteredFirmwareBoard(t *testing.T) {
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4")
	meter, err := sim.Open(sim.Spec{Kind: "fnb58", Idle: filepath.Join(dir, "csv_files", "01_pi4_baseline.csv"), Load: filepath.Join(dir, "cfn_files", "02_pi4_keys_rsa.cfn")})
	if err != nil {
		t.Fatal(err)
	}
	meter.Lockstep = true
	port, elf := startHostBoard(t)
	b := &Serial{Name: "desk-1", Class: "bench-board", Port: port, Firmware: elf, RetryInterval: 300 * time.Millisecond, SkipSelfTest: true, Meter: meter}
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: serial-metered}
spec:
  algorithms: [ML-KEM-512, X25519]
  operations: [encaps, decaps]
  iterations: 5
  seed: "metered serial board"
  boards: [bench-board]
  energy: {idle: 5s, load: 5s}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	bundle, res, err := execute(t, b, m)
	if err != nil {
		t.Fatalf("%v\n%s", err, runLog(err))
	}
	if _, err := attest.Verify(bundle, nil); err != nil {
		t.Fatal(err)
	}
	p, err := artifacts.ParsePower(bundle.Files[artifacts.FilePower])
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	json.Unmarshal(bundle.Files[artifacts.FileEnvironment], &env)
	if env.Meter == nil || !env.Meter.Simulated || len(p.Load) != 2 {
		t.Fatalf("meter %+v, %d load windows; want the simulated meter and 2", env.Meter, len(p.Load))
	}
	if err := energy.RederivePower(res, &env, bundle.Files[artifacts.FilePower]); err != nil {
		t.Fatal(err)
	}
	log := string(bundle.Files[artifacts.FileLog])
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK {
			if c.Algorithm != "X25519" {
				t.Errorf("%s %s: %s %s", c.Algorithm, c.Operation, c.Status, c.Error)
			}
			continue
		}
		e := c.Energy
		if e == nil || e.Windows == nil || !e.Simulated || math.Abs(e.Windows.TOp-c.Stats.Median*1e-9) > 1e-15 || e.Windows.LoadSeconds != 5 {
			t.Errorf("%s %s: energy %+v: want the simulated figure over a 5 s window with the cell's median as T_op", c.Algorithm, c.Operation, e)
		}
		re := regexp.MustCompile(`energy: ` + c.Algorithm + ` ` + c.Operation + `: LOOP ran ([0-9]+) operations, ([0-9]+) ns of a budget of ([0-9]+) `)
		mm := re.FindStringSubmatch(log)
		if mm == nil {
			t.Errorf("%s %s: no LOOP line in the log", c.Algorithm, c.Operation)
			continue
		}
		ops, _ := strconv.ParseFloat(mm[1], 64)
		count, _ := strconv.ParseUint(mm[2], 10, 64)
		budget, _ := strconv.ParseUint(mm[3], 10, 64)
		if budget != 5_100_000_000 || count < budget || ops < 1 {
			t.Errorf("%s %s: LOOP %s", c.Algorithm, c.Operation, mm[0])
		}
		t.Logf("%s %s: %.4g J/op [%.4g, %.4g], T_op %.3g s; %s", c.Algorithm, c.Operation, e.JoulesPerOp.Median, e.Windows.Lo, e.Windows.Hi, e.Windows.TOp, mm[0])
	}
	if !strings.Contains(log, "then a load window of 5s per cell while it runs LOOP") {
		t.Errorf("the log does not announce the metered pass:\n%s", log)
	}
}
