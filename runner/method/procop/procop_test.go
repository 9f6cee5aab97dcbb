package procop

import (
	"strings"
	"testing"
)

func TestChildOpReportsMissingInput(t *testing.T) {
	dir := t.TempDir()
	if code := ChildOp([]string{"ML-DSA-44", "sign", dir}); code != childError {
		t.Fatalf("exit %d, want %d", code, childError)
	}
	if err := childOp("ML-DSA-44", "sign", dir); err == nil || !strings.Contains(err.Error(), "priv") {
		t.Fatalf("error %v does not name the missing input", err)
	}
}
