// Package tls13 is a stand-in for the signature-scheme names of pqrepro/tls13 until that
// package exists on this branch; it is deleted when the engine is merged.
package tls13

import "fmt"

// SignatureScheme is a TLS SignatureScheme codepoint.
type SignatureScheme uint16

// The six schemes of the matrix.
const (
	MLDSA44          SignatureScheme = 0x0904
	MLDSA65          SignatureScheme = 0x0905
	MLDSA87          SignatureScheme = 0x0906
	Ed25519          SignatureScheme = 0x0807
	ECDSAP256SHA256  SignatureScheme = 0x0403
	RSAPSSRSAESHA256 SignatureScheme = 0x0804
)

func (s SignatureScheme) String() string {
	switch s {
	case MLDSA44:
		return "ML-DSA-44"
	case MLDSA65:
		return "ML-DSA-65"
	case MLDSA87:
		return "ML-DSA-87"
	case Ed25519:
		return "Ed25519"
	case ECDSAP256SHA256:
		return "ECDSA-P256"
	case RSAPSSRSAESHA256:
		return "RSA-PSS"
	}
	return fmt.Sprintf("SignatureScheme(%#04x)", uint16(s))
}

// SignatureSchemes lists the six.
func SignatureSchemes() []SignatureScheme {
	return []SignatureScheme{MLDSA44, MLDSA65, MLDSA87, Ed25519, ECDSAP256SHA256, RSAPSSRSAESHA256}
}

// Group is a TLS NamedGroup codepoint.
type Group uint16

// The eight groups.
const (
	MLKEM512           Group = 512
	MLKEM768           Group = 513
	MLKEM1024          Group = 514
	X25519             Group = 29
	P256               Group = 23
	X25519MLKEM768     Group = 4588
	SecP256r1MLKEM768  Group = 4587
	SecP384r1MLKEM1024 Group = 4589
)

func (g Group) String() string {
	switch g {
	case MLKEM512:
		return "ML-KEM-512"
	case MLKEM768:
		return "ML-KEM-768"
	case MLKEM1024:
		return "ML-KEM-1024"
	case X25519:
		return "X25519"
	case P256:
		return "P-256"
	case X25519MLKEM768:
		return "X25519MLKEM768"
	case SecP256r1MLKEM768:
		return "SecP256r1MLKEM768"
	case SecP384r1MLKEM1024:
		return "SecP384r1MLKEM1024"
	}
	return fmt.Sprintf("Group(%#04x)", uint16(g))
}

// Groups lists the eight.
func Groups() []Group {
	return []Group{MLKEM512, MLKEM768, MLKEM1024, X25519, P256, X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024}
}
