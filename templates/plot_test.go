package templates

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"pqrepro/portal/plot"
)

func TestBoxPlotEscapesLabels(t *testing.T) {
	f := plot.Layout([]plot.Row{{Label: `<script>alert(1)</script>`, Min: 1, P25: 2, Median: 3, P75: 4, Max: 5}}, "ns", func(v float64) string { return "v" })
	var buf bytes.Buffer
	if err := BoxPlot(f).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "<script>") || !strings.Contains(out, "&lt;script&gt;") {
		t.Fatalf("label not escaped: %s", out)
	}
	if !strings.HasPrefix(out, "<svg") || strings.Count(out, "<rect") != 1 {
		t.Fatalf("want one box: %s", out)
	}
	buf.Reset()
	if err := BoxPlot(nil).Render(context.Background(), &buf); err != nil || buf.Len() != 0 {
		t.Fatalf("nil figure rendered %q (%v)", buf.String(), err)
	}
}
