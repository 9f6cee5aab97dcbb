package translog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/internal/webclient"
	"pqrepro/portal/fault"
)

// The push side of C2SP tlog-witness: the log sends each new checkpoint, with a consistency
// proof from the last size the witness has seen, to POST <witness URL>/add-checkpoint:
//
//	old <size the witness has seen>
//	<consistency proof, one base64 hash a line (none when old is 0 or the sizes are equal)>
//	<empty line>
//	<the checkpoint note, signed by the log>
//
// and the witness answers 200 with its cosignature lines, or 409 (text/x.tlog.size) with the
// size it has seen when old is not it; 403 when the log's signature does not verify with the
// key it has for the origin, 404 when it does not know the origin, 422 for a bad proof.

// MaxAddCheckpointAnswer bounds a witness's answer.
const MaxAddCheckpointAnswer = 16 << 10

// ErrWitnessAhead is wrapped when a witness has seen a larger tree than the log's published
// one: either the log lost its state or someone showed the witness a fork under this origin.
var ErrWitnessAhead = errors.New("the witness has seen a larger tree than this log's")

// pushState is what the log remembers of each pushed witness, in memory: the size it last
// saw (learnt from its answers; 0 on start, corrected by its first 409) and the last error,
// so a failing witness is reported once, not every round.
type pushState struct {
	mu    sync.Mutex
	known map[string]int64
	err   map[string]string
}

// AddCheckpointBody is the add-checkpoint request for the checkpoint note cp (signed by the
// log, of size size) from a witness that has seen old, with proof the consistency proof
// from old to size.
func AddCheckpointBody(old int64, proof tlog.TreeProof, cp []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(h.String())
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(cp)
	return b.Bytes()
}

// PushWitness sends the published checkpoint to w (which must have a URL) and keeps the
// cosignatures it answers with (AcceptCosignature's checks apply). It returns how many it
// kept. A witness that has seen another size is asked again once from that size; one that has
// seen a larger tree fails with ErrWitnessAhead.
func (l *Log) PushWitness(ctx context.Context, client *http.Client, w Witness) (int, error) {
	if w.URL == "" {
		return 0, fmt.Errorf("witness %s has no URL to push to", w.Name)
	}
	st, err := l.store.LogState(ctx)
	if err != nil {
		return 0, err
	}
	if st.Published == 0 {
		return 0, fault.New(fault.NotFound, "the log has no checkpoint yet")
	}
	old := l.push.knownSize(w.Name)
	for try := 0; ; try++ {
		if old > st.Published {
			return 0, fmt.Errorf("%w: %s has seen size %d, this log has published %d", ErrWitnessAhead, w.Name, old, st.Published)
		}
		var proof tlog.TreeProof
		if old > 0 && old < st.Published {
			proof, err = tlog.ProveTree(st.Published, old, l.hashReader(ctx))
			if err != nil {
				return 0, fmt.Errorf("consistency proof from %d to %d: %w", old, st.Published, err)
			}
		}
		sigs, known, err := postAddCheckpoint(ctx, client, w.URL, AddCheckpointBody(old, proof, st.Checkpoint))
		if known >= 0 && try == 0 {
			l.push.setKnown(w.Name, known)
			old = known
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("witness %s: %w", w.Name, err)
		}
		n, err := l.AcceptCosignature(ctx, append(append([]byte(nil), st.Checkpoint...), sigs...))
		if err != nil {
			return 0, fmt.Errorf("witness %s answered with a cosignature the log refuses: %w", w.Name, err)
		}
		l.push.setKnown(w.Name, st.Published)
		return n, nil
	}
}

// postAddCheckpoint sends one add-checkpoint request. It returns the witness's signature
// lines, or (on 409) the size it has seen (else -1).
func postAddCheckpoint(ctx context.Context, client *http.Client, prefix string, body []byte) ([]byte, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(prefix, "/")+"/add-checkpoint", bytes.NewReader(body))
	if err != nil {
		return nil, -1, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, -1, fmt.Errorf("add-checkpoint: %w", webclient.Transport(err))
	}
	defer resp.Body.Close()
	b, err := webclient.ReadBody(resp, MaxAddCheckpointAnswer)
	if err != nil {
		return nil, -1, fmt.Errorf("add-checkpoint: %w", err)
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return b, -1, nil
	case http.StatusConflict:
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n < 0 {
			return nil, -1, fmt.Errorf("add-checkpoint: 409 without a size (%q)", msg)
		}
		return nil, n, fmt.Errorf("add-checkpoint: the witness has seen size %d", n)
	case http.StatusNotFound:
		return nil, -1, fmt.Errorf("add-checkpoint: 404: the witness does not know this log (add its origin and key there): %s", msg)
	case http.StatusForbidden:
		return nil, -1, fmt.Errorf("add-checkpoint: 403: the witness does not accept the log's signature (is its key for this origin the log's?): %s", msg)
	case http.StatusUnprocessableEntity:
		return nil, -1, fmt.Errorf("add-checkpoint: 422: the witness refused the consistency proof: %s", msg)
	}
	return nil, -1, fmt.Errorf("add-checkpoint: %s: %s", resp.Status, msg)
}

func (p *pushState) knownSize(name string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known[name]
}

