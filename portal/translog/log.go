package translog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/portal/blob"
	"pqrepro/portal/fault"
)

// Pending is a queued leaf: committed with its run, not yet in the tree.
type Pending struct {
	RunID int64
	Leaf  []byte
}

// State is the tree as the store holds it.
type State struct {
	// Size and Root are the integrated tree: every leaf below Size has its index and hashes.
	Size int64
	Root tlog.Hash
	// Published is the size of the last checkpoint written to the files (≤ Size); between
	// the two, tiles and checkpoint are still to be written (a sequencer stopped there).
	Published int64
	// Checkpoint is the log-signed checkpoint note of size Published (no cosignatures).
	Checkpoint []byte
}

// IntegrateFunc computes the stored hashes for pending leaves appended to a tree of size
// leaves, reading earlier hashes through r; it returns the new hashes (in tlog storage
// order, beginning at tlog.StoredHashCount(size)) and the new root.
type IntegrateFunc func(size int64, pending []Pending, r tlog.HashReader) (hashes []tlog.Hash, root tlog.Hash, err error)

// Store is what the sequencer needs from the SQL store. Each method is one transaction; an
// implementation on PostgreSQL keeps the same contract.
type Store interface {
	// LockSequencer takes the sequencer lock for holder until the given time, or extends it
	// when holder already has it; false (and no error) when another holder's lock is live.
	LockSequencer(ctx context.Context, holder string, until time.Time) (bool, error)
	// UnlockSequencer releases holder's lock (a no-op when it is not holder's).
	UnlockSequencer(ctx context.Context, holder string) error
	// Integrate, in one transaction that first checks holder still has the lock (a
	// fault.Conflict otherwise), reads the state and up to max pending leaves in queue
	// order, calls fn, stores its hashes, gives the leaves indexes Size, Size+1, … and sets
	// Size and Root. It returns how many leaves it integrated; an error from fn rolls all back.
	Integrate(ctx context.Context, holder string, max int, fn IntegrateFunc) (int, error)
	// MarkPublished records that the checkpoint of size (≤ Size, ≥ Published) was written;
	// a fault.Conflict when holder lost the lock.
	MarkPublished(ctx context.Context, holder string, size int64, checkpoint []byte) error
	// LogState returns the state (zero for an empty log).
	LogState(ctx context.Context) (State, error)
	// QueuePartials records directories of partial tiles ("tile/0/000.p") whose files may be
	// removed from due on; a directory already queued keeps its time.
	QueuePartials(ctx context.Context, dirs []string, due time.Time) error
	// DuePartials returns up to max queued directories due at now, earliest first.
	DuePartials(ctx context.Context, now time.Time, max int) ([]string, error)
	// DropPartials forgets directories whose files were removed.
	DropPartials(ctx context.Context, dirs []string) error
}

// Entry is a run's place in the log.
type Entry struct {
	RunID int64
	Leaf  []byte
	// Index is the leaf index, or -1 while the leaf is pending.
	Index int64
}

// Reader reads what the log's proofs and files are made from.
type Reader interface {
	// ReadHashes returns the stored hashes at the given tlog storage indexes.
	ReadHashes(ctx context.Context, indexes []int64) ([]tlog.Hash, error)
	// Leaves returns the leaves with indexes in [start, end), in order.
	Leaves(ctx context.Context, start, end int64) ([][]byte, error)
	// LogEntry returns a run's entry; a run never queued is a fault.NotFound error.
	LogEntry(ctx context.Context, runID int64) (Entry, error)
}

// Witness is a registered witness: its name, its cosignature verifier keys and, for a
// witness the log pushes checkpoints to, its C2SP tlog-witness URL.
type Witness struct {
	Name string `json:"name"`
	// Ed25519 is its cosignature/v1 vkey (type 0x04): every witness has one.
	Ed25519 string `json:"ed25519"`
	// MLDSA44 is its ML-DSA-44 cosignature vkey (type 0x06), "" for a witness without one
	// (the ecosystem's witnesses cosign with Ed25519 only).
	MLDSA44 string `json:"mldsa44,omitempty"`
	// URL is the witness's tlog-witness prefix: the log POSTs URL + "/add-checkpoint" with each
	// new checkpoint. "" for a witness that follows the log itself (pqrepro witness) and
	// submits its cosignatures.
	URL   string    `json:"url,omitempty"`
	Added time.Time `json:"added"`
}

