package portal

import (
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// FuzzListQueries feeds raw query strings to the list and compare parsers: every answer is a
// filter within bounds or an invalid-input error, never a panic.
func FuzzListQueries(f *testing.F) {
	for _, s := range []string{"", "paper=paper001&limit=2", "after=1.2&from=2026-01-01&to=2026-01-02", "limit=0", "assurance=cloud", "state=failed",
		"runs=1,2,3", "runs=1,1,1,1", "run=4&runs=5", "from=2026-13-01", "algorithm=%ff%fe", "runs=%23" + "7"} {
		f.Add(s)
	}
	e := echo.New()
	f.Fuzz(func(t *testing.T, raw string) {
		for _, jobs := range []bool{false, true} {
			c := e.NewContext(httptest.NewRequest("GET", "/runs?x=1", nil), httptest.NewRecorder())
			c.Request().URL.RawQuery = raw
			lf, _, err := listQuery(c, jobs, 50, false)
			if err != nil {
				if !fault.Is(err, fault.Invalid) {
					t.Fatalf("%q: %v is not an invalid-input error", raw, err)
				}
			} else if lf.Limit < 1 || lf.Limit > store.MaxPage || (!lf.From.IsZero() && !lf.To.IsZero() && !lf.From.Before(lf.To)) {
				t.Fatalf("%q: filter out of bounds: %+v", raw, lf)
			}
		}
		c := e.NewContext(httptest.NewRequest("GET", "/compare", nil), httptest.NewRecorder())
		c.Request().URL.RawQuery = raw
		ids, err := compareIDs(c)
		if err == nil && (len(ids) < 1 || len(ids) > 3) {
			t.Fatalf("%q: %d run ids", raw, len(ids))
		}
		if err != nil && !fault.Is(err, fault.Invalid) {
			t.Fatalf("%q: %v", raw, err)
		}
	})
}

func TestAxisLabel(t *testing.T) {
	for v, want := range map[float64]string{10000: "10 µs", 12500: "12.5 µs", 1e6: "1 ms", 500: "500 ns", 2e7: "20 M instructions"} {
		unit := "ns"
		if v == 2e7 {
			unit = "instructions"
		}
		if got := axisLabel(v, unit); got != want {
			t.Errorf("axisLabel(%v, %s) = %q, want %q", v, unit, got, want)
		}
	}
}
