// Package impltable implements the firmware's implementation table: which implementation of
// each algorithm a firmware build links, its version (or commit) and the SHA-256 of its
// sources. The build (firmware/tools/fwimpl) reads the table's specification
// (firmware/implementations.txt), hashes the listed sources and writes the table as text into
// the ELF section Section; the firmware reports it in its ALGS answer (firmware/PROTOCOL.md),
// fwmeta copies it into metadata.json, and the portal reads it from an uploaded ELF.
//
// The section holds one NUL-terminated ASCII text:
//
//	pqrepro-impl 1
//	<algorithm> <implementation> <version> <source sha256, 64 hex digits>
//	...
//
// one line per algorithm, fields separated by one space, each line ending in '\n'. A version
// written "commit:<hex>" is a source commit rather than a release.
package impltable

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"pqrepro/artifacts"
)

// Section is the ELF section holding the table.
const Section = ".pqrepro_impl"

// Magic is the table's first line: the format and its version.
const Magic = "pqrepro-impl 1"

// MaxBytes bounds the table's text; MaxEntries its lines.
const (
	MaxBytes   = 8 << 10
	MaxEntries = 64
)

// ErrNoTable means an ELF has no implementation table (a build made before it existed, or
// another project's firmware).
var ErrNoTable = errors.New("no implementation table (ELF section " + Section + ")")

// Entry is one algorithm's implementation.
type Entry struct {
	// Algorithm is the name the firmware reports in ALGS and BENCH ("ML-KEM-768").
	Algorithm string
	// Name is the implementation ("pqrepro-fw", "mlkem-native").
	Name string
	// Version is its release; Commit its source commit (exactly one is set).
	Version, Commit string
	// Source is the hex SHA-256 of its sources (SourceDigest).
	Source string
}

var (
	algRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+._-]{0,63}$`)
	tokenRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9+._-]{0,63}$`)
	commitRE = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
	hexRE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// VersionToken is the table's third field for e: the version, or "commit:<hex>".
func (e Entry) VersionToken() string {
	if e.Commit != "" {
		return "commit:" + e.Commit
	}
	return e.Version
}

// Implementation is e as a cell's implementation.
func (e Entry) Implementation() artifacts.Implementation {
	return artifacts.Implementation{Name: e.Name, Version: e.Version, Commit: e.Commit, Digest: artifacts.DigestOfHex(e.Source), DigestOf: artifacts.DigestSource}
}

// Label is "<name> <version>" (or "<name> commit <hex>"), as a firmware upload declares its
// libraries.
func (e Entry) Label() string {
	if e.Commit != "" {
		return e.Name + " commit " + e.Commit
	}
	return e.Name + " " + e.Version
}

// parseVersion splits a version field into version and commit.
func parseVersion(tok string) (version, commit string, err error) {
	if c, ok := strings.CutPrefix(tok, "commit:"); ok {
		if !commitRE.MatchString(c) {
			return "", "", fmt.Errorf("commit %q is not 7 to 64 lower-case hex digits", c)
		}
		return "", c, nil
	}
	if !tokenRE.MatchString(tok) {
		return "", "", fmt.Errorf("version %q: want letters, digits and + . _ -, at most 64", tok)
	}
	return tok, "", nil
}

