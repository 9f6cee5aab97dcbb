// Package interop runs the TLS 1.3 engine against stacks nobody here wrote: OpenSSL 3.5's
// s_server and s_client (from the Debian 13 root scripts/openssl-root makes) and Go's
// crypto/tls, per matrix cell.
//
// A cell is a key-exchange group and a signature scheme. The 36 paper cells are paper000's
// six groups × six schemes; the two extra hybrids SecP256r1MLKEM768 and SecP384r1MLKEM1024 ×
// six schemes make 12 more. OpenSSL 3.5 does all 48; crypto/tls (Go 1.27) does 36 of them: the
// 24 paper cells whose group is not ML-KEM-512 or ML-KEM-768, and the 12 extra cells.
//
// What each peer reports about a connection, so both ends can be checked:
//   - s_server: its -trace output, from which ParseServerTrace reads the NamedGroup of the key
//     share in the ServerHello it sent and the SignatureScheme of its CertificateVerify.
//   - s_client: "Negotiated TLS1.3 group" and "Peer signature type" (ParseClientReport).
//   - crypto/tls: ConnectionState.CurveID. crypto/tls reports no signature scheme; its server
//     is restricted to the cell's scheme (Certificate.SupportedSignatureAlgorithms) and its
//     client verified the CertificateVerify with the leaf's key, whose algorithm admits one
//     TLS 1.3 scheme except RSA (rsa_pss_rsae_sha256/384/512): there the engine's State is the
//     only report.
package interop

import (
	"crypto/tls"
	"fmt"

	"pqrepro/tls13"
)

// Cell is one combination of a key-exchange group and a signature scheme.
type Cell struct {
	Group  tls13.Group
	Scheme tls13.SignatureScheme
}

// String is the cell's Algorithm: "<group>+<scheme>", e.g. "ML-KEM-512+ML-DSA-44".
func (c Cell) String() string { return c.Group.String() + "+" + c.Scheme.String() }

// PaperGroups are paper000's six key exchanges, in the paper's order.
func PaperGroups() []tls13.Group {
	return []tls13.Group{tls13.MLKEM512, tls13.MLKEM768, tls13.MLKEM1024, tls13.X25519, tls13.P256, tls13.X25519MLKEM768}
}

// ExtraGroups are the two hybrids beyond the paper.
func ExtraGroups() []tls13.Group {
	return []tls13.Group{tls13.SecP256r1MLKEM768, tls13.SecP384r1MLKEM1024}
}

// PaperCells are the 36 cells of paper000: groups × schemes, groups outer.
func PaperCells() []Cell { return cross(PaperGroups()) }

// ExtraCells are the 12 cells of the two extra hybrids.
func ExtraCells() []Cell { return cross(ExtraGroups()) }

// Cells are PaperCells then ExtraCells: 48.
func Cells() []Cell { return append(PaperCells(), ExtraCells()...) }

func cross(groups []tls13.Group) []Cell {
	var cells []Cell
	for _, g := range groups {
		for _, s := range tls13.SignatureSchemes() {
			cells = append(cells, Cell{Group: g, Scheme: s})
		}
	}
	return cells
}

var opensslGroups = map[tls13.Group]string{
	tls13.MLKEM512: "MLKEM512", tls13.MLKEM768: "MLKEM768", tls13.MLKEM1024: "MLKEM1024",
	tls13.X25519: "x25519", tls13.P256: "P-256", tls13.X25519MLKEM768: "X25519MLKEM768",
	tls13.SecP256r1MLKEM768: "SecP256r1MLKEM768", tls13.SecP384r1MLKEM1024: "SecP384r1MLKEM1024",
}

var opensslSigalgs = map[tls13.SignatureScheme]string{
	tls13.MLDSA44: "mldsa44", tls13.MLDSA65: "mldsa65", tls13.MLDSA87: "mldsa87",
	tls13.Ed25519: "ed25519", tls13.ECDSAP256SHA256: "ecdsa_secp256r1_sha256",
	tls13.RSAPSSRSAESHA256: "rsa_pss_rsae_sha256",
}

// OpenSSLNames are the cell's OpenSSL 3.5 -groups and -sigalgs names.
func (c Cell) OpenSSLNames() (group, sigalg string, err error) {
	group, okG := opensslGroups[c.Group]
	sigalg, okS := opensslSigalgs[c.Scheme]
	if !okG || !okS {
		return "", "", fmt.Errorf("cell %v: no OpenSSL name for its group or signature scheme", c)
	}
	return group, sigalg, nil
}

var cryptoTLSCurves = map[tls13.Group]tls.CurveID{
	tls13.MLKEM1024: tls.MLKEM1024, tls13.X25519: tls.X25519, tls13.P256: tls.CurveP256,
	tls13.X25519MLKEM768: tls.X25519MLKEM768, tls13.SecP256r1MLKEM768: tls.SecP256r1MLKEM768,
	tls13.SecP384r1MLKEM1024: tls.SecP384r1MLKEM1024,
}

var cryptoTLSSchemes = map[tls13.SignatureScheme]tls.SignatureScheme{
	tls13.MLDSA44: tls.MLDSA44, tls13.MLDSA65: tls.MLDSA65, tls13.MLDSA87: tls.MLDSA87,
	tls13.Ed25519: tls.Ed25519, tls13.ECDSAP256SHA256: tls.ECDSAWithP256AndSHA256,
	tls13.RSAPSSRSAESHA256: tls.PSSWithSHA256,
}

// CryptoTLS is the cell's crypto/tls curve and scheme, and whether crypto/tls (Go 1.27) has
// both: every cell except those whose group is ML-KEM-512 or ML-KEM-768.
func (c Cell) CryptoTLS() (tls.CurveID, tls.SignatureScheme, bool) {
	curve, okC := cryptoTLSCurves[c.Group]
	scheme, okS := cryptoTLSSchemes[c.Scheme]
	return curve, scheme, okC && okS
}

// CryptoTLSSupports reports whether crypto/tls can run the cell.
func (c Cell) CryptoTLSSupports() bool {
	_, _, ok := c.CryptoTLS()
	return ok
}
