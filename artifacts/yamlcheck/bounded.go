package yamlcheck

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Limits on a YAML document, checked before it is decoded. The messages name them as the
// manifest's limits (MaxManifestBytes, MaxManifestNodes in package artifacts), which they are.
const (
	// MaxBytes is the largest document accepted.
	MaxBytes = 64 << 10
	// MaxNodes bounds the YAML nodes (keys, values, list items) of a document.
	MaxNodes = 4096
)

// ParseBounded parses a YAML document of some kind ("manifest", "hardware map") into a node
// tree after checking its size against MaxBytes, then counts its nodes (aliases counted
// as what they expand to, stopping at the limit) against MaxNodes. It never decodes
// into Go values: that is the caller's next step, and the YAML library's decoder is quadratic
// in the keys of one mapping, so nothing is decoded before both limits held. The Problem
// names the limit that was exceeded; a syntax error is reported with its line.
//
// Keys given twice in one mapping are refused here too, in linear time: the library reports
// them itself, but by comparing every key with every other and formatting a message for each
// pair (2,000 repeated keys cost it half a second, 8,000 sixteen seconds).
func ParseBounded(data []byte, kind string) (*yaml.Node, []Problem) {
	if len(data) > MaxBytes {
		return nil, []Problem{{Field: "(document)", Msg: fmt.Sprintf("a %s is at most %d bytes (MaxManifestBytes), this one is %d bytes", kind, MaxBytes, len(data))}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []Problem{{Line: ErrLine(err), Field: "(document)", Msg: CleanErr(err)}}
	}
	if n := CountNodes(&root, MaxNodes+1); n > MaxNodes {
		return nil, []Problem{{Field: "(document)", Msg: fmt.Sprintf("a %s has at most %d YAML nodes (keys, values and list items, MaxManifestNodes), this one has more", kind, MaxNodes)}}
	}
	if dups := duplicateKeys(&root); len(dups) > 0 {
		return nil, dups
	}
	return &root, nil
}

// duplicateKeys reports every scalar key given twice in one mapping (aliases are not followed:
// what they point at was checked where it was defined).
func duplicateKeys(n *yaml.Node) []Problem {
	var out []Problem
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if first, ok := seen[k.Value]; ok {
					out = append(out, Problem{Line: k.Line, Field: k.Value, Msg: fmt.Sprintf("key given twice in one mapping (first at line %d)", first)})
					continue
				}
				seen[k.Value] = k.Line
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	if len(out) > 20 {
		n := len(out)
		out = append(out[:20], Problem{Field: "(document)", Msg: fmt.Sprintf("and %d more keys given twice", n-20)})
	}
	return out
}

// CountNodes counts n and everything under it, following aliases, and stops once the count
// reaches stop, so an alias bomb costs at most stop visits.
func CountNodes(n *yaml.Node, stop int) int {
	count := 0
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || count >= stop {
			return
		}
		count++
		if n.Kind == yaml.AliasNode {
			walk(n.Alias)
			return
		}
		for _, c := range n.Content {
			walk(c)
			if count >= stop {
				return
			}
		}
	}
	walk(n)
	return count
}

// ReadFile reads a manifest or hardware map file of at most MaxManifestBytes, reading no
// more than one byte past the limit: a file too large is refused by its size, naming the
// file, before it is read whole.
func ReadFile(path, kind string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", kind, path, err)
	}
	if len(b) > MaxBytes {
		size := "more than " + strconv.Itoa(MaxBytes) + " bytes"
		if st, err := f.Stat(); err == nil && st.Size() > MaxBytes {
			size = strconv.FormatInt(st.Size(), 10) + " bytes"
		}
		return nil, fmt.Errorf("%s: a %s is at most %d bytes (MaxManifestBytes), this file is %s", path, kind, MaxBytes, size)
	}
	return b, nil
}
