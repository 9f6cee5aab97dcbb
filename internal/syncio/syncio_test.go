package syncio

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestWritesStayWhole: lines written from many goroutines at once arrive whole, in the buffer
// and in its copy, and a bounded buffer stops growing at its bound.
func TestWritesStayWhole(t *testing.T) {
	var tee bytes.Buffer
	w := NewBuffer(0, &tee)
	bounded := NewBuffer(100, nil)
	line := strings.Repeat("x", 63) + "\n"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				w.Write([]byte(line))
				bounded.Write([]byte(line))
			}
		}()
	}
	wg.Wait()
	for _, got := range []string{w.String(), tee.String()} {
		if len(got) != 800*len(line) || strings.Count(got, line) != 800 {
			t.Fatalf("%d bytes, %d whole lines; want 800", len(got), strings.Count(got, line))
		}
	}
	if n := len(bounded.Bytes()); n > 100+len(line) {
		t.Errorf("bounded buffer holds %d bytes", n)
	}
}

// TestSetTo: a forwarding writer follows its target.
func TestSetTo(t *testing.T) {
	var a, b bytes.Buffer
	w := NewWriter(&a)
	w.Write([]byte("one"))
	w.SetTo(&b)
	w.Write([]byte("two"))
	if a.String() != "one" || b.String() != "two" || w.String() != "" {
		t.Errorf("a %q, b %q, buffer %q", a.String(), b.String(), w.String())
	}
}
