// Command fwmeta writes the metadata JSON that accompanies each firmware
// build: target, toolchain, flags, the ELF's SHA-256 and build-id, section
// sizes (as size(1) reports them) and code size per algorithm, read from the
// ELF's symbol table.
//
//	go run ./firmware/tools/fwmeta -elf build/T/pqrepro-fw.elf -target T -cc arm-none-eabi-gcc ...
//
// The firmware reports its build-id in HELLO; the build-id cannot be the
// ELF's SHA-256 because the note holding it is part of the ELF, so this file
// is what maps one to the other.
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"pqrepro/firmware/impltable"
)

// Metadata is the JSON document written next to the ELF.
type Metadata struct {
	Target         string      `json:"target"`
	Firmware       string      `json:"firmware"`
	Version        string      `json:"version"`
	ELF            string      `json:"elf"`
	ELFSHA256      string      `json:"elf_sha256"`
	BuildID        string      `json:"build_id"`
	Toolchain      string      `json:"toolchain"`
	CC             string      `json:"cc"`
	CFlags         string      `json:"cflags"`
	LDFlags        string      `json:"ldflags"`
	KATs           string      `json:"kat_vectors"`
	Sections       SizeReport  `json:"size"`
	CodeSize       []CodeGroup `json:"code_size"`
	CodeSizeMethod string      `json:"code_size_method"`
	// Algorithms are the schemes linked into the image (their code is in the ELF), in table
	// order, and Kinds their kinds (kem, sig): what BENCH and SELFTEST can run. A board with
	// a declared subset lists only that subset.
	Algorithms []string `json:"algorithms"`
	Kinds      []string `json:"kinds"`
	// Experiments are the experiment kinds the image runs: kem-bench and sig-bench for its
	// algorithms' kinds, and mqtt-telemetry (pinned mode) when it holds the telemetry device
	// (Ascon and tel_*: firmware/PROTOCOL.md, Telemetry device).
	Experiments []string `json:"experiments"`
	// Implementations is the image's implementation table (ELF section .pqrepro_impl, package
	// firmware/impltable): per algorithm, the implementation linked, its version or commit and
	// the SHA-256 of its sources. Empty for an image built without one.
	Implementations []Implementation `json:"implementations"`
}

// Implementation is one line of the implementation table.
type Implementation struct {
	Algorithm string `json:"algorithm"`
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"`
	Commit    string `json:"commit,omitempty"`
	// Source is the hex SHA-256 of the implementation's sources (impltable.SourceDigest).
	Source string `json:"source_sha256"`
}

// SizeReport is the Berkeley format of size(1): text includes read-only data.
type SizeReport struct {
	Text uint64 `json:"text"`
	Data uint64 `json:"data"`
	BSS  uint64 `json:"bss"`
}

// CodeGroup is the code and constant data attributed to one algorithm or part.
type CodeGroup struct {
	Group      string `json:"group"`
	Code       uint64 `json:"code"`   // function bytes
	ROData     uint64 `json:"rodata"` // read-only tables
	Total      uint64 `json:"total"`
	WithShared uint64 `json:"with_shared,omitempty"` // total plus the shared Keccak code it calls
}

