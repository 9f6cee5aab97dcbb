package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// TestSubmitToPortal submits bundles to a real portal over HTTP: one signed by keys the
// command registers first (published as community), one signed by unregistered keys
// (refused: unknown key), and a tampered one (refused before it leaves the machine).
func TestSubmitToPortal(t *testing.T) {
	p := portaltest.Start(t, nil)
	tok, err := p.Server.CreateAccount(context.Background(), "lab member", "submitter")
	if err != nil {
		t.Fatal(err)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle.tar.gz"))
	code, out, errOut := pq(t, "submit", bundle, "--portal", p.URL, "--token", tok, "--register-keys", "--keys", keys)
	if code != 0 || !strings.Contains(out, "registered keys") || !strings.Contains(out, "published as run") {
		t.Fatalf("submit: exit %d\n%s%s", code, out, errOut)
	}
	// The same bundle again is not a new publication, and the command says so.
	code, out, errOut = pq(t, "submit", bundle, "--portal", p.URL, "--token", tok, "--keys", keys)
	if code != 0 || !strings.Contains(out, "already published as run") {
		t.Fatalf("submit the same bundle again: exit %d\n%s%s", code, out, errOut)
	}
	other, _ := runOnce(t, filepath.Join(t.TempDir(), "b2.tar.gz"))
	code, out, errOut = pq(t, "submit", other, "--portal", p.URL, "--token", tok)
	if code == 0 || !strings.Contains(errOut, "unknown key") {
		t.Fatalf("a bundle signed by unregistered keys: exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(t.TempDir(), "dir")
	b, err := artifacts.ReadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if err := artifacts.WriteDir(dir, b); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, artifacts.FileSamples), []byte("algorithm,operation,iteration,value,unit\n"), 0o644)
	code, _, errOut = pq(t, "submit", dir, "--portal", p.URL, "--token", tok)
	if code == 0 || !strings.Contains(errOut, artifacts.FileSamples) {
		t.Fatalf("a tampered bundle was sent: exit %d %s", code, errOut)
	}
	if code, _, errOut = pq(t, "submit", bundle, "--portal", p.URL, "--token", "pqu_not-a-token"); code == 0 || !strings.Contains(errOut, "unauthorized") {
		t.Fatalf("an unknown token: exit %d %s", code, errOut)
	}
}

// TestSubmitRefusesWhatMeasuredNothing: a signed bundle in which no cell ran ok, and one whose
// samples are 0 or 1 ns with statistics to match, are refused by pqrepro submit before
// anything is uploaded (the portal publishes nothing), each with the reason.
func TestSubmitRefusesWhatMeasuredNothing(t *testing.T) {
	p := portaltest.Start(t, nil)
	tok, err := p.Server.CreateAccount(context.Background(), "lab member", "submitter")
	if err != nil {
		t.Fatal(err)
	}
	bundle, keys := runOnce(t, filepath.Join(t.TempDir(), "bundle"))
	id, err := identity.LoadIdentity(keys)
	if err != nil {
		t.Fatal(err)
	}
	resign := func(name string, edit func(res *artifacts.Result, b *artifacts.Bundle)) string {
		b, err := artifacts.ReadBundle(bundle)
		if err != nil {
			t.Fatal(err)
		}
		v, err := attest.Verify(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := artifacts.ParseResult(b.Files[artifacts.FileResult])
		if err != nil {
			t.Fatal(err)
		}
		edit(res, b)
		b.Files[artifacts.FileResult], _ = json.Marshal(res)
		delete(b.Files, artifacts.FileAttestation)
		if err := attest.Sign(b, id, v.Statement.Predicate); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), name)
		if err := artifacts.WriteDir(dir, b); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	skipped := resign("skipped", func(res *artifacts.Result, b *artifacts.Bundle) {
		for i := range res.Cells {
			c := &res.Cells[i]
			c.Status, c.Error, c.Stats, c.Sizes, c.Memory, c.Energy, c.Keys = artifacts.StatusSkipped, "not on this board", nil, nil, nil, nil, ""
		}
		b.Files[artifacts.FileSamples] = []byte(strings.Join(artifacts.SamplesHeader, ",") + "\n")
	})
	zero := resign("zero", func(res *artifacts.Result, b *artifacts.Bundle) {
		var out bytes.Buffer
		vals := map[artifacts.CellKey][]float64{}
		lines := strings.Split(strings.TrimSuffix(string(b.Files[artifacts.FileSamples]), "\n"), "\n")
		out.WriteString(lines[0] + "\n")
		for _, l := range lines[1:] {
			f := strings.Split(l, ",")
			if f[4] == artifacts.UnitJoules {
				out.WriteString(l + "\n")
				continue
			}
			k := artifacts.CellKey{Algorithm: f[0], Operation: f[1]}
			v := float64(len(vals[k]) % 2)
			vals[k] = append(vals[k], v)
			f[3] = strconv.FormatFloat(v, 'f', -1, 64)
			out.WriteString(strings.Join(f, ",") + "\n")
		}
		b.Files[artifacts.FileSamples] = out.Bytes()
		for i, c := range res.Cells {
			if c.Status == artifacts.StatusOK {
				res.Cells[i].Stats = artifacts.Summarize(vals[artifacts.KeyOf(c)])
			}
		}
	})
	for _, tc := range []struct{ dir, want string }{
		{skipped, "no cell ran ok: 9 of 9 cells: not on this board"},
		{zero, "timing below the physical floor"},
	} {
		code, out, errOut := pq(t, "submit", tc.dir, "--portal", p.URL, "--token", tok, "--register-keys", "--keys", keys)
		if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "is not submitted") || strings.Contains(out, "published as run") {
			t.Errorf("submit %s: exit %d\n%s%s", filepath.Base(tc.dir), code, out, errOut)
		}
	}
	if runs, err := p.Server.Store().Runs(context.Background(), store.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("%d runs published (%v)", len(runs), err)
	}
}
