package translog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	"pqrepro/portal/fault"
)

// MaxCosignatureBytes bounds a cosignature submission.
const MaxCosignatureBytes = 32 << 10

// sigTime returns the timestamp of a timestamped_signature in a note signature's base64.
func sigTime(s note.Signature) (time.Time, error) {
	raw, err := decodeB64(s.Base64)
	if err != nil || len(raw) < 12 {
		return time.Time{}, errors.New("signature too short to carry a timestamp")
	}
	ts := binary.BigEndian.Uint64(raw[4:12])
	if ts > 1<<62 {
		return time.Time{}, errors.New("timestamp out of range")
	}
	return time.Unix(int64(ts), 0), nil
}

// witnessVerifiers parses a witness's vkeys: an Ed25519 cosignature/v1 key (type 0x04),
// required, and an ML-DSA-44 one (type 0x06), optional ("": a witness of the ecosystem that
// has only Ed25519), checking their types and common name.
func witnessVerifiers(ed, ml string) ([]note.Verifier, error) {
	ve, err := ParseVKey(ed)
	if err != nil {
		return nil, fmt.Errorf("ed25519 key: %w", err)
	}
	if cve, ok := ve.(*cosignVerifier); !ok || cve.typ != SigCosignEd25519 {
		return nil, fmt.Errorf("%w: the ed25519 key must be a cosignature/v1 key (type 0x04)", ErrKey)
	}
	if ml == "" {
		return []note.Verifier{ve}, nil
	}
	vm, err := ParseVKey(ml)
	if err != nil {
		return nil, fmt.Errorf("ml-dsa-44 key: %w", err)
	}
	if cvm, ok := vm.(*cosignVerifier); !ok || cvm.typ != SigCosignMLDSA44 {
		return nil, fmt.Errorf("%w: the ml-dsa-44 key must be an ML-DSA-44 cosignature key (type 0x06)", ErrKey)
	}
	if ve.Name() != vm.Name() {
		return nil, fmt.Errorf("%w: the keys name two witnesses (%q, %q)", ErrKey, ve.Name(), vm.Name())
	}
	return []note.Verifier{ve, vm}, nil
}

// NormalizeNote returns a signed note as pasted into a form or a terminal in its canonical
// shape: CRLF line ends made LF, surrounding blank space removed, and exactly one final
// newline (a copy often loses it).
func NormalizeNote(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return b
	}
	return append(b, '\n')
}

// cosignSkew is how far a cosignature's time may lie after the log's clock, or before the
// checkpoint it cosigns was made, and still be believed.
const cosignSkew = 10 * time.Minute

// RegisterWitness registers a witness's keys after checking its proof of possession: the
// log's own checkpoint (any size, signed by the log) cosigned with each key given at most
// maxAge ago (what `pqrepro witness --register` prints). mlKey may be "": a witness with an
// Ed25519 cosignature/v1 key only, as the ecosystem's witnesses have. The proof is
// normalised first (NormalizeNote). A proof that is stale, for another log, or missing a
// signature is a fault.Invalid error naming what failed.
func (l *Log) RegisterWitness(ctx context.Context, edKey, mlKey string, proof []byte, maxAge time.Duration) (Witness, error) {
	return l.registerWitness(ctx, Witness{Ed25519: edKey, MLDSA44: mlKey}, proof, maxAge)
}

