// Package bench is the host board's benchmark kinds (kem-bench, sig-bench, kem-sig-sequence):
// the catalogue's algorithms wired to their implementations (Algorithms: circl for the
// post-quantum sets, the standard library for the classical baselines) and the cells that time
// them in process through package trial (Executor). The process-per-operation and openssl-cli
// methods reuse the implementations and the seeded messages.
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"pqrepro/artifacts"
	"pqrepro/runner/trial"
)

// Executor is a run of one of the benchmark kinds with the host's implementations; its
// signature cells share key pools.
type Executor struct {
	kems     map[string]*KEM
	sigs     map[string]*Sig
	sigState *sigState
}

// NewExecutor returns the executor of one run with the implementations kems and sigs
// (Algorithms).
func NewExecutor(kems map[string]*KEM, sigs map[string]*Sig) *Executor {
	return &Executor{kems: kems, sigs: sigs, sigState: &sigState{pools: map[string]*sigPool{}}}
}

// Cell implements trial.Executor.
func (b *Executor) Cell(ctx context.Context, c trial.Cell) (trial.Outcome, error) {
	switch c.Manifest.Kind {
	case artifacts.KindKEMBench:
		if k := b.kems[c.Ref.Algorithm]; k != nil {
			return kemCell(ctx, c.Manifest, c.Ref, c.Plan, k)
		}
	case artifacts.KindSigBench:
		if s := b.sigs[c.Ref.Algorithm]; s != nil {
			return sigCell(ctx, c.Manifest, c.Ref, c.Plan, s, b.sigState)
		}
	case artifacts.KindKEMSigSequence:
		return sequenceCell(ctx, c.Manifest, c.Ref, c.Plan, b.kems, b.sigs)
	}
	return noImpl(c.Ref), nil
}

func noImpl(ref artifacts.CellRef) trial.Outcome {
	return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "the host board has no implementation of " + ref.Algorithm}}
}

// Message returns the message for an iteration: the fixed text or fresh seeded bytes.
func Message(spec *artifacts.Spec, r *trial.DRBG) []byte {
	if spec.Message.Text != "" {
		return []byte(spec.Message.Text)
	}
	return r.Bytes(spec.Message.Size)
}

// kemIn is one iteration's prepared input: the randomness a keygen or encaps reads, the
// ciphertext and secret a decaps must reproduce, or the peer a derive agrees with.
type kemIn struct {
	ct, ss  []byte
	peer    KeyPair
	keySeed io.Reader
}

type kemOut struct {
	kp     KeyPair
	ct, ss []byte
}

// timedKey gives a timed operation its key in the manifest's form: with keys: encoded it
// decodes the key's bytes on every call (so unpacking is part of the sample, as liboqs and the
// openssl command line do it); with keys: parsed it returns the object decoded once.
func timedKey(spec *artifacts.Spec, parsed any, encoded []byte, parse func([]byte) (any, error)) func() (any, error) {
	if spec.Keys == artifacts.KeysParsed {
		return func() (any, error) { return parsed, nil }
	}
	return func() (any, error) {
		k, err := parse(encoded)
		if err != nil {
			return nil, fmt.Errorf("decode key: %w", err)
		}
		return k, nil
	}
}

// KeyForm is the key form a cell's timed operation received, for its record.
func KeyForm(spec *artifacts.Spec, op string) string {
	if op == artifacts.OpKeygen {
		return ""
	}
	return spec.Keys
}

func kemCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, k *KEM) (trial.Outcome, error) {
	purpose := ref.Algorithm + "/" + ref.Operation
	rng := trial.NewDRBG(m.Spec.Seed, purpose)
	key, err := k.Keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
	if err != nil {
		return trial.Outcome{Cell: trial.Failed("generate key: " + err.Error())}, nil
	}
	pub := timedKey(&m.Spec, key.Pub, key.PubBytes, k.ParsePub)
	priv := timedKey(&m.Spec, key.Priv, key.PrivKey, k.ParsePriv)
	c := &kemSetup{m: m, k: k, key: key, rng: rng, pub: pub, priv: priv}
	build := kemOps[ref.Operation]
	if build == nil {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: ref.Algorithm + " has no operation " + ref.Operation}}, nil
	}
	t := build(c)
	r, err := trial.Run(ctx, t, p)
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Keys = KeyForm(&m.Spec, ref.Operation)
	}
	return r, err
}

