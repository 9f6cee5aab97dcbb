package translog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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

// witnessVerifiers parses a witness's two vkeys, checking their types and common name.
func witnessVerifiers(ed, ml string) (note.Verifier, note.Verifier, error) {
	ve, err := ParseVKey(ed)
	if err != nil {
		return nil, nil, fmt.Errorf("ed25519 key: %w", err)
	}
	vm, err := ParseVKey(ml)
	if err != nil {
		return nil, nil, fmt.Errorf("ml-dsa-44 key: %w", err)
	}
	cve, ok1 := ve.(*cosignVerifier)
	cvm, ok2 := vm.(*cosignVerifier)
	if !ok1 || !ok2 || cve.typ != SigCosignEd25519 || cvm.typ != SigCosignMLDSA44 {
		return nil, nil, fmt.Errorf("%w: want an Ed25519 cosignature key (type 0x04) and an ML-DSA-44 one (type 0x06)", ErrKey)
	}
	if ve.Name() != vm.Name() {
		return nil, nil, fmt.Errorf("%w: the keys name two witnesses (%q, %q)", ErrKey, ve.Name(), vm.Name())
	}
	return ve, vm, nil
}

// RegisterWitness registers a witness's keys after checking its proof of possession: the
// log's own checkpoint (any size, signed by the log) cosigned with both keys at most maxAge
// ago (what `pqrepro witness --register` prints). A proof that is stale, for another log, or
// missing a signature is a fault.Invalid error naming what failed.
func (l *Log) RegisterWitness(ctx context.Context, edKey, mlKey string, proof []byte, maxAge time.Duration) (Witness, error) {
	if l.wit == nil {
		return Witness{}, errors.New("this log keeps no witnesses")
	}
	ve, vm, err := witnessVerifiers(edKey, mlKey)
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness keys: %s", err.Error())
	}
	if len(proof) > MaxCosignatureBytes {
		return Witness{}, fault.New(fault.Invalid, "witness proof: larger than %d bytes", MaxCosignatureBytes)
	}
	n, err := note.Open(proof, note.VerifierList(l.verifier, ve, vm))
	if err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness proof: the cosigned checkpoint does not verify: %s", err.Error())
	}
	if _, err := ParseCheckpoint([]byte(n.Text)); err != nil {
		return Witness{}, fault.Wrap(fault.Invalid, err, "witness proof: %s", err.Error())
	}
	seen := map[uint32]bool{}
	for _, s := range n.Sigs {
		seen[s.Hash] = true
		if s.Hash == ve.KeyHash() || s.Hash == vm.KeyHash() {
			t, err := sigTime(s)
			if err != nil || l.Now().Sub(t) > maxAge || t.Sub(l.Now()) > time.Minute {
				return Witness{}, fault.New(fault.Invalid, "witness proof: the cosignature is older than %v (or from the future): cosign a fresh checkpoint", maxAge)
			}
		}
	}
	switch {
	case !seen[l.verifier.KeyHash()]:
		return Witness{}, fault.New(fault.Invalid, "witness proof: the checkpoint is not signed by this log (%s)", l.cfg.Origin)
	case !seen[ve.KeyHash()]:
		return Witness{}, fault.New(fault.Invalid, "witness proof: no Ed25519 cosignature by %s", ve.Name())
	case !seen[vm.KeyHash()]:
		return Witness{}, fault.New(fault.Invalid, "witness proof: no ML-DSA-44 cosignature by %s", vm.Name())
	}
	w := Witness{Name: ve.Name(), Ed25519: edKey, MLDSA44: mlKey, Added: l.Now()}
	if err := l.wit.AddWitness(ctx, w); err != nil {
		return Witness{}, fmt.Errorf("register witness %s: %w", w.Name, err)
	}
	return w, nil
}

// AcceptCosignature keeps the cosignatures in msg: the log's current published checkpoint,
// signed by the log, with cosignature lines by registered witnesses. It refuses (fault.Invalid)
// a note that is not the current checkpoint, a signature that does not verify, and any
// signature by an unregistered key. It returns how many cosignatures it kept.
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
		ve, vm, err := witnessVerifiers(w.Ed25519, w.MLDSA44)
		if err != nil {
			return 0, fmt.Errorf("registered witness %s: %w", w.Name, err)
		}
		vs = append(vs, ve, vm)
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
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
	kept := 0
	for _, s := range n.Sigs {
		if s.Hash == l.verifier.KeyHash() && s.Name == l.verifier.Name() {
			continue
		}
		line := "— " + s.Name + " " + s.Base64
		if err := l.wit.AddCosignature(ctx, st.Published, s.Name, s.Hash, line); err != nil {
			return 0, fmt.Errorf("keep cosignature of %s: %w", s.Name, err)
		}
		kept++
	}
	if kept == 0 {
		return 0, fault.New(fault.Invalid, "cosignature refused: the note carries no witness cosignature")
	}
	return kept, nil
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
