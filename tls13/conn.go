package tls13

import (
	"crypto"
	"crypto/cipher"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Config configures one side of a connection. A Config may be shared by many connections and
// must not be modified while any uses it.
type Config struct {
	// Groups: client: offered in supported_groups, in order; server: accepted, in preference order
	// (a share the client sent for an earlier group wins over one for a later group). Default:
	// all eight, in the order of Groups().
	Groups []Group
	// KeyShares: client only: the groups it sends a key share for (default: Groups[0]); a server
	// that accepts none of them but a group in Groups answers with HelloRetryRequest.
	KeyShares []Group
	// SignatureSchemes: client: offered in signature_algorithms; server: those it may use
	// (default: all six).
	SignatureSchemes []SignatureScheme
	// CipherSuites: client: offered in order; server: accepted in preference order
	// (default: TLS_AES_128_GCM_SHA256).
	CipherSuites []CipherSuite
	// Server: the certificate chain to send (DER, leaf first) and the leaf's key.
	Certificates [][]byte
	PrivateKey   crypto.Signer
	// Client: trust anchors (nil: the system's) and the name checked against the leaf (sent as
	// SNI when it is not empty).
	RootCAs    *x509.CertPool
	ServerName string
	// Rand is the source of randomness (default crypto/rand).
	Rand io.Reader
	// Deterministic makes a server's every choice a function of Rand alone, so that a seeded
	// Rand gives byte-identical handshakes, in all eight groups and six schemes: ML-KEM
	// encapsulation draws its 32-byte message from Rand (FIPS 203 ML-KEM.Encaps_internal),
	// the X25519, P-256 and P-384 private keys (alone or in a hybrid) are bytes read from Rand
	// (a NIST scalar drawn again while out of range), ML-DSA signs with the deterministic
	// variant (FIPS 204 §3.4, rnd = 0), ECDSA with RFC 6979 nonces and RSA-PSS with its
	// 32-byte salt read from Rand; Ed25519 is deterministic anyway. ECDSA and RSA-PSS then need an *ecdsa.PrivateKey or
	// *rsa.PrivateKey. A client's ECDH key shares come from Rand too. Meant for measuring a
	// client whose counts depend on the server's bytes, with keys that are no secret
	// (tlscert.NewSeededCA); never for a server anyone relies on.
	Deterministic bool
	// Time gives the time certificates are checked at (default time.Now).
	Time func() time.Time

	// hooks lets this package's tests alter what is sent; nil outside tests.
	hooks *testHooks
}

// testHooks alter outgoing handshake data in tests only (a nil *testHooks costs one compare).
type testHooks struct {
	// message gets each outgoing handshake message (header included) and returns what is
	// sent instead; nil drops it.
	message func(msg []byte) []byte
	// keyShare gets the key_exchange bytes of each key share sent (client: ClientHello; server:
	// ServerHello) and returns what is sent instead.
	keyShare func(g Group, share []byte) []byte
}

var defaultSuites = []CipherSuite{TLS_AES_128_GCM_SHA256}

func (c *Config) rand() io.Reader {
	if c.Rand != nil {
		return c.Rand
	}
	return rand.Reader
}

func (c *Config) now() time.Time {
	if c.Time != nil {
		return c.Time()
	}
	return time.Now()
}

func (c *Config) suites() []CipherSuite {
	if len(c.CipherSuites) > 0 {
		return c.CipherSuites
	}
	return defaultSuites
}

func (c *Config) schemes() []SignatureScheme {
	if len(c.SignatureSchemes) > 0 {
		return c.SignatureSchemes
	}
	return SignatureSchemes()
}

// State is what a completed handshake negotiated.
type State struct {
	Group            Group
	Scheme           SignatureScheme // the one in CertificateVerify
	CipherSuite      CipherSuite
	HelloRetry       bool
	PeerCertificates []*x509.Certificate // client: the server's chain as received, leaf first
}

// Stats is what the engine measured about its own side of one handshake. See the package
// documentation for what each duration covers.
type Stats struct {
	// Handshake: client: from the start of the handshake, before the ClientHello's key shares
	// are generated (so KeyShare lies inside it), to when its own Finished has been written (the
	// server's Finished was verified before); server: from the moment the whole first
	// ClientHello has been read to when the client's Finished is verified.
	Handshake time.Duration
	// Time in each primitive phase on this side (zero where the side does not do it).
	KeyShare    time.Duration // client: key-share generation (all shares it sends, both ClientHellos)
	Encapsulate time.Duration // server: share check + encapsulation / ECDH with the client's share
	Decapsulate time.Duration // client: decapsulation / ECDH with the server's share
	Sign        time.Duration // server: CertificateVerify signature
	Verify      time.Duration // client: CertificateVerify check
	ChainVerify time.Duration // client: certificate parsing, chain and host-name verification
	KeySchedule time.Duration // HKDF work: secrets, traffic keys and AEAD key setup, Finished MACs
	RecordLayer time.Duration // AEAD seal/open of handshake records
	// Primitive is the sum of KeyShare..RecordLayer.
	Primitive time.Duration
	// Wait is the time spent blocked in the socket's Read waiting for the peer's bytes during
	// Handshake (the server's wait for the first ClientHello is outside Handshake).
	Wait time.Duration
	// Protocol is Handshake − Primitive − Wait: encoding, parsing, transcript hashing,
	// negotiation and socket writes.
	Protocol time.Duration
	// Flights lists every handshake flight in order, both directions.
	Flights []Flight
	// BytesSent and BytesReceived count the handshake's records on the wire, headers included
	// (ChangeCipherSpec and alerts too), up to the end of Handshake.
	BytesSent, BytesReceived int
	// ChainBytes is the sum of the DER certificates in the server's Certificate message.
	ChainBytes int
}

// Flight is one direction's consecutive run of handshake records. Messages names each
// handshake message by type ("HelloRetryRequest" for a ServerHello carrying the retry random)
// and each ChangeCipherSpec record.
type Flight struct {
	From     string   // "client" or "server"
	Bytes    int      // wire bytes of the flight (record headers included)
	Messages []string // e.g. ["ClientHello"], ["ServerHello","ChangeCipherSpec","EncryptedExtensions",...]
}

// Conn is a TLS 1.3 connection over a net.Conn. Read and Write may be called concurrently with
// each other; Handshake, Read and Write each serialize with themselves.
type Conn struct {
	conn     net.Conn
	cfg      *Config
	isClient bool

	hsMu   sync.Mutex
	hsDone bool
	hsErr  error

	inMu  sync.Mutex
	outMu sync.Mutex

	errMu sync.Mutex
	err   error // sticky: after a fatal alert (sent or received), every call returns it

	in  halfConn
	out halfConn

	// Raw input: rbuf[rpos:rend] holds bytes read from the socket and not yet consumed.
	rbuf       []byte
	rpos, rend int
	hsBuf      []byte // reassembly of handshake messages
	appData    []byte // decrypted application data not yet returned by Read
	readEOF    bool   // close_notify received

	wbuf  []byte // records built and not yet written
	hsOut []byte // handshake messages queued for the next handshake record

	suite                 *suite
	state                 State
	stats                 Stats
	timing                bool // the handshake is running: record flights, bytes, waits, AEAD times
	inTraffic, outTraffic []byte

	closeOnce sync.Once
}

type halfConn struct {
	aead  cipher.AEAD
	iv    [12]byte
	seq   uint64
	nonce [12]byte // scratch for the current record's nonce (kept here so it does not escape)
}

// setNonce computes the per-record nonce (RFC 8446 §5.3) into h.nonce and returns it.
func (h *halfConn) setNonce() []byte {
	h.nonce = h.iv
	for i := 0; i < 8; i++ {
		h.nonce[4+i] ^= byte(h.seq >> (56 - 8*i))
	}
	return h.nonce[:]
}

// Client returns a client-side connection over conn; the handshake runs on the first
// Handshake, Read or Write.
func Client(conn net.Conn, cfg *Config) *Conn {
	return &Conn{conn: conn, cfg: cfg, isClient: true}
}

// Server returns a server-side connection over conn.
func Server(conn net.Conn, cfg *Config) *Conn {
	return &Conn{conn: conn, cfg: cfg}
}

// Handshake runs the handshake if it has not run yet and returns its result. A failed
// handshake returns an *AlertError when an alert was sent or received, and the Conn is dead.
func (c *Conn) Handshake() error {
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	if c.hsDone {
		return c.hsErr
	}
	c.inMu.Lock()
	c.outMu.Lock()
	var err error
	if c.isClient {
		err = c.clientHandshake()
	} else {
		err = c.serverHandshake()
	}
	c.timing = false
	if err != nil {
		err = c.fail(err)
	}
	c.outMu.Unlock()
	c.inMu.Unlock()
	c.hsDone, c.hsErr = true, err
	return err
}

// fail turns a handshake or record error into the Conn's sticky error, sending the alert it
// calls for (outMu must be held). A received alert or an I/O error sends nothing.
func (c *Conn) fail(err error) error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	if c.err != nil {
		return c.err
	}
	var ce configError
	if errors.As(err, &ce) {
		c.err = err
		return err
	}
	var ae *AlertError
	if errors.As(err, &ae) {
		c.err = ae
		return ae
	}
	alert := AlertInternalError
	var ac *alertCause
	var ioErr ioError
	switch {
	case errors.As(err, &ioErr):
		c.err = err
		return err
	case errors.As(err, &ac):
		alert = ac.alert
	}
	c.wbuf, c.hsOut = c.wbuf[:0], c.hsOut[:0]
	c.writeRecord(recordAlert, []byte{2, byte(alert)})
	_ = c.flush()
	c.err = &AlertError{Alert: alert, Err: err}
	return c.err
}

