package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"pqrepro/artifacts"
	"pqrepro/internal/webclient"
	"pqrepro/portal/translog"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// logFlags are verify's transparency-log options.
type logFlags struct {
	log, logKey, trust, state string
	witnesses, policies       stringList
	quorum                    int
	timeout, request          time.Duration
}

func (f *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.log, "log", "", "check the bundle's inclusion in a transparency log: the portal's URL or a directory copy of its log files")
	fs.StringVar(&f.logKey, "log-key", os.Getenv("PQREPRO_LOG_KEY"), "pin the log's key (vkey, as `pqrepro serve` prints it)")
	fs.Var(&f.witnesses, "witness", "pin a witness key (vkey; repeat for each key, both types of one witness)")
	fs.IntVar(&f.quorum, "quorum", 0, "how many pinned witnesses must have cosigned (default: all)")
	fs.StringVar(&f.trust, "trust", "", "a JSON trust file {\"log_key\", \"witnesses\", \"quorum\"} instead of the flags")
	fs.StringVar(&f.state, "log-state", "", "the file remembering the last checkpoint seen (default: in the user config directory)")
	fs.Var(&f.policies, "policy", "require a witness policy (a file in the Sigsum/torchwood text form, e.g. a pinned copy of the log's /log/policy); repeatable")
	fs.DurationVar(&f.timeout, "log-timeout", time.Minute, "longest the whole log check may take")
	requestTimeoutFlag(fs, &f.request)
}

// requestTimeoutFlag registers --request-timeout: the bound of one request to a log or
// portal, and of a stall within it.
func requestTimeoutFlag(fs *flag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "request-timeout", webclient.Default.Request, "longest one request to the log may take (and may go without a byte)")
}

// boundedClient is the HTTP client of the log commands: every request at most d (and at most
// d without a byte).
func boundedClient(d time.Duration) *http.Client {
	cfg := webclient.Default
	if d > 0 {
		cfg.Header, cfg.Stall, cfg.Request = d, d, d
	}
	return webclient.New(cfg)
}

// witnessPolicies reads the --policy files; a policy's log key must be the pinned one.
func (f *logFlags) witnessPolicies(logKey string) ([]translog.Policy, error) {
	var out []translog.Policy
	for _, file := range f.policies {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		p, err := translog.ParsePolicy(b)
		if err != nil {
			return nil, fmt.Errorf("--policy %s: %w", file, err)
		}
		if p.LogKey != logKey {
			return nil, fmt.Errorf("--policy %s names the log key %s, not the pinned %s", file, p.LogKey, logKey)
		}
		if p.Name == "" {
			p.Name = filepath.Base(file)
		}
		out = append(out, p)
	}
	return out, nil
}

func (f *logFlags) trustPolicy() (translog.Trust, error) {
	t := translog.Trust{LogKey: f.logKey, Witnesses: f.witnesses, Quorum: f.quorum}
	if f.trust != "" {
		b, err := os.ReadFile(f.trust)
		if err != nil {
			return t, err
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return t, fmt.Errorf("trust file %s: %w", f.trust, err)
		}
	}
	if t.LogKey == "" {
		return t, usageError{"--log needs the log's key: --log-key VKEY or --trust FILE"}
	}
	return t, nil
}

func defaultStateFile(kind, origin string) string {
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, origin)
	return filepath.Join(dir, "pqrepro", kind+"-"+safe+".json")
}

