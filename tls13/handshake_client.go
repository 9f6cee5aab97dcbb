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

// clientHandshakeState is one client handshake in progress, in the shape of Go's crypto/tls:
// one method per step of RFC 8446's client flow, run in order by run. Each step leaves what
// the next needs in the struct; an error ends the handshake with the alert it carries.
type clientHandshakeState struct {
	c      *Conn
	groups []Group
	start  time.Time

	hello  *clientHelloMsg
	hello1 []byte      // the first ClientHello as sent
	shares []*keyShare // the key shares the last ClientHello carried
	msg    []byte      // the handshake message just read
	sh     *serverHelloMsg

	transcript      hash.Hash
	handshakeSecret []byte
	cHS, sHS        []byte // client and server handshake traffic secrets

	certs          []*x509.Certificate
	certRequested  bool
	certReqContext []byte
}

func (c *Conn) clientHandshake() error {
	hs := &clientHandshakeState{c: c, groups: c.clientGroups()}
	return hs.run()
}

func (hs *clientHandshakeState) run() error {
	if err := hs.checkConfig(); err != nil {
		return err
	}
	hs.c.timing = true
	hs.start = time.Now()
	if err := runSteps(
		hs.sendClientHello,
		hs.readServerHello,
		hs.establishHandshakeKeys,
		hs.readEncryptedExtensions,
		hs.readServerCertificate,
		hs.readCertificateVerify,
		hs.readServerFinished,
		hs.sendClientFinished,
	); err != nil {
		return err
	}
	hs.c.finishStats(hs.start)
	return nil
}

// checkConfig refuses a configuration this client cannot honour, before anything is sent.
func (hs *clientHandshakeState) checkConfig() error {
	c, cfg := hs.c, hs.c.cfg
	if err := checkGroups(hs.groups); err != nil {
		return err
	}
	for _, g := range c.clientShares() {
		if !slices.Contains(hs.groups, g) {
			return configError{fmt.Errorf("key share %s is not among Groups", g)}
		}
	}
	for _, s := range cfg.schemes() {
		if !s.supported() {
			return configError{fmt.Errorf("signature scheme %s is not implemented", s)}
		}
	}
	if err := checkSuites(cfg.suites()); err != nil {
		return err
	}
	if cfg.ServerName == "" {
		return configError{errors.New("ServerName is empty: the certificate's name cannot be checked")}
	}
	return nil
}

// sendClientHello sends the first ClientHello with a key share for each of the client's
// share groups.
func (hs *clientHandshakeState) sendClientHello() error {
	c, cfg := hs.c, hs.c.cfg
	hs.hello = &clientHelloMsg{
		random:            make([]byte, 32),
		sessionID:         make([]byte, 32),
		cipherSuites:      cfg.suites(),
		supportedVersions: []uint16{versionTLS13},
		groups:            hs.groups,
		sigAlgs:           cfg.schemes(),
	}
	if _, err := io.ReadFull(cfg.rand(), hs.hello.random); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	if _, err := io.ReadFull(cfg.rand(), hs.hello.sessionID); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	if net.ParseIP(cfg.ServerName) == nil {
		hs.hello.serverName = cfg.ServerName
	}
	for _, g := range c.clientShares() {
		ks, err := c.newKeyShare(g)
		if err != nil {
			return err
		}
		hs.shares = append(hs.shares, ks)
		hs.hello.keyShares = append(hs.hello.keyShares, keyShareEntry{g, ks.share})
	}
	hs.hello1 = hs.hello.marshal()
	c.writeHandshake(hs.hello1)
	return c.flush()
}

// readServerHello reads the ServerHello, answering a HelloRetryRequest first if one comes,
// and starts the transcript.
func (hs *clientHandshakeState) readServerHello() error {
	c := hs.c
	sh, err := hs.readHello(false)
	if err != nil {
		return err
	}
	c.suite = suiteByID(sh.cipherSuite)
	hs.transcript = c.suite.newHash()
	if sh.isHRR() {
		if err := hs.retryHello(); err != nil {
			return err
		}
	} else {
		hs.transcript.Write(hs.hello1)
		hs.sh = sh
	}
	hs.transcript.Write(hs.msg)
	return nil
}

