package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bundleTestFiles returns an unsigned bundle whose samples.csv is about
// samplesSize bytes.
func bundleTestFiles(samplesSize int) *Bundle {
	var samples bytes.Buffer
	samples.WriteString("algorithm,operation,iteration,ns\n")
	for i := 0; samples.Len() < samplesSize; i++ {
		fmt.Fprintf(&samples, "ML-DSA-65,sign,%d,%d\n", i, 100000+i*37%9973)
	}
	return &Bundle{Files: map[string][]byte{
		FileManifest:    []byte("apiVersion: pqrepro/v1\nkind: sig-bench\nmetadata:\n  name: test\n"),
		FileResult:      []byte(`{"schema":"pqrepro/result/v1","cells":[]}` + "\n"),
		FileSamples:     samples.Bytes(),
		FileEnvironment: []byte(`{"goVersion":"go1.26","os":"linux"}` + "\n"),
		FileLog:         []byte("runner: started\nrunner: done\n"),
	}}
}

// bundleTestAttest gives b an attestation file to carry: these tests are about reading and
// writing bundles; signing and verifying them is artifacts/attest's.
func bundleTestAttest(b *Bundle) {
	b.Files[FileAttestation] = []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[]}` + "\n")
}

// bundleTestEqual fails unless a and b hold byte-identical files.
func bundleTestEqual(t *testing.T, got, want *Bundle) {
	t.Helper()
	if len(got.Files) != len(want.Files) {
		t.Fatalf("got %d files, want %d", len(got.Files), len(want.Files))
	}
	for name, data := range want.Files {
		if !bytes.Equal(got.Files[name], data) {
			t.Errorf("%s differs after the round trip", name)
		}
	}
}

func TestDigests(t *testing.T) {
	b := &Bundle{Files: map[string][]byte{FileLog: []byte("abc"), FileResult: nil}}
	got := b.Digests()
	want := map[string]string{
		FileLog:    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		FileResult: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d digests, want %d", len(got), len(want))
	}
	for name, d := range want {
		if got[name] != d {
			t.Errorf("%s: digest %s, want %s", name, got[name], d)
		}
	}
}

func TestWriteDirRoundTrip(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run-1")
	b := bundleTestFiles(4096)
	bundleTestAttest(b)
	if err := WriteDir(dir, b); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	bundleTestEqual(t, got, b)

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("bundle dir mode %04o, want 0755", fi.Mode().Perm())
	}
	for name := range b.Files {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %04o, want 0644", name, fi.Mode().Perm())
		}
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("parent holds %d entries, want only the bundle (temporary dir left?)", len(entries))
	}

	// Writing again refuses and leaves the first bundle alone.
	other := bundleTestFiles(10)
	if err := WriteDir(dir, other); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteDir: got %v, want an fs.ErrExist error", err)
	}
	again, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	bundleTestEqual(t, again, b)
}

func TestWriteRefusesBadBundles(t *testing.T) {
	tests := []struct {
		name string
		b    *Bundle
		want string
	}{
		{"nil", nil, "no files"},
		{"empty", &Bundle{}, "no files"},
		{"unknown name", &Bundle{Files: map[string][]byte{FileLog: nil, "../evil": nil}}, `"../evil"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			err := WriteDir(dir, tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteDir: error %v, want one containing %q", err, tt.want)
			}
			if _, serr := os.Lstat(dir); serr == nil {
				t.Error("WriteDir left a directory behind")
			}
			err = WriteTarGz(io.Discard, tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteTarGz: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestTarGzRoundTrip(t *testing.T) {
	b := bundleTestFiles(64 << 10)
	bundleTestAttest(b)
	var first, second bytes.Buffer
	if err := WriteTarGz(&first, b); err != nil {
		t.Fatal(err)
	}
	if err := WriteTarGz(&second, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Fatal("two writes of the same bundle differ")
	}

	got, err := ReadTarGz(bytes.NewReader(first.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	bundleTestEqual(t, got, b)

	// The archive's entries are sorted, regular, 0644, mtime 0, no owners.
	zr, err := gzip.NewReader(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Header.Name != "" || !zr.Header.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v", zr.Header.Name, zr.Header.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Typeflag != tar.TypeReg || hdr.Mode != 0o644 || hdr.ModTime.Unix() != 0 ||
			hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: header %+v is not normalized", hdr.Name, hdr)
		}
	}
	if !slices.IsSorted(names) || len(names) != len(b.Files) {
		t.Errorf("entries %v: want all %d files, sorted", names, len(b.Files))
	}

	// ReadBundle reads .tar.gz and .tgz files.
	for _, name := range []string{"run.tar.gz", "run.tgz"} {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, first.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadBundle(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		bundleTestEqual(t, got, b)
	}
}

// bundleTestEntry is one entry of a test archive.
type bundleTestEntry struct {
	name     string
	typeflag byte
	body     string
	size     int // body length if 0 and body is set; used for oversize headers
	linkname string
}

// bundleTestArchive builds a .tar.gz from entries; a size larger than the
// body is written as zeros.
func bundleTestArchive(t *testing.T, entries []bundleTestEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typeflag
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := len(e.body)
		if e.size > size {
			size = e.size
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.linkname}
		if typ == tar.TypeReg {
			hdr.Size = int64(size)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(make([]byte, size-len(e.body))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReadTarGzRefuses(t *testing.T) {
	all := func(prefix string) []bundleTestEntry {
		var es []bundleTestEntry
		for _, n := range append(append(ContentNames(), OptionalNames()...), FileAttestation) {
			es = append(es, bundleTestEntry{name: prefix + n, body: "x"})
		}
		return es
	}
	tests := []struct {
		name     string
		entries  []bundleTestEntry
		maxBytes int64
		entry    string // the entry the error must name
		want     string
	}{
		{"dot-dot", []bundleTestEntry{{name: "../x", body: "x"}}, 0, "../x", `".."`},
		{"dot-dot inside", []bundleTestEntry{{name: "b/../../log.txt", body: "x"}}, 0, "b/../../log.txt", `".."`},
		{"absolute", []bundleTestEntry{{name: "/abs", body: "x"}}, 0, "/abs", "absolute"},
		{"absolute known name", []bundleTestEntry{{name: "/log.txt", body: "x"}}, 0, "/log.txt", "absolute"},
		{"symlink", []bundleTestEntry{{name: FileLog, typeflag: tar.TypeSymlink, linkname: "/etc/passwd"}}, 0, FileLog, "symlink"},
		{"hard link", []bundleTestEntry{{name: FileManifest, body: "x"}, {name: FileLog, typeflag: tar.TypeLink, linkname: FileManifest}}, 0, FileLog, "hard link"},
		{"char device", []bundleTestEntry{{name: FileLog, typeflag: tar.TypeChar}}, 0, FileLog, "device"},
		{"block device", []bundleTestEntry{{name: FileLog, typeflag: tar.TypeBlock}}, 0, FileLog, "device"},
		{"fifo", []bundleTestEntry{{name: FileLog, typeflag: tar.TypeFifo}}, 0, FileLog, "FIFO"},
		{"oversize entry (per-file limit)", []bundleTestEntry{{name: FileManifest, size: 1<<20 + 1}}, 0, FileManifest, "exceeds the limit"},
		{"oversize bundle (total limit)", []bundleTestEntry{{name: FileLog, size: 600}, {name: FileSamples, size: 600}}, 1000, FileSamples, "exceeds the limit"},
		{"too many entries", append(append([]bundleTestEntry{{name: "b/", typeflag: tar.TypeDir}}, all("b/")...), bundleTestEntry{name: "b/extra", body: "x"}), 0, "b/extra", "too many entries"},
		{"unknown name", []bundleTestEntry{{name: "notes.txt", body: "x"}}, 0, "notes.txt", "unknown file name"},
		{"unknown name in dir", []bundleTestEntry{{name: "b/notes.txt", body: "x"}}, 0, "b/notes.txt", "unknown file name"},
		{"duplicate", []bundleTestEntry{{name: FileLog, body: "a"}, {name: FileLog, body: "b"}}, 0, FileLog, "duplicate"},
		{"duplicate via ./", []bundleTestEntry{{name: FileLog, body: "a"}, {name: "./" + FileLog, body: "b"}}, 0, "./" + FileLog, "duplicate"},
		{"two top-level dirs", []bundleTestEntry{{name: "a/" + FileLog, body: "a"}, {name: "b/" + FileResult, body: "b"}}, 0, "b/" + FileResult, "second top-level directory"},
		{"root and dir mixed", []bundleTestEntry{{name: FileLog, body: "a"}, {name: "b/" + FileResult, body: "b"}}, 0, "b/" + FileResult, "all at the archive root"},
		{"nested dir", []bundleTestEntry{{name: "a/b/", typeflag: tar.TypeDir}}, 0, "a/b/", "nested"},
		{"nested file", []bundleTestEntry{{name: "a/b/" + FileLog, body: "x"}}, 0, "a/b/" + FileLog, "nested"},
		{"empty archive", nil, 0, "", "no bundle files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := bundleTestArchive(t, tt.entries)
			_, err := ReadTarGz(bytes.NewReader(data), tt.maxBytes)
			if err == nil {
				t.Fatal("ReadTarGz accepted the archive")
			}
			var be *BundleError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a *BundleError", err)
			}
			if be.Entry != tt.entry {
				t.Errorf("error names entry %q, want %q", be.Entry, tt.entry)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if tt.entry != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.entry)) {
				t.Errorf("error %q does not name the entry", err)
			}
		})
	}
}

func TestReadTarGzNotGzip(t *testing.T) {
	if _, err := ReadTarGz(strings.NewReader("plain text"), 0); err == nil {
		t.Fatal("ReadTarGz accepted a non-gzip stream")
	}
}

func TestReadTarGzLayouts(t *testing.T) {
	b := bundleTestFiles(100)
	bundleTestAttest(b)
	entries := func(dirEntry, prefix string) []bundleTestEntry {
		var es []bundleTestEntry
		if dirEntry != "" {
			es = append(es, bundleTestEntry{name: dirEntry, typeflag: tar.TypeDir})
		}
		for _, n := range append(ContentNames(), FileAttestation) {
			es = append(es, bundleTestEntry{name: prefix + n, body: string(b.Files[n])})
		}
		return es
	}
	tests := []struct {
		name    string
		entries []bundleTestEntry
	}{
		{"root", entries("", "")},
		{"dot-slash root", entries("./", "./")},
		{"top-level dir", entries("run-1/", "run-1/")},
		{"top-level dir without its entry", entries("", "run-1/")},
		{"dot-slash top-level dir", entries("./run-1/", "./run-1/")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadTarGz(bytes.NewReader(bundleTestArchive(t, tt.entries)), 0)
			if err != nil {
				t.Fatal(err)
			}
			bundleTestEqual(t, got, b)
		})
	}
}

func TestReadBundleDirRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink("/etc/hostname", filepath.Join(dir, FileLog)); err != nil {
				t.Fatal(err)
			}
		}, FileLog},
		{"unknown file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "notes.txt"},
		{"subdirectory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, FileLog), 0o755); err != nil {
				t.Fatal(err)
			}
		}, FileLog},
		{"oversize file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, FileManifest), make([]byte, 1<<20+1), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "exceeds the limit"},
		{"empty dir", func(t *testing.T, dir string) {}, "no bundle files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			_, err := ReadBundle(dir)
			if err == nil {
				t.Fatal("ReadBundle accepted the directory")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestReadBundleRefusesOtherFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bundle.zip")
	if err := os.WriteFile(path, []byte("PK"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBundle(path); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("got %v, want an error about the file type", err)
	}
}

func TestContentFiles(t *testing.T) {
	want := []string{"manifest.yaml", "result.json", "samples.csv", "environment.json", "log.txt"}
	if !slices.Equal(ContentFiles, want) || !slices.Equal(ContentNames(), want) {
		t.Fatalf("ContentFiles %v, internal list %v, want %v", ContentFiles, ContentNames(), want)
	}
	for _, n := range append(slices.Clone(want), FileAttestation) {
		if MaxFileBytes(n) <= 0 || MaxFileBytes(n) > MaxBundleBytes {
			t.Errorf("MaxFileBytes(%s) = %d", n, MaxFileBytes(n))
		}
	}
	if MaxFileBytes("notes.txt") != 0 {
		t.Error("an unknown name has a size limit")
	}
}