// WitnessStore keeps registered witnesses and the cosignatures they submitted.
type WitnessStore interface {
	// AddWitness registers (or replaces the keys of) a witness by name.
	AddWitness(ctx context.Context, w Witness) error
	// Witnesses returns the registered witnesses.
	Witnesses(ctx context.Context) ([]Witness, error)
	// AddCosignature keeps one signature line ("— name base64") for the checkpoint of size,
	// replacing the same key's earlier line for that size.
	AddCosignature(ctx context.Context, size int64, name string, keyID uint32, line string) error
	// Cosignatures returns the signature lines kept for the checkpoint of size, in a stable order.
	Cosignatures(ctx context.Context, size int64) ([]string, error)
}

// Step names a point in sequencing, for crash tests (Log.Hook).
type Step string

// Steps of one sequencing round, in order.
const (
	StepHashesStored      Step = "hashes-stored"      // the integrate transaction committed
	StepTilesWritten      Step = "tiles-written"      // tiles and entry bundles are written
	StepCheckpointWritten Step = "checkpoint-written" // the checkpoint file is written, not yet marked
)

// CheckpointFile is the checkpoint's name in the files.
const CheckpointFile = "checkpoint"

// Config configures a Log.
type Config struct {
	// Origin is the checkpoint origin line and the log key's name ("pqrepro.example/log").
	Origin string
	// SKey is the log's note signer key (note.GenerateKey's skey, Ed25519).
	SKey string
	// Batch is the most leaves one integrate transaction takes (default 1024).
	Batch int
	// LockTTL is how long a sequencer's lock lasts without renewal (default 30s).
	LockTTL time.Duration
	// PartialRetention is how long the partial tiles of a completed tile stay served after it
	// completes (default DefaultPartialRetention), so a reader whose checkpoint is older than
	// the tile's completion can still read its tree's tiles.
	PartialRetention time.Duration
}

// DefaultPartialRetention is how long partial tiles stay after their tile completes unless
// Config says otherwise: a week.
const DefaultPartialRetention = 7 * 24 * time.Hour

// Log is the transparency log over a store and the files. It is safe for concurrent use;
// Sequence serialises across processes through the store's lock.
type Log struct {
	cfg      Config
	signer   note.Signer
	verifier note.Verifier
	vkey     string // the verifier key's text, derived once (a scalar multiplication)
	store    Store
	read     Reader
	wit      WitnessStore
	files    blob.Files
	log      *slog.Logger
	holder   string
	push     pushState
	// Hook, when set, is called after each step of sequencing; an error (or a panic) there
	// stops the round as a crash would. Only tests set it.
	Hook func(Step) error
	// Now is the clock (lock expiry, registration freshness).
	Now func() time.Time
}

// New returns a log. store, read and wit are usually one SQL store.
func New(cfg Config, store Store, read Reader, wit WitnessStore, files blob.Files, log *slog.Logger) (*Log, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = 1024
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = 30 * time.Second
	}
	if cfg.PartialRetention <= 0 {
		cfg.PartialRetention = DefaultPartialRetention
	}
	s, err := note.NewSigner(cfg.SKey)
	if err != nil {
		return nil, fmt.Errorf("log signing key: %w", err)
	}
	if s.Name() != cfg.Origin {
		return nil, fmt.Errorf("log signing key is named %q, the origin is %q: make a key for the origin", s.Name(), cfg.Origin)
	}
	vk, err := VerifierKeyOf(cfg.SKey)
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vk)
	if err != nil {
		return nil, fmt.Errorf("log verifier key: %w", err)
	}
	var tag [8]byte
	rand.Read(tag[:])
	return &Log{cfg: cfg, signer: s, verifier: v, vkey: vk, store: store, read: read, wit: wit, files: files, log: log,
		holder: "sequencer-" + hex.EncodeToString(tag[:]), Now: time.Now}, nil
}

