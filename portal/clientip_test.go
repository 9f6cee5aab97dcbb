package portal

import (
	"net/http"
	"net/netip"
	"testing"
)

// FuzzClientIP: no forwarded header panics the extractor; from an untrusted peer the answer
// is always the peer, and from a trusted one it is the peer or a parseable address.
func FuzzClientIP(f *testing.F) {
	f.Add("203.0.113.9:5000", "198.51.100.1, 10.0.0.2", "192.0.2.7")
	f.Add("10.0.0.2:80", "198.51.100.1, 10.0.0.3", "")
	f.Add("10.0.0.2:80", "garbage, , 10.0.0.9", "::ffff:1.2.3.4")
	f.Add("[::1]:9", "::1", "")
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "::1"})
	if err != nil {
		f.Fatal(err)
	}
	ip := clientIP(trusted)
	f.Fuzz(func(t *testing.T, peer, xff, real string) {
		r := &http.Request{RemoteAddr: peer, Header: http.Header{}}
		r.Header.Set("X-Forwarded-For", xff)
		r.Header.Set("X-Real-IP", real)
		got := ip(r)
		pa, perr := netip.ParseAddrPort(peer)
		if perr != nil || !(pa.Addr().Unmap().Is4() && trusted[0].Contains(pa.Addr().Unmap()) || trusted[1].Contains(pa.Addr())) {
			if perr == nil && got != pa.Addr().Unmap().String() {
				t.Fatalf("untrusted peer %q gave %q", peer, got)
			}
			return
		}
		if _, err := netip.ParseAddr(got); err != nil {
			t.Fatalf("trusted peer %q: %q is not an address", peer, got)
		}
	})
}
