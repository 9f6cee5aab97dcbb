package artifacts

import (
	"errors"
	"strings"
	"testing"
)

const testSum = "h1:RDHBf3shkcj4xiQbQJm0Hr0ttf9RY1VbUYLeQaaQYVo="

func TestImplementationValidate(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		im   Implementation
		want string // "" valid
	}{
		{"firmware table", Implementation{Name: "mlkem-native", Commit: "1a2b3c4", Digest: d, DigestOf: DigestSource}, ""},
		{"module", Implementation{Name: CirclModule, Version: "v1.6.1", Digest: testSum, DigestOf: DigestModule}, ""},
		{"no name", Implementation{Version: "1"}, "name is required"},
		{"digest without what", Implementation{Name: "x", Digest: d}, "digestOf"},
		{"short digest", Implementation{Name: "x", Digest: "sha256:ab", DigestOf: DigestSource}, "not sha256"},
		{"module sum as sha256", Implementation{Name: "x", Digest: d, DigestOf: DigestModule}, "go.sum hash"},
		{"control character", Implementation{Name: "x\n<b>"}, "control character"},
		{"nested primitives", Implementation{Name: ImplTLSEngine, Primitives: []Implementation{{Name: "a", Primitives: []Implementation{{Name: "b"}}}}}, "no primitives of its own"},
		{"long", Implementation{Name: strings.Repeat("x", 201)}, "at most 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.im.Validate()
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestImplementationKey: the key tells implementations apart by everything but a module's
// sum (its version names one source tree already), and pages abbreviate its digests.
func TestImplementationKey(t *testing.T) {
	src := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	a := Implementation{Name: "pqrepro-fw", Version: "0.1.0", Digest: src, DigestOf: DigestSource}
	b := a
	b.Digest = "sha256:" + strings.Repeat("f", 64)
	if a.Key() == b.Key() {
		t.Fatalf("two sources, one key %q", a.Key())
	}
	c1 := Implementation{Name: CirclModule, Version: "v1.6.1", Digest: testSum, DigestOf: DigestModule}
	c2 := Implementation{Name: CirclModule, Version: "v1.6.1"}
	if c1.Key() != c2.Key() || c1.Key() != CirclModule+" v1.6.1" {
		t.Fatalf("circl keys %q, %q", c1.Key(), c2.Key())
	}
	if got := ShortImplementation(a.Key()); got != "pqrepro-fw 0.1.0, source sha256:0123456789ab…" {
		t.Errorf("short %q", got)
	}
	tls := Implementation{Name: ImplTLSEngine, Version: "dev", Primitives: []Implementation{c1, {Name: ImplGoCrypto, Version: "go1.27.3"}}}
	if got := tls.Key(); got != "pqrepro tls13 dev with github.com/cloudflare/circl v1.6.1; Go crypto (standard library) go1.27.3" {
		t.Errorf("tls %q", got)
	}
}

func TestDeriveImplementation(t *testing.T) {
	fw := "sha256:" + strings.Repeat("1", 64)
	host := &Environment{GoVersion: "go1.27.3", RunnerVersion: "dev", RunnerRevision: "abc1234",
		Libraries: map[string]string{CirclModule: "v1.6.1"}, LibrarySums: map[string]string{CirclModule: testSum}, Board: BoardIdentity{Driver: "host"}}
	ossl := *host
	ossl.OpenSSL = &OpenSSLInfo{Version: "OpenSSL 3.5.1 1 Jul 2025", Providers: []string{"default: OpenSSL Default Provider 3.5.1 (active)"}, BinaryDigest: fw}
	board := &Environment{Board: BoardIdentity{Driver: "qemu", Firmware: "pqrepro-fw", FirmwareVersion: "0.1.0", FirmwareDigest: fw}}
	legacy := &Environment{Board: BoardIdentity{Assurance: AssuranceEmulated, Firmware: "pqrepro-fw", FirmwareDigest: fw}}
	for _, tc := range []struct {
		name   string
		kind   Kind
		method Method
		env    *Environment
		cell   Cell
		want   string
	}{
		{"circl", KindKEMBench, MethodInProcess, host, Cell{Algorithm: "ML-KEM-768"}, CirclModule + " v1.6.1"},
		{"circl in a process", KindSigBench, MethodProcessPerOperation, host, Cell{Algorithm: "SLH-DSA-SHA2-128s"}, CirclModule + " v1.6.1"},
		{"go crypto", KindSigBench, MethodInProcess, host, Cell{Algorithm: "Ed25519"}, ImplGoCrypto + " go1.27.3"},
		{"sequence", KindKEMSigSequence, MethodInProcess, host, Cell{Algorithm: "ML-KEM-768+ML-DSA-65"}, CirclModule + " v1.6.1"},
		{"openssl", KindKEMBench, MethodOpenSSLCLI, &ossl, Cell{Algorithm: "ML-KEM-768"}, "openssl 3.5.1 (provider OpenSSL Default Provider 3.5.1), binary " + fw},
		{"tls engine", KindTLSMatrix, MethodLoopbackTCP, host, Cell{Algorithm: "X25519MLKEM768+ML-DSA-44"},
			ImplTLSEngine + " dev commit abc1234 with " + CirclModule + " v1.6.1; " + ImplGoCrypto + " go1.27.3"},
		{"tls engine classical", KindTLSMatrix, MethodLoopbackTCP, host, Cell{Algorithm: "X25519+Ed25519"}, ImplTLSEngine + " dev commit abc1234 with " + ImplGoCrypto + " go1.27.3"},
		{"crypto/tls", KindTLSMatrix, MethodLoopbackTCP, host, Cell{Algorithm: "X25519+Ed25519", Variant: TLSStackVariant(StackCryptoTLS)}, ImplGoTLS + " go1.27.3"},
		{"ascon", KindMQTTTelemetry, MethodInProcess, host, Cell{Algorithm: AEADAscon128Std, Operation: OpSeal}, ImplAscon + " dev commit abc1234"},
		{"firmware", KindKEMBench, MethodInProcess, board, Cell{Algorithm: "ML-KEM-768"}, "pqrepro-fw 0.1.0, firmware image " + fw},
		{"legacy firmware", KindKEMBench, MethodInProcess, legacy, Cell{Algorithm: "ML-KEM-768"}, "pqrepro-fw, firmware image " + fw},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := DeriveImplementation(tc.kind, tc.method, tc.env, tc.cell)
			if err := im.Validate(); err != nil {
				t.Fatal(err)
			}
			if im.Key() != tc.want {
				t.Fatalf("derived %q, want %q", im.Key(), tc.want)
			}
		})
	}
	recorded := Implementation{Name: "mlkem-native", Version: "1.0.0"}
	if got := CellImplementation(KindKEMBench, MethodInProcess, board, Cell{Algorithm: "ML-KEM-768", Implementation: &recorded}); got.Key() != "mlkem-native 1.0.0" {
		t.Errorf("a recorded implementation is replaced: %q", got.Key())
	}
}

