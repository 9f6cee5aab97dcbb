package portal_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/firmware/impltable"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/sqlstore"
	"pqrepro/runner"
	"pqrepro/runner/qemu"
)

// The firmware directory, relative to this package.
const repoFirmware = "../firmware"

var fwBuildMu sync.Mutex

// buildFirmware builds qemu-mps2-an386's firmware into firmware/<build>/ with the
// implementation table specification spec (nil: the project's implementations.txt), under
// the lock file every test that runs make on the firmware takes, and returns the ELF. It
// skips the test when make, the cross compiler or QEMU is missing.
func buildFirmware(t *testing.T, build string, spec []byte) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds firmware and boots QEMU")
	}
	mc, _ := qemu.LookupMachine("qemu-mps2-an386")
	for _, tool := range []string{"make", "go", mc.Binary, mc.Toolchain} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make firmware installs the toolchains)", tool)
		}
	}
	root, err := filepath.Abs(repoFirmware)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-C", root, "BUILD=" + build}
	if spec != nil {
		f := filepath.Join(t.TempDir(), "implementations.txt")
		if err := os.WriteFile(f, spec, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "IMPL_SPEC="+f)
	}
	fwBuildMu.Lock()
	defer fwBuildMu.Unlock()
	os.MkdirAll(filepath.Join(root, "build"), 0o755)
	lock, err := os.OpenFile(filepath.Join(root, "build", ".make.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	out, err := exec.Command("make", append(args, mc.Class)...).CombinedOutput()
	lock.Close()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", mc.Class, err, out)
	}
	return filepath.Join(root, build, mc.Class, "pqrepro-fw.elf")
}