// verifyInLog checks that the bundle archive at path is in the log: the checkpoint's log
// signature and pinned cosignatures, consistency with the last checkpoint seen, and the
// leaf's inclusion through the tiles. It prints what held; any failure names what failed.
func verifyInLog(ctx context.Context, path string, f *logFlags, stdout io.Writer) error {
	t, err := f.trustPolicy()
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s: --log checks the .tar.gz as published (its digest is the log's leaf), not a directory", path)
	}
	policies, err := f.witnessPolicies(t.LogKey)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	digest := artifacts.Digest(data)
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("the log check took longer than --log-timeout %v", f.timeout))
		defer cancel()
	}
	src := translog.OpenSourceWith(f.log, boundedClient(f.request))
	msg, err := src.Get(ctx, translog.CheckpointFile)
	if err != nil {
		return fmt.Errorf("log %s: %w", f.log, logFetchError(ctx, err))
	}
	vc, err := translog.VerifyCheckpoint(msg, t)
	if err != nil {
		return fmt.Errorf("log %s: FAILED: %w", f.log, err)
	}
	var results []translog.PolicyResult
	for _, p := range policies {
		r, err := translog.CheckPolicy(msg, p)
		if err != nil {
			return fmt.Errorf("log %s: FAILED: policy %s: %w", f.log, p.Name, err)
		}
		if !r.Satisfied {
			return fmt.Errorf("log %s: FAILED: the checkpoint does not satisfy the witness policy %s", f.log, r)
		}
		results = append(results, r)
	}
	stateFile := f.state
	if stateFile == "" {
		stateFile = defaultStateFile("log-seen", vc.Origin)
	}
	seen, err := translog.LoadSeen(stateFile)
	if err != nil {
		return err
	}
	if err := translog.CheckConsistent(ctx, src, seen, vc.Checkpoint); err != nil {
		if errors.Is(err, translog.ErrFetch) {
			return fmt.Errorf("log %s: not checked: %w", f.log, logFetchError(ctx, err))
		}
		return fmt.Errorf("log %s: FAILED: %w (state %s)", f.log, err, stateFile)
	}
	found, err := translog.ProveBundle(ctx, src, vc.Checkpoint, digest)
	if errors.Is(err, translog.ErrFetch) {
		return fmt.Errorf("log %s: not checked: %w", f.log, logFetchError(ctx, err))
	}
	if err != nil {
		return fmt.Errorf("log %s: FAILED: %w", f.log, err)
	}
	if err := translog.SaveSeen(stateFile, vc.Checkpoint); err != nil {
		return fmt.Errorf("remember checkpoint %d in %s: %w", vc.Size, stateFile, err)
	}
	fmt.Fprintf(stdout, "ok  checkpoint of log %s (size %d) is signed by the pinned log key\n", vc.Origin, vc.Size)
	if seen != nil {
		fmt.Fprintf(stdout, "ok  consistent with the checkpoint of size %d seen before (%s)\n", seen.Size, stateFile)
	}
	fmt.Fprintf(stdout, "ok  bundle %s is leaf %d: run %d, published %s; its inclusion proof holds through the tiles\n",
		digest, found.Index, found.Leaf.RunID, found.Leaf.Published.Format(time.RFC3339))
	for _, r := range results {
		fmt.Fprintf(stdout, "ok  witness policy %s\n", r)
	}
	if len(vc.Witnessed) > 0 {
		fmt.Fprintf(stdout, "ok  cosigned by pinned witnesses: %s\n", strings.Join(vc.Witnessed, ", "))
	} else if len(results) == 0 || allQuorumNone(results) {
		fmt.Fprintf(stdout, "NOTE no pinned witness cosigned this checkpoint: the log's signature alone does not show that the operator did not fork the log\n")
	}
	return nil
}

func allQuorumNone(rs []translog.PolicyResult) bool {
	for _, r := range rs {
		if r.Threshold > 0 {
			return false
		}
	}
	return true
}

// logFetchError says why a file of the log could not be read: the whole check's deadline
// (its cause), an interruption (context.Canceled, exit 130), or the request's own error.
func logFetchError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w, nothing was verified", context.Cause(ctx))
	}
	return err
}

// witnessKey is a witness's identity file in its key directory.
type witnessKey struct {
	Name string `json:"name"`
	Seed string `json:"seed"` // hex, translog.CosignerSeedSize bytes
}

func loadOrCreateWitness(dir, name string) (*translog.Cosigner, bool, error) {
	file := filepath.Join(dir, "witness.key.json")
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		if name == "" {
			return nil, false, usageError{"a new witness needs --name (a schema-less URL, e.g. witness.example.org/w1)"}
		}
		seed := make([]byte, translog.CosignerSeedSize)
		rand.Read(seed)
		c, err := translog.NewCosigner(name, seed)
		if err != nil {
			return nil, false, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, false, err
		}
		out, _ := json.MarshalIndent(witnessKey{Name: name, Seed: hex.EncodeToString(seed)}, "", "  ")
		if err := os.WriteFile(file, append(out, '\n'), 0o600); err != nil {
			return nil, false, err
		}
		return c, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	var k witnessKey
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, false, fmt.Errorf("witness key %s: %w", file, err)
	}
	seed, err := hex.DecodeString(k.Seed)
	if err != nil {
		return nil, false, fmt.Errorf("witness key %s: seed: %w", file, err)
	}
	if name != "" && name != k.Name {
		return nil, false, fmt.Errorf("witness key %s is named %q, not %q", file, k.Name, name)
	}
	c, err := translog.NewCosigner(k.Name, seed)
	return c, false, err
}

