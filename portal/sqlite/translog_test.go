package sqlite_test

import (
	"crypto/sha256"
	"encoding/hex"
)

// fakeDigest is a well-formed bundle digest for runs published by tests without a bundle
// (the log's leaf grammar takes only "sha256:<64 hex>").
func fakeDigest(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}
