package artifacts

import (
	"strings"
	"testing"
)

// TestNewHashing checks the share, its bound from the counter's resolution and what Validate
// refuses.
func TestNewHashing(t *testing.T) {
	h, err := NewHashing(750, 1000, 2, 3, 40)
	if err != nil || h.Share != 0.75 || h.Bound != 0.08 {
		t.Fatalf("NewHashing: %+v %v, want share 0.75 bound 0.08", h, err)
	}
	if h, err := NewHashing(750, 1000, 2, 3, 1); err != nil || h.Bound != 0 {
		t.Fatalf("exact counter: %+v %v, want bound 0", h, err)
	}
	if _, err := NewHashing(1, 0, 1, 1, 1); err == nil {
		t.Fatal("a pass that counted nothing was accepted")
	}
	for _, tt := range []struct {
		name string
		h    Hashing
		want string
	}{
		{"absent with figures", Hashing{Absent: "own hash", Share: 0.5}, "absent"},
		{"share disagrees", Hashing{Share: 0.5, Hashed: 3, Total: 4, Samples: 1}, "hashed/total"},
		{"over one beyond its bound", Hashing{Share: 1.25, Hashed: 5, Total: 4, Samples: 1, Bound: 0.1}, "exceeds 1"},
		{"no samples", Hashing{Share: 0.75, Hashed: 3, Total: 4}, "samples"},
		{"bound out of range", Hashing{Share: 0.75, Hashed: 3, Total: 4, Samples: 1, Bound: 2}, "bound"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.h.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate(%+v) = %v, want an error naming %q", tt.h, err, tt.want)
			}
		})
	}
	if err := (&Hashing{Absent: "not measured: own hash"}).Validate(); err != nil {
		t.Fatal(err)
	}
}
