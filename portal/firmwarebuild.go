package portal

// How an uploaded firmware build was built: read from the ELF by the portal, with what the
// upload's metadata.json says beside it.

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/portal/store"
)

// Where a build fact was read.
const (
	fromDWARF    = "the ELF's DWARF producer"
	fromComment  = "the ELF's .comment section"
	fromMetadata = "metadata.json (not recorded in the ELF)"
)

// maxCompileUnits bounds how many compile units the DWARF reader visits.
const maxCompileUnits = 4096

// readELFBuild reads from a firmware ELF what its bytes say of how it was built: the
// allocated sections and their size(1) sums from the section headers, the compiler and
// flags from the DWARF producer of its compile units (GCC records the flags there by
// default) or, without debug information, the compiler from .comment, and the build-id
// note. A fact the ELF does not hold is left empty.
func readELFBuild(r io.ReaderAt) (store.FirmwareBuildInfo, error) {
	var b store.FirmwareBuildInfo
	f, err := elf.NewFile(r)
	if err != nil {
		return b, fmt.Errorf("the file is not a readable ELF: %w", err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 {
			continue
		}
		kind := "text"
		switch {
		case s.Type == elf.SHT_NOBITS:
			kind = "bss"
			b.BSS += s.Size
		case s.Flags&elf.SHF_WRITE != 0:
			kind = "data"
			b.Data += s.Size
		default:
			b.Text += s.Size
		}
		if len(b.Sections) < 64 {
			b.Sections = append(b.Sections, store.FirmwareSection{Name: printable(s.Name, 64), Kind: kind, Size: s.Size})
		}
	}
	b.Producers = dwarfProducers(f)
	for _, p := range b.Producers {
		if strings.HasPrefix(p, "GNU C") || strings.Contains(p, "clang") {
			b.Compiler, b.Flags = splitProducer(p)
			b.CompilerFrom, b.FlagsFrom = fromDWARF, fromDWARF
			if b.Flags == "" {
				b.FlagsFrom = ""
			}
			break
		}
	}
	if b.Compiler == "" {
		if c := elfComment(f); c != "" {
			b.Compiler, b.CompilerFrom = c, fromComment
		}
	}
	b.BuildID = elfBuildID(f)
	return b, nil
}

// dwarfProducers returns the distinct DW_AT_producer strings of the ELF's compile units, in
// order, at most store.MaxProducers; none when it has no readable DWARF.
func dwarfProducers(f *elf.File) []string {
	if f.Section(".debug_info") == nil {
		return nil
	}
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	var out []string
	rd := d.Reader()
	for range maxCompileUnits {
		e, err := rd.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			if p, ok := e.Val(dwarf.AttrProducer).(string); ok {
				p = printable(p, 2000)
				if p != "" && !slices.Contains(out, p) {
					out = append(out, p)
					if len(out) == store.MaxProducers {
						break
					}
				}
			}
		}
		rd.SkipChildren()
	}
	return out
}

// splitProducer splits a DWARF producer ("GNU C11 12.2.1 20221205 -mcpu=cortex-m4 -O2") into
// the compiler and its flags (from the first word that starts with '-').
func splitProducer(p string) (compiler, flags string) {
	if i := strings.Index(p, " -"); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, ""
}

// elfComment returns the ELF's .comment strings (the compiler's identification), joined.
func elfComment(f *elf.File) string {
	s := f.Section(".comment")
	if s == nil || s.Size > 4096 {
		return ""
	}
	data, err := s.Data()
	if err != nil {
		return ""
	}
	var out []string
	for _, c := range strings.Split(string(data), "\x00") {
		if c = printable(c, 200); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return strings.Join(out, "; ")
}

// elfBuildID returns the GNU build-id note's bytes in hex ("" when there is none).
func elfBuildID(f *elf.File) string {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > 4096 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for len(data) >= 12 {
			nameSz, descSz, typ := f.ByteOrder.Uint32(data), f.ByteOrder.Uint32(data[4:]), f.ByteOrder.Uint32(data[8:])
			nameEnd := 12 + align4(nameSz)
			descEnd := nameEnd + align4(descSz)
			if nameSz > 4096 || descSz > 4096 || uint64(descEnd) > uint64(len(data)) {
				break
			}
			if typ == 3 && nameSz == 4 && string(data[12:15]) == "GNU" { // NT_GNU_BUILD_ID
				return hex.EncodeToString(data[nameEnd : nameEnd+int(descSz)])
			}
			data = data[descEnd:]
		}
	}
	return ""
}

