package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/experiments"
	"pqrepro/runner"
)

// TestHostDeclaredRPi4Refused: an amd64 EPYC VM declared rpi4-b refuses the run before
// anything is timed, naming both sides, and produces no bundle.
func TestHostDeclaredRPi4Refused(t *testing.T) {
	id, _, err := identity.LoadOrCreateIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{Class: "rpi4-b", Roots: fixture("epyc-vm")}
	m := manifest(t, kemSrc)
	b, _, err := runner.Execute(context.Background(), h, m, runner.Options{Identity: id, Version: "test"})
	if err == nil || b != nil {
		t.Fatalf("an EPYC VM declared rpi4-b ran: bundle %v, err %v", b != nil, err)
	}
	var me *experiments.ClassMismatchError
	if !errors.As(err, &me) {
		t.Fatalf("error is not a class mismatch: %v", err)
	}
	for _, want := range []string{"rpi4-b", "Raspberry Pi 4", "Cortex-A72", "AMD EPYC", "virtualized (qemu)", "refusing to file its results under rpi4-b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	var re *runner.RunError
	if !errors.As(err, &re) || strings.Contains(string(re.Log), "cell ") {
		t.Errorf("a cell ran before the refusal: %s", re.Log)
	}
	if boards := AgentBoards("rpi4-b"); boards[0].Info.Available && boards[0].Info.ClassStatus == artifacts.ClassVerified {
		t.Errorf("the runner offers this machine as a verified rpi4-b: %+v", boards[0].Info)
	}
}

// TestHostPicoWRefused: `pqrepro run paper000/matrix --board-class pico-w` on an amd64 VM
// is refused before anything runs: a Pico W is a microcontroller, never the host driver.
func TestHostPicoWRefused(t *testing.T) {
	id, _, err := identity.LoadOrCreateIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"pico-w", "pico2-w", "esp32"} {
		b, _, err := runner.Execute(context.Background(), &Host{Class: class, Roots: fixture("epyc-vm")}, manifest(t, kemSrc), runner.Options{Identity: id, Version: "test"})
		var me *experiments.ClassMismatchError
		if b != nil || !errors.As(err, &me) || !strings.Contains(err.Error(), "microcontroller") {
			t.Errorf("%s on the host driver: bundle %v, err %v", class, b != nil, err)
		}
	}
}

// TestHostDeclaredClassRecorded: a class the catalogue cannot check runs and is recorded
// as declared, with the reason.
func TestHostDeclaredClassRecorded(t *testing.T) {
	id, _, err := identity.LoadOrCreateIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := manifest(t, strings.Replace(strings.Replace(kemSrc, "[ML-KEM-512, X25519, ECDH-P256]", "[X25519]", 1), "[keygen, encaps, decaps, derive]", "[keygen, derive]", 1))
	m.Spec.Iterations = 3
	b, res, err := runner.Execute(context.Background(), &Host{Class: "my-lab-box", Roots: fixture("epyc-vm")}, m, runner.Options{Identity: id, Version: "test", Roots: fixture("epyc-vm")})
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	if res.Board != "my-lab-box" || env.Board.ClassStatus != artifacts.ClassDeclared || !strings.Contains(env.Board.ClassNote, "not in the board catalogue") {
		t.Errorf("board %s recorded as %q (%s), want declared", res.Board, env.Board.ClassStatus, env.Board.ClassNote)
	}
	tc := env.Timing
	if tc == nil {
		t.Fatal("no timing context in environment.json")
	}
	if tc.ClockSource != "kvm-clock" || tc.Virtualization != "qemu" || tc.LoadBefore == nil || tc.LoadBefore[0] != 64 || !tc.Loaded {
		t.Errorf("timing context not read from the roots: %+v", tc)
	}
	if tc.ResolutionNs <= 0 || tc.ReadCostNs <= 0 || tc.GOMAXPROCS < 1 {
		t.Errorf("implausible clock: resolution %v ns, read cost %v ns, GOMAXPROCS %d", tc.ResolutionNs, tc.ReadCostNs, tc.GOMAXPROCS)
	}
	var virtual, load bool
	for _, w := range tc.Warnings {
		virtual = virtual || strings.HasPrefix(w, "virtual machine")
		load = load || strings.HasPrefix(w, "loaded machine") && strings.Contains(w, "64.00")
	}
	if !virtual || !load {
		t.Errorf("warnings %q miss the virtual machine or the load", tc.Warnings)
	}
}

// TestExternalLoadRecorded: a host run on this machine records other processes' CPU demand,
// sampled while it measured, with the threshold it was judged against.
func TestExternalLoadRecorded(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	id, _, err := identity.LoadOrCreateIdentity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := manifest(t, kemSrc)
	m.Spec.Iterations = 5
	b, _, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: id, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	x := env.Timing.External
	if x == nil || x.Absent != "" || x.Intervals < 1 || len(x.CPUs) != x.Intervals || x.Threshold != runner.ExternalThreshold*float64(env.CPUs) || !strings.Contains(x.Method, "process tree") {
		t.Fatalf("external load %+v", x)
	}
	if env.Timing.Loaded != x.Exceeded {
		t.Errorf("loaded %v but external exceeded %v: the measured external load decides", env.Timing.Loaded, x.Exceeded)
	}
}

// fixture is a machine laid out under runner/testdata/machines.
func fixture(name string) runner.Roots {
	dir := filepath.Join("..", "testdata", "machines", name)
	return runner.Roots{Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys")}
}
