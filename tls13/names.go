package tls13

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/mldsa"
	"crypto/rsa"
	"fmt"
	"strings"
)

// Group is a TLS NamedGroup (RFC 8446 §4.2.7) this engine implements.
type Group uint16

// The groups, with their TLS codepoints.
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

var groupNames = []struct {
	g    Group
	name string
}{
	{MLKEM512, "ML-KEM-512"},
	{MLKEM768, "ML-KEM-768"},
	{MLKEM1024, "ML-KEM-1024"},
	{X25519, "X25519"},
	{P256, "P-256"},
	{X25519MLKEM768, "X25519MLKEM768"},
	{SecP256r1MLKEM768, "SecP256r1MLKEM768"},
	{SecP384r1MLKEM1024, "SecP384r1MLKEM1024"},
}

// String returns the group's name as used in manifests and cells ("ML-KEM-512", "X25519", ...),
// or "Group(0x....)" for a codepoint the engine does not implement.
func (g Group) String() string {
	for _, n := range groupNames {
		if n.g == g {
			return n.name
		}
	}
	return fmt.Sprintf("Group(0x%04x)", uint16(g))
}

// ParseGroup returns the group named name (exact spelling of Group.String).
func ParseGroup(name string) (Group, error) {
	for _, n := range groupNames {
		if n.name == name {
			return n.g, nil
		}
	}
	valid := make([]string, len(groupNames))
	for i, n := range groupNames {
		valid[i] = n.name
	}
	return 0, fmt.Errorf("unknown key-exchange group %q (valid: %s)", name, strings.Join(valid, ", "))
}

// Groups returns all eight groups the engine implements, in a fixed order.
func Groups() []Group {
	out := make([]Group, len(groupNames))
	for i, n := range groupNames {
		out[i] = n.g
	}
	return out
}

func (g Group) supported() bool {
	for _, n := range groupNames {
		if n.g == g {
			return true
		}
	}
	return false
}

// SignatureScheme is a TLS SignatureScheme (RFC 8446 §4.2.3) this engine implements.
type SignatureScheme uint16

// The signature schemes, with their TLS codepoints.
const (
	MLDSA44          SignatureScheme = 0x0904
	MLDSA65          SignatureScheme = 0x0905
	MLDSA87          SignatureScheme = 0x0906
	Ed25519          SignatureScheme = 0x0807
	ECDSAP256SHA256  SignatureScheme = 0x0403
	RSAPSSRSAESHA256 SignatureScheme = 0x0804
)

var schemeNames = []struct {
	s    SignatureScheme
	name string
}{
	{MLDSA44, "ML-DSA-44"},
	{MLDSA65, "ML-DSA-65"},
	{MLDSA87, "ML-DSA-87"},
	{Ed25519, "Ed25519"},
	{ECDSAP256SHA256, "ECDSA-P256"},
	{RSAPSSRSAESHA256, "RSA-PSS"},
}

// String returns the scheme's name as used in manifests and cells ("ML-DSA-44", "RSA-PSS", ...).
func (s SignatureScheme) String() string {
	for _, n := range schemeNames {
		if n.s == s {
			return n.name
		}
	}
	return fmt.Sprintf("SignatureScheme(0x%04x)", uint16(s))
}

// ParseSignatureScheme returns the scheme named name (exact spelling of SignatureScheme.String).
func ParseSignatureScheme(name string) (SignatureScheme, error) {
	for _, n := range schemeNames {
		if n.name == name {
			return n.s, nil
		}
	}
	valid := make([]string, len(schemeNames))
	for i, n := range schemeNames {
		valid[i] = n.name
	}
	return 0, fmt.Errorf("unknown signature scheme %q (valid: %s)", name, strings.Join(valid, ", "))
}

// SignatureSchemes returns all six schemes the engine implements, in a fixed order.
func SignatureSchemes() []SignatureScheme {
	out := make([]SignatureScheme, len(schemeNames))
	for i, n := range schemeNames {
		out[i] = n.s
	}
	return out
}

func (s SignatureScheme) supported() bool {
	for _, n := range schemeNames {
		if n.s == s {
			return true
		}
	}
	return false
}

// SchemeForKey returns the one scheme the engine signs with for a key of pub's type: ML-DSA by
// parameter set, Ed25519, ECDSA on P-256 (SHA-256), RSA (RSA-PSS with SHA-256, rsaEncryption
// key). Any other key is an error.
func SchemeForKey(pub crypto.PublicKey) (SignatureScheme, error) {
	switch k := pub.(type) {
	case *mldsa.PublicKey:
		switch k.Parameters() {
		case mldsa.MLDSA44():
			return MLDSA44, nil
		case mldsa.MLDSA65():
			return MLDSA65, nil
		case mldsa.MLDSA87():
			return MLDSA87, nil
		}
		return 0, fmt.Errorf("ML-DSA parameter set %s has no TLS scheme", k.Parameters())
	case ed25519.PublicKey:
		return Ed25519, nil
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return 0, fmt.Errorf("ECDSA key on %s: only P-256 is supported", k.Curve.Params().Name)
		}
		return ECDSAP256SHA256, nil
	case *rsa.PublicKey:
		return RSAPSSRSAESHA256, nil
	}
	return 0, fmt.Errorf("no signature scheme for a %T key", pub)
}

