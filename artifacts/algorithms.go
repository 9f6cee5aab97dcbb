package artifacts

import (
	"slices"
	"strings"
)

// Family groups algorithms that share a standard or a construction.
type Family string

// The algorithm families pqrepro knows.
const (
	FamilyMLKEM     Family = "ML-KEM"  // FIPS 203
	FamilyMLDSA     Family = "ML-DSA"  // FIPS 204
	FamilySLHDSA    Family = "SLH-DSA" // FIPS 205
	FamilyClassical Family = "classical"
)

// Operation names used in manifests, results and reference data.
const (
	OpKeygen   = "keygen"
	OpEncaps   = "encaps"
	OpDecaps   = "decaps"
	OpDerive   = "derive" // classical key agreement (X25519, ECDH)
	OpSign     = "sign"
	OpVerify   = "verify"
	OpSequence = "sequence" // paper001's KEM keygen+encaps+decaps then signature keygen+sign+verify, timed as one window
)

// Algorithm describes one parameter set as its standard fixes it. Sizes are in bytes; zero
// means the size is not fixed by the standard (an ECDSA DER signature, say).
type Algorithm struct {
	// Name is the NIST or conventional name, e.g. "ML-KEM-768", "SLH-DSA-SHAKE-192s".
	Name string
	// Family is the standard the set belongs to.
	Family Family
	// KEM is true for key-establishment algorithms, false for signatures.
	KEM bool
	// Operations lists the operations a benchmark may time, in execution order.
	Operations []string
	// PublicKey, PrivateKey, Ciphertext, Signature and SharedSecret are the sizes fixed by the standard.
	PublicKey, PrivateKey, Ciphertext, Signature, SharedSecret int
	// Level is the NIST security category (0 for classical algorithms).
	Level int
}

var kemOps = []string{OpKeygen, OpEncaps, OpDecaps}
var dhOps = []string{OpKeygen, OpDerive}
var sigOps = []string{OpKeygen, OpSign, OpVerify}

func slh(name string, n, sig, level int) Algorithm {
	return Algorithm{Name: name, Family: FamilySLHDSA, Operations: sigOps, PublicKey: 2 * n, PrivateKey: 4 * n, Signature: sig, Level: level}
}

// Algorithms returns the catalogue of every algorithm a manifest may name, in a stable order.
// Sizes come from FIPS 203 (Table 3), FIPS 204 (Table 2) and FIPS 205 (Table 2); the classical
// sizes are the raw encodings Go's standard library produces (uncompressed P-256 points,
// 64-byte Ed25519 private keys holding seed and public key).
func Algorithms() []Algorithm {
	return []Algorithm{
		{Name: "ML-KEM-512", Family: FamilyMLKEM, KEM: true, Operations: kemOps, PublicKey: 800, PrivateKey: 1632, Ciphertext: 768, SharedSecret: 32, Level: 1},
		{Name: "ML-KEM-768", Family: FamilyMLKEM, KEM: true, Operations: kemOps, PublicKey: 1184, PrivateKey: 2400, Ciphertext: 1088, SharedSecret: 32, Level: 3},
		{Name: "ML-KEM-1024", Family: FamilyMLKEM, KEM: true, Operations: kemOps, PublicKey: 1568, PrivateKey: 3168, Ciphertext: 1568, SharedSecret: 32, Level: 5},
		{Name: "ML-DSA-44", Family: FamilyMLDSA, Operations: sigOps, PublicKey: 1312, PrivateKey: 2560, Signature: 2420, Level: 2},
		{Name: "ML-DSA-65", Family: FamilyMLDSA, Operations: sigOps, PublicKey: 1952, PrivateKey: 4032, Signature: 3309, Level: 3},
		{Name: "ML-DSA-87", Family: FamilyMLDSA, Operations: sigOps, PublicKey: 2592, PrivateKey: 4896, Signature: 4627, Level: 5},
		slh("SLH-DSA-SHA2-128s", 16, 7856, 1),
		slh("SLH-DSA-SHA2-128f", 16, 17088, 1),
		slh("SLH-DSA-SHA2-192s", 24, 16224, 3),
		slh("SLH-DSA-SHA2-192f", 24, 35664, 3),
		slh("SLH-DSA-SHA2-256s", 32, 29792, 5),
		slh("SLH-DSA-SHA2-256f", 32, 49856, 5),
		slh("SLH-DSA-SHAKE-128s", 16, 7856, 1),
		slh("SLH-DSA-SHAKE-128f", 16, 17088, 1),
		slh("SLH-DSA-SHAKE-192s", 24, 16224, 3),
		slh("SLH-DSA-SHAKE-192f", 24, 35664, 3),
		slh("SLH-DSA-SHAKE-256s", 32, 29792, 5),
		slh("SLH-DSA-SHAKE-256f", 32, 49856, 5),
		{Name: "X25519", Family: FamilyClassical, KEM: true, Operations: dhOps, PublicKey: 32, PrivateKey: 32, SharedSecret: 32},
		{Name: "ECDH-P256", Family: FamilyClassical, KEM: true, Operations: dhOps, PublicKey: 65, PrivateKey: 32, SharedSecret: 32},
		{Name: "Ed25519", Family: FamilyClassical, Operations: sigOps, PublicKey: 32, PrivateKey: 64, Signature: 64},
		{Name: "ECDSA-P256", Family: FamilyClassical, Operations: sigOps, PublicKey: 65, PrivateKey: 32},
		{Name: "RSA-2048", Family: FamilyClassical, Operations: sigOps, PublicKey: 256, Signature: 256},
	}
}

// OpenSSLCLIAlgorithms lists the catalogue algorithms an openssl-cli manifest may name: those
// OpenSSL 3.5's default provider has (`openssl list -kem-algorithms`, `-signature-algorithms`,
// `-key-exchange-algorithms`): ML-KEM, ML-DSA, all twelve SLH-DSA sets, X25519, ECDH and ECDSA
// on P-256, Ed25519 and RSA-2048.
func OpenSSLCLIAlgorithms() []string {
	return AlgorithmNames(func(a Algorithm) bool {
		switch a.Family {
		case FamilyMLKEM, FamilyMLDSA, FamilySLHDSA:
			return true
		}
		return slices.Contains([]string{"X25519", "ECDH-P256", "Ed25519", "ECDSA-P256", "RSA-2048"}, a.Name)
	})
}

// LookupAlgorithm returns the catalogue entry for name. The match is exact: names are
// identifiers, and a near miss must not silently select another parameter set.
func LookupAlgorithm(name string) (Algorithm, bool) {
	for _, a := range Algorithms() {
		if a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

// AlgorithmNames lists the valid names, optionally only KEMs or only signatures.
func AlgorithmNames(filter func(Algorithm) bool) []string {
	var names []string
	for _, a := range Algorithms() {
		if filter == nil || filter(a) {
			names = append(names, a.Name)
		}
	}
	return names
}

// Supports reports whether the algorithm has the operation.
func (a Algorithm) Supports(op string) bool { return slices.Contains(a.Operations, op) }

// SplitPair splits a "KEM+SIG" combination name as used by kem-sig-sequence manifests.
func SplitPair(name string) (kem, sig string, ok bool) {
	kem, sig, ok = strings.Cut(name, "+")
	return kem, sig, ok && kem != "" && sig != ""
}
