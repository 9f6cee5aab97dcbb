package tls13

import (
	"crypto/hmac"
	"crypto/x509"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
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
	ks, err := generateKeyShare(g, c.cfg.rand())
	c.stats.KeyShare += time.Since(t0)
	if err != nil {
		return nil, &alertCause{AlertInternalError, err}
	}
	if h := c.cfg.hooks; h != nil && h.keyShare != nil {
		ks.share = h.keyShare(g, ks.share)
	}
	return ks, nil
}

func (c *Conn) clientHandshake() error {
	cfg := c.cfg
	groups := c.clientGroups()
	for _, g := range groups {
		if !g.supported() {
			return configError{fmt.Errorf("group %s is not implemented", g)}
		}
	}
	for _, g := range c.clientShares() {
		if !slices.Contains(groups, g) {
			return configError{fmt.Errorf("key share %s is not among Groups", g)}
		}
	}
	for _, s := range cfg.schemes() {
		if !s.supported() {
			return configError{fmt.Errorf("signature scheme %s is not implemented", s)}
		}
	}
	for _, s := range cfg.suites() {
		if suiteByID(s) == nil {
			return configError{fmt.Errorf("cipher suite %s is not implemented", s)}
		}
	}
	if cfg.ServerName == "" {
		return configError{errors.New("ServerName is empty: the certificate's name cannot be checked")}
	}
	c.timing = true
	start := time.Now()

	ch := &clientHelloMsg{
		random:            make([]byte, 32),
		sessionID:         make([]byte, 32),
		cipherSuites:      cfg.suites(),
		supportedVersions: []uint16{versionTLS13},
		groups:            groups,
		sigAlgs:           cfg.schemes(),
	}
	if _, err := io.ReadFull(cfg.rand(), ch.random); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	if _, err := io.ReadFull(cfg.rand(), ch.sessionID); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	if net.ParseIP(cfg.ServerName) == nil {
		ch.serverName = cfg.ServerName
	}
	var shares []*keyShare
	for _, g := range c.clientShares() {
		ks, err := c.newKeyShare(g)
		if err != nil {
			return err
		}
		shares = append(shares, ks)
		ch.keyShares = append(ch.keyShares, keyShareEntry{g, ks.share})
	}
	ch1 := ch.marshal()
	c.writeHandshake(ch1)
	if err := c.flush(); err != nil {
		return err
	}

	msg, err := c.expect(typeServerHello)
	if err != nil {
		return err
	}
	if err := c.atRecordBoundary("ServerHello"); err != nil {
		return err
	}
	sh, err := parseServerHello(msg[4:])
	if err != nil {
		return err
	}
	if err := c.checkServerHello(sh, ch); err != nil {
		return err
	}
	c.suite = suiteByID(sh.cipherSuite)
	transcript := c.suite.newHash()
	if sh.isHRR() {
		c.state.HelloRetry = true
		transcript.Write(messageHash(c.suite, ch1))
		transcript.Write(msg)
		if sh.hasKeyShare {
			g := sh.selectedGroup
			if !slices.Contains(groups, g) || slices.ContainsFunc(shares, func(k *keyShare) bool { return k.group == g }) {
				return alertf(AlertIllegalParameter, "HelloRetryRequest selects group %s, which was not offered or already had a share", g)
			}
			ks, err := c.newKeyShare(g)
			if err != nil {
				return err
			}
			shares = []*keyShare{ks}
			ch.keyShares = []keyShareEntry{{g, ks.share}}
		} else if len(sh.cookie) == 0 {
			return alertf(AlertIllegalParameter, "HelloRetryRequest changes nothing")
		}
		ch.cookie = sh.cookie
		ch2 := ch.marshal()
		c.writeHandshake(ch2)
		transcript.Write(ch2)
		if err := c.flush(); err != nil {
			return err
		}
		if msg, err = c.expect(typeServerHello); err != nil {
			return err
		}
		if err := c.atRecordBoundary("ServerHello"); err != nil {
			return err
		}
		hrrSuite := sh.cipherSuite
		if sh, err = parseServerHello(msg[4:]); err != nil {
			return err
		}
		if sh.isHRR() {
			return alertf(AlertUnexpectedMessage, "second HelloRetryRequest")
		}
		if err := c.checkServerHello(sh, ch); err != nil {
			return err
		}
		if sh.cipherSuite != hrrSuite {
			return alertf(AlertIllegalParameter, "ServerHello suite %s differs from the HelloRetryRequest's %s", sh.cipherSuite, hrrSuite)
		}
	} else {
		transcript.Write(ch1)
	}
	transcript.Write(msg)
	if !sh.hasKeyShare {
		return alertf(AlertMissingExtension, "ServerHello has no key_share")
	}
	i := slices.IndexFunc(shares, func(k *keyShare) bool { return k.group == sh.keyShare.group })
	if i < 0 {
		return alertf(AlertIllegalParameter, "ServerHello key share for %s, which the client did not send", sh.keyShare.group)
	}
	c.state.Group = sh.keyShare.group
	c.state.CipherSuite = sh.cipherSuite
	t0 := time.Now()
	secret, err := shares[i].decapsulate(sh.keyShare.data)
	c.stats.Decapsulate += time.Since(t0)
	if err != nil {
		return err
	}

	s := c.suite
	t0 = time.Now()
	hs := s.handshakeSecret(secret)
	th := transcript.Sum(nil)
	cHS := s.deriveSecret(hs, "c hs traffic", th)
	sHS := s.deriveSecret(hs, "s hs traffic", th)
	c.timeKS(t0)
	if err := c.setKey(&c.in, sHS); err != nil {
		return err
	}
	if err := c.setKey(&c.out, cHS); err != nil {
		return err
	}

	if msg, err = c.expect(typeEncryptedExtensions); err != nil {
		return err
	}
	if err := parseEncryptedExtensions(msg[4:]); err != nil {
		return err
	}
	transcript.Write(msg)

	if msg, err = c.readHandshake(); err != nil {
		return err
	}
	var certReqContext []byte
	certRequested := false
	if msg[0] == typeCertificateRequest {
		if certReqContext, err = parseCertificateRequest(msg[4:]); err != nil {
			return err
		}
		certRequested = true
		transcript.Write(msg)
		if msg, err = c.readHandshake(); err != nil {
			return err
		}
	}
	if msg[0] != typeCertificate {
		return alertf(AlertUnexpectedMessage, "got %s, want Certificate", messageName(msg[0]))
	}
	cm, err := parseCertificate(msg[4:])
	if err != nil {
		return err
	}
	if len(cm.context) != 0 {
		return alertf(AlertIllegalParameter, "server Certificate has a request context")
	}
	if len(cm.certs) == 0 {
		return alertf(AlertDecodeError, "server sent no certificate")
	}
	for _, d := range cm.certs {
		c.stats.ChainBytes += len(d)
	}
	t0 = time.Now()
	certs, err := c.verifyChain(cm.certs)
	c.stats.ChainVerify += time.Since(t0)
	if err != nil {
		return err
	}
	c.state.PeerCertificates = certs
	transcript.Write(msg)

	if msg, err = c.expect(typeCertificateVerify); err != nil {
		return err
	}
	cv, err := parseCertificateVerify(msg[4:])
	if err != nil {
		return err
	}
	if !slices.Contains(cfg.schemes(), cv.scheme) {
		return alertf(AlertIllegalParameter, "CertificateVerify uses %s, which the client did not offer", cv.scheme)
	}
	content := signedContent(serverSignatureContext, transcript.Sum(nil))
	t0 = time.Now()
	err = verify(cv.scheme, certs[0].PublicKey, content, cv.signature)
	c.stats.Verify += time.Since(t0)
	if errors.Is(err, errKeyMismatch) {
		return &alertCause{AlertIllegalParameter, fmt.Errorf("CertificateVerify: %w", err)}
	}
	if err != nil {
		return &alertCause{AlertDecryptError, fmt.Errorf("CertificateVerify signature (%s): %w", cv.scheme, err)}
	}
	c.state.Scheme = cv.scheme
	transcript.Write(msg)

	if msg, err = c.expect(typeFinished); err != nil {
		return err
	}
	got, err := parseFinished(msg[4:], s.hash.Size())
	if err != nil {
		return err
	}
	t0 = time.Now()
	want := s.finishedMAC(sHS, transcript.Sum(nil))
	c.timeKS(t0)
	if !hmac.Equal(got, want) {
		return alertf(AlertDecryptError, "server Finished does not verify")
	}
	transcript.Write(msg)

	t0 = time.Now()
	ms := s.masterSecret(hs)
	th = transcript.Sum(nil)
	c.outTraffic = s.deriveSecret(ms, "c ap traffic", th)
	c.inTraffic = s.deriveSecret(ms, "s ap traffic", th)
	c.timeKS(t0)
	if len(c.hsBuf) > 0 {
		return alertf(AlertUnexpectedMessage, "handshake data after the server Finished spans a key change")
	}
	if certRequested {
		b := (&certificateMsg{context: certReqContext}).marshal()
		c.writeHandshake(b)
		transcript.Write(b)
	}
	t0 = time.Now()
	fin := s.finishedMAC(cHS, transcript.Sum(nil))
	c.timeKS(t0)
	c.writeHandshake(marshalFinished(fin))
	if err := c.flush(); err != nil {
		return err
	}
	if err := c.setKey(&c.out, c.outTraffic); err != nil {
		return err
	}
	if err := c.setKey(&c.in, c.inTraffic); err != nil {
		return err
	}
	c.finishStats(start)
	return nil
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

func (c *Conn) serverHandshake() error {
	cfg := c.cfg
	if len(cfg.Certificates) == 0 || cfg.PrivateKey == nil {
		return configError{errors.New("server needs Certificates and PrivateKey")}
	}
	scheme, err := SchemeForKey(cfg.PrivateKey.Public())
	if err != nil {
		return configError{err}
	}
	if !slices.Contains(cfg.schemes(), scheme) {
		return configError{fmt.Errorf("the key's scheme %s is not among SignatureSchemes", scheme)}
	}
	groups := cfg.Groups
	if len(groups) == 0 {
		groups = Groups()
	}
	for _, g := range groups {
		if !g.supported() {
			return configError{fmt.Errorf("group %s is not implemented", g)}
		}
	}
	for _, s := range cfg.suites() {
		if suiteByID(s) == nil {
			return configError{fmt.Errorf("cipher suite %s is not implemented", s)}
		}
	}
	c.timing = true

	msg, err := c.expect(typeClientHello)
	if err != nil {
		return err
	}
	if err := c.atRecordBoundary("ClientHello"); err != nil {
		return err
	}
	start := time.Now()
	c.stats.Wait = 0
	ch, err := parseClientHello(msg[4:])
	if err != nil {
		return err
	}
	if !slices.Contains(ch.supportedVersions, versionTLS13) {
		return alertf(AlertProtocolVersion, "client does not offer TLS 1.3")
	}
	if len(ch.compression) != 1 || ch.compression[0] != 0 {
		return alertf(AlertIllegalParameter, "ClientHello legacy_compression_methods is not [null]")
	}
	for _, id := range cfg.suites() {
		if slices.Contains(ch.cipherSuites, id) {
			c.suite = suiteByID(id)
			break
		}
	}
	if c.suite == nil {
		return alertf(AlertHandshakeFailure, "no cipher suite in common")
	}
	if !ch.hasSigAlgs {
		return alertf(AlertMissingExtension, "ClientHello has no signature_algorithms")
	}
	if !slices.Contains(ch.sigAlgs, scheme) {
		return alertf(AlertHandshakeFailure, "client does not accept %s, the server key's scheme", scheme)
	}
	if !ch.hasGroups || !ch.hasKeyShare {
		return alertf(AlertMissingExtension, "ClientHello lacks supported_groups or key_share")
	}
	var group Group
	var share []byte
	found := false
	for _, g := range groups {
		if i := slices.IndexFunc(ch.keyShares, func(k keyShareEntry) bool { return k.group == g }); i >= 0 {
			group, share, found = g, ch.keyShares[i].data, true
			break
		}
	}
	s := c.suite
	transcript := s.newHash()
	sentCCS := false
	if !found {
		i := slices.IndexFunc(groups, func(g Group) bool { return slices.Contains(ch.groups, g) })
		if i < 0 {
			return alertf(AlertHandshakeFailure, "no key-exchange group in common")
		}
		group = groups[i]
		if share, err = c.helloRetry(transcript, msg, ch, group); err != nil {
			return err
		}
		sentCCS = len(ch.sessionID) > 0
	} else {
		transcript.Write(msg)
	}
	c.state.Group, c.state.CipherSuite, c.state.Scheme = group, s.id, scheme

	t0 := time.Now()
	serverShare, secret, err := encapsulate(group, share, cfg.rand())
	c.stats.Encapsulate += time.Since(t0)
	if err != nil {
		return err
	}
	if h := cfg.hooks; h != nil && h.keyShare != nil {
		serverShare = h.keyShare(group, serverShare)
	}
	sh := &serverHelloMsg{
		random:           make([]byte, 32),
		sessionID:        ch.sessionID,
		cipherSuite:      s.id,
		supportedVersion: versionTLS13,
		keyShare:         keyShareEntry{group, serverShare},
		hasKeyShare:      true,
	}
	if _, err := io.ReadFull(cfg.rand(), sh.random); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	b := sh.marshal()
	c.writeHandshake(b)
	transcript.Write(b)
	if !sentCCS && len(ch.sessionID) > 0 {
		c.writeCCS() // middlebox compatibility (RFC 8446 §D.4)
	}

	t0 = time.Now()
	hs := s.handshakeSecret(secret)
	th := transcript.Sum(nil)
	cHS := s.deriveSecret(hs, "c hs traffic", th)
	sHS := s.deriveSecret(hs, "s hs traffic", th)
	c.timeKS(t0)
	if err := c.setKey(&c.out, sHS); err != nil {
		return err
	}
	if err := c.setKey(&c.in, cHS); err != nil {
		return err
	}

	b = marshalEncryptedExtensions()
	c.writeHandshake(b)
	transcript.Write(b)
	b = (&certificateMsg{certs: cfg.Certificates}).marshal()
	for _, d := range cfg.Certificates {
		c.stats.ChainBytes += len(d)
	}
	c.writeHandshake(b)
	transcript.Write(b)

	content := signedContent(serverSignatureContext, transcript.Sum(nil))
	t0 = time.Now()
	sig, err := sign(scheme, cfg.PrivateKey, cfg.rand(), content)
	c.stats.Sign += time.Since(t0)
	if err != nil {
		return fmt.Errorf("sign CertificateVerify with %s: %w", scheme, err)
	}
	b = (&certificateVerifyMsg{scheme, sig}).marshal()
	c.writeHandshake(b)
	transcript.Write(b)

	t0 = time.Now()
	fin := s.finishedMAC(sHS, transcript.Sum(nil))
	c.timeKS(t0)
	b = marshalFinished(fin)
	c.writeHandshake(b)
	transcript.Write(b)
	if err := c.flush(); err != nil {
		return err
	}

	t0 = time.Now()
	ms := s.masterSecret(hs)
	th = transcript.Sum(nil)
	c.inTraffic = s.deriveSecret(ms, "c ap traffic", th)
	c.outTraffic = s.deriveSecret(ms, "s ap traffic", th)
	want := s.finishedMAC(cHS, th)
	c.timeKS(t0)
	if err := c.setKey(&c.out, c.outTraffic); err != nil {
		return err
	}

	if msg, err = c.expect(typeFinished); err != nil {
		return err
	}
	got, err := parseFinished(msg[4:], s.hash.Size())
	if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return alertf(AlertDecryptError, "client Finished does not verify")
	}
	if err := c.setKey(&c.in, c.inTraffic); err != nil {
		return err
	}
	c.finishStats(start)
	return nil
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
