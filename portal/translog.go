package portal

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"golang.org/x/mod/sumdb/note"

	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/translog"
	"pqrepro/templates"
)

// logKeyFile is the log's note signing key in the data directory, made on first start.
const logKeyFile = "log.skey"

// witnessProofAge is how fresh a witness's registration proof (its cosignature of this log's
// checkpoint) must be.
const witnessProofAge = 10 * time.Minute

// logOrigin is the configured origin, or the portal URL's host and path followed by "/log".
func (c Config) logOrigin() string {
	if c.LogOrigin != "" {
		return c.LogOrigin
	}
	u, err := url.Parse(c.PortalURL())
	if err != nil || u.Host == "" {
		return "pqrepro.localhost/log"
	}
	return strings.TrimRight(u.Host+u.Path, "/") + "/log"
}

// openLog opens the transparency log over the store and the blob folder's named files,
// making the log's key on first start, named by the origin. Without a configured origin the
// key's name is the origin (so a new address keeps the log); a key whose name is not the
// configured origin is refused: changing the origin needs a new log.
func openLog(cfg Config, st *sqlstore.DB, files blob.Files, s *Server) (*translog.Log, error) {
	file := cfg.LogKeyFile
	if file == "" {
		file = filepath.Join(cfg.DataDir, logKeyFile)
	}
	skey, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		k, _, gerr := note.GenerateKey(rand.Reader, cfg.logOrigin())
		if gerr != nil {
			return nil, fmt.Errorf("make the log key: %w", gerr)
		}
		if err := os.WriteFile(file, []byte(k+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("write the log key %s: %w", file, err)
		}
		skey = []byte(k)
		s.log.Info("made the transparency log's key", "file", file, "origin", cfg.logOrigin())
	} else if err != nil {
		return nil, fmt.Errorf("read the log key %s: %w", file, err)
	}
	origin := cfg.logOrigin()
	if cfg.LogOrigin == "" {
		// The log keeps the origin it was made with when the address changes.
		if signer, err := note.NewSigner(strings.TrimSpace(string(skey))); err == nil {
			origin = signer.Name()
		}
	}
	l, err := translog.New(translog.Config{Origin: origin, SKey: strings.TrimSpace(string(skey))}, st, st, st, files, s.log.With("component", "translog"))
	if err != nil {
		return nil, fmt.Errorf("log key %s: %w", file, err)
	}
	return l, nil
}

// Log returns the portal's transparency log.
func (s *Server) Log() *translog.Log { return s.tlog }

// pokeLog wakes the sequencer after a publication.
func (s *Server) pokeLog() {
	select {
	case s.logPoke <- struct{}{}:
	default:
	}
}

// SequenceLog integrates published runs into the log until ctx is cancelled: on every
// publication and every few seconds (another replica may have published, a witness may have
// cosigned), but rounds at least Config.LogSequenceGap apart (a bulk load's choice: fewer
// rounds of more entries each, fewer partial tiles and checkpoints written). Serve runs it; every replica may, the store's lock lets one at a time work.
func (s *Server) SequenceLog(ctx context.Context) {
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		began := time.Now()
		if _, err := s.tlog.Sequence(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("sequence the transparency log", "err", err)
		}
		// Witnesses with a URL are sent each new checkpoint (C2SP tlog-witness); what they
		// answer is written into the checkpoint file by the next round.
		s.tlog.PushWitnesses(ctx, s.witnessClient)
		if gap := s.cfg.LogSequenceGap; gap > 0 {
			pause := time.NewTimer(time.Until(began.Add(gap)))
			select {
			case <-ctx.Done():
				pause.Stop()
				return
			case <-pause.C:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.logPoke:
		}
	}
}

// logCheckpoint serves the current checkpoint with its cosignatures (never cached).
func (s *Server) logCheckpoint(c echo.Context) error {
	b, err := s.tlog.Checkpoint(c.Request().Context())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", b)
}

// logTile serves a hash tile or an entry bundle by its C2SP path; their content never
// changes, so they are cached as immutable. Entry bundles (text leaves) go gzip-compressed to
// a client that accepts it, as C2SP tlog-tiles asks (Content-Encoding: gzip; a reader sees
// the bundle's own bytes); hash tiles are random and go as they are.
func (s *Server) logTile(c echo.Context) error {
	name := "tile/" + c.Param("*")
	b, err := s.tlog.ReadFile(c.Request().Context(), name)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	if strings.HasPrefix(name, "tile/entries/") {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(c.Request()) {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			zw.Write(b)
			zw.Close()
			h.Set("Content-Encoding", "gzip")
			return c.Blob(http.StatusOK, "application/octet-stream", buf.Bytes())
		}
	}
	return c.Blob(http.StatusOK, "application/octet-stream", b)
}

