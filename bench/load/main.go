// Command load measures a running portal's pages: it requests each path n times from c
// concurrent clients (keep-alive connections, gzip accepted like a browser), checks that
// every answer is 200 with its whole body read, and prints per path the requests, p50, p99
// and max latency (request sent to last body byte), requests per second and bytes per
// response (as sent, compressed when the portal compressed), and, with -pid, the portal's
// resident memory (VmRSS, VmHWM of /proc/PID/status) before and after, its CPU time per
// request and the share of the machine's CPU other processes used meanwhile (from
// /proc/PID/stat and /proc/stat), which says how far a shared machine disturbed the figures.
//
//	go run ./bench/load -url http://127.0.0.1:8080 -c 16 -n 400 -pid 1234 / /papers/paper001
//	go run ./bench/load -url http://127.0.0.1:8080 -discover -json
//
// A path with any answer that is not 200, or any request that failed, is marked failed and
// the command exits 1 after printing everything; its latencies count only the 200s. Paths
// are measured one after another, so each has the portal to itself. -discover reads the
// portal's own pages and API for real paths (every paper, board and experiment linked, a
// run, a leaderboard, filtered run lists, the JSON API) so nobody needs to know ids.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// config is the command's flags.
type config struct {
	// URL is the portal's base URL, without a trailing slash.
	URL string
	// Concurrency is the number of clients requesting at once; Requests the number of
	// requests per path; Warmup the untimed requests per path before them.
	Concurrency, Requests, Warmup int
	// PID is the portal's process (0: no memory figures).
	PID int
	// Timeout bounds one request.
	Timeout time.Duration
}

// result is one path's figures. Latencies are of the 200 answers only.
type result struct {
	Path     string  `json:"path"`
	Requests int     `json:"requests"`
	OK       int     `json:"ok"`
	Non200   int     `json:"non200"`
	Errors   int     `json:"errors"`
	Failed   bool    `json:"failed"`
	P50MS    float64 `json:"p50Ms"`
	P99MS    float64 `json:"p99Ms"`
	MaxMS    float64 `json:"maxMs"`
	ReqPerS  float64 `json:"reqPerS"`
	Bytes    int64   `json:"bytesPerResponse"`
	Gzip     bool    `json:"gzip"`
	// Statuses counts the answers that were not 200 by status; FirstError is the first
	// failed request's error.
	Statuses   map[int]int `json:"statuses,omitempty"`
	FirstError string      `json:"firstError,omitempty"`
	// RSSAfterKB is the portal's VmRSS after the path (with -pid).
	RSSAfterKB int64 `json:"rssAfterKB,omitempty"`
	// CPUMSPerReq is the portal's CPU time (user + system) per timed request, and
	// OthersCPU the share of the machine's CPU capacity that other processes (this tool
	// among them) used meanwhile, 0..1 (with -pid, from /proc; warm-up excluded). Both are
	// measured only when CPUMeasured: the path took at least 2 s of machine time.
	CPUMeasured bool    `json:"cpuMeasured"`
	CPUMSPerReq float64 `json:"cpuMsPerRequest"`
	OthersCPU   float64 `json:"othersCpuShare"`
}

// memory is a process's resident memory in KiB.
type memory struct {
	RSSKB int64 `json:"vmRSSKB"`
	HWMKB int64 `json:"vmHWMKB"`
}

