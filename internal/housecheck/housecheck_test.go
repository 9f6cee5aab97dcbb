package housecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module root: two folders up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// goFile is a hand-written, non-test Go file of the tree, parsed.
type goFile struct {
	rel  string // slash-separated path from the module root
	fset *token.FileSet
	file *ast.File
}

// sources parses every hand-written, non-test Go file (templ's generated _templ.go files and
// node_modules excluded).
func sources(t *testing.T) []goFile {
	t.Helper()
	root := repoRoot(t)
	var out []goFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, "_templ.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		out = append(out, goFile{filepath.ToSlash(rel), fset, f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found %d Go files: the walk is not reading the tree", len(out))
	}
	return out
}

// maxFuncLines is the longest a hand-written function may be, counted from its func line to
// its closing brace.
const maxFuncLines = 100

// TestNoLongFunctions: a function over maxFuncLines lines is split by step, as the TLS
// handshake is (one method per flight). bench/ and firmware/tools/ are measurement and build
// tools, exempt.
func TestNoLongFunctions(t *testing.T) {
	for _, g := range sources(t) {
		if strings.HasPrefix(g.rel, "bench/") || strings.HasPrefix(g.rel, "firmware/tools/") {
			continue
		}
		for _, d := range g.file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := g.fset.Position(fd.End()).Line - g.fset.Position(fd.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d)", g.rel, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
}

// envReaders may read the environment outside cmd/: packages that exist for tests (they find
// the real PostgreSQL, S3 server, witness or OpenSSL root a test uses), the cache folder's
// location (an environment contract shared with scripts/cachedir), and the measurement tools.
var envReaders = []string{
	"bench/",
	"internal/cachedir/",
	"portal/blob/s3test/",
	"portal/portaltest/",
	"portal/postgres/pgtest/",
	"portal/translog/litewitnesstest/",
	"runner/wire/wiretest/",
	"tls13/interop/",
}

// TestNoEnvOutsideMain: configuration is built once in cmd/ and passed explicitly; library code
// never reads the environment (passing a child process its environment is not reading it).
func TestNoEnvOutsideMain(t *testing.T) {
	for _, g := range sources(t) {
		if strings.HasPrefix(g.rel, "cmd/") || slices.ContainsFunc(envReaders, func(p string) bool { return strings.HasPrefix(g.rel, p) }) {
			continue
		}
		ast.Inspect(g.file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") {
				t.Errorf("%s: os.%s outside cmd/: take it from the caller's Config", g.fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// TestSerialPortLinksNoEngine: a driver that only moves bytes over a serial port must not drag
// the MQTT broker or the TLS engine into every binary that opens a board.
func TestSerialPortLinksNoEngine(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./runner/serialport")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "pqrepro/runner/serialport") {
		t.Fatalf("go list printed no serialport: %q", out)
	}
	for _, d := range deps {
		if strings.Contains(d, "mochi-mqtt") || strings.Contains(d, "paho") || d == "pqrepro/tls13" || strings.HasPrefix(d, "pqrepro/telemetry") || d == "crypto/tls" {
			t.Errorf("runner/serialport links %s", d)
		}
	}
}