// readHello reads one ServerHello (or HelloRetryRequest) and applies the checks common to
// both. After a HelloRetryRequest (afterRetry) a second one is refused before those checks, as
// RFC 8446 §4.1.4 requires.
func (hs *clientHandshakeState) readHello(afterRetry bool) (*serverHelloMsg, error) {
	c := hs.c
	msg, err := c.expect(typeServerHello)
	if err != nil {
		return nil, err
	}
	if err := c.atRecordBoundary("ServerHello"); err != nil {
		return nil, err
	}
	sh, err := parseServerHello(msg[4:])
	if err != nil {
		return nil, err
	}
	if afterRetry && sh.isHRR() {
		return nil, alertf(AlertUnexpectedMessage, "second HelloRetryRequest")
	}
	hs.msg, hs.sh = msg, sh
	return sh, c.checkServerHello(sh, hs.hello)
}

// retryHello answers the HelloRetryRequest in hs.msg with a second ClientHello (a new key
// share for the selected group, or the cookie) and reads the real ServerHello.
func (hs *clientHandshakeState) retryHello() error {
	c, hrr := hs.c, hs.sh
	c.state.HelloRetry = true
	hs.transcript.Write(messageHash(c.suite, hs.hello1))
	hs.transcript.Write(hs.msg)
	if hrr.hasKeyShare {
		g := hrr.selectedGroup
		if !slices.Contains(hs.groups, g) || slices.ContainsFunc(hs.shares, func(k *keyShare) bool { return k.group == g }) {
			return alertf(AlertIllegalParameter, "HelloRetryRequest selects group %s, which was not offered or already had a share", g)
		}
		ks, err := c.newKeyShare(g)
		if err != nil {
			return err
		}
		hs.shares = []*keyShare{ks}
		hs.hello.keyShares = []keyShareEntry{{g, ks.share}}
	} else if len(hrr.cookie) == 0 {
		return alertf(AlertIllegalParameter, "HelloRetryRequest changes nothing")
	}
	hs.hello.cookie = hrr.cookie
	ch2 := hs.hello.marshal()
	c.writeHandshake(ch2)
	hs.transcript.Write(ch2)
	if err := c.flush(); err != nil {
		return err
	}
	sh, err := hs.readHello(true)
	if err != nil {
		return err
	}
	if sh.cipherSuite != hrr.cipherSuite {
		return alertf(AlertIllegalParameter, "ServerHello suite %s differs from the HelloRetryRequest's %s", sh.cipherSuite, hrr.cipherSuite)
	}
	return nil
}

// establishHandshakeKeys decapsulates the server's key share and installs the handshake
// traffic keys both ways.
func (hs *clientHandshakeState) establishHandshakeKeys() error {
	c, sh := hs.c, hs.sh
	if !sh.hasKeyShare {
		return alertf(AlertMissingExtension, "ServerHello has no key_share")
	}
	i := slices.IndexFunc(hs.shares, func(k *keyShare) bool { return k.group == sh.keyShare.group })
	if i < 0 {
		return alertf(AlertIllegalParameter, "ServerHello key share for %s, which the client did not send", sh.keyShare.group)
	}
	c.state.Group = sh.keyShare.group
	c.state.CipherSuite = sh.cipherSuite
	t0 := time.Now()
	secret, err := hs.shares[i].decapsulate(sh.keyShare.data)
	c.stats.Decapsulate += time.Since(t0)
	if err != nil {
		return err
	}
	s := c.suite
	t0 = time.Now()
	hs.handshakeSecret = s.handshakeSecret(secret)
	th := hs.transcript.Sum(nil)
	hs.cHS = s.deriveSecret(hs.handshakeSecret, "c hs traffic", th)
	hs.sHS = s.deriveSecret(hs.handshakeSecret, "s hs traffic", th)
	c.timeKS(t0)
	if err := c.setKey(&c.in, hs.sHS); err != nil {
		return err
	}
	return c.setKey(&c.out, hs.cHS)
}