// report is everything one invocation measured.
type report struct {
	URL         string   `json:"url"`
	Concurrency int      `json:"concurrency"`
	Requests    int      `json:"requestsPerPath"`
	Warmup      int      `json:"warmupPerPath"`
	Started     string   `json:"started"`
	Paths       []result `json:"paths"`
	Before      *memory  `json:"memoryBefore,omitempty"`
	After       *memory  `json:"memoryAfter,omitempty"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "the portal's base URL")
	flag.IntVar(&cfg.Concurrency, "c", 16, "concurrent clients")
	flag.IntVar(&cfg.Requests, "n", 400, "timed requests per path")
	flag.IntVar(&cfg.Warmup, "warmup", 1, "untimed requests per path before the timed ones (their answers are checked too)")
	flag.IntVar(&cfg.PID, "pid", 0, "the portal's process id, for its resident memory (Linux /proc)")
	flag.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "limit of one request")
	pathsFile := flag.String("paths", "", "file of paths, one a line (# starts a comment)")
	discover := flag.Bool("discover", false, "add paths found on the portal's own pages and API")
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	list := flag.Bool("list", false, "print the paths (after -discover) one a line and exit, for a -paths file")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: load [flags] [PATH...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx := context.Background()
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	paths := flag.Args()
	if *pathsFile != "" {
		p, err := readPaths(*pathsFile)
		if err != nil {
			fatal(err)
		}
		paths = append(paths, p...)
	}
	client := newClient(cfg)
	if *discover {
		p, err := discoverPaths(ctx, client, cfg.URL)
		if err != nil {
			fatal(err)
		}
		paths = append(paths, p...)
	}
	if len(paths) == 0 {
		fatal(errors.New("no paths: give PATH arguments, -paths FILE or -discover"))
	}
	paths = dedupe(paths)
	if *list {
		for _, p := range paths {
			fmt.Println(p)
		}
		return
	}
	rep, err := measure(ctx, client, cfg, paths, os.Stderr)
	if err != nil {
		fatal(err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fatal(err)
		}
	} else {
		rep.table(os.Stdout)
	}
	for _, r := range rep.Paths {
		if r.Failed {
			os.Exit(1)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "load:", err)
	os.Exit(2)
}

// newClient is a client like a browser's: kept-alive connections, enough for every worker,
// and gzip asked for explicitly so bodies arrive as sent and are counted so.
func newClient(cfg config) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // Accept-Encoding is set by hand; bodies are read as sent
	}
	return &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// readPaths reads a file of paths, one a line; blank lines and # comments are skipped.
func readPaths(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read paths: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%s:%d: path %q does not start with /", name, ln, p)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read paths %s: %w", name, err)
	}
	return out, nil
}

func dedupe(paths []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// get fetches one path, reading the whole body; it returns the status, the bytes read and
// whether the body was gzip-encoded.
func get(ctx context.Context, client *http.Client, base, path string) (int, int64, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, 0, false, err
	}
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,*/*;q=0.8")
	req.Header.Set("User-Agent", "pqrepro-bench-load")
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, false, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return resp.StatusCode, n, false, fmt.Errorf("read the body of %s: %w", path, err)
	}
	return resp.StatusCode, n, resp.Header.Get("Content-Encoding") == "gzip", nil
}

// measure requests every path in turn and returns the report; progress goes to log.
func measure(ctx context.Context, client *http.Client, cfg config, paths []string, log io.Writer) (*report, error) {
	if cfg.Concurrency < 1 || cfg.Requests < 1 || cfg.Warmup < 0 {
		return nil, fmt.Errorf("want -c ≥ 1, -n ≥ 1 and -warmup ≥ 0, have %d, %d and %d", cfg.Concurrency, cfg.Requests, cfg.Warmup)
	}
	rep := &report{URL: cfg.URL, Concurrency: cfg.Concurrency, Requests: cfg.Requests, Warmup: cfg.Warmup, Started: time.Now().UTC().Format(time.RFC3339)}
	if cfg.PID != 0 {
		m, err := readMemory(cfg.PID)
		if err != nil {
			return nil, err
		}
		rep.Before = &m
	}
	for _, p := range paths {
		var before, after cpuSample
		r := measurePath(ctx, client, cfg, p, func(at *cpuSample) {
			if cfg.PID != 0 {
				*at = sampleCPU(cfg.PID)
			}
		}, &before, &after)
		// /proc counts in hundredths of a second: below 2 s of machine time (1 s on 2 CPUs)
		// the figures would be mostly rounding, and are left out.
		if span := after.total - before.total; cfg.PID != 0 && before.ok && after.ok && r.Requests > 0 && span >= 2 {
			r.CPUMeasured = true
			r.CPUMSPerReq = (after.proc - before.proc) * 1000 / float64(r.Requests)
			r.OthersCPU = max(0, (after.busy-before.busy)-(after.proc-before.proc)) / span
		}
		if cfg.PID != 0 {
			m, err := readMemory(cfg.PID)
			if err != nil {
				return nil, err
			}
			r.RSSAfterKB = m.RSSKB
		}
		fmt.Fprintf(log, "load: %s: %d/%d ok, p50 %.1f ms, p99 %.1f ms\n", p, r.OK, r.Requests, r.P50MS, r.P99MS)
		rep.Paths = append(rep.Paths, r)
	}
	if cfg.PID != 0 {
		m, err := readMemory(cfg.PID)
		if err != nil {
			return nil, err
		}
		rep.After = &m
	}
	return rep, nil
}

// measurePath requests path cfg.Warmup times untimed, then cfg.Requests times from
// cfg.Concurrency workers. Every answer must be 200 with its body read.
func measurePath(ctx context.Context, client *http.Client, cfg config, path string, sample func(*cpuSample), before, after *cpuSample) result {
	r := result{Path: path, Statuses: map[int]int{}}
	fail := func(status int, err error) {
		if err != nil {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
		} else {
			r.Non200++
			r.Statuses[status]++
		}
	}
	for range cfg.Warmup {
		if st, _, _, err := get(ctx, client, cfg.URL, path); err != nil || st != http.StatusOK {
			fail(st, err)
		}
	}
	var (
		mu    sync.Mutex
		lat   []time.Duration
		bytes int64
		gz    bool
		next  int
		wg    sync.WaitGroup
	)
	sample(before)
	start := time.Now()
	for range min(cfg.Concurrency, cfg.Requests) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == cfg.Requests {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				t0 := time.Now()
				st, n, z, err := get(ctx, client, cfg.URL, path)
				d := time.Since(t0)
				mu.Lock()
				r.Requests++
				if err != nil || st != http.StatusOK {
					fail(st, err)
				} else {
					lat = append(lat, d)
					bytes += n
					gz = gz || z
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	sample(after)
	r.OK = len(lat)
	r.Failed = r.Non200 > 0 || r.Errors > 0
	if len(r.Statuses) == 0 {
		r.Statuses = nil
	}
	r.ReqPerS = float64(r.Requests) / wall.Seconds()
	if r.OK > 0 {
		slices.Sort(lat)
		r.P50MS, r.P99MS, r.MaxMS = ms(percentile(lat, 50)), ms(percentile(lat, 99)), ms(lat[len(lat)-1])
		r.Bytes, r.Gzip = bytes/int64(r.OK), gz
	}
	return r
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cpuSample is the CPU seconds a process and the whole machine had used at one moment.
type cpuSample struct {
	ok bool
	// proc is the process's user + system time; busy the machine's non-idle time over
	// all CPUs; total the machine's time over all CPUs (busy + idle + iowait).
	proc, busy, total float64
}

// userHZ is the unit of /proc's CPU times: USER_HZ, 100 on every Linux ABI.
const userHZ = 100

// sampleCPU reads /proc/PID/stat and /proc/stat; ok is false when either is unreadable.
func sampleCPU(pid int) cpuSample {
	ps, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuSample{}
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}
	}
	return parseCPU(string(ps), string(st))
}

// parseCPU takes utime and stime from a /proc/PID/stat line and the aggregate "cpu" line of
// /proc/stat (user nice system idle iowait irq softirq steal ...).
func parseCPU(pidStat, stat string) cpuSample {
	// The command name (field 2) is in parentheses and may hold spaces: fields are
	// counted from the last ')'.
	i := strings.LastIndexByte(pidStat, ')')
	if i < 0 {
		return cpuSample{}
	}
	f := strings.Fields(pidStat[i+1:])
	if len(f) < 13 {
		return cpuSample{}
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)  // field 14
	stt, err2 := strconv.ParseFloat(f[12], 64) // field 15
	line, _, _ := strings.Cut(stat, "\n")
	cf := strings.Fields(line)
	if err1 != nil || err2 != nil || len(cf) < 6 || cf[0] != "cpu" {
		return cpuSample{}
	}
	var total, idle float64
	for k, v := range cf[1:min(len(cf), 9)] { // user..steal; guest time is inside user
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return cpuSample{}
		}
		total += n
		if k == 3 || k == 4 { // idle, iowait
			idle += n
		}
	}
	return cpuSample{ok: true, proc: (ut + stt) / userHZ, busy: (total - idle) / userHZ, total: total / userHZ}
}

// readMemory reads VmRSS and VmHWM of a process from /proc/PID/status.
func readMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	return parseStatus(string(b))
}

// parseStatus takes VmRSS and VmHWM (in kB) from the text of /proc/PID/status.
func parseStatus(text string) (memory, error) {
	var m memory
	var rss, hwm bool
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("/proc status: %s: want \"N kB\", have %q", k, strings.TrimSpace(v))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc status: %s: %w", k, err)
		}
		if k == "VmRSS" {
			m.RSSKB, rss = n, true
		} else {
			m.HWMKB, hwm = n, true
		}
	}
	if !rss || !hwm {
		return m, errors.New("/proc status: VmRSS or VmHWM missing (a kernel thread, or not Linux)")
	}
	return m, nil
}

// table prints the report as an aligned table, then the memory figures.
func (rep *report) table(w io.Writer) {
	fmt.Fprintf(w, "%s, %d requests per path (after %d untimed), %d concurrent clients, keep-alive, gzip accepted\n\n",
		rep.URL, rep.Requests, rep.Warmup, rep.Concurrency)
	width := len("path")
	for _, r := range rep.Paths {
		width = max(width, len(r.Path))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	mem := rep.Before != nil
	head := fmt.Sprintf("%-*s\trequests\tok\tp50 ms\tp99 ms\tmax ms\treq/s\tbytes/resp\tgzip\t", width, "path")
	if mem {
		head += "RSS after MiB\tCPU ms/req\tothers' CPU\t"
	}
	fmt.Fprintln(tw, head+"status\t")
	for _, r := range rep.Paths {
		status := "ok"
		if r.Failed {
			var parts []string
			for _, st := range slices.Sorted(maps.Keys(r.Statuses)) {
				parts = append(parts, fmt.Sprintf("%d×%d", r.Statuses[st], st))
			}
			if r.Errors > 0 {
				parts = append(parts, fmt.Sprintf("%d errors (%s)", r.Errors, r.FirstError))
			}
			status = "FAILED: " + strings.Join(parts, ", ")
		}
		gz := "no"
		if r.Gzip {
			gz = "yes"
		}
		line := fmt.Sprintf("%-*s\t%d\t%d\t%s\t%s\t%s\t%.0f\t%d\t%s\t", width, r.Path, r.Requests, r.OK, f1(r.P50MS, r.OK), f1(r.P99MS, r.OK), f1(r.MaxMS, r.OK), r.ReqPerS, r.Bytes, gz)
		if mem {
			cpu, others := "-", "-"
			if r.CPUMeasured {
				cpu, others = strconv.FormatFloat(r.CPUMSPerReq, 'f', 1, 64), fmt.Sprintf("%.0f%%", 100*r.OthersCPU)
			}
			line += fmt.Sprintf("%.1f\t%s\t%s\t", float64(r.RSSAfterKB)/1024, cpu, others)
		}
		fmt.Fprintln(tw, line+status+"\t")
	}
	tw.Flush()
	if mem {
		fmt.Fprintf(w, "\nportal memory: VmRSS %.1f MiB before, %.1f MiB after; VmHWM %.1f MiB before, %.1f MiB after\n",
			float64(rep.Before.RSSKB)/1024, float64(rep.After.RSSKB)/1024, float64(rep.Before.HWMKB)/1024, float64(rep.After.HWMKB)/1024)
	}
}

// f1 is a latency with one decimal, or "-" when nothing answered 200.
func f1(v float64, ok int) string {
	if ok == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// Links the discovery follows on the portal's pages.
var (
	paperLink      = regexp.MustCompile(`href="(/papers/[A-Za-z0-9_.-]+)"`)
	boardLink      = regexp.MustCompile(`href="(/boards/[A-Za-z0-9_.-]+)"`)
	experimentLink = regexp.MustCompile(`href="(/experiments/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)"`)
	leaderAPILink  = regexp.MustCompile(`href="(/api/v1/leaderboards\?[^"]+)"`)
)

