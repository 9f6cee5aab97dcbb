package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"pqrepro/artifacts/identity"
	"pqrepro/internal/lb"
)

const (
	replicas    = 3
	runners     = 5
	experiment  = "paper001/mlkem"
	witnessName = "witness.scale-demo.example/w1"
	// killed is the replica that is SIGKILLed midway.
	killed = 2
)

// Demo runs the demonstration and returns what the shared database held at its end. An error
// is a demonstration that could not run (or timed out); the report, when not nil, still says
// what was measured up to then. progress gets a line per step.
func Demo(ctx context.Context, cfg Config, progress io.Writer) (rep *Report, err error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dir, err := os.MkdirTemp("", "pqrepro-scale-demo-")
	if err != nil {
		return nil, err
	}
	// The postgres user must be able to enter the folder (scripts/postgres runs initdb as it).
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	logs := filepath.Join(dir, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		return nil, err
	}
	ps := &procs{logs: logs}
	pgScript := filepath.Join(cfg.Root, "scripts", "postgres")
	pgDir := filepath.Join(dir, "pg")
	var front *http.Server
	defer func() {
		if front != nil {
			front.Close()
		}
		ps.stopAll()
		if _, err := os.Stat(filepath.Join(pgDir, "data", "postmaster.pid")); err == nil {
			if _, err := script(context.Background(), logs, "postgres-stop", pgScript, "stop", pgDir); err != nil {
				fmt.Fprintf(progress, "stop PostgreSQL: %v\n", err)
			}
		}
		if cfg.Keep {
			fmt.Fprintf(progress, "kept %s (logs in %s)\n", dir, logs)
		} else if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(progress, "remove %s: %v\n", dir, err)
		}
	}()

	// PostgreSQL, versitygw and the pqrepro binary.
	say("starting PostgreSQL in %s", pgDir)
	dsn, err := script(ctx, logs, "postgres", pgScript, "start", pgDir)
	if err != nil {
		return nil, err
	}
	gw := cfg.Versitygw
	if gw == "" {
		if gw, err = script(ctx, logs, "versitygw-install", filepath.Join(cfg.Root, "scripts", "versitygw")); err != nil {
			return nil, err
		}
	}
	s3Addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s3Root := filepath.Join(dir, "s3")
	if err := os.MkdirAll(filepath.Join(s3Root, "demo"), 0o755); err != nil { // the bucket
		return nil, err
	}
	access, secret := "demo"+randomHex(6), randomHex(20)
	gwProc, err := ps.start("versitygw", nil, gw, "--access", access, "--secret", secret, "--port", s3Addr, "--quiet", "posix", s3Root)
	if err != nil {
		return nil, err
	}
	if err := waitListening(ctx, gwProc, s3Addr, 30*time.Second); err != nil {
		return nil, err
	}
	say("PostgreSQL %s, versitygw on %s (bucket demo); building pqrepro", dsn, s3Addr)
	bin := filepath.Join(dir, "bin", "pqrepro")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/pqrepro")
	build.Dir = cfg.Root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build pqrepro: %w\n%s", err, out)
	}

	// The balancer's address is the public URL of every replica.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	public := "http://" + ln.Addr().String()
	adminToken := "pqa_" + randomHex(24)
	env := []string{"PQREPRO_S3_ACCESS_KEY=" + access, "PQREPRO_S3_SECRET_KEY=" + secret, "PQREPRO_ADMIN_TOKEN=" + adminToken}
	blobs := "s3://demo/portal?endpoint=" + s3Addr + "&region=us-east-1&tls=false"
	keyFile := filepath.Join(dir, "log.key")
	var urls []string
	var reps []*proc
	for i := range replicas {
		addr, err := freeAddr()
		if err != nil {
			ln.Close()
			return nil, err
		}
		p, err := ps.start(fmt.Sprintf("replica-%d", i), env, bin, "serve", "--addr", addr, "--data", filepath.Join(dir, fmt.Sprintf("replica-%d", i)),
			"--db", dsn, "--blobs", blobs, "--log-key-file", keyFile, "--public-url", public, "--no-local-runner",
			"--lease", cfg.Lease.String(), "--trusted-proxy", "127.0.0.1")
		if err != nil {
			ln.Close()
			return nil, err
		}
		// The first replica migrates the database and makes the log key; the others start after.
		if err := waitHealthy(ctx, p, "http://"+addr+"/healthz", 60*time.Second); err != nil {
			ln.Close()
			return nil, err
		}
		urls = append(urls, "http://"+addr)
		reps = append(reps, p)
	}
	logKey := regexp.MustCompile(`(?m)^transparency log: .*\n\s+(\S+)`).FindStringSubmatch(reps[0].output())
	if logKey == nil {
		ln.Close()
		return nil, fmt.Errorf("replica 0 printed no log key:%s", reps[0].tail())
	}
	bal, err := lb.New(urls...)
	if err != nil {
		ln.Close()
		return nil, err
	}
	front = &http.Server{Handler: bal, ReadHeaderTimeout: 10 * time.Second}
	go front.Serve(ln)
	say("replicas %s behind the balancer %s", strings.Join(urls, ", "), public)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()

	// The administrator signs in through one replica and acts through the others.
	admin := newBrowser(public)
	if err := admin.signIn(ctx, adminToken); err != nil {
		return nil, err
	}

	// Five runners, each with its own single-use enrolment token.
	runnerProcs := map[string]*proc{}
	runnerDirs := map[string]string{}
	for i := range runners {
		name := fmt.Sprintf("demo runner %d", i)
		tok, err := admin.enrolToken(ctx, name, i%replicas)
		if err != nil {
			return nil, err
		}
		keys := filepath.Join(dir, fmt.Sprintf("runner-%d", i))
		p, err := ps.start(fmt.Sprintf("runner-%d", i), nil, bin, "runner", "--portal", public, "--token", tok, "--keys", keys, "--name", name)
		if err != nil {
			return nil, err
		}
		runnerProcs[name], runnerDirs[name] = p, keys
	}
	if err := waitFor(ctx, "five runners to enrol", 60*time.Second, func() (bool, error) {
		for _, p := range runnerProcs {
			if p.exited() {
				return false, fmt.Errorf("%s exited (%v):%s", p.name, p.err, p.tail())
			}
		}
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runners WHERE revoked_at IS NULL`).Scan(&n)
		return n == runners, err
	}); err != nil {
		return nil, err
	}
	say("%d runners enrolled (one token each); queueing %d jobs of %s (host, %d iterations) through the replicas in turn",
		runners, cfg.Jobs, experiment, cfg.Iterations)

	// Queue through the live replicas in turn while the runners lease; the kill waits for
	// the posts in flight (a post cut off by the kill would leave it unknown whether its job
	// was queued).
	rep = &Report{Queued: make([]int, replicas), Dir: dir, Kept: cfg.Keep}
	setup := time.Since(start)
	queueStart := time.Now()
	var gate sync.RWMutex
	var dead atomic.Int32
	dead.Store(-1)
	var next atomic.Int64
	var qmu sync.Mutex
	ids := map[int64]bool{}
	queueErr := make(chan error, 1)
	var queued sync.WaitGroup
	for range 4 {
		queued.Add(1)
		go func() {
			defer queued.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(cfg.Jobs) || ctx.Err() != nil {
					return
				}
				gate.RLock()
				pin := int(i % replicas)
				if pin == int(dead.Load()) {
					pin = (pin + 1) % replicas
				}
				id, err := admin.queueJob(ctx, experiment, cfg.Iterations, pin)
				gate.RUnlock()
				if err != nil {
					select {
					case queueErr <- err:
					default:
					}
					return
				}
				qmu.Lock()
				ids[id] = true
				rep.Queued[pin]++
				qmu.Unlock()
			}
		}()
	}
	queueDone := make(chan struct{})
	go func() { queued.Wait(); close(queueDone) }()
	// The witness registers once the log has its first checkpoint, then follows it.
	type witnessKeys struct {
		ed, ml string
		err    error
	}
	witnessc := make(chan witnessKeys, 1)
	var witnessRestarts atomic.Int32
	go func() {
		ed, ml, err := startWitness(ctx, ps, admin, bin, public, logKey[1], filepath.Join(dir, "witness"), &witnessRestarts)
		if err == nil {
			say("the log has a checkpoint: witness %s registered (ed25519 and ML-DSA-44 keys, proof of possession) and cosigning every second", witnessName)
		}
		witnessc <- witnessKeys{ed, ml, err}
	}()
	var wk *witnessKeys

	waitErr := waitFor(ctx, "every job to be published or failed", cfg.Timeout, func() (bool, error) {
		select {
		case err := <-queueErr:
			return false, err
		case k := <-witnessc:
			if k.err != nil {
				return false, k.err
			}
			wk = &k
		default:
		}
		var published, open, total int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE state = 'published'), COUNT(*) FILTER (WHERE state IN ('queued', 'running')), COUNT(*) FROM jobs`).
			Scan(&published, &open, &total); err != nil {
			return false, err
		}
		if rep.Killed == "" && published >= cfg.Jobs/3 {
			gate.Lock()
			rep.Killed, rep.KilledAt = kill(ctx, db, reps, runnerProcs), published
			dead.Store(killed)
			gate.Unlock()
			say("%d published: %s", published, rep.Killed)
		}
		select {
		case <-queueDone:
			return open == 0 && total == cfg.Jobs && wk != nil, nil
		default:
			return false, nil
		}
	})
	rep.Wall = time.Since(queueStart)
	rep.Interrupted = waitErr != nil
	rep.Setup = setup
	if waitErr == nil {
		say("every job is terminal; waiting for the log to integrate every run and the witness to cosign it")
		if waitErr = waitLog(ctx, db, public, rep); waitErr != nil {
			waitErr = fmt.Errorf("%w; the witness's output:\n%s", waitErr, witnessOutput(logs))
		}
	}
	// What the database holds is counted even after a timeout: then lost says what is missing.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer scancel()
	qmu.Lock()
	if err := rep.count(sctx, db, ids); err != nil {
		qmu.Unlock()
		return rep, errors.Join(waitErr, err)
	}
	qmu.Unlock()
	rep.Served = bal.Served()
	rep.WitnessRestarts = int(witnessRestarts.Load())
	if waitErr != nil {
		return rep, waitErr
	}
	if err := rep.verify(sctx, db, bin, public, logKey[1], wk.ed, wk.ml, dir, runnerDirs); err != nil {
		return rep, err
	}
	return rep, nil
}