// readEncryptedExtensions reads EncryptedExtensions and an optional CertificateRequest.
func (hs *clientHandshakeState) readEncryptedExtensions() error {
	c := hs.c
	msg, err := c.expect(typeEncryptedExtensions)
	if err != nil {
		return err
	}
	if err := parseEncryptedExtensions(msg[4:]); err != nil {
		return err
	}
	hs.transcript.Write(msg)
	if hs.msg, err = c.readHandshake(); err != nil {
		return err
	}
	if hs.msg[0] == typeCertificateRequest {
		if hs.certReqContext, err = parseCertificateRequest(hs.msg[4:]); err != nil {
			return err
		}
		hs.certRequested = true
		hs.transcript.Write(hs.msg)
		if hs.msg, err = c.readHandshake(); err != nil {
			return err
		}
	}
	return nil
}

// readServerCertificate checks the server's Certificate (in hs.msg) and verifies its chain.
func (hs *clientHandshakeState) readServerCertificate() error {
	c, msg := hs.c, hs.msg
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
	t0 := time.Now()
	hs.certs, err = c.verifyChain(cm.certs)
	c.stats.ChainVerify += time.Since(t0)
	if err != nil {
		return err
	}
	c.state.PeerCertificates = hs.certs
	hs.transcript.Write(msg)
	return nil
}

// readCertificateVerify verifies the server's signature over the transcript with the leaf's key.
func (hs *clientHandshakeState) readCertificateVerify() error {
	c := hs.c
	msg, err := c.expect(typeCertificateVerify)
	if err != nil {
		return err
	}
	cv, err := parseCertificateVerify(msg[4:])
	if err != nil {
		return err
	}
	if !slices.Contains(c.cfg.schemes(), cv.scheme) {
		return alertf(AlertIllegalParameter, "CertificateVerify uses %s, which the client did not offer", cv.scheme)
	}
	content := signedContent(serverSignatureContext, hs.transcript.Sum(nil))
	t0 := time.Now()
	err = verify(cv.scheme, hs.certs[0].PublicKey, content, cv.signature)
	c.stats.Verify += time.Since(t0)
	if errors.Is(err, errKeyMismatch) {
		return &alertCause{AlertIllegalParameter, fmt.Errorf("CertificateVerify: %w", err)}
	}
	if err != nil {
		return &alertCause{AlertDecryptError, fmt.Errorf("CertificateVerify signature (%s): %w", cv.scheme, err)}
	}
	c.state.Scheme = cv.scheme
	hs.transcript.Write(msg)
	return nil
}

// readServerFinished checks the server's Finished and derives the application traffic secrets.
func (hs *clientHandshakeState) readServerFinished() error {
	c, s := hs.c, hs.c.suite
	msg, err := c.expect(typeFinished)
	if err != nil {
		return err
	}
	got, err := parseFinished(msg[4:], s.hash.Size())
	if err != nil {
		return err
	}
	t0 := time.Now()
	want := s.finishedMAC(hs.sHS, hs.transcript.Sum(nil))
	c.timeKS(t0)
	if !hmac.Equal(got, want) {
		return alertf(AlertDecryptError, "server Finished does not verify")
	}
	hs.transcript.Write(msg)

	t0 = time.Now()
	ms := s.masterSecret(hs.handshakeSecret)
	th := hs.transcript.Sum(nil)
	c.outTraffic = s.deriveSecret(ms, "c ap traffic", th)
	c.inTraffic = s.deriveSecret(ms, "s ap traffic", th)
	c.timeKS(t0)
	if len(c.hsBuf) > 0 {
		return alertf(AlertUnexpectedMessage, "handshake data after the server Finished spans a key change")
	}
	return nil
}

// sendClientFinished sends an empty Certificate if one was requested, then the client's
// Finished, and installs the application traffic keys.
func (hs *clientHandshakeState) sendClientFinished() error {
	c, s := hs.c, hs.c.suite
	if hs.certRequested {
		b := (&certificateMsg{context: hs.certReqContext}).marshal()
		c.writeHandshake(b)
		hs.transcript.Write(b)
	}
	t0 := time.Now()
	fin := s.finishedMAC(hs.cHS, hs.transcript.Sum(nil))
	c.timeKS(t0)
	c.writeHandshake(marshalFinished(fin))
	if err := c.flush(); err != nil {
		return err
	}
	if err := c.setKey(&c.out, c.outTraffic); err != nil {
		return err
	}
	return c.setKey(&c.in, c.inTraffic)
}
