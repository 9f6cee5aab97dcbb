package host

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/runner"
	"pqrepro/runner/exec/bench"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/method/procop"
	"pqrepro/runner/trial"
)

// TestMain lets the test binary act as the one-operation child of the
// process-per-operation method and the TLS server child of tls-matrix cells, exactly as the
// pqrepro binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == procop.ChildOpArg {
		os.Exit(procop.ChildOp(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == tlsmatrix.TLSServerArg {
		os.Exit(tlsmatrix.TLSServer(os.Stdin, os.Stdout))
	}
	os.Exit(m.Run())
}

func manifest(t *testing.T, src string) *artifacts.Manifest {
	t.Helper()
	m, err := artifacts.ParseManifest([]byte(src), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const kemSrc = `apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: test, name: kem}
spec:
  algorithms: [ML-KEM-512, X25519, ECDH-P256]
  operations: [keygen, encaps, decaps, derive]
  warmup: 1
  iterations: 5
  seed: test-seed
`

const sigSrc = `apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: test, name: sig}
spec:
  algorithms: [ML-DSA-44, SLH-DSA-SHA2-128f, Ed25519, ECDSA-P256, RSA-2048]
  operations: [keygen, sign, verify]
  message: {size: 100}
  warmup: 1
  iterations: 4
  seed: test-seed
`

func testIdentity(t *testing.T) *identity.Identity {
	t.Helper()
	id, err := identity.GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestHostRunsEveryKind(t *testing.T) {
	seq := `apiVersion: pqrepro/v1
kind: kem-sig-sequence
metadata: {paper: test, name: seq}
spec:
  algorithms: [ML-KEM-512+ML-DSA-44, ML-KEM-768+SLH-DSA-SHAKE-128f]
  message: {text: "Test message"}
  iterations: 3
  seed: s
`
	for _, tc := range []struct {
		name  string
		src   string
		cells int
	}{{"kem", kemSrc, 3 + 2 + 2}, {"sig", sigSrc, 15}, {"sequence", seq, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			m := manifest(t, tc.src)
			b, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t), Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Cells) != tc.cells {
				t.Fatalf("%d cells, want %d", len(res.Cells), tc.cells)
			}
			for _, c := range res.Cells {
				if c.Status != artifacts.StatusOK {
					t.Errorf("%s %s: %s %s", c.Algorithm, c.Operation, c.Status, c.Error)
					continue
				}
				if c.Stats.N != m.Spec.Iterations || c.Stats.Min <= 0 || c.Stats.Min > c.Stats.Median || c.Stats.Median > c.Stats.Max {
					t.Errorf("%s %s: implausible stats %+v", c.Algorithm, c.Operation, c.Stats)
				}
				if c.Unit != artifacts.UnitNanoseconds {
					t.Errorf("unit %q", c.Unit)
				}
			}
			if _, err := attest.Verify(b, nil); err != nil {
				t.Fatalf("fresh bundle does not verify: %v", err)
			}
			lines := strings.Count(string(b.Files[artifacts.FileSamples]), "\n")
			if want := 1 + tc.cells*m.Spec.Iterations; lines != want {
				t.Errorf("samples.csv has %d lines, want %d", lines, want)
			}
		})
	}
}

// TestSignatureSizesMeasured checks sizes come from the outputs, and that memory is recorded.
func TestCellRecordsSizesAndMemory(t *testing.T) {
	m := manifest(t, sigSrc)
	m.Spec.Algorithms = []string{"ML-DSA-65"}
	_, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.Sizes == nil {
			t.Fatalf("%s: no sizes", c.Operation)
		}
		if c.Operation == "sign" && c.Sizes.Signature != 3309 {
			t.Errorf("ML-DSA-65 signature %d bytes, want 3309", c.Sizes.Signature)
		}
		if c.Operation == "keygen" && (c.Sizes.PublicKey != 1952 || c.Sizes.PrivateKey != 4032) {
			t.Errorf("ML-DSA-65 key sizes %+v", c.Sizes)
		}
		if c.Memory == nil || c.Memory.AllocsPerOp == nil || *c.Memory.HeapBytesPerOp <= 0 {
			t.Errorf("%s: no heap figures: %+v", c.Operation, c.Memory)
		}
		if c.Energy == nil || (c.Energy.Absent == "" && c.Energy.JoulesPerOp == nil) {
			t.Errorf("%s: energy neither measured nor explained", c.Operation)
		}
	}
}