// startWitness registers a witness's keys with the proof of possession `pqrepro witness
// --register` prints (which needs the log's first checkpoint: it waits for one), then starts
// the witness's loop. It returns the witness's two verifier keys.
func startWitness(ctx context.Context, ps *procs, admin *browser, bin, public, logKey, dir string, witnessRestarts *atomic.Int32) (string, string, error) {
	err := waitFor(ctx, "the log's first checkpoint", 5*time.Minute, func() (bool, error) {
		_, err := download(ctx, public, "/log/checkpoint")
		return err == nil, nil
	})
	if err != nil {
		return "", "", err
	}
	out, err := exec.CommandContext(ctx, bin, "witness", "--log", public, "--key", dir, "--name", witnessName, "--log-key", logKey, "--register").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("witness --register: %w\n%s", err, out)
	}
	ed := regexp.MustCompile(`(?m)^ed25519: (\S+)$`).FindSubmatch(out)
	ml := regexp.MustCompile(`(?m)^mldsa44: (\S+)$`).FindSubmatch(out)
	_, proof, _ := strings.Cut(string(out), "valid for a few minutes):\n")
	if ed == nil || ml == nil || proof == "" {
		return "", "", fmt.Errorf("witness --register printed:\n%s", out)
	}
	if err := admin.registerWitness(ctx, string(ed[1]), string(ml[1]), proof, 1); err != nil {
		return "", "", err
	}
	// `pqrepro witness` tries again after a failed fetch or submission (an answer cut off by
	// the replica's kill is one) and exits only on a fork; it still runs under a supervisor
	// that would restart it, as a service manager would (its state file keeps the last
	// checkpoint it cosigned across restarts), and the report counts the restarts.
	first, err := ps.start("witness", nil, bin, "witness", "--log", public, "--key", dir, "--log-key", logKey, "--interval", "1s")
	if err != nil {
		return "", "", err
	}
	go func() {
		for p := first; ; {
			<-p.done
			if ctx.Err() != nil {
				return
			}
			time.Sleep(time.Second)
			restarts := witnessRestarts.Add(1)
			var err error
			if p, err = ps.start(fmt.Sprintf("witness-restart-%d", restarts), nil, bin, "witness", "--log", public, "--key", dir, "--log-key", logKey, "--interval", "1s"); err != nil {
				return
			}
		}
	}()
	return string(ed[1]), string(ml[1]), nil
}

