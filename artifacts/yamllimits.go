package artifacts

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ParseYAMLBounded parses a YAML document of some kind ("manifest", "hardware map") into a node
// tree after checking its size against MaxManifestBytes, then counts its nodes (aliases counted
// as what they expand to, stopping at the limit) against MaxManifestNodes. It never decodes
// into Go values: that is the caller's next step, and the YAML library's decoder is quadratic
// in the keys of one mapping, so nothing is decoded before both limits held. The Problem
// names the limit that was exceeded; a syntax error is reported with its line.
//
// Keys given twice in one mapping are refused here too, in linear time: the library reports
// them itself, but by comparing every key with every other and formatting a message for each
// pair (2,000 repeated keys cost it half a second, 8,000 sixteen seconds).
func ParseYAMLBounded(data []byte, kind string) (*yaml.Node, []Problem) {
	if len(data) > MaxManifestBytes {
		return nil, []Problem{{Field: "(document)", Msg: fmt.Sprintf("a %s is at most %d bytes (MaxManifestBytes), this one is %d bytes", kind, MaxManifestBytes, len(data))}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, []Problem{{Line: yamlErrLine(err), Field: "(document)", Msg: cleanYAMLErr(err)}}
	}
	if n := countNodes(&root, MaxManifestNodes+1); n > MaxManifestNodes {
		return nil, []Problem{{Field: "(document)", Msg: fmt.Sprintf("a %s has at most %d YAML nodes (keys, values and list items, MaxManifestNodes), this one has more", kind, MaxManifestNodes)}}
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

// countNodes counts n and everything under it, following aliases, and stops once the count
// reaches stop, so an alias bomb costs at most stop visits.
func countNodes(n *yaml.Node, stop int) int {
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

// checkTextFields bounds the manifest's free-text fields by MaxTextField, so a manifest that
// validates is one every reader accepts.
func (v *validator) checkTextFields(m *Manifest) {
	for _, f := range []struct{ path, val string }{
		{"metadata.title", m.Metadata.Title},
		{"metadata.description", m.Metadata.Description},
		{"spec.scenario", m.Spec.Scenario},
		{"spec.message.text", m.Spec.Message.Text},
	} {
		switch {
		case len(f.val) > MaxTextField:
			v.add(f.path, "is at most %d bytes (MaxTextField), got %d", MaxTextField, len(f.val))
		case !utf8.ValidString(f.val):
			v.add(f.path, "is not valid UTF-8")
		}
	}
}

// checkWritten makes sure the manifest as a bundle's manifest.yaml would hold it is within the
// limits a reader checks (MaxManifestBytes, MaxManifestNodes), so `run` never writes a bundle
// `verify` refuses.
func (v *validator) checkWritten(m *Manifest) {
	if len(v.problems) > 0 {
		return
	}
	y := m.YAML()
	if len(y) > MaxManifestBytes {
		v.add("(document)", "written out, this manifest would be %d bytes; a manifest is at most %d bytes (MaxManifestBytes)", len(y), MaxManifestBytes)
		return
	}
	var root yaml.Node
	if err := yaml.Unmarshal(y, &root); err == nil && countNodes(&root, MaxManifestNodes+1) > MaxManifestNodes {
		v.add("(document)", "written out, this manifest would have more than %d YAML nodes (MaxManifestNodes)", MaxManifestNodes)
	}
}

// ReadYAMLFile reads a manifest or hardware map file of at most MaxManifestBytes, reading no
// more than one byte past the limit: a file too large is refused by its size, naming the
// file, before it is read whole.
func ReadYAMLFile(path, kind string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", kind, path, err)
	}
	if len(b) > MaxManifestBytes {
		size := "more than " + strconv.Itoa(MaxManifestBytes) + " bytes"
		if st, err := f.Stat(); err == nil && st.Size() > MaxManifestBytes {
			size = strconv.FormatInt(st.Size(), 10) + " bytes"
		}
		return nil, fmt.Errorf("%s: a %s is at most %d bytes (MaxManifestBytes), this file is %s", path, kind, MaxManifestBytes, size)
	}
	return b, nil
}
