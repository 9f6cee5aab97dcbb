package runner

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	total, busy, n, err := parseProcStat([]byte("cpu  100 5 50 800 10 3 2 7 40 0\ncpu0 50 2 25 400 5 1 1 3 20 0\ncpu1 50 3 25 400 5 2 1 4 20 0\nintr 1 2\n"))
	if err != nil || total != 977 || busy != 162 || n != 2 {
		t.Fatalf("total %d busy %d cpus %d err %v; want 977, 162 (user+nice+system+steal), 2", total, busy, n, err)
	}
	for _, bad := range []string{"", "cpu 1 2 3\ncpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3 4 5 6 7 x\ncpu0 1 1 1 1 1 1 1 1\n", "cpu 1 2 3 4 5 6 7 8\n"} {
		if _, _, _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	st, ok := parsePIDStat([]byte("4242 (a (tricky) name) S 17 4242 4242 0 -1 4194304 100 0 0 0 120 30 4 5 20 0 1 0 100 1000 10"))
	if !ok || st.ppid != 17 || st.ticks != 159 {
		t.Errorf("pid stat: %+v %v; want ppid 17 and 120+30+4+5 ticks", st, ok)
	}
	if v, ok := parsePressureSome([]byte("some avg10=1.00 avg60=2.00 avg300=3.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")); !ok || v != 123456 {
		t.Errorf("pressure %d %v", v, ok)
	}
}

// TestOwnTreeIsNotExternal: CPU burnt by this process counts as external load for a sampler
// told another process is the run, and as the run's own for one told it is this process; a
// child this process starts counts as its own too. Real /proc, real CPU time.
func TestOwnTreeIsNotExternal(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	burn := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	s := startLoadSampler(Roots{}, other.Process.Pid, 100*time.Millisecond)
	burn(800 * time.Millisecond)
	x := s.finish()
	if x.Absent != "" || x.Intervals < 4 || x.Mean < 0.3 || len(x.CPUs) != x.Intervals {
		t.Errorf("this process's busy loop, sampled as another's: %+v; want at least 0.3 CPUs external", x)
	}

	s = startLoadSampler(Roots{}, os.Getpid(), 100*time.Millisecond)
	burn(800 * time.Millisecond)
	if own := s.ownMean(); own < 0.3 {
		t.Errorf("own tree used %.2f CPUs during a busy loop, want at least 0.3", own)
	}
	s.finish()

	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	s = startLoadSampler(Roots{}, os.Getpid(), 100*time.Millisecond)
	time.Sleep(800 * time.Millisecond)
	own := s.ownMean()
	s.finish()
	child.Process.Kill()
	child.Wait()
	if own < 0.3 {
		t.Errorf("a busy child counted %.2f CPUs as the run's own, want at least 0.3", own)
	}
}

func TestLoadSamplerWithoutProc(t *testing.T) {
	x := startLoadSampler(fixture("epyc-vm"), os.Getpid(), time.Second).finish()
	if !strings.Contains(x.Absent, "stat") || x.Exceeded {
		t.Errorf("no /proc/stat: %+v", x)
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("cpu  100 5 50 800 10 3 2 7 40 0\ncpu0 50 2 25 400 5 1 1 3 20 0\n"))
	f.Add([]byte("cpu 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, _, n, err := parseProcStat(b); err == nil && n == 0 {
			t.Errorf("%q parsed without a per-CPU line", b)
		}
	})
}

func FuzzParsePIDStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 10 100 1"))
	f.Add([]byte("2 (a) b) R 1 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parsePIDStat(b)
		parsePressureSome(b)
	})
}