// kemSetup is what a KEM cell's trials share: the algorithm, the cell's key (with its timed
// forms) and the seeded stream.
type kemSetup struct {
	m         *artifacts.Manifest
	k         *KEM
	key       KeyPair
	rng       *trial.DRBG
	pub, priv func() (any, error)
}

// kemOps builds each KEM operation's trial.
var kemOps = map[string]func(*kemSetup) trial.Trial[kemIn, kemOut]{
	artifacts.OpKeygen: (*kemSetup).kemKeygen,
	artifacts.OpEncaps: (*kemSetup).kemEncaps,
	artifacts.OpDecaps: (*kemSetup).kemDecaps,
	artifacts.OpDerive: (*kemSetup).kemDerive,
}

func (c *kemSetup) kemKeygen() trial.Trial[kemIn, kemOut] {
	k, rng := c.k, c.rng
	return trial.Trial[kemIn, kemOut]{
		Prep: func(int) (kemIn, error) { return kemIn{keySeed: bytes.NewReader(rng.Bytes(64))}, nil },
		Op: func(in kemIn) (kemOut, error) {
			kp, err := k.Keygen(in.keySeed)
			return kemOut{kp: kp}, err
		},
		Check: func(_ kemIn, out kemOut) error { return CheckKEMKey(k, out.kp, rng) },
		Sizes: func(_ kemIn, out kemOut) artifacts.Sizes {
			return artifacts.Sizes{PublicKey: len(out.kp.PubBytes), PrivateKey: len(out.kp.PrivKey)}
		},
	}
}

func (c *kemSetup) kemEncaps() trial.Trial[kemIn, kemOut] {
	k, key, rng, pub := c.k, c.key, c.rng, c.pub
	return trial.Trial[kemIn, kemOut]{
		Prep: func(int) (kemIn, error) { return kemIn{keySeed: bytes.NewReader(rng.Bytes(32))}, nil },
		Op: func(in kemIn) (kemOut, error) {
			pk, err := pub()
			if err != nil {
				return kemOut{}, err
			}
			ct, ss, err := k.Encaps(pk, in.keySeed)
			return kemOut{ct: ct, ss: ss}, err
		},
		Check: func(_ kemIn, out kemOut) error {
			ss, err := k.Decaps(key.Priv, out.ct)
			if err != nil || !bytes.Equal(ss, out.ss) {
				return errors.New("decapsulated secret differs from the encapsulated one")
			}
			return nil
		},
		Sizes: func(_ kemIn, out kemOut) artifacts.Sizes {
			return artifacts.Sizes{Ciphertext: len(out.ct), SharedSecret: len(out.ss)}
		},
	}
}

func (c *kemSetup) kemDecaps() trial.Trial[kemIn, kemOut] {
	k, key, rng, priv := c.k, c.key, c.rng, c.priv
	return trial.Trial[kemIn, kemOut]{
		Prep: func(int) (kemIn, error) {
			ct, ss, err := k.Encaps(key.Pub, rng)
			return kemIn{ct: ct, ss: ss}, err
		},
		Op: func(in kemIn) (kemOut, error) {
			sk, err := priv()
			if err != nil {
				return kemOut{}, err
			}
			ss, err := k.Decaps(sk, in.ct)
			return kemOut{ss: ss}, err
		},
		Check: func(in kemIn, out kemOut) error {
			if !bytes.Equal(in.ss, out.ss) {
				return errors.New("decapsulated secret differs from the encapsulated one")
			}
			return nil
		},
		Sizes: func(_ kemIn, out kemOut) artifacts.Sizes { return artifacts.Sizes{SharedSecret: len(out.ss)} },
	}
}

