package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"pqrepro/artifacts"
	"pqrepro/experiments"
	"pqrepro/runner"
	"pqrepro/runner/exec/tlsmatrix"
	"pqrepro/runner/trial"
)

// Host is the runner's own CPU as a board: experiments run in-process in Go, timed with the
// monotonic clock. It is always present, so pqrepro works with nothing plugged in.
type Host struct {
	// Class is the board class results are filed under: "host" unless the operator declares
	// the machine to be one of the reference boards (e.g. "rpi4-b" on a Raspberry Pi 4).
	Class string
	// Exe is the pqrepro binary used for the process-per-operation method ("" = this process's).
	Exe string
	// PowercapRoot is where RAPL domains are looked for (default /sys/class/powercap).
	PowercapRoot string
	// Roots are where the machine is read from for its identity and the class check
	// (default /proc and /sys).
	Roots runner.Roots

	// OpenSSL is the openssl command line the openssl-cli method runs (default: openssl on PATH).
	OpenSSL OpenSSLConfig

	openssl opensslRun

	// tlsFault breaks tls-matrix cells on purpose (tlsCellConfig.Fault); tests only.
	tlsFault string
	// tlsEnv is the latest tls-matrix run's record for environment.json.
	tlsMu  sync.Mutex
	tlsEnv *artifacts.TLSEnvironment
	// schedule is the latest run's interleaving of its cells (under tlsMu).
	schedule *artifacts.Schedule

	once sync.Once
	kems map[string]*kemImpl
	sigs map[string]*sigImpl
}

var _ runner.Board = (*Host)(nil)

func (h *Host) impls() (map[string]*kemImpl, map[string]*sigImpl) {
	h.once.Do(func() { h.kems, h.sigs = hostAlgorithms() })
	return h.kems, h.sigs
}

// Identity describes the host board. A declared class (Class) is checked against the board
// catalogue from what this machine reports; a clear mismatch (an amd64 machine declared a
// Raspberry Pi 4) is an error and nothing runs.
func (h *Host) Identity(ctx context.Context) (artifacts.BoardIdentity, error) {
	chk, err := h.CheckClass()
	if err != nil {
		return artifacts.BoardIdentity{}, err
	}
	return artifacts.BoardIdentity{
		Name: "host", Class: h.class(), Driver: "host", Chip: runner.MachineEnvironment(h.Roots).CPUModel,
		RNG: "seeded SHAKE256 stream for keys and messages where the library accepts a reader; OS RNG otherwise (noted per algorithm)", Assurance: artifacts.AssuranceHost,
		ClassStatus: chk.Status, ClassNote: chk.Note,
	}, nil
}

// CheckClass checks the host's board class against the board catalogue (see
// experiments.Catalog.CheckClass) from what this machine reports: its architecture, CPU,
// clock and virtualization. It returns the status (verified or declared) with its note, or
// a *experiments.ClassMismatchError refusing the class.
func (h *Host) CheckClass() (experiments.ClassCheck, error) {
	env := runner.MachineEnvironment(h.Roots)
	env.Board = artifacts.BoardIdentity{Driver: "host", Class: h.class()}
	return experiments.CheckClassEmbedded(h.class(), env)
}

