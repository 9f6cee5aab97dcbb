package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/experiments"
)

func fixture(name string) Roots {
	dir := filepath.Join("testdata", "machines", name)
	return Roots{Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys")}
}

// fixtureEnv is the environment the runner records on a fixture machine, with the class
// check's inputs (clock, virtualization) as Host.CheckClass assembles them.
func fixtureEnv(name, goarch string) artifacts.Environment {
	m := detectMachine(fixture(name), goarch)
	env := artifacts.Environment{Board: artifacts.BoardIdentity{Driver: "host"},
		Timing: &artifacts.TimingContext{Virtualization: m.virt, MaxFrequencyKHz: m.maxKHz}}
	m.fill(&env)
	return env
}

func TestDetectMachine(t *testing.T) {
	cases := []struct {
		fixture, goarch                                      string
		kernelArch, model, impl, part, board, virt, governor string
		maxKHz                                               int64
	}{
		{"rpi4", "arm64", "aarch64", "Cortex-A72 (ARM implementer 0x41, part 0xd08)", "0x41", "0xd08", "Raspberry Pi 4 Model B Rev 1.4", "none", "ondemand", 1500000},
		{"pizero", "arm", "armv6l", "ARM1176 (ARM implementer 0x41, part 0xb76)", "0x41", "0xb76", "Raspberry Pi Zero W Rev 1.1", "none", "ondemand", 1000000},
		{"epyc-vm", "amd64", "x86_64", "AMD EPYC", "", "", "", "qemu", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.fixture, func(t *testing.T) {
			m := detectMachine(fixture(tc.fixture), tc.goarch)
			got := []string{m.kernelArch, m.cpuModel, m.implementer, m.part, m.boardModel, m.virt, m.governor}
			want := []string{tc.kernelArch, tc.model, tc.impl, tc.part, tc.board, tc.virt, tc.governor}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d = %q, want %q", i, got[i], want[i])
				}
			}
			if m.maxKHz != tc.maxKHz {
				t.Errorf("max frequency %d kHz, want %d", m.maxKHz, tc.maxKHz)
			}
		})
	}
}

// TestFixtureClassChecks runs the catalogue check on what the runner reads from each
// fixture machine: the same board verified, another board or another machine refused.
func TestFixtureClassChecks(t *testing.T) {
	cases := []struct {
		fixture, goarch, class, want string
	}{
		{"rpi4", "arm64", "rpi4-b", artifacts.ClassVerified},
		{"rpi4", "arm", "rpi4-b", artifacts.ClassVerified}, // a 32-bit OS on the Pi 4
		{"rpi4", "arm64", "rpi3-a-plus", "refused"},
		{"pizero", "arm", "rpi-zero-wh", artifacts.ClassVerified},
		{"pizero", "arm", "rpi4-b", "refused"},
		{"pizero", "arm", "rpi-zero", artifacts.ClassDeclared}, // the catalogue does not say which Pi Zero
		{"epyc-vm", "amd64", "rpi4-b", "refused"},
		{"epyc-vm", "amd64", "pico-w", "refused"}, // a microcontroller is never a Linux process
		{"epyc-vm", "amd64", "rpi-zero", "refused"},
		{"epyc-vm", "amd64", "my-lab-box", artifacts.ClassDeclared},
		{"epyc-vm", "amd64", "host", artifacts.ClassVerified},
	}
	for _, tc := range cases {
		t.Run(tc.fixture+"/"+tc.class, func(t *testing.T) {
			status, err := experiments.CheckBoardClass(tc.class, fixtureEnv(tc.fixture, tc.goarch))
			var me *experiments.ClassMismatchError
			switch {
			case tc.want == "refused" && !errors.As(err, &me):
				t.Fatalf("want a refusal, got %q, %v", status, err)
			case tc.want != "refused" && (err != nil || status != tc.want):
				t.Fatalf("got %q, %v; want %s", status, err, tc.want)
			}
		})
	}
}