func (c *Conn) sticky() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// ioError marks a failure of the underlying connection (no alert is sent for it).
type ioError struct{ err error }

func (e ioError) Error() string { return e.err.Error() }
func (e ioError) Unwrap() error { return e.err }

// Read reads application data, running the handshake first if needed. It returns io.EOF after
// the peer's close_notify.
func (c *Conn) Read(b []byte) (int, error) {
	if err := c.Handshake(); err != nil {
		return 0, err
	}
	c.inMu.Lock()
	defer c.inMu.Unlock()
	for len(c.appData) == 0 {
		if err := c.sticky(); err != nil {
			return 0, err
		}
		if c.readEOF {
			return 0, io.EOF
		}
		if len(b) == 0 {
			return 0, nil
		}
		if err := c.readPostHandshake(); err != nil {
			if err == io.EOF {
				c.readEOF = true
				return 0, io.EOF
			}
			c.outMu.Lock()
			err = c.fail(err)
			c.outMu.Unlock()
			return 0, err
		}
	}
	n := copy(b, c.appData)
	c.appData = c.appData[n:]
	return n, nil
}

// readPostHandshake reads one record after the handshake: application data goes to appData,
// NewSessionTicket is skipped, KeyUpdate is honoured.
func (c *Conn) readPostHandshake() error {
	typ, data, err := c.readRecord()
	if err != nil {
		return err
	}
	switch typ {
	case recordApplicationData:
		c.appData = data
		return nil
	case recordHandshake:
		c.hsBuf = append(c.hsBuf, data...)
		for {
			msg, ok, err := c.nextMessage()
			if err != nil || !ok {
				return err
			}
			if err := c.postHandshakeMessage(msg); err != nil {
				return err
			}
		}
	}
	return &alertCause{AlertUnexpectedMessage, fmt.Errorf("unexpected record type %d after the handshake", typ)}
}

