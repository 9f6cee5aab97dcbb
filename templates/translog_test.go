package templates

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestLogStatusRenders(t *testing.T) {
	for _, c := range []struct {
		name string
		v    LogStatusView
		want []string
	}{
		{"pending", LogStatusView{RunID: 3, Origin: "pqrepro.example/log", Pending: true}, []string{"Inclusion pending", "pqrepro.example/log"}},
		{"included", LogStatusView{RunID: 3, Origin: "o/log", Index: 41, TreeSize: 99, Proof: []string{"aGFzaA=="}, InclusionURL: "/api/v1/runs/3/inclusion",
			LogURL: "http://portal.example/log", LogKey: "o/log+1234abcd+AQID"},
			[]string{"Entry <strong>41</strong>", "size 99", "not yet witnessed", "Inclusion proof (1 hashes)", "aGFzaA==", `href="/api/v1/runs/3/inclusion"`,
				"--log http://portal.example/log --log-key o/log+1234abcd+AQID"}},
		{"witnessed", LogStatusView{Index: 0, TreeSize: 1, Witnessed: 2}, []string{"with 2 witness cosignatures"}},
		{"before the log", LogStatusView{NotLogged: true}, []string{"before the transparency log existed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := LogStatus(c.v).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(b.String(), "--log URL") || strings.Contains(b.String(), "--log-key KEY") {
				t.Errorf("the verify line leaves placeholders the page knows:\n%s", b.String())
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in\n%s", w, b.String())
				}
			}
		})
	}
}

// TestResubmissionSaysAlreadyPublished checks the submit page tells a bundle published before
// from a new publication.
func TestResubmissionSaysAlreadyPublished(t *testing.T) {
	for _, already := range []bool{false, true} {
		var b bytes.Buffer
		if err := SubmitPage(SubmitView{RunID: 4, Already: already}).Render(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(b.String(), "already published as"); got != already {
			t.Errorf("already=%v: the page says %q", already, b.String()[strings.Index(b.String(), "submit-result"):][:120])
		}
	}
}

// TestCountOrDash checks a leaderboard row without samples (a stack high-water mark) shows
// "–", never "n 0".
func TestCountOrDash(t *testing.T) {
	if countOrDash(0) != "–" || countOrDash(12) != "12" {
		t.Errorf("countOrDash: %q %q", countOrDash(0), countOrDash(12))
	}
}

// TestBoardOptionHasOneNote checks an unavailable board gets one note, its reason, not three.
func TestBoardOptionHasOneNote(t *testing.T) {
	b := BoardOption{Class: "qemu-mps2-an505", Reason: "no firmware build found", NeedsFirmware: true}
	if got := b.Note(); got != "unavailable: no firmware build found" {
		t.Errorf("note %q", got)
	}
	b = BoardOption{Class: "qemu-mps2-an386", Available: true, NeedsFirmware: true}
	if got := b.Note(); !strings.HasPrefix(got, "takes a firmware build") || !strings.HasSuffix(got, "will not be comparable") {
		t.Errorf("note %q", got)
	}
}