func (c *kemSetup) kemDerive() trial.Trial[kemIn, kemOut] {
	k, key, rng, m, priv := c.k, c.key, c.rng, c.m, c.priv
	return trial.Trial[kemIn, kemOut]{
		Prep: func(int) (kemIn, error) {
			peer, err := k.Keygen(rng)
			return kemIn{peer: peer}, err
		},
		Op: func(in kemIn) (kemOut, error) {
			sk, err := priv()
			if err != nil {
				return kemOut{}, err
			}
			peer := in.peer.Pub
			if m.Spec.Keys != artifacts.KeysParsed {
				if peer, err = k.ParsePub(in.peer.PubBytes); err != nil {
					return kemOut{}, fmt.Errorf("decode peer key: %w", err)
				}
			}
			ss, err := k.Derive(sk, peer)
			return kemOut{ss: ss}, err
		},
		Check: func(in kemIn, out kemOut) error {
			other, err := k.Derive(in.peer.Priv, key.Pub)
			if err != nil || !bytes.Equal(other, out.ss) {
				return errors.New("the two sides derived different secrets")
			}
			return nil
		},
		Sizes: func(_ kemIn, out kemOut) artifacts.Sizes { return artifacts.Sizes{SharedSecret: len(out.ss)} },
	}
}

// CheckKEMKey proves a freshly generated key works: a round trip gives equal secrets.
func CheckKEMKey(k *KEM, kp KeyPair, rng io.Reader) error {
	if k.Derive != nil {
		peer, err := k.Keygen(rng)
		if err != nil {
			return err
		}
		a, err1 := k.Derive(kp.Priv, peer.Pub)
		b, err2 := k.Derive(peer.Priv, kp.Pub)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return errors.New("generated key does not agree with a peer")
		}
		return nil
	}
	ct, ss, err := k.Encaps(kp.Pub, rng)
	if err != nil {
		return err
	}
	ss2, err := k.Decaps(kp.Priv, ct)
	if err != nil || !bytes.Equal(ss, ss2) {
		return errors.New("generated key fails an encapsulation round trip")
	}
	return nil
}

// sigState shares one key and the signatures made by a sign cell with the verify cell of the
// same algorithm, so verifying slow schemes does not re-sign every message.
type sigState struct{ pools map[string]*sigPool }

type sigPool struct {
	key  KeyPair
	msgs [][]byte
	sigs [][]byte
	next int
}

type sigIn struct {
	seed     io.Reader
	msg, sig []byte
}

type sigOut struct {
	kp  KeyPair
	sig []byte
	ok  bool
}

func sigCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, s *Sig, st *sigState) (trial.Outcome, error) {
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/"+ref.Operation)
	pool := st.pools[ref.Algorithm]
	if pool == nil && ref.Operation != artifacts.OpKeygen {
		key, err := s.Keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
		if err != nil {
			return trial.Outcome{Cell: trial.Failed("generate key: " + err.Error())}, nil
		}
		pool = &sigPool{key: key}
		st.pools[ref.Algorithm] = pool
	}
	var pub, priv func() (any, error)
	if pool != nil {
		pub = timedKey(&m.Spec, pool.key.Pub, pool.key.PubBytes, s.ParsePub)
		priv = timedKey(&m.Spec, pool.key.Priv, pool.key.PrivKey, s.ParsePriv)
	}
	c := &sigSetup{m: m, s: s, pool: pool, rng: rng, pub: pub, priv: priv}
	build := sigOps[ref.Operation]
	if build == nil {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: ref.Algorithm + " has no operation " + ref.Operation}}, nil
	}
	t := build(c)
	r, err := trial.Run(ctx, t, p)
	if err == nil && ref.Operation == artifacts.OpVerify && r.Cell.Status == artifacts.StatusOK {
		// A verifier that accepts everything would pass the check above: make sure it rejects.
		if bad := negativeVerify(s, pool, rng, &m.Spec); bad != nil {
			r = trial.Outcome{Cell: trial.Failed(bad.Error())}
		}
	}
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Keys = KeyForm(&m.Spec, ref.Operation)
	}
	return r, err
}