func (l *Log) registerWitness(ctx context.Context, w Witness, proof []byte, maxAge time.Duration) (Witness, error) {
	if l.wit == nil {
		return Witness{}, errors.New("this log keeps no witnesses")
	}
	vs, err := witnessVerifiers(w.Ed25519, w.MLDSA44)
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness keys: %s", err.Error())
	}
	if len(proof) > MaxCosignatureBytes {
		return Witness{}, fault.New(fault.Invalid, "witness proof: larger than %d bytes", MaxCosignatureBytes)
	}
	proof = NormalizeNote(proof)
	n, err := note.Open(proof, note.VerifierList(append([]note.Verifier{l.verifier}, vs...)...))
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness proof: the cosigned checkpoint does not verify: %s", err.Error())
	}
	if _, err := ParseCheckpoint([]byte(n.Text)); err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness proof: %s", err.Error())
	}
	seen := map[uint32]bool{}
	for _, s := range n.Sigs {
		seen[s.Hash] = true
		for _, v := range vs {
			if s.Hash != v.KeyHash() {
				continue
			}
			t, err := sigTime(s)
			if err != nil || l.Now().Sub(t) > maxAge || t.Sub(l.Now()) > time.Minute {
				return Witness{}, fault.New(fault.Invalid, "witness proof: the cosignature is older than %v (or from the future): cosign a fresh checkpoint", maxAge)
			}
		}
	}
	if !seen[l.verifier.KeyHash()] {
		return Witness{}, fault.New(fault.Invalid, "witness proof: the checkpoint is not signed by this log (%s)", l.cfg.Origin)
	}
	for i, v := range vs {
		if !seen[v.KeyHash()] {
			return Witness{}, fault.New(fault.Invalid, "witness proof: no %s cosignature by %s", []string{"Ed25519", "ML-DSA-44"}[i], v.Name())
		}
	}
	w.Name, w.Added = vs[0].Name(), l.Now()
	if err := l.wit.AddWitness(ctx, w); err != nil {
		return Witness{}, fmt.Errorf("register witness %s: %w", w.Name, err)
	}
	return w, nil
}

// AcceptCosignature keeps the cosignatures in msg: the log's current published checkpoint,
// signed by the log, with cosignature lines by registered witnesses. It refuses (fault.Invalid)
// a note that is not the current checkpoint, a signature that does not verify, any
// signature by an unregistered key, and a cosignature dated more than a few minutes in the
// future or before the checkpoint was made. A cosignature older than the one already kept
// for the same key and checkpoint does not replace it. It returns how many of msg's
// cosignatures the log now holds.
func (l *Log) AcceptCosignature(ctx context.Context, msg []byte) (int, error) {
	if l.wit == nil {
		return 0, errors.New("this log keeps no witnesses")
	}
	if len(msg) > MaxCosignatureBytes {
		return 0, fault.New(fault.Invalid, "cosignature: larger than %d bytes", MaxCosignatureBytes)
	}
	ws, err := l.wit.Witnesses(ctx)
	if err != nil {
		return 0, err
	}
	vs := []note.Verifier{l.verifier}
	for _, w := range ws {
		wv, err := witnessVerifiers(w.Ed25519, w.MLDSA44)
		if err != nil {
			return 0, fmt.Errorf("registered witness %s: %w", w.Name, err)
		}
		vs = append(vs, wv...)
	}
	n, err := note.Open(NormalizeNote(msg), note.VerifierList(vs...))
	if err != nil {
		return 0, fault.Wrap(fault.Invalid, err, "cosignature refused: %s", err.Error())
	}
	if len(n.UnverifiedSigs) > 0 {
		return 0, fault.New(fault.Invalid, "cosignature refused: %q is not a registered witness key", n.UnverifiedSigs[0].Name)
	}
	st, err := l.store.LogState(ctx)
	if err != nil {
		return 0, err
	}
	cur, err := note.Open(st.Checkpoint, note.VerifierList(l.verifier))
	if err != nil || !bytes.Equal([]byte(cur.Text), []byte(n.Text)) {
		return 0, fault.New(fault.Conflict, "cosignature refused: it is not for the current checkpoint (size %d)", st.Published)
	}
	made, err := l.checkpointMade(ctx, st)
	if err != nil {
		return 0, err
	}
	have, err := l.keptTimes(ctx, st.Published)
	if err != nil {
		return 0, err
	}
	kept := 0
	for _, s := range n.Sigs {
		if s.Hash == l.verifier.KeyHash() && s.Name == l.verifier.Name() {
			continue
		}
		t, err := sigTime(s)
		switch {
		case err != nil:
			return 0, fault.New(fault.Invalid, "cosignature of %s refused: %s", s.Name, err.Error())
		case t.Sub(l.Now()) > cosignSkew:
			return 0, fault.New(fault.Invalid, "cosignature of %s refused: dated %s, in the future (check the witness's clock)", s.Name, t.UTC().Format(time.RFC3339))
		case made.Sub(t) > cosignSkew:
			return 0, fault.New(fault.Invalid, "cosignature of %s refused: dated %s, before checkpoint %d was made (%s)", s.Name, t.UTC().Format(time.RFC3339), st.Published, made.UTC().Format(time.RFC3339))
		}
		kept++
		if old, ok := have[s.Hash]; ok && !t.After(old) {
			continue // the one kept is as fresh or fresher
		}
		line := "— " + s.Name + " " + s.Base64
		if err := l.wit.AddCosignature(ctx, st.Published, s.Name, s.Hash, line); err != nil {
			return 0, fmt.Errorf("keep cosignature of %s: %w", s.Name, err)
		}
	}
	if kept == 0 {
		return 0, fault.New(fault.Invalid, "cosignature refused: the note carries no witness cosignature")
	}
	return kept, nil
}