// Run executes every cell of m in order. It returns ctx.Err() if cancelled; a cell whose
// output check fails is recorded as failed and the run goes on.
func (h *Host) Run(ctx context.Context, m *artifacts.Manifest, obs runner.Observer, log io.Writer) ([]runner.CellResult, error) {
	if m.Spec.Method == artifacts.MethodOpenSSLCLI {
		return h.runOpenSSLCLI(ctx, m, obs, log)
	}
	kems, sigs := h.impls()
	meter, reason := trial.OpenRAPL(h.powercapRoot())
	if meter == nil {
		fmt.Fprintf(log, "energy: absent: %s\n", reason)
	} else {
		fmt.Fprintf(log, "energy: %s\n", meter.Source())
	}
	cells := m.Cells()
	var exec trial.Executor
	if mk := hostKinds[m.Kind]; mk != nil {
		exec = mk(h)
	}
	if e, ok := exec.(interface {
		Environment() *artifacts.TLSEnvironment
	}); ok {
		defer func() {
			h.tlsMu.Lock()
			h.tlsEnv = e.Environment()
			h.tlsMu.Unlock()
		}()
	}
	noted := map[string]bool{}
	note := func(alg, text string) {
		if text != "" && !noted[alg] {
			noted[alg] = true
			fmt.Fprintf(log, "inputs: %s: %s\n", alg, text)
		}
	}
	// The cells run in rounds (rounds.go); a cell whose run breaks (an error, not a failed
	// cell) cancels the others and its error is the run's.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([][]runner.CellResult, len(cells))
	var firstErr error // the first cell whose run broke (one cell runs at a time)
	sched := trial.NewScheduler(m.Spec.Seed, time.Now())
	finished := 0 // cells done, for the observer
	for i, ref := range cells {
		sched.Add(func(t *trial.Turns) {
			obs.CellStarted(finished, len(cells), ref)
			for _, alg := range []string{ref.Algorithm, pairPart(ref.Algorithm, 0), pairPart(ref.Algorithm, 1)} {
				if k := kems[alg]; k != nil {
					note(alg, k.rngNote)
				}
				if s := sigs[alg]; s != nil {
					note(alg, s.rngNote)
				}
			}
			plan := trial.Plan{
				Warmup: m.Spec.Warmup, Iterations: m.Spec.Iterations, MinIterations: m.Spec.MinIterations,
				Budget: time.Duration(m.Spec.Budget), Energy: meter,
				Progress: func(done int) { obs.Iteration(finished, done, m.Spec.Iterations) },
				Turns:    t, Process: m.Spec.Method == artifacts.MethodProcessPerOperation,
			}
			var r trial.Outcome
			var err error
			if m.Spec.Method == artifacts.MethodProcessPerOperation {
				r, err = h.runProcessCell(ctx, m, ref, plan, log)
			} else if exec != nil {
				r, err = exec.Cell(ctx, trial.Cell{Manifest: m, Ref: ref, Plan: plan})
			} else {
				r.Cell = artifacts.Cell{Status: artifacts.StatusSkipped, Error: "the host board has no executor for " + m.Kind + " experiments"}
			}
			if err != nil {
				if firstErr == nil {
					firstErr = err // the cells cancelled after it return ctx.Err(), not the cause
				}
				cancel()
				return
			}
			results[i] = h.cellResults(m, ref, r, meter, reason, t.Elapsed(), log)
			finished++
			obs.CellDone(finished-1, len(cells), results[i][len(results[i])-1].Cell)
		})
	}
	rounds, err := sched.Run(ctx)
	if firstErr != nil {
		return nil, firstErr
	}
	if err != nil {
		return nil, err
	}
	h.noteSchedule(&artifacts.Schedule{Rounds: rounds, Order: trial.RoundOrder})
	var out []runner.CellResult
	for _, rs := range results {
		out = append(out, rs...)
	}
	return out, nil
}

// cellResults turns a cell's run (and its variants) into the run's cell results, and logs
// each with the time its turns took.
func (h *Host) cellResults(m *artifacts.Manifest, ref artifacts.CellRef, r trial.Outcome, meter *trial.RAPL, reason string, took time.Duration, log io.Writer) []runner.CellResult {
	var out []runner.CellResult
	for _, r := range append([]trial.Outcome{r}, r.Variants...) {
		r.Cell.Algorithm, r.Cell.Operation = ref.Algorithm, ref.Operation
		r.Cell.Requested = m.Spec.Iterations
		if r.Cell.Status == artifacts.StatusOK && r.Cell.Energy == nil && meter == nil {
			r.Cell.Energy = &artifacts.Energy{Absent: reason}
		}
		why, variant := "", ""
		if r.Cell.Error != "" {
			why = ": " + r.Cell.Error
		}
		if r.Cell.Variant != "" {
			variant = " [" + r.Cell.Variant + "]"
		}
		blocks := ""
		if r.Cell.Block > 0 {
			blocks = fmt.Sprintf(", %d a turn", r.Cell.Block)
		}
		fmt.Fprintf(log, "cell %s %s%s: %s n=%d in %s%s%s\n", ref.Algorithm, ref.Operation, variant, r.Cell.Status, len(r.Samples), took.Round(time.Millisecond), blocks, why)
		out = append(out, runner.CellResult{Cell: r.Cell, Samples: r.Samples, TLS: r.TLS, Rounds: r.Rounds, Offsets: r.Offsets})
	}
	return out
}