// TestFailedCheckIsNeverTimed wires deliberately broken implementations: the cells must fail
// with the reason and carry no statistics.
func TestFailedCheckIsNeverTimed(t *testing.T) {
	kems, sigs := bench.Algorithms()
	good := kems["ML-KEM-512"]
	badKEM := *good
	badKEM.Decaps = func(priv any, ct []byte) ([]byte, error) {
		ss, err := good.Decaps(priv, ct)
		ss[0] ^= 1
		return ss, err
	}
	kems["ML-KEM-512"] = &badKEM
	okSig := sigs["Ed25519"]
	badSig := *okSig
	badSig.Sign = func(priv any, msg []byte, r io.Reader) ([]byte, error) { return make([]byte, 64), nil } // like a failing command's empty output
	sigs["Ed25519"] = &badSig
	h := &Host{}
	h.once.Do(func() {})
	h.kems, h.sigs = kems, sigs

	m := manifest(t, kemSrc)
	m.Spec.Algorithms = []string{"ML-KEM-512"}
	cells, err := h.Run(context.Background(), m, runner.NopObserver{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cells {
		c := r.Cell
		if c.Operation == "keygen" || c.Operation == "encaps" || c.Operation == "decaps" {
			if c.Status != artifacts.StatusFailed || c.Stats != nil || !strings.Contains(c.Error, "output check failed") {
				t.Errorf("%s: status %s stats %v error %q; want failed, untimed, naming the failed check", c.Operation, c.Status, c.Stats, c.Error)
			}
		}
	}
	// A run in which no cell ran ok is not signed: Execute fails it with why, keeping its log.
	b, _, err := runner.Execute(context.Background(), h, m, runner.Options{Identity: testIdentity(t)})
	var re *runner.RunError
	if b != nil || !errors.Is(err, artifacts.ErrNoCellOK) || !errors.As(err, &re) ||
		!strings.Contains(err.Error(), "3 cells: warm-up iteration -1: output check failed") || !strings.Contains(string(re.Log), "run failed: no cell ran ok") {
		t.Fatalf("runner.Execute of a run with no ok cell: bundle %v, err %v", b != nil, err)
	}
	m = manifest(t, sigSrc)
	m.Spec.Algorithms = []string{"Ed25519"}
	m.Spec.Operations = []string{"sign"}
	cells, err = h.Run(context.Background(), m, runner.NopObserver{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c := cells[0].Cell; c.Status != artifacts.StatusFailed || c.Stats != nil || !strings.Contains(c.Error, "does not verify") {
		t.Errorf("bad signer: %+v", c)
	}
}

// TestSeededInputsRepeat runs the same manifest twice: every seeded input, and so every
// deterministic output, is the same; a different seed changes them.
func TestSeededInputsRepeat(t *testing.T) {
	kems, _ := bench.Algorithms()
	gen := func(seed string) []byte {
		kp, err := kems["ML-KEM-768"].Keygen(trial.NewDRBG(seed, "ML-KEM-768/key"))
		if err != nil {
			t.Fatal(err)
		}
		return kp.PubBytes
	}
	if a1, a2 := gen("a"), gen("a"); string(a1) != string(a2) {
		t.Error("same seed gave different keys")
	}
	if string(gen("a")) == string(gen("b")) {
		t.Error("different seeds gave the same key")
	}
	spec := &artifacts.Spec{BenchSpec: artifacts.BenchSpec{Message: artifacts.Message{Size: 32}}}
	r1, r2 := trial.NewDRBG("s", "x"), trial.NewDRBG("s", "x")
	m1, m2, m3 := bench.Message(spec, r1), bench.Message(spec, r2), bench.Message(spec, r1)
	if string(m1) != string(m2) || string(m1) == string(m3) {
		t.Error("messages are not fresh per iteration and repeatable per seed")
	}
}

type cancelAfterFirstCell struct {
	runner.NopObserver
	cancel context.CancelFunc
}

func (c cancelAfterFirstCell) CellDone(int, int, artifacts.Cell) { c.cancel() }

func TestCancelledRunLeavesNoBundle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b, res, err := runner.Execute(ctx, &Host{}, manifest(t, kemSrc), runner.Options{Identity: testIdentity(t), Observer: cancelAfterFirstCell{cancel: cancel}})
	var re *runner.RunError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &re) || b != nil || res != nil {
		t.Fatalf("got bundle=%v err=%v, want no bundle and a cancelled RunError", b != nil, err)
	}
	if !strings.Contains(string(re.Log), "ML-KEM-512 keygen") {
		t.Errorf("the log of the interrupted run was not kept: %q", re.Log)
	}
}

func TestBudgetStopsSlowCells(t *testing.T) {
	m := manifest(t, `apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: test, name: budget}
spec:
  algorithms: [SLH-DSA-SHAKE-128f]
  operations: [sign]
  message: {size: 16}
  iterations: 100000
  budget: 300ms
  minIterations: 2
  seed: s
`)
	_, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cells[0]
	if !c.BudgetReached || c.Stats.N < 2 || c.Stats.N >= 100000 || c.Requested != 100000 {
		t.Fatalf("budgeted cell: reached=%v n=%d requested=%d", c.BudgetReached, c.Stats.N, c.Requested)
	}
}

func TestProcessPerOperation(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := manifest(t, `apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: test, name: proc}
spec:
  algorithms: [ML-DSA-44, RSA-2048]
  operations: [keygen, sign, verify]
  message: {size: 1000}
  iterations: 2
  method: process-per-operation
  seed: s
`)
	_, res, err := runner.Execute(context.Background(), &Host{Exe: exe}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK || !strings.Contains(c.Counter, "process") {
			t.Errorf("%s %s: %s %s (%s)", c.Algorithm, c.Operation, c.Status, c.Error, c.Counter)
		}
	}
	km := manifest(t, kemSrc)
	km.Spec.Method = artifacts.MethodProcessPerOperation
	km.Spec.Iterations = 2
	_, res, err = runner.Execute(context.Background(), &Host{Exe: exe}, km, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.Status != artifacts.StatusOK {
			t.Errorf("%s %s: %s %s", c.Algorithm, c.Operation, c.Status, c.Error)
		}
	}
}

func TestRAPLMeter(t *testing.T) {
	if m, reason := trial.OpenRAPL(t.TempDir()); m != nil || !strings.Contains(reason, "no RAPL") {
		t.Fatalf("empty powercap: meter=%v reason=%q", m, reason)
	}
	// A powercap tree cannot exist on this machine, so the sysfs files are laid out by hand.
	root := t.TempDir()
	d := filepath.Join(root, "intel-rapl:0")
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "name"), []byte("package-0\n"), 0o644)
	os.WriteFile(filepath.Join(d, "max_energy_range_uj"), []byte("1000\n"), 0o644)
	os.WriteFile(filepath.Join(d, "energy_uj"), []byte("900\n"), 0o644)
	m, reason := trial.OpenRAPL(root)
	if m == nil {
		t.Fatal(reason)
	}
	if got := m.Delta(900, 100); got != 200 {
		t.Errorf("wrapped delta = %d, want 200", got)
	}
	if !strings.Contains(m.Source(), "package-0") {
		t.Errorf("source %q", m.Source())
	}
}

