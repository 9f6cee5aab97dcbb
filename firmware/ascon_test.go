package firmware

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/ascon"
	"pqrepro/ascon/kat"
)

// asconKATDir holds the Ascon designers' KAT files, relative to this directory.
var asconKATDir = filepath.Join("..", "..", "shared", "test-vectors", "ascon")

func readAsconKAT(t *testing.T, rel string, want int) []kat.Record {
	t.Helper()
	path := filepath.Join(asconKATDir, rel)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("Ascon KAT files not available: %v", err)
	}
	recs, err := kat.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != want {
		t.Fatalf("%s: %d records, want %d", rel, len(recs), want)
	}
	return recs
}

func field(t *testing.T, r kat.Record, name string) string {
	t.Helper()
	b, err := r.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ToUpper(hex.EncodeToString(b))
}

// TestAsconAEADKAT checks the C Ascon-AEAD128 and v1.2 modes against every
// KAT record, both ways, and that a tampered tag, ciphertext or AD is
// refused with no plaintext left behind.
func TestAsconAEADKAT(t *testing.T) {
	k := startKatcli(t)
	for _, c := range []struct{ mode, file string }{
		{"aead128", "sp800-232/asconaead128/LWC_AEAD_KAT_128_128.txt"},
		{"128v12", "prestandard-v1.2/ascon128v12/LWC_AEAD_KAT_128_128.txt"},
		{"128av12", "prestandard-v1.2/ascon128av12/LWC_AEAD_KAT_128_128.txt"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			passed := 0
			recs := readAsconKAT(t, c.file, 1089)
			for _, r := range recs {
				key, nonce, pt, ad, ct := field(t, r, "Key"), field(t, r, "Nonce"), field(t, r, "PT"), field(t, r, "AD"), field(t, r, "CT")
				if got := k.do(t, "ascon-seal", c.mode, key, nonce, pt, ad); got != ct {
					t.Errorf("Count %d: seal = %s, want %s", r.Count, got, ct)
					continue
				}
				if got := k.do(t, "ascon-open", c.mode, key, nonce, ct, ad, "16"); got != pt {
					t.Errorf("Count %d: open = %s, want %s", r.Count, got, pt)
					continue
				}
				// A truncated tag is the full tag's first bytes.
				if got := k.do(t, "ascon-open", c.mode, key, nonce, ct[:len(pt)+8], ad, "4"); got != pt {
					t.Errorf("Count %d: open with a 4-byte tag = %s", r.Count, got)
				}
				// Tampering: the last tag bit, the first ciphertext bit, the AD.
				raw, _ := hex.DecodeString(ct)
				flip := func(i int, bit byte) string {
					b := bytes.Clone(raw)
					b[i] ^= bit
					return hex.EncodeToString(b)
				}
				bad := [][2]string{{flip(len(raw)-1, 0x80), ad}, {ct, ad + "00"}}
				if len(pt) > 0 {
					bad = append(bad, [2]string{flip(0, 1), ad})
				}
				ok := true
				for i, b := range bad {
					if got := k.do(t, "ascon-open", c.mode, key, nonce, b[0], b[1], "16"); got != "fail" {
						t.Errorf("Count %d: tampered input %d opened: %s", r.Count, i, got)
						ok = false
					}
				}
				if !ok {
					continue
				}
				passed++
			}
			if passed != len(recs) {
				t.Fatalf("%d of %d vectors passed", passed, len(recs))
			}
			t.Logf("C %s: %d/%d vectors passed (%s)", c.mode, passed, len(recs), c.file)
		})
	}
}

