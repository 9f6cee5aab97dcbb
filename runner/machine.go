package runner

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/internal/boardcat"
)

// Roots are where the machine is read from: procfs and sysfs. Empty fields mean /proc and
// /sys; tests lay fixture files out under t.TempDir() instead.
type Roots struct {
	Proc, Sys string
}

func (r Roots) proc(p ...string) string {
	root := r.Proc
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(append([]string{root}, p...)...)
}

func (r Roots) sys(p ...string) string {
	root := r.Sys
	if root == "" {
		root = "/sys"
	}
	return filepath.Join(append([]string{root}, p...)...)
}

// readText is a small file's trimmed content (NUL-terminated device-tree strings included),
// or "" when it cannot be read.
func readText(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
}

// cpuInfo is /proc/cpuinfo: the first value of each key, the flags of the first processor
// and the number of processor entries.
type cpuInfo struct {
	fields     map[string]string
	flags      []string
	processors int
}

func (c cpuInfo) get(key string) string { return c.fields[key] }

// maxCPUInfo bounds what is read of /proc/cpuinfo (a 256-CPU machine writes about 400 KB).
const maxCPUInfo = 4 << 20

// parseCPUInfo reads /proc/cpuinfo's "key : value" lines. Keys are matched as written
// (trimmed); a line without a colon is ignored; only the first value of each key is kept,
// which on every architecture is the first processor's.
func parseCPUInfo(r io.Reader) (cpuInfo, error) {
	ci := cpuInfo{fields: map[string]string{}}
	s := bufio.NewScanner(io.LimitReader(r, maxCPUInfo))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "processor" {
			ci.processors++
		}
		if _, seen := ci.fields[k]; seen || k == "" {
			continue
		}
		ci.fields[k] = v
		if k == "flags" {
			ci.flags = strings.Fields(v)
		}
	}
	if err := s.Err(); err != nil {
		return ci, fmt.Errorf("read cpuinfo: %w", err)
	}
	return ci, nil
}

func readCPUInfo(r Roots) cpuInfo {
	f, err := os.Open(r.proc("cpuinfo"))
	if err != nil {
		return cpuInfo{fields: map[string]string{}}
	}
	defer f.Close()
	ci, _ := parseCPUInfo(f)
	return ci
}

// cpuModel names the CPU as the machine reports it: cpuinfo's model name, a RISC-V uarch, an
// ARM core from its implementer and part numbers, or GOARCH with "(model not reported)".
func (c cpuInfo) cpuModel(goarch string) string {
	if v := c.get("model name"); v != "" && !strings.HasPrefix(strings.ToLower(v), "armv") {
		return v
	}
	if v := c.get("uarch"); v != "" { // riscv
		return v
	}
	impl, part := c.get("CPU implementer"), c.get("CPU part")
	if n := boardcat.ARMCore(impl, part); n != "" {
		return fmt.Sprintf("%s (ARM implementer %s, part %s)", n, impl, part)
	}
	if v := c.get("model name"); v != "" { // "ARMv7 Processor rev 3 (v7l)": the architecture only
		return v
	}
	return goarch + " (model not reported)"
}

// parseLoadavg reads /proc/loadavg ("0.52 0.70 0.35 1/88 19367"): the 1-, 5- and 15-minute
// load averages.
func parseLoadavg(b []byte) ([3]float64, error) {
	var out [3]float64
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("loadavg: want three load averages, got %q", truncate(string(b), 60))
	}
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v < 0 || v != v || v > 1e9 {
			return out, fmt.Errorf("loadavg: field %d is not a load average: %q", i+1, truncate(f[i], 30))
		}
		out[i] = v
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// readLoadavg is the machine's load averages, or nil when /proc/loadavg cannot be read.
func readLoadavg(r Roots) *[3]float64 {
	b, err := os.ReadFile(r.proc("loadavg"))
	if err != nil {
		return nil
	}
	l, err := parseLoadavg(b)
	if err != nil {
		return nil
	}
	return &l
}

