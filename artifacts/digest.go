package artifacts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// DigestPrefix starts every content digest pqrepro writes: a manifest's ID, a bundle's and a
// firmware image's digest, an implementation's source digest.
const DigestPrefix = "sha256:"

// Digest returns data's content digest: DigestPrefix followed by the lowercase hex SHA-256.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return DigestOfSum(sum[:])
}

// DigestOfSum returns the content digest of an already computed SHA-256 sum (a streamed hash's
// Sum(nil)).
func DigestOfSum(sum []byte) string { return DigestPrefix + hex.EncodeToString(sum) }

// DigestOfHex returns the content digest of a SHA-256 given in lowercase hex (as ELF metadata
// and implementation tables record it).
func DigestOfHex(hexSum string) string { return DigestPrefix + hexSum }

// DigestHex returns the hex part of a content digest, and false when d is not one (no prefix,
// or not 64 lowercase hex digits).
func DigestHex(d string) (string, bool) {
	h, ok := strings.CutPrefix(d, DigestPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return "", false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return h, true
}

// ShortDigest abbreviates a digest for a message or a label: the prefix and the first twelve
// hex digits, then "…". Shorter strings are returned whole.
func ShortDigest(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}