func TestCellMessageBytes(t *testing.T) {
	sig := &Manifest{Kind: KindSigBench, Spec: Spec{BenchSpec: BenchSpec{Message: Message{Size: 33}}}}
	seq := &Manifest{Kind: KindKEMSigSequence, Spec: Spec{BenchSpec: BenchSpec{Message: Message{Text: "hello"}}}}
	for _, tc := range []struct {
		m    *Manifest
		c    Cell
		want int
	}{
		{sig, Cell{Operation: OpSign}, 33},
		{sig, Cell{Operation: OpVerify, Sizes: &Sizes{Message: 19600}}, 19600},
		{sig, Cell{Operation: OpKeygen}, 0},
		{seq, Cell{Operation: OpSequence}, 5},
		{&Manifest{Kind: KindKEMBench}, Cell{Operation: OpEncaps}, 0},
	} {
		if got := CellMessageBytes(tc.m, tc.c); got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.m.Kind, tc.c.Operation, got, tc.want)
		}
	}
}

func TestCheckFloorAndSomeCellOK(t *testing.T) {
	ok := Cell{Algorithm: "ML-KEM-768", Operation: OpEncaps, Status: StatusOK, Unit: UnitNanoseconds}
	res := &Result{Assurance: AssuranceHost, Cells: []Cell{ok}}
	key := KeyOf(ok)
	env := &Environment{Timing: &TimingContext{ResolutionNs: 20}}
	if err := CheckFloor(res, Samples{Values: map[CellKey][]float64{key: {11900, 12000}}}, env); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		vals []float64
		want string
	}{
		{[]float64{0, 1, 1}, "sample 0 is 0 ns: no operation takes no time"},
		{[]float64{12000, 1}, "sample 1 is 1 ns, below the clock's resolution of 20 ns"},
	} {
		err := CheckFloor(res, Samples{Values: map[CellKey][]float64{key: tc.vals}}, env)
		if !errors.Is(err, ErrBelowFloor) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ML-KEM-768 encaps") {
			t.Errorf("%v: %v, want %q", tc.vals, err, tc.want)
		}
	}
	// Counts: only zero is below the floor (the resolution is the host clock's).
	emu := &Result{Assurance: AssuranceEmulated, Cells: []Cell{{Algorithm: "A", Operation: "b", Status: StatusOK, Unit: UnitInstructions}}}
	if err := CheckFloor(emu, Samples{Values: map[CellKey][]float64{{Algorithm: "A", Operation: "b"}: {5}}}, env); err != nil {
		t.Errorf("5 instructions: %v", err)
	}
	if err := CheckSomeCellOK(res); err != nil {
		t.Error(err)
	}
	skipped := &Result{Cells: []Cell{{Status: StatusSkipped, Error: "no TLS client"}, {Status: StatusSkipped, Error: "no TLS client"}, {Status: StatusFailed, Error: "x"}}}
	if err := CheckSomeCellOK(skipped); !errors.Is(err, ErrNoCellOK) || !strings.Contains(err.Error(), "2 of 3 cells: no TLS client; 1 of 3 cells: x") {
		t.Errorf("all skipped: %v", err)
	}
}
