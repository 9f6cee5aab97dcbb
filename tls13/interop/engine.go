package interop

import (
	"fmt"

	"pqrepro/tls13"
	"pqrepro/tls13/tlscert"
)

// EngineServerConfig is the engine's server for cell: the cell's group and scheme alone,
// chain's leaf and key, the default suite (TLS_AES_128_GCM_SHA256).
func EngineServerConfig(cell Cell, chain *tlscert.Chain) (*tls13.Config, error) {
	if chain.Scheme != cell.Scheme {
		return nil, fmt.Errorf("engine server for %v: chain is %v", cell, chain.Scheme)
	}
	return &tls13.Config{
		Groups:           []tls13.Group{cell.Group},
		SignatureSchemes: []tls13.SignatureScheme{cell.Scheme},
		Certificates:     chain.Certificates(),
		PrivateKey:       chain.Key,
	}, nil
}

// EngineClientConfig is the engine's client for cell: the cell's group (its one key share) and
// scheme alone, chain's CA as the only trust anchor, serverName checked and sent.
func EngineClientConfig(cell Cell, chain *tlscert.Chain, serverName string) *tls13.Config {
	return &tls13.Config{
		Groups:           []tls13.Group{cell.Group},
		SignatureSchemes: []tls13.SignatureScheme{cell.Scheme},
		RootCAs:          chain.Pool(),
		ServerName:       serverName,
	}
}
