// Command seed fills a portal data directory with published runs for load tests, through the
// portal's real ingest: it measures paper001's ML-KEM and ML-DSA experiments once on the
// host, then for every further run scales those samples with jitter onto a board class
// (host, two declared lab classes, two emulated and one hardware class), recomputes the
// statistics from the scaled samples, signs a fresh bundle and submits it over HTTP as a
// community result of a "seed" submitter. Every seeded bundle is distinct and
// self-consistent, so it passes verification, re-derivation, the board-class check and the
// bundle-digest uniqueness like any upload; the numbers are synthetic (scaled copies of
// one real run), which the submitter name, the board names ("<class>-seeded") and the
// run log say. A seeded data directory is for load tests only, never for a public portal.
//
//	go run ./bench/seed -data /tmp/pq-load -cells 100000
//	pqrepro serve --data /tmp/pq-load --no-local-runner
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"pqrepro/artifacts"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/runner"
)

type board struct {
	class, level, driver, unit string
	scale                      float64
}

// boards are the classes seeded runs are filed under. The two lab classes are not in the
// board catalogue, so the portal files them as declared, as it would any operator's class.
var boards = []board{
	{"host", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 1},
	{"seed-lab-a", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 4.5},
	{"seed-lab-b", artifacts.AssuranceHost, "host", artifacts.UnitNanoseconds, 2.2},
	{"qemu-mps2-an386", artifacts.AssuranceEmulated, "qemu", artifacts.UnitInstructions, 25},
	{"qemu-riscv32-virt", artifacts.AssuranceEmulated, "qemu", artifacts.UnitInstructions, 30},
	{"esp32c6", artifacts.AssuranceHardware, "serial", artifacts.UnitCycles, 60},
}

func main() {
	data := flag.String("data", "", "portal data directory to fill (created if missing)")
	cells := flag.Int("cells", 100000, "number of cells to store")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "seed: -data DIR is required")
		os.Exit(2)
	}
	if err := seed(context.Background(), *data, *cells, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

// template is one real host run that seeded runs are scaled from.
type template struct {
	m       *artifacts.Manifest
	res     *artifacts.Result
	env     artifacts.Environment
	samples artifacts.Samples
}

func seed(ctx context.Context, dir string, want int, out io.Writer) error {
	cfg := portal.DefaultConfig()
	cfg.DataDir = dir
	cfg.LocalRunner = false
	// The seeder is the portal's only client, on loopback, submitting as fast as ingest goes:
	// the per-address submission budget would only slow it down.
	cfg.RateLimits.Submit = portal.Budget{}
	srv, err := portal.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	id, err := artifacts.GenerateIdentity()
	if err != nil {
		return err
	}
	token := "seed_" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_load-test-only"
	u, err := srv.Store().CreateUser(ctx, "seed (synthetic load-test data)", "submitter", portal.HashToken(token))
	if err != nil {
		return fmt.Errorf("create the seed submitter: %w", err)
	}
	if _, err := srv.Store().AddSubmitterKey(ctx, u.ID, "seed", id.Public()); err != nil {
		return fmt.Errorf("register the seed keys: %w", err)
	}
	client := runner.NewSubmitter(hs.URL, token)

	var tpls []template
	for _, ref := range []string{"paper001/mlkem", "paper001/mldsa"} {
		m, err := cat.Manifest(ref)
		if err != nil {
			return err
		}
		c, err := artifacts.ParseManifest(m.YAML(), ref)
		if err != nil {
			return err
		}
		c.Spec.Iterations, c.Spec.Warmup = 20, 2
		b, res, err := runner.Execute(ctx, &runner.Host{}, c, runner.Options{Identity: id, Version: "seed", Origin: artifacts.OriginLocal})
		if err != nil {
			return err
		}
		samples, err := artifacts.ParseSamples(b.Files[artifacts.FileSamples])
		if err != nil {
			return err
		}
		var env artifacts.Environment
		if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
			return err
		}
		tpls = append(tpls, template{m: c, res: res, env: env, samples: samples})
	}
	have, err := srv.Store().CountCells(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	runs := 0
	for have < want {
		tp := tpls[runs%len(tpls)]
		bd := boards[rng.IntN(len(boards))]
		data, err := replica(tp, bd, id, rng)
		if err != nil {
			return err
		}
		if _, err := client.Submit(ctx, data); err != nil {
			return fmt.Errorf("submit seeded run %d (%s on %s): %w", runs, tp.m.Ref(), bd.class, err)
		}
		have += len(tp.res.Cells)
		runs++
	}
	fmt.Fprintf(out, "seeded %d runs (%d cells in total) into %s through the portal's ingest in %s; the directory holds %.1f MiB\n",
		runs, have, dir, time.Since(start).Round(time.Millisecond), float64(dirSize(dir))/(1<<20))
	return nil
}

// replica is a signed bundle of tp scaled onto bd: every sample of every ok cell multiplied
// by one jittered factor per cell (rounded for counted units), the statistics recomputed,
// the board identity that of a seeded bd.
func replica(tp template, bd board, id *artifacts.Identity, rng *rand.Rand) ([]byte, error) {
	res := *tp.res
	res.Board, res.Assurance = bd.class, bd.level
	res.StartedAt = time.Now().UTC()
	res.FinishedAt = res.StartedAt
	res.Cells = nil
	var samples bytes.Buffer
	w := csv.NewWriter(&samples)
	w.Write(artifacts.SamplesHeader)
	for _, c := range tp.res.Cells {
		if c.Status != artifacts.StatusOK {
			res.Cells = append(res.Cells, c)
			continue
		}
		f := bd.scale * (0.9 + 0.2*rng.Float64())
		var vals []float64
		for _, x := range tp.samples.Values[artifacts.KeyOf(c)] {
			v := x * f
			if artifacts.IntegerUnit(bd.unit) {
				v = math.Round(v)
			}
			vals = append(vals, v)
		}
		c.Stats, c.Unit = artifacts.Summarize(vals), bd.unit
		if bd.level != artifacts.AssuranceHost {
			c.Memory, c.Energy = nil, nil
			c.Counter = "seeded: host samples scaled for a load test"
		}
		res.Cells = append(res.Cells, c)
		for i, v := range vals {
			w.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(v, 'f', -1, 64), c.Unit, c.Variant})
		}
	}
	w.Flush()
	env := tp.env
	env.Board = artifacts.BoardIdentity{Name: bd.class + "-seeded", Class: bd.class, Driver: bd.driver, Assurance: bd.level}
	if bd.driver == "qemu" {
		env.Board.Emulator = "seeded (no emulator ran)"
	}
	env.Timing = nil
	resJSON, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	envJSON, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		return nil, err
	}
	b := &artifacts.Bundle{Files: map[string][]byte{
		artifacts.FileManifest:    tp.m.YAML(),
		artifacts.FileResult:      append(resJSON, '\n'),
		artifacts.FileSamples:     samples.Bytes(),
		artifacts.FileEnvironment: append(envJSON, '\n'),
		artifacts.FileLog:         []byte("seeded for a load test: the samples of one real host run of " + tp.m.Ref() + ", scaled onto " + bd.class + "; nothing ran on that board\n"),
	}}
	pred := artifacts.Predicate{
		Runner:    artifacts.RunnerRef{Name: "pqrepro-seed", Version: "seed"},
		Assurance: artifacts.Assurance{Level: bd.level, Origin: artifacts.OriginCommunity},
	}
	if err := b.Sign(id, pred); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dirSize is the bytes of every file under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
