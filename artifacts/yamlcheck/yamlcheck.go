// Package yamlcheck reads YAML documents that people write by hand — experiment manifests and
// hardware maps — so that every problem is reported at once, each with its line and dotted field
// path, and nothing is silently ignored: a bounded parse (size, node count, repeated keys)
// before anything is decoded, unknown fields against the Go type, type errors with their lines,
// and a Checker that the document's own rules add their problems to.
package yamlcheck

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a document, located by line and field path.
type Problem struct {
	// Line is the 1-based line in the source, 0 when the field is absent.
	Line int
	// Field is the dotted path, e.g. "spec.algorithms[1]".
	Field string
	// Msg says what is wrong and, where it helps, what is allowed.
	Msg string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", p.Line, p.Field, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.Field, p.Msg)
}

// Format renders problems found in a YAML document of some kind ("manifest", "hardware map"),
// one indented line each.
func Format(kind, source string, problems []Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid %s %s:", kind, source)
	for _, p := range problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Checker collects a document's problems. Root is the document's top-level mapping, used to
// find the line of a field path.
type Checker struct {
	Root     *yaml.Node
	Problems []Problem
	// undecoded holds the lines whose value did not decode (already reported): a rule about
	// the zero value left there would report the same line a second time.
	undecoded map[int]bool
}

// Add records a problem with the field at path (a dotted path like "spec.algorithms[2]"),
// unless the value on that line did not decode and is reported as such already.
func (c *Checker) Add(path, format string, args ...any) {
	line := c.Line(path)
	if line > 0 && c.undecoded[line] {
		return
	}
	c.Problems = append(c.Problems, Problem{Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

// Line finds the line of a dotted path like "spec.algorithms[2]" in the parsed document: the
// line of the deepest part of the path that exists, 0 when none does.
func (c *Checker) Line(path string) int {
	n := c.Root
	if n == nil {
		return 0
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			key = part[:i]
			fmt.Sscanf(part[i:], "[%d]", &idx)
		}
		k, next := mapEntry(n, key)
		if next == nil {
			return line
		}
		n, line = next, k.Line
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n, line = n.Content[idx], n.Content[idx].Line
		}
	}
	return line
}

// mapEntry returns the key and value nodes of key in a mapping node.
func mapEntry(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// Decode parses data as a document of kind (bounded, see ParseBounded), checks that it is a
// mapping (shape says what it holds, for the message), reports its unknown fields against
// into's type, and decodes it into into. It returns a Checker holding the problems so far,
// rooted at the top-level mapping, and whether into was decoded (the document's own rules
// run only then). A value of the wrong type does not stop the rest: the other fields are
// decoded, decoded is true, and the document's rules then report every other problem in the
// same pass (none again on the line that did not decode). A document that cannot be parsed
// returns a Checker without a Root.
func Decode(data []byte, kind, shape string, into any) (c *Checker, decoded bool) {
	root, problems := ParseBounded(data, kind)
	if problems != nil {
		return &Checker{Problems: problems}, false
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return &Checker{Problems: []Problem{{Line: 1, Field: "(document)", Msg: fmt.Sprintf("a %s is a YAML mapping with %s", kind, shape)}}}, false
	}
	doc := root.Content[0]
	c = &Checker{Root: doc}
	c.Problems = append(c.Problems, UnknownFields(doc, reflect.TypeOf(into).Elem(), "")...)
	if err := doc.Decode(into); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			c.undecoded = map[int]bool{}
			for _, e := range te.Errors {
				line := ErrLine(errors.New(e))
				c.undecoded[line] = true
				c.Problems = append(c.Problems, Problem{Line: line, Field: "(value)", Msg: CleanErr(errors.New(e))})
			}
			return c, true
		} else {
			c.Problems = append(c.Problems, Problem{Line: ErrLine(err), Field: "(value)", Msg: CleanErr(err)})
		}
		return c, false
	}
	return c, true
}

var (
	lineRE       = regexp.MustCompile(`line (\d+)`)
	linePrefixRE = regexp.MustCompile(`^(yaml: )?line \d+: `)
	goPackageRE  = regexp.MustCompile(`\b[a-z][a-z0-9]*\.([A-Z])`)
)

// ErrLine returns the line a YAML library error names, 0 when it names none.
func ErrLine(err error) int {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscanf(m[1], "%d", &n)
		return n
	}
	return 0
}

// CleanErr returns a YAML library error's message for a person: without the line (reported
// beside it), the library's prefix, or Go package names in type names.
func CleanErr(err error) string {
	s := linePrefixRE.ReplaceAllString(strings.TrimSpace(err.Error()), "")
	s = strings.TrimPrefix(s, "yaml: ")
	return goPackageRE.ReplaceAllString(s, "$1")
}
