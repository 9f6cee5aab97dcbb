package artifacts

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"
)

// The fuzz targets below cover every parser of outside input in the contract package. Their
// committed corpora under testdata/fuzz are replayed by `go test`; scripts/fuzz grows them.

// FuzzParseManifest: no input panics; an accepted manifest validates, and its normalised form
// parses back to the same identity.
func FuzzParseManifest(f *testing.F) {
	for _, p := range []string{"../experiments/paper001/mlkem.yaml", "../experiments/paper001/mldsa.yaml",
		"../experiments/paper001/sequence.yaml", "../experiments/paper002/keygen-process.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: pqrepro/v1\nkind: kem-bench\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		m, err := ParseManifest(data, "fuzz")
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) || len(me.Problems) == 0 {
				t.Fatalf("error is not a ManifestError with problems: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted manifest fails Validate: %v", err)
		}
		again, err := ParseManifest(m.YAML(), "fuzz-again")
		if err != nil {
			t.Fatalf("normalised manifest does not parse: %v\n%s", err, m.YAML())
		}
		if again.ID() != m.ID() {
			t.Fatalf("identity changed through YAML: %s vs %s\n%s", m.ID(), again.ID(), m.YAML())
		}
	})
}

// FuzzParseResult: no input panics; an accepted result re-validates.
func FuzzParseResult(f *testing.F) {
	f.Add([]byte(`{"schema":"pqrepro/result/v1","experiment":"p/x","manifestId":"sha256:00","board":"host","cells":[{"algorithm":"ML-KEM-512","operation":"keygen","status":"ok","stats":{"n":1}}]}`))
	f.Add([]byte(`{"schema":"pqrepro/result/v1","experiment":"p/x","manifestId":"m","board":"Host/../x","cells":[]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseResult(data)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted result fails Validate: %v", err)
		}
	})
}

// FuzzReadTarGz: no archive panics or escapes; an accepted archive holds only bundle files
// within their size limits.
func FuzzReadTarGz(f *testing.F) {
	b := bundleTestFiles(256)
	bundleTestAttest(b)
	var buf bytes.Buffer
	if err := WriteTarGz(&buf, b); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadTarGz(bytes.NewReader(data), 1<<20)
		if err != nil {
			return
		}
		for name, content := range got.Files {
			if !KnownFile(name) {
				t.Fatalf("accepted unknown entry %q", name)
			}
			if max := MaxFileBytes(name); int64(len(content)) > max {
				t.Fatalf("accepted %s of %d bytes (limit %d)", name, len(content), max)
			}
		}
	})
}

// FuzzRederiveSamples: no input panics; accepted samples are finite, within MaxSamplesPerCell
// per cell, one unit per cell; and Rederive of any samples.csv against a fixed consistent
// result never panics and accepts the file the fixture wrote.
func FuzzRederiveSamples(f *testing.F) {
	m, err := ParseManifest([]byte(rederiveManifest), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	_, res, good := rederiveFixture(f, UnitNanoseconds, AssuranceHost)
	f.Add(good)
	f.Add([]byte("algorithm,operation,iteration,value,unit\nML-DSA-44,keygen,0,1,ns\n"))
	f.Add([]byte("algorithm,operation,iteration,value,unit,variant\nA,sign,0,1,ns,\nA,sign,1,NaN,ns,\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSamples(data)
		if err != nil {
			return
		}
		for k, vs := range s.Values {
			if len(vs) > MaxSamplesPerCell {
				t.Fatalf("%v: %d samples accepted", k, len(vs))
			}
			for _, v := range vs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%v: non-finite sample %v accepted", k, v)
				}
			}
		}
		err = Rederive(m, res, s)
		if bytes.Equal(data, good) && err != nil {
			t.Fatalf("the fixture's own samples do not re-derive: %v", err)
		}
	})
}
