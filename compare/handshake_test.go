package compare

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/energy"
	"pqrepro/energy/energytest"
	"pqrepro/experiments"
)

var (
	testGroups  = []string{"ML-KEM-512", "ML-KEM-768", "ML-KEM-1024", "X25519", "P-256", "X25519MLKEM768"}
	testSchemes = []string{"ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "Ed25519", "ECDSA-P256", "RSA-PSS"}
)

// matrixRun is a hand-built tls-matrix fixture (not a measurement): 36 handshake cells of
// 200 samples each, centred on center(group, scheme) ns with a relative half-width
// width(group, scheme), on board.
func matrixRun(board string, center, width func(g, s string) float64) Run {
	cells := map[string][]float64{}
	seed := uint64(10)
	for _, g := range testGroups {
		for _, s := range testSchemes {
			seed++
			c := center(g, s)
			cells[g+"+"+s+"/handshake"] = noisy(seed, 200, c, c*width(g, s))
		}
	}
	run := sampledRun(artifacts.UnitNanoseconds, cells)
	run.Result.Board = board
	run.Board = artifacts.BoardIdentity{Class: board, ClassStatus: artifacts.ClassVerified}
	return run
}

func flat(v float64) func(g, s string) float64 { return func(string, string) float64 { return v } }

func paper000Claim(t *testing.T, id string) experiments.Claim {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cat.Paper("paper000")
	if !ok {
		t.Fatal("no paper000")
	}
	cl, ok := p.Claim(id)
	if !ok {
		t.Fatalf("paper000 has no claim %s", id)
	}
	return cl
}

// pq512 makes ML-KEM-512+ML-DSA-44 `ratio` times faster than X25519+RSA-PSS (1 ms).
func pq512(ratio float64) func(g, s string) float64 {
	return func(g, s string) float64 {
		if g == "ML-KEM-512" && s == "ML-DSA-44" {
			return 1e6 / ratio
		}
		return 1e6
	}
}

func TestPaper000Faster(t *testing.T) {
	cl := paper000Claim(t, "C000-01")
	tests := []struct {
		name, board string
		ratio       float64
		verdict     string
		faster      string // the faster check's verdict
		detail      string
	}{
		{"off board: ordering reported, no verdict", "host", 1.6, NotVerdicted, Untestable, "the published figure is of pico-w"},
		{"41% lower time", "pico-w", 1 / 0.59, Holds, Holds, "matches the reading 41% lower time"},
		{"41% higher speed", "pico-w", 1.41, Holds, Holds, "matches the reading 41% higher speed"},
		{"much faster than either reading", "pico-w", 3, Fails, Fails, "matches neither reading"},
		{"reversed on the Pico W", "pico-w", 0.8, Fails, Fails, "matches neither reading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := matrixRun(tt.board, pq512(tt.ratio), flat(0.02))
			cr := CheckClaim(cl, run, "")
			if cr.Verdict != tt.verdict {
				t.Fatalf("verdict %s (%s), want %s; checks %+v", cr.Verdict, cr.Reason, tt.verdict, cr.Checks)
			}
			if cr.Board != tt.board || len(cr.Checks) != 2 {
				t.Fatalf("board %q, %d checks", cr.Board, len(cr.Checks))
			}
			order, faster := cr.Checks[0], cr.Checks[1]
			if faster.Verdict != tt.faster || !strings.Contains(faster.Detail, tt.detail) {
				t.Errorf("faster check %s %q, want %s containing %q", faster.Verdict, faster.Detail, tt.faster, tt.detail)
			}
			if !strings.HasPrefix(order.Detail, "ordering on "+tt.board+": ") || len(order.Intervals) != 1 {
				t.Errorf("order check %q: want the board label and one interval", order.Detail)
			}
			wantOrder := Holds
			if tt.ratio < 1 {
				wantOrder = Fails
			}
			if order.Verdict != wantOrder {
				t.Errorf("ordering %s, want %s", order.Verdict, wantOrder)
			}
			if iv := order.Intervals[0]; !(iv.Lo < tt.ratio*1.02 && iv.Hi > tt.ratio*0.98) {
				t.Errorf("ordering interval [%g, %g] misses the fixture's ratio %g", iv.Lo, iv.Hi, tt.ratio)
			}
			if tt.board == "host" && !strings.Contains(cr.Reason, "ordering on host, not a verdict on 41% / 8.9x") {
				t.Errorf("reason %q", cr.Reason)
			}
		})
	}
}