// kill SIGKILLs the replica killed and the runner that holds a lease (the first runner when
// none holds one at that moment), and says what it killed.
func kill(ctx context.Context, db *sql.DB, reps []*proc, runnerProcs map[string]*proc) string {
	reps[killed].kill()
	var name string
	var job int64
	err := db.QueryRowContext(ctx, `SELECT r.name, j.id FROM jobs j JOIN runners r ON r.id = j.runner_id WHERE j.state = 'running' ORDER BY j.id LIMIT 1`).Scan(&name, &job)
	p := runnerProcs[name]
	holding := fmt.Sprintf("holding the lease of job %d", job)
	if err != nil || p == nil {
		name, p, holding = "demo runner 0", runnerProcs["demo runner 0"], "holding no lease at that moment"
	}
	p.kill()
	return fmt.Sprintf("SIGKILLed replica %d and %s (%s)", killed, name, holding)
}

// waitLog waits until the published checkpoint covers every run and carries the witness's
// cosignature of that size, and records the log's figures.
func waitLog(ctx context.Context, db *sql.DB, public string, rep *Report) error {
	var runs int64
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&runs); err != nil {
		return err
	}
	return waitFor(ctx, "the witness to cosign the checkpoint of every run", 2*time.Minute, func() (bool, error) {
		b, err := download(ctx, public, "/api/v1/log")
		if err != nil {
			return false, err
		}
		var info struct {
			Size    int64 `json:"size"`
			Pending int   `json:"pending"`
		}
		if err := json.Unmarshal(b, &info); err != nil {
			return false, fmt.Errorf("/api/v1/log: %w", err)
		}
		if info.Size != runs || info.Pending != 0 {
			return false, nil
		}
		cp, err := download(ctx, public, "/log/checkpoint")
		if err != nil {
			return false, err
		}
		lines := strings.Split(string(cp), "\n")
		if len(lines) < 3 || lines[1] != strconv.FormatInt(runs, 10) {
			return false, nil
		}
		sigs := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "— "+witnessName+" ") {
				sigs++
			}
		}
		rep.LogSize, rep.CheckpointWitnessSigs = info.Size, sigs
		// The witness's two signatures (Ed25519, ML-DSA-44) may reach the checkpoint one poll
		// apart: wait for both.
		return sigs >= 2, nil
	})
}

