package tls13

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/cryptobyte"
)

// Handshake message types (RFC 8446 §4).
const (
	typeClientHello         uint8 = 1
	typeServerHello         uint8 = 2
	typeNewSessionTicket    uint8 = 4
	typeEndOfEarlyData      uint8 = 5
	typeEncryptedExtensions uint8 = 8
	typeCertificate         uint8 = 11
	typeCertificateRequest  uint8 = 13
	typeCertificateVerify   uint8 = 15
	typeFinished            uint8 = 20
	typeKeyUpdate           uint8 = 24
	typeMessageHash         uint8 = 254
)

func messageName(t uint8) string {
	switch t {
	case typeClientHello:
		return "ClientHello"
	case typeServerHello:
		return "ServerHello"
	case typeNewSessionTicket:
		return "NewSessionTicket"
	case typeEndOfEarlyData:
		return "EndOfEarlyData"
	case typeEncryptedExtensions:
		return "EncryptedExtensions"
	case typeCertificate:
		return "Certificate"
	case typeCertificateRequest:
		return "CertificateRequest"
	case typeCertificateVerify:
		return "CertificateVerify"
	case typeFinished:
		return "Finished"
	case typeKeyUpdate:
		return "KeyUpdate"
	}
	return fmt.Sprintf("handshake(%d)", t)
}

// Extension types.
const (
	extServerName          uint16 = 0
	extSupportedGroups     uint16 = 10
	extSignatureAlgorithms uint16 = 13
	extPreSharedKey        uint16 = 41
	extEarlyData           uint16 = 42
	extSupportedVersions   uint16 = 43
	extCookie              uint16 = 44
	extSigAlgsCert         uint16 = 50
	extKeyShare            uint16 = 51
)

const versionTLS13 uint16 = 0x0304

// helloRetryRandom is the ServerHello.random that marks a HelloRetryRequest (RFC 8446 §4.1.3).
var helloRetryRandom = []byte{
	0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
}

// alertCause is an error that calls for a particular alert.
type alertCause struct {
	alert Alert
	err   error
}

func (e *alertCause) Error() string { return e.err.Error() }
func (e *alertCause) Unwrap() error { return e.err }

func decodeErr(format string, args ...any) error {
	return &alertCause{AlertDecodeError, fmt.Errorf(format, args...)}
}

// errDuplicateExtension is wrapped when an extension block repeats a type.
var errDuplicateExtension = errors.New("duplicate extension")

// parseExtensions reads an extensions<..2^16-1> block that must end s, calling fn for each
// extension. A repeated type is illegal_parameter, bad framing decode_error.
func parseExtensions(s *cryptobyte.String, where string, fn func(typ uint16, data cryptobyte.String) error) error {
	if s.Empty() {
		return nil // an absent block (allowed only where the caller says so) is empty
	}
	var exts cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&exts) || !s.Empty() {
		return decodeErr("%s: malformed extensions block", where)
	}
	var seen [32]uint16
	nseen := 0
	var more []uint16
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return decodeErr("%s: malformed extension", where)
		}
		for _, t := range seen[:nseen] {
			if t == typ {
				return &alertCause{AlertIllegalParameter, fmt.Errorf("%s: %w %d", where, errDuplicateExtension, typ)}
			}
		}
		for _, t := range more {
			if t == typ {
				return &alertCause{AlertIllegalParameter, fmt.Errorf("%s: %w %d", where, errDuplicateExtension, typ)}
			}
		}
		if nseen < len(seen) {
			seen[nseen] = typ
			nseen++
		} else {
			more = append(more, typ)
		}
		if err := fn(typ, data); err != nil {
			return err
		}
	}
	return nil
}

type keyShareEntry struct {
	group Group
	data  []byte
}

// clientHelloMsg is a parsed or to-be-sent ClientHello (body only, no handshake header).
type clientHelloMsg struct {
	random            []byte
	sessionID         []byte
	cipherSuites      []CipherSuite
	compression       []byte
	serverName        string
	supportedVersions []uint16
	groups            []Group
	sigAlgs           []SignatureScheme
	sigAlgsCert       []SignatureScheme
	keyShares         []keyShareEntry
	cookie            []byte
	hasKeyShare       bool
	hasSigAlgs        bool
	hasGroups         bool
	earlyData         bool
}

func addU16List[T ~uint16](b *cryptobyte.Builder, l []T) {
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		for _, v := range l {
			b.AddUint16(uint16(v))
		}
	})
}

func handshakeMessage(typ uint8, body func(b *cryptobyte.Builder)) []byte {
	var b cryptobyte.Builder
	b.AddUint8(typ)
	b.AddUint24LengthPrefixed(body)
	out, err := b.Bytes()
	if err != nil {
		panic("tls13: marshal " + messageName(typ) + ": " + err.Error()) // only on a length overflow, which config validation excludes
	}
	return out
}

