package interop

import (
	"crypto/tls"
	"fmt"

	"pqrepro/tls13/tlscert"
)

// CryptoTLSServerConfig is a crypto/tls server for cell: TLS 1.3 only, the cell's curve alone,
// chain's leaf, signing with the cell's scheme alone. It fails for a cell crypto/tls lacks.
func CryptoTLSServerConfig(cell Cell, chain *tlscert.Chain) (*tls.Config, error) {
	curve, scheme, ok := cell.CryptoTLS()
	if !ok {
		return nil, fmt.Errorf("crypto/tls server for %v: crypto/tls lacks this cell", cell)
	}
	if chain.Scheme != cell.Scheme {
		return nil, fmt.Errorf("crypto/tls server for %v: chain is %v", cell, chain.Scheme)
	}
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{curve},
		Certificates: []tls.Certificate{{
			Certificate:                  chain.Certificates(),
			PrivateKey:                   chain.Key,
			Leaf:                         chain.Leaf,
			SupportedSignatureAlgorithms: []tls.SignatureScheme{scheme},
		}},
	}, nil
}

// CryptoTLSClientConfig is a crypto/tls client for cell: TLS 1.3 only, the cell's curve alone
// (so its one key share is the cell's group), chain's CA as the only trust anchor, serverName
// checked and sent. crypto/tls offers all the signature schemes it knows; it has no setting
// to offer fewer.
func CryptoTLSClientConfig(cell Cell, chain *tlscert.Chain, serverName string) (*tls.Config, error) {
	curve, _, ok := cell.CryptoTLS()
	if !ok {
		return nil, fmt.Errorf("crypto/tls client for %v: crypto/tls lacks this cell", cell)
	}
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		CurvePreferences: []tls.CurveID{curve},
		RootCAs:          chain.Pool(),
		ServerName:       serverName,
	}, nil
}
