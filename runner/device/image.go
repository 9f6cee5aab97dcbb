// Package device runs experiment manifests on a board's benchmark firmware over the framed
// serial protocol (firmware/PROTOCOL.md, package runner/wire). It is what the qemu and serial
// board drivers share: the firmware image and its digest checks, and the conversation that
// turns manifest cells into runner.CellResults. The drivers own the line (a QEMU pty, a USB
// serial port) and the board's lifecycle; this package owns what is said on it.
package device

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"pqrepro/artifacts"
)

// ErrFirmwareMismatch means the firmware a board runs, or the files describing it, are not
// the build the runner meant to flash. A run stops on it before anything is measured.
var ErrFirmwareMismatch = errors.New("firmware mismatch")

// MismatchError says which identity of a firmware disagreed. It wraps ErrFirmwareMismatch.
type MismatchError struct {
	// What names the check, e.g. "build-id reported by the board".
	What string
	// Want is what the flashed image says; Got what the other side says.
	Want, Got string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%v: %s is %s, expected %s", ErrFirmwareMismatch, e.What, e.Got, e.Want)
}

func (e *MismatchError) Unwrap() error { return ErrFirmwareMismatch }

// Metadata is the part of a build's metadata.json (written by firmware/tools/fwmeta next to
// the ELF) that the runner checks and records.
type Metadata struct {
	Target    string `json:"target"`
	Firmware  string `json:"firmware"`
	Version   string `json:"version"`
	ELF       string `json:"elf"`
	ELFSHA256 string `json:"elf_sha256"`
	BuildID   string `json:"build_id"`
	Toolchain string `json:"toolchain"`
}

// Image is a firmware build as the runner knows it before flashing or booting it.
type Image struct {
	// Path is the ELF file.
	Path string
	// Digest is "sha256:<hex>" of the file: the firmware digest recorded in bundles and the
	// key under which the portal stores uploaded builds.
	Digest string
	// BuildID is the GNU build-id note of the ELF (hex), which the running firmware reports in
	// HELLO. It ties the running image to this file.
	BuildID string
	// Metadata is metadata.json from the ELF's directory, when present; LoadImage has checked
	// that it describes this very file. MetadataJSON is the file itself, recorded in bundles.
	Metadata     *Metadata
	MetadataJSON json.RawMessage
}

// LoadImage reads an ELF, computes its digest and reads its build-id note. When a
// metadata.json lies next to it and names this file, its elf_sha256 and build_id must agree
// with the file, or the result is a *MismatchError: the metadata belongs to another build.
// A build without metadata (an uploaded ELF) is identified by its own digest and note alone.
func LoadImage(path string) (*Image, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read firmware image: %w", err)
	}
	img := &Image{Path: path, Digest: artifacts.Digest(data)}
	img.BuildID, err = buildID(data)
	if err != nil {
		return nil, fmt.Errorf("firmware image %s: %w", path, err)
	}
	mp := filepath.Join(filepath.Dir(path), "metadata.json")
	raw, err := os.ReadFile(mp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return img, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", mp, err)
	}
	var md Metadata
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("parse %s: %w", mp, err)
	}
	if md.ELF != "" && md.ELF != filepath.Base(path) {
		return img, nil // metadata of a sibling file (e.g. the host build's), not of this image
	}
	if artifacts.DigestOfHex(md.ELFSHA256) != img.Digest {
		return nil, fmt.Errorf("firmware image %s: %w", path, &MismatchError{What: "the image's SHA-256 (" + mp + " describes another build)",
			Want: artifacts.DigestOfHex(md.ELFSHA256), Got: img.Digest})
	}
	if md.BuildID != img.BuildID {
		return nil, fmt.Errorf("firmware image %s: %w", path, &MismatchError{What: "the image's build-id note (" + mp + " describes another build)",
			Want: md.BuildID, Got: img.BuildID})
	}
	img.Metadata = &md
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err == nil {
		img.MetadataJSON = compact.Bytes()
	}
	return img, nil
}

// buildID returns the hex GNU build-id from an ELF's notes.
func buildID(data []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("not an ELF file: %w", err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		b, err := s.Data()
		if err != nil {
			continue
		}
		if id, ok := findBuildID(b, f.ByteOrder); ok {
			return id, nil
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		if id, ok := findBuildID(b, f.ByteOrder); ok {
			return id, nil
		}
	}
	return "", errors.New("no GNU build-id note (link with -Wl,--build-id=sha1)")
}

// findBuildID walks ELF note records: namesz, descsz, type, name and desc padded to 4 bytes.
func findBuildID(b []byte, bo binary.ByteOrder) (string, bool) {
	const ntGNUBuildID = 3
	for len(b) >= 12 {
		namesz, descsz, typ := bo.Uint32(b), bo.Uint32(b[4:]), bo.Uint32(b[8:])
		b = b[12:]
		nlen, dlen := int(align4(namesz)), int(align4(descsz))
		if nlen > len(b) || int(namesz) > len(b) || nlen+int(descsz) > len(b) {
			return "", false
		}
		name := b[:namesz]
		desc := b[nlen : nlen+int(descsz)]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" && len(desc) > 0 {
			return hex.EncodeToString(desc), true
		}
		if nlen+dlen > len(b) {
			return "", false
		}
		b = b[nlen+dlen:]
	}
	return "", false
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }

// CheckPin stops a run whose manifest pins a firmware digest other than img's.
func CheckPin(m *artifacts.Manifest, img *Image) error {
	if m.Spec.Firmware != "" && m.Spec.Firmware != img.Digest {
		return &MismatchError{What: "the firmware to flash (" + img.Path + ")", Want: m.Spec.Firmware + " (pinned by the manifest)", Got: img.Digest}
	}
	return nil
}
