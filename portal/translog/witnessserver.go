package translog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// WitnessServer is a C2SP tlog-witness for one log: it answers POST /add-checkpoint (see
// push.go for the request) by checking the log's signature (LogKey pinned), that old is the
// size it has seen (StateFile, the same file a pulling Witnessing keeps) and the consistency
// proof from there, then records the new checkpoint and answers with its cosignature lines,
// Ed25519 cosignature/v1 and ML-DSA-44. It is safe for concurrent use (one request at a time
// updates the state).
type WitnessServer struct {
	LogKey    string
	Cosigner  *Cosigner
	StateFile string

	mu sync.Mutex
}

var _ http.Handler = (*WitnessServer)(nil)

// witnessError is an add-checkpoint refusal: its HTTP status and text.
type witnessError struct {
	status int
	msg    string
}

func (e *witnessError) Error() string { return e.msg }

func (s *WitnessServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/add-checkpoint" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxCosignatureBytes+1))
	if err != nil {
		http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	sigs, known, err := s.AddCheckpoint(body)
	var we *witnessError
	switch {
	case known >= 0:
		w.Header().Set("Content-Type", "text/x.tlog.size")
		w.WriteHeader(http.StatusConflict)
		fmt.Fprintf(w, "%d\n", known)
	case errors.As(err, &we):
		http.Error(w, we.msg, we.status)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(sigs)
	}
}

// AddCheckpoint handles one add-checkpoint request body. It returns the cosignature lines,
// or (known ≥ 0) the size this witness has seen when the request's old size is not it, or an
// error whose status (witnessError) says why it refused.
func (s *WitnessServer) AddCheckpoint(body []byte) (sigs []byte, known int64, err error) {
	bad := func(format string, a ...any) ([]byte, int64, error) {
		return nil, -1, &witnessError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
	}
	if len(body) > MaxCosignatureBytes {
		return bad("request larger than %d bytes", MaxCosignatureBytes)
	}
	head, cp, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return bad("no empty line between the proof and the checkpoint")
	}
	lines := strings.Split(string(head), "\n")
	oldText, ok := strings.CutPrefix(lines[0], "old ")
	if !ok || !numRE.MatchString(oldText) {
		return bad("first line %q is not \"old <size>\"", lines[0])
	}
	old, _ := strconv.ParseInt(oldText, 10, 64)
	if len(lines)-1 > 63 {
		return bad("%d consistency proof lines, at most 63", len(lines)-1)
	}
	proof := make(tlog.TreeProof, 0, len(lines)-1)
	for i, ln := range lines[1:] {
		h, err := tlog.ParseHash(ln)
		if err != nil {
			return bad("proof line %d is not a base64 hash", i+1)
		}
		proof = append(proof, h)
	}
	lv, err := ParseVKey(s.LogKey)
	if err != nil {
		return nil, -1, fmt.Errorf("log key: %w", err)
	}
	origin, _, _ := strings.Cut(string(cp), "\n")
	if origin != lv.Name() {
		return nil, -1, &witnessError{http.StatusNotFound, fmt.Sprintf("unknown log %q: this witness follows %s", origin, lv.Name())}
	}
	n, err := note.Open(cp, note.VerifierList(lv))
	if err != nil {
		return nil, -1, &witnessError{http.StatusForbidden, "the checkpoint is not signed by the log's key: " + err.Error()}
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return bad("%v", err)
	}
	if old > c.Size {
		return bad("old size %d is larger than the checkpoint's %d", old, c.Size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, err := LoadSeen(s.StateFile)
	if err != nil {
		return nil, -1, err
	}
	have := int64(0)
	if seen != nil {
		have = seen.Size
	}
	if old != have {
		return nil, have, nil
	}
	if old > 0 {
		if err := tlog.CheckTree(proof, c.Size, c.Hash, old, seen.Hash); err != nil {
			return nil, -1, &witnessError{http.StatusUnprocessableEntity, fmt.Sprintf("the consistency proof from %d to %d does not hold: %v", old, c.Size, err)}
		}
	}
	if err := SaveSeen(s.StateFile, c); err != nil {
		return nil, -1, fmt.Errorf("record checkpoint %d: %w", c.Size, err)
	}
	signed, err := note.Sign(&note.Note{Text: n.Text}, s.Cosigner.Signers()...)
	if err != nil {
		return nil, -1, fmt.Errorf("cosign checkpoint %d: %w", c.Size, err)
	}
	_, sigBlock, _ := bytes.Cut(signed, []byte("\n\n"))
	return sigBlock, -1, nil
}
