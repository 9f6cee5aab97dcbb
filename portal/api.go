package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/ingest"
	"pqrepro/portal/rpc"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
)

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": s.cfg.Version})
}

func bindJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fault.Wrap(fault.Invalid, err, "malformed JSON body: %s", err.Error())
	}
	return nil
}

func pathID(c echo.Context, name string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimSuffix(c.Param(name), ".json"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fault.New(fault.NotFound, "no such %s", name)
	}
	return id, nil
}

func runnerOf(c echo.Context) store.Runner { return c.Get("runner").(store.Runner) }

// The runner protocol's handlers decode a request, call the rpc.Service with the
// authenticated runner in the context, and encode its answer.

// apiEnrol registers a runner: POST /api/v1/runners/enrol with an EnrolRequest (rpc.Service.Enrol).
func (s *Server) apiEnrol(c echo.Context) error {
	var req protocol.EnrolRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	resp, err := s.rpc.Enrol(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// runnerContext is the request's context with its authenticated runner (requireRunner).
func runnerContext(c echo.Context) context.Context {
	return rpc.WithRunner(c.Request().Context(), runnerOf(c))
}

// apiLease hands out the next job for the runner's available boards, waiting up to ?wait=
// seconds (long poll; default and at most Config.LongPoll); 204 when none arrived in time.
func (s *Server) apiLease(c echo.Context) error {
	wait := s.cfg.LongPoll
	if w := c.QueryParam("wait"); w != "" {
		secs, err := strconv.ParseFloat(w, 64)
		if err != nil || secs < 0 {
			return fault.New(fault.Invalid, "wait must be a number of seconds")
		}
		wait = time.Duration(secs * float64(time.Second))
	}
	l, err := s.rpc.Lease(runnerContext(c), wait)
	if err != nil {
		return err
	}
	if l == nil {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, l)
}

func (s *Server) apiHeartbeat(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var req protocol.HeartbeatRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	exp, err := s.rpc.Extend(runnerContext(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.HeartbeatResponse{ExpiresAt: exp})
}

// apiLog stores log chunk :index of the current attempt; the body is the text.
func (s *Server) apiLog(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	idx, err := strconv.Atoi(c.Param("index"))
	if err != nil {
		return fault.New(fault.Invalid, "log chunk index must be a number from 0")
	}
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "read log chunk")
	}
	if err := s.rpc.AppendLog(runnerContext(c), id, c.Request().Header.Get(protocol.ProtocolHeaderLease), idx, data); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiFail(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var req protocol.FailRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := s.rpc.Fail(runnerContext(c), id, req); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiComplete takes the signed bundle (.tar.gz body) for a held lease (rpc.Service.Complete).
func (s *Server) apiComplete(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	data, err := readLimited(c.Request().Body, s.cfg.MaxBundleBytes)
	if err != nil {
		return err
	}
	resp, err := s.rpc.Complete(runnerContext(c), id, c.Request().Header.Get(protocol.ProtocolHeaderLease), data)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

func readLimited(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fault.Wrap(fault.Invalid, err, "read upload")
	}
	if int64(len(data)) > max {
		return nil, fault.New(fault.TooLarge, "the upload is larger than the limit of %s", bytesHuman(max))
	}
	return data, nil
}

// submitCommunity verifies a community bundle: it must verify, and be signed by keys the
// submitter registered; then it is published with origin community.
//
// A bundle already published (the same bytes) is not published again: its run's id is
// returned, with nothing stored, to its own submitter at once and to anyone else only after
// the same checks (so someone else's bundle is refused as signed by a key that is not theirs).
func (s *Server) submitCommunity(ctx context.Context, u store.User, data []byte) (runID int64, already bool, err error) {
	if run, err := s.store.RunByBundle(ctx, ingest.BundleDigest(data)); err == nil && run.SubmitterID == u.ID {
		return run.ID, true, nil
	} else if err != nil && !fault.Is(err, fault.NotFound) {
		return 0, false, err
	}
	id, err := s.checkAndPublish(ctx, u, data)
	var dup *store.DuplicateBundleError
	if errors.As(err, &dup) {
		return dup.RunID, true, nil // published before, or meanwhile by a concurrent submission
	}
	return id, false, err
}

// checkAndPublish verifies a community bundle against the submitter's registered keys and
// publishes it.
func (s *Server) checkAndPublish(ctx context.Context, u store.User, data []byte) (int64, error) {
	b, err := s.ingest.Read(data)
	if err != nil {
		return 0, err
	}
	v, err := attest.Verify(b, nil)
	if err != nil {
		return 0, ingest.VerifyRefusal(err)
	}
	k, err := s.store.SubmitterKeyByFingerprint(ctx, v.KeyFingerprint)
	if err != nil {
		if fault.Is(err, fault.NotFound) {
			return 0, fault.New(fault.Invalid, "unknown key: the bundle is signed by %s, which is not registered; register your runner's public keys first", v.KeyFingerprint)
		}
		return 0, err
	}
	if k.UserID != u.ID {
		return 0, fault.New(fault.Invalid, "unknown key: %s is registered to another account", v.KeyFingerprint)
	}
	if !k.RevokedAt.IsZero() {
		return 0, fault.New(fault.Invalid, "revoked key: %s was revoked by the administrator at %s", v.KeyFingerprint, k.RevokedAt.Format(time.RFC3339))
	}
	return s.publish(ctx, b, ingest.Incoming{Data: data, Keys: k.PublicKeys, Origin: attest.OriginCommunity, Submitter: u.ID})
}

// submitterOf authenticates a tool by its bearer token: a submitter's (or any member's)
// account token.
func (s *Server) submitterOf(c echo.Context) (store.User, error) {
	tok, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	if !ok {
		return store.User{}, fault.New(fault.Unauthorized, "missing submitter token")
	}
	u, err := s.store.UserByToken(c.Request().Context(), token.Hash(tok))
	if err != nil {
		if fault.Is(err, fault.NotFound) {
			return store.User{}, fault.New(fault.Unauthorized, "unknown submitter token")
		}
		return store.User{}, err
	}
	return u, nil
}

// apiRegisterKeys registers a runner's public keys under the submitter's account, so bundles
// signed with them can be submitted: POST /api/v1/submitters/keys with a KeyRegistration
// whose proof signs a challenge (purpose submitter-keys) with both keys.
func (s *Server) apiRegisterKeys(c echo.Context) error {
	u, err := s.submitterOf(c)
	if err != nil {
		return err
	}
	var req protocol.KeyRegistration
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	fp, err := s.addSubmitterKeys(c.Request().Context(), u, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.KeyRegistrationResponse{Fingerprint: fp})
}

// addSubmitterKeys checks the proof of possession of the keys and registers them under u.
func (s *Server) addSubmitterKeys(ctx context.Context, u store.User, req protocol.KeyRegistration) (string, error) {
	if err := req.PublicKeys.Validate(); err != nil {
		return "", fault.Wrap(fault.Invalid, err, "public keys: %s", err.Error())
	}
	if err := s.rpc.CheckPossession(ctx, identity.PurposeSubmitterKeys, req.PublicKeys, req.Proof); err != nil {
		return "", err
	}
	label := strings.TrimSpace(req.Label)
	if len(label) > 200 {
		label = label[:200]
		for !utf8.ValidString(label) { // not cut inside a character
			label = label[:len(label)-1]
		}
	}
	if label != "" {
		if err := artifacts.CheckName("key label", label, 200); err != nil {
			return "", fault.Wrap(fault.Invalid, err, "%s", err.Error())
		}
	}
	if _, err := s.store.AddSubmitterKey(ctx, u.ID, label, req.PublicKeys); err != nil {
		s.log.Info("key registration refused", "account", u.ID, "keys", req.PublicKeys.Fingerprint(), "reason", fault.Message(err))
		return "", err
	}
	s.log.Info("submitter keys registered", "account", u.ID, "keys", req.PublicKeys.Fingerprint())
	return req.PublicKeys.Fingerprint(), nil
}

// apiSubmit is the community submission endpoint for tools: the bearer token is the
// submitter's account token, the body the .tar.gz bundle.
func (s *Server) apiSubmit(c echo.Context) error {
	ctx := c.Request().Context()
	u, err := s.submitterOf(c)
	if err != nil {
		return err
	}
	data, err := readLimited(c.Request().Body, s.cfg.MaxBundleBytes)
	if err != nil {
		return err
	}
	id, already, err := s.submitCommunity(ctx, u, data)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, protocol.CompleteResponse{RunID: id, URL: fmt.Sprintf("/runs/%d", id), AlreadyPublished: already})
}

// apiRunJSON is a run as the public API serves it.
type apiRunJSON struct {
	ID          int64            `json:"id"`
	URL         string           `json:"url"`
	Experiment  string           `json:"experiment"`
	Paper       string           `json:"paper"`
	ManifestID  string           `json:"manifestId"`
	Kind        artifacts.Kind   `json:"kind,omitempty"`
	Board       string           `json:"board"`
	Level       artifacts.Level  `json:"level"`
	Method      artifacts.Method `json:"method"`
	ClassStatus string           `json:"classStatus"`
	Origin      string           `json:"origin"`
	Binding     string           `json:"binding"`
	Signer      string           `json:"signer"`
	// SignerRevoked is when the keys that signed the run were revoked (absent if they were
	// not); the run stays published, flagged.
	SignerRevoked *time.Time           `json:"signerRevoked,omitempty"`
	Bundle        string               `json:"bundle"`
	Firmware      string               `json:"firmware,omitempty"`
	StartedAt     time.Time            `json:"startedAt"`
	FinishedAt    time.Time            `json:"finishedAt"`
	PublishedAt   time.Time            `json:"publishedAt"`
	CellsOK       int                  `json:"cellsOk"`
	CellsTotal    int                  `json:"cellsTotal"`
	Cells         []artifacts.Cell     `json:"cells,omitempty"`
	Comparison    json.RawMessage      `json:"comparison,omitempty"`
	Environment   json.RawMessage      `json:"environment,omitempty"`
	Claims        []store.ClaimVerdict `json:"claims,omitempty"`
}

func runJSON(r store.Run) apiRunJSON {
	return apiRunJSON{ID: r.ID, URL: fmt.Sprintf("/runs/%d", r.ID), Experiment: r.Experiment, Paper: r.Paper, ManifestID: r.ManifestID, Kind: r.Kind,
		Board: r.BoardClass, Level: r.Level, Method: r.Method, ClassStatus: r.ClassStatus, Origin: r.Origin, Binding: r.Binding, Signer: r.Signer, Bundle: r.Bundle, Firmware: r.Firmware,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, PublishedAt: r.PublishedAt, CellsOK: r.CellsOK, CellsTotal: r.CellsTotal}
}

func (s *Server) apiRun(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	out := runJSON(r)
	rev, err := s.store.SignerRevoked(ctx, r)
	if err != nil {
		return err
	}
	if !rev.IsZero() {
		out.SignerRevoked = &rev
	}
	if out.Cells, err = s.store.Cells(ctx, id); err != nil {
		return err
	}
	if out.Claims, err = s.store.ClaimVerdicts(ctx, "", id); err != nil {
		return err
	}
	out.Comparison, out.Environment = json.RawMessage(r.Report), json.RawMessage(r.Environment)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiPapers(c echo.Context) error {
	type exp struct {
		Ref    string
		Kind   artifacts.Kind
		Method artifacts.Method
		Title  string
		Cells  int
		// Role is a tls-matrix's spec.tls.role (client or server).
		Role string `json:",omitempty"`
	}
	type paper struct {
		ID, Title, Citation string
		Experiments         []exp
		Claims              int
		References          int
	}
	var out []paper
	for _, p := range s.catalog.Papers {
		pp := paper{ID: p.ID, Title: p.Title, Citation: p.Citation, Claims: len(p.Claims), References: len(p.Reference), Experiments: []exp{}}
		for _, m := range p.Manifests {
			pp.Experiments = append(pp.Experiments, exp{m.Ref(), m.Kind, m.Spec.Method, m.Metadata.Title, len(m.Cells()), experimentRole(m)})
		}
		out = append(out, pp)
	}
	return c.JSON(http.StatusOK, out)
}

// runCSV serves a run's cells as CSV.
func (s *Server) runCSV(c echo.Context) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return err
	}
	cells, err := s.store.Cells(ctx, id)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := newCSV(&buf)
	w.Write([]string{"run", "experiment", "board", "level", "origin", "method", "class_status", "algorithm", "operation", "status", "unit", "n", "min", "p25", "median", "p75", "max", "mean", "stddev", "error",
		"implementation", "keys", "message_bytes"})
	for _, cl := range cells {
		row := []string{strconv.FormatInt(r.ID, 10), r.Experiment, r.BoardClass, string(r.Level), r.Origin, string(r.Method), r.ClassStatus, cl.Algorithm, cl.Operation, string(cl.Status), string(cl.Unit)}
		if st := cl.Stats; st != nil {
			row = append(row, strconv.Itoa(st.N), ff(st.Min), ff(st.P25), ff(st.Median), ff(st.P75), ff(st.Max), ff(st.Mean), ff(st.Stddev), cl.Error)
		} else {
			row = append(row, "0", "", "", "", "", "", "", "", cl.Error)
		}
		impl, msg := "", 0
		if cl.Implementation != nil {
			impl = cl.Implementation.Name // the key the cell is filed under
		}
		if cl.Sizes != nil {
			msg = cl.Sizes.Message
		}
		row = append(row, impl, cl.Keys, strconv.Itoa(msg))
		w.Write(row)
	}
	w.Flush()
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="run-%d.csv"`, id))
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}

func ff(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// openRunBundle opens the stored bundle of the run named by the :id parameter; the caller
// closes it.
func (s *Server) openRunBundle(c echo.Context) (io.ReadCloser, int64, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, 0, err
	}
	r, err := s.store.Run(c.Request().Context(), id)
	if err != nil {
		return nil, 0, err
	}
	rc, err := s.blobs.Open(c.Request().Context(), r.Bundle)
	return rc, id, err
}

// runBundle serves the signed bundle exactly as it was uploaded.
func (s *Server) runBundle(c echo.Context) error {
	rc, id, err := s.openRunBundle(c)
	if err != nil {
		return err
	}
	defer rc.Close()
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="run-%d.tar.gz"`, id))
	return c.Stream(http.StatusOK, "application/gzip", rc)
}

// runManifest serves the manifest a run ran, from its stored bundle: what an "own manifest"
// run links to instead of a catalogue experiment.
func (s *Server) runManifest(c echo.Context) error {
	return s.serveBundleFile(c, artifacts.FileManifest, "text/plain; charset=utf-8")
}

// runResultJSON serves result.json from the stored bundle.
func (s *Server) runResultJSON(c echo.Context) error {
	return s.serveBundleFile(c, artifacts.FileResult, "application/json")
}

// serveBundleFile serves one file of the run's stored bundle.
func (s *Server) serveBundleFile(c echo.Context, name, contentType string) error {
	rc, id, err := s.openRunBundle(c)
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := artifacts.ReadTarGz(rc, s.cfg.MaxBundleBytes)
	if err != nil {
		return fmt.Errorf("read stored bundle of run %d: %w", id, err)
	}
	return c.Blob(http.StatusOK, contentType, b.Files[name])
}
