package tls13

import (
	"crypto/x509"
	"errors"
	"fmt"
	"hash"
	"slices"
	"time"
)

// configError is a local misconfiguration: the handshake stops without sending an alert.
type configError struct{ err error }

func (e configError) Error() string { return "tls13: config: " + e.err.Error() }
func (e configError) Unwrap() error { return e.err }

func alertf(a Alert, format string, args ...any) error {
	return &alertCause{a, fmt.Errorf(format, args...)}
}

// runSteps runs a handshake's steps in order and stops at the first error.
func runSteps(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkGroups refuses a configured group this engine does not implement.
func checkGroups(groups []Group) error {
	for _, g := range groups {
		if !g.supported() {
			return configError{fmt.Errorf("group %s is not implemented", g)}
		}
	}
	return nil
}

// checkSuites refuses a configured cipher suite this engine does not implement.
func checkSuites(suites []CipherSuite) error {
	for _, s := range suites {
		if suiteByID(s) == nil {
			return configError{fmt.Errorf("cipher suite %s is not implemented", s)}
		}
	}
	return nil
}

// messageHash is the synthetic message_hash message that replaces ClientHello1 in the
// transcript after a HelloRetryRequest (RFC 8446 §4.4.1).
func messageHash(s *suite, ch1 []byte) []byte {
	h := s.newHash()
	h.Write(ch1)
	sum := h.Sum(nil)
	return append([]byte{typeMessageHash, 0, 0, byte(len(sum))}, sum...)
}

func (c *Conn) timeKS(t0 time.Time) { c.stats.KeySchedule += time.Since(t0) }

func (c *Conn) writeCCS() {
	c.flushHandshake()
	c.writeRecord(recordChangeCipherSpec, []byte{1})
	if c.timing {
		f := c.flight(!c.isClient)
		f.Messages = append(f.Messages, "ChangeCipherSpec")
	}
}

func (c *Conn) finishStats(start time.Time) {
	s := &c.stats
	s.Handshake = time.Since(start)
	s.Primitive = s.KeyShare + s.Encapsulate + s.Decapsulate + s.Sign + s.Verify + s.ChainVerify + s.KeySchedule + s.RecordLayer
	s.Protocol = s.Handshake - s.Primitive - s.Wait
}

func (c *Conn) clientShares() []Group {
	if len(c.cfg.KeyShares) > 0 {
		return c.cfg.KeyShares
	}
	return c.clientGroups()[:1]
}

func (c *Conn) clientGroups() []Group {
	if len(c.cfg.Groups) > 0 {
		return c.cfg.Groups
	}
	return Groups()
}

func (c *Conn) newKeyShare(g Group) (*keyShare, error) {
	t0 := time.Now()
	ks, err := generateKeyShare(g, c.cfg.rand(), c.cfg.Deterministic)
	c.stats.KeyShare += time.Since(t0)
	if err != nil {
		return nil, &alertCause{AlertInternalError, err}
	}
	if h := c.cfg.hooks; h != nil && h.keyShare != nil {
		ks.share = h.keyShare(g, ks.share)
	}
	return ks, nil
}

// checkServerHello applies the RFC 8446 §4.1.3 checks common to ServerHello and HRR.
func (c *Conn) checkServerHello(sh *serverHelloMsg, ch *clientHelloMsg) error {
	if sh.supportedVersion == 0 {
		return alertf(AlertProtocolVersion, "server did not negotiate TLS 1.3 (no supported_versions)")
	}
	if sh.supportedVersion != versionTLS13 {
		return alertf(AlertIllegalParameter, "server selected version 0x%04x", sh.supportedVersion)
	}
	if string(sh.sessionID) != string(ch.sessionID) {
		return alertf(AlertIllegalParameter, "server did not echo legacy_session_id")
	}
	if sh.compression != 0 {
		return alertf(AlertIllegalParameter, "server selected compression %d", sh.compression)
	}
	if !slices.Contains(ch.cipherSuites, sh.cipherSuite) || suiteByID(sh.cipherSuite) == nil {
		return alertf(AlertIllegalParameter, "server selected cipher suite %s, which was not offered", sh.cipherSuite)
	}
	return nil
}

// verifyChain parses the server's certificates and verifies the chain to RootCAs at Config.Time
// and the leaf's name against ServerName. Alerts: unparsable or wrong name bad_certificate
// (as crypto/tls sends: the certificate is unacceptable for this peer), unknown issuer
// unknown_ca, expired certificate_expired.
func (c *Conn) verifyChain(ders [][]byte) ([]*x509.Certificate, error) {
	certs := make([]*x509.Certificate, len(ders))
	for i, d := range ders {
		cert, err := x509.ParseCertificate(d)
		if err != nil {
			return nil, &alertCause{AlertBadCertificate, fmt.Errorf("parse server certificate %d: %w", i, err)}
		}
		certs[i] = cert
	}
	opts := x509.VerifyOptions{
		Roots:       c.cfg.RootCAs,
		DNSName:     c.cfg.ServerName,
		CurrentTime: c.cfg.now(),
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, ic := range certs[1:] {
			opts.Intermediates.AddCert(ic)
		}
	}
	if _, err := certs[0].Verify(opts); err != nil {
		alert := AlertBadCertificate
		var ua x509.UnknownAuthorityError
		var ci x509.CertificateInvalidError
		switch {
		case errors.As(err, &ua):
			alert = AlertUnknownCA
		case errors.As(err, &ci) && ci.Reason == x509.Expired:
			alert = AlertCertificateExpired
		}
		return nil, &alertCause{alert, fmt.Errorf("verify server certificate: %w", err)}
	}
	return certs, nil
}

// helloRetry sends a HelloRetryRequest for group, reads the second ClientHello and returns its
// key share for group. The transcript gets message_hash(ClientHello1), HRR and ClientHello2.
func (c *Conn) helloRetry(transcript hash.Hash, ch1Msg []byte, ch1 *clientHelloMsg, group Group) ([]byte, error) {
	c.state.HelloRetry = true
	transcript.Write(messageHash(c.suite, ch1Msg))
	hrr := &serverHelloMsg{
		random:           helloRetryRandom,
		sessionID:        ch1.sessionID,
		cipherSuite:      c.suite.id,
		supportedVersion: versionTLS13,
		selectedGroup:    group,
		hasKeyShare:      true,
	}
	b := hrr.marshal()
	c.writeHandshake(b)
	transcript.Write(b)
	if len(ch1.sessionID) > 0 {
		c.writeCCS()
	}
	if err := c.flush(); err != nil {
		return nil, err
	}
	msg, err := c.expect(typeClientHello)
	if err != nil {
		return nil, err
	}
	if err := c.atRecordBoundary("second ClientHello"); err != nil {
		return nil, err
	}
	ch2, err := parseClientHello(msg[4:])
	if err != nil {
		return nil, err
	}
	if len(ch2.keyShares) != 1 || ch2.keyShares[0].group != group {
		return nil, alertf(AlertIllegalParameter, "second ClientHello does not carry exactly one key share for %s", group)
	}
	if !slices.Contains(ch2.cipherSuites, c.suite.id) || string(ch2.sessionID) != string(ch1.sessionID) || string(ch2.random) != string(ch1.random) {
		return nil, alertf(AlertIllegalParameter, "second ClientHello differs from the first beyond the key share")
	}
	transcript.Write(msg)
	return ch2.keyShares[0].data, nil
}

// atRecordBoundary refuses handshake bytes left in the record after msg: a ClientHello or
// ServerHello precedes a key change and must end its record (RFC 8446 §5.1). Checked as soon
// as the message is read, so the unexpected_message alert goes out in the clear, before any
// ServerHello, not under keys the peer never had.
func (c *Conn) atRecordBoundary(msg string) error {
	if len(c.hsBuf) > 0 {
		return &alertCause{AlertUnexpectedMessage, fmt.Errorf("%s does not end its record: %d more handshake bytes follow it", msg, len(c.hsBuf))}
	}
	return nil
}