// VerifierKeyOf returns the vkey of a note skey ("PRIVATE+KEY+name+hash+base64(0x01||seed)").
func VerifierKeyOf(skey string) (string, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return "", fmt.Errorf("log signing key: %w", err)
	}
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("log signing key: malformed")
	}
	seed, err := decodeB64(parts[4])
	if err != nil || len(seed) != 33 || seed[0] != SigEd25519 {
		return "", errors.New("log signing key: not an Ed25519 key")
	}
	return note.NewEd25519VerifierKey(s.Name(), ed25519Public(seed[1:]))
}

// Origin is the log's origin line.
func (l *Log) Origin() string { return l.cfg.Origin }

// VerifierKey is the log's public key as a vkey.
func (l *Log) VerifierKey() string { return l.vkey }

// Verifier is the log's note verifier.
func (l *Log) Verifier() note.Verifier { return l.verifier }

func (l *Log) hashReader(ctx context.Context) tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) { return l.read.ReadHashes(ctx, idx) })
}

func (l *Log) hook(s Step) error {
	if l.Hook == nil {
		return nil
	}
	if err := l.Hook(s); err != nil {
		return fmt.Errorf("sequencer stopped after %s: %w", s, err)
	}
	return nil
}

// Sequence integrates every pending leaf: it takes the lock (returning 0, nil when another
// sequencer has it), finishes what an interrupted round left (tiles and checkpoint of leaves
// already integrated), then integrates batches, writing tiles, entry bundles and the
// checkpoint after each, and refreshes the checkpoint file's cosignatures. It returns the
// published tree size.
func (l *Log) Sequence(ctx context.Context) (int64, error) {
	ok, err := l.store.LockSequencer(ctx, l.holder, l.Now().Add(l.cfg.LockTTL))
	if err != nil {
		return 0, fmt.Errorf("take the sequencer lock: %w", err)
	}
	if !ok {
		return 0, nil
	}
	defer l.store.UnlockSequencer(context.WithoutCancel(ctx), l.holder)
	for {
		st, err := l.store.LogState(ctx)
		if err != nil {
			return 0, fmt.Errorf("read the log state: %w", err)
		}
		if st.Published < st.Size {
			if err := l.publish(ctx, st); err != nil {
				return 0, err
			}
			continue
		}
		if _, err := l.store.LockSequencer(ctx, l.holder, l.Now().Add(l.cfg.LockTTL)); err != nil {
			return 0, fmt.Errorf("renew the sequencer lock: %w", err)
		}
		n, err := l.store.Integrate(ctx, l.holder, l.cfg.Batch, l.integrate)
		if err != nil {
			return 0, fmt.Errorf("integrate pending leaves: %w", err)
		}
		if n == 0 {
			l.removeDuePartials(ctx)
			return st.Published, l.refreshCheckpoint(ctx, st)
		}
		if err := l.hook(StepHashesStored); err != nil {
			return 0, err
		}
	}
}

// integrate is the IntegrateFunc: the stored hashes of each pending leaf in turn.
func (l *Log) integrate(size int64, pending []Pending, r tlog.HashReader) ([]tlog.Hash, tlog.Hash, error) {
	var all []tlog.Hash
	base := tlog.StoredHashCount(size)
	// Hashes computed in this batch are read from all, earlier ones from r.
	rr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		var need []int64
		var at []int
		for i, x := range idx {
			if x >= base {
				out[i] = all[x-base]
			} else {
				need = append(need, x)
				at = append(at, i)
			}
		}
		if len(need) > 0 {
			hs, err := r.ReadHashes(need)
			if err != nil {
				return nil, err
			}
			for j, h := range hs {
				out[at[j]] = h
			}
		}
		return out, nil
	})
	for i, p := range pending {
		if _, err := ParseLeaf(p.Leaf); err != nil {
			return nil, tlog.Hash{}, fmt.Errorf("run %d: %w", p.RunID, err)
		}
		hs, err := tlog.StoredHashes(size+int64(i), p.Leaf, rr)
		if err != nil {
			return nil, tlog.Hash{}, err
		}
		all = append(all, hs...)
	}
	root, err := tlog.TreeHash(size+int64(len(pending)), rr)
	return all, root, err
}