// marshal returns the whole handshake message (header included).
func (m *clientHelloMsg) marshal() []byte {
	return handshakeMessage(typeClientHello, func(b *cryptobyte.Builder) {
		b.AddUint16(0x0303)
		b.AddBytes(m.random)
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.sessionID) })
		addU16List(b, m.cipherSuites)
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint8(0) })
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			if m.serverName != "" {
				b.AddUint16(extServerName)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
						b.AddUint8(0) // host_name
						b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(m.serverName)) })
					})
				})
			}
			b.AddUint16(extSupportedVersions)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) {
					for _, v := range m.supportedVersions {
						b.AddUint16(v)
					}
				})
			})
			b.AddUint16(extSupportedGroups)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { addU16List(b, m.groups) })
			b.AddUint16(extSignatureAlgorithms)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { addU16List(b, m.sigAlgs) })
			if len(m.sigAlgsCert) > 0 {
				b.AddUint16(extSigAlgsCert)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { addU16List(b, m.sigAlgsCert) })
			}
			if len(m.cookie) > 0 {
				b.AddUint16(extCookie)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.cookie) })
				})
			}
			b.AddUint16(extKeyShare)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					for _, ks := range m.keyShares {
						b.AddUint16(uint16(ks.group))
						b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(ks.data) })
					}
				})
			})
		})
	})
}

func readU16List[T ~uint16](s *cryptobyte.String, min int) ([]T, bool) {
	var l cryptobyte.String
	if !s.ReadUint16LengthPrefixed(&l) || len(l) < min || len(l)%2 != 0 {
		return nil, false
	}
	out := make([]T, 0, len(l)/2)
	for !l.Empty() {
		var v uint16
		l.ReadUint16(&v)
		out = append(out, T(v))
	}
	return out, true
}

// parseClientHello parses a ClientHello body. Unknown extensions are ignored.
func parseClientHello(body []byte) (*clientHelloMsg, error) {
	m := &clientHelloMsg{}
	s := cryptobyte.String(body)
	var version uint16
	var sid, comp cryptobyte.String
	if !s.ReadUint16(&version) || !s.ReadBytes(&m.random, 32) ||
		!s.ReadUint8LengthPrefixed(&sid) || len(sid) > 32 {
		return nil, decodeErr("ClientHello: malformed header")
	}
	m.sessionID = sid
	var ok bool
	if m.cipherSuites, ok = readU16List[CipherSuite](&s, 2); !ok {
		return nil, decodeErr("ClientHello: malformed cipher_suites")
	}
	if !s.ReadUint8LengthPrefixed(&comp) || len(comp) < 1 {
		return nil, decodeErr("ClientHello: malformed legacy_compression_methods")
	}
	m.compression = comp
	psk := false
	err := parseExtensions(&s, "ClientHello", func(typ uint16, d cryptobyte.String) error {
		if psk {
			return &alertCause{AlertIllegalParameter, errors.New("ClientHello: pre_shared_key is not the last extension (RFC 8446 §4.2.11)")}
		}
		if typ == extPreSharedKey {
			psk = true // not used (no resumption); only its place is checked
			return nil
		}
		return m.parseExtension(typ, d)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// parseExtension decodes one ClientHello extension (other than pre_shared_key, whose place
// the caller checks) into m; unknown extensions are ignored.
func (m *clientHelloMsg) parseExtension(typ uint16, d cryptobyte.String) error {
	bad := func() error { return decodeErr("ClientHello: malformed extension %d", typ) }
	switch typ {
	case extServerName:
		var list cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&list) || list.Empty() || !d.Empty() {
			return bad()
		}
		for !list.Empty() {
			var nt uint8
			var name cryptobyte.String
			if !list.ReadUint8(&nt) || !list.ReadUint16LengthPrefixed(&name) || len(name) == 0 {
				return bad()
			}
			if nt == 0 && m.serverName == "" {
				m.serverName = string(name)
			}
		}
	case extSupportedVersions:
		var l cryptobyte.String
		if !d.ReadUint8LengthPrefixed(&l) || len(l) < 2 || len(l)%2 != 0 || !d.Empty() {
			return bad()
		}
		for !l.Empty() {
			var v uint16
			l.ReadUint16(&v)
			m.supportedVersions = append(m.supportedVersions, v)
		}
	case extSupportedGroups:
		var ok bool
		if m.groups, ok = readU16List[Group](&d, 2); !ok || !d.Empty() {
			return bad()
		}
		m.hasGroups = true
	case extSignatureAlgorithms:
		var ok bool
		if m.sigAlgs, ok = readU16List[SignatureScheme](&d, 2); !ok || !d.Empty() {
			return bad()
		}
		m.hasSigAlgs = true
	case extSigAlgsCert:
		var ok bool
		if m.sigAlgsCert, ok = readU16List[SignatureScheme](&d, 2); !ok || !d.Empty() {
			return bad()
		}
	case extCookie:
		var c cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&c) || len(c) == 0 || !d.Empty() {
			return bad()
		}
		m.cookie = c
	case extKeyShare:
		var l cryptobyte.String
		if !d.ReadUint16LengthPrefixed(&l) || !d.Empty() {
			return bad()
		}
		for !l.Empty() {
			var g uint16
			var ke cryptobyte.String
			if !l.ReadUint16(&g) || !l.ReadUint16LengthPrefixed(&ke) || len(ke) == 0 {
				return bad()
			}
			for _, ks := range m.keyShares {
				if ks.group == Group(g) {
					return &alertCause{AlertIllegalParameter, fmt.Errorf("ClientHello: two key shares for %s", Group(g))}
				}
			}
			m.keyShares = append(m.keyShares, keyShareEntry{Group(g), ke})
		}
		m.hasKeyShare = true
	case extEarlyData:
		m.earlyData = true
	}
	return nil
}

// serverHelloMsg is a ServerHello or, when random is helloRetryRandom, a HelloRetryRequest.
type serverHelloMsg struct {
	random           []byte
	sessionID        []byte
	cipherSuite      CipherSuite
	compression      uint8
	supportedVersion uint16
	keyShare         keyShareEntry // ServerHello
	selectedGroup    Group         // HelloRetryRequest
	cookie           []byte        // HelloRetryRequest
	hasKeyShare      bool
}

func (m *serverHelloMsg) isHRR() bool { return string(m.random) == string(helloRetryRandom) }

func (m *serverHelloMsg) marshal() []byte {
	return handshakeMessage(typeServerHello, func(b *cryptobyte.Builder) {
		b.AddUint16(0x0303)
		b.AddBytes(m.random)
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.sessionID) })
		b.AddUint16(uint16(m.cipherSuite))
		b.AddUint8(0)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			b.AddUint16(extSupportedVersions)
			b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint16(m.supportedVersion) })
			if m.isHRR() {
				b.AddUint16(extKeyShare)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint16(uint16(m.selectedGroup)) })
				if len(m.cookie) > 0 {
					b.AddUint16(extCookie)
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
						b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.cookie) })
					})
				}
				return
			}
			if m.hasKeyShare {
				b.AddUint16(extKeyShare)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
					b.AddUint16(uint16(m.keyShare.group))
					b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.keyShare.data) })
				})
			}
		})
	})
}

