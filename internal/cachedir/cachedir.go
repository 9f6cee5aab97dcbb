// Package cachedir says where pqrepro keeps the large things its tests and the openssl-cli
// method reuse (the Debian 13 root with OpenSSL 3.5, versitygw, rp2040js): outside any
// checkout, keyed by version, so a fresh clone (CI's) finds what an earlier one made.
//
// The folder is $PQREPRO_CACHE, else the user's cache folder (os.UserCacheDir: $XDG_CACHE_HOME,
// else ~/.cache) plus "pqrepro". scripts/cachedir prints the same path for the shell scripts.
package cachedir

import (
	"os"
	"path/filepath"
)

// Env names the variable that overrides the folder.
const Env = "PQREPRO_CACHE"

// OpenSSLRoot is the Debian 13 root's name in the folder (scripts/openssl-root); its openssl
// is checked to be 3.5 or later wherever it is used, so the Debian suite is its version key.
const OpenSSLRoot = "trixie-openssl"

// Dir returns the cache folder ("" when neither $PQREPRO_CACHE nor a user cache folder is
// known). It is not created.
func Dir() string {
	if d := os.Getenv(Env); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "pqrepro")
}

// Find returns the first of <dir>/.cache/<name> for the given directories (an older
// checkout's cache) and <Dir()>/<name> that exists, or "".
func Find(name string, dirs ...string) string {
	var cands []string
	for _, d := range dirs {
		if d != "" {
			cands = append(cands, filepath.Join(d, ".cache", name))
		}
	}
	if d := Dir(); d != "" {
		cands = append(cands, filepath.Join(d, name))
	}
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return ""
}