// noteSchedule keeps the latest run's schedule for its result (runner.ScheduleNoter).
func (h *Host) noteSchedule(s *artifacts.Schedule) {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	h.schedule = s
}

// LastSchedule implements runner.ScheduleNoter: the latest run's schedule.
func (h *Host) LastSchedule() *artifacts.Schedule {
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	return h.schedule
}

// hostKinds makes the host board's executor of one run for every experiment kind
// (artifacts.Kinds); a test checks that none is missing. The cells of a run share what its
// executor keeps (the signature pools, the TLS chains).
var hostKinds = map[string]func(h *Host) trial.Executor{
	artifacts.KindKEMBench:       (*Host).benchRun,
	artifacts.KindSigBench:       (*Host).benchRun,
	artifacts.KindKEMSigSequence: (*Host).benchRun,
	artifacts.KindTLSMatrix: func(h *Host) trial.Executor {
		return &tlsmatrix.HostRun{Exe: h.Exe, Fault: h.tlsFault}
	},
	artifacts.KindMQTTTelemetry: func(*Host) trial.Executor { return trial.ExecutorFunc(mqttCell) },
}

// benchRun is a run of one of the benchmark kinds with the host's implementations; its
// signature cells share key pools.
type benchRun struct {
	kems     map[string]*kemImpl
	sigs     map[string]*sigImpl
	sigState *sigState
}

func (h *Host) benchRun() trial.Executor {
	kems, sigs := h.impls()
	return &benchRun{kems: kems, sigs: sigs, sigState: &sigState{pools: map[string]*sigPool{}}}
}