// TestPaper000OnBoardClient: a matrix whose client ran on an emulated board (the project's C
// client over the serial line, deterministic instruction counts) gets C000-01 as an ordering
// labelled with the board, the client and its role, its exact ratio printed beside the paper's
// 41% and never decided against it; the claim's reason carries the measured ratio, so the
// paper's page shows each board's figure.
func TestPaper000OnBoardClient(t *testing.T) {
	cl := paper000Claim(t, "C000-01")
	cells := map[string][]float64{}
	for _, g := range testGroups {
		for _, s := range testSchemes {
			v := 30e6
			if g == "ML-KEM-512" && s == "ML-DSA-44" {
				v = 12e6
			}
			cells[g+"+"+s+"/handshake"] = []float64{v, v, v, v, v}
		}
	}
	run := sampledRun(artifacts.UnitInstructions, cells)
	run.Result.Board = "qemu-mps2-an505"
	run.Board = artifacts.BoardIdentity{Class: "qemu-mps2-an505", ClassStatus: artifacts.ClassVerified}
	for i := range run.Result.Cells {
		run.Result.Cells[i].TLS = &artifacts.TLSCell{Client: artifacts.SerialTLSClient + " (board firmware pqrepro-fw 0.2.0)"}
	}
	cr := CheckClaim(cl, run, "")
	if cr.Verdict != NotVerdicted {
		t.Fatalf("verdict %s (%s): a board's C client is never a verdict on wolfSSL's 41%%", cr.Verdict, cr.Reason)
	}
	order := cr.Checks[0]
	want := "ordering on qemu-mps2-an505 with the pqrepro C client, client role: "
	if !strings.HasPrefix(order.Detail, want) || order.Verdict != Holds {
		t.Fatalf("order check %s %q, want it to hold and start %q", order.Verdict, order.Detail, want)
	}
	for _, s := range []string{"2.500 exactly", "ML-KEM-512+ML-DSA-44/handshake takes 60.0% less (150.0% higher speed)", "beside the paper's 41% faster"} {
		if !strings.Contains(order.Detail, s) {
			t.Errorf("order detail %q lacks %q", order.Detail, s)
		}
	}
	if iv := order.Intervals[0]; !iv.Exact || iv.Point != 2.5 {
		t.Errorf("interval %+v, want the exact ratio 2.5", iv)
	}
	if !strings.Contains(cr.Reason, "ordering on qemu-mps2-an505 with the pqrepro C client, client role, not a verdict") ||
		!strings.Contains(cr.Reason, "Measured: ordering on") {
		t.Errorf("reason %q: want the board phrase and the measured ratio", cr.Reason)
	}
	if got := besidePhrase(0.877, "A", "41%"); !strings.Contains(got, "A takes 14.0% more (12.3% lower speed): the order is reversed") {
		t.Errorf("a reversed order reads %q", got)
	}
}

// TestDeclaredPicoW: a run filed as pico-w whose class was only declared (nothing could
// check it) gets no verdict on a Pico W claim, though its checks run and are shown.
func TestDeclaredPicoW(t *testing.T) {
	cl := paper000Claim(t, "C000-01")
	run := matrixRun("pico-w", pq512(1/0.59), flat(0.02))
	run.Board.ClassStatus = artifacts.ClassDeclared
	cr := CheckClaim(cl, run, "")
	if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "declared, not verified") {
		t.Fatalf("verdict %s (%s), want not verdicted for a declared class", cr.Verdict, cr.Reason)
	}
	if len(cr.Checks) != 2 || cr.Checks[1].Verdict != Holds {
		t.Errorf("the checks must still run and show their own verdicts: %+v", cr.Checks)
	}
	run.Board.ClassStatus = ""
	if cr := CheckClaim(cl, run, ""); cr.Verdict != NotVerdicted {
		t.Errorf("a bundle that does not say how its class was established unlocks a verdict: %s", cr.Verdict)
	}
}

