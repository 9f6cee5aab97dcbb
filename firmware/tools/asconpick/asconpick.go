// Package asconpick names the Ascon KAT files the firmware's SELFTEST embeds and the few
// records of each the emulated boards keep (vecsubset copies them into firmware/vectors/ascon,
// vecgen embeds them). The files are the Ascon designers' NIST LWC KAT files, SP 800-232 and
// pre-standard v1.2 (../shared/test-vectors/ascon/PROVENANCE.md).
package asconpick

import (
	"bytes"
	"fmt"
	"strconv"
)

// Kind is how a file's records are checked.
type Kind int

const (
	AEAD Kind = iota // Key, Nonce, PT, AD, CT (ciphertext || 16-byte tag)
	Hash             // Msg, MD
	CXOF             // Msg, Z, MD
)

// File is one KAT file, its algorithm as SELFTEST names it, and the records a board keeps.
type File struct {
	Rel  string // relative to the Ascon KAT directory
	Alg  string
	Kind Kind
	// Mode is the firmware's ascon_mode for an AEAD file (0 AEAD128, 1 Ascon-128 v1.2,
	// 2 Ascon-128a v1.2); for a hash file 0 Hash256, 1 XOF128, 2 CXOF128.
	Mode  int
	Board []int // Count values kept on the boards
}

// The AEAD files enumerate PT and AD lengths 0..32 (Count = 33*len(PT) + len(AD) + 1), the
// hash files message lengths 0..1024 (Count = len + 1), CXOF message and Z lengths 0..32
// (Count = 33*len(Msg) + len(Z) + 1). The boards keep empty inputs, a partial block with a
// multi-block AD, whole blocks, and the longest (or a long) input.
var aeadBoard = []int{1, 33*5 + 17 + 1, 33*16 + 16 + 1, 33*32 + 31 + 1}

// Files are the six files in SELFTEST's order.
var Files = []File{
	{"sp800-232/asconaead128/LWC_AEAD_KAT_128_128.txt", "Ascon-AEAD128", AEAD, 0, aeadBoard},
	{"prestandard-v1.2/ascon128v12/LWC_AEAD_KAT_128_128.txt", "Ascon-128", AEAD, 1, aeadBoard},
	{"prestandard-v1.2/ascon128av12/LWC_AEAD_KAT_128_128.txt", "Ascon-128a", AEAD, 2, aeadBoard},
	{"sp800-232/asconhash256/LWC_HASH_KAT_128_256.txt", "Ascon-Hash256", Hash, 0, []int{1, 9, 16, 201}},
	{"sp800-232/asconxof128/LWC_XOF_KAT_128_512.txt", "Ascon-XOF128", Hash, 1, []int{1, 9, 16, 201}},
	{"sp800-232/asconcxof128/LWC_CXOF_KAT_128_512.txt", "Ascon-CXOF128", CXOF, 2, []int{1, 33*1 + 32 + 1, 33*16 + 8 + 1, 33*32 + 32 + 1}},
}

// Keep reports whether a board keeps record count of f.
func (f File) Keep(count int) bool {
	for _, c := range f.Board {
		if c == count {
			return true
		}
	}
	return false
}

// Subset returns the text of f's board records, each unchanged from text (the file's
// contents), in file order, separated by blank lines as upstream.
func (f File) Subset(text []byte) ([]byte, error) {
	var out [][]byte
	seen := map[int]bool{}
	for _, rec := range bytes.Split(bytes.ReplaceAll(text, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		rec = bytes.Trim(rec, "\n")
		if len(rec) == 0 {
			continue
		}
		first, _, _ := bytes.Cut(rec, []byte("\n"))
		name, val, ok := bytes.Cut(first, []byte("="))
		if !ok || string(bytes.TrimSpace(name)) != "Count" {
			return nil, fmt.Errorf("%s: a record starts %q, not Count", f.Rel, first)
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(val)))
		if err != nil {
			return nil, fmt.Errorf("%s: Count %q: %w", f.Rel, val, err)
		}
		if f.Keep(n) {
			out = append(out, rec)
			seen[n] = true
		}
	}
	for _, c := range f.Board {
		if !seen[c] {
			return nil, fmt.Errorf("%s: no record Count %d", f.Rel, c)
		}
	}
	return append(bytes.Join(out, []byte("\n\n")), '\n'), nil
}