// publish writes the tiles and entry bundles of leaves [st.Published, st.Size), then the
// checkpoint of st.Size, then marks it published. Every write is idempotent: the content
// follows from the stored hashes, so a round stopped anywhere is finished by the next.
func (l *Log) publish(ctx context.Context, st State) error {
	hr := l.hashReader(ctx)
	tiles := tlog.NewTiles(TileHeight, st.Published, st.Size)
	for _, t := range tiles {
		data, err := tlog.ReadTileData(t, hr)
		if err != nil {
			return fmt.Errorf("read tile %s: %w", TilePath(t), err)
		}
		if err := l.files.WriteFile(ctx, TilePath(t), data); err != nil {
			return fmt.Errorf("write tile %s: %w", TilePath(t), err)
		}
		if t.L != 0 {
			continue
		}
		start := t.N << TileHeight
		leaves, err := l.read.Leaves(ctx, start, start+int64(t.W))
		if err != nil {
			return fmt.Errorf("read leaves %d-%d: %w", start, start+int64(t.W), err)
		}
		bundle, err := EncodeEntries(leaves)
		if err != nil {
			return err
		}
		et := t
		et.L = -1
		if err := l.files.WriteFile(ctx, TilePath(et), bundle); err != nil {
			return fmt.Errorf("write entry bundle %s: %w", TilePath(et), err)
		}
	}
	if err := l.hook(StepTilesWritten); err != nil {
		return err
	}
	body := Checkpoint{Origin: l.cfg.Origin, Size: st.Size, Hash: st.Root}.Format()
	signed, err := note.Sign(&note.Note{Text: string(body)}, l.signer)
	if err != nil {
		return fmt.Errorf("sign checkpoint %d: %w", st.Size, err)
	}
	if err := l.files.WriteFile(ctx, CheckpointFile, signed); err != nil {
		return fmt.Errorf("write checkpoint %d: %w", st.Size, err)
	}
	if err := l.hook(StepCheckpointWritten); err != nil {
		return err
	}
	if err := l.store.MarkPublished(ctx, l.holder, st.Size, signed); err != nil {
		return fmt.Errorf("mark checkpoint %d published: %w", st.Size, err)
	}
	l.log.Info("log checkpoint", "size", st.Size, "root", st.Root.String())
	if err := l.store.QueuePartials(ctx, completedPartials(tiles), l.Now().Add(l.cfg.PartialRetention)); err != nil {
		l.log.Warn("queue partial tiles for removal", "err", err)
	}
	return nil
}

// completedPartials returns the partial-tile directories ("<N>.p") of every tile in tiles
// that is complete, hash tiles and entry bundles. C2SP tlog-tiles lets a log remove them once
// the full tile is served; this log keeps them for Config.PartialRetention first (queued in
// the store), because a reader holding a checkpoint from before the tile completed reads its
// tree's tiles at their partial widths and not every reader falls back to the full tile.
// Without removal the log would keep one partial per sequencing round and tile, most of its
// files.
func completedPartials(tiles []tlog.Tile) []string {
	var dirs []string
	for _, t := range tiles {
		if t.W != 1<<TileHeight {
			continue
		}
		dirs = append(dirs, TilePath(t)+".p")
		if t.L == 0 {
			et := t
			et.L = -1
			dirs = append(dirs, TilePath(et)+".p")
		}
	}
	return dirs
}

// removeDuePartials removes the partial tiles whose retention has passed. A failure only
// leaves files behind (removal is tried again next round), so it is logged, not returned.
func (l *Log) removeDuePartials(ctx context.Context) {
	dirs, err := l.store.DuePartials(ctx, l.Now(), 256)
	if err != nil {
		l.log.Warn("read partial tiles due for removal", "err", err)
		return
	}
	var done []string
	for _, d := range dirs {
		if _, err := l.files.RemoveFiles(ctx, d); err != nil {
			l.log.Warn("remove partial tiles", "dir", d, "err", err)
			continue
		}
		done = append(done, d)
	}
	if err := l.store.DropPartials(ctx, done); err != nil {
		l.log.Warn("forget removed partial tiles", "err", err)
	}
}

