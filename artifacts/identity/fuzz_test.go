package identity

import "testing"

// FuzzParsePublicKeys: no input panics; accepted keys have the fixed sizes.
func FuzzParsePublicKeys(f *testing.F) {
	id, err := GenerateIdentity()
	if err != nil {
		f.Fatal(err)
	}
	pub := id.Public()
	if b, err := pub.MarshalFile(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"ed25519":"","mldsa65":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePublicKeys(data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted keys fail Validate: %v", err)
		}
		out, err := p.MarshalFile()
		if err != nil {
			t.Fatal(err)
		}
		if q, err := ParsePublicKeys(out); err != nil || !q.Equal(p) {
			t.Fatalf("keys do not round-trip: %v", err)
		}
	})
}
