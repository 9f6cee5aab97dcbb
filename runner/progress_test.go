package runner

import (
	"bytes"
	"strings"
	"testing"

	"pqrepro/artifacts"
)

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf)
	p.CellStarted(0, 2, artifacts.CellRef{Algorithm: "ML-KEM-768", Operation: "encaps"})
	if first := buf.String(); strings.Contains(first, "(0/0)") {
		t.Fatalf("a cell that has not started iterating shows an iteration count of zero: %q", first)
	}
	p.Iteration(0, 50, 100)
	p.CellDone(0, 2, artifacts.Cell{})
	out := buf.String()
	if !strings.Contains(out, "0/2 cells") || !strings.Contains(out, "ML-KEM-768 encaps") {
		t.Fatalf("bar lacks the cell count or the current cell: %q", out)
	}
	last := out[strings.LastIndex(out, "\r"):]
	if !strings.Contains(last, "1/2 cells") || !strings.Contains(last, "[############............]") {
		t.Fatalf("after one of two cells the bar should be half full: %q", last)
	}
}