// cmdWitness follows a log: fetch its checkpoint, check it against the last one seen
// (refusing a fork or rollback loudly), cosign it and submit the cosignature.
func cmdWitness(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("witness", flag.ContinueOnError)
	logURL := fs.String("log", "", "the portal's URL")
	keyDir := fs.String("key", "", "the witness's key and state directory (made on first use)")
	name := fs.String("name", "", "the witness's name, for a new key (e.g. witness.example.org/w1)")
	logKey := fs.String("log-key", os.Getenv("PQREPRO_LOG_KEY"), "pin the log's key (vkey)")
	once := fs.Bool("once", false, "cosign once and exit")
	register := fs.Bool("register", false, "print the keys and a fresh proof of possession for the portal's administrator, submit nothing")
	interval := fs.Duration("interval", 30*time.Second, "time between checkpoints")
	listen := fs.String("listen", "", "serve C2SP tlog-witness add-checkpoint on this address (host:port) for the log to push to, instead of following it")
	var request time.Duration
	requestTimeoutFlag(fs, &request)
	if _, err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if (*logURL == "" && *listen == "") || *keyDir == "" || *logKey == "" {
		return usageError{"witness needs --log URL (or --listen ADDR), --key DIR and --log-key VKEY"}
	}
	c, created, err := loadOrCreateWitness(*keyDir, *name)
	if err != nil {
		return err
	}
	ed, ml := c.VKeys()
	if created {
		fmt.Fprintf(stdout, "made witness %s in %s\n", c.Name, *keyDir)
	}
	lk, err := translog.ParseVKey(*logKey)
	if err != nil {
		return fmt.Errorf("--log-key: %w", err)
	}
	stateFile := filepath.Join(*keyDir, defaultStateName(lk.Name()))
	if *listen != "" {
		return serveWitness(ctx, *listen, &translog.WitnessServer{LogKey: *logKey, Cosigner: c, StateFile: stateFile}, stdout)
	}
	client := boundedClient(request)
	w := &translog.Witnessing{Src: translog.OpenSourceWith(*logURL, client), LogKey: *logKey, Cosigner: c,
		StateFile: stateFile}
	for {
		wait := *interval
		vc, cosigned, err := w.Once(ctx)
		switch {
		case errors.Is(err, translog.ErrInconsistent):
			return fmt.Errorf("REFUSED: the log showed a checkpoint that does not extend the one this witness saw: %w", err)
		case err == nil && *register:
			fmt.Fprintf(stdout, "witness %s\ned25519: %s\nmldsa44: %s\nproof (the log's checkpoint %d, cosigned now; valid for a few minutes):\n%s",
				c.Name, ed, ml, vc.Size, cosigned)
			return nil
		case err == nil:
			err = submitCosignature(ctx, client, *logURL, cosigned)
			if err != nil {
				err = fmt.Errorf("submit the cosignature of checkpoint %d: %w", vc.Size, err)
			} else {
				fmt.Fprintf(stdout, "cosigned checkpoint %d of %s\n", vc.Size, vc.Origin)
			}
		}
		if err != nil {
			if *once || *register || ctx.Err() != nil {
				return err
			}
			// Running as a service, a failure that is not a fork (the portal unreachable, a
			// checkpoint the log replaced while this one was being cosigned, a checkpoint that
			// does not verify) cosigns nothing and is tried again soon.
			// A refusal that will not change by itself (keys not registered, a malformed
			// note) is retried at the interval, not every few seconds.
			wait = min(*interval, 5*time.Second)
			var ref *refusal
			if errors.As(err, &ref) && ref.lasting() {
				wait = *interval
			}
			fmt.Fprintf(stdout, "not cosigned: %v (trying again in %v)\n", err, wait)
		} else if *once {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// serveWitness serves ws (C2SP tlog-witness add-checkpoint) on addr until ctx ends.
func serveWitness(ctx context.Context, addr string, ws *translog.WitnessServer, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ed, ml := ws.Cosigner.VKeys()
	fmt.Fprintf(stdout, "witness %s serving add-checkpoint on http://%s for %s\n  register it on the portal's admin page with URL http://%s (as it reaches this host),\n  ed25519: %s\n  mldsa44: %s\n",
		ws.Cosigner.Name, ln.Addr(), strings.SplitN(ws.LogKey, "+", 2)[0], ln.Addr(), ed, ml)
	srv := &http.Server{Handler: ws, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return ctx.Err()
	case err := <-errc:
		return err
	}
}

func defaultStateName(origin string) string {
	return filepath.Base(defaultStateFile("seen", origin))
}

// submitCosignature posts a cosigned checkpoint to the portal's API. logURL is the portal's
// address or its log's URL as `pqrepro serve` prints it (".../log"); either names the same
// portal. A refusal is returned with the portal's own message, never a whole page.
func submitCosignature(ctx context.Context, client *http.Client, logURL string, note []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, translog.PortalURL(logURL)+"/api/v1/log/cosignature", bytes.NewReader(note))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("post the cosignature: %w", webclient.Transport(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := webclient.ReadBody(resp, 64<<10)
		return &refusal{status: resp.StatusCode, text: resp.Status, msg: answerMessage(resp.Header.Get("Content-Type"), b)}
	}
	return nil
}

// refusal is a portal's answer refusing a cosignature.
type refusal struct {
	status    int
	text, msg string
}

func (r *refusal) Error() string { return "portal answered " + r.text + ": " + r.msg }

// lasting is true for a refusal that retrying soon will not change: a 4xx other than a
// conflict (the checkpoint moved on) or a rate limit.
func (r *refusal) lasting() bool {
	return r.status >= 400 && r.status < 500 && r.status != http.StatusConflict && r.status != http.StatusTooManyRequests
}

// answerMessage is the short reason in an error answer: a JSON answer's "error" field, the
// first line of a plain-text one, and for an HTML page only that it was one (a page means the
// URL is not the API's).
func answerMessage(contentType string, body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	switch {
	case strings.HasPrefix(contentType, "application/json") && json.Unmarshal(body, &e) == nil && e.Error != "":
		return e.Error
	case strings.HasPrefix(contentType, "text/html"):
		return "an HTML page, not an API answer (is the URL the portal's or its log's?)"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "…"
	}
	return line
}