// parseServerHello parses a ServerHello or HelloRetryRequest body.
func parseServerHello(body []byte) (*serverHelloMsg, error) {
	m := &serverHelloMsg{}
	s := cryptobyte.String(body)
	var version, suite uint16
	var sid cryptobyte.String
	if !s.ReadUint16(&version) || !s.ReadBytes(&m.random, 32) ||
		!s.ReadUint8LengthPrefixed(&sid) || len(sid) > 32 ||
		!s.ReadUint16(&suite) || !s.ReadUint8(&m.compression) {
		return nil, decodeErr("ServerHello: malformed header")
	}
	m.sessionID = sid
	m.cipherSuite = CipherSuite(suite)
	hrr := m.isHRR()
	err := parseExtensions(&s, "ServerHello", func(typ uint16, d cryptobyte.String) error {
		bad := func() error { return decodeErr("ServerHello: malformed extension %d", typ) }
		switch typ {
		case extSupportedVersions:
			if !d.ReadUint16(&m.supportedVersion) || !d.Empty() {
				return bad()
			}
		case extKeyShare:
			var g uint16
			if !d.ReadUint16(&g) {
				return bad()
			}
			if hrr {
				if !d.Empty() {
					return bad()
				}
				m.selectedGroup = Group(g)
			} else {
				var ke cryptobyte.String
				if !d.ReadUint16LengthPrefixed(&ke) || len(ke) == 0 || !d.Empty() {
					return bad()
				}
				m.keyShare = keyShareEntry{Group(g), ke}
			}
			m.hasKeyShare = true
		case extCookie:
			var c cryptobyte.String
			if !d.ReadUint16LengthPrefixed(&c) || len(c) == 0 || !d.Empty() {
				return bad()
			}
			m.cookie = c
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func marshalEncryptedExtensions() []byte {
	return handshakeMessage(typeEncryptedExtensions, func(b *cryptobyte.Builder) {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {})
	})
}

// parseEncryptedExtensions checks an EncryptedExtensions body's framing; its extensions
// (server_name acknowledgement, supported_groups, ...) carry nothing this engine uses.
func parseEncryptedExtensions(body []byte) error {
	s := cryptobyte.String(body)
	if len(s) < 2 {
		return decodeErr("EncryptedExtensions: too short")
	}
	return parseExtensions(&s, "EncryptedExtensions", func(uint16, cryptobyte.String) error { return nil })
}

type certificateMsg struct {
	context []byte
	certs   [][]byte
}

func (m *certificateMsg) marshal() []byte {
	return handshakeMessage(typeCertificate, func(b *cryptobyte.Builder) {
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.context) })
		b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) {
			for _, c := range m.certs {
				b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(c) })
				b.AddUint16(0) // no per-certificate extensions
			}
		})
	})
}

