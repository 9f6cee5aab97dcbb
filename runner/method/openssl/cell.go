package openssl

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cloudflare/circl/kem"

	"pqrepro/artifacts"
	"pqrepro/runner"
	"pqrepro/runner/exec/bench"
	"pqrepro/runner/trial"
)

// File names of an openssl-cli cell's work directory; commands name them relatively.
const (
	osslPriv = "priv.pem"
	osslPub  = "pub.pem"
	osslMsg  = "message.bin"
	osslSig  = "sig.bin"
	osslCT   = "ct.bin"
	osslSS   = "ss.bin"
	osslPeer = "peer.pem"
)

// osslRecipe is how paper002's script (pqc_benchmark.py) made one algorithm's key, with the
// OpenSSL 3.5 name of the algorithm. Sign and verify use the script's pkeyutl commands.
type osslRecipe struct {
	// alg is the catalogue name; keyAlg what parsePEMKeyPair calls the key ("P-256" for both
	// ECDSA-P256 and ECDH-P256, which the script generated the same way).
	alg, keyAlg string
	// gen is the key command, writing priv.pem (the script's genrsa for RSA, genpkey else).
	gen []string
	// fix is what sign and verify need on top of the script's commands when those fail:
	// for ECDSA and RSA, pkeyutl without -rawin takes the 19.6 KB input as a ready hash and
	// refuses it (paper002 PROVENANCE caveat 2). nil when the script's commands work.
	fix []string
}

// OpenSSLAlgorithms lists the catalogue algorithms the openssl-cli method runs (those
// OpenSSL 3.5 has), in catalogue order.
func OpenSSLAlgorithms() []string {
	var out []string
	rs := osslRecipes()
	for _, a := range artifacts.Algorithms() {
		if _, ok := rs[a.Name]; ok {
			out = append(out, a.Name)
		}
	}
	return out
}

func osslRecipes() map[string]osslRecipe {
	genpkey := func(name string) []string { return []string{"genpkey", "-algorithm", name, "-out", osslPriv} }
	ec := []string{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", osslPriv}
	digest := []string{"-rawin", "-digest", "sha256"}
	rs := map[string]osslRecipe{
		"X25519":     {alg: "X25519", keyAlg: "X25519", gen: genpkey("X25519")},
		"ECDH-P256":  {alg: "ECDH-P256", keyAlg: "P-256", gen: ec},
		"Ed25519":    {alg: "Ed25519", keyAlg: "Ed25519", gen: genpkey("ED25519")},
		"ECDSA-P256": {alg: "ECDSA-P256", keyAlg: "P-256", gen: ec, fix: digest},
		"RSA-2048":   {alg: "RSA-2048", keyAlg: "RSA-2048", gen: []string{"genrsa", "-out", osslPriv, "2048"}, fix: digest},
	}
	for _, a := range artifacts.Algorithms() {
		if a.Family != artifacts.FamilyClassical {
			rs[a.Name] = osslRecipe{alg: a.Name, keyAlg: a.Name, gen: genpkey(a.Name)}
		}
	}
	return rs
}

func pubout() []string { return []string{"pkey", "-in", osslPriv, "-pubout", "-out", osslPub} }

func signArgs(fix []string) []string {
	return slices.Concat([]string{"pkeyutl", "-sign"}, fix, []string{"-inkey", osslPriv, "-in", osslMsg, "-out", osslSig})
}

func verifyArgs(fix []string) []string {
	return slices.Concat([]string{"pkeyutl", "-verify"}, fix, []string{"-pubin", "-inkey", osslPub, "-in", osslMsg, "-sigfile", osslSig})
}

// osslIteration is one iteration of an openssl-cli cell: untimed preparation, the commands
// (each timed on its own; the iteration's time is their sum) and an untimed check.
type osslIteration struct {
	prep  func() error
	cmds  [][]string
	check func(stdout string) error
	sizes func() artifacts.Sizes
}

// cmdFailure is an openssl command that exited non-zero or did not start.
type cmdFailure struct {
	cmd    string
	exit   int
	stderr string
}

func (f *cmdFailure) Error() string {
	msg := f.stderr
	if msg == "" {
		msg = "(no message)"
	}
	return fmt.Sprintf("`%s` exited %d: %s", f.cmd, f.exit, msg)
}

func displayCmd(args []string) string { return "openssl " + strings.Join(args, " ") }

// timed runs one command in dir and returns its wall time, from start to exit.
func (o *CLI) timed(ctx context.Context, dir string, args []string) (time.Duration, string, error) {
	cmd := o.command(ctx, dir, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		f := &cmdFailure{cmd: displayCmd(args), exit: -1, stderr: clip(strings.TrimSpace(stderr.String()), 2000)}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			f.exit = ee.ExitCode()
		} else if f.stderr == "" {
			f.stderr = err.Error()
		}
		return d, stdout.String(), f
	}
	return d, stdout.String(), nil
}