func TestPaper000SpeedupOnESP32(t *testing.T) {
	cl := paper000Claim(t, "C000-02")
	for _, tt := range []struct {
		board   string
		ratio   float64
		verdict string
	}{{"esp32", 8.9, Holds}, {"esp32", 2, Fails}, {"rpi-zero", 8.9, NotVerdicted}} {
		cr := CheckClaim(cl, matrixRun(tt.board, pq512(tt.ratio), flat(0.02)), "")
		if cr.Verdict != tt.verdict {
			t.Errorf("%s ratio %g: verdict %s (%s), want %s", tt.board, tt.ratio, cr.Verdict, cr.Reason, tt.verdict)
		}
	}
}

func TestPaper000NotSlower(t *testing.T) {
	cl := paper000Claim(t, "C000-04")
	mlkem := func(factor float64) func(g, s string) float64 {
		return func(g, s string) float64 {
			if strings.HasPrefix(g, "ML-KEM-") {
				return 1e6 * factor
			}
			return 1e6
		}
	}
	for _, tt := range []struct {
		name    string
		board   string
		factor  float64
		verdict string
	}{
		{"ML-KEM faster", "pico-w", 0.8, Holds}, {"ML-KEM equal", "esp32", 1, Holds}, {"ML-KEM 30% slower", "rpi-zero-wh", 1.3, Fails},
		{"ML-KEM 5% slower, on the margin", "pico2-w", 1.05, Inconclusive},
		{"off the paper's devices: the ordering on the host, no verdict", "host", 1.3, NotVerdicted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr := CheckClaim(cl, matrixRun(tt.board, mlkem(tt.factor), flat(0.05)), "")
			if cr.Verdict != tt.verdict {
				t.Fatalf("verdict %s (%s), want %s: %+v", cr.Verdict, cr.Reason, tt.verdict, cr.Checks[0])
			}
			if len(cr.Checks) != 6 || len(cr.Checks[0].Intervals) != 1 || cr.Checks[0].Intervals[0].Num != "ML-KEM-512+ML-DSA-44/handshake" || cr.Checks[0].Intervals[0].Den != "X25519+ML-DSA-44/handshake" {
				t.Fatalf("%d checks: want one t(ML-KEM-512)/t(X25519) interval per signature scheme: %+v", len(cr.Checks), cr.Checks[0].Intervals)
			}
			if cr.Multiplicity == "" || !strings.Contains(cr.Multiplicity, "6 intervals") {
				t.Errorf("multiplicity %q: the claim rests on six intervals", cr.Multiplicity)
			}
			if tt.board == "host" && (!strings.Contains(cr.Reason, "ordering on host") || cr.Checks[0].Verdict != Fails) {
				t.Errorf("off-board reason %q, check %s: the ordering is shown with its own verdict", cr.Reason, cr.Checks[0].Verdict)
			}
		})
	}
}

// TestHolm: a claim resting on several intervals, one of which lies outside its band at 95%
// alone but not by enough to survive Holm's step-down over the family, is inconclusive, not
// fails; the same interval alone fails.
func TestHolm(t *testing.T) {
	cells := map[string][]float64{}
	var checks []experiments.Check
	for i := range 6 {
		num, den := fmt.Sprintf("N%d/op", i), fmt.Sprintf("D%d/op", i)
		cells[num], cells[den] = noisy(uint64(100+2*i), 60, 100, 30), noisy(uint64(101+2*i), 60, 100, 30)
		checks = append(checks, experiments.Check{Kind: "ratio", Num: num, Den: den, Max: f(1.05)})
	}
	// One pair drawn 1.21x apart: its interval lies just above 1.05.
	cells["N0/op"] = noisy(100, 60, 121, 30)
	run := sampledRun("ns", cells)
	alone := CheckClaim(experiments.Claim{Checks: checks[:1]}, run, "")
	iv := alone.Checks[0].Intervals[0]
	if alone.Verdict != Fails || alone.Multiplicity != "" {
		t.Fatalf("alone: verdict %s, interval %+v; the fixture must fail at 95%% on its own", alone.Verdict, iv)
	}
	if !(iv.PFail > 0.05/6 && iv.PFail <= 0.05) {
		t.Fatalf("fixture: p = %g, want within (0.05/6, 0.05] so that Holm decides", iv.PFail)
	}
	fam := CheckClaim(experiments.Claim{Checks: checks}, run, "")
	if fam.Verdict != Inconclusive || !strings.Contains(fam.Multiplicity, "Holm") {
		t.Fatalf("family: verdict %s (%s), want inconclusive under Holm", fam.Verdict, fam.Multiplicity)
	}
	ch := fam.Checks[0]
	if ch.Verdict != Inconclusive || ch.Intervals[0].Note == "" || !strings.Contains(ch.Detail, "after Holm's correction") {
		t.Errorf("check %+v: the demoted interval must say why", ch)
	}
	// A clear failure survives the correction.
	cells["N0/op"] = noisy(100, 60, 200, 30)
	if cr := CheckClaim(experiments.Claim{Checks: checks}, sampledRun("ns", cells), ""); cr.Verdict != Fails {
		t.Errorf("a clear failure among six intervals: %s, want fails", cr.Verdict)
	}
}