// refreshCheckpoint rewrites the checkpoint file when the cosignatures kept for the
// published checkpoint are not all in it.
func (l *Log) refreshCheckpoint(ctx context.Context, st State) error {
	if st.Published == 0 || l.wit == nil {
		return nil
	}
	want, err := l.withCosignatures(ctx, st)
	if err != nil {
		return err
	}
	have, err := l.files.ReadFile(ctx, CheckpointFile)
	if err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := l.files.WriteFile(ctx, CheckpointFile, want); err != nil {
		return fmt.Errorf("write checkpoint %d with cosignatures: %w", st.Published, err)
	}
	return nil
}

func (l *Log) withCosignatures(ctx context.Context, st State) ([]byte, error) {
	lines, err := l.wit.Cosignatures(ctx, st.Published)
	if err != nil {
		return nil, fmt.Errorf("read cosignatures of checkpoint %d: %w", st.Published, err)
	}
	out := append([]byte(nil), st.Checkpoint...)
	for _, ln := range lines {
		out = append(out, ln...)
		out = append(out, '\n')
	}
	return out, nil
}

// Checkpoint returns the published checkpoint note with the cosignatures kept for it; a
// fault.NotFound error while the log is empty.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, error) {
	st, err := l.store.LogState(ctx)
	if err != nil {
		return nil, err
	}
	if st.Published == 0 {
		return nil, fault.New(fault.NotFound, "the log has no checkpoint yet")
	}
	if l.wit == nil {
		return st.Checkpoint, nil
	}
	return l.withCosignatures(ctx, st)
}

// Inclusion is a run's inclusion in the published log, or its pending state.
type Inclusion struct {
	RunID int64 `json:"run_id"`
	// Pending: the run is queued (or integrated but its checkpoint not yet written).
	Pending bool `json:"pending"`
	// Leaf is the leaf's encoding.
	Leaf string `json:"leaf"`
	// Index is the leaf index (absent while pending).
	Index int64 `json:"index"`
	// TreeSize is the checkpoint's size.
	TreeSize int64 `json:"tree_size,omitempty"`
	// Checkpoint is the signed checkpoint note the proof is against, with cosignatures.
	Checkpoint string `json:"checkpoint,omitempty"`
	// Proof is the RFC 6962 inclusion path, leaf to root.
	Proof []tlog.Hash `json:"proof,omitempty"`
}

// Inclusion returns runID's inclusion proof against the published checkpoint.
func (l *Log) Inclusion(ctx context.Context, runID int64) (Inclusion, error) {
	e, err := l.read.LogEntry(ctx, runID)
	if err != nil {
		return Inclusion{}, err
	}
	inc := Inclusion{RunID: runID, Leaf: string(e.Leaf), Index: e.Index, Pending: true}
	st, err := l.store.LogState(ctx)
	if err != nil {
		return Inclusion{}, err
	}
	if e.Index < 0 || e.Index >= st.Published {
		return inc, nil
	}
	cp, err := l.withCosignatures(ctx, st)
	if err != nil {
		return Inclusion{}, err
	}
	proof, err := tlog.ProveRecord(st.Published, e.Index, l.hashReader(ctx))
	if err != nil {
		return Inclusion{}, fmt.Errorf("prove run %d at %d in %d: %w", runID, e.Index, st.Published, err)
	}
	inc.Pending, inc.TreeSize, inc.Checkpoint, inc.Proof = false, st.Published, string(cp), proof
	return inc, nil
}

// ReadFile returns one of the log's files (the checkpoint with its cosignatures, a tile or
// an entry bundle) by its C2SP path; a malformed path is a fault.Invalid error.
func (l *Log) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if name == CheckpointFile {
		return l.Checkpoint(ctx)
	}
	if _, err := ParseTilePath(name); err != nil {
		return nil, fault.Wrap(fault.Invalid, err, "not a tile path")
	}
	return l.files.ReadFile(ctx, name)
}
