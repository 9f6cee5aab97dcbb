package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// TestOwnTreeIsNotExternal: the sampler's own tree is the process it is given and every
// descendant: a busy child's CPU time is inside this process's tree, and this process's is not
// inside a sleeping child's. Real /proc, real CPU time, compared in ticks (not shares), so a
// busy machine cannot change the outcome.
func TestOwnTreeIsNotExternal(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	self := &loadSampler{roots: Roots{}, self: os.Getpid()}
	ticks := func(pid int) uint64 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		st, ok := parsePIDStat(b)
		if !ok {
			t.Fatalf("cannot parse %s", b)
		}
		return st.ticks
	}
	tree0, c0 := self.treeTicks(), ticks(child.Process.Pid)
	for end := time.Now().Add(time.Second); time.Now().Before(end) && ticks(child.Process.Pid) < c0+5; {
		time.Sleep(50 * time.Millisecond)
	}
	c1, tree1 := ticks(child.Process.Pid), self.treeTicks()
	if c1 == c0 || tree1-tree0 < c1-c0 {
		t.Errorf("the child used %d ticks, the tree grew by %d: a child's time is the run's own", c1-c0, tree1-tree0)
	}
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	other := &loadSampler{roots: Roots{}, self: sleeper.Process.Pid}
	o0, me0 := other.treeTicks(), ticks(os.Getpid())
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	if o1, me1 := other.treeTicks(), ticks(os.Getpid()); me1 == me0 || o1-o0 >= me1-me0 {
		t.Errorf("this process used %d ticks, a sleeping child's tree %d: this process is not in its tree", me1-me0, o1-o0)
	}
}

// TestExternalArithmetic: from two readings of a /proc laid out in a folder, other processes'
// demand is the machine's busy and steal ticks minus the run's tree, over the total, × CPUs.
func TestExternalArithmetic(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pidStat := func(ppid, ticks int) string {
		return "1 (x) S " + strconv.Itoa(ppid) + " 0 0 0 -1 0 0 0 0 0 " + strconv.Itoa(ticks) + " 0 0 0 20 0 1 0 1 1 1"
	}
	// Two CPUs; the run is pid 100 with a child 101; pid 200 is someone else.
	write("stat", "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\n")
	write("100/stat", pidStat(1, 50))
	write("101/stat", pidStat(100, 10))
	write("200/stat", pidStat(1, 30))
	write("pressure/cpu", "some avg10=0 avg60=0 avg300=0 total=1000\nfull avg10=0 avg60=0 avg300=0 total=0\n")
	s := &loadSampler{roots: Roots{Proc: dir}, self: 100, every: time.Second, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	close(s.done) // no sampling goroutine: the test takes the readings
	s.prev = s.read()
	if !s.prev.ok || s.prev.own != 60 || s.prev.ncpu != 2 {
		t.Fatalf("first reading %+v", s.prev)
	}
	s.prev.at = time.Now().Add(-time.Second)
	// 200 ticks pass (one second on two CPUs at 100 Hz): 130 busy (steal included), of which the run's tree 60
	// (its child 40, itself 20); so 70 are others' (steal counted as another's): 0.7 CPUs.
	write("stat", "cpu  180 0 140 870 0 0 0 10 0 0\ncpu0 90 0 65 435 0 0 0 5 0 0\ncpu1 90 0 65 435 0 0 0 5 0 0\n")
	write("100/stat", pidStat(1, 70))
	write("101/stat", pidStat(100, 50))
	write("200/stat", pidStat(1, 90))
	write("pressure/cpu", "some avg10=0 avg60=0 avg300=0 total=251000\n")
	s.sample(false)
	x := s.finish()
	if x.Intervals != 1 || x.Mean < 0.69 || x.Mean > 0.71 || x.Threshold != 0.2 || !x.Exceeded {
		t.Fatalf("external %+v, want 0.7 CPUs against a threshold of 0.2", x)
	}
	if x.MeanPressure == nil || *x.MeanPressure < 0.24 || *x.MeanPressure > 0.26 {
		t.Errorf("pressure %v, want about 0.25", x.MeanPressure)
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