// discoverPaths finds real paths on the portal: the home page, every paper it links, the
// boards overview and every board class it links, the first experiment of each paper, the
// newest run (from the API) with its filtered lists, a leaderboard, and the JSON API.
func discoverPaths(ctx context.Context, client *http.Client, base string) ([]string, error) {
	page := func(path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("discover: %s: %w", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		if err != nil {
			return "", fmt.Errorf("discover: %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("discover: %s answered %s", path, resp.Status)
		}
		return string(b), nil
	}
	links := func(re *regexp.Regexp, html string) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(html, -1) {
			out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
		}
		return dedupe(out)
	}
	home, err := page("/")
	if err != nil {
		return nil, err
	}
	paths := []string{"/"}
	papers := links(paperLink, home)
	paths = append(paths, papers...)
	for _, p := range papers {
		html, err := page(p)
		if err != nil {
			return nil, err
		}
		if ex := links(experimentLink, html); len(ex) > 0 {
			paths = append(paths, ex[0])
		}
	}
	boardsHTML, err := page("/boards")
	if err != nil {
		return nil, err
	}
	boards := links(boardLink, boardsHTML)
	paths = append(paths, "/boards")
	paths = append(paths, boards...)

	// The newest run, and the lists filtered by its paper, board and assurance.
	body, err := page("/api/v1/runs?limit=1")
	if err != nil {
		return nil, err
	}
	var runs []struct {
		ID         int64  `json:"id"`
		Paper      string `json:"paper"`
		Experiment string `json:"experiment"`
		Board      string `json:"board"`
		Level      string `json:"level"`
	}
	if err := json.Unmarshal([]byte(body), &runs); err != nil {
		return nil, fmt.Errorf("discover: /api/v1/runs?limit=1: %w", err)
	}
	paths = append(paths, "/leaderboards")
	lb, err := page("/leaderboards")
	if err != nil {
		return nil, err
	}
	// The page links its board's JSON twin; the same query names the board on the page.
	for _, l := range links(leaderAPILink, lb) {
		if u, err := url.Parse(l); err == nil && u.Query().Get("format") == "" {
			paths = append(paths, "/leaderboards?"+u.RawQuery, l)
			break
		}
	}
	paths = append(paths, "/runs")
	if len(runs) > 0 {
		r := runs[0]
		q := func(k, v string) string { return url.Values{k: {v}}.Encode() }
		paths = append(paths, fmt.Sprintf("/runs/%d", r.ID),
			"/runs?"+q("paper", r.Paper), "/runs?"+q("board", r.Board), "/runs?"+q("assurance", r.Level),
			"/runs?"+q("experiment", r.Experiment),
			fmt.Sprintf("/api/v1/runs/%d", r.ID), "/api/v1/runs?limit=50", "/api/v1/runs?limit=50&"+q("board", r.Board))
	}
	paths = append(paths, "/api/v1/papers")
	return dedupe(paths), nil
}
