package runner

import (
	"os"
	"runtime"
	"runtime/debug"

	"pqrepro/artifacts"
)

// hostEnvironment reads the machine under r and the build, never what documentation says
// they are.
func hostEnvironment(version string, r Roots) artifacts.Environment {
	env := artifacts.Environment{RunnerVersion: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Libraries: map[string]string{}, LibrarySums: map[string]string{}}
	detectMachine(r, runtime.GOARCH).fill(&env)
	env.Hostname, _ = os.Hostname()
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			v := d.Version
			if d.Replace != nil {
				v = d.Replace.Version + " (replaces " + d.Version + ")"
			}
			env.Libraries[d.Path] = v
			sum := d.Sum
			if d.Replace != nil {
				sum = d.Replace.Sum
			}
			if sum != "" {
				env.LibrarySums[d.Path] = sum
			}
		}
		env.RunnerRevision = buildRevision(bi)
	}
	if _, ok := env.Libraries[circlModule]; !ok {
		env.Libraries[circlModule] = "unknown (no module build info in this binary)"
	}
	return env
}

const circlModule = "github.com/cloudflare/circl"

// buildRevision is the VCS revision the binary was built from, "+modified" when the tree had
// uncommitted changes; "" when the build has no VCS stamp (go test, go run outside a checkout).
func buildRevision(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+modified"
	}
	return rev
}