func TestPaper000Spread(t *testing.T) {
	cl := paper000Claim(t, "C000-06")
	width := func(mldsa, other float64) func(g, s string) float64 {
		return func(g, s string) float64 {
			if strings.HasPrefix(s, "ML-DSA-") {
				return mldsa
			}
			return other
		}
	}
	for _, tt := range []struct {
		name        string
		mldsa, rest float64
		verdict     string
	}{{"ML-DSA varies more", 0.3, 0.05, Holds}, {"ML-DSA varies less", 0.05, 0.3, Fails}, {"same spread", 0.1, 0.1, Inconclusive}} {
		t.Run(tt.name, func(t *testing.T) {
			cr := CheckClaim(cl, withRole(matrixRun("host", flat(1e6), width(tt.mldsa, tt.rest)), artifacts.TLSRoleServer), "")
			if cr.Verdict != tt.verdict {
				t.Fatalf("verdict %s, want %s: %+v", cr.Verdict, tt.verdict, cr.Checks[0])
			}
			ch := cr.Checks[0]
			if !strings.HasPrefix(ch.Method, MethodSpread) || len(ch.Intervals) != 6 || !strings.Contains(ch.Detail, "(p75 - p25) / median") {
				t.Fatalf("check %+v", ch)
			}
		})
	}
}

func TestPaper000Range(t *testing.T) {
	cl := paper000Claim(t, "C000-07")
	rsa := func(f float64) func(g, s string) float64 {
		return func(g, s string) float64 {
			if s == "RSA-PSS" {
				return 1e6 * f
			}
			return 1e6
		}
	}
	t.Run("off the capable devices", func(t *testing.T) {
		cr := CheckClaim(cl, matrixRun("host", rsa(1.3), flat(0.05)), "")
		if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "range on host") || cr.Checks[0].Verdict != Holds {
			t.Fatalf("%s (%s): %+v", cr.Verdict, cr.Reason, cr.Checks)
		}
	})
	t.Run("similar", func(t *testing.T) {
		cr := CheckClaim(cl, matrixRun("rpi-zero-wh", rsa(1.3), flat(0.05)), "")
		if cr.Verdict != Holds || !strings.Contains(cr.Checks[0].Detail, "36 cells") || !strings.Contains(cr.Checks[0].Detail, "slowest ") {
			t.Fatalf("%s: %+v", cr.Verdict, cr.Checks)
		}
	})
	t.Run("five times apart", func(t *testing.T) {
		cr := CheckClaim(cl, matrixRun("rpi-zero-wh", rsa(5), flat(0.05)), "")
		if cr.Verdict != Fails || !strings.Contains(cr.Checks[0].Detail, "RSA-PSS/handshake 5.0") {
			t.Fatalf("%s: %+v", cr.Verdict, cr.Checks)
		}
	})
	t.Run("a failed cell", func(t *testing.T) {
		run := matrixRun("rpi-zero-2-wh", rsa(1), flat(0.05))
		i := slices.IndexFunc(run.Result.Cells, func(c artifacts.Cell) bool { return c.Algorithm == "P-256+RSA-PSS" })
		run.Result.Cells[i].Status, run.Result.Cells[i].Error, run.Result.Cells[i].Stats = artifacts.StatusFailed, "peer sent an alert", nil
		cr := CheckClaim(cl, run, "")
		if cr.Verdict != Untestable || !strings.Contains(cr.Checks[0].Detail, "35 of the 36 handshake cells measured (P-256+RSA-PSS failed)") {
			t.Fatalf("%s: %+v", cr.Verdict, cr.Checks)
		}
	})
}