// Parse reads a table's text (trailing NUL bytes, as the section holds them, are ignored).
// Every line is checked; errors name the line.
func Parse(data []byte) ([]Entry, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("implementation table: %d bytes, at most %d", len(data), MaxBytes)
	}
	text := string(bytes.TrimRight(data, "\x00"))
	if strings.ContainsRune(text, 0) {
		return nil, fmt.Errorf("implementation table: a NUL byte inside the text")
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("implementation table: the text does not end in a newline")
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != Magic {
		return nil, fmt.Errorf("implementation table: line 1 is %.40q, want %q", lines[0], Magic)
	}
	var out []Entry
	seen := map[string]bool{}
	for i, l := range lines[1:] {
		n := i + 2
		if len(out) == MaxEntries {
			return nil, fmt.Errorf("implementation table: more than %d entries", MaxEntries)
		}
		f := strings.Split(l, " ")
		if len(f) != 4 {
			return nil, fmt.Errorf("implementation table: line %d: %d fields, want 4 (algorithm, implementation, version, source sha256) separated by one space", n, len(f))
		}
		e := Entry{Algorithm: f[0], Name: f[1], Source: f[3]}
		var err error
		switch {
		case !algRE.MatchString(e.Algorithm):
			err = fmt.Errorf("algorithm %.70q: want letters, digits and + . _ -, at most 64", e.Algorithm)
		case seen[e.Algorithm]:
			err = fmt.Errorf("algorithm %s listed twice", e.Algorithm)
		case !tokenRE.MatchString(e.Name):
			err = fmt.Errorf("implementation %.70q: want letters, digits and + . _ -, at most 64", e.Name)
		case !hexRE.MatchString(e.Source):
			err = fmt.Errorf("source digest %.70q: want 64 lower-case hex digits", e.Source)
		}
		if err == nil {
			e.Version, e.Commit, err = parseVersion(f[2])
		}
		if err != nil {
			return nil, fmt.Errorf("implementation table: line %d: %w", n, err)
		}
		seen[e.Algorithm] = true
		out = append(out, e)
	}
	return out, nil
}

// Format writes entries as the table's text (without the NUL the section adds).
func Format(entries []Entry) []byte {
	var b bytes.Buffer
	b.WriteString(Magic + "\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %s %s %s\n", e.Algorithm, e.Name, e.VersionToken(), e.Source)
	}
	return b.Bytes()
}

// ReadELF reads the table from an ELF's Section; ErrNoTable when it has none.
func ReadELF(r io.ReaderAt) ([]Entry, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("read ELF: %w", err)
	}
	defer f.Close()
	s := f.Section(Section)
	if s == nil {
		return nil, ErrNoTable
	}
	if s.Type == elf.SHT_NOBITS || s.Size > MaxBytes {
		return nil, fmt.Errorf("ELF section %s: %d bytes of type %s, want a table of at most %d bytes", Section, s.Size, s.Type, MaxBytes)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("ELF section %s: %w", Section, err)
	}
	return Parse(data)
}

