package host

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/runner"
)

// TestHostCellsNameTheirImplementation runs ML-KEM and X25519 on the host: every cell of the
// signed bundle names the code it timed, circl (the version and go.sum hash this binary was
// built with) for ML-KEM and Go's crypto for X25519, and environment.json holds what the names
// were derived from.
func TestHostCellsNameTheirImplementation(t *testing.T) {
	m := manifest(t, strings.Replace(kemSrc, "[ML-KEM-512, X25519, ECDH-P256]", "[ML-KEM-512, X25519]", 1))
	b, res, err := runner.Execute(context.Background(), &Host{}, m, runner.Options{Identity: testIdentity(t), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var env artifacts.Environment
	if err := json.Unmarshal(b.Files[artifacts.FileEnvironment], &env); err != nil {
		t.Fatal(err)
	}
	circl := env.Libraries[artifacts.CirclModule]
	if circl == "" || strings.HasPrefix(circl, "unknown") {
		t.Fatalf("environment.json names no circl version: %v", env.Libraries)
	}
	var fromFile artifacts.Result
	if err := json.Unmarshal(b.Files[artifacts.FileResult], &fromFile); err != nil {
		t.Fatal(err)
	}
	for i, c := range fromFile.Cells {
		im := c.Implementation
		if im == nil {
			t.Fatalf("%s %s: result.json names no implementation", c.Algorithm, c.Operation)
		}
		if err := im.Validate(); err != nil {
			t.Errorf("%s %s: %v", c.Algorithm, c.Operation, err)
		}
		switch c.Algorithm {
		case "ML-KEM-512":
			if im.Name != artifacts.CirclModule || im.Version != circl || !strings.HasPrefix(im.Digest, "h1:") || im.Digest != env.LibrarySums[artifacts.CirclModule] {
				t.Errorf("%s %s: %+v, want circl %s", c.Algorithm, c.Operation, im, circl)
			}
		case "X25519":
			if im.Name != artifacts.ImplGoCrypto || im.Version != runtime.Version() {
				t.Errorf("%s %s: %+v, want Go's crypto %s", c.Algorithm, c.Operation, im, runtime.Version())
			}
		}
		if res.Cells[i].Implementation.Key() != im.Key() {
			t.Errorf("%s %s: the returned result and result.json disagree", c.Algorithm, c.Operation)
		}
		if d := artifacts.DeriveImplementation(m.Kind, m.Spec.Method, &env, c); d.Key() != im.Key() {
			t.Errorf("%s %s: derived from the environment %q, recorded %q", c.Algorithm, c.Operation, d.Key(), im.Key())
		}
	}
}
