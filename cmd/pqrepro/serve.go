package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/internal/cachedir"
	"pqrepro/portal"
	"pqrepro/portal/blob"
	"pqrepro/portal/database"
	"pqrepro/runner"
	"pqrepro/runner/method/openssl"
	"pqrepro/runner/portalclient"
)

// serveConfig builds the portal's Config: defaults, then flags, then PQREPRO_* environment.
// It also returns the local runner's openssl: --openssl or --openssl-root, else the cached
// root ($PQREPRO_OPENSSL_ROOT, or the one scripts/openssl-root made) when it
// exists, else openssl on PATH.
func serveConfig(args []string, stderr io.Writer) (portal.Config, openssl.Config, error) {
	cfg := portal.DefaultConfig()
	cfg.Version = buildVersion()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	noLocal := serveFlags(fs, &cfg)
	ossl := opensslFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, openssl.Config{}, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return cfg, openssl.Config{}, usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	osslCfg := ossl.config()
	if osslCfg.Path == "" && osslCfg.Root == "" {
		osslCfg.Root = cachedOpenSSLRoot()
	}
	cfg.LocalRunner = !*noLocal
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	errs := serveEnv(&cfg, set)
	if cfg.Blobs != "" {
		creds, err := blob.S3CredentialsFromEnv(os.Getenv)
		cfg.S3Credentials = creds
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, osslCfg, usageError{err.Error()}
	}
	err := cfg.Validate()
	if cfg.Database != "" && !database.IsURL(cfg.Database) {
		err = errors.Join(err, fmt.Errorf("database: want postgres://USER@HOST:PORT/NAME, or nothing for the SQLite file %s", filepath.Join(cfg.DataDir, portal.DatabaseFile)))
	}
	if err != nil {
		return cfg, osslCfg, usageError{err.Error()}
	}
	return cfg, osslCfg, nil
}

// serveFlags defines serve's flags over cfg's defaults; the returned flag is
// --no-local-runner.
func serveFlags(fs *flag.FlagSet, cfg *portal.Config) *bool {
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address")
	fs.StringVar(&cfg.PublicURL, "public-url", cfg.PublicURL, "the portal's public URL, signed into runners' bundles (default http://ADDR)")
	fs.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data directory (database, blobs, local runner identity)")
	fs.StringVar(&cfg.LogKeyFile, "log-key-file", cfg.LogKeyFile, "the transparency log's signing key, made on first start (default DATA/log.key); replicas of one portal share it")
	fs.StringVar(&cfg.Database, "db", cfg.Database, "database: postgres://USER[:PASSWORD]@HOST:PORT/NAME, shared by any number of portal processes (default: the SQLite file DATA/portal.db)")
	fs.StringVar(&cfg.Blobs, "blobs", cfg.Blobs, "blob store: s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R&tls=BOOL, keys in PQREPRO_S3_ACCESS_KEY and PQREPRO_S3_SECRET_KEY (default: the folder DATA/blobs)")
	noLocal := fs.Bool("no-local-runner", false, "do not start the in-process runner with the host board")
	fs.DurationVar(&cfg.LocalRunnerRediscover, "rediscover", cfg.LocalRunnerRediscover, "how often the local runner looks for its boards again between jobs (a firmware built meanwhile makes its board available)")
	fs.DurationVar(&cfg.LeaseDuration, "lease", cfg.LeaseDuration, "job lease duration without a heartbeat")
	fs.Int64Var(&cfg.MaxBundleBytes, "max-bundle-bytes", cfg.MaxBundleBytes, "largest accepted bundle upload")
	fs.Int64Var(&cfg.MaxFirmwareBytes, "max-firmware-bytes", cfg.MaxFirmwareBytes, "largest accepted firmware upload")
	fs.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "longest a client may take to send a request's headers")
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "longest a client may take to send a whole request (headers and body)")
	fs.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "longest an answer may take, from the end of the request's headers (more than the long poll)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "longest a kept-alive connection may wait for its next request")
	fs.IntVar(&cfg.PageCacheBytes, "page-cache-bytes", cfg.PageCacheBytes, "memory for rendered anonymous pages and API answers, kept until what they show changes (0: no cache)")
	fs.Func("trusted-proxy", "CIDR or address of a reverse proxy whose X-Forwarded-For/X-Real-IP is believed (repeatable)", func(v string) error {
		if _, err := portal.ParseTrustedProxies([]string{v}); err != nil {
			return err
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, v)
		return nil
	})
	fs.BoolVar(&cfg.Init, "init", false, "start a fresh database even though portal.db is missing or empty beside stored blobs")
	fs.StringVar(&cfg.LogOrigin, "log-origin", cfg.LogOrigin, "the transparency log's origin line and key name (default: the public URL's host + /log; fixed once the log key exists)")
	fs.IntVar(&cfg.WitnessQuorum, "witness-quorum", cfg.WitnessQuorum, "how many witnesses each published witness policy (/log/policy) requires")
	fs.BoolVar(&cfg.Check, "check", false, "run PRAGMA quick_check on the database before serving (it runs anyway after an unclean shutdown)")
	return noLocal
}