// TestPaper000Energy: C000-08 is untestable with its reason; C000-03 without energy is
// untestable on a Pico W (the reason names the meter) and shown as the ordering elsewhere, its
// six checks untestable for want of energy; on a metered run on the host (a FIXTURE: paper002's
// Pi 4 idle capture and two of its load captures as the windows, T_op 1 ms for ML-KEM-512 and
// 2 ms for X25519, not a measurement) each check is judged on the metered energies and the
// claim is the ordering on the host, not a verdict.
func TestPaper000Energy(t *testing.T) {
	cr := CheckClaim(paper000Claim(t, "C000-08"), matrixRun("host", flat(1e6), flat(0.05)), "")
	if cr.Verdict != Untestable || !strings.Contains(cr.Reason, "power meter") || !strings.Contains(cr.Reason, "RAPL") {
		t.Errorf("C000-08: %s (%s)", cr.Verdict, cr.Reason)
	}
	cl := paper000Claim(t, "C000-03")
	cr = CheckClaim(cl, matrixRun("pico-w", flat(1e6), flat(0.05)), "")
	if cr.Verdict != Untestable || !strings.Contains(cr.Reason, "power meter") || len(cr.Checks) != 6 {
		t.Errorf("C000-03 on a Pico W without energy: %s (%s)", cr.Verdict, cr.Reason)
	}
	cr = CheckClaim(cl, matrixRun("host", flat(1e6), flat(0.05)), "")
	if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "energy per handshake on host") || cr.Checks[0].Verdict != Untestable {
		t.Errorf("C000-03 on the host without energy: %s (%s)", cr.Verdict, cr.Reason)
	}

	run := matrixRun("host", flat(1e6), flat(0.05))
	idle, rate := energytest.Pi4Window(t, "01_pi4_baseline.csv")
	loads := map[string]string{"ML-KEM-512": "03_pi4_keys_ecdsa.csv", "X25519": "02_pi4_keys_rsa.csv"}
	tOps := map[string]float64{"ML-KEM-512": 1e-3, "X25519": 2e-3}
	run.Power, run.Meter = &artifacts.Power{Idle: idle}, &artifacts.MeterInfo{Kind: "fnb58", Device: "/dev/hidraw0", Rate: rate}
	for i, c := range run.Result.Cells {
		g, _, _ := strings.Cut(c.Algorithm, "+")
		if loads[g] == "" {
			continue
		}
		load, _ := energytest.Pi4Window(t, loads[g])
		e, err := energy.FromPower(idle, load, rate, tOps[g], "fnb58 /dev/hidraw0", false)
		if err != nil {
			t.Fatal(err)
		}
		run.Result.Cells[i].Energy = e
		run.Power.AddLoad(artifacts.CellKey{Algorithm: c.Algorithm, Operation: c.Operation}, load)
	}
	cr = CheckClaim(cl, run, "")
	if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "energy per handshake on host") {
		t.Fatalf("C000-03 on a metered host run: %s (%s)", cr.Verdict, cr.Reason)
	}
	for _, ch := range cr.Checks {
		if ch.Verdict != Holds || len(ch.Intervals) == 0 || !strings.Contains(ch.Detail, "metered energy") {
			t.Errorf("%v: %s %s", ch.Check.Cells, ch.Verdict, ch.Detail)
		}
	}
	t.Logf("C000-03 on the fixture: %s: %s", cr.Verdict, cr.Reason)
}

