// Package kat reads known-answer-test files in the NIST Lightweight
// Cryptography format, as the Ascon designers publish them:
//
//	file   = record { blank-line record }
//	record = "Count = " decimal NL { name " = " hex NL }
//
// Names are case-sensitive ("Key", "Nonce", "PT", "AD", "CT", "Msg", "Z",
// "MD"); a value may be empty. Whitespace around names and values is ignored.
package kat

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("malformed KAT file")

// maxLine bounds one line (the longest upstream line is about 2 kB).
const maxLine = 1 << 20

// Record is one "Count = n" record.
type Record struct {
	// Count is the record's number as written in the file.
	Count int
	// Fields maps each name to its decoded bytes.
	Fields map[string][]byte
}

// Get returns the named field or an error naming the record.
func (r Record) Get(name string) ([]byte, error) {
	b, ok := r.Fields[name]
	if !ok {
		return nil, fmt.Errorf("record Count %d: no %s: %w", r.Count, name, ErrSyntax)
	}
	return b, nil
}

// Parse reads every record from r; an error names the line.
func Parse(r io.Reader) ([]Record, error) {
	var recs []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		name, val, ok := strings.Cut(text, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: no '=': %w", line, ErrSyntax)
		}
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if name == "Count" {
			n, err := strconv.Atoi(val)
			if err != nil {
				return nil, fmt.Errorf("line %d: Count %q: %w", line, val, ErrSyntax)
			}
			recs = append(recs, Record{Count: n, Fields: map[string][]byte{}})
			continue
		}
		if len(recs) == 0 {
			return nil, fmt.Errorf("line %d: %s before the first Count: %w", line, name, ErrSyntax)
		}
		fields := recs[len(recs)-1].Fields
		if _, dup := fields[name]; dup {
			return nil, fmt.Errorf("line %d: %s twice in Count %d: %w", line, name, recs[len(recs)-1].Count, ErrSyntax)
		}
		b, err := hex.DecodeString(val)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w: %v", line, name, ErrSyntax, err)
		}
		fields[name] = b
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return recs, nil
}

// ReadFile parses the named file.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read KAT file: %w", err)
	}
	defer f.Close()
	recs, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read KAT file %s: %w", path, err)
	}
	return recs, nil
}
