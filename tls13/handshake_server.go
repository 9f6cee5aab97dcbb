package tls13

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"time"
)

// serverHandshakeState is one server handshake in progress: one method per step of RFC 8446's
// server flow, run in order by run, each leaving what the next needs in the struct.
type serverHandshakeState struct {
	c      *Conn
	scheme SignatureScheme // the scheme of the server's key
	groups []Group         // the groups the server accepts, in preference order
	start  time.Time

	hello    *clientHelloMsg
	helloMsg []byte // the ClientHello as received
	group    Group
	share    []byte // the client's key share for group
	sentCCS  bool   // a ChangeCipherSpec went out with a HelloRetryRequest

	transcript      hash.Hash
	secret          []byte // the key exchange's shared secret
	handshakeSecret []byte
	cHS, sHS        []byte // client and server handshake traffic secrets
}

func (c *Conn) serverHandshake() error {
	hs := &serverHandshakeState{c: c}
	return hs.run()
}

func (hs *serverHandshakeState) run() error {
	if err := hs.checkConfig(); err != nil {
		return err
	}
	hs.c.timing = true
	if err := runSteps(
		hs.readClientHello,
		hs.selectKeyShare,
		hs.sendServerHello,
		hs.establishHandshakeKeys,
		hs.sendServerFlight,
		hs.readClientFinished,
	); err != nil {
		return err
	}
	hs.c.finishStats(hs.start)
	return nil
}

// checkConfig refuses a configuration this server cannot honour, before anything is read.
func (hs *serverHandshakeState) checkConfig() error {
	cfg := hs.c.cfg
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
	hs.scheme = scheme
	hs.groups = cfg.Groups
	if len(hs.groups) == 0 {
		hs.groups = Groups()
	}
	if err := checkGroups(hs.groups); err != nil {
		return err
	}
	if err := checkSuites(cfg.suites()); err != nil {
		return err
	}
	return nil
}

