package impltable

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const src = "9ae715eee9771b0e06ac3f40461d3d15af54b723f6869699e047e157ac7e1af4"

func TestParseFormat(t *testing.T) {
	entries := []Entry{
		{Algorithm: "ML-KEM-512", Name: "pqrepro-fw", Version: "0.1.0", Source: src},
		{Algorithm: "ML-KEM-768", Name: "mlkem-native", Commit: "1a2b3c4d5e6f", Source: strings.Repeat("0", 64)},
	}
	text := Format(entries)
	got, err := Parse(append(text, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, entries) {
		t.Fatalf("round trip: %+v, want %+v", got, entries)
	}
	if l := Libraries(got); !slices.Equal(l, []string{"pqrepro-fw 0.1.0", "mlkem-native commit 1a2b3c4d5e6f"}) {
		t.Errorf("libraries %q", l)
	}
	im := got[1].Implementation()
	if err := im.Validate(); err != nil || im.Commit != "1a2b3c4d5e6f" || im.Digest != "sha256:"+strings.Repeat("0", 64) {
		t.Errorf("implementation %+v: %v", im, err)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no magic", "ML-KEM-512 x 1 " + src + "\n", "line 1"},
		{"no newline", Magic, "newline"},
		{"three fields", Magic + "\nML-KEM-512 x " + src + "\n", "line 2: 3 fields"},
		{"short digest", Magic + "\nML-KEM-512 x 1 abc\n", "line 2: source digest"},
		{"space in name", Magic + "\nML-KEM-512 x  1 " + src + "\n", "line 2: 5 fields"},
		{"twice", Magic + "\nA x 1 " + src + "\nA y 2 " + src + "\n", "line 3: algorithm A listed twice"},
		{"bad commit", Magic + "\nA x commit:XYZ " + src + "\n", "line 2: commit"},
		{"NUL inside", Magic + "\n\x00A x 1 " + src + "\n", "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSourceDigest(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("int a;\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.h"), []byte("int b;\n"), 0o644)
	d1, err := SourceDigest(dir, []string{"b.h", "a.c"})
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := SourceDigest(dir, []string{"a.c", "b.h"})
	if d1 != d2 {
		t.Errorf("order changes the digest: %s, %s", d1, d2)
	}
	os.WriteFile(filepath.Join(dir, "a.c"), []byte("int a = 1;\n"), 0o644)
	if d3, _ := SourceDigest(dir, []string{"a.c", "b.h"}); d3 == d1 {
		t.Error("a changed source leaves the digest as it was")
	}
	if _, err := SourceDigest(dir, []string{"../x.c"}); err == nil {
		t.Error("a path outside the root is accepted")
	}
}

// TestSpecCoversIncludes checks the firmware's own specification: every algorithm the firmware
// table holds has a line, and every file a listed source includes ("...") is listed on the
// same line, so the source digest covers all the code of the algorithm's implementation.
func TestSpecCoversIncludes(t *testing.T) {
	root := filepath.Join("..")
	data, err := os.ReadFile(filepath.Join(root, "implementations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ParseSpec(data, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	algs, err := os.ReadFile(filepath.Join(root, "core", "algs.c"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\{"([A-Z][A-Za-z0-9-]+)", FW_`).FindAllSubmatch(algs, -1) {
		if !slices.ContainsFunc(rows, func(r SpecRow) bool { return r.Algorithm == string(m[1]) }) {
			t.Errorf("core/algs.c has %s, implementations.txt has no line for it", m[1])
		}
	}
	include := regexp.MustCompile(`(?m)^#include "([^"]+)"`)
	for _, r := range rows {
		for _, s := range r.Sources {
			b, err := os.ReadFile(filepath.Join(root, s))
			if err != nil {
				t.Errorf("line %d: %v", r.Line, err)
				continue
			}
			for _, m := range include.FindAllSubmatch(b, -1) {
				inc := filepath.ToSlash(filepath.Join(filepath.Dir(s), string(m[1])))
				if !slices.Contains(r.Sources, inc) {
					t.Errorf("line %d (%s): %s includes %s, which the line does not list", r.Line, r.Algorithm, s, inc)
				}
			}
		}
	}
	if _, err := Build(rows, nil, root); err != nil {
		t.Fatal(err)
	}
}

// TestCSourceCompiles compiles the generated C with the host compiler and reads the table back
// from the object's section: what the firmware links is what Parse reads.
func TestCSourceCompiles(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	entries := []Entry{{Algorithm: "ML-KEM-512", Name: "pqrepro-fw", Version: "0.1.0", Source: src}}
	os.WriteFile(filepath.Join(dir, "impl.h"), []byte("extern const char fw_impl_table[];\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "t.c"), CSource(entries, "test"), 0o644)
	main := "extern const char fw_impl_table[];\nint main(void) { return fw_impl_table[0] == 'p' ? 0 : 1; }\n"
	os.WriteFile(filepath.Join(dir, "main.c"), []byte(main), 0o644)
	out, err := exec.Command(cc, "-I", dir, "-o", filepath.Join(dir, "t"), filepath.Join(dir, "t.c"), filepath.Join(dir, "main.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadELF(f)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, entries) {
		t.Fatalf("read back %+v, want %+v", got, entries)
	}
	if _, err := ReadELF(bytes.NewReader(mustRead(t, cc))); err != ErrNoTable {
		t.Errorf("the compiler's own ELF: %v, want ErrNoTable", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParse feeds arbitrary text to Parse: nothing may panic, and an accepted table formats
// back to the same text.
func FuzzParse(f *testing.F) {
	f.Add([]byte(Magic + "\nML-KEM-512 pqrepro-fw 0.1.0 " + src + "\n"))
	f.Add([]byte(Magic + "\nA x commit:abcdef0 " + src + "\n\x00"))
	f.Add([]byte(Magic + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			return
		}
		if got := Format(entries); !bytes.Equal(got, bytes.TrimRight(data, "\x00")) {
			t.Fatalf("formats back as %q, read from %q", got, data)
		}
	})
}

// TestOverride replaces one algorithm's row by an implementation in its own folder: the
// table names it, and its digest covers its own files there; an algorithm the table does not
// know, or a malformed line, is refused.
func TestOverride(t *testing.T) {
	rows, err := ParseSpec(mustRead(t, "../implementations.txt"), "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "kem.c"), []byte("int kem;\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "x.h"), []byte("int x;\n"), 0o644)
	got, err := Override(rows, "ML-KEM-768 my-kem commit:abcdef0 kem.c sub/x.h", dir, "0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Build(got, nil, "..")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := SourceDigest(dir, []string{"kem.c", "sub/x.h"})
	var seen int
	for _, e := range entries {
		switch {
		case e.Algorithm == "ML-KEM-768":
			seen++
			if e.Name != "my-kem" || e.Commit != "abcdef0" || e.Source != want {
				t.Errorf("ML-KEM-768: %+v, want my-kem commit abcdef0 source %s", e, want)
			}
		case e.Name != "pqrepro-fw":
			t.Errorf("%s changed to %s", e.Algorithm, e.Name)
		}
	}
	if seen != 1 || len(entries) != len(rows) {
		t.Fatalf("%d entries (%d ML-KEM-768), want %d", len(entries), seen, len(rows))
	}
	for _, bad := range []string{"ML-KEM-999 x 1.0 kem.c", "ML-KEM-768 x 1.0", "ML-KEM-768 x 1.0 kem.c\nML-KEM-512 y 1.0 kem.c", "ML-KEM-768 x 1.0 ../kem.c"} {
		r, err := Override(rows, bad, dir, "0.1.0")
		if err == nil {
			_, err = Build(r, nil, "..")
		}
		if err == nil {
			t.Errorf("Override(%q) accepted", bad)
		}
	}
}

// FuzzOverride feeds arbitrary lines to Override (and so ParseSpec): it returns rows or an
// error, and a row it returns is the line's algorithm, one the table already had.
func FuzzOverride(f *testing.F) {
	rows := []SpecRow{{Line: 1, Algorithm: "ML-KEM-768", Name: "pqrepro-fw", Version: "0.1.0", Sources: []string{"a.c"}}}
	f.Add("ML-KEM-768 my-kem 1.0.0 kem.c")
	f.Add("ML-KEM-768 my-kem commit:abcdef0 kem.c sub/x.h")
	f.Add("# comment\n\nML-KEM-512 x @VERSION@ a.c")
	f.Fuzz(func(t *testing.T, line string) {
		out, err := Override(rows, line, "dir", "0.1.0")
		if err != nil {
			return
		}
		if len(out) != 1 || out[0].Algorithm != "ML-KEM-768" || out[0].Root != "dir" || len(out[0].Sources) == 0 {
			t.Fatalf("Override(%q) = %+v", line, out)
		}
	})
}
