// Package e2e boots the real pqrepro binary on a free port with a fresh data directory and
// drives Debian's Chromium headless through the portal: open a paper, re-run an experiment
// on the host board, follow the job until it goes on to the published run by itself, read the
// run's cells (units, the median on screen and no sideways scroll at 1366 and 390 px, dark
// mode), its comparison and a leaderboard, upload a RISC-V ELF as Cortex-M4 firmware and
// submit a bundle signed by an unknown key, both of which must be refused with the reason,
// and browse (list, filter, page, compare two runs, the scheme table) at 1366 and 390 px.
// Each is a named step (t.Run) of TestPortalInABrowser, run in order on one portal and one
// browser; the first step that fails ends the test.
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
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"pqrepro/internal/lockedio"
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

// TestPortalInABrowser runs the steps below in order on one portal and one browser; a step
// that fails ends the test (the later ones build on it).
func TestPortalInABrowser(t *testing.T) {
	b := startBrowser(t)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"open a paper", b.openPaper},
		{"sign in", b.signIn},
		{"re-run on the host board", b.rerun},
		{"read the run", b.readRun},
		{"the run page fits", b.runPageFits},
		{"dark mode", b.darkMode},
		{"leaderboard", b.leaderboard},
		{"tls matrix re-run", b.matrixRerun},
		{"an unknown key's bundle is refused", b.unknownKey},
		{"a RISC-V ELF is refused as Cortex-M4 firmware", b.riscvFirmware},
		{"the re-run form fits with a firmware build uploaded", b.rerunFormWithFirmware},
		{"a second re-run", b.secondRerun},
		{"browse at 1366 px", func(t *testing.T) { b.browse(t, 1366) }},
		{"browse at 390 px", func(t *testing.T) { b.browse(t, 390) }},
		{"only the re-runs are published", b.onlyReruns},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			return
		}
	}
}

// session is a headless Chromium driving a running portal, shared by the test's steps.
type session struct {
	ctx  context.Context // the browser's tab
	base string          // the portal's address
	tmp  string
	// token is the administrator's; bundle a bundle signed by keys the portal never saw.
	token, bundle string
	// median is the first re-run's ML-KEM-768 encaps median, as its run page prints it.
	median string
}

// startBrowser builds the binary, makes a stranger's bundle, serves a fresh portal on a free
// port, reads the administrator's token from its first start and starts Chromium; everything
// stops when the test ends (the portal's log is printed when it failed).
func startBrowser(t *testing.T) *session {
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
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--data", filepath.Join(tmp, "data"))
	srv.Env = append(os.Environ(), "PQREPRO_ADMIN_TOKEN=")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedio.Buffer
	srv.Stderr = &logs
	srv.Cancel = func() error { return srv.Process.Signal(os.Interrupt) }
	srv.WaitDelay = 10 * time.Second
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Wait()
		if t.Failed() {
			t.Logf("portal log:\n%s", logs.String())
		}
	})
	token := adminToken(t, stdout, &logs)
	waitHealthy(t, base)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(filepath.Join(tmp, "chromium-profile")), chromedp.WindowSize(1280, 1600))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)

	// The first Run starts the browser: give it no timeout of its own.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/healthz")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return &session{ctx: bctx, base: base, tmp: tmp, token: token, bundle: bundle}
}

// adminToken reads the administrator's token the portal prints on its first start.
func adminToken(t *testing.T, stdout io.Reader, logs *lockedio.Buffer) string {
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
	select {
	case token := <-tokenc:
		return token
	case <-time.After(30 * time.Second):
		t.Fatalf("the portal printed no administrator token; log:\n%s", logs.String())
	}
	return ""
}

// failed ends the step with err, leaving a screenshot of the page.
func (b *session) failed(t *testing.T, name string, err error) {
	t.Helper()
	if shot, serr := chromedp.Run(b.ctx, chromedp.FullScreenshot(80)); serr == nil {
		os.WriteFile(filepath.Join(os.TempDir(), "pqrepro-e2e-failure.jpg"), shot, 0o644)
	}
	t.Fatalf("%s: %v (screenshot in %s)", name, err, filepath.Join(os.TempDir(), "pqrepro-e2e-failure.jpg"))
}

// do runs actions within 90 s.
func (b *session) do(t *testing.T, name string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, scancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer scancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		b.failed(t, name, err)
	}
}

