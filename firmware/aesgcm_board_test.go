package firmware

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// aesBenchImage is a board image (not the firmware) that counts crypto/aesgcm's calls through
// its public interface, twice: aes128gcm_init; aes128_encrypt_block on one block (which bitslices
// the round keys on every call); aes128gcm_seal of 0, 16 and 16,384 bytes with a 5-byte AAD (a
// record header); and aes128gcm_open of 0 and 16,384 bytes with a wrong tag, which runs GHASH
// and the tag's one block but no CTR (open decrypts only after the tag matched). It prints the
// 16 KiB seal's tag for the test to compare with Go's.
const aesBenchImage = `#include "../test/benchimg.h"
#include "../crypto/pqmem.h"
#include "../crypto/aesgcm/aesgcm.h"

#define BIG 16384
static uint8_t buf[BIG + AESGCM_TAGBYTES], out[BIG];
static aes128gcm_ctx ctx;
static uint32_t rk[44];
static const uint8_t key[16] = {1}, iv[12] = {2}, hdr[5] = {0};
static uint64_t c_init, c_block, c_seal0, c_seal16, c_seal16k, c_open0, c_open16k;

static void bench(void *arg)
{
	(void)arg;
	BENCH_COUNT(c_init, aes128gcm_init(&ctx, key));
	aes128_expand(rk, key);
	BENCH_COUNT(c_block, aes128_encrypt_block(rk, out, iv));
	memset(buf, 0, sizeof buf);
	BENCH_COUNT(c_seal0, aes128gcm_seal(&ctx, buf, iv, hdr, sizeof hdr, buf, 0));
	memset(buf, 0, sizeof buf);
	BENCH_COUNT(c_seal16, aes128gcm_seal(&ctx, buf, iv, hdr, sizeof hdr, buf, 16));
	memset(buf, 0, sizeof buf);
	BENCH_COUNT(c_seal16k, aes128gcm_seal(&ctx, buf, iv, hdr, sizeof hdr, buf, BIG));
	BENCH_COUNT(c_open0, aes128gcm_open(&ctx, out, iv, hdr, sizeof hdr, out, AESGCM_TAGBYTES));
	memset(out, 0, sizeof out);
	BENCH_COUNT(c_open16k, aes128gcm_open(&ctx, out, iv, hdr, sizeof hdr, out, BIG));
}

void fw_main(void)
{
	int r;
	plat_init();
	for (r = 0; r < 2; r++) {
		plat_stack_run(bench, NULL);
		put("aesbench");
		put_board();
		put_num(" init=", c_init);
		put_num(" block=", c_block);
		put_num(" seal0=", c_seal0);
		put_num(" seal16=", c_seal16);
		put_num(" seal16k=", c_seal16k);
		put_num(" openbad0=", c_open0);
		put_num(" openbad16k=", c_open16k);
		put(" tag16k=");
		put_hex(buf + BIG, AESGCM_TAGBYTES);
		put("\n");
	}
	bench_done();
}
`

// TestAESGCMCountsOnBoards builds aesBenchImage for qemu-mps2-an386, qemu-mps2-an505 and
// qemu-riscv32-virt (the Makefile's replay-image rule with the bench in place of
// test/tlsreplay.c, in a temporary build directory), boots each under -icount shift=0, checks
// that the 16 KiB seal gives Go's tag and that two runs count alike, and logs the counts and
// the per-block figures derived from them (docs/BOARDS.md, "AES-128-GCM in the TLS client"):
// a 16-byte block of a 16 KiB seal, (seal16k - seal0) / 1024; its GHASH part,
// (openbad16k - openbad0) / 1024; the CTR part, the difference.
func TestAESGCMCountsOnBoards(t *testing.T) {
	if testing.Short() {
		t.Skip("boots emulated boards")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "aesbench.c")
	if err := os.WriteFile(src, []byte(aesBenchImage), 0o644); err != nil {
		t.Fatal(err)
	}
	build := filepath.Join(dir, "build")
	wantTag := goRecordTag()
	for _, b := range countBoards {
		t.Run(b.name, func(t *testing.T) {
			for _, tool := range []string{strings.Fields(b.qemu)[0], b.cc} {
				if _, err := exec.LookPath(tool); err != nil {
					t.Skipf("%s not installed", tool)
				}
			}
			elf := filepath.Join(build, "tls-replay", b.name, "tlsreplay.elf")
			makeCountImages(t, "BUILD="+build, "TLS_REPLAY_SRC="+src+" crypto/aesgcm/aesgcm.c",
				filepath.Join(build, b.name, "mem.o"), elf)
			lines := bootCountImage(t, b, elf)
			runs := countRecords(lines, "aesbench")
			if len(runs) != 2 {
				t.Fatalf("board printed %q", lines)
			}
			fields := []string{"init", "block", "seal0", "seal16", "seal16k", "openbad0", "openbad16k"}
			n := map[string]float64{}
			for _, f := range fields {
				if runs[0][f] != runs[1][f] {
					t.Errorf("%s differs between runs: %s, %s", f, runs[0][f], runs[1][f])
				}
				v, err := strconv.ParseUint(runs[0][f], 10, 64)
				if err != nil || v == 0 {
					t.Fatalf("%s=%q", f, runs[0][f])
				}
				n[f] = float64(v)
			}
			for _, r := range runs {
				if r["tag16k"] != wantTag {
					t.Fatalf("16 KiB seal's tag %s, Go's %s", r["tag16k"], wantTag)
				}
			}
			if n["seal16k"] <= n["seal0"] || n["openbad16k"] <= n["openbad0"] || n["seal16k"] <= n["openbad16k"] {
				t.Fatalf("counts out of order: %v", n)
			}
			perBlock := (n["seal16k"] - n["seal0"]) / 1024
			ghash := (n["openbad16k"] - n["openbad0"]) / 1024
			t.Logf("%s (%s): init %s, one block %s, seal 0 B %s, 16 B %s, 16 KiB %s; open with a bad tag 0 B %s, 16 KiB %s; per 16-byte block of the 16 KiB seal %.1f (GHASH %.1f, CTR and the rest %.1f)",
				b.name, runs[0]["unit"], runs[0]["init"], runs[0]["block"], runs[0]["seal0"], runs[0]["seal16"], runs[0]["seal16k"],
				runs[0]["openbad0"], runs[0]["openbad16k"], perBlock, ghash, perBlock-ghash)
		})
	}
}
