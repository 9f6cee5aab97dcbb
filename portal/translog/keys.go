package translog

import (
	"crypto/ed25519"
	"encoding/base64"
)

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.Strict().DecodeString(s) }

func ed25519Public(seed []byte) ed25519.PublicKey {
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
}
