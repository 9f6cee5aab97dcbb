package translog_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/translog"
)

// Every parser of outside input: leaves (entry bundles), checkpoints, tile paths, entry
// bundles, verifier keys, and cosignature submissions. Each round-trips what it accepts.

func FuzzParseLeaf(f *testing.F) {
	l, _ := translog.Leaf{RunID: 7, Bundle: digestOf("x"), Published: time.UnixMilli(1764590000123)}.Encode()
	f.Add(l)
	f.Add([]byte("pqrepro-run/v1\nrun 01\nbundle sha256:00\npublished 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := translog.ParseLeaf(data)
		if err != nil {
			return
		}
		enc, err := l.Encode()
		if err != nil || !bytes.Equal(enc, data) {
			t.Fatalf("accepted %q but encodes %q (%v)", data, enc, err)
		}
	})
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add(translog.Checkpoint{Origin: "pqrepro.example/log", Size: 300, Hash: tlog.RecordHash([]byte("x"))}.Format())
	f.Add([]byte("a\n1\nAAAA\next\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := translog.ParseCheckpoint(data)
		if err != nil {
			return
		}
		if c.Size < 0 || c.Origin == "" {
			t.Fatalf("accepted %+v", c)
		}
		if _, err := translog.ParseCheckpoint(c.Format()); err != nil {
			t.Fatalf("re-parse: %v", err)
		}
	})
}

func FuzzParseTilePath(f *testing.F) {
	for _, p := range []string{"tile/0/000", "tile/0/x001/234.p/5", "tile/entries/001.p/44", "tile/1/000.p/1", "tile/../000", "tile/0/0001"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tile, err := translog.ParseTilePath(p)
		if err != nil {
			return
		}
		if translog.TilePath(tile) != p || tile.H != translog.TileHeight || tile.W < 1 || tile.W > 256 {
			t.Fatalf("accepted %q as %+v", p, tile)
		}
	})
}

