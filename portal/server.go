// Package portal is the web application: an Echo server rendering templ pages, the runner
// protocol under /api/v1, the public read API, and the job queue, over the SQLite store
// (portal/sqlite) and the blob store (portal/blob). Every route is listed in routes.go;
// handlers are methods on Server returning errors, mapped to pages or JSON by one error
// handler that never shows internal error text.
package portal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/internal/webclient"
	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/rpc"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
	"pqrepro/portal/translog"
	"pqrepro/templates"
)

// Config configures the portal. Build it with DefaultConfig, override, then Validate.
type Config struct {
	// Addr is the listen address ("127.0.0.1:8080").
	Addr string
	// PublicURL is the portal's address as runners and readers know it
	// ("https://pqrepro.example.org"); leases carry it and runners sign it into their
	// bundles. Empty means "http://" + Addr.
	PublicURL string
	// DataDir holds portal.db, blobs/ and the local runner's identity.
	DataDir string
	// Blobs is where bundles and firmware are stored: "" for the folder DataDir/blobs, or an
	// S3 bucket as s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R&tls=BOOL (blob.ParseS3URL),
	// signed with S3Credentials.
	Blobs string
	// S3Credentials sign requests to an S3 Blobs (from the environment, never the URL).
	S3Credentials blob.S3Credentials
	// AdminToken, when set, becomes the administrator's token (else one is generated on first start).
	AdminToken string
	// LocalRunner starts the in-process runner with the host board.
	LocalRunner bool
	// LocalRunnerRediscover is how often `pqrepro serve`'s local runner looks for its boards
	// again between jobs, so that a firmware built while the portal runs makes its board
	// available (runner.Agent.DiscoverEvery; zero: its default).
	LocalRunnerRediscover time.Duration
	// LeaseDuration is how long a lease lasts without a heartbeat.
	LeaseDuration time.Duration
	// LongPoll is the longest a lease request waits for a job.
	LongPoll time.Duration
	// LeasePoll is how often a waiting lease request looks for a job when nothing woke it
	// (a job queued on this or, through the store's events, another replica wakes it at
	// once); zero: a quarter of LeaseDuration, between 100 ms and 2 s.
	LeasePoll time.Duration
	// ConnectedWithin: a runner heard from within this long counts as connected.
	ConnectedWithin time.Duration
	// MaxBundleBytes and MaxFirmwareBytes limit uploads.
	MaxBundleBytes   int64
	MaxFirmwareBytes int64
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	// ReadHeaderTimeout, ReadTimeout (headers and body), WriteTimeout (from the end of the
	// headers to the end of the answer; longer than LongPoll) and IdleTimeout (between
	// requests on a kept-alive connection) bound every connection, so slow clients are cut off.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// TrustedProxies are the reverse proxies (CIDRs or addresses) whose X-Forwarded-For and
	// X-Real-IP are believed; from anyone else the TCP peer's address is the client's.
	TrustedProxies []string
	// RateLimits are the per-address budgets of sign-in, enrolment, submission and runner routes.
	RateLimits RateLimits
	// Logs bounds what is kept of job logs (zero: store.DefaultLogLimits).
	Logs store.LogLimits
	// Database is a PostgreSQL URL (postgres://…) shared by any number of portal processes;
	// empty: the SQLite file portal.db in DataDir.
	Database string
	// ChallengeTTL is how long a proof-of-possession challenge stays usable.
	ChallengeTTL time.Duration
	// Version is shown and recorded.
	Version string
	// Init allows starting a fresh database when portal.db is missing or empty although the
	// blob store holds files; without it that is an error.
	Init bool
	// Check runs PRAGMA quick_check at start even when the last shutdown was clean.
	Check bool
	// LogKeyFile is the transparency log's signing key (made on first start; default
	// DataDir/log.key). Every replica of one portal must use the same key and origin.
	LogKeyFile string
	// HighlightsEvery is how often the summary job folds the counters' appended rows and
	// recomputes the home page's small leaderboards when runs were published since (zero: a
	// minute); the home page shows them as last computed.
	HighlightsEvery time.Duration
	// LogOrigin is the transparency log's origin line and key name (default: the public
	// URL's host and path + "/log").
	LogOrigin string
	// WitnessQuorum is how many witnesses the log's published witness policies require (each
	// policy needs at most as many as it has members; default 1).
	WitnessQuorum int
	// PageCacheBytes bounds the response cache of anonymous pages and the public API
	// (pagecache.go); zero turns it off.
	PageCacheBytes int
	// PublishBatch: above 1, runs verified by concurrent ingests are published together, at
	// most this many in one transaction (batch.go; bench/seed's bulk load); zero or one: each
	// in its own.
	PublishBatch int
	// PublishLinger: with batches on, how long a batch that is not full waits for more runs
	// after its first (zero: it takes what is waiting and waits for nothing, as a serving
	// portal should; bench/seed lingers, to make fewer and fuller transactions).
	PublishLinger time.Duration
	// PublishCommits: with batches on, how many batches fill and commit at once, each in its
	// own transaction (zero or one: one after another, as a serving portal; bench/seed on
	// PostgreSQL commits several side by side).
	PublishCommits int
	// LogSequenceGap: the least time between the starts of two rounds of SequenceLog (zero:
	// a round after every publication, as a serving portal should, so a run is in the log
	// at once; bench/seed sets a second).
	LogSequenceGap time.Duration
	// BlobsUnsynced: the filesystem blob store does not sync each bundle to disk before its run
	// is published (blob.FS.Unsynced). Only for a bulk load that syncs once when it ends
	// (bench/seed): a crash of the machine could otherwise leave published runs without their
	// bundles. A serving portal leaves it off.
	BlobsUnsynced bool
	// Now is the portal's clock (nil: time.Now): what the store records as created and
	// published, and what pages measure ages and expiries against. Tests fix it.
	Now func() time.Time `json:"-"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Addr: "127.0.0.1:8080", DataDir: "pqrepro-data", LocalRunner: true, LocalRunnerRediscover: 10 * time.Second,
		LeaseDuration: 30 * time.Second, LongPoll: 25 * time.Second, ConnectedWithin: 90 * time.Second,
		MaxBundleBytes: 64 << 20, MaxFirmwareBytes: 16 << 20, SessionTTL: 7 * 24 * time.Hour, ChallengeTTL: 5 * time.Minute, Version: "dev",
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 60 * time.Second, WriteTimeout: 90 * time.Second, IdleTimeout: 120 * time.Second,
		RateLimits: DefaultRateLimits(), WitnessQuorum: 1, PageCacheBytes: 64 << 20,
	}
}

// PortalURL is the configured public URL, or "http://" + Addr when none is set, without a
// trailing slash.
func (c Config) PortalURL() string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	return "http://" + c.Addr
}

// Validate checks the configuration once.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("addr is empty"))
	} else if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(c.PublicURL) > 1000 {
			errs = append(errs, fmt.Errorf("public URL %q is not an http(s) URL", c.PublicURL))
		}
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data directory is empty"))
	}
	if c.Blobs != "" {
		if !blob.IsS3URL(c.Blobs) {
			errs = append(errs, fmt.Errorf("blobs: want s3://BUCKET/PREFIX?endpoint=HOST:PORT, or nothing for the folder %s", filepath.Join(c.DataDir, blobsDir)))
		} else if _, err := blob.ParseS3URL(c.Blobs); err != nil {
			errs = append(errs, fmt.Errorf("blobs: %w", err))
		}
	}
	if o := c.logOrigin(); len(o) > 200 || strings.ContainsAny(o, " \t\n+") || !utf8.ValidString(o) {
		errs = append(errs, fmt.Errorf("log origin %q: want at most 200 bytes without spaces or '+'", o))
	}
	if c.AdminToken != "" && len(c.AdminToken) < 16 {
		errs = append(errs, errors.New("admin token must be at least 16 characters"))
	}
	if c.WitnessQuorum < 0 || c.WitnessQuorum > 100 {
		errs = append(errs, fmt.Errorf("witness quorum %d: want 0..100", c.WitnessQuorum))
	}
	if c.LeaseDuration < 100*time.Millisecond {
		errs = append(errs, errors.New("lease duration must be at least 100ms"))
	}
	if c.LongPoll < 0 || c.ConnectedWithin <= 0 || c.SessionTTL <= 0 || c.ChallengeTTL <= 0 {
		errs = append(errs, errors.New("long-poll, connected-within, session and challenge durations must be positive"))
	}
	if c.PageCacheBytes < 0 || c.PublishBatch < 0 || c.PublishBatch > 10000 || c.PublishLinger < 0 || c.PublishCommits < 0 || c.PublishCommits > 64 || c.LogSequenceGap < 0 {
		errs = append(errs, errors.New("page cache bytes must not be negative, publish batches between 0 and 10000, their commit lines between 0 and 64, their linger and the log's sequencing gap not negative"))
	}
	if c.MaxBundleBytes <= 0 || c.MaxBundleBytes > artifacts.MaxBundleBytes*4 || c.MaxFirmwareBytes <= 0 {
		errs = append(errs, errors.New("upload limits must be positive (bundles at most 256 MiB)"))
	}
	if c.ReadHeaderTimeout <= 0 || c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.IdleTimeout <= 0 {
		errs = append(errs, errors.New("read-header, read, write and idle timeouts must be positive"))
	} else if c.WriteTimeout <= c.LongPoll+5*time.Second {
		errs = append(errs, fmt.Errorf("write timeout %v must exceed the long poll (%v) by more than 5s", c.WriteTimeout, c.LongPoll))
	}
	if _, err := ParseTrustedProxies(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	rl := c.RateLimits
	errs = append(errs, rl.SignIn.validate("sign-in"), rl.Enrol.validate("enrol"), rl.EnrolNetwork.validate("enrol network"), rl.Submit.validate("submit"), rl.Runner.validate("runner"))
	return errors.Join(errs...)
}

// Server is the portal. Open it, Serve it, Close it.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *sqlstore.DB
	blobs   blob.Store
	catalog *experiments.Catalog
	echo    *echo.Echo
	queue   *signal
	// tlog is the transparency log of published runs; logPoke wakes its sequencer;
	// witnessClient pushes checkpoints to witnesses (each request bounded).
	tlog          *translog.Log
	logPoke       chan struct{}
	witnessClient *http.Client

	// algList and opList cache the algorithms and operations leaderboards offer (the
	// catalogue's and the measured ones); publish clears them.
	measuredMu sync.Mutex
	algList    []string
	opList     []string
	// algOpsOf caches, per algorithm, the operations offered with it (a matrix cell's
	// handshake, a KEM's encaps), so the picker pairs them.
	algOpsOf map[string][]string
	// boards caches computed leaderboards by algorithm, operation and metric; they change
	// only when a run is published, which clears it.
	boards map[string]Leaderboard
	// previews caches experiment pages' comparability previews.
	previews previewCache
	// generation counts publications, so a leaderboard computed across one is not cached.
	generation uint64
	// energy caches the papers' energies re-derived from their traces.
	energy energyViews
	// paperKept keeps the papers' pages' unchanging parts, rendered once.
	paperKept paperPartsKept
	// manifestKept keeps what experiment pages show of the catalogue's manifests.
	manifestKept manifestsKept
	// policyMemo keeps the published checkpoint's witness policy results.
	policyMemo policyMemo
	// pages is the response cache (nil when Config.PageCacheBytes is zero).
	pages *pageCache
	// boxPlots keeps the run pages' box plots, drawn once per bundle.
	boxPlots boxPlots
	// reports keeps the run pages' decoded comparisons, by run.
	reports recentlyViewed[*keptReport]
	// batch publishes concurrent ingests' runs together (nil unless Config.PublishBatch > 1).
	batch *committer
	// ingest is the one path bundles take into the store.
	ingest *ingest.Ingest
	// rpc answers the runner protocol.
	rpc *rpc.Service
}

// now is the time by the configured clock.
func (s *Server) now() time.Time {
	if s.cfg.Now != nil {
		return s.cfg.Now()
	}
	return time.Now()
}

// invalidate drops what publication changes: the measured pairs and the leaderboards.
func (s *Server) invalidate() {
	s.measuredMu.Lock()
	defer s.measuredMu.Unlock()
	s.algList, s.opList, s.algOpsOf, s.boards = nil, nil, nil, nil
	s.generation++
	if s.pages != nil {
		s.pages.drop()
	}
}

// Database is the store a binary opened for the portal on the engine its Config names
// (portal/database opens it; the portal never chooses an engine).
type Database struct {
	DB *sqlstore.DB
	// Existed says whether the database held a portal already (SQLite: the file had
	// content; PostgreSQL: an administrator exists), for the check against orphaned blobs.
	Existed bool
	// Location says where it is, for people: the SQLite file's path, or the PostgreSQL URL
	// without its password.
	Location string
}

// Open opens the portal over db. It opens the data directory (creating it) and the blob store, and loads
// the experiment catalogue. On success the portal owns db and closes it in Close.
func Open(ctx context.Context, cfg Config, db Database, log *slog.Logger) (*Server, error) {
	st, exists := db.DB, db.Existed
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("portal config: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	cat, err := experiments.Load()
	if err != nil {
		return nil, fmt.Errorf("load experiments: %w", err)
	}
	bs, err := openBlobs(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if cfg.Database == "" {
		if err := checkDatabase(ctx, cfg.DataDir, st, cfg.Check, log); err != nil {
			return nil, err
		}
	}
	if s3, ok := bs.(*blob.S3); ok && !exists && !cfg.Init {
		// The folder check above sees only the local folder; a bucket is checked here.
		has, err := s3.HasBlobs(ctx)
		if err != nil {
			st.Close()
			return nil, err
		}
		if has {
			st.Close()
			return nil, fmt.Errorf("database %s is missing or empty, but the blob store %s holds blobs of an earlier database: "+
				"restore the database, or start with --init to begin a fresh database beside them", db.Location, cfg.BlobsLocation())
		}
	}
	s := &Server{cfg: cfg, log: log, store: st, blobs: bs, catalog: cat, queue: newSignal(), logPoke: make(chan struct{}, 1),
		witnessClient: webclient.New(webclient.Config{Request: 15 * time.Second})}
	if cfg.PageCacheBytes > 0 {
		s.pages = newPageCache(cfg.PageCacheBytes)
	}
	if cfg.PublishBatch > 1 {
		s.batch = newCommitter(st, cfg.PublishBatch, cfg.PublishLinger, cfg.PublishCommits)
	}
	s.ingest = s.newIngest()
	s.rpc = s.newRPC()
	// The log's tiles and checkpoint are named objects in the same folder or bucket as the
	// blobs, so every replica serves the same log.
	files, ok := bs.(blob.Files)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("the blob store %T keeps no named objects for the transparency log", bs)
	}
	if s.tlog, err = openLog(cfg, st, files, s); err != nil {
		st.Close()
		return nil, err
	}
	s.echo = echo.New()
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	proxies, _ := ParseTrustedProxies(cfg.TrustedProxies) // checked by Validate
	s.echo.IPExtractor = clientIP(proxies)
	s.routes()
	return s, nil
}

// openBlobs opens the configured blob store: the folder DataDir/blobs, or the S3 bucket of
// cfg.Blobs (checked to exist and be writable).
func openBlobs(ctx context.Context, cfg Config, log *slog.Logger) (blob.Store, error) {
	if cfg.Blobs == "" {
		fs, err := blob.OpenFS(filepath.Join(cfg.DataDir, blobsDir))
		if err != nil {
			return nil, err
		}
		fs.Unsynced = cfg.BlobsUnsynced
		return fs, nil
	}
	c, err := blob.ParseS3URL(cfg.Blobs)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	c.S3Credentials = cfg.S3Credentials
	return blob.OpenS3(ctx, c, log)
}

// BlobsLocation says where blobs are stored, for people: the folder's path, or the bucket's
// URL (which never holds credentials).
func (c Config) BlobsLocation() string {
	if c.Blobs == "" {
		return filepath.Join(c.DataDir, blobsDir)
	}
	if s3, err := blob.ParseS3URL(c.Blobs); err == nil {
		return s3.String()
	}
	return c.Blobs
}

// Store returns the server's store (for seeding tools and tests).
func (s *Server) Store() *sqlstore.DB { return s.store }

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Close closes the store and removes the running marker, so the next start knows this one
// shut down cleanly.
func (s *Server) Close() error {
	if s.batch != nil {
		s.batch.close()
	}
	err := s.store.Close()
	if err == nil {
		if rerr := os.Remove(filepath.Join(s.cfg.DataDir, runMarker)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
	}
	return err
}

// SetupAdmin makes sure an administrator exists. With Config.AdminToken set it becomes the
// token; otherwise a token is generated only when there is no administrator yet. It returns
// the token when one was generated or set (for printing), "" otherwise.
func (s *Server) SetupAdmin(ctx context.Context) (string, error) {
	if s.cfg.AdminToken != "" {
		if _, err := s.store.SetAdminToken(ctx, token.Hash(s.cfg.AdminToken)); err != nil {
			return "", err
		}
		return "", nil
	}
	ok, err := s.store.HasAdmin(ctx)
	if err != nil || ok {
		return "", err
	}
	tok := token.New("pqa")
	if _, err := s.store.SetAdminToken(ctx, token.Hash(tok)); err != nil {
		return "", err
	}
	return tok, nil
}

// CreateAccount creates a submitter or member account and returns its token (shown once,
// stored hashed).
func (s *Server) CreateAccount(ctx context.Context, name, role string) (string, error) {
	if name == "" || len(name) > 100 {
		return "", onField("name", fault.New(fault.Invalid, "give the account a name of at most 100 characters"))
	}
	if err := artifacts.CheckName("account name", name, 100); err != nil {
		return "", onField("name", fault.Wrap(fault.Invalid, err, "%s", err.Error()))
	}
	if role != store.RoleSubmitter && role != store.RoleMember {
		return "", onField("role", fault.New(fault.Invalid, "role must be submitter or member"))
	}
	tok := token.New("pqu")
	if _, err := s.store.CreateUser(ctx, name, role, token.Hash(tok)); err != nil {
		if fault.Is(err, fault.Conflict) {
			return "", onField("name", err)
		}
		return "", err
	}
	return tok, nil
}

// CreateEnrolToken creates a runner enrolment token (for the local runner and tools) that
// enrols one runner within ttl. It replaces the tokens made here earlier under the same label
// that are still usable (serve mints one at every start): they are revoked, so /admin never
// lists a pile of "usable" tokens nobody holds any more.
func (s *Server) CreateEnrolToken(ctx context.Context, label string, ttl time.Duration) (string, error) {
	old, err := s.store.EnrolTokens(ctx)
	if err != nil {
		return "", err
	}
	now := time.Now()
	for _, t := range old {
		// Only single-use, expiring tokens of this label are this method's: an
		// administrator's token is never touched.
		if usable, _ := t.Usable(now); usable && t.Label == label && t.MaxUses == 1 && !t.Expires.IsZero() {
			if err := s.store.RevokeEnrolToken(ctx, t.ID); err != nil {
				return "", err
			}
		}
	}
	tok := token.New("pqe")
	if _, err := s.store.CreateEnrolToken(ctx, label, token.Hash(tok), 0, store.EnrolTokenOptions{MaxUses: 1, Expires: time.Now().Add(ttl)}); err != nil {
		return "", err
	}
	return tok, nil
}

// Serve serves HTTP on ln until ctx is cancelled, then shuts down gracefully (in-flight
// requests get 10 seconds; long polls end at once).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.HTTPServer()
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go s.Sweep(ctx)
	go s.SequenceLog(ctx)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// HTTPServer returns an http.Server for the handler with the configured timeouts (Serve uses
// it; so do tests that serve the handler themselves).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.echo, ReadHeaderTimeout: s.cfg.ReadHeaderTimeout, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: 64 << 10}
}

// Sweep re-queues jobs whose lease expired until ctx is cancelled, so job pages show it even
// when no runner asks, drops idle rate-limit buckets, folds the counters and recomputes the
// home page's highlights (summaryLoop), and hears what other portal processes
// on the same database raise (see listen). Serve runs it; call it only when serving the
// Handler another way.
func (s *Server) Sweep(ctx context.Context) {
	heard := make(chan struct{})
	go func() {
		s.listen(ctx)
		close(heard)
	}()
	defer func() { <-heard }()
	lit := make(chan struct{})
	go func() {
		s.summaryLoop(ctx)
		close(lit)
	}()
	defer func() { <-lit }()
	t := time.NewTicker(max(s.cfg.LeaseDuration/2, 200*time.Millisecond))
	defer t.Stop()
	prune := time.NewTicker(10 * time.Minute)
	defer prune.Stop()
	temps := time.NewTicker(time.Minute)
	defer temps.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-temps.C:
			s.SweepTemporaries(ctx)
		case <-prune.C:
			if _, err := s.store.PruneTokens(ctx, time.Now().Add(-time.Hour)); err != nil && ctx.Err() == nil {
				s.log.Error("prune rate limits", "err", err)
			}
		case <-t.C:
			n, err := s.store.RequeueExpired(ctx)
			if err != nil && ctx.Err() == nil {
				s.log.Error("re-queue expired leases", "err", err)
			}
			if n > 0 {
				s.log.Info("re-queued jobs whose lease expired", "jobs", n)
				s.queue.broadcast()
			}
		}
	}
}

// SweepTemporaries removes what interrupted uploads left in the blob store (a process killed
// mid-upload; an aborted multipart upload the server kept) once it is older than any upload in
// progress can be: the read timeout (an upload's body) plus the write timeout (storing it)
// plus a minute, at least 2 minutes. Sweep runs it every minute, on every replica (each
// upload's age bounds it, whichever replica started it). It returns how many it removed.
func (s *Server) SweepTemporaries(ctx context.Context) int {
	sw, ok := s.blobs.(blob.TempSweeper)
	if !ok {
		return 0
	}
	age := max(s.cfg.ReadTimeout+s.cfg.WriteTimeout+time.Minute, 2*time.Minute)
	n, err := sw.SweepTemporaries(ctx, time.Now().Add(-age))
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sweep of temporary blob uploads failed", "err", err)
	} else if n > 0 {
		s.log.Info("removed abandoned temporary blob uploads", "count", n, "older than", age)
	}
	return n
}

// listen relays the events other portal processes on the same database raise until ctx
// ends: queued jobs wake this process's long polls, and publications (and revocations) drop
// its caches and wake its log sequencer. When the connection breaks it listens again after a
// pause, and acts as if both had happened, since events raised meanwhile are lost.
func (s *Server) listen(ctx context.Context) {
	pause := 100 * time.Millisecond
	for {
		start := time.Now()
		err := s.store.Listen(ctx, func(event string) {
			switch event {
			case store.EventJobs:
				s.queue.broadcast()
			case store.EventRuns:
				s.invalidate()
				s.pokeLog()
			}
		})
		if err == nil || ctx.Err() != nil {
			return // the store has no other process to hear, or the portal stops
		}
		if time.Since(start) > time.Minute {
			pause = 100 * time.Millisecond
		}
		s.log.Warn("listening for other portal processes failed; listening again", "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
		s.queue.broadcast()
		s.invalidate()
		s.pokeLog()
	}
}

// signal wakes every waiter when broadcast: waiters take the current channel, then wait on it.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() *signal { return &signal{ch: make(chan struct{})} }

func (g *signal) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}

func (g *signal) broadcast() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.ch)
	g.ch = make(chan struct{})
}

// HashToken is how tokens are stored (token.Hash), for seeding tools and tests.
func HashToken(tok string) string { return token.Hash(tok) }

// handleError maps an error to a status code and a page (or JSON under /api/), logging
// internal errors once. Internal error text is never shown.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, "internal error: it has been logged"
	kind := fault.KindOf(err)
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he):
		status = he.Code
		msg = http.StatusText(status)
		if m, ok := he.Message.(string); ok && status < 500 {
			msg = m
		}
		if status == http.StatusRequestEntityTooLarge {
			msg = "the upload is larger than this form accepts"
		}
		kind = kindOfStatus(status)
	case errors.As(err, new(*http.MaxBytesError)):
		status, msg, kind = http.StatusRequestEntityTooLarge, "the request body is larger than this route accepts", fault.TooLarge
	case kind == fault.Internal:
		if errors.Is(err, context.Canceled) {
			return
		}
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	default:
		msg = fault.Message(err)
		if st, ok := statusOf[kind]; ok {
			status = st
		}
	}
	if strings.HasPrefix(c.Request().URL.Path, "/api/") || strings.HasSuffix(c.Request().URL.Path, ".json") {
		c.JSON(status, protocol.ProtocolError{Kind: string(kind), Error: msg})
		return
	}
	if c.Request().Method == http.MethodHead {
		c.NoContent(status)
		return
	}
	if err := s.render(c, status, templates.ErrorPage(templates.ErrorView{Page: s.page(c, http.StatusText(status)), Status: status, Message: msg})); err != nil {
		s.log.Error("render error page", "err", err)
	}
}

// render renders a component into a buffer first, so a render error still gives a clean 500.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return fmt.Errorf("render %s: %w", c.Path(), err)
	}
	return s.writePage(c, status, buf.Bytes())
}

// Notify wakes runners waiting in a long poll (after jobs were queued outside the handlers).
func (s *Server) Notify() { s.queue.broadcast() }
