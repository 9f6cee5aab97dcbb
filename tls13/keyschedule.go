package tls13

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"golang.org/x/crypto/chacha20poly1305"
)

// suite is one TLS 1.3 cipher suite: its AEAD and the hash of its key schedule.
type suite struct {
	id     CipherSuite
	hash   crypto.Hash
	keyLen int
	aead   func(key []byte) (cipher.AEAD, error)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

var suites = []suite{
	{TLS_AES_128_GCM_SHA256, crypto.SHA256, 16, gcm},
	{TLS_AES_256_GCM_SHA384, crypto.SHA384, 32, gcm},
	{TLS_CHACHA20_POLY1305_SHA256, crypto.SHA256, 32, chacha20poly1305.New},
}

func suiteByID(id CipherSuite) *suite {
	for i := range suites {
		if suites[i].id == id {
			return &suites[i]
		}
	}
	return nil
}

func (s *suite) newHash() hash.Hash {
	if s.hash == crypto.SHA384 {
		return sha512.New384()
	}
	return sha256.New()
}

// expandLabel is HKDF-Expand-Label (RFC 8446 §7.1).
func (s *suite) expandLabel(secret []byte, label string, context []byte, length int) []byte {
	info := make([]byte, 0, 4+6+len(label)+len(context))
	info = append(info, byte(length>>8), byte(length), byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	var out []byte
	var err error
	if s.hash == crypto.SHA384 {
		out, err = hkdf.Expand(sha512.New384, secret, string(info), length)
	} else {
		out, err = hkdf.Expand(sha256.New, secret, string(info), length)
	}
	if err != nil {
		// Only a length beyond 255·HashLen fails, and every length here is fixed and small.
		panic("tls13: HKDF-Expand-Label: " + err.Error())
	}
	return out
}

func (s *suite) extract(ikm, salt []byte) []byte {
	var out []byte
	var err error
	if s.hash == crypto.SHA384 {
		out, err = hkdf.Extract(sha512.New384, ikm, salt)
	} else {
		out, err = hkdf.Extract(sha256.New, ikm, salt)
	}
	if err != nil {
		panic("tls13: HKDF-Extract: " + err.Error())
	}
	return out
}

// deriveSecret is Derive-Secret with the transcript hash already computed.
func (s *suite) deriveSecret(secret []byte, label string, transcriptHash []byte) []byte {
	return s.expandLabel(secret, label, transcriptHash, s.hash.Size())
}

func (s *suite) emptyHash() []byte {
	h := s.newHash()
	return h.Sum(nil)
}

// handshakeSecret derives the Handshake Secret from the (EC)DHE/KEM shared secret, with no PSK.
func (s *suite) handshakeSecret(shared []byte) []byte {
	early := s.extract(make([]byte, s.hash.Size()), nil)
	derived := s.deriveSecret(early, "derived", s.emptyHash())
	return s.extract(shared, derived)
}

func (s *suite) masterSecret(hs []byte) []byte {
	derived := s.deriveSecret(hs, "derived", s.emptyHash())
	return s.extract(make([]byte, s.hash.Size()), derived)
}

// trafficKeys returns the AEAD and IV of a traffic secret.
func (s *suite) trafficKeys(secret []byte) (cipher.AEAD, []byte, error) {
	key := s.expandLabel(secret, "key", nil, s.keyLen)
	iv := s.expandLabel(secret, "iv", nil, 12)
	a, err := s.aead(key)
	return a, iv, err
}

// finishedMAC is the Finished verify_data for base key baseKey over transcriptHash.
func (s *suite) finishedMAC(baseKey, transcriptHash []byte) []byte {
	fk := s.expandLabel(baseKey, "finished", nil, s.hash.Size())
	var m hash.Hash
	if s.hash == crypto.SHA384 {
		m = hmac.New(sha512.New384, fk)
	} else {
		m = hmac.New(sha256.New, fk)
	}
	m.Write(transcriptHash)
	return m.Sum(nil)
}

func (s *suite) nextTrafficSecret(secret []byte) []byte {
	return s.expandLabel(secret, "traffic upd", nil, s.hash.Size())
}