func TestTimingContextOnThisMachine(t *testing.T) {
	tc := startTiming(Roots{}, true)
	finishTiming(tc, Roots{}, true, 2)
	if tc.ResolutionNs <= 0 || tc.ReadCostNs <= 0 || tc.GOMAXPROCS < 1 {
		t.Fatalf("implausible clock: resolution %v ns, read cost %v ns, GOMAXPROCS %d", tc.ResolutionNs, tc.ReadCostNs, tc.GOMAXPROCS)
	}
	if tc.Virtualization == "" || tc.Scope == "" || tc.ReadCostMethod == "" {
		t.Errorf("context incomplete: %+v", tc)
	}
	if _, err := os.Stat("/proc/loadavg"); err == nil && (tc.LoadBefore == nil || tc.LoadAfter == nil) {
		t.Errorf("load averages not read though /proc/loadavg exists")
	}
	q := startTiming(Roots{}, false)
	finishTiming(q, Roots{}, false, 2)
	if len(q.Warnings) != 0 || !strings.HasPrefix(q.Scope, "the host only") {
		t.Errorf("an emulated board's context warns or claims its cells: %+v", q)
	}
}

func TestLoadavgAndCPUFreqReaders(t *testing.T) {
	dir := t.TempDir()
	r := Roots{Proc: filepath.Join(dir, "proc"), Sys: filepath.Join(dir, "sys")}
	if readLoadavg(r) != nil {
		t.Error("a load average from a missing file")
	}
	if g, c, m := cpuFreq(r); g != "" || c != 0 || m != 0 {
		t.Errorf("cpufreq from missing files: %q %d %d", g, c, m)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(r.proc("loadavg"), "0.25 1.50 2.75 3/120 777\n")
	if l := readLoadavg(r); l == nil || *l != [3]float64{0.25, 1.5, 2.75} {
		t.Errorf("load averages %v", l)
	}
	write(r.proc("loadavg"), "0.25 abc 2.75 3/120 777\n")
	if l := readLoadavg(r); l != nil {
		t.Errorf("a malformed loadavg read as %v", l)
	}
	fd := r.sys("devices", "system", "cpu", "cpu0", "cpufreq")
	write(filepath.Join(fd, "scaling_governor"), "performance\n")
	write(filepath.Join(fd, "scaling_cur_freq"), "2400000\n")
	write(filepath.Join(fd, "scaling_max_freq"), "3000000\n")
	if g, c, m := cpuFreq(r); g != "performance" || c != 2400000 || m != 3000000 {
		t.Errorf("cpufreq %q %d %d", g, c, m)
	}
	write(filepath.Join(fd, "cpuinfo_max_freq"), "3500000\n")
	if _, _, m := cpuFreq(r); m != 3500000 {
		t.Errorf("cpuinfo_max_freq not preferred: %d", m)
	}
	tc := &artifacts.TimingContext{LoadBefore: &[3]float64{0.9, 0, 0}, Virtualization: "none"}
	if w := timingWarnings(tc, 2); len(w) != 0 {
		t.Errorf("0.9 on 2 CPUs warned: %q", w)
	}
	tc.LoadAfter = &[3]float64{1.1, 0, 0}
	if w := timingWarnings(tc, 2); len(w) != 1 || !strings.Contains(w[0], "after the run") {
		t.Errorf("1.1 on 2 CPUs after the run: %q", w)
	}
}

func TestParseLoadavg(t *testing.T) {
	for _, bad := range []string{"", "0.1 0.2", "x y z", "-1 0 0", "NaN 0 0"} {
		if _, err := parseLoadavg([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	for _, name := range []string{"rpi4", "pizero", "epyc-vm"} {
		b, err := os.ReadFile(filepath.Join("testdata", "machines", name, "proc", "cpuinfo"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("processor: 0\n:\n::\nflags\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ci, err := parseCPUInfo(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		if ci.processors < 0 || ci.fields == nil {
			t.Fatal("broken cpuinfo")
		}
		if m := ci.cpuModel("arm64"); m == "" {
			t.Fatal("empty CPU model")
		}
	})
}

func FuzzParseLoadavg(f *testing.F) {
	f.Add([]byte("0.52 0.70 0.35 1/88 19367\n"))
	f.Add([]byte("1e308 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLoadavg(b)
		if err != nil {
			return
		}
		for _, v := range l {
			if v < 0 || v != v {
				t.Fatalf("load %v accepted", v)
			}
		}
	})
}
