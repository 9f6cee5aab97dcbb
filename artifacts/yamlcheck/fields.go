package yamlcheck

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// unmarshaler is yaml.Unmarshaler's type: a field of a type that implements it is decoded by
// its own method (a duration written as "90s"), so its node is not walked for fields.
var unmarshaler = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// UnknownFields walks a parsed YAML node against the Go type it will be decoded into and
// returns a Problem, with its line and dotted path, for every key the type lacks and every
// key given twice. Slices and pointers are followed; prefix is the path of n ("" at the root).
// Manifests and hardware maps use it so that no field is ever silently ignored.
func UnknownFields(n *yaml.Node, t reflect.Type, prefix string) []Problem {
	var out []Problem
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice {
			if n.Kind == yaml.SequenceNode {
				for i, c := range n.Content {
					out = append(out, UnknownFields(c, t.Elem(), fmt.Sprintf("%s[%d]", prefix, i))...)
				}
			}
			return out
		}
		t = t.Elem()
	}
	if n.Kind == yaml.MappingNode && t.Kind() == reflect.Map {
		// A map's keys are data (checked by the validator); its values have fields.
		for i := 0; i+1 < len(n.Content); i += 2 {
			out = append(out, UnknownFields(n.Content[i+1], t.Elem(), prefix+"."+n.Content[i].Value)...)
		}
		return out
	}
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	var known []string
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
				collect(f.Type) // an inline struct's keys are the outer mapping's
				continue
			}
			if name != "" && name != "-" {
				fields[name] = f.Type
				known = append(known, name)
			}
		}
	}
	collect(t)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		if seen[k.Value] {
			out = append(out, Problem{Line: k.Line, Field: path, Msg: "field appears twice"})
			continue
		}
		seen[k.Value] = true
		ft, ok := fields[k.Value]
		if !ok {
			out = append(out, Problem{Line: k.Line, Field: path, Msg: "unknown field (known fields: " + strings.Join(known, ", ") + ")"})
			continue
		}
		if !reflect.PointerTo(ft).Implements(unmarshaler) { // a type that decodes itself has no fields
			out = append(out, UnknownFields(n.Content[i+1], ft, path)...)
		}
	}
	return out
}
