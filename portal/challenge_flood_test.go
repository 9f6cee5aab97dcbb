package portal_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal"
	"pqrepro/portal/portaltest"
)

// challenges asks for n proof-of-possession challenges, the i-th from the forwarded client
// address from(i) (the portal trusts the loopback proxy), and counts those granted.
func challenges(t *testing.T, p *portaltest.Portal, n int, from func(i int) string) (granted int) {
	t.Helper()
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, p.URL+protocol.RouteChallenge, strings.NewReader(`{"purpose":"`+identity.PurposeSubmitterKeys+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", from(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			granted++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("challenge from %s: %s", from(i), resp.Status)
		}
	}
	return granted
}

// TestChallengeFloodFromOneNetwork: the outstanding challenges the store holds cannot be
// taken from the many addresses of one IPv6 /64 (one client), nor from the many /64s of one
// /48 or the addresses of one IPv4 /24 (one network) beyond the network's budget; another
// network still gets its own.
func TestChallengeFloodFromOneNetwork(t *testing.T) {
	p := portaltest.Start(t, func(c *portal.Config) {
		c.TrustedProxies = []string{"127.0.0.1/32"}
		c.RateLimits.Enrol = portal.Budget{PerSecond: 0.001, Burst: 2}
		c.RateLimits.EnrolNetwork = portal.Budget{PerSecond: 0.001, Burst: 10}
	})
	if got := challenges(t, p, 50, func(i int) string { return fmt.Sprintf("2001:db8:1:2::%x", i+1) }); got != 2 {
		t.Errorf("50 addresses of one /64 got %d challenges, want the one client's 2", got)
	}
	if got := challenges(t, p, 50, func(i int) string { return fmt.Sprintf("2001:db8:1:%x::1", i+100) }); got != 8 {
		t.Errorf("50 /64s of one /48 got %d challenges, want the rest of the network's 10 (8)", got)
	}
	if got := challenges(t, p, 50, func(i int) string { return fmt.Sprintf("198.51.100.%d", i+1) }); got != 10 {
		t.Errorf("50 addresses of one IPv4 /24 got %d challenges, want the network's 10", got)
	}
	if got := challenges(t, p, 1, func(int) string { return "2001:db8:2::1" }); got != 1 {
		t.Error("a client of another network was refused")
	}
}
