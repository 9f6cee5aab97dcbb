package experiments

import (
	"errors"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/internal/boardcat"
)

// Fixture environments as the runner records them (see runner/testdata/machines for the
// /proc and /sys files they come from).
var (
	envRPi4 = artifacts.Environment{Arch: "arm64", Machine: "aarch64", CPUModel: "Cortex-A72 (ARM implementer 0x41, part 0xd08)", CPUs: 4,
		CPUImplementer: "0x41", CPUPart: "0xd08", BoardModel: "Raspberry Pi 4 Model B Rev 1.4",
		Timing: &artifacts.TimingContext{MaxFrequencyKHz: 1500000, Virtualization: "none"}, Board: artifacts.BoardIdentity{Driver: "host"}}
	envRPi4Overclocked = func() artifacts.Environment {
		e := envRPi4
		e.Timing = &artifacts.TimingContext{MaxFrequencyKHz: 1800000, Virtualization: "none"}
		return e
	}()
	envRPi4OS32 = artifacts.Environment{Arch: "arm", Machine: "armv7l", CPUModel: "ARMv7 Processor rev 3 (v7l)", CPUs: 4,
		CPUImplementer: "0x41", CPUPart: "0xd08", BoardModel: "Raspberry Pi 4 Model B Rev 1.2", Board: artifacts.BoardIdentity{Driver: "host"}}
	envPiZero = artifacts.Environment{Arch: "arm", Machine: "armv6l", CPUModel: "ARMv6-compatible processor rev 7 (v6l)", CPUs: 1,
		CPUImplementer: "0x41", CPUPart: "0xb76", BoardModel: "Raspberry Pi Zero W Rev 1.1",
		Timing: &artifacts.TimingContext{MaxFrequencyKHz: 1000000, Virtualization: "none"}, Board: artifacts.BoardIdentity{Driver: "host"}}
	envEPYCVM = artifacts.Environment{Arch: "amd64", Machine: "x86_64", CPUModel: "AMD EPYC", CPUs: 2, Virtualized: true,
		Timing: &artifacts.TimingContext{Virtualization: "hypervisor"}, Board: artifacts.BoardIdentity{Driver: "host"}}
	envT480s = artifacts.Environment{Arch: "amd64", Machine: "x86_64", CPUModel: "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz", CPUs: 8,
		Timing: &artifacts.TimingContext{Virtualization: "none", MaxFrequencyKHz: 4000000}, Board: artifacts.BoardIdentity{Driver: "host"}}
	envARMNoCPU = artifacts.Environment{Arch: "arm64", CPUModel: "arm64 (model not reported)", CPUs: 4, Board: artifacts.BoardIdentity{Driver: "host"}}
)

func TestCheckBoardClass(t *testing.T) {
	cases := []struct {
		name, class string
		env         artifacts.Environment
		want        string // status, or "refused"
		mention     []string
	}{
		{"pi4 on a pi4", "rpi4-b", envRPi4, artifacts.ClassVerified, []string{"Cortex-A72", "1500 MHz"}},
		{"pi4 overclocked", "rpi4-b", envRPi4Overclocked, artifacts.ClassDeclared, []string{"1800 MHz", "1500 MHz"}},
		{"pi4 with a 32-bit OS", "rpi4-b", envRPi4OS32, artifacts.ClassVerified, []string{"arch arm32", "Cortex-A72"}},
		{"pi zero on a pi zero", "rpi-zero-wh", envPiZero, artifacts.ClassVerified, []string{"ARM1176", "1000 MHz"}},
		{"pi 1 on a pi zero: clock differs", "rpi1-b", envPiZero, artifacts.ClassDeclared, []string{"1000 MHz", "700 MHz"}},
		{"pi4 on a pi zero", "rpi4-b", envPiZero, "refused", []string{"ARM1176", "Cortex-A72"}},
		{"pi2 v1.1 on a pi4", "rpi2-b-v1.1", envRPi4, "refused", []string{"architecture differs", "arm64", "arm32"}},
		{"pi4 on an EPYC VM", "rpi4-b", envEPYCVM, "refused", []string{"Raspberry Pi 4 (8 GB)", "arm64, Cortex-A72", "amd64", "AMD EPYC", "virtualized", "refusing to file its results under rpi4-b"}},
		{"pi zero on an EPYC VM", "rpi-zero-wh", envEPYCVM, "refused", []string{"arm32", "AMD EPYC"}},
		{"laptop on an EPYC VM", "thinkpad-t480s-intel", envEPYCVM, "refused", []string{"CPU differs", "AMD EPYC", "Intel Core i7-8550U"}},
		{"laptop on the laptop", "thinkpad-t480s-intel", envT480s, artifacts.ClassVerified, []string{"i7-8550U"}},
		{"pico-w on the host driver: a microcontroller", "pico-w", envEPYCVM, "refused", []string{"Pico W", "microcontroller", "AMD EPYC"}},
		{"pico2-w on the host driver", "pico2-w", envRPi4, "refused", []string{"microcontroller"}},
		{"pico-w board", "pico-w", withDriver(envEPYCVM, "serial"), artifacts.ClassVerified, nil},
		{"rpi-zero (variant not stated) on an EPYC VM", "rpi-zero", envEPYCVM, "refused", []string{"rpi-zero-wh", "rpi-zero-2-wh", "AMD EPYC"}},
		{"rpi-zero on a Pi Zero W", "rpi-zero", envPiZero, artifacts.ClassDeclared, []string{"which variant", "agrees with rpi-zero-wh", "ARM1176"}},
		{"rpi-zero on a Pi 4", "rpi-zero", envRPi4, "refused", []string{"none of them"}},
		{"unknown class", "my-lab-box", envEPYCVM, artifacts.ClassDeclared, []string{"not in the board catalogue"}},
		{"machine reports no CPU", "rpi4-b", envARMNoCPU, artifacts.ClassDeclared, []string{"no CPU model"}},
		{"host", "host", envEPYCVM, artifacts.ClassVerified, nil},
		{"qemu class on the host driver", "qemu-mps2-an386", envEPYCVM, "refused", []string{"emulated"}},
		{"qemu board", "qemu-mps2-an386", withDriver(envEPYCVM, "qemu"), artifacts.ClassVerified, nil},
		{"qemu driver under a catalogue class", "rpi4-b", withDriver(envEPYCVM, "qemu"), "refused", []string{"qemu"}},
		{"firmware board", "esp32c6", withDriver(envEPYCVM, "serial"), artifacts.ClassVerified, nil},
		{"firmware class on the host driver", "esp32c6", envEPYCVM, "refused", []string{"ESP32-C6", "microcontroller"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, err := CheckBoardClass(tc.class, tc.env)
			c, err2 := checkClassEmbedded(t, tc.class, tc.env)
			if (err == nil) != (err2 == nil) || status != c.Status {
				t.Fatalf("CheckBoardClass and Catalog.CheckClass disagree: %q %v / %q %v", status, err, c.Status, err2)
			}
			text := c.Note
			if tc.want == "refused" {
				var me *ClassMismatchError
				if !errors.As(err, &me) {
					t.Fatalf("want a refusal, got %q (%s), err %v", status, c.Note, err)
				}
				text = err.Error()
			} else {
				if err != nil {
					t.Fatalf("want %s, got error %v", tc.want, err)
				}
				if status != tc.want {
					t.Fatalf("status %q, want %q (%s)", status, tc.want, c.Note)
				}
			}
			for _, m := range tc.mention {
				if !strings.Contains(text, m) {
					t.Errorf("%q does not mention %q", text, m)
				}
			}
		})
	}
}

