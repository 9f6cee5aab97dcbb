package ascon

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"pqrepro/ascon/kat"
)

// katDir holds the Ascon designers' KAT files (see its PROVENANCE.md),
// relative to this package's directory.
var katDir = filepath.Join("..", "..", "shared", "test-vectors", "ascon")

// katRecord is one KAT record, with a Get that fails the test.
type katRecord struct{ kat.Record }

func (r katRecord) get(t testing.TB, name string) []byte {
	t.Helper()
	b, err := r.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readKAT reads a KAT file under katDir, skipping the test if the shared
// vectors are not next to the repository.
func readKAT(t testing.TB, rel string) []katRecord {
	t.Helper()
	path := filepath.Join(katDir, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("Ascon KAT files not available: %v", err)
	}
	recs, err := kat.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]katRecord, len(recs))
	for i, r := range recs {
		out[i] = katRecord{r}
	}
	return out
}

// TestAEADKAT runs every AEAD KAT record both ways, and checks that a
// flipped bit in the tag, the ciphertext or the AD is refused.
func TestAEADKAT(t *testing.T) {
	cases := []struct {
		file string
		new  func([]byte) (*AEAD, error)
	}{
		{"sp800-232/asconaead128/LWC_AEAD_KAT_128_128.txt", NewAEAD128},
		{"prestandard-v1.2/ascon128v12/LWC_AEAD_KAT_128_128.txt", NewAscon128},
		{"prestandard-v1.2/ascon128av12/LWC_AEAD_KAT_128_128.txt", NewAscon128a},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			recs := readKAT(t, c.file)
			passed := 0
			for _, r := range recs {
				key, nonce, pt, ad, ct := r.get(t, "Key"), r.get(t, "Nonce"), r.get(t, "PT"), r.get(t, "AD"), r.get(t, "CT")
				a, err := c.new(key)
				if err != nil {
					t.Fatal(err)
				}
				if got := a.Seal(nil, nonce, pt, ad); !bytes.Equal(got, ct) {
					t.Errorf("Count %d: Seal = %X, want %X", r.Count, got, ct)
					continue
				}
				got, err := a.Open([]byte("prefix"), nonce, ct, ad)
				if err != nil || !bytes.Equal(got, append([]byte("prefix"), pt...)) {
					t.Errorf("Count %d: Open = %X, %v", r.Count, got, err)
					continue
				}
				// Tampering: the last tag bit, the first ciphertext bit, the AD.
				bad := bytes.Clone(ct)
				bad[len(bad)-1] ^= 0x80
				bads := [][2][]byte{{bad, ad}}
				if len(pt) > 0 {
					bad := bytes.Clone(ct)
					bad[0] ^= 1
					bads = append(bads, [2][]byte{bad, ad})
				}
				bads = append(bads, [2][]byte{ct, append(bytes.Clone(ad), 0)})
				if len(ad) > 0 {
					badAD := bytes.Clone(ad)
					badAD[len(ad)-1] ^= 1
					bads = append(bads, [2][]byte{ct, badAD})
				}
				for _, b := range bads {
					if p, err := a.Open(nil, nonce, b[0], b[1]); err != ErrOpen || p != nil {
						t.Errorf("Count %d: tampered input opened: %X, %v", r.Count, p, err)
					}
				}
				passed++
			}
			if len(recs) != 1089 || passed != len(recs) {
				t.Fatalf("%d of %d vectors passed, want 1089 of 1089", passed, len(recs))
			}
			t.Logf("%s: %d/%d vectors passed", c.file, passed, len(recs))
		})
	}
}

// TestHashKAT runs every Hash256, XOF128 and CXOF128 KAT record, one-shot and
// written in two pieces.
func TestHashKAT(t *testing.T) {
	cases := []struct {
		file string
		want int
		sum  func(msg, z []byte, split, outLen int) []byte
	}{
		{"sp800-232/asconhash256/LWC_HASH_KAT_128_256.txt", 1025, func(msg, _ []byte, split, _ int) []byte {
			h := NewHash256()
			h.Write(msg[:split])
			h.Write(msg[split:])
			if s := Sum256(msg); !bytes.Equal(h.Sum(nil), s[:]) {
				return nil
			}
			return h.Sum(nil)
		}},
		{"sp800-232/asconxof128/LWC_XOF_KAT_128_512.txt", 1025, func(msg, _ []byte, split, outLen int) []byte {
			x := NewXOF128()
			x.Write(msg[:split])
			x.Write(msg[split:])
			out := make([]byte, outLen)
			x.Read(out[:outLen/3])
			x.Read(out[outLen/3:])
			return out
		}},
		{"sp800-232/asconcxof128/LWC_CXOF_KAT_128_512.txt", 1089, func(msg, z []byte, split, outLen int) []byte {
			x, err := NewCXOF128(z)
			if err != nil {
				return nil
			}
			x.Write(msg[:split])
			x.Write(msg[split:])
			out := make([]byte, outLen)
			x.Read(out)
			return out
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			recs := readKAT(t, c.file)
			passed := 0
			for _, r := range recs {
				msg, md := r.get(t, "Msg"), r.get(t, "MD")
				z := r.Fields["Z"]
				split := (r.Count * 7) % (len(msg) + 1)
				if got := c.sum(msg, z, split, len(md)); !bytes.Equal(got, md) {
					t.Errorf("Count %d: got %X, want %X", r.Count, got, md)
					continue
				}
				passed++
			}
			if len(recs) != c.want || passed != len(recs) {
				t.Fatalf("%d of %d vectors passed, want %d of %d", passed, len(recs), c.want, c.want)
			}
			t.Logf("%s: %d/%d vectors passed", c.file, passed, len(recs))
		})
	}
}
