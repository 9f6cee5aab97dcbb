// Package translog is pqrepro's transparency log of published runs: a Merkle tree (RFC 6962
// hashing, golang.org/x/mod/sumdb/tlog) whose tiles and checkpoint are written in the C2SP
// tlog-tiles layout through blob.Files, with the tree state (size, root, stored hashes) in the
// SQL store behind the small Store interface, so every portal replica serves the same log.
//
// A leaf is a published run's bundle digest bound to its run id and publication time (see
// Leaf). Publishing a run queues its leaf in the same transaction as the run; one sequencer at
// a time (a lock row in the store) integrates queued leaves in order, stores the new hashes,
// writes the tiles and entry bundles, and finally the checkpoint: a C2SP tlog-checkpoint in a
// signed note (Ed25519, the log's key). Witnesses cosign checkpoints (C2SP tlog-cosignature,
// Ed25519 and ML-DSA-44); only a checkpoint cosigned by witnesses a reader trusts lets the
// reader believe the operator did not show it a fork of the log.
package translog

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// LeafHeader is the first line of every leaf.
const LeafHeader = "pqrepro-run/v1"

// MaxLeafBytes bounds an encoded leaf (an entry bundle's 16-bit length allows 65535).
const MaxLeafBytes = 512

// Leaf is what the log records of one published run. Its encoding (Encode) is four lines,
// each ending in a newline (0x0A), ASCII only:
//
//	pqrepro-run/v1
//	run <run id, decimal, no leading zeros, > 0>
//	bundle sha256:<64 lowercase hex: SHA-256 of the bundle .tar.gz as published>
//	published <publication time, Unix milliseconds, decimal, no leading zeros>
//
// The Merkle leaf hash is RFC 6962's SHA-256(0x00 || encoding).
type Leaf struct {
	// RunID is the published run's id on the portal.
	RunID int64
	// Bundle is the digest of the signed bundle archive ("sha256:<hex>").
	Bundle string
	// Published is when the run was published (stored to the millisecond).
	Published time.Time
}

var (
	bundleRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	numRE    = regexp.MustCompile(`^(0|[1-9][0-9]{0,18})$`)
)

// ErrLeaf is wrapped by ParseLeaf and Encode errors.
var ErrLeaf = errors.New("malformed log leaf")

// Encode returns the leaf's canonical encoding; it fails on a field the grammar refuses.
func (l Leaf) Encode() ([]byte, error) {
	if l.RunID <= 0 {
		return nil, fmt.Errorf("%w: run id %d is not positive", ErrLeaf, l.RunID)
	}
	if !bundleRE.MatchString(l.Bundle) {
		return nil, fmt.Errorf("%w: bundle digest %q is not sha256:<64 hex>", ErrLeaf, l.Bundle)
	}
	ms := l.Published.UnixMilli()
	if ms < 0 {
		return nil, fmt.Errorf("%w: publication time %v is before 1970", ErrLeaf, l.Published)
	}
	return fmt.Appendf(nil, "%s\nrun %d\nbundle %s\npublished %d\n", LeafHeader, l.RunID, l.Bundle, ms), nil
}

// ParseLeaf parses a canonical leaf encoding, refusing anything else (so one run has exactly
// one encoding).
func ParseLeaf(data []byte) (Leaf, error) {
	if len(data) > MaxLeafBytes {
		return Leaf{}, fmt.Errorf("%w: %d bytes, at most %d", ErrLeaf, len(data), MaxLeafBytes)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		return Leaf{}, fmt.Errorf("%w: does not end in a newline", ErrLeaf)
	}
	lines := bytes.Split(data[:len(data)-1], []byte("\n"))
	if len(lines) != 4 {
		return Leaf{}, fmt.Errorf("%w: %d lines, want 4", ErrLeaf, len(lines))
	}
	if string(lines[0]) != LeafHeader {
		return Leaf{}, fmt.Errorf("%w: header %q, want %q", ErrLeaf, lines[0], LeafHeader)
	}
	field := func(i int, key string) (string, error) {
		k, v, ok := bytes.Cut(lines[i], []byte(" "))
		if !ok || string(k) != key {
			return "", fmt.Errorf("%w: line %d is not %q followed by a value", ErrLeaf, i+1, key)
		}
		return string(v), nil
	}
	run, err := field(1, "run")
	if err != nil {
		return Leaf{}, err
	}
	bundle, err := field(2, "bundle")
	if err != nil {
		return Leaf{}, err
	}
	pub, err := field(3, "published")
	if err != nil {
		return Leaf{}, err
	}
	if !numRE.MatchString(run) || !numRE.MatchString(pub) {
		return Leaf{}, fmt.Errorf("%w: run %q or published %q is not a canonical decimal", ErrLeaf, run, pub)
	}
	id, err1 := strconv.ParseInt(run, 10, 64)
	ms, err2 := strconv.ParseInt(pub, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Leaf{}, fmt.Errorf("%w: %w", ErrLeaf, err)
	}
	l := Leaf{RunID: id, Bundle: bundle, Published: time.UnixMilli(ms).UTC()}
	enc, err := l.Encode()
	if err != nil {
		return Leaf{}, err
	}
	if !bytes.Equal(enc, data) {
		return Leaf{}, fmt.Errorf("%w: not in canonical form", ErrLeaf)
	}
	return l, nil
}
