package kat

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	recs, err := Parse(strings.NewReader("Count = 1\nKey = 0001\nPT = \n\nCount = 2\nKey = FF\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Count != 2 {
		t.Fatalf("got %+v", recs)
	}
	if k, err := recs[0].Get("Key"); err != nil || !bytes.Equal(k, []byte{0, 1}) {
		t.Fatalf("Key = %x, %v", k, err)
	}
	if pt, err := recs[0].Get("PT"); err != nil || len(pt) != 0 {
		t.Fatalf("empty PT = %x, %v", pt, err)
	}
	if _, err := recs[1].Get("PT"); !errors.Is(err, ErrSyntax) {
		t.Fatalf("missing field: %v", err)
	}
	for _, bad := range []string{"Key = 00\n", "Count = x\n", "Count = 1\nKey 00\n", "Count = 1\nKey = 0\n", "Count = 1\nKey = 00\nKey = 01\n"} {
		if _, err := Parse(strings.NewReader(bad)); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: err = %v, want ErrSyntax", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("Count = 1\nKey = 000102\nPT = \n\nCount = 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Fields == nil {
				t.Fatal("record without a field map")
			}
		}
	})
}