// cpuFreq is CPU 0's cpufreq governor and current and maximum frequencies, each empty or 0
// where Linux does not expose it (many VMs have no cpufreq at all).
func cpuFreq(r Roots) (governor string, curKHz, maxKHz int64) {
	dir := r.sys("devices", "system", "cpu", "cpu0", "cpufreq")
	governor = readText(filepath.Join(dir, "scaling_governor"))
	num := func(names ...string) int64 {
		for _, n := range names {
			if v, err := strconv.ParseInt(readText(filepath.Join(dir, n)), 10, 64); err == nil && v > 0 {
				return v
			}
		}
		return 0
	}
	return governor, num("scaling_cur_freq", "cpuinfo_cur_freq"), num("cpuinfo_max_freq", "scaling_max_freq")
}

// dmiVendors maps DMI sys_vendor or product_name text to a hypervisor's name.
var dmiVendors = []struct{ match, name string }{
	{"QEMU", "qemu"}, {"KVM", "kvm"}, {"VMware", "vmware"}, {"Microsoft Corporation", "hyperv"}, {"Virtual Machine", "hyperv"},
	{"Xen", "xen"}, {"Amazon EC2", "amazon"}, {"Google Compute Engine", "google"}, {"Google", "google"}, {"innotek", "virtualbox"},
	{"VirtualBox", "virtualbox"}, {"Parallels", "parallels"}, {"OpenStack", "openstack"}, {"BHYVE", "bhyve"}, {"Bochs", "bochs"},
}

// virtualization reads which hypervisor, if any, the machine runs under: /sys/hypervisor/type,
// then DMI's sys_vendor and product_name, then cpuinfo's hypervisor flag (which says there is
// one, not which). It returns "none" with the files it read when nothing says so.
func virtualization(r Roots, ci cpuInfo) (name, source string) {
	if t := readText(r.sys("hypervisor", "type")); t != "" {
		return t, fmt.Sprintf("/sys/hypervisor/type %q", t)
	}
	for _, f := range []string{"sys_vendor", "product_name"} {
		v := readText(r.sys("class", "dmi", "id", f))
		for _, d := range dmiVendors {
			if v != "" && strings.Contains(v, d.match) {
				return d.name, fmt.Sprintf("DMI %s %q", f, v)
			}
		}
	}
	for _, f := range ci.flags {
		if f == "hypervisor" {
			return "hypervisor", "the cpuinfo hypervisor flag; neither /sys/hypervisor/type nor DMI names it"
		}
	}
	return "none", "no hypervisor flag, /sys/hypervisor/type or virtual DMI vendor"
}

// machine is what the runner reads about the machine it runs on.
type machine struct {
	arch, kernelArch, kernel, cpuModel, implementer, part, boardModel string
	cpus                                                              int
	virt, virtSource                                                  string
	governor                                                          string
	curKHz, maxKHz                                                    int64
}

// detectMachine reads the machine under r; goarch is the running binary's (runtime.GOARCH).
func detectMachine(r Roots, goarch string) machine {
	ci := readCPUInfo(r)
	m := machine{arch: goarch, kernelArch: readText(r.proc("sys", "kernel", "arch")), kernel: readText(r.proc("sys", "kernel", "osrelease")),
		cpuModel: ci.cpuModel(goarch), implementer: ci.get("CPU implementer"), part: ci.get("CPU part"), cpus: runtime.NumCPU()}
	m.boardModel = readText(r.proc("device-tree", "model"))
	if m.boardModel == "" {
		m.boardModel = ci.get("Model") // the Raspberry Pi kernels' cpuinfo line
	}
	m.virt, m.virtSource = virtualization(r, ci)
	m.governor, m.curKHz, m.maxKHz = cpuFreq(r)
	return m
}

// fill records m in env (identity fields and, for the class check, the clock).
func (m machine) fill(env *artifacts.Environment) {
	env.Arch, env.Machine, env.Kernel, env.CPUModel, env.CPUs = m.arch, m.kernelArch, m.kernel, m.cpuModel, m.cpus
	env.CPUImplementer, env.CPUPart, env.BoardModel = m.implementer, m.part, m.boardModel
	env.Virtualized = m.virt != "none"
}

// MachineEnvironment is what the runner reads about the machine under r, as the environment
// records it (architecture, kernel, CPU, board model, virtualization) plus the timing context's
// virtualization and maximum clock, which a board class check needs.
func MachineEnvironment(r Roots) artifacts.Environment {
	m := detectMachine(r, runtime.GOARCH)
	env := artifacts.Environment{Timing: &artifacts.TimingContext{Virtualization: m.virt, VirtualizationSource: m.virtSource, MaxFrequencyKHz: m.maxKHz}}
	m.fill(&env)
	return env
}