// run is an untimed openssl command (setup, checks); its failure is a *cmdFailure.
func (o *CLI) run(ctx context.Context, dir string, args ...string) error {
	_, _, err := o.timed(ctx, dir, args)
	return err
}

// osslIn and osslOut are one openssl-cli iteration's index (negative for warm-up) and what
// its commands gave: each command's wall time and the last command's standard output.
type osslIn struct{ i int }

type osslOut struct {
	ds     []time.Duration
	stdout string
}

// osslLoop runs the iteration through runTrial, timing each command apart: a sample is the
// sum of the commands' wall times, and every timed iteration's per-command times are kept
// for the cell's Commands. A failing command or check fails the cell with no samples; label
// prefixes a command failure ("the paper's command fails: ").
func (o *CLI) osslLoop(ctx context.Context, dir string, it osslIteration, p trial.Plan, label string) (trial.Outcome, error) {
	perCmd := make([][]float64, len(it.cmds))
	var cmdErr string // a failing command's own message, which is the cell's reason as it stands
	t := trial.Trial[osslIn, osslOut]{
		Prep: func(i int) (osslIn, error) { return osslIn{i}, it.prep() },
		Op: func(osslIn) (osslOut, error) {
			out := osslOut{ds: make([]time.Duration, len(it.cmds))}
			for j, args := range it.cmds {
				d, stdout, err := o.timed(ctx, dir, args)
				if err != nil {
					var f *cmdFailure
					if errors.As(err, &f) {
						cmdErr = label + f.Error()
						return out, errors.New(cmdErr)
					}
					return out, err
				}
				out.ds[j], out.stdout = d, stdout
			}
			return out, nil
		},
		Check: func(in osslIn, out osslOut) error {
			if err := it.check(out.stdout); err != nil {
				return err
			}
			if in.i >= 0 && in.i < trial.MeterIndex {
				for j, d := range out.ds {
					perCmd[j] = append(perCmd[j], float64(d.Nanoseconds()))
				}
			}
			return nil
		},
		Self: func(out osslOut) float64 {
			var total time.Duration
			for _, d := range out.ds {
				total += d
			}
			return float64(total.Nanoseconds())
		},
	}
	if it.sizes != nil {
		t.Sizes = func(osslIn, osslOut) artifacts.Sizes { return it.sizes() }
	}
	p.NoPasses = true
	r, err := trial.Run(ctx, t, p)
	if err == nil && r.Cell.Status == artifacts.StatusFailed && cmdErr != "" {
		r.Cell.Error = cmdErr
	}
	if err != nil || r.Cell.Status != artifacts.StatusOK {
		return r, err
	}
	r.Cell.Counter = "wall time of each openssl process from start to exit (os/exec, monotonic clock), summed over the iteration's commands, ns"
	for j, args := range it.cmds {
		r.Cell.Commands = append(r.Cell.Commands, artifacts.CommandStats{Command: displayCmd(args), Stats: runner.Summarize(perCmd[j])})
	}
	if p.Meter == nil {
		r.Cell.Energy = &artifacts.Energy{Absent: "not measured by the openssl-cli method without a power meter (RAPL's per-iteration pass measures this process, not the openssl processes)"}
		return r, nil
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	r.Power, r.LoadOps, r.PowerAbsent = trial.MeterPass(ctx, o.loadTrial(ctx, dir, it, label), p.Meter, p.MeterLoad)
	if r.Power == nil {
		r.Cell.Energy = &artifacts.Energy{Absent: "the meter's load window failed: " + r.PowerAbsent}
	}
	return r, nil
}

// loadTrial is the metered pass's trial of an openssl-cli cell: the iteration's commands run
// back to back (the paper's method, ΔP × T_op with T_op the cell's median iteration), each
// on a freshly prepared input. An output is a file the next iteration overwrites, so the
// first trial.MeterChecks outputs are checked as they are made, inside the window.
func (o *CLI) loadTrial(ctx context.Context, dir string, it osslIteration, label string) trial.Trial[osslIn, osslOut] {
	checked := 0
	return trial.Trial[osslIn, osslOut]{
		Prep: func(i int) (osslIn, error) { return osslIn{i}, it.prep() },
		Op: func(osslIn) (osslOut, error) {
			var out osslOut
			for _, args := range it.cmds {
				_, stdout, err := o.timed(ctx, dir, args)
				var f *cmdFailure
				if errors.As(err, &f) {
					return out, errors.New(label + f.Error())
				} else if err != nil {
					return out, err
				}
				out.stdout = stdout
			}
			if checked < trial.MeterChecks {
				checked++
				if err := it.check(out.stdout); err != nil {
					return out, fmt.Errorf("output check: %w", err)
				}
			}
			return out, nil
		},
		Check: func(osslIn, osslOut) error { return nil },
	}
}

// osslCells runs one manifest cell: the paper's commands, and for ECDSA and RSA sign and
// verify a second cell with the corrected command, marked with Variant.
func (o *CLI) osslCells(ctx context.Context, work string, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan) ([]trial.Outcome, error) {
	rec, ok := osslRecipes()[ref.Algorithm]
	if !ok {
		return []trial.Outcome{{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "OpenSSL 3.5 has no " + ref.Algorithm}}}, nil
	}
	r, err := o.osslCell(ctx, work, m, ref, rec, nil, p)
	if err != nil {
		return nil, err
	}
	runs := []trial.Outcome{r}
	if rec.fix != nil && (ref.Operation == artifacts.OpSign || ref.Operation == artifacts.OpVerify) {
		metered := p.Meter != nil
		p.Meter = nil // power.csv holds one load window per cell: the paper's command's
		v, err := o.osslCell(ctx, work, m, ref, rec, rec.fix, p)
		if err != nil {
			return nil, err
		}
		v.Cell.Variant = "corrected: " + strings.Join(rec.fix, " ") + " (not the paper's method)"
		if metered && v.Cell.Status == artifacts.StatusOK {
			v.Cell.Energy = &artifacts.Energy{Absent: "a corrected command's cell has no load window of its own: the metered pass runs the paper's command"}
		}
		runs = append(runs, v)
	}
	return runs, nil
}