// serveEnv applies the PQREPRO_* environment to cfg for every setting whose flag was not set
// on the command line, and returns what it could not read.
func serveEnv(cfg *portal.Config, set map[string]bool) []error {
	env := func(name, flagName string, apply func(string) error) error {
		if v, ok := os.LookupEnv(name); ok && !set[flagName] {
			if err := apply(v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	}
	return []error{
		env("PQREPRO_ADDR", "addr", func(v string) error { cfg.Addr = v; return nil }),
		env("PQREPRO_PUBLIC_URL", "public-url", func(v string) error { cfg.PublicURL = v; return nil }),
		env("PQREPRO_DATA", "data", func(v string) error { cfg.DataDir = v; return nil }),
		env("PQREPRO_LOG_KEY_FILE", "log-key-file", func(v string) error { cfg.LogKeyFile = v; return nil }),
		env("PQREPRO_DB", "db", func(v string) error { cfg.Database = v; return nil }),
		env("PQREPRO_BLOBS", "blobs", func(v string) error { cfg.Blobs = v; return nil }),
		env("PQREPRO_LOG_ORIGIN", "log-origin", func(v string) error { cfg.LogOrigin = v; return nil }),
		env("PQREPRO_NO_LOCAL_RUNNER", "no-local-runner", func(v string) error {
			b, err := strconv.ParseBool(v)
			cfg.LocalRunner = !b
			return err
		}),
		env("PQREPRO_LEASE", "lease", func(v string) error {
			d, err := time.ParseDuration(v)
			cfg.LeaseDuration = d
			return err
		}),
		env("PQREPRO_REDISCOVER", "rediscover", func(v string) error {
			d, err := time.ParseDuration(v)
			cfg.LocalRunnerRediscover = d
			return err
		}),
		env("PQREPRO_ADMIN_TOKEN", "", func(v string) error { cfg.AdminToken = v; return nil }),
		env("PQREPRO_TRUSTED_PROXIES", "trusted-proxy", func(v string) error {
			list := strings.Split(v, ",")
			if _, err := portal.ParseTrustedProxies(list); err != nil {
				return err
			}
			cfg.TrustedProxies = list
			return nil
		}),
	}
}

// cachedOpenSSLRoot is the root scripts/openssl-root makes, when it exists:
// $PQREPRO_OPENSSL_ROOT, else .cache/trixie-openssl under the working directory, else
// trixie-openssl in the cache folder (internal/cachedir); "" otherwise.
func cachedOpenSSLRoot() string {
	dir := os.Getenv("PQREPRO_OPENSSL_ROOT")
	if dir == "" {
		dir = cachedir.Find(cachedir.OpenSSLRoot, ".")
	}
	if st, err := os.Stat(filepath.Join(dir, "usr", "bin", "openssl")); err == nil && st.Mode().IsRegular() {
		return dir
	}
	return ""
}

// cmdServe runs the portal, and the local runner unless --no-local-runner. The local runner
// is the same agent as `pqrepro runner`, talking HTTP to the portal's own listener.
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, ossl, err := serveConfig(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// Bind first: opening the portal makes the log's key on first start, named by the
	// address, and a start that cannot bind must not leave a log named for a port it never
	// served on.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	srv, err := database.OpenPortal(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	base := "http://" + loopback(ln.Addr())
	printServeBanner(stdout, cfg, srv, base)
	tok, err := srv.SetupAdmin(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	switch {
	case tok != "":
		fmt.Fprintf(stdout, "first start: sign in as administrator at %s/signin with this token (shown once; only its hash is stored):\n  %s\n", base, tok)
	case cfg.AdminToken != "":
		fmt.Fprintf(stdout, "administrator token: from PQREPRO_ADMIN_TOKEN\n")
	default:
		fmt.Fprintf(stdout, "administrator: token as printed on first start (set PQREPRO_ADMIN_TOKEN to replace it)\n")
	}
	errc := make(chan error, 2)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { errc <- srv.Serve(ctx, ln) }()
	if cfg.LocalRunner {
		if err := startLocalRunner(ctx, srv, cfg, ossl, base, log, stdout); err != nil {
			cancel()
			<-errc
			return err
		}
	}
	err = <-errc
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// printServeBanner says where the portal listens, where its data is and its log's key.
func printServeBanner(stdout io.Writer, cfg portal.Config, srv *portal.Server, base string) {
	abs, _ := filepath.Abs(cfg.DataDir)
	blobs := filepath.Join(abs, "blobs")
	if cfg.Blobs != "" {
		blobs = cfg.BlobsLocation()
	}
	db := filepath.Join(abs, "portal.db")
	if cfg.Database != "" {
		db = database.Location(cfg.DataDir, cfg.Database)
	}
	fmt.Fprintf(stdout, "pqrepro %s portal on %s\ndata: %s (database %s, blobs %s)\n", cfg.Version, base, abs, db, blobs)
	fmt.Fprintf(stdout, "transparency log: %s/log, key (pin it with --log-key):\n  %s\n", base, srv.Log().VerifierKey())
}

// startLocalRunner starts serve's in-process runner with the boards of this machine, talking
// to the portal at base, until ctx ends.
func startLocalRunner(ctx context.Context, srv *portal.Server, cfg portal.Config, ossl openssl.Config, base string, log *slog.Logger, stdout io.Writer) error {
	idDir := filepath.Join(cfg.DataDir, "local-runner")
	id, created, err := identity.LoadOrCreateIdentity(idDir)
	if err != nil {
		return err
	}
	if created {
		log.Info("created the local runner's identity", "keys", id.Public().Fingerprint())
	}
	// The local runner enrols like any other, proving possession of its keys, and keeps its
	// runner token beside them for its next start. Without a kept token (first start, or a
	// data directory from before tokens were kept) serve, as administrator, releases its
	// keys for one re-enrolment; a single-use token enrols them when the portal has never
	// seen them.
	tokenFile := filepath.Join(idDir, runner.TokenFileName)
	if _, err := os.Stat(tokenFile); err != nil {
		if err := srv.ReleaseRunnerKeys(ctx, id.Public().Fingerprint()); err != nil {
			return err
		}
	}
	enrol, err := srv.CreateEnrolToken(ctx, "local runner", 10*time.Minute)
	if err != nil {
		return err
	}
	bs, caps, rediscover, err := agentBoards(ctx, os.Getenv("PQREPRO_MAP"), os.Getenv("PQREPRO_FIRMWARE"), "", ossl)
	if err != nil {
		return err
	}
	agent := &runner.Agent{Portal: &portalclient.Client{BaseURL: base}, EnrolToken: enrol, TokenFile: tokenFile, Name: "local runner", Identity: id,
		Boards: bs, Capabilities: caps, Version: cfg.Version, Log: log.With("component", "local-runner"),
		Discover: rediscover, DiscoverEvery: cfg.LocalRunnerRediscover}
	go func() {
		if err := agent.Run(ctx); err != nil {
			log.Error("local runner stopped", "err", err)
		}
	}()
	fmt.Fprintf(stdout, "local runner %s attached:\n", id.Public().Fingerprint())
	printAgentBoards(stdout, bs)
	printCapabilities(stdout, caps)
	return nil
}

// loopback turns a listener address into one a local client can dial.
func loopback(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		if ip.To4() == nil && ip != nil {
			return net.JoinHostPort("::1", strconv.Itoa(tcp.Port))
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}