// text reads a value from the page within 30 s.
func (b *session) text(t *testing.T, name string, a chromedp.Action[string]) string {
	t.Helper()
	sctx, scancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer scancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		b.failed(t, name, err)
	}
	return v
}

// wait polls until cond holds on a loaded page; a poll cut short by the navigation it waits
// for (the target navigated, its context went away) is tried again.
func (b *session) wait(t *testing.T, name, cond string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, scancel := context.WithTimeout(b.ctx, 10*time.Second)
		_, err := chromedp.Run(sctx, chromedp.Poll[string](`(() => document.readyState === 'complete' && (`+cond+`) ? 'ok' : '')()`))
		scancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.failed(t, name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// count counts the elements sel selects.
func (b *session) count(t *testing.T, sel string) int {
	t.Helper()
	var n int
	fmt.Sscan(b.text(t, "count "+sel, chromedp.Evaluate[string](`String(document.querySelectorAll('`+sel+`').length)`)), &n)
	return n
}

// fits checks the page never scrolls sideways at width and the median column (selector
// median, "" for none) is on screen.
func (b *session) fits(t *testing.T, width int64, page, median string) {
	t.Helper()
	got := b.text(t, "measure "+page, chromedp.Evaluate[string](`(() => {
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

// shot saves the viewport, or the element sel when not "", as dir/name.png when
// PQREPRO_E2E_SHOTS names a directory (the screenshots the docs reference); otherwise nothing.
func (b *session) shot(t *testing.T, name, sel string) {
	t.Helper()
	dir := os.Getenv("PQREPRO_E2E_SHOTS")
	if dir == "" {
		return
	}
	var a chromedp.Action[[]byte] = chromedp.CaptureScreenshot()
	if sel != "" {
		a = chromedp.Screenshot(chromedp.CSS(sel))
	}
	sctx, scancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer scancel()
	png, err := chromedp.Run(sctx, a)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	}
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// labelsApart checks that no two text labels of a plot on the page overlap, none is clipped
// by its plot's edge, and each is drawn at least 12 px high (its font size scaled as the plot
// is), comparing the labels' bounding boxes as drawn at the current width.
func (b *session) labelsApart(t *testing.T, width int64, page string) {
	t.Helper()
	got := b.text(t, "measure the plot labels of "+page, chromedp.Evaluate[string](`(() => {
		const out = [];
		for (const svg of document.querySelectorAll('svg.chart')) {
			const box = svg.getBoundingClientRect();
			if (box.width === 0) continue;
			const ts = [...svg.querySelectorAll('text')].map(e => ({s: e.textContent, r: e.getBoundingClientRect(), f: parseFloat(getComputedStyle(e).fontSize)})).filter(x => x.r.width > 0);
			const scale = svg.viewBox.baseVal && svg.viewBox.baseVal.width > 0 ? box.width / svg.viewBox.baseVal.width : 1;
			for (const x of ts) {
				if (x.r.left < box.left - 1 || x.r.right > box.right + 1) out.push('clipped "' + x.s + '"');
				if (x.f * scale < 12) out.push('"' + x.s + '" drawn ' + (x.f * scale).toFixed(1) + ' px high');
			}
			for (let i = 0; i < ts.length; i++) for (let j = i + 1; j < ts.length; j++) {
				const a = ts[i].r, c = ts[j].r;
				if (Math.min(a.right, c.right) - Math.max(a.left, c.left) > 1 && Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top) > 1)
					out.push('"' + ts[i].s + '" overlaps "' + ts[j].s + '"');
			}
		}
		return out.slice(0, 8).join('; ');
	})()`))
	if got != "" {
		t.Errorf("%s at %d px: plot labels collide: %s", page, width, got)
	}
}

// startRerun starts a re-run of experiment on the host board with iterations per cell from
// its page and waits for the job page.
func (b *session) startRerun(t *testing.T, experiment, iterations string) {
	t.Helper()
	b.do(t, "start a re-run of "+experiment,
		chromedp.Navigate(b.base+"/experiments/"+experiment),
		chromedp.WaitVisible(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.Click(chromedp.CSS(`input[name="board"][value="host"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="iterations"]`), iterations),
		chromedp.Click(chromedp.CSS(`form.rerun button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.ID("job")),
	)
}

// openPaper opens a paper from the home page.
func (b *session) openPaper(t *testing.T) {
	b.do(t, "open a paper",
		chromedp.Navigate(b.base+"/"),
		chromedp.Click(chromedp.CSS(`a[href="/papers/paper001"]`)),
		chromedp.WaitVisible(chromedp.ID("claims")),
	)
	paperText := b.text(t, "read the paper", chromedp.Text(chromedp.CSS("main")))
	for _, want := range []string{"ESP32-C6", "C001-01", "Published reference numbers", "paper001/mlkem"} {
		if !strings.Contains(paperText, want) {
			t.Errorf("paper page lacks %q", want)
		}
	}

}

// signIn signs in as the administrator.
func (b *session) signIn(t *testing.T) {
	b.do(t, "sign in",
		chromedp.Navigate(b.base+"/signin?next=/experiments/paper001/mlkem"),
		chromedp.SendKeys(chromedp.ID("token"), b.token),
		chromedp.Click(chromedp.ID("signin")),
		chromedp.WaitVisible(chromedp.CSS("form.rerun")),
	)

}

// rerun re-runs paper001/mlkem on the host board with 5 iterations per cell and follows the
// job page until the run is published.
func (b *session) rerun(t *testing.T) {
	b.startRerun(t, "paper001/mlkem", "5")
	if jobURL := b.text(t, "job location", chromedp.Location()); !strings.Contains(jobURL, "/jobs/") {
		t.Fatalf("after starting a re-run the browser is at %s", jobURL)
	}

	// Follow the job page until the run is published.
	b.do(t, "follow the job", chromedp.WaitVisible(chromedp.ID("run-link")))
	jobText := b.text(t, "read the job", chromedp.Text(chromedp.ID("job")))
	if !strings.Contains(jobText, "published") || !strings.Contains(jobText, "finished: 9 cells") {
		t.Errorf("job page when done:\n%s", jobText)
	}

}

// readRun: published, the job page goes on to the run by itself (no click): cells, comparison,
// claims, signature, units.
func (b *session) readRun(t *testing.T) {
	b.do(t, "the job page opens the run", chromedp.WaitVisible(chromedp.ID("comparison")))
	if runURL := b.text(t, "run location", chromedp.Location()); !strings.Contains(runURL, "/runs/") {
		t.Fatalf("the published job page went to %s, not the run", runURL)
	}
	runText := b.text(t, "read the run", chromedp.Text(chromedp.CSS("main")))
	b.median = b.text(t, "read a median", chromedp.Text(chromedp.Search(`//table[contains(@class,"cells")]//tr[th[1]="ML-KEM-768" and td[1]="encaps"]/td[contains(@class,"median")]`)))
	for _, want := range []string{"Comparison with paper001", "C001-01", "not comparable", "portal-runner", "ed25519 signature verifies",
		"ml-dsa-65 signature verifies", "signed bundle"} {
		if !strings.Contains(runText, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if b.median == "" {
		t.Fatalf("no median for ML-KEM-768 encaps on the run page: %q", b.median)
	}
	// The Unit column names the unit the row's numbers are printed in: a bare number beside
	// ns, µs or ms, never "41.2 µs" beside "ns".
	unitCell := b.text(t, "read a unit", chromedp.Text(chromedp.Search(`//table[contains(@class,"cells")]//tr[th[1]="ML-KEM-768" and td[1]="encaps"]/td[4]`)))
	if strings.ContainsAny(b.median, "µm ") || (unitCell != "ns" && unitCell != "µs" && unitCell != "ms") {
		t.Errorf("median %q with unit %q: want a bare number and its time unit in the Unit column", b.median, unitCell)
	}
	if href := b.text(t, "compare link", chromedp.Evaluate[string](`document.getElementById('compare-link').getAttribute('href')`)); !strings.HasPrefix(href, "/compare?runs=") {
		t.Errorf("the run page's compare link is %q", href)
	}
}

// runPageFits: at 1366 px and at 390 px the run page never scrolls sideways and the median
// column is on screen; the tables scroll inside their own boxes.
func (b *session) runPageFits(t *testing.T) {
	for _, w := range []int64{1366, 390} {
		b.do(t, fmt.Sprintf("the run page at %d px", w), chromedp.EmulateViewport(w, 900))
		got := b.text(t, "measure the run page", chromedp.Evaluate[string](`(() => {
			const d = document.documentElement, m = document.querySelector('table.cells tbody td.median').getBoundingClientRect();
			return [d.scrollWidth, window.innerWidth, Math.round(m.left), Math.round(m.right)].join(' ');
		})()`))
		var scrollW, innerW, mLeft, mRight int
		if _, err := fmt.Sscan(got, &scrollW, &innerW, &mLeft, &mRight); err != nil {
			t.Fatalf("run page layout %q: %v", got, err)
		}
		if scrollW > innerW {
			wide := b.text(t, "find what overflows", chromedp.Evaluate[string](`[...document.querySelectorAll('body *')].filter(e =>
				e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-scroll, .heat-scroll, pre')).slice(0, 8)
				.map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).replace(/ /g, '.') : '') + (e.id ? '#' + e.id : '') + ' ' + Math.round(e.getBoundingClientRect().right)).join(', ')`))
			t.Errorf("at %d px the page is %d px wide: the body overflows sideways (%s)", innerW, scrollW, wide)
		}
		if mLeft < 0 || mRight > innerW {
			t.Errorf("at %d px the median column spans %d..%d px: off screen", innerW, mLeft, mRight)
		}
		b.labelsApart(t, w, "the run page")
		b.shot(t, fmt.Sprintf("run-host-%d", w), "")
		b.shot(t, fmt.Sprintf("run-host-plot-%d", w), "figure.plot")
	}
}

// darkMode follows prefers-color-scheme: a dark ground under light text.
func (b *session) darkMode(t *testing.T) {
	colorScheme := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}})
			return err
		})
	}
	b.do(t, "dark mode", colorScheme("dark"))
	colours := b.text(t, "read the colours", chromedp.Evaluate[string](`(() => {
		const lum = c => { const [r, g, b] = c.match(/\d+/g).map(Number); return Math.round((0.2126 * r + 0.7152 * g + 0.0722 * b) / 2.55); };
		const s = getComputedStyle(document.body);
		return lum(s.backgroundColor) + ' ' + lum(s.color);
	})()`))
	var bgLum, fgLum int
	if _, err := fmt.Sscan(colours, &bgLum, &fgLum); err != nil || bgLum > 25 || fgLum < 70 {
		t.Errorf("dark mode: background luminance %d%%, text %d%% (%v): want a dark ground and light text", bgLum, fgLum, err)
	}
	b.do(t, "light mode again", colorScheme("light"), chromedp.EmulateReset())

}