// checkpointMade is the earliest the published checkpoint can have been made: the
// publication time of its last leaf.
func (l *Log) checkpointMade(ctx context.Context, st State) (time.Time, error) {
	if st.Published == 0 {
		return time.Time{}, nil
	}
	leaves, err := l.read.Leaves(ctx, st.Published-1, st.Published)
	if err != nil || len(leaves) != 1 {
		return time.Time{}, fmt.Errorf("read leaf %d: %w", st.Published-1, err)
	}
	lf, err := ParseLeaf(leaves[0])
	if err != nil {
		return time.Time{}, fmt.Errorf("leaf %d: %w", st.Published-1, err)
	}
	return lf.Published, nil
}

// keptTimes returns the time of each cosignature kept for the checkpoint of size, by key ID.
func (l *Log) keptTimes(ctx context.Context, size int64) (map[uint32]time.Time, error) {
	lines, err := l.wit.Cosignatures(ctx, size)
	if err != nil {
		return nil, err
	}
	out := map[uint32]time.Time{}
	for _, ln := range lines {
		s, ok := parseSigLine(ln)
		if !ok {
			continue
		}
		if t, err := sigTime(s); err == nil {
			out[s.Hash] = t
		}
	}
	return out, nil
}

// parseSigLine parses a signature line "— <name> <base64(key ID || signature)>".
func parseSigLine(line string) (note.Signature, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "— ")
	if !ok {
		return note.Signature{}, false
	}
	name, b64, ok := strings.Cut(rest, " ")
	raw, err := decodeB64(b64)
	if !ok || err != nil || len(raw) < 4 || name == "" {
		return note.Signature{}, false
	}
	return note.Signature{Name: name, Hash: binary.BigEndian.Uint32(raw), Base64: b64}, true
}

// Witnessing is one witness following one log: it fetches the checkpoint from Src, checks
// the log's signature (LogKey pinned) and consistency with the last checkpoint it saw
// (StateFile), records the new one, and cosigns it with both keys.
type Witnessing struct {
	Src       Source
	LogKey    string
	Cosigner  *Cosigner
	StateFile string
}

// Once fetches, checks and cosigns the current checkpoint. It returns the checkpoint and the
// note with the witness's two cosignatures added (to submit to the log). A fork or a
// rollback is an error wrapping ErrInconsistent, and nothing is cosigned or recorded.
func (w *Witnessing) Once(ctx context.Context) (VerifiedCheckpoint, []byte, error) {
	msg, err := w.Src.Get(ctx, CheckpointFile)
	if err != nil {
		return VerifiedCheckpoint{}, nil, err
	}
	vc, err := VerifyCheckpoint(msg, Trust{LogKey: w.LogKey})
	if err != nil {
		return VerifiedCheckpoint{}, nil, err
	}
	seen, err := LoadSeen(w.StateFile)
	if err != nil {
		return VerifiedCheckpoint{}, nil, err
	}
	if err := CheckConsistent(ctx, w.Src, seen, vc.Checkpoint); err != nil {
		return VerifiedCheckpoint{}, nil, err
	}
	if err := SaveSeen(w.StateFile, vc.Checkpoint); err != nil {
		return VerifiedCheckpoint{}, nil, fmt.Errorf("record checkpoint %d: %w", vc.Size, err)
	}
	lv, _ := ParseVKey(w.LogKey)
	logOnly := &note.Note{Text: vc.Note.Text}
	for _, s := range vc.Note.Sigs {
		if s.Name == lv.Name() && s.Hash == lv.KeyHash() {
			logOnly.Sigs = append(logOnly.Sigs, s)
		}
	}
	out, err := note.Sign(logOnly, w.Cosigner.Signers()...)
	if err != nil {
		return VerifiedCheckpoint{}, nil, fmt.Errorf("cosign checkpoint %d: %w", vc.Size, err)
	}
	return vc, out, nil
}
