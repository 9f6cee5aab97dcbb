package rederive

import (
	"testing"

	"pqrepro/experiments"
)

func paper002(t testing.TB) (*experiments.Paper, *Table) {
	t.Helper()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.Paper("paper002")
	fsys, ok := experiments.Traces("paper002")
	if !ok {
		t.Fatal("no traces")
	}
	tab, err := Rederive(p, fsys, Paper002, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, tab
}

func TestPaper002(t *testing.T) {
	_, tab := paper002(t)
	s := tab.Summarize()
	t.Logf("%+v", s.All)
	for k, v := range s.BySource {
		t.Logf("%s %+v", k, *v)
	}
	t.Logf("outside %v widths %.4f %.4f %.4f fewops %d disagree %d", s.OutsideByReason, s.WidthMin, s.WidthMedian, s.WidthMax, s.FewOps, s.Disagreements)
	for _, c := range tab.Cells {
		if c.Verdict != Inside {
			t.Logf("%s: %s %s %s", c.Ref(), c.Verdict, c.Reason, c.Detail)
		} else if c.Disagreement != "" {
			t.Logf("%s: inside, disagreement %s", c.Ref(), c.Disagreement)
		}
	}
	for _, cl := range tab.Claims {
		t.Logf("%s %s %s", cl.ID, cl.Verdict, cl.Reason)
		for _, ch := range cl.Checks {
			t.Logf("   %s / %s %s %.4f [%.4f %.4f] %s %s pub %s %s %s", ch.Num, ch.Den, ch.Metric, ch.Ratio.Point, ch.Ratio.Lo, ch.Ratio.Hi, ch.Band, ch.Verdict, ch.Published, ch.PublishedVerdict, ch.Detail)
		}
	}
}