// Libraries are the distinct implementations of a table as labels ("pqrepro-fw 0.1.0"), in
// table order.
func Libraries(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		if l := e.Label(); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// SourceDigest is the hex SHA-256 over files (paths relative to root): the text of
// `sha256sum` over them in path order ("<hex>  <path>\n" per file), hashed. Any change to a
// listed file changes it; the paths are part of it, the root is not.
func SourceDigest(root string, files []string) (string, error) {
	paths := slices.Clone(files)
	slices.Sort(paths)
	var list bytes.Buffer
	for i, p := range paths {
		if i > 0 && p == paths[i-1] {
			return "", fmt.Errorf("source %s listed twice", p)
		}
		if filepath.IsAbs(p) || strings.Contains(filepath.ToSlash(p), "..") {
			return "", fmt.Errorf("source %s: want a path inside %s", p, root)
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return "", fmt.Errorf("source %w", err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&list, "%s  %s\n", hex.EncodeToString(sum[:]), filepath.ToSlash(p))
	}
	sum := sha256.Sum256(list.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// SpecRow is one line of the table's specification (firmware/implementations.txt): an
// algorithm, its implementation and version, and the sources its digest covers.
type SpecRow struct {
	Line      int
	Algorithm string
	Name      string
	Version   string // as written, "@VERSION@" replaced
	Sources   []string
	// Root is the folder Sources are relative to, when not Build's root (an implementation
	// brought in its own folder, Override).
	Root string
}

// ParseSpec reads the specification: '#' comments and blank lines are skipped; every other
// line is "<algorithm> <implementation> <version> <source>..." separated by spaces or tabs,
// with "@VERSION@" in the version replaced by version. Errors name the line.
func ParseSpec(data []byte, version string) ([]SpecRow, error) {
	var out []SpecRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	seen := map[string]int{}
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 4 {
			return nil, fmt.Errorf("line %d: want <algorithm> <implementation> <version> and one or more <source> files", n)
		}
		r := SpecRow{Line: n, Algorithm: f[0], Name: f[1], Version: strings.ReplaceAll(f[2], "@VERSION@", version), Sources: f[3:]}
		if !algRE.MatchString(r.Algorithm) || !tokenRE.MatchString(r.Name) {
			return nil, fmt.Errorf("line %d: algorithm and implementation: letters, digits and + . _ -, at most 64", n)
		}
		if _, _, err := parseVersion(r.Version); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, dup := seen[r.Algorithm]; dup {
			return nil, fmt.Errorf("line %d: %s already has line %d", n, r.Algorithm, prev)
		}
		seen[r.Algorithm] = n
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Build makes the table of rows whose algorithm is in algs (all rows when algs is empty),
// hashing their sources under root.
func Build(rows []SpecRow, algs []string, root string) ([]Entry, error) {
	var out []Entry
	for _, r := range rows {
		if len(algs) > 0 && !slices.Contains(algs, r.Algorithm) {
			continue
		}
		dir := root
		if r.Root != "" {
			dir = r.Root
		}
		src, err := SourceDigest(dir, r.Sources)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", r.Line, r.Algorithm, err)
		}
		v, c, _ := parseVersion(r.Version)
		out = append(out, Entry{Algorithm: r.Algorithm, Name: r.Name, Version: v, Commit: c, Source: src})
	}
	for _, a := range algs {
		if !slices.ContainsFunc(out, func(e Entry) bool { return e.Algorithm == a }) {
			return nil, fmt.Errorf("%s has no line in the specification", a)
		}
	}
	if len(out) > MaxEntries {
		return nil, fmt.Errorf("%d entries, at most %d", len(out), MaxEntries)
	}
	return out, nil
}

// Override replaces the row of line's algorithm by line (one specification line, its sources
// relative to root): the build of an implementation brought in its own folder (BYOI.md). The
// algorithm must have a row in rows: only an algorithm the firmware's table knows is replaced.
func Override(rows []SpecRow, line, root, version string) ([]SpecRow, error) {
	rs, err := ParseSpec([]byte(line), version)
	if err != nil {
		return nil, fmt.Errorf("implementation %q: %w", line, err)
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("implementation %q: want one line: <algorithm> <implementation> <version> <sources>", line)
	}
	r := rs[0]
	r.Root, r.Line = root, 0
	i := slices.IndexFunc(rows, func(x SpecRow) bool { return x.Algorithm == r.Algorithm })
	if i < 0 {
		return nil, fmt.Errorf("implementation of %s: the firmware's table has no such algorithm", r.Algorithm)
	}
	out := slices.Clone(rows)
	out[i] = r
	return out, nil
}

// CSource is the C file that puts the table into Section: one const char array the firmware
// reads for ALGS (fw_impl_table, declared in core/impl.h).
func CSource(entries []Entry, from string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* Generated by firmware/tools/fwimpl from %s: the implementation table (firmware/PROTOCOL.md, ALGS). */\n", from)
	b.WriteString("#include \"impl.h\"\n\n")
	fmt.Fprintf(&b, "__attribute__((section(%q), used)) const char fw_impl_table[] =\n", Section)
	for _, l := range strings.SplitAfter(string(Format(entries)), "\n") {
		if l != "" {
			b.WriteString("\t" + strconv.Quote(l) + "\n")
		}
	}
	b.WriteString("\t;\n")
	return b.Bytes()
}