func align4(n uint32) int { return int((n + 3) &^ 3) }

// printable keeps a string read from an uploaded file fit to show: valid UTF-8, no control
// or hidden characters, spaces collapsed, at most max bytes.
func printable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || artifacts.Hidden(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "")
	}
	return s
}

// buildMeta is the part of a build's metadata.json (firmware/tools/fwmeta) kept as build
// facts.
type buildMeta struct {
	Toolchain string `json:"toolchain"`
	CFlags    string `json:"cflags"`
	LDFlags   string `json:"ldflags"`
	BuildID   string `json:"build_id"`
	Size      *struct {
		Text uint64 `json:"text"`
		Data uint64 `json:"data"`
		BSS  uint64 `json:"bss"`
	} `json:"size"`
	CodeSize []struct {
		Group      string `json:"group"`
		Code       uint64 `json:"code"`
		ROData     uint64 `json:"rodata"`
		Total      uint64 `json:"total"`
		WithShared uint64 `json:"with_shared"`
	} `json:"code_size"`
	CodeSizeMethod string `json:"code_size_method"`
}

// addBuildMeta adds metadata.json's build facts to b, the ELF's: the ELF's compiler and flags
// stay where it has them (metadata.json's are kept beside, to show a difference), its
// section sizes are the ELF's own; metadata.json's code size per algorithm is kept as the
// build tool's figures. A metadata.json that is not one is an error.
func addBuildMeta(b *store.FirmwareBuildInfo, raw []byte) error {
	var m buildMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("metadata.json is not the build's metadata: %w", err)
	}
	b.MetaCompiler, b.MetaCFlags, b.LDFlags = printable(m.Toolchain, 200), printable(m.CFlags, 2000), printable(m.LDFlags, 2000)
	if b.Compiler == "" && b.MetaCompiler != "" {
		b.Compiler, b.CompilerFrom = b.MetaCompiler, fromMetadata
	}
	if b.Flags == "" && b.MetaCFlags != "" {
		b.Flags, b.FlagsFrom = b.MetaCFlags, fromMetadata
	}
	if m.Size != nil {
		b.MetaSize = &store.FirmwareSize{Text: m.Size.Text, Data: m.Size.Data, BSS: m.Size.BSS}
	}
	if len(m.CodeSize) > 100 {
		return errors.New("metadata.json's code_size has more than 100 groups")
	}
	for _, g := range m.CodeSize {
		b.CodeSize = append(b.CodeSize, store.FirmwareCodeGroup{Group: printable(g.Group, 100), Code: g.Code, ROData: g.ROData, Total: g.Total, WithShared: g.WithShared})
	}
	b.CodeSizeMethod = printable(m.CodeSizeMethod, 1000)
	if b.BuildID == "" && m.BuildID != "" {
		// Only the ELF's own note is kept: an ID the file does not carry names nothing.
		return fmt.Errorf("metadata.json gives build_id %s, but the ELF carries no build-id note", printable(m.BuildID, 80))
	}
	if b.BuildID != "" && m.BuildID != "" && !strings.EqualFold(b.BuildID, m.BuildID) {
		return fmt.Errorf("metadata.json gives build_id %s, the ELF's note is %s: upload the metadata.json of this build", printable(m.BuildID, 80), b.BuildID)
	}
	return nil
}
