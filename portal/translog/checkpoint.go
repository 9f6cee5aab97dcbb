package translog

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// TileHeight is the C2SP tlog-tiles tile height: 256 hashes a tile.
const TileHeight = 8

// ErrCheckpoint is wrapped by ParseCheckpoint errors.
var ErrCheckpoint = errors.New("malformed checkpoint")

// MaxCheckpointBytes bounds a checkpoint note read from outside, signatures included.
const MaxCheckpointBytes = 64 << 10

// Checkpoint is the body of a C2SP tlog-checkpoint: the origin line, the tree size and the
// root hash (extension lines are neither written nor kept).
type Checkpoint struct {
	Origin string
	Size   int64
	Hash   tlog.Hash
}

// Tree is the checkpoint's tree.
func (c Checkpoint) Tree() tlog.Tree { return tlog.Tree{N: c.Size, Hash: c.Hash} }

// Format returns the note text: "<origin>\n<size>\n<base64 root>\n".
func (c Checkpoint) Format() []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Hash[:]))
}

// ParseCheckpoint parses a checkpoint note's text (without signatures). Extension lines after
// the third are allowed by the format and ignored.
func ParseCheckpoint(text []byte) (Checkpoint, error) {
	if len(text) > MaxCheckpointBytes || !bytes.HasSuffix(text, []byte("\n")) {
		return Checkpoint{}, fmt.Errorf("%w: too long or not newline-terminated", ErrCheckpoint)
	}
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) < 3 {
		return Checkpoint{}, fmt.Errorf("%w: %d lines, want at least origin, size and root hash", ErrCheckpoint, len(lines))
	}
	origin := lines[0]
	if origin == "" || strings.ContainsAny(origin, " \t\r") {
		return Checkpoint{}, fmt.Errorf("%w: origin line %q", ErrCheckpoint, origin)
	}
	if !numRE.MatchString(lines[1]) {
		return Checkpoint{}, fmt.Errorf("%w: size %q is not a canonical decimal", ErrCheckpoint, lines[1])
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: size: %w", ErrCheckpoint, err)
	}
	h, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(h) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("%w: root hash %q is not 32 bytes of base64", ErrCheckpoint, lines[2])
	}
	for i, l := range lines[3:] {
		if l == "" {
			return Checkpoint{}, fmt.Errorf("%w: empty extension line %d", ErrCheckpoint, i+4)
		}
	}
	c := Checkpoint{Origin: origin, Size: n}
	copy(c.Hash[:], h)
	return c, nil
}

// TilePath returns a tile's C2SP tlog-tiles path: "tile/<L>/<N>[.p/<W>]" for hash tiles and
// "tile/entries/<N>[.p/<W>]" for entry bundles (L = -1), N in the x-prefixed groups of three
// digits the spec uses.
func TilePath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), fmt.Sprintf("tile/%d/", t.H))
	if t.L == -1 {
		return "tile/entries/" + strings.TrimPrefix(p, "data/")
	}
	return "tile/" + p
}

// ErrTilePath is wrapped by ParseTilePath errors.
var ErrTilePath = errors.New("malformed tile path")

// ParseTilePath parses a C2SP tlog-tiles path (as TilePath writes them) into a tile of height
// TileHeight; an entry bundle has L = -1.
func ParseTilePath(p string) (tlog.Tile, error) {
	rest, ok := strings.CutPrefix(p, "tile/")
	if !ok || len(p) > 200 {
		return tlog.Tile{}, fmt.Errorf("%w: %q", ErrTilePath, p)
	}
	var xp string
	if r, ok := strings.CutPrefix(rest, "entries/"); ok {
		xp = fmt.Sprintf("tile/%d/data/%s", TileHeight, r)
	} else {
		xp = fmt.Sprintf("tile/%d/%s", TileHeight, rest)
	}
	t, err := tlog.ParseTilePath(xp)
	if err != nil {
		return tlog.Tile{}, fmt.Errorf("%w: %q", ErrTilePath, p)
	}
	if t.L > 63 || TilePath(t) != p {
		return tlog.Tile{}, fmt.Errorf("%w: %q is not canonical", ErrTilePath, p)
	}
	return t, nil
}

// EncodeEntries returns a C2SP entry bundle: each entry as a big-endian uint16 length and
// its bytes.
func EncodeEntries(entries [][]byte) ([]byte, error) {
	var b []byte
	for i, e := range entries {
		if len(e) > 0xffff {
			return nil, fmt.Errorf("entry %d is %d bytes, more than an entry bundle holds", i, len(e))
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(e)))
		b = append(b, e...)
	}
	return b, nil
}

// ErrEntries is wrapped by ParseEntries errors.
var ErrEntries = errors.New("malformed entry bundle")

// ParseEntries splits an entry bundle; it fails on a truncated entry or more than 256 entries.
func ParseEntries(data []byte) ([][]byte, error) {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			return nil, fmt.Errorf("%w: truncated length after %d entries", ErrEntries, len(out))
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+n {
			return nil, fmt.Errorf("%w: entry %d is truncated", ErrEntries, len(out))
		}
		out = append(out, data[2:2+n])
		data = data[2+n:]
		if len(out) > 1<<TileHeight {
			return nil, fmt.Errorf("%w: more than %d entries", ErrEntries, 1<<TileHeight)
		}
	}
	return out, nil
}