// waitFor calls cond every 100 ms until it holds, fails, or within (or ctx) ends.
func waitFor(ctx context.Context, what string, within time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// verify downloads a random run's bundle through the balancer and checks it with `pqrepro
// verify --log`, pinning the log key, the witness's two keys and the runner's keys.
func (r *Report) verify(ctx context.Context, db *sql.DB, bin, public, logKey, ed, ml, dir string, runnerDirs map[string]string) error {
	var runner string
	if err := db.QueryRowContext(ctx, `SELECT r.id, u.name FROM runs r JOIN runners u ON u.id = r.runner_id ORDER BY random() LIMIT 1`).Scan(&r.VerifyRun, &runner); err != nil {
		return fmt.Errorf("pick a run to verify: %w", err)
	}
	b, err := download(ctx, public, fmt.Sprintf("/runs/%d/bundle.tar.gz", r.VerifyRun))
	if err != nil {
		return err
	}
	file := filepath.Join(dir, fmt.Sprintf("run-%d.tar.gz", r.VerifyRun))
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return err
	}
	args := []string{"verify", file, "--log", public, "--log-key", logKey, "--witness", ed, "--witness", ml, "--log-state", filepath.Join(dir, "log-seen.json")}
	if d := runnerDirs[runner]; d != "" {
		args = append(args, "--key", filepath.Join(d, identity.IdentityPubFile))
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	r.VerifyOutput = strings.ReplaceAll(strings.TrimSpace(string(out)), dir+"/", "")
	r.VerifyOK = err == nil && strings.Contains(r.VerifyOutput, "cosigned by pinned witnesses: "+witnessName) && strings.Contains(r.VerifyOutput, "VERIFIED")
	return nil
}

// witnessOutput is the last lines each witness process wrote.
func witnessOutput(logs string) string {
	files, _ := filepath.Glob(filepath.Join(logs, "witness*.log"))
	var out []string
	for _, f := range files {
		p := &proc{name: filepath.Base(f), log: f}
		out = append(out, p.name+":"+p.tail())
	}
	return strings.Join(out, "\n")
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