var groups = []struct {
	name   string
	re     *regexp.Regexp
	shared bool // uses the shared Keccak group
}{
	{"ML-KEM-512", regexp.MustCompile(`^mlkem512_`), true},
	{"ML-KEM-768", regexp.MustCompile(`^mlkem768_`), true},
	{"ML-KEM-1024", regexp.MustCompile(`^mlkem1024_`), true},
	{"ML-DSA-44", regexp.MustCompile(`^mldsa44_`), true},
	{"ML-DSA-65", regexp.MustCompile(`^mldsa65_`), true},
	{"ML-DSA-87", regexp.MustCompile(`^mldsa87_`), true},
	{"SLH-DSA-SHA2-128s", regexp.MustCompile(`^slhdsa_sha2_128s_`), false},
	{"SLH-DSA-SHA2-128f", regexp.MustCompile(`^slhdsa_sha2_128f_`), false},
	{"SLH-DSA-SHA2-192s", regexp.MustCompile(`^slhdsa_sha2_192s_`), false},
	{"SLH-DSA-SHA2-192f", regexp.MustCompile(`^slhdsa_sha2_192f_`), false},
	{"SLH-DSA-SHA2-256s", regexp.MustCompile(`^slhdsa_sha2_256s_`), false},
	{"SLH-DSA-SHA2-256f", regexp.MustCompile(`^slhdsa_sha2_256f_`), false},
	{"SLH-DSA-SHAKE-128s", regexp.MustCompile(`^slhdsa_shake_128s_`), true},
	{"SLH-DSA-SHAKE-128f", regexp.MustCompile(`^slhdsa_shake_128f_`), true},
	{"SLH-DSA-SHAKE-192s", regexp.MustCompile(`^slhdsa_shake_192s_`), true},
	{"SLH-DSA-SHAKE-192f", regexp.MustCompile(`^slhdsa_shake_192f_`), true},
	{"SLH-DSA-SHAKE-256s", regexp.MustCompile(`^slhdsa_shake_256s_`), true},
	{"SLH-DSA-SHAKE-256f", regexp.MustCompile(`^slhdsa_shake_256f_`), true},
	{"Keccak/SHA-3 (shared)", regexp.MustCompile(`^(keccak_|sha3_|shake)`), false},
	{"SHA-2", regexp.MustCompile(`^(sha256|sha512)`), false},
	{"Ascon", regexp.MustCompile(`^ascon_`), false},
	{"Telemetry device", regexp.MustCompile(`^(tel_|fw_tel_)`), false},
	// The client's group keeps the record layer's primitives (X.509, AES-GCM, HKDF) the server
	// links too; the key schedule and records both roles call (tls13common.c) are a group apart.
	{"TLS 1.3 client", regexp.MustCompile(`^(tls13c_|x509_|aes128|hkdf_|hmac_sha256)`), false},
	{"TLS 1.3 server", regexp.MustCompile(`^tls13s_`), false},
	{"TLS 1.3 shared", regexp.MustCompile(`^tls13_`), false},
	{"KAT vectors", regexp.MustCompile(`^(v[0-9]+$|[ks][0-9]+_|fw_kat_)`), false},
}

// userGroup attributes the symbols of an implementation brought in its own folder (renamed
// fw_user_* by the build, BYOI.md) to alg, which it replaces; the built-in code of alg, when
// other code still links it (the TLS client's ML-KEM), keeps a group of its own under another
// name. The implementation brings its own hash functions: no shared Keccak is added.
func userGroup(alg string) {
	for i := range groups {
		if groups[i].name == alg {
			groups[i].name = "pqrepro-fw " + alg + " (linked by other code, not in the table)"
		}
	}
	groups = append([]struct {
		name   string
		re     *regexp.Regexp
		shared bool
	}{{alg, regexp.MustCompile(`^fw_user_`), false}}, groups...)
}

func main() {
	var m Metadata
	elfPath := flag.String("elf", "", "ELF file")
	flag.StringVar(&m.Target, "target", "", "build target name")
	flag.StringVar(&m.CC, "cc", "", "compiler command (its --version is recorded)")
	flag.StringVar(&m.CFlags, "cflags", "", "compiler flags")
	flag.StringVar(&m.LDFlags, "ldflags", "", "linker flags")
	flag.StringVar(&m.KATs, "kats", "", "which known-answer vectors are embedded")
	flag.StringVar(&m.Version, "version", "", "firmware version")
	out := flag.String("o", "", "output JSON file")
	fwName := flag.String("firmware", "pqrepro-fw", "firmware name (FW_NAME)")
	userAlg := flag.String("user-alg", "", "the algorithm an implementation brought in its own folder replaces (BYOI.md): its code is the symbols fw_user_*")
	flag.Parse()
	m.Firmware = *fwName
	if *userAlg != "" {
		userGroup(*userAlg)
	}
	if *elfPath == "" || *out == "" || m.Target == "" {
		log.Fatal("fwmeta: -elf, -target and -o are required")
	}
	if err := run(&m, *elfPath, *out); err != nil {
		log.Fatalf("fwmeta: %v", err)
	}
}