type recordingObserver struct {
	mu    sync.Mutex
	iters int
	done  int
}

func (r *recordingObserver) CellStarted(int, int, artifacts.CellRef) {}
func (r *recordingObserver) Iteration(int, int, int)                 { r.mu.Lock(); r.iters++; r.mu.Unlock() }
func (r *recordingObserver) CellDone(int, int, artifacts.Cell)       { r.mu.Lock(); r.done++; r.mu.Unlock() }

func TestObserverSeesProgress(t *testing.T) {
	obs := &recordingObserver{}
	m := manifest(t, kemSrc)
	if _, _, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t), Observer: obs}); err != nil {
		t.Fatal(err)
	}
	if obs.done != 7 || obs.iters != 7*5 {
		t.Errorf("observer saw %d cells and %d iterations, want 7 and 35", obs.done, obs.iters)
	}
}

// TestEnergyPassPlumbing runs a cell against a powercap tree laid out by hand (no RAPL
// exists on the test machines): the cell records the meter and one figure per window.
func TestEnergyPassPlumbing(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "intel-rapl:0")
	os.MkdirAll(d, 0o755)
	os.WriteFile(filepath.Join(d, "name"), []byte("package-0\n"), 0o644)
	os.WriteFile(filepath.Join(d, "max_energy_range_uj"), []byte("262143328850\n"), 0o644)
	os.WriteFile(filepath.Join(d, "energy_uj"), []byte("1000\n"), 0o644)
	m := manifest(t, kemSrc)
	m.Spec.Algorithms = []string{"ML-KEM-512"}
	_, res, err := runner.Execute(context.Background(), &Host{PowercapRoot: root}, m, runner.Options{Identity: testIdentity(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.Energy == nil || c.Energy.JoulesPerOp == nil || c.Energy.JoulesPerOp.N != 3 || !strings.Contains(c.Energy.Source, "package-0") {
			t.Fatalf("%s: energy %+v", c.Operation, c.Energy)
		}
	}
}

// TestEncodedKeysAreDecodedInsideEverySample wraps the decoders and the operations of one KEM
// and one signature scheme: with keys: encoded every timed call must receive a key object
// decoded for it alone (a reused parsed object fails), and with keys: parsed none is decoded.
func TestEncodedKeysAreDecodedInsideEverySample(t *testing.T) {
	for _, form := range []string{artifacts.KeysEncoded, artifacts.KeysParsed} {
		t.Run(form, func(t *testing.T) {
			kems, sigs := bench.Algorithms()
			var mu sync.Mutex
			decoded := map[any]int{} // decoded object -> times an operation received it
			decodes := 0
			track := func(parse func([]byte) (any, error)) func([]byte) (any, error) {
				return func(b []byte) (any, error) {
					k, err := parse(b)
					mu.Lock()
					decoded[k], decodes = 0, decodes+1
					mu.Unlock()
					return k, err
				}
			}
			used := func(k any) {
				mu.Lock()
				if _, ok := decoded[k]; ok {
					decoded[k]++
				}
				mu.Unlock()
			}
			k := *kems["ML-KEM-768"]
			k.ParsePub, k.ParsePriv = track(k.ParsePub), track(k.ParsePriv)
			enc, dec := k.Encaps, k.Decaps
			k.Encaps = func(pub any, r io.Reader) ([]byte, []byte, error) { used(pub); return enc(pub, r) }
			k.Decaps = func(priv any, ct []byte) ([]byte, error) { used(priv); return dec(priv, ct) }
			s := *sigs["ML-DSA-44"]
			s.ParsePub, s.ParsePriv = track(s.ParsePub), track(s.ParsePriv)
			sign, verify := s.Sign, s.Verify
			s.Sign = func(priv any, msg []byte, r io.Reader) ([]byte, error) { used(priv); return sign(priv, msg, r) }
			s.Verify = func(pub any, msg, sig []byte) bool { used(pub); return verify(pub, msg, sig) }
			kems["ML-KEM-768"], sigs["ML-DSA-44"] = &k, &s
			h := &Host{}
			h.once.Do(func() {})
			h.kems, h.sigs = kems, sigs

			for _, src := range []string{kemSrc, sigSrc} {
				m := manifest(t, src)
				m.Spec.Keys = form
				if m.Kind == artifacts.KindKEMBench {
					m.Spec.Algorithms, m.Spec.Operations = []string{"ML-KEM-768"}, []string{"encaps", "decaps"}
				} else {
					m.Spec.Algorithms, m.Spec.Operations = []string{"ML-DSA-44"}, []string{"sign", "verify"}
				}
				_, res, err := runner.Execute(context.Background(), h, m, runner.Options{Identity: testIdentity(t)})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Cells {
					if c.Status != artifacts.StatusOK || c.Keys != form {
						t.Errorf("%s %s: status %s keys %q; want ok, keys %q", c.Algorithm, c.Operation, c.Status, c.Keys, form)
					}
				}
			}
			// Timed calls per cell: warm-up, iterations, and the memory pass (up to 5); the energy
			// pass adds more where RAPL exists. Four cells.
			least := 4 * (1 + 4 + 1)
			switch form {
			case artifacts.KeysEncoded:
				if decodes < least {
					t.Errorf("%d keys decoded; want at least %d (one per timed call)", decodes, least)
				}
				for _, n := range decoded {
					if n != 1 {
						t.Fatalf("a decoded key reached %d operations; want exactly 1 (the parsed object was reused)", n)
					}
				}
			case artifacts.KeysParsed:
				if decodes != 0 {
					t.Errorf("%d keys decoded with keys: parsed; want none", decodes)
				}
			}
		})
	}
}

// TestEveryKindHasAHostExecutor: the host board runs every registered experiment kind.
func TestEveryKindHasAHostExecutor(t *testing.T) {
	for _, k := range artifacts.Kinds() {
		if hostKinds[k] == nil {
			t.Errorf("kind %s has no host executor in hostKinds", k)
		}
	}
	for k := range hostKinds {
		if _, ok := artifacts.LookupKind(k); !ok {
			t.Errorf("hostKinds has %s, which is not a registered kind", k)
		}
	}
}