func FuzzParseEntries(f *testing.F) {
	l, _ := translog.Leaf{RunID: 1, Bundle: digestOf("y"), Published: time.UnixMilli(1)}.Encode()
	b, _ := translog.EncodeEntries([][]byte{l, l})
	f.Add(b)
	f.Add([]byte{0, 5, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := translog.ParseEntries(data)
		if err != nil {
			return
		}
		back, err := translog.EncodeEntries(es)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzParseVKey(f *testing.F) {
	c, _ := translog.NewCosigner("w.example/w", make([]byte, translog.CosignerSeedSize))
	ed, ml := c.VKeys()
	f.Add(ed)
	f.Add(ml)
	f.Add("pqrepro.example/log+00000000+AQ==")
	f.Fuzz(func(t *testing.T, vkey string) {
		v, err := translog.ParseVKey(vkey)
		if err != nil {
			return
		}
		if v.Name() == "" {
			t.Fatal("a verifier without a name")
		}
		v.Verify([]byte("a\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"), make([]byte, 80))
	})
}

// FuzzAcceptCosignature submits arbitrary notes to a real log with a registered witness.
func FuzzAcceptCosignature(f *testing.F) {
	tl := newTestLog(f)
	ctx := context.Background()
	tl.publish(3)
	tl.log.Sequence(ctx)
	w, _ := translog.NewCosigner("w.example/w", make([]byte, translog.CosignerSeedSize))
	wit := &translog.Witnessing{Src: translog.OpenSource(tl.logDir()), LogKey: tl.vkey, Cosigner: w, StateFile: f.TempDir() + "/s.json"}
	_, cosigned, err := wit.Once(ctx)
	if err != nil {
		f.Fatal(err)
	}
	ed, ml := w.VKeys()
	if _, err := tl.log.RegisterWitness(ctx, ed, ml, cosigned, time.Hour); err != nil {
		f.Fatal(err)
	}
	f.Add(cosigned)
	f.Add([]byte("x\n\n— a b\n"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		n, err := tl.log.AcceptCosignature(ctx, msg)
		if err == nil && n == 0 {
			t.Fatal("accepted nothing without an error")
		}
		translog.VerifyCheckpoint(msg, translog.Trust{LogKey: tl.vkey, Witnesses: []string{ed, ml}})
	})
}

// FuzzVerifyCheckpoint feeds arbitrary notes to the reader's and witness's checkpoint check
// with a pinned log key and a pinned witness (both cosignature types).
func FuzzVerifyCheckpoint(f *testing.F) {
	skey, vkey, err := note.GenerateKey(bytes.NewReader(make([]byte, 64)), "pqrepro.example/log")
	if err != nil {
		f.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	w, _ := translog.NewCosigner("w.example/w", bytes.Repeat([]byte{7}, translog.CosignerSeedSize))
	w.Now = func() time.Time { return time.Unix(1764590000, 0) }
	ed, ml := w.VKeys()
	body := translog.Checkpoint{Origin: "pqrepro.example/log", Size: 3, Hash: tlog.RecordHash([]byte("r"))}.Format()
	signed, _ := note.Sign(&note.Note{Text: string(body)}, signer)
	n, _ := note.Open(signed, note.VerifierList(mustVerifier(f, vkey)))
	cosigned, _ := note.Sign(n, w.Signers()...)
	f.Add(signed)
	f.Add(cosigned)
	trust := translog.Trust{LogKey: vkey, Witnesses: []string{ed, ml}}
	f.Fuzz(func(t *testing.T, msg []byte) {
		vc, err := translog.VerifyCheckpoint(msg, trust)
		if err != nil {
			return
		}
		if len(vc.Witnessed) != 1 || vc.Origin != "pqrepro.example/log" {
			t.Fatalf("accepted %q: %+v", msg, vc)
		}
	})
}

func mustVerifier(tb testing.TB, vkey string) note.Verifier {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// FuzzParsePolicy: a policy it accepts formats to text that parses to the same policy.
func FuzzParsePolicy(f *testing.F) {
	_, vkey, _ := note.GenerateKey(nil, "pqrepro.example/log")
	w, _ := translog.NewCosigner("witness.example/w1", make([]byte, translog.CosignerSeedSize))
	ed, ml := w.VKeys()
	f.Add([]byte("log " + vkey + " https://x/log\nwitness w1 " + ed + " https://w\nwitness w1pq " + ml + "\ngroup g 1 w1 w1pq\nquorum g\n"))
	f.Add([]byte("# c\nlog " + vkey + "\nquorum none\n"))
	f.Add([]byte("log " + vkey + "\nwitness a " + ed + "\nquorum a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := translog.ParsePolicy(data)
		if err != nil {
			return
		}
		q, err := translog.ParsePolicy(p.Format())
		if err != nil {
			t.Fatalf("accepted %q; its formatted text %q does not parse: %v", data, p.Format(), err)
		}
		if q.LogKey != p.LogKey || q.Threshold != p.Threshold || len(q.Witnesses) != len(p.Witnesses) {
			t.Fatalf("round trip changed %+v into %+v", p, q)
		}
	})
}

// FuzzAddCheckpoint sends arbitrary add-checkpoint requests to pqrepro's witness: it never
// cosigns a checkpoint the log did not sign, and whatever it answers with verifies.
func FuzzAddCheckpoint(f *testing.F) {
	skey, vkey, _ := note.GenerateKey(nil, "pqrepro.example/log")
	signer, _ := note.NewSigner(skey)
	cp, _ := note.Sign(&note.Note{Text: string(translog.Checkpoint{Origin: "pqrepro.example/log", Size: 2, Hash: tlog.RecordHash([]byte("x"))}.Format())}, signer)
	f.Add(translog.AddCheckpointBody(0, nil, cp))
	f.Add(translog.AddCheckpointBody(1, tlog.TreeProof{tlog.RecordHash([]byte("y"))}, cp))
	f.Add([]byte("old 0\n\nnot a note\n"))
	c, _ := translog.NewCosigner("witness.example/f", make([]byte, translog.CosignerSeedSize))
	ed, ml := c.VKeys()
	verifiers, _ := func() (note.Verifiers, error) {
		lv, _ := translog.ParseVKey(vkey)
		ve, _ := translog.ParseVKey(ed)
		vm, _ := translog.ParseVKey(ml)
		return note.VerifierList(lv, ve, vm), nil
	}()
	f.Fuzz(func(t *testing.T, body []byte) {
		ws := &translog.WitnessServer{LogKey: vkey, Cosigner: c, StateFile: t.TempDir() + "/seen.json"}
		sigs, _, err := ws.AddCheckpoint(body)
		if err != nil || sigs == nil {
			return
		}
		_, rest, _ := bytes.Cut(body, []byte("\n\n"))
		n, err := note.Open(append(append([]byte(nil), rest...), sigs...), verifiers)
		if err != nil || len(n.Sigs) < 3 {
			t.Fatalf("cosigned %q: %v", body, err)
		}
	})
}
