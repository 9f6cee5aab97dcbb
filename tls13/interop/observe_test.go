package interop

import (
	"testing"

	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"pqrepro/tls13"
	"strings"
	"sync"
)

// crypto/tls reports no signature scheme, so the tests read the server's CertificateVerify
// with crypto/tls's own secrets: the client's socket is teed, crypto/tls writes its key log,
// and certificateVerifyScheme decrypts the server's handshake records (TLS_AES_128_GCM_SHA256,
// RFC 8446 §7.1 and §5.2) up to the CertificateVerify and returns its scheme.

// observedConn records what the client reads from the socket.
type observedConn struct {
	net.Conn
	mu   sync.Mutex
	read bytes.Buffer
}

func (c *observedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.read.Write(b[:n])
	c.mu.Unlock()
	return n, err
}

func (c *observedConn) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.read.Bytes())
}

// keyLog is a tls.Config.KeyLogWriter that keeps the lines.
type keyLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (k *keyLog) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.b.Write(p)
}

// secret is the last logged secret with label.
func (k *keyLog) secret(label string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var s []byte
	for line := range strings.SplitSeq(k.b.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == label {
			b, err := hex.DecodeString(f[2])
			if err != nil {
				return nil, fmt.Errorf("key log %s: %w", label, err)
			}
			s = b
		}
	}
	if s == nil {
		return nil, fmt.Errorf("key log has no %s", label)
	}
	return s, nil
}

// expandLabel is HKDF-Expand-Label with SHA-256 and an empty context.
func expandLabel(secret []byte, label string, n int) ([]byte, error) {
	info := binary.BigEndian.AppendUint16(nil, uint16(n))
	info = append(info, byte(len("tls13 "+label)))
	info = append(info, "tls13 "+label...)
	info = append(info, 0)
	return hkdf.Expand(sha256.New, secret, string(info), n)
}

// certificateVerifyScheme decrypts the server's handshake records in wire (what the client
// read) with the server handshake traffic secret and returns the CertificateVerify's scheme.
func certificateVerifyScheme(wire, secret []byte) (uint16, error) {
	key, err := expandLabel(secret, "key", 16)
	if err != nil {
		return 0, err
	}
	iv, err := expandLabel(secret, "iv", 12)
	if err != nil {
		return 0, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return 0, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return 0, err
	}
	var seq uint64
	var hs []byte
	for len(wire) >= 5 {
		typ, n := wire[0], int(binary.BigEndian.Uint16(wire[3:5]))
		if len(wire) < 5+n {
			break
		}
		hdr, body := wire[:5], wire[5:5+n]
		wire = wire[5+n:]
		if typ != 23 {
			continue // ServerHello (and a HelloRetryRequest) in the clear, ChangeCipherSpec
		}
		nonce := bytes.Clone(iv)
		for i := range 8 {
			nonce[4+i] ^= byte(seq >> (56 - 8*i))
		}
		seq++
		plain, err := aead.Open(nil, nonce, body, hdr)
		if err != nil {
			return 0, fmt.Errorf("decrypt server handshake record %d: %w", seq-1, err)
		}
		plain = bytes.TrimRight(plain, "\x00")
		if len(plain) == 0 || plain[len(plain)-1] != 22 {
			return 0, errors.New("an encrypted server record before CertificateVerify is not a handshake record")
		}
		hs = append(hs, plain[:len(plain)-1]...)
		for len(hs) >= 4 {
			mlen := int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])
			if len(hs) < 4+mlen {
				break
			}
			if hs[0] == 15 { // CertificateVerify: SignatureScheme, then the signature
				if mlen < 2 {
					return 0, errors.New("short CertificateVerify")
				}
				return binary.BigEndian.Uint16(hs[4:6]), nil
			}
			hs = hs[4+mlen:]
		}
	}
	return 0, errors.New("no CertificateVerify in the server's records")
}

