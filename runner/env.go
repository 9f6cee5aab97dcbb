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
	env := artifacts.Environment{RunnerVersion: version, GoVersion: runtime.Version(), OS: runtime.GOOS, Libraries: map[string]string{}}
	detectMachine(r, runtime.GOARCH).fill(&env)
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