// leaderboard shows the run's number for the host board, labelled with its assurance.
func (b *session) leaderboard(t *testing.T) {
	b.do(t, "leaderboard",
		chromedp.Navigate(b.base+"/leaderboards?algorithm=ML-KEM-768&operation=encaps&metric=latency"),
		chromedp.WaitVisible(chromedp.CSS("table.leaders")),
	)
	board := b.text(t, "read the leaderboard", chromedp.Text(chromedp.CSS("table.leaders tbody")))
	if !strings.Contains(board, "host") || !strings.Contains(board, "portal-runner") || !strings.Contains(board, b.median) {
		t.Errorf("leaderboard row %q does not show host, portal-runner and median %q", board, b.median)
	}

}

// matrixRerun re-runs the TLS matrix with 5 iterations, fewer than its CPU batch of 10: the
// batch is lowered (as pqrepro run lowers it) and the job page says so; the heat map has 36
// cells with units, and at 390 px the grid scrolls inside its own box, never past the
// viewport.
func (b *session) matrixRerun(t *testing.T) {
	b.startRerun(t, "paper000/matrix", "5")
	if note := b.text(t, "read the job's note", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(note, "spec.tls.batch lowered to 5") {
		t.Errorf("the job page does not say the CPU batch was lowered to the 5 iterations:\n%s", note)
	}
	b.do(t, "follow the matrix job", chromedp.WaitVisible(chromedp.ID("run-link")))
	// The job page may redraw its link while it is clicked: follow its address instead.
	matrixRun := b.text(t, "the matrix run's address", chromedp.Evaluate[string](`document.getElementById('run-link').href`))
	b.do(t, "open the matrix run at 390 px",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(matrixRun),
		chromedp.WaitVisible(chromedp.ID("heatmap-title")),
	)
	layout := b.text(t, "measure the heat map", chromedp.Evaluate[string](`(() => {
		const box = document.querySelector('.heat-scroll'), r = box.getBoundingClientRect();
		const cells = [...document.querySelectorAll('.heat-grid td.heat')];
		const units = cells.filter(td => td.querySelector('.heat-value') && /^[0-9.]+ (µs|ms)$/.test(td.querySelector('.heat-value').textContent.trim())
			&& /^[0-9.]+ (µs|ms) – [0-9.]+ (µs|ms)$/.test(td.querySelector('.heat-spread').textContent.trim())).length;
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
		t.Errorf("heat map: %d cells, %d with a median and its p25 – p75 in µs or ms, want 36 and 36", cells, units)
	}
	b.shot(t, "heatmap-390", ".heat-scroll")
	b.do(t, "the matrix run at 1366 px", chromedp.EmulateViewport(1366, 900), chromedp.WaitVisible(chromedp.ID("heatmap-title")))
	b.shot(t, "heatmap-1366", ".heat-scroll")
	b.do(t, "back to the desktop size", chromedp.EmulateReset())

}

// unknownKey: a bundle signed by an unknown key is refused with the reason.
func (b *session) unknownKey(t *testing.T) {
	b.do(t, "submit an unknown key's bundle",
		chromedp.Navigate(b.base+"/submit"),
		chromedp.WaitVisible(chromedp.ID("bundle")),
		chromedp.SetUploadFiles(chromedp.ID("bundle"), []string{b.bundle}),
		chromedp.Click(chromedp.ID("submit-bundle")),
		chromedp.WaitVisible(chromedp.ID("submit-result")),
	)
	result := b.text(t, "read the submission result", chromedp.Text(chromedp.ID("submit-result")))
	if !strings.Contains(result, "Refused") || !strings.Contains(result, "unknown key") {
		t.Errorf("submission result %q, want a refusal naming the unknown key", result)
	}
}

// riscvFirmware: a RISC-V ELF offered as Cortex-M4 firmware is refused with the reason beside
// the file field, the form keeps what was typed, and nothing is stored.
func (b *session) riscvFirmware(t *testing.T) {
	riscv := filepath.Join(b.tmp, "riscv.elf")
	elfHeader := make([]byte, 256)
	copy(elfHeader, []byte{0x7f, 'E', 'L', 'F', 1, 1, 1})
	elfHeader[16], elfHeader[18], elfHeader[20], elfHeader[40] = 2, 243, 1, 52 // ET_EXEC, EM_RISCV, version 1, e_ehsize
	if err := os.WriteFile(riscv, elfHeader, 0o644); err != nil {
		t.Fatal(err)
	}
	b.do(t, "upload a RISC-V ELF as Cortex-M4 firmware",
		chromedp.Navigate(b.base+"/firmware"),
		chromedp.WaitVisible(chromedp.ID("fw-file")),
		chromedp.SetUploadFiles(chromedp.ID("fw-file"), []string{riscv}),
		chromedp.SendKeys(chromedp.ID("fw-class"), "qemu-mps2-an386"),
		chromedp.SendKeys(chromedp.ID("fw-toolchain"), "riscv32-unknown-elf-gcc 14"),
		chromedp.SendKeys(chromedp.ID("fw-source"), "https://example.org/fw"),
		chromedp.SendKeys(chromedp.ID("fw-commit"), "0123abcd"),
		chromedp.Click(chromedp.ID("fw-upload")),
		chromedp.WaitVisible(chromedp.ID("fw-file-error")),
	)
	refusal := b.text(t, "read the firmware refusal", chromedp.Text(chromedp.ID("fw-file-error")))
	if !strings.Contains(refusal, "EM_RISCV") || !strings.Contains(refusal, "qemu-mps2-an386") {
		t.Errorf("firmware refusal %q does not say the ELF is RISC-V and the class needs ARM", refusal)
	}
	kept := b.text(t, "read the refused form's fields", chromedp.Evaluate[string](`['fw-class', 'fw-toolchain', 'fw-source', 'fw-commit'].map(id => document.getElementById(id).value).join(' ')`))
	if kept != "qemu-mps2-an386 riscv32-unknown-elf-gcc 14 https://example.org/fw 0123abcd" {
		t.Errorf("the refused firmware form holds %q, not what was typed", kept)
	}
	if fw, err := http.Get(b.base + "/firmware"); err == nil {
		b, _ := io.ReadAll(fw.Body)
		fw.Body.Close()
		if strings.Contains(string(b), "riscv.elf") {
			t.Error("the refused firmware is listed")
		}
	}

}

// rerunFormWithFirmware uploads the checkout's qemu-mps2-an386 build (skipped when firmware/build
// has none: make -C firmware qemu-mps2-an386), then opens the re-run form, whose firmware list
// now holds a long option: at 390 and 1366 px the page never scrolls sideways and the
// "Re-run on this board" button is on screen.
func (b *session) rerunFormWithFirmware(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "firmware", "build", "qemu-mps2-an386")
	elf := filepath.Join(dir, "pqrepro-fw.elf")
	if _, err := os.Stat(elf); err != nil {
		t.Skipf("no firmware build to upload (%v): make -C firmware qemu-mps2-an386", err)
	}
	b.do(t, "upload the qemu-mps2-an386 build",
		chromedp.EmulateReset(),
		chromedp.Navigate(b.base+"/firmware"),
		chromedp.WaitVisible(chromedp.ID("fw-file")),
		chromedp.SetUploadFiles(chromedp.ID("fw-file"), []string{elf}),
		chromedp.SetUploadFiles(chromedp.ID("fw-metadata"), []string{filepath.Join(dir, "metadata.json")}),
		chromedp.SendKeys(chromedp.ID("fw-class"), "qemu-mps2-an386"),
		chromedp.SendKeys(chromedp.ID("fw-source"), "https://example.org/fw"),
		chromedp.SendKeys(chromedp.ID("fw-commit"), "0123abcd"),
		chromedp.Click(chromedp.ID("fw-upload")),
	)
	b.wait(t, "the upload is listed", `!document.querySelector('.error-message') && document.body.innerText.includes('pqrepro-fw.elf')`)
	for _, w := range []int64{390, 1366} {
		b.do(t, fmt.Sprintf("the re-run form at %d px", w), chromedp.EmulateViewport(w, 844),
			chromedp.Navigate(b.base+"/experiments/paper001/mlkem"), chromedp.WaitVisible(chromedp.CSS("form.rerun button[type=submit]")))
		if n := b.count(t, `form.rerun select[name="firmware"] option`); n < 2 {
			t.Errorf("the re-run form offers %d firmware options, want the uploaded build", n)
		}
		b.fits(t, w, "/experiments/paper001/mlkem (re-run form)", "")
		got := b.text(t, "measure the button", chromedp.Evaluate[string](`String(Math.round(document.querySelector('form.rerun button[type=submit]').getBoundingClientRect().right))`))
		var right int64
		fmt.Sscan(got, &right)
		if right > w || right <= 0 {
			t.Errorf("at %d px \"Re-run on this board\" ends at x = %d: off screen", w, right)
		}
	}
	b.do(t, "back to the desktop size", chromedp.EmulateReset())
}

// secondRerun re-runs paper001/mlkem again, to compare with the first.
func (b *session) secondRerun(t *testing.T) {
	b.startRerun(t, "paper001/mlkem", "6")
	b.do(t, "follow the second job", chromedp.WaitVisible(chromedp.ID("run-link")))
}

// browse at a width: list, filter, page, compare, the scheme table. The page body never
// scrolls sideways and the median column stays on screen.
func (b *session) browse(t *testing.T, width int64) {
	b.do(t, fmt.Sprintf("list runs at %d px", width), chromedp.EmulateViewport(width, 900), chromedp.Navigate(b.base+"/runs"), chromedp.WaitVisible(chromedp.CSS("table.runs-list")))
	if n := b.count(t, "table.runs-list tbody tr"); n != 3 {
		t.Errorf("/runs lists %d runs, want 3", n)
	}
	b.fits(t, width, "/runs", "")
	b.do(t, "filter by experiment",
		chromedp.SetValue(chromedp.CSS(`select[name="experiment"]`), "paper001/mlkem"),
		chromedp.Click(chromedp.ID("apply-filters")))
	b.wait(t, "filtered list", `location.search.includes('experiment=paper001%2Fmlkem') && document.querySelector('table.runs-list')`)
	if n := b.count(t, "table.runs-list tbody tr"); n != 2 {
		t.Errorf("/runs filtered by paper001/mlkem lists %d runs, want 2", n)
	}
	b.do(t, "first page of one", chromedp.Navigate(b.base+"/runs?experiment=paper001%2Fmlkem&limit=1"), chromedp.WaitVisible(chromedp.ID("next-page")))
	first := b.text(t, "first page", chromedp.Text(chromedp.CSS("table.runs-list tbody")))
	b.do(t, "next page", chromedp.Click(chromedp.ID("next-page")))
	b.wait(t, "second page", `location.search.includes('after=') && document.querySelector('table.runs-list')`)
	second := b.text(t, "second page", chromedp.Text(chromedp.CSS("table.runs-list tbody")))
	end := b.text(t, "end of the list", chromedp.Text(chromedp.CSS("nav.pager")))
	if first == second || b.count(t, "table.runs-list tbody tr") != 1 || !strings.Contains(end, "End of the list") {
		t.Errorf("paging by one: %q then %q (pager %q)", first, second, end)
	}
	b.do(t, "pick both runs", chromedp.Navigate(b.base+"/runs?experiment=paper001%2Fmlkem"), chromedp.WaitVisible(chromedp.ID("compare-selected")))
	b.text(t, "tick", chromedp.Evaluate[string](`(() => { document.querySelectorAll('input[name="run"]').forEach(c => c.checked = true); return 'ok'; })()`))
	b.do(t, "compare them", chromedp.Click(chromedp.ID("compare-selected")))
	b.wait(t, "compare page", `document.getElementById('compared')`)
	cmp := b.text(t, "read the comparison", chromedp.Text(chromedp.ID("compared")))
	if !strings.Contains(cmp, "ML-KEM-768 encaps") || !strings.Contains(cmp, "noise") {
		t.Errorf("comparison of two re-runs:\n%s", cmp)
	}
	if b.count(t, "svg.chart") < 2 {
		t.Errorf("the comparison draws no overlaid figures")
	}
	b.fits(t, width, "/compare", "table.compare-cells tbody tr td.median")
	b.labelsApart(t, width, "/compare")
	// From one run, the picker adds a second: "Compare with…" is never a dead end.
	firstRun := b.text(t, "the first run compared", chromedp.Evaluate[string](`document.querySelector('table.compare-runs tbody a').getAttribute('href').split('/').pop()`))
	b.do(t, "compare one run", chromedp.Navigate(b.base+"/compare?runs="+firstRun), chromedp.WaitVisible(chromedp.CSS("ul.compare-candidates a")))
	b.fits(t, width, "/compare with one run", "")
	b.do(t, "add a run from the picker", chromedp.Click(chromedp.CSS("ul.compare-candidates a")))
	b.wait(t, "two runs compared", `document.getElementById('compared') && document.querySelectorAll('table.compare-runs tbody tr').length === 2`)
	b.do(t, "scheme table", chromedp.Navigate(b.base+"/schemes?assurance=host&board=host"), chromedp.WaitVisible(chromedp.CSS("table.scheme-table")))
	// One table per quantity (key form, message size): keygen has no key form, the
	// encapsulation cells are timed from encoded keys.
	schemes := b.text(t, "read the scheme tables", chromedp.Evaluate[string](`[...document.querySelectorAll('table.scheme-table')].map(t => t.innerText).join('\n')`))
	if !strings.Contains(schemes, "ML-KEM-768") || !strings.Contains(schemes, "decaps") {
		t.Errorf("scheme table:\n%s", schemes)
	}
	b.fits(t, width, "/schemes", "table.scheme-table tbody tr td.median")
	// pqm4's table: the widest page, every figure of the dataset; it scrolls inside its boxes.
	b.do(t, "pqm4 table", chromedp.Navigate(b.base+"/datasets/pqm4"), chromedp.WaitVisible(chromedp.CSS("table.pqm4-table")))
	if n := b.count(t, "data.pqm4-fig"); n < 2000 {
		t.Errorf("/datasets/pqm4 shows %d figures", n)
	}
	b.fits(t, width, "/datasets/pqm4", "")
	b.do(t, "back to the desktop size", chromedp.EmulateReset())
}

// onlyReruns: the API lists only the three re-runs.
func (b *session) onlyReruns(t *testing.T) {
	resp, err := http.Get(b.base + "/api/v1/runs")
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