func (c *Conn) postHandshakeMessage(msg []byte) error {
	body := msg[4:]
	switch msg[0] {
	case typeNewSessionTicket:
		if c.isClient {
			return parseNewSessionTicket(body)
		}
	case typeKeyUpdate:
		req, err := parseKeyUpdate(body)
		if err != nil {
			return err
		}
		if len(c.hsBuf) > 0 {
			return &alertCause{AlertUnexpectedMessage, errors.New("KeyUpdate not at a record boundary")}
		}
		c.inTraffic = c.suite.nextTrafficSecret(c.inTraffic)
		if err := c.setKey(&c.in, c.inTraffic); err != nil {
			return err
		}
		if req {
			c.outMu.Lock()
			defer c.outMu.Unlock()
			c.writeRecord(recordHandshake, marshalKeyUpdate(false))
			if err := c.flush(); err != nil {
				return err
			}
			c.outTraffic = c.suite.nextTrafficSecret(c.outTraffic)
			return c.setKey(&c.out, c.outTraffic)
		}
		return nil
	}
	return &alertCause{AlertUnexpectedMessage, fmt.Errorf("unexpected %s after the handshake", messageName(msg[0]))}
}

// Write sends b as application data, running the handshake first if needed.
func (c *Conn) Write(b []byte) (int, error) {
	if err := c.Handshake(); err != nil {
		return 0, err
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	if err := c.sticky(); err != nil {
		return 0, err
	}
	c.writeRecord(recordApplicationData, b)
	if err := c.flush(); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close sends close_notify (when the connection is still healthy) and closes the socket.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.sticky() == nil && c.hsDone && c.hsErr == nil {
			c.outMu.Lock()
			c.writeRecord(recordAlert, []byte{1, byte(AlertCloseNotify)})
			_ = c.flush()
			c.outMu.Unlock()
		}
		err = c.conn.Close()
	})
	return err
}

// CloseWrite sends close_notify without closing the socket.
func (c *Conn) CloseWrite() error {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.writeRecord(recordAlert, []byte{1, byte(AlertCloseNotify)})
	return c.flush()
}

// State returns what the handshake negotiated (zero before it completes).
func (c *Conn) State() State {
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	return c.state
}

// Stats returns what this side measured about its handshake (zero before it completes).
func (c *Conn) Stats() Stats {
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	s := c.stats
	s.Flights = append([]Flight(nil), c.stats.Flights...)
	return s
}

// NetConn returns the underlying connection.
func (c *Conn) NetConn() net.Conn { return c.conn }
