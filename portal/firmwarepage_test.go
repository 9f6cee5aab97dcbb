package portal_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"pqrepro/portal"
	"pqrepro/portal/portaltest"
)

// TestFirmwareBuildPage uploads a real Cortex-M4 ELF with a metadata.json whose size report
// and flags disagree with the ELF: the build's page shows the compiler and flags the portal
// read from the ELF's DWARF producer and the section headers' sizes, says metadata.json's
// size report differs, and shows what only metadata.json holds (link flags, code size per
// algorithm) labelled as its; the metadata.json is stored as it came.
func TestFirmwareBuildPage(t *testing.T) {
	elf := portal.CompileARM(t, false, "-g", "-O2", "-ffunction-sections")
	sum := sha256.Sum256(elf)
	meta := `{"target":"qemu-mps2-an386","firmware":"pqrepro-fw","version":"0.1.0","elf_sha256":"` + hex.EncodeToString(sum[:]) + `",
	"toolchain":"arm-none-eabi-gcc (uploader's) 12.2.1","cflags":"-Os -Wall","ldflags":"-Wl,--gc-sections -T link.ld",
	"size":{"text":999999,"data":0,"bss":0},
	"code_size":[{"group":"ML-KEM-768","code":3686,"rodata":308,"total":3994,"with_shared":7618}],"code_size_method":"sum of ELF symbol sizes"}`
	p := portaltest.Start(t, nil)
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/firmware")
	code, _, body := admin.uploadFiles("/firmware", map[string]string{"board_class": "qemu-mps2-an386", "source_url": "https://example.org/fw", "source_commit": "0123abcd"},
		map[string][]byte{"file": elf, "metadata": []byte(meta)})
	if code != http.StatusSeeOther {
		t.Fatalf("upload: %d %s", code, body)
	}
	fw, err := p.Server.Store().FirmwareBuilds(context.Background(), "qemu-mps2-an386")
	if err != nil || len(fw) != 1 {
		t.Fatalf("builds %v %v", fw, err)
	}
	d := fw[0].Digest
	if _, list := admin.get("/firmware"); !strings.Contains(list, `href="/firmware/`+d+`/build"`) {
		t.Error("the firmware list does not link the build's page")
	}
	code, page := admin.get("/firmware/" + d + "/build")
	if code != http.StatusOK {
		t.Fatalf("build page: %d", code)
	}
	for _, want := range []string{
		"GNU C", "from the ELF&#39;s DWARF producer", "-mcpu=cortex-m4", "-O2", // compiler and flags read from the ELF
		"metadata.json&#39;s size report differs (text 999,999 B",                          // the uploader's size, not shown as the size
		"-Wl,--gc-sections -T link.ld", "from metadata.json: the ELF does not record them", // link flags, labelled
		"ML-KEM-768", "3,994 B", "7,618 B", "sum of ELF symbol sizes", // code size, labelled as metadata.json's
		"-Os -Wall", "arm-none-eabi-gcc (uploader&#39;s) 12.2.1", // metadata's own beside
		`<td><code>.text</code></td><td>text</td>`, "Build ID",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the build page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>999,999 B</b>") {
		t.Error("the build page shows the uploader's text size as the build's")
	}
	code, got := admin.get("/firmware/" + d + "/metadata.json")
	if code != http.StatusOK || got != meta {
		t.Errorf("metadata.json: %d, not the upload's as it came", code)
	}
	// A build uploaded without metadata.json: the ELF's facts, and what is not recorded said so.
	plain := portal.CompileARM(t, true, "-O2")
	admin.get("/firmware")
	if code, _, body := admin.upload("/firmware", map[string]string{"board_class": "qemu-mps2-an386", "toolchain": "arm-none-eabi-gcc 12",
		"source_url": "https://example.org/fw", "source_commit": "0123abcd"}, "file", "plain.elf", plain); code != http.StatusSeeOther {
		t.Fatalf("upload without metadata.json: %d %s", code, body)
	}
	sum = sha256.Sum256(plain)
	_, page = admin.get("/firmware/sha256:" + hex.EncodeToString(sum[:]) + "/build")
	for _, want := range []string{"not recorded: the ELF names no compiler", "not recorded: the ELF has no DWARF producer", "Not recorded: no metadata.json with a code_size", `<td><code>.text</code></td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of a build without metadata.json lacks %q", want)
		}
	}
}