func TestFmtTime(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{512, "512 ns"}, {412_300, "412.30 µs"}, {1_234_000, "1.234 ms"}, {2.5e9, "2.500 s"}} {
		if got := fmtTime(tt.v, artifacts.UnitNanoseconds); got != tt.want {
			t.Errorf("fmtTime(%g) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestPaper000Additive(t *testing.T) {
	cl := paper000Claim(t, "C000-05")
	// Fixture: every handshake costs a base of 800 µs plus its key exchange: X25519 100 µs,
	// ML-KEM-768 60 µs, the hybrid `hybrid` µs.
	center := func(hybrid float64) func(g, s string) float64 {
		return func(g, s string) float64 {
			switch g {
			case "X25519":
				return 900e3
			case "ML-KEM-768":
				return 860e3
			case "X25519MLKEM768":
				return (800 + hybrid) * 1e3
			}
			return 1e6
		}
	}
	phases := func(run Run) {
		for i, c := range run.Result.Cells {
			kx := map[string]float64{"X25519": 100e3, "ML-KEM-768": 60e3}[strings.Split(c.Algorithm, "+")[0]]
			if kx == 0 {
				continue
			}
			// Split across the three phases the model sums.
			run.Result.Cells[i].TLS = &artifacts.TLSCell{Phases: []artifacts.TLSPhase{
				{Name: "key-share", Side: artifacts.SideClient, Stats: &artifacts.Stats{N: 200, Median: kx / 4}},
				{Name: "encapsulate", Side: artifacts.SideServer, Stats: &artifacts.Stats{N: 200, Median: kx / 2}},
				{Name: "decapsulate", Side: artifacts.SideClient, Stats: &artifacts.Stats{N: 200, Median: kx / 4}},
				{Name: "sign", Side: artifacts.SideServer, Stats: &artifacts.Stats{N: 200, Median: 1e9}}, // not key exchange: must not count
			}}
		}
	}
	for _, tt := range []struct {
		name    string
		hybrid  float64
		phases  bool
		verdict string
		detail  string
	}{
		{"the sum of its parts", 160, true, Holds, "t(hybrid) 958.26 µs, predicted 959.30 µs"},
		{"far more than the sum", 500, true, Fails, "t(hybrid) 1.298 ms"},
		{"no phase times", 160, false, Untestable, "records no phase times"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := matrixRun("host", center(tt.hybrid), flat(0.02))
			if tt.phases {
				phases(run)
			}
			cr := CheckClaim(cl, run, "")
			if cr.Verdict != tt.verdict || len(cr.Checks) != 12 || !cr.Checks[6].Check.Info {
				t.Fatalf("verdict %s, want %s: %+v", cr.Verdict, tt.verdict, cr.Checks)
			}
			ch := cr.Checks[0]
			if !strings.Contains(ch.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", ch.Detail, tt.detail)
			}
			if tt.verdict != Untestable && (!strings.HasPrefix(ch.Method, MethodAdditive) || len(ch.Intervals) != 1 || !strings.Contains(ch.Detail, "kx(X) 100.00 µs, kx(K) 60.00 µs")) {
				t.Errorf("check %+v", ch)
			}
		})
	}
}

// withRole gives every cell of run a TLS record of role (the rest of it empty).
func withRole(run Run, role string) Run {
	for i := range run.Result.Cells {
		run.Result.Cells[i].TLS = &artifacts.TLSCell{Role: role}
	}
	return run
}

// TestPaper000SpreadRoles: C000-06 is the signer's claim. A server-role run is verdicted, its
// ML-DSA cells' rejection rounds shown beside the spread (min/median/max) or, where the signer
// reported none, why; a client-role run, or one from before roles, gets no verdict because
// the signer was the peer, though its checks are shown.
func TestPaper000SpreadRoles(t *testing.T) {
	cl := paper000Claim(t, "C000-06")
	width := func(g, s string) float64 {
		if strings.HasPrefix(s, "ML-DSA-") {
			return 0.3
		}
		return 0.05
	}
	t.Run("server role, rounds measured", func(t *testing.T) {
		run := withRole(matrixRun("host", flat(1e6), width), artifacts.TLSRoleServer)
		for i, c := range run.Result.Cells {
			if strings.Contains(c.Algorithm, "ML-DSA-65") {
				run.Result.Cells[i].TLS.Rounds = &artifacts.Stats{N: 200, Min: 1, Median: 4, Max: 23}
			}
		}
		cr := CheckClaim(cl, run, "")
		if cr.Verdict != Holds || cr.Role != artifacts.TLSRoleServer || !strings.Contains(cr.Implementation, "as the server") {
			t.Fatalf("verdict %s role %q implementation %q: %s", cr.Verdict, cr.Role, cr.Implementation, cr.Reason)
		}
		want := "rejection rounds per signature (min/median/max over the handshakes): ML-KEM-512+ML-DSA-65/handshake 1/4/23"
		if d := cr.Checks[0].Detail; !strings.Contains(d, want) || strings.Contains(d, "ML-DSA-44/handshake 1/") {
			t.Fatalf("detail %q, want %q and nothing for cells without rounds", d, want)
		}
	})
	t.Run("server role, rounds absent", func(t *testing.T) {
		run := withRole(matrixRun("host", flat(1e6), width), artifacts.TLSRoleServer)
		for i, c := range run.Result.Cells {
			if strings.Contains(c.Algorithm, "ML-DSA") {
				run.Result.Cells[i].TLS.RoundsAbsent = "the signer does not say"
			}
		}
		cr := CheckClaim(cl, run, "")
		d := cr.Checks[0].Detail
		if cr.Verdict != Holds || strings.Count(d, "rejection rounds not measured: the signer does not say") != 1 || strings.Contains(d, "min/median/max") {
			t.Fatalf("verdict %s, detail %q", cr.Verdict, d)
		}
	})
	for _, role := range []string{artifacts.TLSRoleClient, ""} {
		t.Run("client role "+role, func(t *testing.T) {
			cr := CheckClaim(cl, withRole(matrixRun("host", flat(1e6), width), role), "")
			if cr.Verdict != NotVerdicted || !strings.Contains(cr.Reason, "not verdicted on host: the claim is about the side that signs") ||
				!strings.Contains(cr.Reason, "the signer is the peer") || !strings.Contains(cr.Reason, "Measured: varies more") {
				t.Fatalf("verdict %s, reason %q", cr.Verdict, cr.Reason)
			}
			if cr.Checks[0].Verdict != Holds || cr.Role != artifacts.TLSRoleClient {
				t.Fatalf("the check %s, role %q: the checks still run", cr.Checks[0].Verdict, cr.Role)
			}
		})
	}
}

// TestPaper000OrderingPerRole: C000-01's ordering names the role it was measured in: a board
// running the project's C server, and the host in the server role.
func TestPaper000OrderingPerRole(t *testing.T) {
	cl := paper000Claim(t, "C000-01")
	board := withRole(matrixRun("qemu-mps2-an505", pq512(2), flat(0)), artifacts.TLSRoleServer)
	for i := range board.Result.Cells {
		board.Result.Cells[i].TLS.BoardServer = artifacts.SerialTLSServer + " (board firmware pqrepro-fw 0.3.0)"
	}
	host := withRole(matrixRun("host", pq512(2), flat(0.02)), artifacts.TLSRoleServer)
	client := withRole(matrixRun("host", pq512(2), flat(0.02)), artifacts.TLSRoleClient)
	for _, tt := range []struct {
		name string
		run  Run
		want string
		impl string
	}{
		{"board server", board, "ordering on qemu-mps2-an505 with the pqrepro C server, server role: ", "pqrepro C server (board firmware"},
		{"host server", host, "ordering on host, server role: ", "engine (tls13) as the server"},
		{"host client", client, "ordering on host: ", "engine (tls13) as the client"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cr := CheckClaim(cl, tt.run, "")
			order := cr.Checks[0]
			if !strings.HasPrefix(order.Detail, tt.want) || order.Verdict != Holds || len(order.Intervals) != 1 {
				t.Fatalf("order %s %q, want it to hold and start %q", order.Verdict, order.Detail, tt.want)
			}
			if cr.Verdict != NotVerdicted || !strings.HasPrefix(cr.Implementation, tt.impl) && !strings.Contains(cr.Implementation, tt.impl) {
				t.Fatalf("claim %s, implementation %q", cr.Verdict, cr.Implementation)
			}
		})
	}
}
