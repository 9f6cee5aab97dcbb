package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"pqrepro/internal/durable"
)

// Names of the files in a result bundle.
const (
	FileManifest    = "manifest.yaml"
	FileResult      = "result.json"
	FileSamples     = "samples.csv"
	FileEnvironment = "environment.json"
	FileLog         = "log.txt"
	FileAttestation = "attestation.dsse.json"
)

// ContentFiles are the files a bundle must hold besides the attestation, in
// canonical order. Treat it as read-only; this package checks bundles against
// its own copy of the list, so changing it changes nothing here.
var ContentFiles = []string{FileManifest, FileResult, FileSamples, FileEnvironment, FileLog}

// ContentNames returns a fresh copy of the content file names in
// canonical order.
func ContentNames() []string {
	return []string{FileManifest, FileResult, FileSamples, FileEnvironment, FileLog}
}

// OptionalNames returns the content files a bundle may hold besides ContentFiles: a
// kind's own samples (tls.csv) and a metered run's power trace (power.csv). Present ones are
// attested like the others.
func OptionalNames() []string { return []string{FileTLS, FilePower} }

// KnownFile reports whether name is a content file (required or optional) or the
// attestation.
func KnownFile(name string) bool {
	return name == FileAttestation || slices.Contains(ContentNames(), name) || slices.Contains(OptionalNames(), name)
}

// AttestedNames returns the content files of b to attest: ContentFiles, then the
// optional ones b holds, in canonical order.
func (b *Bundle) AttestedNames() []string {
	names := ContentNames()
	for _, name := range OptionalNames() {
		if _, ok := b.Files[name]; ok {
			names = append(names, name)
		}
	}
	return names
}

// MaxBundleBytes is the default limit on the total size of a bundle's files.
const MaxBundleBytes = 64 << 20

// bundleMaxEntries bounds the entries of a bundle archive: every known file
// (the optional tls.csv and power.csv included) plus one top-level directory.
const bundleMaxEntries = 9

// MaxFileBytes returns the largest size this package accepts for the bundle
// file name when reading (0 for an unknown name): 1 MiB for manifest.yaml,
// environment.json and the attestation, 16 MiB for result.json and log.txt,
// and MaxBundleBytes for samples.csv, tls.csv and power.csv. The bundle as a whole is further limited
// by MaxBundleBytes or the limit passed to ReadTarGz.
func MaxFileBytes(name string) int64 {
	switch name {
	case FileManifest, FileEnvironment, FileAttestation:
		return 1 << 20
	case FileResult, FileLog:
		return 16 << 20
	case FileSamples, FileTLS, FilePower:
		return MaxBundleBytes
	default:
		return 0
	}
}

// Bundle is a run's files by name. Files holds exactly ContentFiles (and the optional tls.csv and power.csv), plus
// FileAttestation once signed. The zero value is an empty bundle.
type Bundle struct {
	// Files maps a file name (no directory) to its contents.
	Files map[string][]byte
}

// BundleError reports a bundle that cannot be read or written because of its
// contents: an unsafe, unknown or oversize entry. Entry names the offending
// archive entry or file ("" when the problem is the bundle as a whole).
type BundleError struct {
	Entry string
	Err   error
}

func (e *BundleError) Error() string {
	if e.Entry == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("entry %q: %v", e.Entry, e.Err)
}

func (e *BundleError) Unwrap() error { return e.Err }

// bundleErr builds a *BundleError.
func bundleErr(entry, format string, args ...any) error {
	return &BundleError{Entry: entry, Err: fmt.Errorf(format, args...)}
}

// Digests returns the hex SHA-256 of every file in the bundle, by name.
func (b *Bundle) Digests() map[string]string {
	out := make(map[string]string, len(b.Files))
	for name, data := range b.Files {
		out[name] = bundleSHA256(data)
	}
	return out
}