// sigSetup is what a signature cell's trials share: the algorithm, the pool of the cell's key
// and signatures, its timed key forms and the seeded stream.
type sigSetup struct {
	m         *artifacts.Manifest
	s         *Sig
	pool      *sigPool
	rng       *trial.DRBG
	pub, priv func() (any, error)
}

// sigOps builds each signature operation's trial.
var sigOps = map[string]func(*sigSetup) trial.Trial[sigIn, sigOut]{
	artifacts.OpKeygen: (*sigSetup).sigKeygen,
	artifacts.OpSign:   (*sigSetup).sigSign,
	artifacts.OpVerify: (*sigSetup).sigVerify,
}

func (c *sigSetup) sigKeygen() trial.Trial[sigIn, sigOut] {
	s, rng := c.s, c.rng
	return trial.Trial[sigIn, sigOut]{
		Prep: func(int) (sigIn, error) { return sigIn{seed: bytes.NewReader(rng.Bytes(96))}, nil },
		Op: func(in sigIn) (sigOut, error) {
			kp, err := s.Keygen(in.seed)
			return sigOut{kp: kp}, err
		},
		Check: func(_ sigIn, out sigOut) error {
			if !s.Pairs(out.kp.Pub, out.kp.Priv) {
				return errors.New("public key does not belong to the private key")
			}
			return nil
		},
		Sizes: func(_ sigIn, out sigOut) artifacts.Sizes {
			return artifacts.Sizes{PublicKey: len(out.kp.PubBytes), PrivateKey: len(out.kp.PrivKey)}
		},
	}
}

func (c *sigSetup) sigSign() trial.Trial[sigIn, sigOut] {
	s, pool, rng, m, priv := c.s, c.pool, c.rng, c.m, c.priv
	return trial.Trial[sigIn, sigOut]{
		Prep: func(int) (sigIn, error) { return sigIn{msg: Message(&m.Spec, rng)}, nil },
		Op: func(in sigIn) (sigOut, error) {
			sk, err := priv()
			if err != nil {
				return sigOut{}, err
			}
			sig, err := s.Sign(sk, in.msg, rng)
			return sigOut{sig: sig}, err
		},
		Check: func(in sigIn, out sigOut) error {
			if !s.Verify(pool.key.Pub, in.msg, out.sig) {
				return errors.New("signature does not verify")
			}
			if len(pool.sigs) < 4096 {
				pool.msgs, pool.sigs = append(pool.msgs, in.msg), append(pool.sigs, out.sig)
			}
			return nil
		},
		Sizes: func(in sigIn, out sigOut) artifacts.Sizes {
			return artifacts.Sizes{Signature: len(out.sig), Message: len(in.msg)}
		},
	}
}

func (c *sigSetup) sigVerify() trial.Trial[sigIn, sigOut] {
	s, pool, rng, m, pub := c.s, c.pool, c.rng, c.m, c.pub
	return trial.Trial[sigIn, sigOut]{
		// Verification does the same work for any valid signature, so once the pool holds
		// signatures (from the sign cell, or up to 16 made here) the cell cycles through them
		// rather than re-signing: slow schemes take seconds per signature.
		Prep: func(int) (sigIn, error) {
			if len(pool.sigs) < 16 && pool.next >= len(pool.sigs) {
				msg := Message(&m.Spec, rng)
				sig, err := s.Sign(pool.key.Priv, msg, rng)
				if err != nil {
					return sigIn{}, err
				}
				pool.msgs, pool.sigs = append(pool.msgs, msg), append(pool.sigs, sig)
			}
			j := pool.next % len(pool.sigs)
			pool.next++
			return sigIn{msg: pool.msgs[j], sig: pool.sigs[j]}, nil
		},
		Op: func(in sigIn) (sigOut, error) {
			pk, err := pub()
			if err != nil {
				return sigOut{}, err
			}
			return sigOut{ok: s.Verify(pk, in.msg, in.sig)}, nil
		},
		Check: func(in sigIn, out sigOut) error {
			if !out.ok {
				return errors.New("a valid signature was rejected")
			}
			return nil
		},
		Sizes: func(in sigIn, _ sigOut) artifacts.Sizes {
			return artifacts.Sizes{Signature: len(in.sig), Message: len(in.msg)}
		},
	}
}