// apiLogCosignature takes a witness's cosigned checkpoint (text/plain signed note).
func (s *Server) apiLogCosignature(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, translog.MaxCosignatureBytes+1))
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "read the cosignature")
	}
	n, err := s.tlog.AcceptCosignature(c.Request().Context(), body)
	if err != nil {
		return err
	}
	s.pokeLog()
	return c.JSON(http.StatusAccepted, map[string]int{"kept": n})
}

// adminLogWitness registers a witness: form fields ed25519 (a cosignature/v1 vkey) and
// mldsa44 (an ML-DSA-44 cosignature vkey, optional: the ecosystem's witnesses have none), and
// either url (a C2SP tlog-witness the log pushes to: it is sent the current checkpoint and
// registered when it cosigns under the keys given) or proof (the log's checkpoint cosigned
// with each key, as `pqrepro witness --register` prints).
func (s *Server) adminLogWitness(c echo.Context) error {
	ctx := c.Request().Context()
	ed, ml := strings.TrimSpace(c.FormValue("ed25519")), strings.TrimSpace(c.FormValue("mldsa44"))
	var w translog.Witness
	var err error
	if u := strings.TrimSpace(c.FormValue("url")); u != "" {
		w, err = s.tlog.RegisterPushWitness(ctx, s.witnessClient, ed, ml, u)
	} else {
		w, err = s.tlog.RegisterWitness(ctx, ed, ml, []byte(c.FormValue("proof")), witnessProofAge)
	}
	if err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.adminView(c)
			v.WitnessForm = templates.WitnessForm{Ed25519: ed, MLDSA44: ml, URL: c.FormValue("url"), Proof: c.FormValue("proof"), Error: fe}
			return templates.AdminPage(v), err
		})
	}
	s.log.Info("registered a log witness", "witness", w.Name, "url", w.URL, "mldsa44", w.MLDSA44 != "")
	s.pokeLog()
	return c.JSON(http.StatusOK, map[string]string{"registered": w.Name})
}

// logPolicies returns the log's witness policies (translog.Policies) with the quorum configured.
func (s *Server) logPolicies(ctx context.Context) ([]translog.Policy, error) {
	return s.tlog.Policies(ctx, s.cfg.PortalURL()+"/log", s.cfg.WitnessQuorum)
}

// logPolicy serves a witness policy in the text form Sigsum, Tessera and torchwood read:
// /log/policy is the ecosystem one (Ed25519), /log/policy/post-quantum the ML-DSA-44 one.
func (s *Server) logPolicy(c echo.Context) error {
	name := c.Param("name")
	if name == "" {
		name = translog.PolicyEcosystem
	}
	ps, err := s.logPolicies(c.Request().Context())
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Name == name {
			c.Response().Header().Set("Cache-Control", "no-cache")
			return c.Blob(http.StatusOK, "text/plain; charset=utf-8", p.Format())
		}
	}
	return fault.New(fault.NotFound, "no witness policy %q (there are %s and %s)", name, translog.PolicyEcosystem, translog.PolicyPostQuantum)
}

// checkpointPolicies states which of the log's policies checkpoint note cp satisfies; nil
// (logged) when they cannot be read.
func (s *Server) checkpointPolicies(ctx context.Context, cp []byte) []translog.PolicyResult {
	ps, err := s.logPolicies(ctx)
	if err != nil {
		s.log.Error("read the log's witness policies", "err", err)
		return nil
	}
	var key bytes.Buffer
	key.Write(cp)
	for _, p := range ps {
		key.WriteByte(0)
		key.Write(p.Format())
	}
	if out, ok := s.policyMemo.get(key.String()); ok {
		return out
	}
	var out []translog.PolicyResult
	for _, p := range ps {
		r, err := translog.CheckPolicy(cp, p)
		if err != nil {
			s.log.Error("check the checkpoint against a witness policy", "policy", p.Name, "err", err)
			return nil
		}
		out = append(out, r)
	}
	s.policyMemo.put(key.String(), out)
	return out
}

// policyMemo keeps the last checkpoint's policy results, keyed by the checkpoint and the
// policies' text: every run page shows the same published checkpoint until the next one, and
// checking it (the log's signature and each cosignature verified) was a sixth of a run
// page's CPU. A new checkpoint or a witness registered changes the key.
type policyMemo struct {
	mu  sync.Mutex
	key string
	out []translog.PolicyResult
}

func (m *policyMemo) get(key string) ([]translog.PolicyResult, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.out == nil || m.key != key {
		return nil, false
	}
	return slices.Clone(m.out), true
}