// osslRun is one openssl-cli cell in its work folder: the recipe, the sign/verify fix (nil:
// the paper's commands), the label of a failing command, the seeded stream and the cell's key.
type osslRun struct {
	o     *CLI
	ctx   context.Context
	dir   string
	m     *artifacts.Manifest
	rec   osslRecipe
	fix   []string
	label string
	rng   *trial.DRBG
	key   *pemKey
}

func (c *osslRun) path(name string) string { return filepath.Join(c.dir, name) }

func (c *osslRun) read(name string) []byte { b, _ := os.ReadFile(c.path(name)); return b }

func (c *osslRun) remove(names ...string) error {
	for _, n := range names {
		if err := os.Remove(c.path(n)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (c *osslRun) nonEmpty(names ...string) error {
	for _, n := range names {
		if len(c.read(n)) == 0 {
			return fmt.Errorf("openssl wrote no %s (or an empty one)", n)
		}
	}
	return nil
}

// failWith fails the cell with err (a failing command labelled as the paper's or the
// corrected one), or returns ctx.Err() when the run was cancelled.
func (c *osslRun) failWith(err error) (trial.Outcome, error) {
	if c.ctx.Err() != nil {
		return trial.Outcome{}, c.ctx.Err()
	}
	var f *cmdFailure
	if errors.As(err, &f) {
		return trial.Outcome{Cell: trial.Failed(c.label + err.Error())}, nil
	}
	return trial.Outcome{Cell: trial.Failed(err.Error())}, nil
}

// osslOps builds each operation's iteration; verify (osslRun.verify) runs its own loop.
var osslOps = map[string]func(c *osslRun) (osslIteration, error){
	artifacts.OpKeygen: (*osslRun).keygen,
	artifacts.OpSign:   (*osslRun).sign,
	artifacts.OpEncaps: (*osslRun).encaps,
	artifacts.OpDecaps: (*osslRun).decaps,
	artifacts.OpDerive: (*osslRun).derive,
}

// osslCell runs one cell with the given sign/verify fix (nil: the paper's commands).
func (o *CLI) osslCell(ctx context.Context, work string, m *artifacts.Manifest, ref artifacts.CellRef, rec osslRecipe, fix []string, p trial.Plan) (trial.Outcome, error) {
	dir, err := os.MkdirTemp(work, strings.ToLower(ref.Algorithm+"-"+ref.Operation+"-"))
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("openssl-cli work dir: %w", err)
	}
	defer os.RemoveAll(dir)
	c := &osslRun{o: o, ctx: ctx, dir: dir, m: m, rec: rec, fix: fix, label: "the paper's command fails: ",
		rng: trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/"+ref.Operation+"/openssl-cli")}
	if fix != nil {
		c.label = "the corrected command fails: "
	}
	// Keys for every operation but keygen: made once per cell with the paper's commands,
	// untimed, and read back by Go.
	if ref.Operation != artifacts.OpKeygen {
		for _, args := range [][]string{rec.gen, pubout()} {
			if err := o.run(ctx, dir, args...); err != nil {
				return c.failWith(fmt.Errorf("generate the cell's key: %w", err))
			}
		}
		if c.key, err = parsePEMKeyPair(c.read(osslPriv), c.read(osslPub)); err != nil {
			return c.failWith(fmt.Errorf("the cell's key: %w", err))
		}
	}
	if ref.Operation == artifacts.OpVerify {
		return c.verify(p)
	}
	op := osslOps[ref.Operation]
	if op == nil {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: ref.Algorithm + " has no operation " + ref.Operation}}, nil
	}
	it, err := op(c)
	if err != nil {
		return c.failWith(err)
	}
	r, err := o.osslLoop(ctx, dir, it, p, c.label)
	if err == nil && r.Cell.Status == artifacts.StatusOK && ref.Operation != artifacts.OpKeygen {
		r.Cell.Keys = artifacts.KeysEncoded
	}
	return r, err
}

func (c *osslRun) keygen() (osslIteration, error) {
	var k *pemKey
	return osslIteration{
		prep: func() error { return c.remove(osslPriv, osslPub) },
		cmds: [][]string{c.rec.gen, pubout()},
		check: func(string) error {
			if err := c.nonEmpty(osslPriv, osslPub); err != nil {
				return err
			}
			var err error
			if k, err = parsePEMKeyPair(c.read(osslPriv), c.read(osslPub)); err != nil {
				return err
			}
			if k.alg != c.rec.keyAlg {
				return fmt.Errorf("openssl made a %s key, not %s", k.alg, c.rec.keyAlg)
			}
			return k.roundTrip()
		},
		sizes: func() artifacts.Sizes { return artifacts.Sizes{PublicKey: len(k.pubRaw), PrivateKey: len(k.privRaw)} },
	}, nil
}

func (c *osslRun) sign() (osslIteration, error) {
	var msg []byte
	return osslIteration{
		prep: func() error {
			msg = bench.Message(&c.m.Spec, c.rng)
			return errors.Join(c.remove(osslSig), os.WriteFile(c.path(osslMsg), msg, 0o600))
		},
		cmds: [][]string{signArgs(c.fix)},
		check: func(string) error {
			if err := c.nonEmpty(osslSig); err != nil {
				return err
			}
			if !c.key.verifySignature(msg, c.read(osslSig), c.fix != nil) {
				return errors.New("the signature does not verify (checked with Go, not OpenSSL)")
			}
			return nil
		},
		sizes: func() artifacts.Sizes { return artifacts.Sizes{Signature: len(c.read(osslSig)), Message: len(msg)} },
	}, nil
}

// verify does as the script did: sign the message once, then time verifying that signature;
// afterwards a corrupted signature must be rejected (a verifier that accepts everything would
// pass every check).
func (c *osslRun) verify(p trial.Plan) (trial.Outcome, error) {
	ctx, o, dir := c.ctx, c.o, c.dir
	msg := bench.Message(&c.m.Spec, c.rng)
	if err := os.WriteFile(c.path(osslMsg), msg, 0o600); err != nil {
		return trial.Outcome{}, fmt.Errorf("openssl-cli message: %w", err)
	}
	note := ""
	if err := o.run(ctx, dir, signArgs(c.fix)...); err != nil {
		if c.fix != nil {
			return c.failWith(fmt.Errorf("sign the message to verify: %w", err))
		}
		// The script went on to verify whatever its failing sign command left: an empty
		// signature file. Do the same, so the cell reports what the paper timed.
		if werr := os.WriteFile(c.path(osslSig), c.read(osslSig), 0o600); werr != nil {
			return trial.Outcome{}, werr
		}
		note = " (the signature file is empty because the paper's sign command fails too: " + err.Error() + ")"
	} else if !c.key.verifySignature(msg, c.read(osslSig), c.fix != nil) {
		return c.failWith(errors.New("the signature made for the verify cell does not verify (checked with Go)"))
	}
	sig := c.read(osslSig)
	it := osslIteration{
		prep: func() error { return nil },
		cmds: [][]string{verifyArgs(c.fix)},
		check: func(stdout string) error {
			if !strings.Contains(stdout, "Signature Verified Successfully") {
				return fmt.Errorf("openssl exited 0 without saying the signature verified (%q)", clip(strings.TrimSpace(stdout), 200))
			}
			return nil
		},
		sizes: func() artifacts.Sizes { return artifacts.Sizes{Signature: len(sig), Message: len(msg)} },
	}
	r, err := o.osslLoop(ctx, dir, it, p, c.label)
	if err != nil || r.Cell.Status != artifacts.StatusOK {
		if r.Cell.Error != "" {
			r.Cell.Error += note
		}
		return r, err
	}
	bad := bytes.Clone(sig)
	bad[len(bad)/2] ^= 0x01
	if err := os.WriteFile(c.path(osslSig), bad, 0o600); err != nil {
		return trial.Outcome{}, err
	}
	if err := o.run(ctx, dir, verifyArgs(c.fix)...); err == nil {
		return trial.Outcome{Cell: trial.Failed("openssl accepted a corrupted signature")}, nil
	} else if ctx.Err() != nil {
		return trial.Outcome{}, ctx.Err()
	}
	r.Cell.Keys = artifacts.KeysEncoded
	return r, nil
}

func (c *osslRun) encaps() (osslIteration, error) {
	s := mlkemScheme(c.rec.alg)
	return osslIteration{
		prep: func() error { return c.remove(osslCT, osslSS) },
		cmds: [][]string{{"pkeyutl", "-encap", "-pubin", "-inkey", osslPub, "-out", osslCT, "-secret", osslSS}},
		check: func(string) error {
			if err := c.nonEmpty(osslCT, osslSS); err != nil {
				return err
			}
			ss, err := s.Decapsulate(c.key.priv.(kem.PrivateKey), c.read(osslCT))
			if err != nil || !bytes.Equal(ss, c.read(osslSS)) {
				return errors.New("the secret decapsulated with Go differs from openssl's encapsulated one")
			}
			return nil
		},
		sizes: func() artifacts.Sizes {
			return artifacts.Sizes{Ciphertext: len(c.read(osslCT)), SharedSecret: len(c.read(osslSS))}
		},
	}, nil
}

func (c *osslRun) decaps() (osslIteration, error) {
	s := mlkemScheme(c.rec.alg)
	var want []byte
	return osslIteration{
		prep: func() error {
			ct, ss, err := s.EncapsulateDeterministically(c.key.pub.(kem.PublicKey), c.rng.Bytes(s.EncapsulationSeedSize()))
			if err != nil {
				return err
			}
			want = ss
			return errors.Join(c.remove(osslSS), os.WriteFile(c.path(osslCT), ct, 0o600))
		},
		cmds: [][]string{{"pkeyutl", "-decap", "-inkey", osslPriv, "-in", osslCT, "-secret", osslSS}},
		check: func(string) error {
			if !bytes.Equal(want, c.read(osslSS)) {
				return errors.New("openssl's decapsulated secret differs from the one encapsulated with Go")
			}
			return nil
		},
		sizes: func() artifacts.Sizes { return artifacts.Sizes{SharedSecret: len(c.read(osslSS))} },
	}, nil
}

func (c *osslRun) derive() (osslIteration, error) {
	ours, err := c.key.ecdhPublic()
	if err != nil {
		return osslIteration{}, err
	}
	var peer *ecdh.PrivateKey
	return osslIteration{
		prep: func() error {
			var err error
			if peer, err = ours.Curve().GenerateKey(rand.Reader); err != nil {
				return err
			}
			der, err := x509.MarshalPKIXPublicKey(peer.PublicKey())
			if err != nil {
				return err
			}
			return errors.Join(c.remove(osslSS), os.WriteFile(c.path(osslPeer), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
		},
		cmds: [][]string{{"pkeyutl", "-derive", "-inkey", osslPriv, "-peerkey", osslPeer, "-out", osslSS}},
		check: func(string) error {
			ss, err := peer.ECDH(ours)
			if err != nil || len(ss) == 0 || !bytes.Equal(ss, c.read(osslSS)) {
				return errors.New("openssl derived a different secret from the peer's (computed with Go)")
			}
			return nil
		},
		sizes: func() artifacts.Sizes { return artifacts.Sizes{SharedSecret: len(c.read(osslSS))} },
	}, nil
}

// ecdhPublic is the key's public key as an ECDH key (X25519, or a P-256 EC key).
func (k *pemKey) ecdhPublic() (*ecdh.PublicKey, error) {
	switch p := k.pub.(type) {
	case *ecdh.PublicKey:
		return p, nil
	case *ecdsa.PublicKey:
		return p.ECDH()
	}
	return nil, fmt.Errorf("a %s key cannot derive a shared secret", k.alg)
}

// roundTrip proves a freshly generated key-establishment key works with Go on the other
// side: an ML-KEM encapsulation decapsulates to the same secret, an ECDH agreement agrees.
// Signature keys were already checked by recomputing their public key.
func (k *pemKey) roundTrip() error {
	switch priv := k.priv.(type) {
	case kem.PrivateKey:
		s := priv.Scheme()
		ct, ss, err := s.Encapsulate(priv.Public())
		if err != nil {
			return err
		}
		ss2, err := s.Decapsulate(priv, ct)
		if err != nil || !bytes.Equal(ss, ss2) {
			return errors.New("the generated key fails an encapsulation round trip")
		}
	case *ecdh.PrivateKey:
		return ecdhRoundTrip(priv)
	case *ecdsa.PrivateKey:
		e, err := priv.ECDH()
		if err != nil {
			return err
		}
		return ecdhRoundTrip(e)
	}
	return nil
}

func ecdhRoundTrip(priv *ecdh.PrivateKey) error {
	peer, err := priv.Curve().GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	a, err1 := priv.ECDH(peer.PublicKey())
	b, err2 := peer.ECDH(priv.PublicKey())
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return errors.New("the generated key does not agree with a peer")
	}
	return nil
}

// Run runs every cell of an openssl-cli manifest with o, whose Info is info, in rounds (one
// iteration a turn), and returns the cells and the schedule they ran in. With a meter (the
// host's metered pass, its idle window already recorded), each cell's timed iterations are
// followed by a load window of its commands run back to back. It returns
// ctx.Err() when cancelled and the error of a cell whose run broke.
func (o *CLI) Run(ctx context.Context, m *artifacts.Manifest, info artifacts.OpenSSLInfo, meter trial.LoadWindow, obs runner.Observer, log io.Writer) ([]runner.CellResult, *artifacts.Schedule, error) {
	fmt.Fprintf(log, "openssl: %s; invocation %s", info.Version, strings.Join(info.Invocation, " "))
	if len(info.Env) > 0 {
		fmt.Fprintf(log, " with %s", strings.Join(info.Env, " "))
	}
	fmt.Fprintln(log)
	if info.LoaderOverheadMethod != "" {
		fmt.Fprintf(log, "openssl: loader overhead %.0f ns per command: %s\n", info.LoaderOverheadNs, info.LoaderOverheadMethod)
	}
	work, err := os.MkdirTemp("", "pqrepro-openssl-")
	if err != nil {
		return nil, nil, fmt.Errorf("openssl-cli work dir: %w", err)
	}
	defer os.RemoveAll(work)
	cells := m.Cells()
	_, loadD := m.Spec.EnergyWindows()
	// The cells run in rounds (rounds.go), one iteration a turn: every iteration starts
	// processes, so nothing stays warm across iterations anyway.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([][]runner.CellResult, len(cells))
	var firstErr error
	sched := trial.NewScheduler(m.Spec.Seed, time.Now())
	finished := 0
	for i, ref := range cells {
		sched.Add(func(t *trial.Turns) {
			obs.CellStarted(finished, len(cells), ref)
			plan := trial.Plan{
				Warmup: m.Spec.Warmup, Iterations: m.Spec.Iterations, MinIterations: m.Spec.MinIterations,
				Budget:   time.Duration(m.Spec.Budget),
				Progress: func(done int) { obs.Iteration(finished, done, m.Spec.Iterations) },
				Turns:    t, Process: true, Meter: meter, MeterLoad: loadD,
			}
			runs, err := o.osslCells(ctx, work, m, ref, plan)
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				cancel()
				return
			}
			for _, r := range runs {
				r.Cell.Algorithm, r.Cell.Operation, r.Cell.Requested = ref.Algorithm, ref.Operation, m.Spec.Iterations
				detail := ""
				if r.Cell.Variant != "" {
					detail = " [" + r.Cell.Variant + "]"
				}
				if r.Cell.Error != "" {
					detail += ": " + r.Cell.Error
				}
				fmt.Fprintf(log, "cell %s %s (openssl-cli): %s n=%d in %s%s\n", ref.Algorithm, ref.Operation, r.Cell.Status, len(r.Samples), t.Elapsed().Round(time.Millisecond), detail)
				if r.Power != nil {
					fmt.Fprintf(log, "energy: %s %s: the load window ran %d iterations of the cell's %d openssl commands back to back (the last may end after it)\n", ref.Algorithm, ref.Operation, r.LoadOps, len(r.Cell.Commands))
				}
				results[i] = append(results[i], runner.CellResult{Cell: r.Cell, Samples: r.Samples, Rounds: r.Rounds, Offsets: r.Offsets, Power: r.Power})
			}
			finished++
			obs.CellDone(finished-1, len(cells), results[i][0].Cell)
		})
	}
	rounds, err := sched.Run(ctx)
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if err != nil {
		return nil, nil, err
	}
	var out []runner.CellResult
	for _, rs := range results {
		out = append(out, rs...)
	}
	return out, &artifacts.Schedule{Rounds: rounds, Order: trial.RoundOrder}, nil
}
