// Package procop is the process-per-operation timing method: each iteration is a fresh
// pqrepro process (this binary re-run with ChildOpArg) that loads its inputs from files, runs
// one operation and writes its outputs (ChildOp); the parent (Cell) times it from start to exit
// and checks what it wrote.
package procop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"pqrepro/artifacts"
	"pqrepro/runner/exec/bench"
	"pqrepro/runner/trial"
)

// ChildOpArg is the hidden first argument that turns the pqrepro binary into a one-operation
// child for the process-per-operation method. main (and test binaries) call ChildOp when
// they see it.
const ChildOpArg = "__pqrepro-op"

// Exit codes of a child operation.
const (
	childOK       = 0
	childError    = 1
	childRejected = 3 // verify: the signature was rejected
)

// ChildOp performs one operation as a fresh process, the way paper002 ran one openssl command
// per operation: it reads its inputs from files in dir, loads keys from their encodings, runs
// the operation and writes the outputs back. args are: algorithm, operation, dir.
func ChildOp(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: pqrepro "+ChildOpArg+" ALGORITHM OPERATION DIR")
		return childError
	}
	if err := childOp(args[0], args[1], args[2]); err != nil {
		if errors.Is(err, errRejected) {
			return childRejected
		}
		fmt.Fprintln(os.Stderr, err)
		return childError
	}
	return childOK
}

var errRejected = errors.New("signature rejected")

// errMissingInput carries a missing input file out of childOp's read helper.
type errMissingInput struct{ err error }

func childOp(alg, op, dir string) (err error) {
	kems, sigs := bench.Algorithms()
	defer func() {
		if r := recover(); r != nil {
			mi, ok := r.(errMissingInput)
			if !ok {
				panic(r)
			}
			err = mi.err
		}
	}()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			panic(errMissingInput{fmt.Errorf("read input: %w", err)})
		}
		return b
	}
	write := func(name string, b []byte) error { return os.WriteFile(filepath.Join(dir, name), b, 0o600) }
	rng := bytes.NewReader(nil)
	if b, err := os.ReadFile(filepath.Join(dir, "rand")); err == nil {
		rng = bytes.NewReader(b)
	}
	if k := kems[alg]; k != nil {
		switch op {
		case artifacts.OpKeygen:
			kp, err := k.Keygen(rng)
			if err != nil {
				return err
			}
			return errors.Join(write("pub", kp.PubBytes), write("priv", kp.PrivKey))
		case artifacts.OpEncaps:
			pub, err := k.ParsePub(read("pub"))
			if err != nil {
				return err
			}
			ct, ss, err := k.Encaps(pub, rng)
			if err != nil {
				return err
			}
			return errors.Join(write("ct", ct), write("ss", ss))
		case artifacts.OpDecaps:
			priv, err := k.ParsePriv(read("priv"))
			if err != nil {
				return err
			}
			ss, err := k.Decaps(priv, read("ct"))
			if err != nil {
				return err
			}
			return write("ss", ss)
		case artifacts.OpDerive:
			priv, err := k.ParsePriv(read("priv"))
			if err != nil {
				return err
			}
			peer, err := k.ParsePub(read("peer"))
			if err != nil {
				return err
			}
			ss, err := k.Derive(priv, peer)
			if err != nil {
				return err
			}
			return write("ss", ss)
		}
	}
	if s := sigs[alg]; s != nil {
		switch op {
		case artifacts.OpKeygen:
			kp, err := s.Keygen(rng)
			if err != nil {
				return err
			}
			return errors.Join(write("pub", kp.PubBytes), write("priv", kp.PrivKey))
		case artifacts.OpSign:
			priv, err := s.ParsePriv(read("priv"))
			if err != nil {
				return err
			}
			sig, err := s.Sign(priv, read("msg"), rng)
			if err != nil {
				return err
			}
			return write("sig", sig)
		case artifacts.OpVerify:
			pub, err := s.ParsePub(read("pub"))
			if err != nil {
				return err
			}
			if !s.Verify(pub, read("msg"), read("sig")) {
				return errRejected
			}
			return nil
		}
	}
	return fmt.Errorf("no operation %s for %s", op, alg)
}

type procIn struct {
	dir      string
	msg, sig []byte
	want     []byte // decaps: the expected secret
	peer     bench.KeyPair
}

type procOut struct {
	exit   int
	stderr string
}

// Cell times one fresh pqrepro process per iteration, from process start to exit, as
// paper002's Python wrapper timed subprocess.run around openssl: exe (this binary when "")
// re-run with ChildOpArg. kems and sigs are the implementations (bench.Algorithms) the parent
// prepares inputs and checks every output the child wrote with, before the time counts.
func Cell(ctx context.Context, exe string, kems map[string]*bench.KEM, sigs map[string]*bench.Sig, c trial.Cell, log io.Writer) (trial.Outcome, error) {
	m, ref, p := c.Manifest, c.Ref, c.Plan
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return trial.Outcome{}, fmt.Errorf("find pqrepro binary for process-per-operation: %w", err)
		}
	}
	work, err := os.MkdirTemp("", "pqrepro-op-")
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("process-per-operation work dir: %w", err)
	}
	defer os.RemoveAll(work)
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/"+ref.Operation+"/process")
	k, s := kems[ref.Algorithm], sigs[ref.Algorithm]
	var key bench.KeyPair
	if k != nil {
		key, err = k.Keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
	} else if s != nil {
		key, err = s.Keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
	} else {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "no host implementation of " + ref.Algorithm}}, nil
	}
	if err != nil {
		return trial.Outcome{Cell: trial.Failed("generate key: " + err.Error())}, nil
	}
	pc := &procCell{exe: exe, work: work, m: m, ref: ref, k: k, s: s, key: key, rng: rng}
	t := trial.Trial[procIn, procOut]{
		Prep:  func(int) (procIn, error) { return pc.prep() },
		Op:    func(in procIn) (procOut, error) { return pc.run(ctx, in) },
		Check: pc.check,
	}
	r, err := trial.Run(ctx, t, p)
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Counter = "wall time from process start to exit (os/exec), ns"
		r.Cell.Memory = nil                                 // the parent's heap says nothing about the child
		r.Cell.Keys = bench.KeyForm(&m.Spec, ref.Operation) // the child decodes every key from its file
		fmt.Fprintf(log, "process-per-operation: %s %s: each sample is a fresh %s process\n", ref.Algorithm, ref.Operation, filepath.Base(exe))
	}
	return r, err
}