// negativeVerify checks that a corrupted signature is rejected.
func negativeVerify(s *Sig, pool *sigPool, rng *trial.DRBG, spec *artifacts.Spec) error {
	msg, sig := []byte(nil), []byte(nil)
	if len(pool.sigs) > 0 {
		msg, sig = pool.msgs[0], bytes.Clone(pool.sigs[0])
	} else {
		msg = Message(spec, rng)
		var err error
		if sig, err = s.Sign(pool.key.Priv, msg, rng); err != nil {
			return err
		}
	}
	sig[len(sig)/2] ^= 0x01
	if s.Verify(pool.key.Pub, msg, sig) {
		return errors.New("verify accepted a corrupted signature")
	}
	return nil
}

type seqOut struct {
	ss1, ss2 []byte
	ok       bool
}

// sequenceCell times paper001's combined run as one window: KEM keygen, encaps, decaps, then
// signature keygen, sign (the message), verify. Secrets and the signature are checked after.
func sequenceCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, kems map[string]*KEM, sigs map[string]*Sig) (trial.Outcome, error) {
	kn, sn, _ := artifacts.SplitPair(ref.Algorithm)
	k, s := kems[kn], sigs[sn]
	if k == nil || k.Encaps == nil || s == nil {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "the host board cannot run " + ref.Algorithm}}, nil
	}
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/sequence")
	t := trial.Trial[sigIn, seqOut]{
		Prep: func(int) (sigIn, error) {
			return sigIn{seed: bytes.NewReader(rng.Bytes(64 + 32 + 96 + 64)), msg: Message(&m.Spec, rng)}, nil
		},
		Op: func(in sigIn) (seqOut, error) {
			kp, err := k.Keygen(in.seed)
			if err != nil {
				return seqOut{}, err
			}
			pk, err := timedKey(&m.Spec, kp.Pub, kp.PubBytes, k.ParsePub)()
			if err != nil {
				return seqOut{}, err
			}
			ct, ss1, err := k.Encaps(pk, in.seed)
			if err != nil {
				return seqOut{}, err
			}
			sk, err := timedKey(&m.Spec, kp.Priv, kp.PrivKey, k.ParsePriv)()
			if err != nil {
				return seqOut{}, err
			}
			ss2, err := k.Decaps(sk, ct)
			if err != nil {
				return seqOut{}, err
			}
			skp, err := s.Keygen(in.seed)
			if err != nil {
				return seqOut{}, err
			}
			ssk, err := timedKey(&m.Spec, skp.Priv, skp.PrivKey, s.ParsePriv)()
			if err != nil {
				return seqOut{}, err
			}
			sig, err := s.Sign(ssk, in.msg, in.seed)
			if err != nil {
				return seqOut{}, err
			}
			spk, err := timedKey(&m.Spec, skp.Pub, skp.PubBytes, s.ParsePub)()
			if err != nil {
				return seqOut{}, err
			}
			return seqOut{ss1: ss1, ss2: ss2, ok: s.Verify(spk, in.msg, sig)}, nil
		},
		Check: func(_ sigIn, out seqOut) error {
			if !bytes.Equal(out.ss1, out.ss2) {
				return errors.New("decapsulated secret differs from the encapsulated one")
			}
			if !out.ok {
				return errors.New("signature does not verify")
			}
			return nil
		},
	}
	r, err := trial.Run(ctx, t, p)
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Keys = KeyForm(&m.Spec, ref.Operation)
	}
	return r, err
}