func run(m *Metadata, elfPath, out string) error {
	raw, err := os.ReadFile(elfPath)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	m.ELFSHA256 = hex.EncodeToString(sum[:])
	m.ELF = filepath.Base(elfPath)
	if m.CC != "" {
		fields := strings.Fields(m.CC)
		v, err := exec.Command(fields[0], append(fields[1:], "--version")...).Output()
		if err != nil {
			return fmt.Errorf("%s --version: %w", m.CC, err)
		}
		m.Toolchain = strings.TrimSpace(strings.SplitN(string(v), "\n", 2)[0])
	}
	f, err := elf.Open(elfPath)
	if err != nil {
		return err
	}
	defer f.Close()
	table, err := impltable.ReadELF(bytes.NewReader(raw))
	switch {
	case errors.Is(err, impltable.ErrNoTable):
	case err != nil:
		return err
	}
	m.Implementations = []Implementation{}
	for _, e := range table {
		m.Implementations = append(m.Implementations, Implementation{Algorithm: e.Algorithm, Name: e.Name, Version: e.Version, Commit: e.Commit, Source: e.Source})
	}
	if id, err := buildID(f); err == nil {
		m.BuildID = id
	} else {
		return err
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		switch {
		case s.Type == elf.SHT_NOBITS:
			m.Sections.BSS += s.Size
		case s.Flags&elf.SHF_WRITE != 0:
			m.Sections.Data += s.Size
		default:
			m.Sections.Text += s.Size
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("symbols: %w", err)
	}
	acc := make([]CodeGroup, len(groups)+1)
	for i, g := range groups {
		acc[i].Group = g.name
	}
	acc[len(groups)].Group = "other (core, port, libgcc)"
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if s.Size == 0 || (typ != elf.STT_FUNC && typ != elf.STT_OBJECT) || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		if sec.Flags&elf.SHF_ALLOC == 0 || sec.Flags&elf.SHF_WRITE != 0 || sec.Type == elf.SHT_NOBITS {
			continue // RAM, not code size
		}
		idx := len(groups)
		for i, g := range groups {
			if g.re.MatchString(s.Name) {
				idx = i
				break
			}
		}
		if typ == elf.STT_FUNC {
			acc[idx].Code += s.Size
		} else {
			acc[idx].ROData += s.Size
		}
	}
	var shared uint64
	for i := range acc {
		acc[i].Total = acc[i].Code + acc[i].ROData
		if i < len(groups) && strings.HasPrefix(groups[i].name, "Keccak") {
			shared = acc[i].Total
		}
	}
	for i, g := range groups {
		if g.shared {
			acc[i].WithShared = acc[i].Total + shared
		}
	}
	// Algorithms absent from the image (a subset build) leave no group.
	var kept []CodeGroup
	for i, g := range acc {
		if g.Total == 0 && i < len(groups) && (strings.HasPrefix(groups[i].name, "ML-") || strings.HasPrefix(groups[i].name, "SLH-")) {
			continue
		}
		kept = append(kept, g)
		if i < len(groups) && (strings.HasPrefix(groups[i].name, "ML-") || strings.HasPrefix(groups[i].name, "SLH-")) {
			m.Algorithms = append(m.Algorithms, groups[i].name)
			kind := "sig"
			if strings.HasPrefix(groups[i].name, "ML-KEM-") {
				kind = "kem"
			}
			if !slices.Contains(m.Kinds, kind) {
				m.Kinds = append(m.Kinds, kind)
			}
		}
	}
	m.CodeSize = kept
	for _, k := range []struct{ kind, exp string }{{"kem", "kem-bench"}, {"sig", "sig-bench"}} {
		if slices.Contains(m.Kinds, k.kind) {
			m.Experiments = append(m.Experiments, k.exp)
		}
	}
	var ascon, tel, tls bool
	for i, g := range acc {
		if i < len(groups) && g.Total > 0 {
			ascon = ascon || groups[i].name == "Ascon"
			tel = tel || groups[i].name == "Telemetry device"
			tls = tls || groups[i].name == "TLS 1.3 client"
		}
	}
	if ascon && tel {
		m.Experiments = append(m.Experiments, "mqtt-telemetry")
	}
	if tls {
		m.Experiments = append(m.Experiments, "tls-matrix")
	}
	m.CodeSizeMethod = "sum of ELF symbol sizes (functions and read-only objects) grouped by symbol prefix; " +
		"inlined static functions count toward their caller; with_shared adds the Keccak/SHA-3 code every ML-KEM, ML-DSA and SLH-DSA-SHAKE set calls (the SLH-DSA-SHA2 sets call SHA-2 instead, not added)"
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// buildID returns the GNU build-id note of f as hex.
func buildID(f *elf.File) (string, error) {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return "", fmt.Errorf("no .note.gnu.build-id section (link with --build-id)")
	}
	b, err := s.Data()
	if err != nil {
		return "", err
	}
	if len(b) < 16 {
		return "", fmt.Errorf("short build-id note")
	}
	bo := f.ByteOrder
	if bo == nil {
		bo = binary.LittleEndian
	}
	namesz, descsz := bo.Uint32(b[0:4]), bo.Uint32(b[4:8])
	off := 12 + int((namesz+3)&^3)
	if off+int(descsz) > len(b) {
		return "", fmt.Errorf("malformed build-id note")
	}
	return hex.EncodeToString(b[off : off+int(descsz)]), nil
}