// Cell implements trial.Executor.
func (b *benchRun) Cell(ctx context.Context, c trial.Cell) (trial.Outcome, error) {
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

// pairPart returns the KEM (i=0) or signature (i=1) of a "KEM+SIG" name, or "".
func pairPart(name string, i int) string {
	k, s, ok := artifacts.SplitPair(name)
	if !ok {
		return ""
	}
	return []string{k, s}[i]
}

func (h *Host) class() string {
	if h.Class != "" {
		return h.Class
	}
	return "host"
}

func (h *Host) powercapRoot() string {
	if h.PowercapRoot != "" {
		return h.PowercapRoot
	}
	return "/sys/class/powercap"
}

// message returns the message for an iteration: the fixed text or fresh seeded bytes.
func message(spec *artifacts.Spec, r *trial.DRBG) []byte {
	if spec.Message.Text != "" {
		return []byte(spec.Message.Text)
	}
	return r.Bytes(spec.Message.Size)
}

// kemIn is one iteration's prepared input: the randomness a keygen or encaps reads, the
// ciphertext and secret a decaps must reproduce, or the peer a derive agrees with.
type kemIn struct {
	ct, ss  []byte
	peer    keyPair
	keySeed io.Reader
}

type kemOut struct {
	kp     keyPair
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

// keyForm is the key form a cell's timed operation received, for its record.
func keyForm(spec *artifacts.Spec, op string) string {
	if op == artifacts.OpKeygen {
		return ""
	}
	return spec.Keys
}

func kemCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, k *kemImpl) (trial.Outcome, error) {
	purpose := ref.Algorithm + "/" + ref.Operation
	rng := trial.NewDRBG(m.Spec.Seed, purpose)
	key, err := k.keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
	if err != nil {
		return trial.Outcome{Cell: trial.Failed("generate key: " + err.Error())}, nil
	}
	pub := timedKey(&m.Spec, key.pub, key.pubBytes, k.parsePub)
	priv := timedKey(&m.Spec, key.priv, key.privKey, k.parsePriv)
	var t trial.Trial[kemIn, kemOut]
	switch ref.Operation {
	case artifacts.OpKeygen:
		t = trial.Trial[kemIn, kemOut]{
			Prep: func(int) (kemIn, error) { return kemIn{keySeed: bytes.NewReader(rng.Bytes(64))}, nil },
			Op: func(in kemIn) (kemOut, error) {
				kp, err := k.keygen(in.keySeed)
				return kemOut{kp: kp}, err
			},
			Check: func(_ kemIn, out kemOut) error { return checkKEMKey(k, out.kp, rng) },
			Sizes: func(_ kemIn, out kemOut) artifacts.Sizes {
				return artifacts.Sizes{PublicKey: len(out.kp.pubBytes), PrivateKey: len(out.kp.privKey)}
			},
		}
	case artifacts.OpEncaps:
		t = trial.Trial[kemIn, kemOut]{
			Prep: func(int) (kemIn, error) { return kemIn{keySeed: bytes.NewReader(rng.Bytes(32))}, nil },
			Op: func(in kemIn) (kemOut, error) {
				pk, err := pub()
				if err != nil {
					return kemOut{}, err
				}
				ct, ss, err := k.encaps(pk, in.keySeed)
				return kemOut{ct: ct, ss: ss}, err
			},
			Check: func(_ kemIn, out kemOut) error {
				ss, err := k.decaps(key.priv, out.ct)
				if err != nil || !bytes.Equal(ss, out.ss) {
					return errors.New("decapsulated secret differs from the encapsulated one")
				}
				return nil
			},
			Sizes: func(_ kemIn, out kemOut) artifacts.Sizes {
				return artifacts.Sizes{Ciphertext: len(out.ct), SharedSecret: len(out.ss)}
			},
		}
	case artifacts.OpDecaps:
		t = trial.Trial[kemIn, kemOut]{
			Prep: func(int) (kemIn, error) {
				ct, ss, err := k.encaps(key.pub, rng)
				return kemIn{ct: ct, ss: ss}, err
			},
			Op: func(in kemIn) (kemOut, error) {
				sk, err := priv()
				if err != nil {
					return kemOut{}, err
				}
				ss, err := k.decaps(sk, in.ct)
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
	case artifacts.OpDerive:
		t = trial.Trial[kemIn, kemOut]{
			Prep: func(int) (kemIn, error) {
				peer, err := k.keygen(rng)
				return kemIn{peer: peer}, err
			},
			Op: func(in kemIn) (kemOut, error) {
				sk, err := priv()
				if err != nil {
					return kemOut{}, err
				}
				peer := in.peer.pub
				if m.Spec.Keys != artifacts.KeysParsed {
					if peer, err = k.parsePub(in.peer.pubBytes); err != nil {
						return kemOut{}, fmt.Errorf("decode peer key: %w", err)
					}
				}
				ss, err := k.derive(sk, peer)
				return kemOut{ss: ss}, err
			},
			Check: func(in kemIn, out kemOut) error {
				other, err := k.derive(in.peer.priv, key.pub)
				if err != nil || !bytes.Equal(other, out.ss) {
					return errors.New("the two sides derived different secrets")
				}
				return nil
			},
			Sizes: func(_ kemIn, out kemOut) artifacts.Sizes { return artifacts.Sizes{SharedSecret: len(out.ss)} },
		}
	default:
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: ref.Algorithm + " has no operation " + ref.Operation}}, nil
	}
	r, err := trial.Run(ctx, t, p)
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Keys = keyForm(&m.Spec, ref.Operation)
	}
	return r, err
}

