// Command pqrepro re-runs published post-quantum benchmarks and checks them: list, run,
// verify, keys. main only builds configuration and wires the packages together.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/method/procop"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=..."; otherwise it comes from
// the module build info.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `pqrepro: re-run published post-quantum cryptography benchmarks and check them.

Usage:
  pqrepro list                          the experiments, with their papers
  pqrepro run <paper>/<name>|FILE [--board host|qemu-mps2-an386|qemu-mps2-an505|qemu-riscv32-virt|qemu-microbit|rp2040js-picow|NAME]
              [--out DIR|FILE.tar.gz] [--iterations N] [--warmup N] [--map FILE] [--firmware ELF]
              [--tls-server engine|HOST:PORT [--tls-ca FILE] [--tls-servername NAME]] [--tls-client engine|openssl]
                                        run an experiment, write a signed bundle, compare it
  pqrepro verify BUNDLE [--key FILE]    check a bundle's signatures and digests offline
              [--log URL|DIR --log-key VKEY [--witness VKEY]... | --trust FILE] [--log-state FILE]
              [--policy FILE]... [--log-timeout 1m] [--request-timeout 30s]
                                        and its inclusion in the portal's transparency log
  pqrepro witness --log URL --key DIR --log-key VKEY [--name NAME] [--once] [--register]
              [--request-timeout 30s]   follow a portal's log, refuse forks, cosign checkpoints
  pqrepro witness --listen ADDR --key DIR --log-key VKEY [--name NAME]
                                        be a C2SP tlog-witness the portal pushes checkpoints to
  pqrepro show BUNDLE [--key FILE]      verify a bundle, then print its cells and comparison
  pqrepro submit BUNDLE --portal URL --token T [--register-keys]
                                        submit a signed bundle to a portal as a community result
  pqrepro keys [--keys DIR]             create or show this runner's signing identity
  pqrepro boards [--map FILE]           the boards this runner has, and which are usable
  pqrepro serve [--addr A] [--data DIR] [--no-local-runner]
                                        run the portal (and a local runner with the host board)
  pqrepro rebuild [--data DIR] [--all]  re-derive the portal's stored comparison reports from
                                        their bundles (older than this build's, or all),
                                        and recompute the pages' counts from the runs
  pqrepro runner --portal URL --token T run a runner agent attached to a portal
  pqrepro tls-serve --group G --sig S [--listen A] [--ca-dir DIR] [--n N]
                                        the TLS engine as the server a board's client connects to
  pqrepro tls-probe HOST:PORT --group G --sig S --ca FILE [--servername NAME] [--n N]
              [--timeout 10s]           the TLS engine as the client of any server: what was
                                        negotiated, who answered, the engine's phase timings
  pqrepro energy paper002 [--board B]... [--json]
                                        re-derive the paper's published energies from its
                                        authors' power traces (in the binary), with intervals

Environment: PQREPRO_KEYS (identity directory), PQREPRO_RUNS (default bundle folder),
PQREPRO_MAP (hardware map), PQREPRO_FIRMWARE (firmware build folder), PQREPRO_TLS_CA (the
CAs boards pin for tls-serve and tls-matrix jobs).
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == procop.ChildOpArg {
		os.Exit(procop.ChildOp(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == tlsmatrix.TLSServerArg {
		os.Exit(tlsmatrix.TLSServer(os.Stdin, os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the exit code: 0 success, 1 failure, 2 usage,
// 130 interrupted.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "list":
		err = cmdList(stdout)
	case "run":
		err = cmdRun(ctx, args[1:], stdout, stderr)
	case "verify":
		err = cmdVerify(ctx, args[1:], stdout)
	case "show":
		err = cmdShow(args[1:], stdout)
	case "submit":
		err = cmdSubmit(ctx, args[1:], stdout)
	case "keys":
		err = cmdKeys(args[1:], stdout)
	case "boards":
		err = cmdBoards(ctx, args[1:], stdout)
	case "witness":
		err = cmdWitness(ctx, args[1:], stdout)
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "rebuild":
		err = cmdRebuild(ctx, args[1:], stdout, stderr)
	case "runner":
		err = cmdRunner(ctx, args[1:], stdout, stderr)
	case "tls-serve":
		err = cmdTLSServe(ctx, args[1:], stdout)
	case "tls-probe":
		err = cmdTLSProbe(ctx, args[1:], stdout)
	case "energy":
		err = cmdEnergy(args[1:], stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version":
		fmt.Fprintln(stdout, "pqrepro", buildVersion())
		return 0
	default:
		fmt.Fprintf(stderr, "pqrepro: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "pqrepro %s: %v\n", args[0], err)
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "\npqrepro %s: interrupted: %v\n", args[0], err)
		return 130
	default:
		fmt.Fprintf(stderr, "pqrepro %s: %v\n", args[0], err)
		return 1
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// keysDir is where the runner identity lives: --keys, then PQREPRO_KEYS, then the user's
// configuration directory.
func keysDir(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := os.Getenv("PQREPRO_KEYS"); v != "" {
		return v
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "pqrepro", "keys")
	}
	return filepath.Join(".pqrepro", "keys")
}
