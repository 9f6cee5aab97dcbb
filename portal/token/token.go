// Package token makes the portal's bearer tokens (runner, session, account, enrolment,
// lease) and the form they are stored in: a token is shown once and only its hash is kept.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// New returns a random token of 24 bytes in hex after a readable prefix: "<prefix>_<hex>".
func New(prefix string) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return prefix + "_" + hex.EncodeToString(b)
}

// Hash is how a token is stored: its SHA-256 in hex.
func Hash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}