// readClientHello reads the ClientHello, starts the handshake's clock there (the wait for it
// is not the handshake's), and picks the cipher suite, checking what RFC 8446 requires of it.
func (hs *serverHandshakeState) readClientHello() error {
	c := hs.c
	msg, err := c.expect(typeClientHello)
	if err != nil {
		return err
	}
	if err := c.atRecordBoundary("ClientHello"); err != nil {
		return err
	}
	hs.start = time.Now()
	c.stats.Wait = 0
	ch, err := parseClientHello(msg[4:])
	if err != nil {
		return err
	}
	hs.hello = ch
	if !slices.Contains(ch.supportedVersions, versionTLS13) {
		return alertf(AlertProtocolVersion, "client does not offer TLS 1.3")
	}
	if len(ch.compression) != 1 || ch.compression[0] != 0 {
		return alertf(AlertIllegalParameter, "ClientHello legacy_compression_methods is not [null]")
	}
	for _, id := range c.cfg.suites() {
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
	if !slices.Contains(ch.sigAlgs, hs.scheme) {
		return alertf(AlertHandshakeFailure, "client does not accept %s, the server key's scheme", hs.scheme)
	}
	if !ch.hasGroups || !ch.hasKeyShare {
		return alertf(AlertMissingExtension, "ClientHello lacks supported_groups or key_share")
	}
	hs.transcript = c.suite.newHash()
	hs.helloMsg = msg
	return nil
}

// selectKeyShare picks the first of the server's groups the client sent a share for, or asks
// for one with a HelloRetryRequest when the client supports a group but sent no share for it.
func (hs *serverHandshakeState) selectKeyShare() error {
	c, ch := hs.c, hs.hello
	found := false
	for _, g := range hs.groups {
		if i := slices.IndexFunc(ch.keyShares, func(k keyShareEntry) bool { return k.group == g }); i >= 0 {
			hs.group, hs.share, found = g, ch.keyShares[i].data, true
			break
		}
	}
	if !found {
		i := slices.IndexFunc(hs.groups, func(g Group) bool { return slices.Contains(ch.groups, g) })
		if i < 0 {
			return alertf(AlertHandshakeFailure, "no key-exchange group in common")
		}
		hs.group = hs.groups[i]
		share, err := c.helloRetry(hs.transcript, hs.helloMsg, ch, hs.group)
		if err != nil {
			return err
		}
		hs.share = share
		hs.sentCCS = len(ch.sessionID) > 0
	} else {
		hs.transcript.Write(hs.helloMsg)
	}
	c.state.Group, c.state.CipherSuite, c.state.Scheme = hs.group, c.suite.id, hs.scheme
	return nil
}

// sendServerHello encapsulates to the client's share and sends the ServerHello with the
// server's share (and a ChangeCipherSpec for middlebox compatibility, RFC 8446 §D.4).
func (hs *serverHandshakeState) sendServerHello() error {
	c, cfg := hs.c, hs.c.cfg
	t0 := time.Now()
	serverShare, secret, err := encapsulate(hs.group, hs.share, cfg.rand(), cfg.Deterministic)
	c.stats.Encapsulate += time.Since(t0)
	if err != nil {
		return err
	}
	if h := cfg.hooks; h != nil && h.keyShare != nil {
		serverShare = h.keyShare(hs.group, serverShare)
	}
	hs.secret = secret
	sh := &serverHelloMsg{
		random:           make([]byte, 32),
		sessionID:        hs.hello.sessionID,
		cipherSuite:      c.suite.id,
		supportedVersion: versionTLS13,
		keyShare:         keyShareEntry{hs.group, serverShare},
		hasKeyShare:      true,
	}
	if _, err := io.ReadFull(cfg.rand(), sh.random); err != nil {
		return fmt.Errorf("read random: %w", err)
	}
	b := sh.marshal()
	c.writeHandshake(b)
	hs.transcript.Write(b)
	if !hs.sentCCS && len(hs.hello.sessionID) > 0 {
		c.writeCCS()
	}
	return nil
}

// establishHandshakeKeys derives the handshake traffic secrets and installs their keys.
func (hs *serverHandshakeState) establishHandshakeKeys() error {
	c, s := hs.c, hs.c.suite
	t0 := time.Now()
	hs.handshakeSecret = s.handshakeSecret(hs.secret)
	th := hs.transcript.Sum(nil)
	hs.cHS = s.deriveSecret(hs.handshakeSecret, "c hs traffic", th)
	hs.sHS = s.deriveSecret(hs.handshakeSecret, "s hs traffic", th)
	c.timeKS(t0)
	if err := c.setKey(&c.out, hs.sHS); err != nil {
		return err
	}
	return c.setKey(&c.in, hs.cHS)
}

// sendServerFlight sends EncryptedExtensions, Certificate, CertificateVerify and Finished.
func (hs *serverHandshakeState) sendServerFlight() error {
	c, cfg, s := hs.c, hs.c.cfg, hs.c.suite
	b := marshalEncryptedExtensions()
	c.writeHandshake(b)
	hs.transcript.Write(b)
	b = (&certificateMsg{certs: cfg.Certificates}).marshal()
	for _, d := range cfg.Certificates {
		c.stats.ChainBytes += len(d)
	}
	c.writeHandshake(b)
	hs.transcript.Write(b)

	content := signedContent(serverSignatureContext, hs.transcript.Sum(nil))
	t0 := time.Now()
	sig, err := sign(hs.scheme, cfg.PrivateKey, cfg.rand(), content, cfg.Deterministic)
	c.stats.Sign += time.Since(t0)
	if err != nil {
		return fmt.Errorf("sign CertificateVerify with %s: %w", hs.scheme, err)
	}
	b = (&certificateVerifyMsg{hs.scheme, sig}).marshal()
	c.writeHandshake(b)
	hs.transcript.Write(b)

	t0 = time.Now()
	fin := s.finishedMAC(hs.sHS, hs.transcript.Sum(nil))
	c.timeKS(t0)
	b = marshalFinished(fin)
	c.writeHandshake(b)
	hs.transcript.Write(b)
	return c.flush()
}

// readClientFinished derives the application traffic secrets, installs the server's sending
// key, and checks the client's Finished before installing the receiving key.
func (hs *serverHandshakeState) readClientFinished() error {
	c, s := hs.c, hs.c.suite
	t0 := time.Now()
	ms := s.masterSecret(hs.handshakeSecret)
	th := hs.transcript.Sum(nil)
	c.inTraffic = s.deriveSecret(ms, "c ap traffic", th)
	c.outTraffic = s.deriveSecret(ms, "s ap traffic", th)
	want := s.finishedMAC(hs.cHS, th)
	c.timeKS(t0)
	if err := c.setKey(&c.out, c.outTraffic); err != nil {
		return err
	}
	msg, err := c.expect(typeFinished)
	if err != nil {
		return err
	}
	got, err := parseFinished(msg[4:], s.hash.Size())
	if err != nil {
		return err
	}
	if !hmac.Equal(got, want) {
		return alertf(AlertDecryptError, "client Finished does not verify")
	}
	return c.setKey(&c.in, c.inTraffic)
}
