package portal_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/portaltest"
)

// resigned returns archive signed again by id: the same files under a fresh (hedged, so
// different) signature, hence a bundle not yet published.
func resigned(tb testing.TB, archive []byte, id *identity.Identity) []byte {
	tb.Helper()
	return forge(tb, archive, id, func(*artifacts.Result, *[]byte) {})
}

// maxCellsBundle is the largest result that re-derives: an openssl-cli sig-bench of every
// signature algorithm with all three operations (the most cells a manifest of the catalogue
// asks for), each cell followed by its one allowed variant, n ok samples each. The samples are
// benchmark input (a deterministic ramp), not measurements; the environment is a real host
// run's.
func maxCellsBundle(tb testing.TB, id *identity.Identity, n int) []byte {
	tb.Helper()
	src := fmt.Sprintf(`apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: bench, name: largest}
spec:
  algorithms: [%s]
  operations: [keygen, sign, verify]
  message: {size: 64}
  method: openssl-cli
  iterations: %d
  seed: bench/largest
`, strings.Join(artifacts.AlgorithmNames(func(a artifacts.Algorithm) bool { return !a.KEM }), ", "), n)
	m, err := artifacts.ParseManifest([]byte(src), "largest")
	if err != nil {
		tb.Fatal(err)
	}
	host := signedBundle(tb, smallManifest(tb, 2), id, attest.OriginLocal)
	hb, err := artifacts.ReadTarGz(bytes.NewReader(host), 0)
	if err != nil {
		tb.Fatal(err)
	}
	res := &artifacts.Result{Schema: artifacts.ResultSchema, Experiment: m.Ref(), ManifestID: m.ID(), Kind: m.Kind, Method: m.Spec.Method,
		Board: "host", Assurance: artifacts.AssuranceHost}
	var samples bytes.Buffer
	w := csv.NewWriter(&samples)
	w.Write(artifacts.SamplesHeader)
	refs := m.Cells()
	for v := 0; v <= artifacts.MaxVariants; v++ {
		for _, ref := range refs {
			variant := ""
			if v > 0 {
				variant = fmt.Sprintf("variant %d", v)
			}
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = float64(10000 + 37*i + len(res.Cells))
			}
			c := artifacts.Cell{Algorithm: ref.Algorithm, Operation: ref.Operation, Status: artifacts.StatusOK, Unit: artifacts.UnitNanoseconds,
				Counter: "benchmark input", Requested: n, Variant: variant, Stats: artifacts.Summarize(vals)}
			res.Cells = append(res.Cells, c)
			for i, x := range vals {
				w.Write([]string{c.Algorithm, c.Operation, strconv.Itoa(i), strconv.FormatFloat(x, 'f', -1, 64), string(c.Unit), c.Variant})
			}
		}
	}
	w.Flush()
	// A variant must follow its own cell: order them cell-major.
	ordered := make([]artifacts.Cell, 0, len(res.Cells))
	for _, ref := range refs {
		for _, c := range res.Cells {
			if c.Algorithm == ref.Algorithm && c.Operation == ref.Operation {
				ordered = append(ordered, c)
			}
		}
	}
	res.Cells = ordered
	resJSON, _ := json.Marshal(res)
	b := &artifacts.Bundle{Files: map[string][]byte{
		artifacts.FileManifest: m.YAML(), artifacts.FileResult: resJSON, artifacts.FileSamples: samples.Bytes(),
		artifacts.FileEnvironment: hb.Files[artifacts.FileEnvironment], artifacts.FileLog: []byte("benchmark input\n"),
	}}
	if err := attest.Sign(b, id, attest.Predicate{Runner: attest.RunnerRef{Name: "bench"}, Assurance: attest.Assurance{Level: artifacts.AssuranceHost, Origin: attest.OriginLocal}}); err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := artifacts.WriteTarGz(&buf, b); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// maximalManifest is paper001/mlkem at the manifest limits: a title and description of
// artifacts.MaxTextField bytes and reference claims up to about artifacts.MaxManifestBytes
// and artifacts.MaxManifestNodes, run for real on the host (one iteration).
func maximalManifest(tb testing.TB) *artifacts.Manifest {
	tb.Helper()
	m := smallManifest(tb, 1)
	m.Metadata.Title = strings.Repeat("t", artifacts.MaxTextField)
	m.Metadata.Description = strings.Repeat("d", artifacts.MaxTextField)
	m.Spec.Reference.Dataset = "paper001"
	m.Spec.Reference.Claims = nil
	for i := 0; len(m.YAML()) < artifacts.MaxManifestBytes-64 && len(m.Spec.Reference.Claims) < artifacts.MaxManifestNodes-100; i++ {
		m.Spec.Reference.Claims = append(m.Spec.Reference.Claims, fmt.Sprintf("C%07d-%05d", i, i))
	}
	if err := m.Validate(); err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkIngestLargest submits, over loopback as a community result, the largest bundle a
// result re-derives to (108 ok cells, see maxCellsBundle, of 1,000 samples) and a bundle of a
// maximal manifest: read,
// verify, re-derive every cell, check the class, compare, store and publish. Each iteration
// uploads a fresh signature (a bundle is published once). Reported per bundle.
//
//	go test ./portal -run '^$' -bench BenchmarkIngestLargest -benchtime 5x
func BenchmarkIngestLargest(b *testing.B) {
	ctx := context.Background()
	for _, bc := range []struct {
		name   string
		bundle func(testing.TB, *identity.Identity) []byte
	}{
		{"LargestResult", func(tb testing.TB, id *identity.Identity) []byte { return maxCellsBundle(tb, id, 1000) }},
		{"MaximalManifest", func(tb testing.TB, id *identity.Identity) []byte {
			return signedBundle(tb, maximalManifest(tb), id, attest.OriginLocal)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := portaltest.Start(b, nil)
			id := mustIdentity(b)
			sub := registeredSubmitter(b, p, "bench", id)
			bundle := bc.bundle(b, id)
			b.SetBytes(int64(len(bundle)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bundle = resigned(b, bundle, id)
				b.StartTimer()
				if _, err := sub.Submit(ctx, bundle); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runs, _ := stored(b, p)
			if runs != b.N {
				b.Fatalf("%d runs published, want %d", runs, b.N)
			}
		})
	}
}
