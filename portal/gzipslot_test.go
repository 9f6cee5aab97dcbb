package portal

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGzipSlotted: a page deflated in pieces and joined with a token per response
// decompresses (checksum and length checked by the reader) to the page with the token in
// every place, for pieces empty, small, incompressible and larger than a stored block.
func TestGzipSlotted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 70000)
	for i := range noise {
		noise[i] = byte(rng.IntN(256))
	}
	slot := []byte("<SLOT>")
	for _, page := range []string{
		"<SLOT>",
		"<form><input name=_csrf value=\"<SLOT>\"></form>",
		strings.Repeat("<tr><td>ML-KEM-768</td><td>encaps</td></tr>\n", 2000) + "<SLOT>" + "tail",
		"head<SLOT><SLOT>middle<SLOT>" + string(noise) + "<SLOT>",
		"no slot at all, " + strings.Repeat("x", 3000),
	} {
		var parts []deflated
		for _, p := range bytes.Split([]byte(page), slot) {
			parts = append(parts, deflatePart(p))
		}
		for _, tok := range []string{"m1.AAAA", maskToken("a-csrf-token-of-forty-bytes-0123456789ab"), ""} {
			zr, err := gzip.NewReader(bytes.NewReader(gzipSlotted(parts, []byte(tok))))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("page of %d bytes, token %q: %v", len(page), tok, err)
			}
			if want := strings.ReplaceAll(page, string(slot), tok); string(got) != want {
				t.Fatalf("page of %d bytes, token %q: decompressed %d bytes, want %d", len(page), tok, len(got), len(want))
			}
		}
	}
}