// bundleSHA256 returns the lowercase hex SHA-256 of data.
func bundleSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// bundleSortedNames checks that b holds at least one file and only known
// names, and returns the names sorted.
func bundleSortedNames(b *Bundle) ([]string, error) {
	if b == nil || len(b.Files) == 0 {
		return nil, bundleErr("", "bundle has no files")
	}
	names := make([]string, 0, len(b.Files))
	for name := range b.Files {
		if !KnownFile(name) {
			return nil, bundleErr(name, "not a bundle file name")
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// WriteDir writes b as the directory dir (mode 0755, files 0644). The files
// are written into a temporary directory next to dir, synced, and the
// directory is then renamed to dir, so a half-written bundle never appears
// under the final name. WriteDir refuses if dir exists. (The existence check
// and the rename are separate steps; a rename onto a non-empty directory
// fails, so a bundle that appears in between is never replaced.)
func WriteDir(dir string, b *Bundle) (err error) {
	names, err := bundleSortedNames(b)
	if err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("write bundle %s: already exists: %w", dir, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	for _, name := range names {
		if err := bundleWriteFile(filepath.Join(tmp, name), b.Files[name]); err != nil {
			return fmt.Errorf("write bundle %s: %w", dir, err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	if err := durable.SyncDir(tmp); err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	if err := durable.SyncDir(parent); err != nil {
		return fmt.Errorf("write bundle %s: %w", dir, err)
	}
	return nil
}

// bundleWriteFile creates path (which must not exist) with mode 0644, writes
// data and syncs it.
func bundleWriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// bundleEpoch is the modification time of every archive entry.
var bundleEpoch = time.Unix(0, 0).UTC()

// gzipWriters are WriteTarGz's compressors, reused: a flate compressor's set-up (about 1 MB
// of tables) cost a bulk seed more than compressing its small bundles; Reset makes one
// write exactly what a new one would.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}

// WriteTarGz writes b as a gzip-compressed tar archive with every file at the
// archive root. The output is deterministic for a given Go release: names are
// sorted, every entry is a USTAR regular file with mode 0644, mtime 0 (1970),
// uid and gid 0 and no owner names, and the gzip header carries no name or
// time.
func WriteTarGz(w io.Writer, b *Bundle) error {
	names, err := bundleSortedNames(b)
	if err != nil {
		return fmt.Errorf("write bundle archive: %w", err)
	}
	zw := gzipWriters.Get().(*gzip.Writer)
	defer func() { zw.Reset(io.Discard); gzipWriters.Put(zw) }() // keeps no reference to w
	zw.Reset(w)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		data := b.Files[name]
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     name,
			Mode:     0o644,
			Size:     int64(len(data)),
			ModTime:  bundleEpoch,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("write bundle archive: %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("write bundle archive: %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write bundle archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write bundle archive: %w", err)
	}
	return nil
}

// ReadBundle reads a bundle from path: a directory, or a .tar.gz or .tgz
// file (read with ReadTarGz and MaxBundleBytes). A directory may hold only
// regular files with bundle file names (no symlinks, no subdirectories), within
// the limits of MaxFileBytes and MaxBundleBytes. ReadBundle does not check
// that the bundle is complete or signed; Verify does.
func ReadBundle(path string) (*Bundle, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	if fi.IsDir() {
		b, err := bundleReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("read bundle %s: %w", path, err)
		}
		return b, nil
	}
	lower := strings.ToLower(path)
	if !strings.HasSuffix(lower, ".tar.gz") && !strings.HasSuffix(lower, ".tgz") {
		return nil, fmt.Errorf("read bundle %s: not a directory, .tar.gz or .tgz file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	defer f.Close()
	b, err := ReadTarGz(f, MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("read bundle %s: %w", path, err)
	}
	return b, nil
}

// bundleReadDir reads the files of a bundle directory.
func bundleReadDir(dir string) (*Bundle, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(entries) > bundleMaxEntries {
		return nil, bundleErr("", "directory has %d entries, more than a bundle holds (%d)", len(entries), bundleMaxEntries-1)
	}
	b := &Bundle{Files: make(map[string][]byte, len(entries))}
	var total int64
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			return nil, bundleErr(name, "not a regular file (%v)", e.Type())
		}
		if !KnownFile(name) {
			return nil, bundleErr(name, "not a bundle file name")
		}
		data, err := bundleReadRegular(filepath.Join(dir, name), min(MaxFileBytes(name), MaxBundleBytes-total))
		if err != nil {
			return nil, &BundleError{Entry: name, Err: err}
		}
		total += int64(len(data))
		b.Files[name] = data
	}
	if len(b.Files) == 0 {
		return nil, bundleErr("", "directory holds no bundle files")
	}
	return b, nil
}

// bundleReadRegular reads path, refusing anything but a regular file and more
// than limit bytes.
func bundleReadRegular(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%d bytes exceeds the limit of %d", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("more than the limit of %d bytes", limit)
	}
	return data, nil
}

// ReadTarGz reads a bundle from a gzip-compressed tar archive. maxBytes limits
// the total uncompressed size of the files (MaxBundleBytes if maxBytes <= 0);
// each file is also limited by MaxFileBytes, and the archive may hold at most
// 7 entries. Only regular files with bundle file names are accepted, either
// all at the archive root or all inside one top-level directory (whose own
// entry, if present, is allowed; a leading "./" is ignored). Absolute paths,
// "..", symlinks, hard links, devices, FIFOs, duplicate names and unknown names
// are refused with a *BundleError naming the entry. Like ReadBundle, it does
// not check that the bundle is complete or signed.
func ReadTarGz(r io.Reader, maxBytes int64) (*Bundle, error) {
	if maxBytes <= 0 {
		maxBytes = MaxBundleBytes
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read bundle archive: %w", err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	b := &Bundle{Files: make(map[string][]byte)}
	var (
		total   int64
		entries int
		topDir  string // "" until a file or directory fixes the layout
		layout  int    // 0 unknown, 1 root, 2 in topDir
	)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read bundle archive: %w", err)
		}
		entries++
		if entries > bundleMaxEntries {
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "too many entries (a bundle archive holds at most %d)", bundleMaxEntries))
		}
		dirName, base, isRoot, err := bundleEntryPath(hdr)
		if err != nil {
			return nil, fmt.Errorf("read bundle archive: %w", err)
		}
		if isRoot {
			continue
		}
		if hdr.Typeflag == tar.TypeDir {
			if dirName != "" {
				return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "nested directory not allowed"))
			}
			dirName = base
			base = ""
		}
		want := 1
		if dirName != "" {
			want = 2
		}
		switch {
		case layout == 0:
			layout, topDir = want, dirName
		case layout != want:
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "files must be all at the archive root or all in one top-level directory"))
		case dirName != topDir:
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "second top-level directory (first was %q)", topDir))
		}
		if base == "" {
			continue // the top-level directory's own entry
		}
		if !KnownFile(base) {
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "unknown file name %q", base))
		}
		if _, dup := b.Files[base]; dup {
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "duplicate entry for %s", base))
		}
		limit := min(MaxFileBytes(base), maxBytes-total)
		if hdr.Size > limit {
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "%d bytes exceeds the limit of %d (per-file limit %d, bundle limit %d)",
				hdr.Size, limit, MaxFileBytes(base), maxBytes))
		}
		var buf bytes.Buffer
		buf.Grow(int(hdr.Size))
		n, err := io.Copy(&buf, io.LimitReader(tr, limit+1))
		if err != nil {
			return nil, fmt.Errorf("read bundle archive: %w", &BundleError{Entry: hdr.Name, Err: err})
		}
		if n > limit {
			return nil, fmt.Errorf("read bundle archive: %w", bundleErr(hdr.Name, "more than the limit of %d bytes", limit))
		}
		total += n
		b.Files[base] = buf.Bytes()
	}
	if len(b.Files) == 0 {
		return nil, fmt.Errorf("read bundle archive: %w", bundleErr("", "archive holds no bundle files"))
	}
	return b, nil
}

