package runner

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"pqrepro/artifacts"
)

// hostEnvironment reads the machine and the build, never what documentation says they are.
func hostEnvironment(version string) artifacts.Environment {
	env := artifacts.Environment{
		RunnerVersion: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUModel: cpuModel(), CPUs: runtime.NumCPU(), Virtualized: cpuFlag("hypervisor"),
		Libraries: map[string]string{},
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		env.Kernel = strings.TrimSpace(string(b))
	}
	env.Hostname, _ = os.Hostname()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version + " (replaces " + d.Version + ")"
			}
			env.Libraries[d.Path] = v
		}
	}
	if _, ok := env.Libraries[circlModule]; !ok {
		env.Libraries[circlModule] = "unknown (no module build info in this binary)"
	}
	return env
}

const circlModule = "github.com/cloudflare/circl"

// cpuModel is the "model name" line of /proc/cpuinfo, or GOARCH when there is none.
func cpuModel() string {
	if v := cpuinfo("model name"); v != "" {
		return v
	}
	if v := cpuinfo("uarch"); v != "" { // riscv
		return v
	}
	return runtime.GOARCH + " (model not reported)"
}

func cpuFlag(flag string) bool {
	for _, f := range strings.Fields(cpuinfo("flags")) {
		if f == flag {
			return true
		}
	}
	return false
}

func cpuinfo(key string) string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