// parseCertificate parses a Certificate body; per-entry extensions are checked and ignored.
func parseCertificate(body []byte) (*certificateMsg, error) {
	m := &certificateMsg{}
	s := cryptobyte.String(body)
	var ctx, list cryptobyte.String
	if !s.ReadUint8LengthPrefixed(&ctx) || !s.ReadUint24LengthPrefixed(&list) || !s.Empty() {
		return nil, decodeErr("Certificate: malformed")
	}
	m.context = ctx
	for !list.Empty() {
		var cert, exts cryptobyte.String
		if !list.ReadUint24LengthPrefixed(&cert) || len(cert) == 0 || !list.ReadUint16LengthPrefixed(&exts) {
			return nil, decodeErr("Certificate: malformed entry")
		}
		for !exts.Empty() {
			var typ uint16
			var d cryptobyte.String
			if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&d) {
				return nil, decodeErr("Certificate: malformed entry extension")
			}
		}
		m.certs = append(m.certs, cert)
	}
	return m, nil
}

type certificateVerifyMsg struct {
	scheme    SignatureScheme
	signature []byte
}

func (m *certificateVerifyMsg) marshal() []byte {
	return handshakeMessage(typeCertificateVerify, func(b *cryptobyte.Builder) {
		b.AddUint16(uint16(m.scheme))
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(m.signature) })
	})
}

func parseCertificateVerify(body []byte) (*certificateVerifyMsg, error) {
	m := &certificateVerifyMsg{}
	s := cryptobyte.String(body)
	var scheme uint16
	var sig cryptobyte.String
	if !s.ReadUint16(&scheme) || !s.ReadUint16LengthPrefixed(&sig) || !s.Empty() {
		return nil, decodeErr("CertificateVerify: malformed")
	}
	m.scheme = SignatureScheme(scheme)
	m.signature = sig
	return m, nil
}

func marshalFinished(verifyData []byte) []byte {
	return handshakeMessage(typeFinished, func(b *cryptobyte.Builder) { b.AddBytes(verifyData) })
}

// parseFinished returns the verify_data of a Finished body of the suite's hash length.
func parseFinished(body []byte, hashLen int) ([]byte, error) {
	if len(body) != hashLen {
		return nil, decodeErr("Finished: %d bytes, want %d", len(body), hashLen)
	}
	return body, nil
}

// parseNewSessionTicket checks a NewSessionTicket body's framing; the ticket itself is
// discarded (the engine does no resumption).
func parseNewSessionTicket(body []byte) error {
	s := cryptobyte.String(body)
	var lifetime, ageAdd uint32
	var nonce, ticket cryptobyte.String
	if !s.ReadUint32(&lifetime) || !s.ReadUint32(&ageAdd) || !s.ReadUint8LengthPrefixed(&nonce) ||
		!s.ReadUint16LengthPrefixed(&ticket) || len(ticket) == 0 || len(s) < 2 {
		return decodeErr("NewSessionTicket: malformed")
	}
	return parseExtensions(&s, "NewSessionTicket", func(uint16, cryptobyte.String) error { return nil })
}

// parseCertificateRequest returns the certificate_request_context of a CertificateRequest.
func parseCertificateRequest(body []byte) ([]byte, error) {
	s := cryptobyte.String(body)
	var ctx cryptobyte.String
	if !s.ReadUint8LengthPrefixed(&ctx) || len(s) < 2 {
		return nil, decodeErr("CertificateRequest: malformed")
	}
	if err := parseExtensions(&s, "CertificateRequest", func(uint16, cryptobyte.String) error { return nil }); err != nil {
		return nil, err
	}
	return ctx, nil
}

// parseKeyUpdate returns whether the peer asks for an update of our sending keys.
func parseKeyUpdate(body []byte) (bool, error) {
	if len(body) != 1 || body[0] > 1 {
		return false, decodeErr("KeyUpdate: malformed")
	}
	return body[0] == 1, nil
}

func marshalKeyUpdate(requestUpdate bool) []byte {
	return handshakeMessage(typeKeyUpdate, func(b *cryptobyte.Builder) {
		if requestUpdate {
			b.AddUint8(1)
		} else {
			b.AddUint8(0)
		}
	})
}