// TestAsconHashKAT checks the C Ascon-Hash256, XOF128 and CXOF128 against
// every KAT record.
func TestAsconHashKAT(t *testing.T) {
	k := startKatcli(t)
	for _, c := range []struct {
		name, file string
		want       int
		args       func(r kat.Record, md string) []string
	}{
		{"hash256", "sp800-232/asconhash256/LWC_HASH_KAT_128_256.txt", 1025, func(r kat.Record, _ string) []string {
			return []string{"ascon-hash256", field(t, r, "Msg")}
		}},
		{"xof128", "sp800-232/asconxof128/LWC_XOF_KAT_128_512.txt", 1025, func(r kat.Record, md string) []string {
			return []string{"ascon-xof128", fmt.Sprint(len(md) / 2), field(t, r, "Msg")}
		}},
		{"cxof128", "sp800-232/asconcxof128/LWC_CXOF_KAT_128_512.txt", 1089, func(r kat.Record, md string) []string {
			return []string{"ascon-cxof128", fmt.Sprint(len(md) / 2), field(t, r, "Z"), field(t, r, "Msg")}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			passed := 0
			recs := readAsconKAT(t, c.file, c.want)
			for _, r := range recs {
				md := field(t, r, "MD")
				if got := k.do(t, c.args(r, md)...); got != md {
					t.Errorf("Count %d: got %s, want %s", r.Count, got, md)
					continue
				}
				passed++
			}
			if passed != len(recs) {
				t.Fatalf("%d of %d vectors passed", passed, len(recs))
			}
			t.Logf("C %s: %d/%d vectors passed (%s)", c.name, passed, len(recs), c.file)
		})
	}
}

// TestAsconMatchesGo compares the C and Go Ascon on random keys, nonces and
// lengths beyond the KATs' 32 bytes (several blocks of every rate), and on
// nonce masking through the C helper.
func TestAsconMatchesGo(t *testing.T) {
	k := startKatcli(t)
	up := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
	news := map[string]func([]byte) (*ascon.AEAD, error){
		"aead128": ascon.NewAEAD128, "128v12": ascon.NewAscon128, "128av12": ascon.NewAscon128a,
	}
	for i := 0; i < 150; i++ {
		key, nonce, pt, ad := make([]byte, 32), make([]byte, 16), make([]byte, (i*13)%300), make([]byte, (i*5)%70)
		for _, b := range [][]byte{key, nonce, pt, ad} {
			rand.Read(b)
		}
		for mode, mk := range news {
			a, err := mk(key[:16])
			if err != nil {
				t.Fatal(err)
			}
			if got, want := k.do(t, "ascon-seal", mode, up(key[:16]), up(nonce), up(pt), up(ad)), up(a.Seal(nil, nonce, pt, ad)); got != want {
				t.Fatalf("%s pt %d ad %d: C %s, Go %s", mode, len(pt), len(ad), got, want)
			}
		}
		masked, err := ascon.NewAEAD128(key)
		if err != nil {
			t.Fatal(err)
		}
		mn := make([]byte, 16)
		for j := range mn {
			mn[j] = nonce[j] ^ key[16+j]
		}
		if got, want := k.do(t, "ascon-seal", "aead128", up(key[:16]), up(mn), up(pt), up(ad)), up(masked.Seal(nil, nonce, pt, ad)); got != want {
			t.Fatalf("nonce masking: C %s, Go %s", got, want)
		}
		x := ascon.NewXOF128()
		x.Write(pt)
		out := make([]byte, 1+i%80)
		x.Read(out)
		if got := k.do(t, "ascon-xof128", fmt.Sprint(len(out)), up(pt)); got != up(out) {
			t.Fatalf("xof128 of %d bytes: C %s, Go %s", len(pt), got, up(out))
		}
		h := ascon.Sum256(pt)
		if got := k.do(t, "ascon-hash256", up(pt)); got != up(h[:]) {
			t.Fatalf("hash256 of %d bytes differs", len(pt))
		}
	}
	if got := k.do(t, "ascon-cxof128", "16", strings.Repeat("00", ascon.MaxCustomSize+1), "-"); got != "fail" {
		t.Fatalf("an oversized customization string was accepted: %s", got)
	}
}
