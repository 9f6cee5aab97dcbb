// Command seed fills a portal data directory with published runs for load tests: real
// measurements of paper001's ML-KEM and ML-DSA experiments on the host, replicated with
// jitter across board classes (host, emulated and hardware levels; portal-runner and
// community origins) until the requested number of cells is stored.
//
//	go run ./bench/seed -data /tmp/pq-load -cells 100000
//	pqrepro serve --data /tmp/pq-load --no-local-runner
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"pqrepro/artifacts"
	"pqrepro/compare"
	"pqrepro/experiments"
	"pqrepro/portal"
	"pqrepro/portal/blob"
	"pqrepro/portal/sqlite"
	"pqrepro/runner"
)

type board struct {
	class, level, origin, unit string
	scale                      float64
}

var boards = []board{
	{"host", artifacts.AssuranceHost, artifacts.OriginPortalRunner, artifacts.UnitNanoseconds, 1},
	{"rpi4-b", artifacts.AssuranceHost, artifacts.OriginCommunity, artifacts.UnitNanoseconds, 4.5},
	{"rpi5", artifacts.AssuranceHost, artifacts.OriginCommunity, artifacts.UnitNanoseconds, 2.2},
	{"qemu-mps2-an386", artifacts.AssuranceEmulated, artifacts.OriginPortalRunner, artifacts.UnitInstructions, 25},
	{"qemu-riscv32-virt", artifacts.AssuranceEmulated, artifacts.OriginPortalRunner, artifacts.UnitInstructions, 30},
	{"esp32c6", artifacts.AssuranceHardware, artifacts.OriginCommunity, artifacts.UnitCycles, 60},
}

func main() {
	data := flag.String("data", "", "portal data directory to fill (created if missing)")
	cells := flag.Int("cells", 100000, "number of cells to store")
	flag.Parse()
	if *data == "" {
		fmt.Fprintln(os.Stderr, "seed: -data DIR is required")
		os.Exit(2)
	}
	if err := seed(context.Background(), *data, *cells); err != nil {
		fmt.Fprintln(os.Stderr, "seed:", err)
		os.Exit(1)
	}
}

type template struct {
	res     *artifacts.Result
	m       *artifacts.Manifest
	paper   *experiments.Paper
	bundle  []byte
	digest  string
	env     []byte
	keys    artifacts.PublicKeys
	samples artifacts.Samples
}

func seed(ctx context.Context, dir string, want int) error {
	cfg := portal.DefaultConfig()
	cfg.DataDir = dir
	srv, err := portal.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer srv.Close()
	cat, err := experiments.Load()
	if err != nil {
		return err
	}
	id, err := artifacts.GenerateIdentity()
	if err != nil {
		return err
	}
	blobs, err := blob.OpenFS(filepath.Join(dir, "blobs"))
	if err != nil {
		return err
	}
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
		b, res, err := runner.Execute(ctx, &runner.Host{}, c, runner.Options{Identity: id, Version: "seed", Origin: artifacts.OriginPortalRunner})
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := artifacts.WriteTarGz(&buf, b); err != nil {
			return err
		}
		p, _ := cat.Paper(c.Metadata.Paper)
		digest, _, err := blobs.Put(ctx, bytes.NewReader(buf.Bytes()), artifacts.MaxBundleBytes)
		if err != nil {
			return err
		}
		samples, err := artifacts.ParseSamples(b.Files[artifacts.FileSamples])
		if err != nil {
			return err
		}
		tpls = append(tpls, template{res: res, m: c, paper: p, bundle: buf.Bytes(), digest: digest, env: b.Files[artifacts.FileEnvironment], keys: id.Public(), samples: samples})
	}
	have, err := srv.Store().CountCells(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	runs := 0
	for have < want {
		tp := tpls[runs%len(tpls)]
		bd := boards[rng.IntN(len(boards))]
		res := *tp.res
		res.Board, res.Assurance = bd.class, bd.level
		res.Cells = nil
		samples := artifacts.Samples{Values: map[artifacts.CellKey][]float64{}}
		for _, c := range tp.res.Cells {
			f := bd.scale * (0.9 + 0.2*rng.Float64())
			for _, x := range tp.samples.Values[artifacts.KeyOf(c)] {
				samples.Values[artifacts.KeyOf(c)] = append(samples.Values[artifacts.KeyOf(c)], x*f)
			}
			s := *c.Stats
			s.Min, s.P25, s.Median, s.P75, s.Max, s.Mean, s.Stddev = s.Min*f, s.P25*f, s.Median*f, s.P75*f, s.Max*f, s.Mean*f, s.Stddev*f
			c.Stats, c.Unit = &s, bd.unit
			if bd.level != artifacts.AssuranceHost {
				c.Memory = nil
			}
			res.Cells = append(res.Cells, c)
		}
		rep := compare.Compare(compare.Run{Result: &res, Samples: samples}, tp.m, tp.paper)
		repJSON, _ := json.Marshal(rep)
		var verdicts []sqlite.ClaimVerdict
		for _, cr := range rep.Claims {
			verdicts = append(verdicts, sqlite.ClaimVerdict{Paper: tp.paper.ID, ClaimID: cr.Claim.ID, Verdict: cr.Verdict, Reason: cr.Reason})
		}
		run := sqlite.Run{Experiment: res.Experiment, Paper: tp.paper.ID, ManifestID: res.ManifestID, Kind: res.Kind, Method: res.Method,
			BoardClass: bd.class, BoardName: bd.class + "-seeded", Level: bd.level, Origin: bd.origin, Signer: tp.keys.Fingerprint(), PublicKeys: tp.keys,
			Bundle: tp.digest, BundleSize: int64(len(tp.bundle)), StartedAt: res.StartedAt, FinishedAt: res.FinishedAt,
			Environment: string(tp.env), Report: string(repJSON), Checks: `["seeded for load tests: not verified"]`, CellsTotal: len(res.Cells), CellsOK: len(res.Cells)}
		if _, err := srv.Store().Publish(ctx, sqlite.Publication{Run: run, Cells: res.Cells, Claims: verdicts}); err != nil {
			return err
		}
		have += len(res.Cells)
		runs++
	}
	fmt.Printf("seeded %d runs (%d cells in total) into %s in %s\n", runs, have, dir, time.Since(start).Round(time.Millisecond))
	return nil
}
