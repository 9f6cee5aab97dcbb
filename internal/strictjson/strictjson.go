// Package strictjson checks JSON documents more strictly than encoding/json decodes them:
// exactly one value, no duplicate object keys, and optionally only allowed keys (matched
// exactly). Signed documents are checked with it before they are decoded, so two readers can
// never see different contents in one signed byte string.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Check checks that data is exactly one JSON value in which no
// object has a duplicate key and, if allowed is not nil, every object key is
// in allowed (matched exactly, unlike encoding/json's case-insensitive field
// matching).
func Check(data []byte, allowed map[string]bool) error {
	type frame struct {
		obj     bool
		wantKey bool
		keys    map[string]bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var (
		stack  []*frame
		values int
	)
	valueDone := func() {
		if len(stack) == 0 {
			values++
			return
		}
		if top := stack[len(stack)-1]; top.obj {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if values > 0 {
			return errors.New("trailing data after the JSON value")
		}
		if len(stack) > 0 {
			if top := stack[len(stack)-1]; top.obj && top.wantKey {
				if tok == json.Delim('}') {
					stack = stack[:len(stack)-1]
					valueDone()
					continue
				}
				key, _ := tok.(string)
				if top.keys[key] {
					return fmt.Errorf("duplicate key %q", key)
				}
				if allowed != nil && !allowed[key] {
					return fmt.Errorf("unknown key %q", key)
				}
				top.keys[key] = true
				top.wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, wantKey: true, keys: make(map[string]bool)})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
	if values != 1 {
		return errors.New("not a single JSON value")
	}
	return nil
}