// CipherSuite is a TLS 1.3 cipher suite (RFC 8446 §B.4).
type CipherSuite uint16

// The cipher suites the engine implements.
const (
	TLS_AES_128_GCM_SHA256       CipherSuite = 0x1301
	TLS_AES_256_GCM_SHA384       CipherSuite = 0x1302
	TLS_CHACHA20_POLY1305_SHA256 CipherSuite = 0x1303
)

// String returns the suite's RFC 8446 name.
func (c CipherSuite) String() string {
	switch c {
	case TLS_AES_128_GCM_SHA256:
		return "TLS_AES_128_GCM_SHA256"
	case TLS_AES_256_GCM_SHA384:
		return "TLS_AES_256_GCM_SHA384"
	case TLS_CHACHA20_POLY1305_SHA256:
		return "TLS_CHACHA20_POLY1305_SHA256"
	}
	return fmt.Sprintf("CipherSuite(0x%04x)", uint16(c))
}

// ParseCipherSuite returns the suite named name (its RFC 8446 name).
func ParseCipherSuite(name string) (CipherSuite, error) {
	for _, c := range []CipherSuite{TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256} {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown cipher suite %q (valid: TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256)", name)
}

// Alert is a TLS alert description (RFC 8446 §6).
type Alert uint8

// Alert descriptions with their RFC 8446 names.
const (
	AlertCloseNotify                  Alert = 0
	AlertUnexpectedMessage            Alert = 10
	AlertBadRecordMAC                 Alert = 20
	AlertRecordOverflow               Alert = 22
	AlertHandshakeFailure             Alert = 40
	AlertBadCertificate               Alert = 42
	AlertUnsupportedCertificate       Alert = 43
	AlertCertificateRevoked           Alert = 44
	AlertCertificateExpired           Alert = 45
	AlertCertificateUnknown           Alert = 46
	AlertIllegalParameter             Alert = 47
	AlertUnknownCA                    Alert = 48
	AlertAccessDenied                 Alert = 49
	AlertDecodeError                  Alert = 50
	AlertDecryptError                 Alert = 51
	AlertProtocolVersion              Alert = 70
	AlertInsufficientSecurity         Alert = 71
	AlertInternalError                Alert = 80
	AlertInappropriateFallback        Alert = 86
	AlertUserCanceled                 Alert = 90
	AlertMissingExtension             Alert = 109
	AlertUnsupportedExtension         Alert = 110
	AlertUnrecognizedName             Alert = 112
	AlertBadCertificateStatusResponse Alert = 113
	AlertUnknownPSKIdentity           Alert = 115
	AlertCertificateRequired          Alert = 116
	AlertNoApplicationProtocol        Alert = 120
)

var alertNames = map[Alert]string{
	AlertCloseNotify:                  "close_notify",
	AlertUnexpectedMessage:            "unexpected_message",
	AlertBadRecordMAC:                 "bad_record_mac",
	AlertRecordOverflow:               "record_overflow",
	AlertHandshakeFailure:             "handshake_failure",
	AlertBadCertificate:               "bad_certificate",
	AlertUnsupportedCertificate:       "unsupported_certificate",
	AlertCertificateRevoked:           "certificate_revoked",
	AlertCertificateExpired:           "certificate_expired",
	AlertCertificateUnknown:           "certificate_unknown",
	AlertIllegalParameter:             "illegal_parameter",
	AlertUnknownCA:                    "unknown_ca",
	AlertAccessDenied:                 "access_denied",
	AlertDecodeError:                  "decode_error",
	AlertDecryptError:                 "decrypt_error",
	AlertProtocolVersion:              "protocol_version",
	AlertInsufficientSecurity:         "insufficient_security",
	AlertInternalError:                "internal_error",
	AlertInappropriateFallback:        "inappropriate_fallback",
	AlertUserCanceled:                 "user_canceled",
	AlertMissingExtension:             "missing_extension",
	AlertUnsupportedExtension:         "unsupported_extension",
	AlertUnrecognizedName:             "unrecognized_name",
	AlertBadCertificateStatusResponse: "bad_certificate_status_response",
	AlertUnknownPSKIdentity:           "unknown_psk_identity",
	AlertCertificateRequired:          "certificate_required",
	AlertNoApplicationProtocol:        "no_application_protocol",
}

// String returns the alert's RFC 8446 name, e.g. "decrypt_error".
func (a Alert) String() string {
	if n, ok := alertNames[a]; ok {
		return n
	}
	return fmt.Sprintf("alert(%d)", uint8(a))
}

// AlertError is returned when the handshake or a record fails: Alert is the TLS alert sent to
// the peer (Remote false) or received from it (Remote true). Err says what went wrong locally
// (nil for a received alert). Once a Conn has returned an AlertError it accepts no more data:
// every later Read, Write and Handshake returns the same error.
type AlertError struct {
	Alert  Alert
	Remote bool
	Err    error
}

func (e *AlertError) Error() string {
	if e.Remote {
		return "tls13: received alert " + e.Alert.String()
	}
	if e.Err == nil {
		return "tls13: sent alert " + e.Alert.String()
	}
	return "tls13: " + e.Err.Error() + " (sent alert " + e.Alert.String() + ")"
}

func (e *AlertError) Unwrap() error { return e.Err }
