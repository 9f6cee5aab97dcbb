package tlscert

import "testing"

// TestSeededRSAKeyRepeats: the prime search itself (not the cache in front of it) gives the same
// key for the same seed, and another for another seed; the cache hands back that key.
func TestSeededRSAKeyRepeats(t *testing.T) {
	seed := derive("test", []byte("seed"))
	a, err := seededRSAKey(seed)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seededRSAKey(seed)
	c, _ := seededRSAKey(derive("test", []byte("other")))
	if a.N.Cmp(b.N) != 0 || a.D.Cmp(b.D) != 0 {
		t.Error("one seed gave two RSA keys")
	}
	if a.N.Cmp(c.N) == 0 {
		t.Error("two seeds gave one RSA key")
	}
	if k, _ := seededRSA(seed); k.N.Cmp(a.N) != 0 {
		t.Error("the cached key is not the seed's")
	}
}