func (p *pushState) setKnown(name string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known = map[string]int64{}
	}
	p.known[name] = n
}

// changed records err as name's latest push outcome and reports whether it differs from the
// previous one.
func (p *pushState) changed(name string, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = map[string]string{}
	}
	s := ""
	if err != nil {
		s = err.Error()
	}
	old, seen := p.err[name]
	p.err[name] = s
	return !seen || old != s
}

// PushWitnesses pushes the published checkpoint to every registered witness with a URL that
// has not cosigned it yet, one after the other, each bounded by client. A witness whose
// outcome changed (first success, a new error, recovery) is logged once.
func (l *Log) PushWitnesses(ctx context.Context, client *http.Client) {
	if l.wit == nil {
		return
	}
	ws, err := l.wit.Witnesses(ctx)
	if err != nil {
		l.log.Warn("push to witnesses: list them", "err", err)
		return
	}
	st, err := l.store.LogState(ctx)
	if err != nil || st.Published == 0 {
		return
	}
	lines, err := l.wit.Cosignatures(ctx, st.Published)
	if err != nil {
		return
	}
	for _, w := range ws {
		if w.URL == "" || cosignedBy(lines, w.Name) {
			continue
		}
		n, err := l.PushWitness(ctx, client, w)
		if ctx.Err() != nil {
			return
		}
		if l.push.changed(w.Name, err) {
			if err != nil {
				l.log.Warn("witness did not cosign", "witness", w.Name, "size", st.Published, "err", err)
			} else {
				l.log.Info("witness cosigned", "witness", w.Name, "size", st.Published, "cosignatures", n)
			}
		}
	}
}

func cosignedBy(lines []string, name string) bool {
	for _, ln := range lines {
		if s, ok := parseSigLine(ln); ok && s.Name == name {
			return true
		}
	}
	return false
}

// RegisterPushWitness registers a witness the log pushes to: it sends the published
// checkpoint to url and registers the witness only when the cosignatures it answers with
// verify under the keys given (Ed25519 required, ML-DSA-44 when given): answering is the
// proof of possession. It keeps those cosignatures.
func (l *Log) RegisterPushWitness(ctx context.Context, client *http.Client, edKey, mlKey, url string) (Witness, error) {
	if l.wit == nil {
		return Witness{}, errors.New("this log keeps no witnesses")
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") || len(url) > 500 {
		return Witness{}, fault.New(fault.Invalid, "witness URL %q: want the http(s) prefix its add-checkpoint is under", url)
	}
	vs, err := witnessVerifiers(edKey, mlKey)
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness keys: %s", err.Error())
	}
	st, err := l.store.LogState(ctx)
	if err != nil {
		return Witness{}, err
	}
	if st.Published == 0 {
		return Witness{}, fault.New(fault.Conflict, "the log has no checkpoint yet for the witness to cosign: publish a run first")
	}
	w := Witness{Name: vs[0].Name(), Ed25519: edKey, MLDSA44: mlKey, URL: url, Added: l.Now()}
	// Ask as a witness that has seen nothing; a 409 tells the size it has seen.
	var sigs []byte
	old := int64(0)
	for try := 0; ; try++ {
		var proof tlog.TreeProof
		if old > 0 && old < st.Published {
			if proof, err = tlog.ProveTree(st.Published, old, l.hashReader(ctx)); err != nil {
				return Witness{}, err
			}
		}
		var known int64
		sigs, known, err = postAddCheckpoint(ctx, client, url, AddCheckpointBody(old, proof, st.Checkpoint))
		if known >= 0 && try == 0 && known <= st.Published {
			old = known
			continue
		}
		if err != nil {
			return Witness{}, fault.Wrap(fault.Invalid, err, "witness %s at %s: %s", w.Name, url, err.Error())
		}
		break
	}
	n, err := note.Open(append(append([]byte(nil), st.Checkpoint...), sigs...), note.VerifierList(append([]note.Verifier{l.verifier}, vs...)...))
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness %s at %s answered with cosignatures that do not verify under the keys given: %s", w.Name, url, err.Error())
	}
	got := map[uint32]bool{}
	for _, s := range n.Sigs {
		got[s.Hash] = true
	}
	for i, v := range vs {
		if got[v.KeyHash()] {
			continue
		}
		if len(n.UnverifiedSigs) > 0 {
			return Witness{}, fault.New(fault.Invalid, "witness %s at %s answered with cosignatures that do not verify under the keys given (key %08x of %s)", w.Name, url, n.UnverifiedSigs[0].Hash, n.UnverifiedSigs[0].Name)
		}
		return Witness{}, fault.New(fault.Invalid, "witness %s at %s answered without an %s cosignature", w.Name, url, []string{"Ed25519", "ML-DSA-44"}[i])
	}
	if err := l.wit.AddWitness(ctx, w); err != nil {
		return Witness{}, fmt.Errorf("register witness %s: %w", w.Name, err)
	}
	l.push.setKnown(w.Name, st.Published)
	if _, err := l.AcceptCosignature(ctx, append(append([]byte(nil), st.Checkpoint...), sigs...)); err != nil {
		return Witness{}, fmt.Errorf("keep the cosignatures of %s: %w", w.Name, err)
	}
	return w, nil
}