// checkKEMKey proves a freshly generated key works: a round trip gives equal secrets.
func checkKEMKey(k *kemImpl, kp keyPair, rng io.Reader) error {
	if k.derive != nil {
		peer, err := k.keygen(rng)
		if err != nil {
			return err
		}
		a, err1 := k.derive(kp.priv, peer.pub)
		b, err2 := k.derive(peer.priv, kp.pub)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return errors.New("generated key does not agree with a peer")
		}
		return nil
	}
	ct, ss, err := k.encaps(kp.pub, rng)
	if err != nil {
		return err
	}
	ss2, err := k.decaps(kp.priv, ct)
	if err != nil || !bytes.Equal(ss, ss2) {
		return errors.New("generated key fails an encapsulation round trip")
	}
	return nil
}

// sigState shares one key and the signatures made by a sign cell with the verify cell of the
// same algorithm, so verifying slow schemes does not re-sign every message.
type sigState struct{ pools map[string]*sigPool }

type sigPool struct {
	key  keyPair
	msgs [][]byte
	sigs [][]byte
	next int
}

type sigIn struct {
	seed     io.Reader
	msg, sig []byte
}

type sigOut struct {
	kp  keyPair
	sig []byte
	ok  bool
}

func sigCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, s *sigImpl, st *sigState) (trial.Outcome, error) {
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/"+ref.Operation)
	pool := st.pools[ref.Algorithm]
	if pool == nil && ref.Operation != artifacts.OpKeygen {
		key, err := s.keygen(trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/key"))
		if err != nil {
			return trial.Outcome{Cell: trial.Failed("generate key: " + err.Error())}, nil
		}
		pool = &sigPool{key: key}
		st.pools[ref.Algorithm] = pool
	}
	var pub, priv func() (any, error)
	if pool != nil {
		pub = timedKey(&m.Spec, pool.key.pub, pool.key.pubBytes, s.parsePub)
		priv = timedKey(&m.Spec, pool.key.priv, pool.key.privKey, s.parsePriv)
	}
	var t trial.Trial[sigIn, sigOut]
	switch ref.Operation {
	case artifacts.OpKeygen:
		t = trial.Trial[sigIn, sigOut]{
			Prep: func(int) (sigIn, error) { return sigIn{seed: bytes.NewReader(rng.Bytes(96))}, nil },
			Op: func(in sigIn) (sigOut, error) {
				kp, err := s.keygen(in.seed)
				return sigOut{kp: kp}, err
			},
			Check: func(_ sigIn, out sigOut) error {
				if !s.pairs(out.kp.pub, out.kp.priv) {
					return errors.New("public key does not belong to the private key")
				}
				return nil
			},
			Sizes: func(_ sigIn, out sigOut) artifacts.Sizes {
				return artifacts.Sizes{PublicKey: len(out.kp.pubBytes), PrivateKey: len(out.kp.privKey)}
			},
		}
	case artifacts.OpSign:
		t = trial.Trial[sigIn, sigOut]{
			Prep: func(int) (sigIn, error) { return sigIn{msg: message(&m.Spec, rng)}, nil },
			Op: func(in sigIn) (sigOut, error) {
				sk, err := priv()
				if err != nil {
					return sigOut{}, err
				}
				sig, err := s.sign(sk, in.msg, rng)
				return sigOut{sig: sig}, err
			},
			Check: func(in sigIn, out sigOut) error {
				if !s.verify(pool.key.pub, in.msg, out.sig) {
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
	case artifacts.OpVerify:
		t = trial.Trial[sigIn, sigOut]{
			// Verification does the same work for any valid signature, so once the pool holds
			// signatures (from the sign cell, or up to 16 made here) the cell cycles through them
			// rather than re-signing: slow schemes take seconds per signature.
			Prep: func(int) (sigIn, error) {
				if len(pool.sigs) < 16 && pool.next >= len(pool.sigs) {
					msg := message(&m.Spec, rng)
					sig, err := s.sign(pool.key.priv, msg, rng)
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
				return sigOut{ok: s.verify(pk, in.msg, in.sig)}, nil
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
	default:
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: ref.Algorithm + " has no operation " + ref.Operation}}, nil
	}
	r, err := trial.Run(ctx, t, p)
	if err == nil && ref.Operation == artifacts.OpVerify && r.Cell.Status == artifacts.StatusOK {
		// A verifier that accepts everything would pass the check above: make sure it rejects.
		if bad := negativeVerify(s, pool, rng, &m.Spec); bad != nil {
			r = trial.Outcome{Cell: trial.Failed(bad.Error())}
		}
	}
	if r.Cell.Status == artifacts.StatusOK {
		r.Cell.Keys = keyForm(&m.Spec, ref.Operation)
	}
	return r, err
}

// negativeVerify checks that a corrupted signature is rejected.
func negativeVerify(s *sigImpl, pool *sigPool, rng *trial.DRBG, spec *artifacts.Spec) error {
	msg, sig := []byte(nil), []byte(nil)
	if len(pool.sigs) > 0 {
		msg, sig = pool.msgs[0], bytes.Clone(pool.sigs[0])
	} else {
		msg = message(spec, rng)
		var err error
		if sig, err = s.sign(pool.key.priv, msg, rng); err != nil {
			return err
		}
	}
	sig[len(sig)/2] ^= 0x01
	if s.verify(pool.key.pub, msg, sig) {
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
func sequenceCell(ctx context.Context, m *artifacts.Manifest, ref artifacts.CellRef, p trial.Plan, kems map[string]*kemImpl, sigs map[string]*sigImpl) (trial.Outcome, error) {
	kn, sn, _ := artifacts.SplitPair(ref.Algorithm)
	k, s := kems[kn], sigs[sn]
	if k == nil || k.encaps == nil || s == nil {
		return trial.Outcome{Cell: artifacts.Cell{Status: artifacts.StatusSkipped, Error: "the host board cannot run " + ref.Algorithm}}, nil
	}
	rng := trial.NewDRBG(m.Spec.Seed, ref.Algorithm+"/sequence")
	t := trial.Trial[sigIn, seqOut]{
		Prep: func(int) (sigIn, error) {
			return sigIn{seed: bytes.NewReader(rng.Bytes(64 + 32 + 96 + 64)), msg: message(&m.Spec, rng)}, nil
		},
		Op: func(in sigIn) (seqOut, error) {
			kp, err := k.keygen(in.seed)
			if err != nil {
				return seqOut{}, err
			}
			pk, err := timedKey(&m.Spec, kp.pub, kp.pubBytes, k.parsePub)()
			if err != nil {
				return seqOut{}, err
			}
			ct, ss1, err := k.encaps(pk, in.seed)
			if err != nil {
				return seqOut{}, err
			}
			sk, err := timedKey(&m.Spec, kp.priv, kp.privKey, k.parsePriv)()
			if err != nil {
				return seqOut{}, err
			}
			ss2, err := k.decaps(sk, ct)
			if err != nil {
				return seqOut{}, err
			}
			skp, err := s.keygen(in.seed)
			if err != nil {
				return seqOut{}, err
			}
			ssk, err := timedKey(&m.Spec, skp.priv, skp.privKey, s.parsePriv)()
			if err != nil {
				return seqOut{}, err
			}
			sig, err := s.sign(ssk, in.msg, in.seed)
			if err != nil {
				return seqOut{}, err
			}
			spk, err := timedKey(&m.Spec, skp.pub, skp.pubBytes, s.parsePub)()
			if err != nil {
				return seqOut{}, err
			}
			return seqOut{ss1: ss1, ss2: ss2, ok: s.verify(spk, in.msg, sig)}, nil
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
		r.Cell.Keys = keyForm(&m.Spec, ref.Operation)
	}
	return r, err
}

var (
	_ runner.EnvironmentNoter = (*Host)(nil)
	_ runner.ScheduleNoter    = (*Host)(nil)
)

// noteTLS adds a tls-matrix run's chains and methods to environment.json.
func (h *Host) noteTLS(m *artifacts.Manifest, env *artifacts.Environment) {
	if m.Kind != artifacts.KindTLSMatrix {
		return
	}
	h.tlsMu.Lock()
	defer h.tlsMu.Unlock()
	env.TLS = h.tlsEnv
	env.TimerSource = "Go monotonic clock around the client's Handshake call, nanoseconds"
}