// procCell is one process-per-operation cell: the binary the children run, their work folder,
// the cell's implementation and key, and the seeded stream the inputs come from.
type procCell struct {
	exe, work string
	m         *artifacts.Manifest
	ref       artifacts.CellRef
	k         *bench.KEM
	s         *bench.Sig
	key       bench.KeyPair
	rng       *trial.DRBG
	n         int
}

// prep writes one iteration's inputs into a fresh folder.
func (c *procCell) prep() (procIn, error) {
	m, ref, k, s, key, rng := c.m, c.ref, c.k, c.s, c.key, c.rng
	c.n++
	in := procIn{dir: filepath.Join(c.work, fmt.Sprint(c.n))}
	if err := os.Mkdir(in.dir, 0o700); err != nil {
		return in, err
	}
	put := func(name string, b []byte) error { return os.WriteFile(filepath.Join(in.dir, name), b, 0o600) }
	var errs []error
	errs = append(errs, put("rand", rng.Bytes(256)))
	switch ref.Operation {
	case artifacts.OpEncaps:
		errs = append(errs, put("pub", key.PubBytes))
	case artifacts.OpDecaps:
		ct, ss, err := k.Encaps(key.Pub, rng)
		in.want = ss
		errs = append(errs, err, put("priv", key.PrivKey), put("ct", ct))
	case artifacts.OpDerive:
		peer, err := k.Keygen(rng)
		in.peer = peer
		errs = append(errs, err, put("priv", key.PrivKey), put("peer", peer.PubBytes))
	case artifacts.OpSign:
		in.msg = bench.Message(&m.Spec, rng)
		errs = append(errs, put("priv", key.PrivKey), put("msg", in.msg))
	case artifacts.OpVerify:
		in.msg = bench.Message(&m.Spec, rng)
		sig, err := s.Sign(key.Priv, in.msg, rng)
		in.sig = sig
		errs = append(errs, err, put("pub", key.PubBytes), put("msg", in.msg), put("sig", sig))
	}
	return in, errors.Join(errs...)
}

// run is the timed operation: one child process.
func (c *procCell) run(ctx context.Context, in procIn) (procOut, error) {
	exe, ref := c.exe, c.ref
	cmd := exec.CommandContext(ctx, exe, ChildOpArg, ref.Algorithm, ref.Operation, in.dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := procOut{stderr: strings.TrimSpace(stderr.String())}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		out.exit = ee.ExitCode()
		err = nil
	}
	return out, err
}

// check reads back and checks what the child wrote.
func (c *procCell) check(in procIn, out procOut) error {
	ref, k, s, key, rng := c.ref, c.k, c.s, c.key, c.rng
	file := func(name string) []byte {
		b, _ := os.ReadFile(filepath.Join(in.dir, name))
		return b
	}
	defer os.RemoveAll(in.dir)
	if out.exit != childOK {
		return fmt.Errorf("child process exited %d: %s", out.exit, out.stderr)
	}
	switch ref.Operation {
	case artifacts.OpKeygen:
		pub, priv := file("pub"), file("priv")
		if k != nil {
			pk, err1 := k.ParsePub(pub)
			sk, err2 := k.ParsePriv(priv)
			if err1 != nil || err2 != nil {
				return errors.New("child wrote unreadable keys")
			}
			return bench.CheckKEMKey(k, bench.KeyPair{Pub: pk, Priv: sk}, rng)
		}
		pk, err1 := s.ParsePub(pub)
		sk, err2 := s.ParsePriv(priv)
		if err1 != nil || err2 != nil || !s.Pairs(pk, sk) {
			return errors.New("child wrote keys that do not pair")
		}
	case artifacts.OpEncaps:
		ss, err := k.Decaps(key.Priv, file("ct"))
		if err != nil || !bytes.Equal(ss, file("ss")) {
			return errors.New("decapsulated secret differs from the child's")
		}
	case artifacts.OpDecaps:
		if !bytes.Equal(in.want, file("ss")) {
			return errors.New("child's decapsulated secret differs from the encapsulated one")
		}
	case artifacts.OpDerive:
		ss, err := k.Derive(in.peer.Priv, key.Pub)
		if err != nil || !bytes.Equal(ss, file("ss")) {
			return errors.New("child derived a different secret")
		}
	case artifacts.OpSign:
		if !s.Verify(key.Pub, in.msg, file("sig")) {
			return errors.New("child's signature does not verify (an empty or failed signature is never timed)")
		}
	}
	return nil
}
