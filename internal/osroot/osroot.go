// Package osroot runs programs of another Debian root (the OpenSSL 3.5 root that
// scripts/openssl-root makes) without chroot: it finds the root's own dynamic loader, so the
// runner's openssl-cli method and the TLS interop tests exec the same binary the same way.
package osroot

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// Loader finds the dynamic loader inside root for bin: its PT_INTERP path resolved inside
// root (symlinks followed within root), else root/lib64/ld-linux-*.so.* or root/lib/ld-linux-*.so.*.
func Loader(root, bin string) (string, error) {
	if f, err := elf.Open(bin); err == nil {
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				if l, ok := InRoot(root, string(bytes.TrimRight(b, "\x00"))); ok {
					return l, nil
				}
			}
		}
	}
	for _, pat := range []string{"lib64/ld-linux-*.so.*", "lib/ld-linux-*.so.*"} {
		if m, _ := filepath.Glob(filepath.Join(root, pat)); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", fmt.Errorf("root %s: no dynamic loader (PT_INTERP of %s, lib64/ld-linux-*.so.*, lib/ld-linux-*.so.*)", root, bin)
}

// InRoot resolves an absolute path as if root were /, following symlinks of the last element
// inside root, and reports whether it names a regular file.
func InRoot(root, p string) (string, bool) {
	for range 16 {
		full := filepath.Join(root, p)
		st, err := os.Lstat(full)
		if err != nil {
			return "", false
		}
		if st.Mode()&os.ModeSymlink == 0 {
			return full, st.Mode().IsRegular()
		}
		t, err := os.Readlink(full)
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(t) {
			p = t
		} else {
			p = filepath.Join(filepath.Dir(p), t)
		}
	}
	return "", false
}
