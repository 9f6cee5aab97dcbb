// Package e2e boots the real pqrepro binary on a free port with a fresh data directory and
// drives Debian's Chromium headless through the portal: open a paper, re-run an experiment
// on the host board, follow the job until it goes on to the published run by itself, read the
// run's cells (units, the median on screen and no sideways scroll at 1366 and 390 px, dark
// mode), its comparison and a leaderboard, upload a RISC-V ELF as Cortex-M4 firmware and
// submit a bundle signed by an unknown key, both of which must be refused with the reason,
// and browse (list, filter, page, compare two runs, the scheme table) at 1366 and 390 px.
//
// Run it with `bash e2e/run.sh` (installs Chromium when missing) or `go test ./e2e/`.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// findChromium returns Chromium's path, or "" when it cannot be found.
func findChromium() string {
	if p := os.Getenv("PQREPRO_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/lib/chromium/chromium"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a process's output for the test's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestPortalInABrowser(t *testing.T) {
	chrome := findChromium()
	if chrome == "" {
		t.Skip("Chromium not found (install Debian's chromium, or run e2e/run.sh which installs it)")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "pqrepro")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pqrepro")
	build.Dir = moduleRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}

	// A bundle signed by keys the portal has never seen.
	bundle := filepath.Join(tmp, "stranger.tar.gz")
	mk := exec.Command(bin, "run", "paper001/mlkem", "--iterations", "3", "--keys", filepath.Join(tmp, "stranger-keys"), "--out", bundle, "--quiet")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make a stranger's bundle: %v\n%s", err, out)
	}

	addr := freePort(t)
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--data", filepath.Join(tmp, "data"))
	srv.Env = append(os.Environ(), "PQREPRO_ADMIN_TOKEN=")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	srv.Stderr = &logs
	srv.Cancel = func() error { return srv.Process.Signal(os.Interrupt) }
	srv.WaitDelay = 10 * time.Second
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		srv.Wait()
		if t.Failed() {
			t.Logf("portal log:\n%s", logs.String())
		}
	}()
	// First start prints the administrator's token.
	tokenc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "pqa_") && !sent {
				tokenc <- line
				sent = true
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	var token string
	select {
	case token = <-tokenc:
	case <-time.After(30 * time.Second):
		t.Fatalf("the portal printed no administrator token; log:\n%s", logs.String())
	}
	waitHealthy(t, base)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(filepath.Join(tmp, "chromium-profile")), chromedp.WindowSize(1280, 1600))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	// The first Run starts the browser: give it no timeout of its own.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/healthz")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	failed := func(name string, err error) {
		t.Helper()
		if shot, serr := chromedp.Run(bctx, chromedp.FullScreenshot(80)); serr == nil {
			os.WriteFile(filepath.Join(os.TempDir(), "pqrepro-e2e-failure.jpg"), shot, 0o644)
		}
		t.Fatalf("%s: %v (screenshot in %s)", name, err, filepath.Join(os.TempDir(), "pqrepro-e2e-failure.jpg"))
	}
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, 90*time.Second)
		defer scancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			failed(name, err)
		}
	}
	text := func(name string, a chromedp.Action[string]) string {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, 30*time.Second)
		defer scancel()
		v, err := chromedp.Run(sctx, a)
		if err != nil {
			failed(name, err)
		}
		return v
	}

	// Open a paper from the home page.
	step("open a paper",
		chromedp.Navigate(base+"/"),
		chromedp.Click(chromedp.CSS(`a[href="/papers/paper001"]`)),
		chromedp.WaitVisible(chromedp.ID("claims")),
	)
	paperText := text("read the paper", chromedp.Text(chromedp.CSS("main")))
	for _, want := range []string{"ESP32-C6", "C001-01", "Published reference numbers", "paper001/mlkem"} {
		if !strings.Contains(paperText, want) {
			t.Errorf("paper page lacks %q", want)
		}
	}

	// Sign in as the administrator.
	step("sign in",
		chromedp.Navigate(base+"/signin?next=/experiments/paper001/mlkem"),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS("form.rerun")),
	)

	// Re-run paper001/mlkem on the host board with 5 iterations per cell.
	step("start a re-run",
		chromedp.WaitVisible(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.Click(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="iterations"]`), "5"),
		chromedp.Click(chromedp.CSS(`form.rerun button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("job")),
	)
	if jobURL := text("job location", chromedp.Location()); !strings.Contains(jobURL, "/jobs/") {
		t.Fatalf("after starting a re-run the browser is at %s", jobURL)
	}

	// Follow the job page until the run is published.
	step("follow the job", chromedp.WaitVisible(chromedp.ID("run-link")))
	jobText := text("read the job", chromedp.Text(chromedp.ID("job")))
	if !strings.Contains(jobText, "published") || !strings.Contains(jobText, "finished: 9 cells") {
		t.Errorf("job page when done:\n%s", jobText)
	}

	// Published, the job page goes on to the run by itself (no click): cells, comparison,
	// claims, signature.
	step("the job page opens the run", chromedp.WaitVisible(chromedp.ID("comparison")))
	if runURL := text("run location", chromedp.Location()); !strings.Contains(runURL, "/runs/") {
		t.Fatalf("the published job page went to %s, not the run", runURL)
	}
	runText := text("read the run", chromedp.Text(chromedp.CSS("main")))
	median := text("read a median", chromedp.Text(chromedp.Search(`//table[contains(@class,"cells")]//tr[th[1]="ML-KEM-768" and td[1]="encaps"]/td[contains(@class,"median")]`)))
	for _, want := range []string{"Comparison with paper001", "C001-01", "not comparable", "portal-runner", "ed25519 signature verifies",
		"ml-dsa-65 signature verifies", "signed bundle"} {
		if !strings.Contains(runText, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if median == "" {
		t.Fatalf("no median for ML-KEM-768 encaps on the run page: %q", median)
	}
	// The Unit column names the unit the row's numbers are printed in: a bare number beside
	// ns, µs or ms, never "41.2 µs" beside "ns".
	unitCell := text("read a unit", chromedp.Text(chromedp.Search(`//table[contains(@class,"cells")]//tr[th[1]="ML-KEM-768" and td[1]="encaps"]/td[4]`)))
	if strings.ContainsAny(median, "µm ") || (unitCell != "ns" && unitCell != "µs" && unitCell != "ms") {
		t.Errorf("median %q with unit %q: want a bare number and its time unit in the Unit column", median, unitCell)
	}
	if href := text("compare link", chromedp.Evaluate[string](`document.getElementById('compare-link').getAttribute('href')`)); !strings.HasPrefix(href, "/compare?runs=") {
		t.Errorf("the run page's compare link is %q", href)
	}
	// At 1366 px and at 390 px the page never scrolls sideways and the median column is on
	// screen; the tables scroll inside their own boxes.
	for _, w := range []int64{1366, 390} {
		step(fmt.Sprintf("the run page at %d px", w), chromedp.EmulateViewport(w, 900))
		got := text("measure the run page", chromedp.Evaluate[string](`(() => {
			const d = document.documentElement, m = document.querySelector('table.cells tbody td.median').getBoundingClientRect();
			return [d.scrollWidth, window.innerWidth, Math.round(m.left), Math.round(m.right)].join(' ');
		})()`))
		var scrollW, innerW, mLeft, mRight int
		if _, err := fmt.Sscan(got, &scrollW, &innerW, &mLeft, &mRight); err != nil {
			t.Fatalf("run page layout %q: %v", got, err)
		}
		if scrollW > innerW {
			wide := text("find what overflows", chromedp.Evaluate[string](`[...document.querySelectorAll('body *')].filter(e =>
				e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-scroll, .heat-scroll, pre')).slice(0, 8)
				.map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).replace(/ /g, '.') : '') + (e.id ? '#' + e.id : '') + ' ' + Math.round(e.getBoundingClientRect().right)).join(', ')`))
			t.Errorf("at %d px the page is %d px wide: the body overflows sideways (%s)", innerW, scrollW, wide)
		}
		if mLeft < 0 || mRight > innerW {
			t.Errorf("at %d px the median column spans %d..%d px: off screen", innerW, mLeft, mRight)
		}
	}
	// Dark mode follows prefers-color-scheme: a dark ground under light text.
	colorScheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	step("dark mode", colorScheme("dark"))
	colours := text("read the colours", chromedp.Evaluate[string](`(() => {
		const lum = c => { const [r, g, b] = c.match(/\d+/g).map(Number); return Math.round((0.2126 * r + 0.7152 * g + 0.0722 * b) / 2.55); };
		const s = getComputedStyle(document.body);
		return lum(s.backgroundColor) + ' ' + lum(s.color);
	})()`))
	var bgLum, fgLum int
	if _, err := fmt.Sscan(colours, &bgLum, &fgLum); err != nil || bgLum > 25 || fgLum < 70 {
		t.Errorf("dark mode: background luminance %d%%, text %d%% (%v): want a dark ground and light text", bgLum, fgLum, err)
	}
	step("light mode again", colorScheme("light"), chromedp.EmulateReset())

	// The leaderboard shows the same number for the host board, labelled with its assurance.
	step("leaderboard",
		chromedp.Navigate(base+"/leaderboards?algorithm=ML-KEM-768&operation=encaps&metric=latency"),
		chromedp.WaitVisible(chromedp.CSS("table.leaders")),
	)
	board := text("read the leaderboard", chromedp.Text(chromedp.CSS("table.leaders tbody")))
	if !strings.Contains(board, "host") || !strings.Contains(board, "portal-runner") || !strings.Contains(board, median) {
		t.Errorf("leaderboard row %q does not show host, portal-runner and median %q", board, median)
	}

	// A tls-matrix re-run: its heat map has 36 cells with units, and at 390 px the grid
	// scrolls inside its own box, never past the viewport.
	step("start a matrix re-run",
		chromedp.Navigate(base+"/experiments/paper000/matrix"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.Click(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="iterations"]`), "10"),
		chromedp.Click(chromedp.CSS(`form.rerun button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("job")),
	)
	step("follow the matrix job", chromedp.WaitVisible(chromedp.ID("run-link")))
	// The job page may redraw its link while it is clicked: follow its address instead.
	matrixRun := text("the matrix run's address", chromedp.Evaluate[string](`document.getElementById('run-link').href`))
	step("open the matrix run at 390 px",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(matrixRun),
		chromedp.WaitVisible(chromedp.ID("heatmap-title")),
	)
	layout := text("measure the heat map", chromedp.Evaluate[string](`(() => {
		const box = document.querySelector('.heat-scroll'), r = box.getBoundingClientRect();
		const cells = [...document.querySelectorAll('.heat-grid td.heat')];
		const units = cells.filter(td => /^[0-9.]+ (µs|ms)$/.test(td.textContent.trim())).length;
		return [Math.round(r.left), Math.round(r.right), box.clientWidth, box.scrollWidth, window.innerWidth, cells.length, units].join(' ');
	})()`))
	var left, right, client, scroll, inner, cells, units int
	if _, err := fmt.Sscan(layout, &left, &right, &client, &scroll, &inner, &cells, &units); err != nil {
		t.Fatalf("heat map layout %q: %v", layout, err)
	}
	if left < 0 || right > inner || scroll <= client {
		t.Errorf("at %d px the heat map box spans %d..%d px (client %d, content %d): it must stay inside the viewport and scroll inside itself", inner, left, right, client, scroll)
	}
	if cells != 36 || units != 36 {
		t.Errorf("heat map: %d cells, %d with a median in µs or ms, want 36 and 36", cells, units)
	}
	step("back to the desktop size", chromedp.EmulateReset())

	// A bundle signed by an unknown key is refused with the reason.
	step("submit an unknown key's bundle",
		chromedp.Navigate(base+"/submit"),
		chromedp.WaitVisible(chromedp.ID("bundle")),
		chromedp.SetUploadFiles(chromedp.ID("bundle"), []string{bundle}),
		chromedp.Click(chromedp.ID("submit-bundle")),
		chromedp.WaitVisible(chromedp.ID("submit-result")),
	)
	result := text("read the submission result", chromedp.Text(chromedp.ID("submit-result")))
	if !strings.Contains(result, "Refused") || !strings.Contains(result, "unknown key") {
		t.Errorf("submission result %q, want a refusal naming the unknown key", result)
	}
	// A RISC-V ELF offered as Cortex-M4 firmware is refused with the reason, and nothing is
	// stored.
	riscv := filepath.Join(tmp, "riscv.elf")
	elfHeader := make([]byte, 256)
	copy(elfHeader, []byte{0x7f, 'E', 'L', 'F', 1, 1, 1})
	elfHeader[16], elfHeader[18], elfHeader[20], elfHeader[40] = 2, 243, 1, 52 // ET_EXEC, EM_RISCV, version 1, e_ehsize
	if err := os.WriteFile(riscv, elfHeader, 0o644); err != nil {
		t.Fatal(err)
	}
	step("upload a RISC-V ELF as Cortex-M4 firmware",
		chromedp.Navigate(base+"/firmware"),
		chromedp.WaitVisible(chromedp.ID("fw-file")),
		chromedp.SetUploadFiles(chromedp.ID("fw-file"), []string{riscv}),
		chromedp.SendKeys(chromedp.ID("fw-class"), "qemu-mps2-an386"),
		chromedp.SendKeys(chromedp.ID("fw-toolchain"), "riscv32-unknown-elf-gcc 14"),
		chromedp.SendKeys(chromedp.ID("fw-source"), "https://example.org/fw"),
		chromedp.SendKeys(chromedp.ID("fw-commit"), "0123abcd"),
		chromedp.Click(chromedp.ID("fw-upload")),
		chromedp.WaitVisible(chromedp.CSS(".error-message")),
	)
	refusal := text("read the firmware refusal", chromedp.Text(chromedp.CSS(".error-message")))
	if !strings.Contains(refusal, "EM_RISCV") || !strings.Contains(refusal, "qemu-mps2-an386") {
		t.Errorf("firmware refusal %q does not say the ELF is RISC-V and the class needs ARM", refusal)
	}
	if fw, err := http.Get(base + "/firmware"); err == nil {
		b, _ := io.ReadAll(fw.Body)
		fw.Body.Close()
		if strings.Contains(string(b), "riscv.elf") {
			t.Error("the refused firmware is listed")
		}
	}

	// A second re-run of paper001/mlkem, to compare with the first.
	step("start a second re-run",
		chromedp.Navigate(base+"/experiments/paper001/mlkem"),
		chromedp.WaitVisible(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.Click(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="iterations"]`), "6"),
		chromedp.Click(chromedp.CSS(`form.rerun button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("job")),
	)
	step("follow the second job", chromedp.WaitVisible(chromedp.ID("run-link")))

	// Browse at a desktop's and a phone's width: list, filter, page, compare, the scheme
	// table. The page body never scrolls sideways and the median column stays on screen.
	// wait polls until cond holds on a loaded page; a poll cut short by the navigation it
	// waits for (the target navigated, its context went away) is tried again.
	wait := func(name, cond string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			sctx, scancel := context.WithTimeout(bctx, 10*time.Second)
			_, err := chromedp.Run(sctx, chromedp.Poll[string](`(() => document.readyState === 'complete' && (`+cond+`) ? 'ok' : '')()`))
			scancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				failed(name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	count := func(sel string) int {
		t.Helper()
		var n int
		fmt.Sscan(text("count "+sel, chromedp.Evaluate[string](`String(document.querySelectorAll('`+sel+`').length)`)), &n)
		return n
	}
	fits := func(width int64, page, median string) {
		t.Helper()
		got := text("measure "+page, chromedp.Evaluate[string](`(() => {
			const de = document.documentElement, m = `+"`"+median+"`"+` ? document.querySelector(`+"`"+median+"`"+`) : null;
			const r = m ? m.getBoundingClientRect() : {left: 0, right: 0};
			return [de.scrollWidth, window.innerWidth, Math.round(r.left), Math.round(r.right), m ? 1 : 0].join(' ');
		})()`))
		var scroll, inner, left, right, found int
		if _, err := fmt.Sscan(got, &scroll, &inner, &left, &right, &found); err != nil {
			t.Fatalf("%s at %d px: %q: %v", page, width, got, err)
		}
		if scroll > inner {
			t.Errorf("%s at %d px: the page is %d px wide, wider than the viewport (%d px)", page, width, scroll, inner)
		}
		if median != "" && (found == 0 || left < 0 || right > inner) {
			t.Errorf("%s at %d px: the median column (%s) spans %d..%d px, outside the viewport of %d px", page, width, median, left, right, inner)
		}
	}
	for _, width := range []int64{1366, 390} {
		step(fmt.Sprintf("list runs at %d px", width), chromedp.EmulateViewport(width, 900), chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs-list")))
		if n := count("table.runs-list tbody tr"); n != 3 {
			t.Errorf("/runs lists %d runs, want 3", n)
		}
		fits(width, "/runs", "")
		step("filter by experiment",
			chromedp.SetValue(chromedp.CSS(`select[name="experiment"]`), "paper001/mlkem"),
			chromedp.Click(chromedp.ID("apply-filters")))
		wait("filtered list", `location.search.includes('experiment=paper001%2Fmlkem') && document.querySelector('table.runs-list')`)
		if n := count("table.runs-list tbody tr"); n != 2 {
			t.Errorf("/runs filtered by paper001/mlkem lists %d runs, want 2", n)
		}
		step("first page of one", chromedp.Navigate(base+"/runs?experiment=paper001%2Fmlkem&limit=1"), chromedp.WaitVisible(chromedp.ID("next-page")))
		first := text("first page", chromedp.Text(chromedp.CSS("table.runs-list tbody")))
		step("next page", chromedp.Click(chromedp.ID("next-page")))
		wait("second page", `location.search.includes('after=') && document.querySelector('table.runs-list')`)
		second := text("second page", chromedp.Text(chromedp.CSS("table.runs-list tbody")))
		end := text("end of the list", chromedp.Text(chromedp.CSS("nav.pager")))
		if first == second || count("table.runs-list tbody tr") != 1 || !strings.Contains(end, "End of the list") {
			t.Errorf("paging by one: %q then %q (pager %q)", first, second, end)
		}
		step("pick both runs", chromedp.Navigate(base+"/runs?experiment=paper001%2Fmlkem"), chromedp.WaitVisible(chromedp.ID("compare-selected")))
		text("tick", chromedp.Evaluate[string](`(() => { document.querySelectorAll('input[name="run"]').forEach(c => c.checked = true); return 'ok'; })()`))
		step("compare them", chromedp.Click(chromedp.ID("compare-selected")))
		wait("compare page", `document.getElementById('compared')`)
		cmp := text("read the comparison", chromedp.Text(chromedp.ID("compared")))
		if !strings.Contains(cmp, "ML-KEM-768 encaps") || !strings.Contains(cmp, "noise") {
			t.Errorf("comparison of two re-runs:\n%s", cmp)
		}
		if count("svg.chart") < 2 {
			t.Errorf("the comparison draws no overlaid figures")
		}
		fits(width, "/compare", "table.compare-cells tbody tr td.median")
		step("scheme table", chromedp.Navigate(base+"/schemes?assurance=host&board=host"), chromedp.WaitVisible(chromedp.CSS("table.scheme-table")))
		// One table per quantity (key form, message size): keygen has no key form, the
		// encapsulation cells are timed from encoded keys.
		schemes := text("read the scheme tables", chromedp.Evaluate[string](`[...document.querySelectorAll('table.scheme-table')].map(t => t.innerText).join('\n')`))
		if !strings.Contains(schemes, "ML-KEM-768") || !strings.Contains(schemes, "decaps") {
			t.Errorf("scheme table:\n%s", schemes)
		}
		fits(width, "/schemes", "table.scheme-table tbody tr td.median")
	}
	step("back to the desktop size again", chromedp.EmulateReset())

	resp, err := http.Get(base + "/api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(body), `"id":`); n != 3 {
		t.Errorf("%d runs published, want only the three re-runs: %s", n, body)
	}
}

func waitHealthy(t *testing.T, base string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("portal at %s did not become healthy", base)
}

var _ = fmt.Sprint