// observedDial is tls.Dial with cfg, recording what is needed to read the server's
// CertificateVerify scheme; scheme is valid after the handshake.
func observedDial(addr string, cfg *tls.Config) (conn *tls.Conn, scheme func() (uint16, error), err error) {
	raw, err := net.DialTimeout("tcp", addr, PeerTimeout)
	if err != nil {
		return nil, nil, err
	}
	oc := &observedConn{Conn: raw}
	kl := &keyLog{}
	cfg = cfg.Clone()
	cfg.KeyLogWriter = kl
	conn = tls.Client(oc, cfg)
	if err := conn.Handshake(); err != nil {
		raw.Close()
		return nil, nil, err
	}
	return conn, func() (uint16, error) {
		if cs := conn.ConnectionState().CipherSuite; cs != tls.TLS_AES_128_GCM_SHA256 {
			return 0, fmt.Errorf("cipher suite %#04x: only TLS_AES_128_GCM_SHA256 is decoded", cs)
		}
		secret, err := kl.secret("SERVER_HANDSHAKE_TRAFFIC_SECRET")
		if err != nil {
			return 0, err
		}
		return certificateVerifyScheme(oc.bytes(), secret)
	}, nil
}

// TestObserveCertificateVerify checks the reader itself, crypto/tls against crypto/tls: each
// scheme the server is restricted to is the one read, and a wrong secret reads nothing.
func TestObserveCertificateVerify(t *testing.T) {
	e := setup(t)
	for _, s := range tls13.SignatureSchemes() {
		cell := Cell{Group: tls13.X25519MLKEM768, Scheme: s}
		t.Run(cell.String(), func(t *testing.T) {
			chain, err := e.chains.Get(s)
			if err != nil {
				t.Fatal(err)
			}
			scfg, err := CryptoTLSServerConfig(cell, chain)
			if err != nil {
				t.Fatal(err)
			}
			addr, served := cryptoTLSServe(t, scfg)
			ccfg, err := CryptoTLSClientConfig(cell, chain, testHost)
			if err != nil {
				t.Fatal(err)
			}
			conn, scheme, err := observedDial(addr, ccfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := lineExchange(conn, "x"); err != nil {
				t.Fatal(err)
			}
			if r := <-served; r.err != nil {
				t.Fatal(r.err)
			}
			got, err := scheme()
			if err != nil || got != uint16(s) {
				t.Errorf("read scheme %#04x (%v), want %#04x", got, err, uint16(s))
			}
		})
	}
	// RSA, where the key admits three schemes: a server restricted to rsa_pss_rsae_sha384
	// is read as 0x0805, not the cell's 0x0804.
	t.Run("rsa_pss_rsae_sha384", func(t *testing.T) {
		cell := Cell{Group: tls13.X25519, Scheme: tls13.RSAPSSRSAESHA256}
		chain, err := e.chains.Get(cell.Scheme)
		if err != nil {
			t.Fatal(err)
		}
		scfg, err := CryptoTLSServerConfig(cell, chain)
		if err != nil {
			t.Fatal(err)
		}
		scfg.Certificates[0].SupportedSignatureAlgorithms = []tls.SignatureScheme{tls.PSSWithSHA384}
		addr, served := cryptoTLSServe(t, scfg)
		ccfg, err := CryptoTLSClientConfig(cell, chain, testHost)
		if err != nil {
			t.Fatal(err)
		}
		conn, scheme, err := observedDial(addr, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := lineExchange(conn, "x"); err != nil {
			t.Fatal(err)
		}
		if r := <-served; r.err != nil {
			t.Fatal(r.err)
		}
		if got, err := scheme(); err != nil || got != uint16(tls.PSSWithSHA384) {
			t.Errorf("read scheme %#04x (%v), want 0x0805", got, err)
		}
	})
	if _, err := certificateVerifyScheme([]byte{23, 3, 3, 0, 17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, make([]byte, 32)); err == nil {
		t.Error("a record under another key decrypted")
	}
}
