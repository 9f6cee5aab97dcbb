package attest

import (
	"sync"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"

	"pqrepro/artifacts/identity"
)

// Verifying keys, parsed once
//
// A portal verifies every bundle of a submitter or runner with the same public keys, and
// before this cache each verification unpacked the ML-DSA-65 key (its matrix expanded from
// the seed) and hashed both keys for their key ids and the fingerprint again: about a tenth
// of a bulk seed's verification. What the cache keeps is a pure function of the key bytes,
// looked up by those exact bytes, so a hit is what a fresh parse would give; the signatures
// themselves are checked on every bundle as before. The cache is bounded: when it holds
// keyCacheSize key pairs it is emptied and starts again.

// keyInfo is what verification derives from a key pair.
type keyInfo struct {
	ml          *mldsa65.PublicKey
	edID, mlID  string
	fingerprint string
}

// keyCacheSize bounds the key pairs kept.
const keyCacheSize = 256

var keyCache struct {
	sync.Mutex
	m map[keyPair]*keyInfo
}

// keyPair is a cache key: the two keys' bytes.
type keyPair struct{ ed, ml string }

// parsedKeys returns keys' parsed ML-DSA-65 key, key ids and fingerprint, from the cache
// when these exact bytes were parsed before. The returned value is shared: not to be changed.
func parsedKeys(keys identity.PublicKeys) (*keyInfo, error) {
	k := keyPair{string(keys.Ed25519), string(keys.MLDSA65)}
	keyCache.Lock()
	ki := keyCache.m[k]
	keyCache.Unlock()
	if ki != nil {
		return ki, nil
	}
	ml := new(mldsa65.PublicKey)
	if err := ml.UnmarshalBinary(keys.MLDSA65); err != nil {
		return nil, err
	}
	ki = &keyInfo{ml: ml, fingerprint: keys.Fingerprint()}
	ki.edID, ki.mlID = keys.KeyIDs()
	keyCache.Lock()
	if keyCache.m == nil || len(keyCache.m) >= keyCacheSize {
		keyCache.m = make(map[keyPair]*keyInfo)
	}
	keyCache.m[k] = ki
	keyCache.Unlock()
	return ki, nil
}