// bundleEntryPath checks an archive entry's name and type and splits the name
// into an optional top-level directory and a base name. isRoot is true for an
// entry naming the archive root itself ("./").
func bundleEntryPath(hdr *tar.Header) (dir, base string, isRoot bool, err error) {
	raw := hdr.Name
	switch {
	case raw == "":
		return "", "", false, bundleErr(raw, "empty name")
	case strings.HasPrefix(raw, "/") || filepath.IsAbs(raw) || (len(raw) >= 2 && raw[1] == ':'):
		return "", "", false, bundleErr(raw, "absolute path not allowed")
	case strings.ContainsRune(raw, '\\'):
		return "", "", false, bundleErr(raw, "backslash in name not allowed")
	case strings.ContainsRune(raw, 0):
		return "", "", false, bundleErr(raw, "NUL in name not allowed")
	}
	name := strings.TrimPrefix(raw, "./")
	if hdr.Typeflag != tar.TypeDir && strings.HasSuffix(name, "/") {
		return "", "", false, bundleErr(raw, "file name ends in \"/\"")
	}
	parts := strings.Split(strings.TrimSuffix(name, "/"), "/")
	if slices.Contains(parts, "..") {
		return "", "", false, bundleErr(raw, "path escapes the archive root (\"..\")")
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink:
		return "", "", false, bundleErr(raw, "symlink (to %q) not allowed", hdr.Linkname)
	case tar.TypeLink:
		return "", "", false, bundleErr(raw, "hard link (to %q) not allowed", hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return "", "", false, bundleErr(raw, "device file not allowed")
	case tar.TypeFifo:
		return "", "", false, bundleErr(raw, "FIFO not allowed")
	default:
		return "", "", false, bundleErr(raw, "entry type %q not allowed", hdr.Typeflag)
	}
	if hdr.Typeflag == tar.TypeDir && (name == "" || name == ".") {
		return "", "", true, nil
	}
	for _, p := range parts {
		if p == "" || p == "." {
			return "", "", false, bundleErr(raw, "unclean path")
		}
	}
	switch len(parts) {
	case 1:
		return "", parts[0], false, nil
	case 2:
		return parts[0], parts[1], false, nil
	default:
		return "", "", false, bundleErr(raw, "nested more than one directory deep")
	}
}
