package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/internal/shareddata"
	"pqrepro/portal/blob"
	"pqrepro/portal/ingest"
	"pqrepro/portal/store"
	"pqrepro/runner/boards"
	"pqrepro/runner/host"
)

// TestMeteredRunSimKinds: pqrepro run with the simulated PPK2 and INA2xx, each replaying
// paper002's Pi 4 idle and ECDSA keygen captures through its real driver: the bundle names the
// meter (its kind and rate), every cell's energy is simulated and labelled, verify re-derives
// it from power.csv, and submit refuses the bundle exactly as a simulated FNB58's.
func TestMeteredRunSimKinds(t *testing.T) {
	simLockstep = true
	t.Cleanup(func() { simLockstep = false })
	dir := shareddata.Dir(t, "reference-data", "paper002-energy-openssl", "raw", "power_readings", "pi4", "csv_files")
	for _, c := range []struct {
		kind string
		rate float64
	}{{"ppk2", 1000}, {"ina2xx", 50}} {
		t.Run(c.kind, func(t *testing.T) {
			tmp := t.TempDir()
			manifest, keys, out := filepath.Join(tmp, "m.yaml"), filepath.Join(tmp, "keys"), filepath.Join(tmp, "bundle")
			os.WriteFile(manifest, []byte(meteredManifest), 0o644)
			spec := "sim:" + c.kind + ":" + filepath.Join(dir, "01_pi4_baseline.csv") + "," + filepath.Join(dir, "03_pi4_keys_ecdsa.csv")
			code, stdout, stderr := pq(t, "run", manifest, "--quiet", "--keys", keys, "--out", out, "--meter", spec)
			if code != 0 || !strings.Contains(stdout, "through the "+c.kind+" driver") || !strings.Contains(stdout, "[simulated meter: a replayed capture") {
				t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
			}
			// The PPK2's logic inputs are recorded, but the host raises no marker: no direct
			// figure, with the reason; a meter without inputs has no direct line at all.
			if direct := strings.Contains(stdout, "direct integration: none (0 complete marked operations"); direct != (c.kind == "ppk2") {
				t.Errorf("%s: direct integration line %v:\n%s", c.kind, direct, stdout)
			}
			b, err := artifacts.ReadBundle(out)
			if err != nil {
				t.Fatal(err)
			}
			res, env := parsed(t, b)
			if env.Meter == nil || !env.Meter.Simulated || env.Meter.Kind != c.kind || env.Meter.Rate != c.rate {
				t.Fatalf("environment meter %+v: want the simulated %s at %g/s", env.Meter, c.kind, c.rate)
			}
			for _, cell := range res.Cells {
				if e := cell.Energy; e == nil || e.Windows == nil || !e.Simulated || e.JoulesPerOp == nil || !(e.JoulesPerOp.Median > 0) {
					t.Errorf("%s %s: energy %+v: want a simulated metered figure", cell.Algorithm, cell.Operation, e)
				}
			}
			code, stdout, stderr = pq(t, "verify", out)
			if code != 0 || !strings.Contains(stdout, "energy re-derives from power.csv") {
				t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
			}
			if err := artifacts.CheckPublishable(b); !errors.Is(err, artifacts.ErrSimulatedMeter) {
				t.Errorf("submit's check: %v, want the simulated meter refused", err)
			}
			code, _, stderr = pq(t, "submit", out, "--portal", "http://127.0.0.1:1", "--token", "t")
			if code == 0 || !strings.Contains(stderr, "is not submitted") || !strings.Contains(stderr, "simulated meter") {
				t.Errorf("submit: exit %d %s", code, stderr)
			}
			ingestRefuses(t, b, keys)
		})
	}
}

// TestRunRefusesAnAbsentMeter: a lab's meter that cannot be opened stops the run before
// anything runs, naming the device and why (real files, no meter attached).
func TestRunRefusesAnAbsentMeter(t *testing.T) {
	tmp := t.TempDir()
	manifest := filepath.Join(tmp, "m.yaml")
	os.WriteFile(manifest, []byte(meteredManifest), 0o644)
	plain := filepath.Join(tmp, "hidraw0")
	os.WriteFile(plain, []byte("x"), 0o644)
	for spec, want := range map[string]string{
		"fnb58:" + plain:                         "not a character device",
		"fnb58:" + filepath.Join(tmp, "hidraw9"): "no such file",
		"ppk2:" + filepath.Join(tmp, "ttyACM3"):  "no default",
		"ppk2:" + plain + ":source:3300":         "hidraw0",
		"ina2xx:" + tmp:                          "ina2xx " + tmp,
		"sim:ppk3:a,b":                           `kind "ppk3"`,
	} {
		out := filepath.Join(t.TempDir(), "bundle")
		code, stdout, stderr := pq(t, "run", manifest, "--quiet", "--keys", filepath.Join(tmp, "keys"), "--out", out, "--meter", spec)
		if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stdout, "running ") {
			t.Errorf("--meter %s: exit %d, stderr %q, want it to say %q before running", spec, code, stderr, want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--meter %s: a bundle was written", spec)
		}
	}
}

// TestMapsMeter: a hardware map's host entry with a meter (an INA226 hwmon directory of real
// files; the map's own check wants /sys paths, so the map is built here rather than parsed)
// gives the board the runner opens, on the command line and in the agent alike, that meter:
// run names it without --meter, and its windows are recorded from the files, not simulated.
func TestMapsMeter(t *testing.T) {
	hw := t.TempDir()
	for attr, v := range map[string]string{"name": "ina226\n", "in1_input": "5080\n", "curr1_input": "493\n", "power1_input": "2504440\n"} {
		os.WriteFile(filepath.Join(hw, attr), []byte(v), 0o644)
	}
	ctx := context.Background()
	m := &boards.Map{Boards: []boards.Spec{{Name: "bench", Driver: artifacts.DriverHost, Class: "host", Meter: &boards.MeterSpec{Kind: "ina2xx", Device: hw}}}}
	e, err := boards.Find(boards.Discover(ctx, boards.Config{Map: m}), "bench")
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Board("")
	if err != nil {
		t.Fatal(err)
	}
	man, err := artifacts.ParseManifest([]byte(meteredManifest), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := useMeter(ctx, b, man, "", &out); err != nil || !strings.Contains(out.String(), "meter: ina2xx:"+hw+" (the hardware map's") {
		t.Fatalf("useMeter: %v %q", err, out.String())
	}
	s, info, err := b.(*host.Host).Meter.Window(ctx, true, 500*time.Millisecond)
	if err != nil || len(s) != 5 || s[0].Amps != 0.493 || info.Simulated || info.Device != hw {
		t.Fatalf("window %+v %+v %v", s, info, err)
	}
}

// ingestRefuses: the portal's ingest, given the signed bundle as a community upload, refuses
// it for its simulated meter and stores nothing.
func ingestRefuses(t *testing.T, b *artifacts.Bundle, keys string) {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := blob.OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	published := 0
	g := &ingest.Ingest{Catalog: cat, Blobs: blobs, PortalURL: "http://127.0.0.1:8080", MaxBundleBytes: 64 << 20,
		Commit: func(context.Context, store.Publication) (int64, error) { published++; return int64(published), nil }}
	id, err := identity.LoadIdentity(keys)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Publish(context.Background(), b, ingest.Incoming{Keys: id.Public(), Origin: attest.OriginCommunity})
	if !errors.Is(err, artifacts.ErrSimulatedMeter) || published != 0 {
		t.Errorf("ingest: %v (%d published), want the simulated meter refused", err, published)
	}
}
