package translog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"pqrepro/internal/webclient"
)

// Source reads a log's files by their C2SP names ("checkpoint", "tile/0/000"): from a portal
// (URL + "/log/" + name) or from a directory holding a copy of the files. An error reading a
// file (unreachable, stalled, cut short, absent) wraps ErrFetch: it says nothing about the
// log's consistency, only that the file could not be had.
type Source interface {
	Get(ctx context.Context, name string) ([]byte, error)
}

// ErrFetch is wrapped by every Source error: the file could not be read whole.
var ErrFetch = errors.New("could not read the log")

// MaxFileBytes bounds one file read from a log: a full hash tile is 8 KiB, a full entry
// bundle at most 256 × (2 + MaxLeafBytes) bytes, a checkpoint MaxCheckpointBytes.
const MaxFileBytes = 1 << 20

// OpenSource returns an HTTP source for an http(s) URL (the portal's address or its /log
// URL, as `pqrepro serve` prints it) and a directory source otherwise. The HTTP source's
// requests are bounded by webclient.Default (30 s each, 30 s without a byte).
func OpenSource(loc string) Source {
	return OpenSourceWith(loc, nil)
}

// OpenSourceWith is OpenSource with the HTTP client to use (nil: webclient.Default's).
func OpenSourceWith(loc string, client *http.Client) Source {
	if strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://") {
		if client == nil {
			client = webclient.New(webclient.Default)
		}
		return httpSource{base: PortalURL(loc) + "/log", client: client}
	}
	return dirSource(loc)
}

// PortalURL returns the portal's base URL from its address or its log's URL
// ("http://host:8080/log/" → "http://host:8080"): the log's files are under it at /log/, its
// API at /api/v1/.
func PortalURL(loc string) string {
	base := strings.TrimRight(loc, "/")
	return strings.TrimSuffix(base, "/log")
}

type httpSource struct {
	base   string
	client *http.Client
}

func (s httpSource) Get(ctx context.Context, name string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/"+name, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch %s: %w", ErrFetch, name, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch %s: %w", ErrFetch, name, webclient.Transport(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: fetch %s: %s", ErrFetch, name, resp.Status)
	}
	b, err := webclient.ReadBody(resp, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: fetch %s: %w", ErrFetch, name, err)
	}
	return b, nil
}

type dirSource string

func (d dirSource) Get(_ context.Context, name string) ([]byte, error) {
	if name != CheckpointFile {
		if _, err := ParseTilePath(name); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFetch, err)
		}
	}
	f, err := os.Open(filepath.Join(string(d), filepath.FromSlash(name)))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrFetch, name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrFetch, name, err)
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%w: read %s: larger than %d bytes", ErrFetch, name, MaxFileBytes)
	}
	return b, nil
}

// Trust pins what a reader believes: the log's key and the witnesses whose cosignatures it
// requires.
type Trust struct {
	// LogKey is the log's vkey; its name is the origin.
	LogKey string `json:"log_key"`
	// Witnesses are witness vkeys (both types of one witness are two entries).
	Witnesses []string `json:"witnesses,omitempty"`
	// Quorum is how many distinct witnesses must have cosigned with every key listed for
	// them (0: all listed witnesses).
	Quorum int `json:"quorum,omitempty"`
}

// VerifiedCheckpoint is a checkpoint whose signatures held.
type VerifiedCheckpoint struct {
	Checkpoint
	// Witnessed names the witnesses every pinned key of which cosigned it.
	Witnessed []string
	Note      *note.Note
}

// VerifyCheckpoint checks msg's log signature and its pinned witnesses' cosignatures. An
// invalid signature by a pinned key, a missing log signature, another origin, or fewer
// witnesses than the quorum fail with an error naming it.
func VerifyCheckpoint(msg []byte, t Trust) (VerifiedCheckpoint, error) {
	lv, err := ParseVKey(t.LogKey)
	if err != nil {
		return VerifiedCheckpoint{}, fmt.Errorf("log key: %w", err)
	}
	vs := []note.Verifier{lv}
	keysOf := map[string]map[uint32]bool{}
	for _, k := range t.Witnesses {
		v, err := ParseVKey(k)
		if err != nil {
			return VerifiedCheckpoint{}, fmt.Errorf("witness key: %w", err)
		}
		vs = append(vs, v)
		if keysOf[v.Name()] == nil {
			keysOf[v.Name()] = map[uint32]bool{}
		}
		keysOf[v.Name()][v.KeyHash()] = true
	}
	if len(msg) > MaxCheckpointBytes {
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: larger than %d bytes", MaxCheckpointBytes)
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		var ise *note.InvalidSignatureError
		if errors.As(err, &ise) {
			return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: the signature of %s does not verify (tampered checkpoint or cosignature)", ise.Name)
		}
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	logSigned := false
	have := map[string]map[uint32]bool{}
	for _, s := range n.Sigs {
		if s.Name == lv.Name() && s.Hash == lv.KeyHash() {
			logSigned = true
			continue
		}
		if have[s.Name] == nil {
			have[s.Name] = map[uint32]bool{}
		}
		have[s.Name][s.Hash] = true
	}
	if !logSigned {
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: not signed by the log key %s", lv.Name())
	}
	c, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	if c.Origin != lv.Name() {
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: origin %q is not the log key's name %q", c.Origin, lv.Name())
	}
	out := VerifiedCheckpoint{Checkpoint: c, Note: n}
	for name, keys := range keysOf {
		all := true
		for k := range keys {
			all = all && have[name][k]
		}
		if all {
			out.Witnessed = append(out.Witnessed, name)
		}
	}
	q := t.Quorum
	if q == 0 {
		q = len(keysOf)
	}
	if len(out.Witnessed) < q {
		return VerifiedCheckpoint{}, fmt.Errorf("checkpoint: cosigned by %d of the pinned witnesses (%s), %d required", len(out.Witnessed), strings.Join(out.Witnessed, ", "), q)
	}
	return out, nil
}

// tileReader reads and (through tlog.TileHashReader) checks tiles from a Source.
type tileReader struct {
	ctx context.Context
	src Source
}

func (r tileReader) Height() int { return TileHeight }
func (r tileReader) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := r.src.Get(r.ctx, TilePath(t))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}
func (r tileReader) SaveTiles([]tlog.Tile, [][]byte) {}