func withDriver(e artifacts.Environment, d artifacts.Driver) artifacts.Environment {
	e.Board.Driver = d
	return e
}

func checkClassEmbedded(t *testing.T, class string, env artifacts.Environment) (ClassCheck, error) {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return c.CheckClass(class, env)
}

func TestCatalogueCores(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rpi4-b": "Cortex-A72", "rpi1-b": "ARM1176", "rpi2-b-v1.1": "Cortex-A7", "rpi2-b-v1.2": "Cortex-A53",
		"thinkpad-t480s-intel": "Intel Core i7-8550U", "macbook-air-m1": "Apple M1", "pico-w": "", "esp32c6": "32-bit RISC-V"}
	for _, b := range c.Boards {
		if w, ok := want[b.Slug]; ok {
			if got := catalogueCore(b.CPU).key; got != w {
				t.Errorf("%s: core %q, want %q", b.Slug, got, w)
			}
		}
	}
}

// TestBoardCanRun: a board with a declared subset is offered only manifests whose every
// cell it can run; a board without one runs everything of its kinds.
func TestBoardCanRun(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	mlkem, err := c.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	mldsa, err := c.Manifest("paper001/mldsa")
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := c.Manifest("paper003/telemetry")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := c.Manifest("paper003/telemetry-fs")
	if err != nil {
		t.Fatal(err)
	}
	matrix, err := c.Manifest("paper000/matrix")
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := c.Manifest("paper000/matrix-stacks")
	if err != nil {
		t.Fatal(err)
	}
	an505, _ := boardcat.LookupEmulated("qemu-mps2-an505")
	tlsEmu := protocol.BoardInfo{Class: an505.Class, Driver: "qemu", Kinds: an505.Kinds}
	only512 := *mlkem
	only512.Spec.Algorithms = []string{"ML-KEM-512"}
	m0 := protocol.BoardInfo{Class: "qemu-microbit", Algorithms: []string{"ML-KEM-512"}, Kinds: []artifacts.Kind{artifacts.KindKEMBench}}
	full := protocol.BoardInfo{Class: "qemu-mps2-an386"}
	emu := protocol.BoardInfo{Class: "qemu-mps2-an386", Driver: "qemu", Kinds: []artifacts.Kind{artifacts.KindKEMBench, artifacts.KindSigBench, artifacts.KindMQTTTelemetry}}
	host := protocol.BoardInfo{Class: "host", Driver: "host"}
	for _, tt := range []struct {
		name string
		b    protocol.BoardInfo
		m    *artifacts.Manifest
		want string // "" or a fragment of the reason
	}{
		{"subset, all cells in it", m0, &only512, ""},
		{"subset, cells outside it", m0, mlkem, "declares only ML-KEM-512; the experiment needs ML-KEM-768, ML-KEM-1024"},
		{"subset, another kind", m0, mldsa, "runs only kem-bench"},
		{"no subset", full, mlkem, ""},
		{"no subset, signatures", full, mldsa, ""},
		{"firmware telemetry device, pinned", emu, pinned, ""},
		{"firmware telemetry device, forward-secret", emu, fs, ""},
		{"firmware without the telemetry device", m0, pinned, "runs only kem-bench"},
		{"host, forward-secret", host, fs, ""},
		{"emulated board with the TLS client, the matrix", tlsEmu, matrix, ""},
		{"emulated board, the matrix with crypto/tls", tlsEmu, stacks, "a board's client is its firmware's own"},
		{"microbit, the matrix", m0, matrix, "runs only kem-bench"},
	} {
		got := BoardCanRun(tt.b, tt.m)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
