package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// asconKATs are the Ascon groups of SELFTEST in table order with the records each of the
// Ascon designers' KAT files holds (the host build embeds them all).
var asconKATs = []struct {
	alg  string
	file int
}{
	{"Ascon-AEAD128", 1089}, {"Ascon-128", 1089}, {"Ascon-128a", 1089},
	{"Ascon-Hash256", 1025}, {"Ascon-XOF128", 1025}, {"Ascon-CXOF128", 1089},
}

// boardAsconKATs is how many records per file the emulated boards keep (firmware/tools/asconpick).
const boardAsconKATs = 4

// checkAsconGroups requires the six Ascon groups (fn=kat), in order, each with per records
// passing, or with wrong set, each record failing (SELFTEST fault=ascon: every record through
// another mode than its own) and the first failure at the first record (Count 1).
func checkAsconGroups(t *testing.T, st SelfTestResult, per int, wrong bool) {
	t.Helper()
	var got []string
	for _, g := range st.Groups {
		if strings.HasPrefix(g.Algorithm, "Ascon-") {
			got = append(got, fmt.Sprintf("%s/%s %d/%d first=%s", g.Algorithm, g.Function, g.Pass, g.Fail, g.FirstFail))
		}
	}
	var want []string
	for _, k := range asconKATs {
		n := per
		if n == 0 {
			n = k.file
		}
		if wrong {
			want = append(want, fmt.Sprintf("%s/kat 0/%d first=1", k.alg, n))
		} else {
			want = append(want, fmt.Sprintf("%s/kat %d/0 first=", k.alg, n))
		}
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("SelfTest Ascon groups:\n got %v\nwant %v", got, want)
	}
}

// asconWrongMode runs SELFTEST fault=ascon: the Ascon groups alone, each record through a
// wrong mode (SP 800-232 records through the v1.2 code and the reverse, Hash256 through
// XOF128, ...), every one of which must fail.
func asconWrongMode(ctx context.Context, t *testing.T, c *Conn, per int) {
	t.Helper()
	st, err := c.selfTest(ctx, []Field{{"fault", "ascon"}})
	if err != nil {
		t.Fatalf("SELFTEST fault=ascon: %v", err)
	}
	if len(st.Groups) != len(asconKATs) || st.Pass != 0 {
		t.Fatalf("SELFTEST fault=ascon ran %d groups, %d passing: %+v", len(st.Groups), st.Pass, st)
	}
	checkAsconGroups(t, st, per, true)
}

// TestHostSelfTestAscon: the host build embeds every record of the six Ascon KAT files and
// SELFTEST passes each; wired to the wrong modes, each fails.
func TestHostSelfTestAscon(t *testing.T) {
	c, _ := startHost(t, nil, nil, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := c.SelfTest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fail != 0 {
		t.Fatalf("SelfTest: %d failing", st.Fail)
	}
	checkAsconGroups(t, st, 0, false)
	asconWrongMode(ctx, t, c, 0)
	// An unknown fault is refused, naming the field.
	_, err = c.selfTest(ctx, []Field{{"fault", "sig"}})
	var de *DeviceError
	if !errors.As(err, &de) || de.Code != "badarg" || de.Msg != "fault" {
		t.Fatalf("SELFTEST fault=sig: %v, want badarg fault", err)
	}
}