// HashReader returns a hash reader over src's tiles that checks every tile against tree.
func HashReader(ctx context.Context, src Source, tree tlog.Tree) tlog.HashReader {
	return tlog.TileHashReader(tree, tileReader{ctx: ctx, src: src})
}

// SeenState is the last checkpoint a reader or witness accepted.
type SeenState struct {
	Origin string    `json:"origin"`
	Size   int64     `json:"size"`
	Hash   tlog.Hash `json:"hash"`
}

// ErrInconsistent is wrapped when a checkpoint is not an extension of the last one seen: a
// fork (same size, another root; or no valid consistency proof) or a rollback (smaller).
var ErrInconsistent = errors.New("checkpoint inconsistent with the last one seen")

// CheckConsistent proves c extends seen using src's tiles. A nil seen (first contact) holds.
func CheckConsistent(ctx context.Context, src Source, seen *SeenState, c Checkpoint) error {
	if seen == nil {
		return nil
	}
	switch {
	case seen.Origin != c.Origin:
		return fmt.Errorf("%w: origin %q, last seen %q", ErrInconsistent, c.Origin, seen.Origin)
	case c.Size < seen.Size:
		return fmt.Errorf("%w: rollback: size %d is smaller than the %d seen before", ErrInconsistent, c.Size, seen.Size)
	case c.Size == seen.Size:
		if c.Hash != seen.Hash {
			return fmt.Errorf("%w: fork: size %d has root %s, %s was seen before", ErrInconsistent, c.Size, c.Hash, seen.Hash)
		}
		return nil
	case seen.Size == 0:
		return nil
	}
	proof, err := tlog.ProveTree(c.Size, seen.Size, HashReader(ctx, src, c.Tree()))
	if errors.Is(err, ErrFetch) {
		// Not a fork: the tiles could not be read, so nothing was shown either way.
		return fmt.Errorf("consistency from %d to %d not checked: %w", seen.Size, c.Size, err)
	}
	if err != nil {
		return fmt.Errorf("%w: no consistency proof from %d to %d: %w", ErrInconsistent, seen.Size, c.Size, err)
	}
	if err := tlog.CheckTree(proof, c.Size, c.Hash, seen.Size, seen.Hash); err != nil {
		return fmt.Errorf("%w: fork: size %d does not extend the %d seen before: %w", ErrInconsistent, c.Size, seen.Size, err)
	}
	return nil
}

// LoadSeen reads a state file (nil, nil when it does not exist).
func LoadSeen(file string) (*SeenState, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s SeenState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state %s: %w", file, err)
	}
	return &s, nil
}

// SaveSeen writes a state file atomically.
func SaveSeen(file string, c Checkpoint) error {
	b, _ := json.MarshalIndent(SeenState(c), "", "  ")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// FoundLeaf is a leaf found in the log and proved included in a checkpoint.
type FoundLeaf struct {
	Index int64
	Leaf  Leaf
}

// ProveBundle finds the leaf of bundle digest in the entry bundles of the checkpoint's tree
// and checks its inclusion against the root through the (checked) tiles.
func ProveBundle(ctx context.Context, src Source, c Checkpoint, digest string) (FoundLeaf, error) {
	tree := c.Tree()
	for n := int64(0); n<<TileHeight < c.Size; n++ {
		w := min(c.Size-n<<TileHeight, 1<<TileHeight)
		t := tlog.Tile{H: TileHeight, L: -1, N: n, W: int(w)}
		data, err := src.Get(ctx, TilePath(t))
		if err != nil {
			return FoundLeaf{}, fmt.Errorf("entry bundle %s: %w", TilePath(t), err)
		}
		entries, err := ParseEntries(data)
		if err != nil {
			return FoundLeaf{}, fmt.Errorf("entry bundle %s: %w", TilePath(t), err)
		}
		for i, e := range entries {
			l, err := ParseLeaf(e)
			if err != nil || l.Bundle != digest {
				continue
			}
			idx := n<<TileHeight + int64(i)
			proof, err := tlog.ProveRecord(c.Size, idx, HashReader(ctx, src, tree))
			if errors.Is(err, ErrFetch) {
				return FoundLeaf{}, fmt.Errorf("inclusion of leaf %d not checked: %w", idx, err)
			}
			if err != nil {
				return FoundLeaf{}, fmt.Errorf("inclusion of leaf %d: tiles do not match the checkpoint: %w", idx, err)
			}
			if err := tlog.CheckRecord(proof, c.Size, c.Hash, idx, tlog.RecordHash(e)); err != nil {
				return FoundLeaf{}, fmt.Errorf("inclusion of leaf %d: the entry bundle %s does not match the tree (tampered entry): %w", idx, TilePath(t), err)
			}
			return FoundLeaf{Index: idx, Leaf: l}, nil
		}
	}
	return FoundLeaf{}, fmt.Errorf("bundle %s is not in the log's %d entries", digest, c.Size)
}