func (m *policyMemo) put(key string, out []translog.PolicyResult) {
	m.mu.Lock()
	m.key, m.out = key, slices.Clone(out)
	m.mu.Unlock()
}

// apiRunInclusion returns a run's log index, the checkpoint and the inclusion proof, or
// {"pending": true} until the run is integrated.
func (s *Server) apiRunInclusion(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	inc, err := s.tlog.Inclusion(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, inc)
}

// runLogStatus builds the run page's log status: pending, or the index, tree size and
// proof. A run published before the log existed has no entry and says so.
func (s *Server) runLogStatus(ctx context.Context, runID int64) templates.LogStatusView {
	v := templates.LogStatusView{RunID: runID, Origin: s.tlog.Origin(), InclusionURL: fmt.Sprintf("/api/v1/runs/%d/inclusion", runID),
		LogURL: s.cfg.PortalURL() + "/log", LogKey: s.tlog.VerifierKey()}
	inc, err := s.tlog.Inclusion(ctx, runID)
	switch {
	case fault.KindOf(err) == fault.NotFound:
		v.NotLogged = true
		return v
	case err != nil:
		s.log.Error("log status of run", "run", runID, "err", err)
		v.Unavailable = true
		return v
	}
	v.Pending = inc.Pending
	if !inc.Pending {
		v.Index, v.TreeSize = inc.Index, inc.TreeSize
		for _, h := range inc.Proof {
			v.Proof = append(v.Proof, h.String())
		}
		v.Witnessed = strings.Count(inc.Checkpoint, "\n— ") - 1
		for _, r := range s.checkpointPolicies(ctx, []byte(inc.Checkpoint)) {
			v.Policies = append(v.Policies, templates.LogPolicyView{Name: r.Policy, Satisfied: r.Satisfied, Cosigned: len(r.Cosigned),
				Threshold: r.Threshold, Members: r.Members, URL: policyURL(r.Policy)})
		}
	}
	return v
}

// logHome is GET /log, the log's address as `pqrepro serve` prints it: a page with the
// origin, the key to pin, the size and the links to the log's files.
func (s *Server) logHome(c echo.Context) error {
	ctx := c.Request().Context()
	st, err := s.store.LogState(ctx)
	if err != nil {
		return err
	}
	n, err := s.store.PendingLogEntries(ctx)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.LogHome(templates.LogHomeView{Page: s.page(c, "Transparency log"), Origin: s.tlog.Origin(),
		LogURL: s.cfg.PortalURL() + "/log", LogKey: s.tlog.VerifierKey(), Size: st.Published, Pending: n}))
}

// logInfo is GET /api/v1/log: what to pin and how far the log is.
type logInfo struct {
	Origin string `json:"origin"`
	// LogKey is the log's verifier key. Fetched from the portal itself it is only
	// trust-on-first-use: pin it from a source the operator cannot change alone.
	LogKey    string             `json:"log_key"`
	Witnesses []translog.Witness `json:"witnesses"`
	// Policies say which of the log's witness policies (/log/policy, /log/policy/post-quantum)
	// the published checkpoint satisfies.
	Policies []translog.PolicyResult `json:"policies"`
	// Size is the published checkpoint's size; Integrated may be ahead while tiles are written.
	Size       int64 `json:"size"`
	Integrated int64 `json:"integrated"`
	Pending    int   `json:"pending"`
}

// apiTransparencyLog describes the log: origin, key, registered witnesses and sizes.
func (s *Server) apiTransparencyLog(c echo.Context) error {
	ctx := c.Request().Context()
	st, err := s.store.LogState(ctx)
	if err != nil {
		return err
	}
	ws, err := s.store.Witnesses(ctx)
	if err != nil {
		return err
	}
	n, err := s.store.PendingLogEntries(ctx)
	if err != nil {
		return err
	}
	if ws == nil {
		ws = []translog.Witness{}
	}
	info := logInfo{Origin: s.tlog.Origin(), LogKey: s.tlog.VerifierKey(), Witnesses: ws, Size: st.Published, Integrated: st.Size, Pending: n,
		Policies: []translog.PolicyResult{}}
	if st.Published > 0 {
		if cp, err := s.tlog.Checkpoint(ctx); err == nil {
			if rs := s.checkpointPolicies(ctx, cp); rs != nil {
				info.Policies = rs
			}
		}
	}
	return c.JSON(http.StatusOK, info)
}

// policyURL is where a policy is served.
func policyURL(name string) string {
	if name == translog.PolicyEcosystem {
		return "/log/policy"
	}
	return "/log/policy/" + name
}
