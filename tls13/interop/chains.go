package interop

import (
	"fmt"
	"sync"
	"time"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// Chains makes one certificate chain per signature scheme on first use and hands the same one
// out afterwards, so a test run pays each scheme's key generation once. Safe for concurrent use.
type Chains struct {
	hostName string
	now      time.Time
	mu       sync.Mutex
	m        map[tls13.SignatureScheme]*chainOnce
}

type chainOnce struct {
	once  sync.Once
	chain *tlscert.Chain
	err   error
}

// NewChains makes chains for hostName valid around now.
func NewChains(hostName string, now time.Time) *Chains {
	return &Chains{hostName: hostName, now: now, m: map[tls13.SignatureScheme]*chainOnce{}}
}

// HostName is the name the chains' leaves are valid for.
func (c *Chains) HostName() string { return c.hostName }

// Get is scheme's chain, made on the first call.
func (c *Chains) Get(scheme tls13.SignatureScheme) (*tlscert.Chain, error) {
	c.mu.Lock()
	e := c.m[scheme]
	if e == nil {
		e = &chainOnce{}
		c.m[scheme] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.chain, e.err = tlscert.New(scheme, c.hostName, c.now)
		if e.err != nil {
			e.err = fmt.Errorf("chain for %v: %w", scheme, e.err)
		}
	})
	return e.chain, e.err
}