// implManifest is a one-cell ML-KEM-768 keygen manifest of its own (not the catalogue's).
func implManifest(t *testing.T) *artifacts.Manifest {
	t.Helper()
	m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: kem-bench
metadata: {paper: paper001, name: impl-test}
spec:
  algorithms: [ML-KEM-768]
  operations: [keygen]
  warmup: 0
  iterations: 3
  seed: impl-test
`), "impl-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTwoFirmwaresTwoRows runs ML-KEM-768 on the emulated Cortex-M4 with two firmware builds
// whose implementation tables differ (the project's own, and one whose ML-KEM-768 line names
// another implementation) and submits both runs: the leaderboard has a row for each (their
// instruction counts may be equal; they are still two implementations), and each run's page
// names its own.
func TestTwoFirmwaresTwoRows(t *testing.T) {
	own := buildFirmware(t, "build", nil)
	spec, err := os.ReadFile(filepath.Join(repoFirmware, "implementations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(spec), "ML-KEM-768 pqrepro-fw @VERSION@", "ML-KEM-768 mlkem-native commit:1a2b3c4d", 1)
	if other == string(spec) {
		t.Fatal("implementations.txt has no ML-KEM-768 line to change")
	}
	alt := buildFirmware(t, "build/impl-test", []byte(other))

	p := portaltest.Start(t, nil)
	id := mustIdentity(t)
	sub := registeredSubmitter(t, p, "two-firmwares", id)
	m := implManifest(t)
	var runs []int64
	var labels []string
	for _, fw := range []string{own, alt} {
		f, err := os.Open(fw)
		if err != nil {
			t.Fatal(err)
		}
		table, err := impltable.ReadELF(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(table, func(e impltable.Entry) bool { return e.Algorithm == "ML-KEM-768" })
		labels = append(labels, artifacts.ShortImplementation(table[i].Implementation().Key()))
		board := &qemu.QEMU{Class: "qemu-mps2-an386", Firmware: fw, SkipSelfTest: true}
		b, res, err := runner.Execute(context.Background(), board, m, runner.Options{Identity: id, Version: "test", Origin: attest.OriginLocal})
		if err != nil {
			t.Fatal(err)
		}
		if im := res.Cells[0].Implementation; im == nil || im.Key() != table[i].Implementation().Key() {
			t.Fatalf("the cell names %+v, the ELF's table %+v", im, table[i])
		}
		var buf bytes.Buffer
		if err := artifacts.WriteTarGz(&buf, b); err != nil {
			t.Fatal(err)
		}
		cr, err := sub.Submit(context.Background(), buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, cr.RunID)
	}
	if labels[0] == labels[1] || !strings.HasPrefix(labels[0], "pqrepro-fw 0.1.0, source sha256:") || !strings.HasPrefix(labels[1], "mlkem-native commit 1a2b3c4d, source sha256:") {
		t.Fatalf("labels %q", labels)
	}
	var lb portal.Leaderboard
	getJSON(t, p.URL+"/api/v1/leaderboards?algorithm=ML-KEM-768&operation=keygen", &lb)
	var impls []string
	for _, r := range lb.Measured {
		if r.Board == "qemu-mps2-an386" {
			impls = append(impls, artifacts.ShortImplementation(r.Implementation))
			if r.Runs != 1 {
				t.Errorf("row %q pools %d runs", r.Implementation, r.Runs)
			}
		}
	}
	slices.Sort(impls)
	if want := slices.Sorted(slices.Values(labels)); !slices.Equal(impls, want) {
		t.Fatalf("leaderboard rows of qemu-mps2-an386: %q, want one per implementation %q", impls, want)
	}
	_, page := get(t, p.URL+"/leaderboards?algorithm=ML-KEM-768&operation=keygen")
	for _, l := range labels {
		if !strings.Contains(page, l) {
			t.Errorf("the leaderboard page does not name %q", l)
		}
	}
	for i, run := range runs {
		_, page := get(t, p.URL+"/runs/"+itoa(run))
		if !strings.Contains(page, labels[i]) || strings.Contains(page, labels[1-i]) {
			t.Errorf("run %d's page does not name its implementation %q alone", run, labels[i])
		}
	}
}

// armImplELF links a minimal Cortex-M4 executable holding the implementation table entries
// (as the firmware build writes it), with arm-none-eabi-gcc.
func armImplELF(t *testing.T, entries []impltable.Entry) []byte {
	t.Helper()
	cc, err := exec.LookPath("arm-none-eabi-gcc")
	if err != nil {
		t.Skip("arm-none-eabi-gcc not installed (make firmware installs it)")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "impl.h"), []byte("extern const char fw_impl_table[];\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "impltable.c"), impltable.CSource(entries, "test"), 0o644)
	os.WriteFile(filepath.Join(dir, "start.c"), []byte("extern const char fw_impl_table[];\nint _start(void) { return fw_impl_table[0]; }\n"), 0o644)
	elf := filepath.Join(dir, "fw.elf")
	out, err := exec.Command(cc, "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-nostartfiles", "-I", dir, "-o", elf,
		filepath.Join(dir, "start.c"), filepath.Join(dir, "impltable.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	data, err := os.ReadFile(elf)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFirmwareUploadChecksImplementationTable uploads a firmware whose implementation table
// names pqrepro-fw: declaring another project's implementation is refused, naming both; the
// table's own declaration, or none, is stored with the table's libraries.
func TestFirmwareUploadChecksImplementationTable(t *testing.T) {
	src := strings.Repeat("ab", 32)
	elf := armImplELF(t, []impltable.Entry{{Algorithm: "ML-KEM-768", Name: "pqrepro-fw", Version: "0.1.0", Source: src},
		{Algorithm: "ML-DSA-65", Name: "pqrepro-fw", Version: "0.1.0", Source: src}})
	p := portaltest.Start(t, nil)
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)
	admin.get("/firmware")
	fields := func(libs string) map[string]string {
		return map[string]string{"board_class": "qemu-mps2-an386", "toolchain": "arm-none-eabi-gcc 12", "libraries": libs,
			"source_url": "https://example.org/fw", "source_commit": "0123abcd"}
	}
	code, _, body := admin.upload("/firmware", fields("mlkem-native 1.0.0"), "file", "mlkem-native.elf", elf)
	if code != http.StatusBadRequest || !strings.Contains(body, "mlkem-native 1.0.0") || !strings.Contains(body, "pqrepro-fw 0.1.0") ||
		!strings.Contains(body, ".pqrepro_impl") {
		t.Fatalf("a declaration the ELF contradicts: %d\n%s", code, body)
	}
	if fw, _ := p.Server.Store().FirmwareBuilds(context.Background(), ""); len(fw) != 0 {
		t.Fatalf("a refused upload was stored: %+v", fw)
	}
	// The same implementations declared, and a second build (other sources) declaring none.
	other := armImplELF(t, []impltable.Entry{{Algorithm: "ML-KEM-768", Name: "pqrepro-fw", Version: "0.1.0", Source: strings.Repeat("cd", 32)}})
	for _, up := range []struct {
		libs string
		elf  []byte
	}{{"pqrepro-fw 0.1.0", elf}, {"", other}} {
		admin.get("/firmware")
		if code, loc, body := admin.upload("/firmware", fields(up.libs), "file", "own.elf", up.elf); code != http.StatusSeeOther {
			t.Fatalf("declared %q: %d %s %s", up.libs, code, loc, body)
		}
	}
	fw, err := p.Server.Store().FirmwareBuilds(context.Background(), "")
	if err != nil || len(fw) != 2 || fw[0].Libraries != "pqrepro-fw 0.1.0" || fw[1].Libraries != "pqrepro-fw 0.1.0" {
		t.Fatalf("stored builds %+v (%v), want two with the table's libraries", fw, err)
	}
}

// resample re-signs a host bundle after setting every timed sample with value(i) (i counts
// the cell's samples) and recomputing each cell's statistics from them, so the result is
// consistent and re-derives: only the physical floor can refuse it.
func resample(t *testing.T, archive []byte, id *identity.Identity, value func(i int) float64) []byte {
	t.Helper()
	return forge(t, archive, id, func(res *artifacts.Result, samples *[]byte) {
		r := csv.NewReader(bytes.NewReader(*samples))
		rows, err := r.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		vals := map[artifacts.CellKey][]float64{}
		for _, row := range rows[1:] {
			if row[4] == artifacts.UnitJoules {
				continue
			}
			k := artifacts.CellKey{Algorithm: row[0], Operation: row[1]}
			if len(row) > 5 {
				k.Variant = row[5]
			}
			v := value(len(vals[k]))
			vals[k] = append(vals[k], v)
			row[3] = strconv.FormatFloat(v, 'f', -1, 64)
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.WriteAll(rows)
		*samples = buf.Bytes()
		for i, c := range res.Cells {
			if c.Status == artifacts.StatusOK {
				res.Cells[i].Stats = artifacts.Summarize(vals[artifacts.KeyOf(c)])
			}
		}
	})
}

// TestCommunityBundlesThatMeasuredNothing: a community bundle whose samples are all 0 or 1 ns
// (with statistics consistent with them) is refused as below the physical floor, and one in
// which every cell was skipped is refused as measuring nothing; neither is stored.
func TestCommunityBundlesThatMeasuredNothing(t *testing.T) {
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	good := signedBundle(t, smallManifest(t, 4), s.id, attest.OriginLocal)
	zeros := resample(t, good, s.id, func(i int) float64 { return float64(i % 2) })
	if code, body := s.submit(t, p, zeros); code != http.StatusBadRequest || !strings.Contains(body, "physical floor") || !strings.Contains(body, "sample 0 is 0 ns") {
		t.Fatalf("0-ns bundle: %d %s", code, body)
	}
	skipped := forge(t, good, s.id, func(res *artifacts.Result, samples *[]byte) {
		for i := range res.Cells {
			res.Cells[i].Status, res.Cells[i].Error, res.Cells[i].Stats = artifacts.StatusSkipped, "the board has no TLS client", nil
			res.Cells[i].Sizes, res.Cells[i].Memory, res.Cells[i].Energy, res.Cells[i].Keys = nil, nil, nil, ""
		}
		*samples = []byte(strings.Join(artifacts.SamplesHeader, ",") + "\n")
	})
	if code, body := s.submit(t, p, skipped); code != http.StatusBadRequest || !strings.Contains(body, "no cell ran ok") || !strings.Contains(body, "9 of 9 cells: the board has no TLS client") {
		t.Fatalf("all-skipped bundle: %d %s", code, body)
	}
	if runs, _ := stored(t, p); runs != 0 {
		t.Fatalf("%d runs stored", runs)
	}
	if code, body := s.submit(t, p, good); code != http.StatusOK {
		t.Fatalf("the bundle both were made from: %d %s", code, body)
	}
}

// TestOwnManifestCountsNoClaim submits paper001/mlkem as the catalogue holds it, then the same
// experiment under a name the catalogue does not have: only the first moves paper001's claim
// tally (as a community verdict); the second's page says own manifest and links to its
// manifest.yaml, which is served.
func TestOwnManifestCountsNoClaim(t *testing.T) {
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cat.Manifest("paper001/mlkem")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := s.submit(t, p, signedBundle(t, base, s.id, attest.OriginLocal)); code != http.StatusOK {
		t.Fatalf("catalogue manifest: %d %s", code, body)
	}
	tallies := func() int {
		ts, err := p.Server.Store().ClaimTallies(context.Background(), "paper001")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tl := range ts {
			if tl.Origin != attest.OriginCommunity {
				t.Errorf("tally %+v of a community run", tl)
			}
			n += tl.Runs
		}
		return n
	}
	if n := tallies(); n != 1 {
		t.Fatalf("a run of the catalogue's manifest gave %d claim verdicts, want 1 (C001-01)", n)
	}
	own, err := artifacts.ParseManifest(bytes.Replace(base.YAML(), []byte("name: mlkem\n"), []byte("name: mlkem-x\n"), 1), "mlkem-x.yaml")
	if err != nil || own.Ref() != "paper001/mlkem-x" {
		t.Fatalf("own manifest %v: %v", own.Ref(), err)
	}
	code, body := s.submit(t, p, signedBundle(t, own, s.id, attest.OriginLocal))
	if code != http.StatusOK {
		t.Fatalf("own manifest: %d %s", code, body)
	}
	var cr protocol.CompleteResponse
	json.Unmarshal([]byte(body), &cr)
	if n := tallies(); n != 1 {
		t.Fatalf("a run of its own manifest moved paper001's tally to %d", n)
	}
	_, page := get(t, p.URL+"/runs/"+itoa(cr.RunID))
	link := "/runs/" + itoa(cr.RunID) + "/manifest.yaml"
	if !strings.Contains(page, "own manifest") || !strings.Contains(page, `href="`+link+`"`) || strings.Contains(page, `href="/experiments/paper001/mlkem-x"`) {
		t.Fatal("the run page of an own manifest does not link to its manifest instead of a catalogue experiment")
	}
	if code, yaml := get(t, p.URL+link); code != http.StatusOK || !strings.Contains(yaml, "name: mlkem-x") {
		t.Fatalf("GET %s: %d %s", link, code, yaml)
	}
	if _, list := get(t, p.URL+"/runs"); !strings.Contains(list, `href="`+link+`"`) {
		t.Error("the runs list links an own manifest's run to a catalogue experiment")
	}
}

// TestRebuildSplitsPooledRows publishes ML-DSA-44 signing of two message sizes, takes the
// cells back to what runs published before implementations were recorded (no implementation,
// no message size: one pooled row), and rebuilds: every cell gets its implementation from its
// bundle and the row splits in two, which the rebuild reports.
func TestRebuildSplitsPooledRows(t *testing.T) {
	p := portaltest.Start(t, nil)
	s := newSubmitter(t, p)
	for _, size := range []int{33, 19600} {
		m, err := artifacts.ParseManifest([]byte(`apiVersion: pqrepro/v1
kind: sig-bench
metadata: {paper: paper001, name: sign-`+strconv.Itoa(size)+`}
spec:
  algorithms: [ML-DSA-44]
  operations: [sign]
  message: {size: `+strconv.Itoa(size)+`}
  warmup: 1
  iterations: 5
  seed: rebuild-test
`), "sign.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := s.submit(t, p, signedBundle(t, m, s.id, attest.OriginLocal)); code != http.StatusOK {
			t.Fatalf("%d-byte run: %d %s", size, code, body)
		}
	}
	ctx := context.Background()
	db, ok := p.Server.Store().(interface{ Write() *sqlstore.Conn })
	if !ok {
		t.Fatal("the store gives no database handle")
	}
	if _, err := db.Write().ExecContext(ctx, `UPDATE cells SET implementation = '', msg_bytes = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Write().ExecContext(ctx, `UPDATE runs SET report_version = 1`); err != nil {
		t.Fatal(err)
	}
	st, err := p.Server.Rebuild(ctx, false)
	if err != nil || st.Rebuilt != 2 {
		t.Fatalf("rebuild %+v: %v", st, err)
	}
	if st.RowsBefore != 1 || st.RowsAfter != 2 || !slices.Contains(st.Split, "ML-DSA-44 sign: 1 → 2 rows") {
		t.Fatalf("rebuild says rows %d → %d, split %q; want ML-DSA-44 sign's one pooled row split in two", st.RowsBefore, st.RowsAfter, st.Split)
	}
	var lb portal.Leaderboard
	getJSON(t, p.URL+"/api/v1/leaderboards?algorithm=ML-DSA-44&operation=sign", &lb)
	var sizes []int
	for _, r := range lb.Measured {
		if !strings.HasPrefix(r.Implementation, artifacts.CirclModule+" v") {
			t.Errorf("row implementation %q, want circl's", r.Implementation)
		}
		sizes = append(sizes, r.MessageBytes)
	}
	if slices.Sort(sizes); !slices.Equal(sizes, []int{33, 19600}) {
		t.Fatalf("rows by message size %v", sizes)
	}
}
