package portal

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/portal/store"
)

// compileARM links a small Cortex-M4 executable with arm-none-eabi-gcc and the given flags,
// optionally stripped of its debug information and .comment; it skips without the compiler.
func compileARM(t testing.TB, strip bool, flags ...string) []byte {
	t.Helper()
	cc, err := exec.LookPath("arm-none-eabi-gcc")
	if err != nil {
		t.Skip("arm-none-eabi-gcc not installed (make firmware installs it)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "start.c")
	os.WriteFile(src, []byte("static const char table[64] = \"pqrepro\";\nint counter;\nint data = 3;\nint _start(void) { return table[counter] + data; }\n"), 0o644)
	out := filepath.Join(dir, "fw.elf")
	args := append([]string{"-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-nostartfiles", "-Wl,--build-id=sha1"}, flags...)
	if b, err := exec.Command(cc, append(args, "-o", out, src)...).CombinedOutput(); err != nil {
		t.Fatalf("link: %v\n%s", err, b)
	}
	if strip {
		objcopy := strings.TrimSuffix(cc, "gcc") + "objcopy"
		if b, err := exec.Command(objcopy, "--strip-debug", "--remove-section=.comment", out).CombinedOutput(); err != nil {
			t.Fatalf("strip: %v\n%s", err, b)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadELFBuild: the compiler and flags come from the ELF's DWARF producer, the section
// sizes from its section headers; without debug information the compiler comes from
// .comment; metadata.json fills only what the ELF lacks, and its own size report never
// replaces the section headers'.
func TestReadELFBuild(t *testing.T) {
	elf := compileARM(t, false, "-g", "-O2", "-ffunction-sections")
	b, err := readELFBuild(bytes.NewReader(elf))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.Compiler, "GNU C") || b.CompilerFrom != fromDWARF || !strings.Contains(b.Flags, "-O2") ||
		!strings.Contains(b.Flags, "-mcpu=cortex-m4") || !strings.Contains(b.Flags, "-ffunction-sections") || b.FlagsFrom != fromDWARF {
		t.Errorf("compiler %q (%s), flags %q (%s): want GNU C and the flags from the DWARF producer", b.Compiler, b.CompilerFrom, b.Flags, b.FlagsFrom)
	}
	var text, bss uint64
	for _, s := range b.Sections {
		switch s.Kind {
		case "text":
			text += s.Size
		case "bss":
			bss += s.Size
		}
	}
	if text == 0 || text != b.Text || bss != b.BSS || b.BuildID == "" || len(b.BuildID) != 40 {
		t.Errorf("sections %+v, text %d bss %d, build-id %q: want the section headers' sums and the sha1 build-id", b.Sections, b.Text, b.BSS, b.BuildID)
	}
	meta := `{"toolchain":"arm-none-eabi-gcc 99 (says the uploader)","cflags":"-O0","ldflags":"-Wl,--gc-sections","build_id":"` + b.BuildID + `",
		"size":{"text":1,"data":2,"bss":3},"code_size":[{"group":"ML-KEM-768","code":3686,"rodata":308,"total":3994,"with_shared":7618}],"code_size_method":"symbol sizes"}`
	if err := addBuildMeta(&b, []byte(meta)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.Flags, "-O2") || b.FlagsFrom != fromDWARF || !strings.HasPrefix(b.Compiler, "GNU C") || b.MetaCFlags != "-O0" ||
		b.LDFlags != "-Wl,--gc-sections" || b.Text != text || b.MetaSize == nil || b.MetaSize.Text != 1 || len(b.CodeSize) != 1 || b.CodeSize[0].Total != 3994 {
		t.Errorf("after metadata.json: %+v; want the ELF's compiler, flags and sizes kept, metadata's beside them", b)
	}
	if err := addBuildMeta(&b, []byte(`{"build_id":"00ff"}`)); err == nil || !strings.Contains(err.Error(), "build_id 00ff") {
		t.Errorf("a metadata.json of another build: %v", err)
	}

	stripped := compileARM(t, true, "-O2")
	s, err := readELFBuild(bytes.NewReader(stripped))
	if err != nil {
		t.Fatal(err)
	}
	if s.Compiler != "" || s.Flags != "" || len(s.Producers) != 0 || s.Text == 0 {
		t.Errorf("stripped ELF: %+v; want no compiler or flags, and its sections", s)
	}
	if err := addBuildMeta(&s, []byte(`{"toolchain":"arm-none-eabi-gcc 12.2","cflags":"-Os"}`)); err != nil {
		t.Fatal(err)
	}
	if s.Compiler != "arm-none-eabi-gcc 12.2" || s.CompilerFrom != fromMetadata || s.Flags != "-Os" || s.FlagsFrom != fromMetadata {
		t.Errorf("stripped ELF with metadata.json: %+v; want its compiler and flags, labelled as metadata.json's", s)
	}
	comment := compileARM(t, false, "-O2") // no -g: no DWARF, .comment kept
	c, err := readELFBuild(bytes.NewReader(comment))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Compiler, "GCC:") || c.CompilerFrom != fromComment || c.Flags != "" {
		t.Errorf("ELF without debug information: compiler %q (%s), flags %q; want .comment's compiler and no flags", c.Compiler, c.CompilerFrom, c.Flags)
	}
}

// FuzzReadELFBuild: no file makes the reader panic, and what it returns is printable.
func FuzzReadELFBuild(f *testing.F) {
	f.Add([]byte("\x7fELF\x01\x01\x01"))
	f.Add([]byte{})
	// testdata/fuzz/FuzzReadELFBuild holds a small Cortex-M4 ELF with DWARF, linked by
	// arm-none-eabi-gcc -g -O2.
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := readELFBuild(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range append(b.Producers, b.Compiler, b.Flags) {
			if strings.ContainsAny(s, "\x00\n\r") {
				t.Fatalf("unprintable fact %q", s)
			}
		}
	})
}

// FuzzAddBuildMeta: no metadata.json makes it panic; a refused one is an error, never a
// half-filled fact that overrides the ELF's.
func FuzzAddBuildMeta(f *testing.F) {
	f.Add([]byte(`{"toolchain":"gcc","cflags":"-O2","size":{"text":1},"code_size":[{"group":"x","total":2}]}`))
	f.Add([]byte(`{"build_id":"ab"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b := elfFacts()
		if err := addBuildMeta(&b, raw); err != nil {
			return
		}
		if b.Compiler != "GNU C11 12" || b.Flags != "-O2" || b.Text != 10 {
			t.Fatalf("metadata.json replaced the ELF's facts: %+v", b)
		}
	})
}

func elfFacts() store.FirmwareBuildInfo {
	return store.FirmwareBuildInfo{Compiler: "GNU C11 12", CompilerFrom: fromDWARF, Flags: "-O2", FlagsFrom: fromDWARF, Text: 10, BuildID: "ab"}
}
