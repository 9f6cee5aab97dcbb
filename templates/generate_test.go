package templates

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent fails when `go tool templ generate` would change a committed
// _templ.go file. It builds the module's templ tool, generates a copy of templates/ the way
// `go tool templ generate` does from the module root, and compares every file.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the templ generator")
	}
	tmp := t.TempDir()
	tool := filepath.Join(tmp, "templ")
	build := exec.Command("go", "build", "-o", tool, "github.com/a-h/templ/cmd/templ")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build templ: %v\n%s", err, out)
	}
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no .templ files: %v", err)
	}
	copyDir := filepath.Join(tmp, "templates")
	if err := os.Mkdir(copyDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// templ records file names relative to -path; generate from the copy's root, as from the module root.
	if err := os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module pqrepro\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gen := exec.Command(tool, "generate", "-path", ".")
	gen.Dir = tmp
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("templ generate: %v\n%s", err, out)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".templ") + "_templ.go"
		want, err := os.ReadFile(filepath.Join(copyDir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v (run `go tool templ generate`)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go tool templ generate` and commit the result", name)
		}
	}
}
