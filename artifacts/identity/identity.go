// Package identity holds a runner's or submitter's signing identity — an Ed25519 key and an
// ML-DSA-65 key, both derived from stored seeds — its public keys and their file format, and
// proofs of possession that a registration carries so no one registers keys they do not hold.
package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"

	"pqrepro/internal/durable"
	"pqrepro/internal/strictjson"
)

// Names of the files an identity directory holds.
const (
	// IdentityKeyFile holds the private seeds; it must be mode 0600 or stricter.
	IdentityKeyFile = "runner.key"
	// IdentityPubFile holds the public keys in the format of PublicKeys.MarshalFile.
	IdentityPubFile = "runner.pub.json"
)

// identityKeyType tags the private key file format.
const identityKeyType = "pqrepro-runner-key/v1"

// identityMaxFileBytes bounds how much of a key or public key file is read.
const identityMaxFileBytes = 64 << 10

// Identity is a runner's signing identity: an Ed25519 key and an ML-DSA-65 key
// (FIPS 204, cloudflare/circl sign/mldsa/mldsa65). Both keys are derived from
// 32-byte seeds, which are all that is stored. An Identity is safe for
// concurrent use.
//
// On disk, dir/runner.key is this JSON document (mode 0600):
//
//	{
//	  "type": "pqrepro-runner-key/v1",
//	  "ed25519Seed": "<base64 std, 32 bytes: the RFC 8032 private key seed>",
//	  "mldsa65Seed": "<base64 std, 32 bytes: the FIPS 204 key generation seed ξ, as for mldsa65.NewKeyFromSeed>"
//	}
//
// and dir/runner.pub.json is PublicKeys.MarshalFile (mode 0644).
type Identity struct {
	edSeed [ed25519.SeedSize]byte
	mlSeed [mldsa65.SeedSize]byte
	edPriv ed25519.PrivateKey
	mlPriv *mldsa65.PrivateKey
	mlPub  *mldsa65.PublicKey
}

// identityKeyFile is the JSON form of runner.key.
type identityKeyFile struct {
	Type        string `json:"type"`
	Ed25519Seed []byte `json:"ed25519Seed"`
	MLDSA65Seed []byte `json:"mldsa65Seed"`
}

// FromSeeds derives both key pairs from their seeds (the two 32-byte values runner.key
// stores); tests use it for identities that never change.
func FromSeeds(edSeed, mlSeed [32]byte) *Identity {
	id := &Identity{edSeed: edSeed, mlSeed: mlSeed}
	id.edPriv = ed25519.NewKeyFromSeed(edSeed[:])
	id.mlPub, id.mlPriv = mldsa65.NewKeyFromSeed(&id.mlSeed)
	return id
}

// GenerateIdentity returns a new identity with fresh random seeds from crypto/rand.
func GenerateIdentity() (*Identity, error) {
	var edSeed, mlSeed [32]byte
	if _, err := rand.Read(edSeed[:]); err != nil {
		return nil, fmt.Errorf("generate identity: read random ed25519 seed: %w", err)
	}
	if _, err := rand.Read(mlSeed[:]); err != nil {
		return nil, fmt.Errorf("generate identity: read random ml-dsa-65 seed: %w", err)
	}
	return FromSeeds(edSeed, mlSeed), nil
}

// Public returns copies of the identity's public keys.
func (id *Identity) Public() PublicKeys {
	pub := id.edPriv.Public().(ed25519.PublicKey)
	return PublicKeys{
		Ed25519: bytes.Clone(pub),
		MLDSA65: id.mlPub.Bytes(),
	}
}

// SignBoth signs msg with both keys: Ed25519 (RFC 8032, pure) and ML-DSA-65 (FIPS 204 pure
// ML-DSA, hedged, empty context). Callers bind their purpose into msg; a signature is never
// made over caller bytes that another purpose could also accept.
func (id *Identity) SignBoth(msg []byte) (ed25519Sig, mldsa65Sig []byte, err error) {
	ml := make([]byte, mldsa65.SignatureSize)
	if err := mldsa65.SignTo(id.mlPriv, msg, nil, true, ml); err != nil {
		return nil, nil, fmt.Errorf("sign with ml-dsa-65: %w", err)
	}
	return ed25519.Sign(id.edPriv, msg), ml, nil
}

// LoadIdentity reads dir/runner.key. The file must be a regular file of mode
// 0600 or stricter (no group or other permission bits; not checked on Windows),
// else the error names the file and its mode. If dir/runner.pub.json exists it
// must hold the public keys of the loaded identity.
func LoadIdentity(dir string) (*Identity, error) {
	path := filepath.Join(dir, IdentityKeyFile)
	data, err := identityReadKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("load identity: %w", err)
	}
	var kf identityKeyFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kf); err != nil {
		return nil, fmt.Errorf("load identity: parse %s: %w", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("load identity: parse %s: trailing data after the key document", path)
	}
	if kf.Type != identityKeyType {
		return nil, fmt.Errorf("load identity: %s: type %q, want %q", path, kf.Type, identityKeyType)
	}
	if len(kf.Ed25519Seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("load identity: %s: ed25519Seed is %d bytes, want %d", path, len(kf.Ed25519Seed), ed25519.SeedSize)
	}
	if len(kf.MLDSA65Seed) != mldsa65.SeedSize {
		return nil, fmt.Errorf("load identity: %s: mldsa65Seed is %d bytes, want %d", path, len(kf.MLDSA65Seed), mldsa65.SeedSize)
	}
	id := FromSeeds([32]byte(kf.Ed25519Seed), [32]byte(kf.MLDSA65Seed))

	pubPath := filepath.Join(dir, IdentityPubFile)
	pubData, err := os.ReadFile(pubPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("load identity: read %s: %w", pubPath, err)
	default:
		pub, err := ParsePublicKeys(pubData)
		if err != nil {
			return nil, fmt.Errorf("load identity: %s: %w", pubPath, err)
		}
		if !pub.Equal(id.Public()) {
			return nil, fmt.Errorf("load identity: %s holds keys %s, but %s derives keys %s",
				pubPath, pub.Fingerprint(), path, id.Public().Fingerprint())
		}
	}
	return id, nil
}

// identityReadKeyFile reads a private key file after checking that it is a
// regular file nobody but its owner can read or write.
func identityReadKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (mode %v)", path, fi.Mode())
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o; a private key file must be mode 0600 or stricter (chmod 600 %s)",
			path, fi.Mode().Perm(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, identityMaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > identityMaxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, identityMaxFileBytes)
	}
	return data, nil
}

// Save writes dir/runner.key (mode 0600) and dir/runner.pub.json (mode 0644),
// creating dir with mode 0700 if it does not exist (an existing dir keeps its
// mode). Each file is written to a temporary file in dir, synced, and then
// put in place, so a crash never leaves a partial file under either name.
// Save refuses to overwrite an existing runner.key (the key is linked into
// place, which fails if the name exists); an existing runner.pub.json is
// replaced.
func (id *Identity) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save identity: create %s: %w", dir, err)
	}
	keyPath := filepath.Join(dir, IdentityKeyFile)
	if _, err := os.Lstat(keyPath); err == nil {
		return fmt.Errorf("save identity: %s already exists; refusing to overwrite a key: %w", keyPath, fs.ErrExist)
	}
	keyData, err := json.MarshalIndent(identityKeyFile{
		Type:        identityKeyType,
		Ed25519Seed: id.edSeed[:],
		MLDSA65Seed: id.mlSeed[:],
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("save identity: encode key: %w", err)
	}
	keyData = append(keyData, '\n')
	if err := identityWriteFile(dir, IdentityKeyFile, keyData, 0o600, false); err != nil {
		return fmt.Errorf("save identity: %w", err)
	}
	pubData, err := id.Public().MarshalFile()
	if err != nil {
		return fmt.Errorf("save identity: %w", err)
	}
	if err := identityWriteFile(dir, IdentityPubFile, pubData, 0o644, true); err != nil {
		return fmt.Errorf("save identity: %w", err)
	}
	return nil
}

// identityWriteFile writes dir/name atomically: temporary file, fsync, then
// rename (replace) or hard link (no replace; fails with fs.ErrExist if the
// name exists), then fsync of dir.
func identityWriteFile(dir, name string, data []byte, mode os.FileMode, replace bool) (err error) {
	final := filepath.Join(dir, name)
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", final, err)
	}
	tmp := f.Name()
	defer func() {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp)
	}()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: chmod: %w", final, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", final, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", final, err)
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("write %s: close: %w", final, cerr)
	}
	if replace {
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("write %s: %w", final, err)
		}
	} else {
		if err := os.Link(tmp, final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("write %s: already exists; refusing to overwrite: %w", final, fs.ErrExist)
			}
			// Some file systems have no hard links; fall back to a checked rename.
			if _, serr := os.Lstat(final); serr == nil {
				return fmt.Errorf("write %s: already exists; refusing to overwrite: %w", final, fs.ErrExist)
			}
			if err := os.Rename(tmp, final); err != nil {
				return fmt.Errorf("write %s: %w", final, err)
			}
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", final, err)
	}
	return nil
}

// LoadOrCreateIdentity loads the identity in dir, or, if dir/runner.key does
// not exist, generates one and saves it there (created is then true). If the
// public key file of an existing identity is missing it is written again.
func LoadOrCreateIdentity(dir string) (id *Identity, created bool, err error) {
	keyPath := filepath.Join(dir, IdentityKeyFile)
	if _, err := os.Lstat(keyPath); errors.Is(err, fs.ErrNotExist) {
		id, err := GenerateIdentity()
		if err != nil {
			return nil, false, err
		}
		err = id.Save(dir)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, false, err
		}
		// Another process created the key first: use theirs.
	} else if err != nil {
		return nil, false, fmt.Errorf("load identity: %w", err)
	}
	id, err = LoadIdentity(dir)
	if err != nil {
		return nil, false, err
	}
	pubPath := filepath.Join(dir, IdentityPubFile)
	if _, err := os.Lstat(pubPath); errors.Is(err, fs.ErrNotExist) {
		pubData, err := id.Public().MarshalFile()
		if err != nil {
			return nil, false, fmt.Errorf("load identity: %w", err)
		}
		if err := identityWriteFile(dir, IdentityPubFile, pubData, 0o644, true); err != nil {
			return nil, false, fmt.Errorf("load identity: restore public key file: %w", err)
		}
	}
	return id, false, nil
}

// PublicKeys is what a portal registers for a runner and what
// `pqrepro verify --key FILE` pins: the public halves of an Identity.
type PublicKeys struct {
	// Ed25519 is the 32-byte RFC 8032 public key (base64 in JSON).
	Ed25519 []byte `json:"ed25519"`
	// MLDSA65 is the 1952-byte FIPS 204 ML-DSA-65 public key (base64 in JSON).
	MLDSA65 []byte `json:"mldsa65"`
}

// Validate reports whether both keys are present and of the right length.
func (p PublicKeys) Validate() error {
	if len(p.Ed25519) != ed25519.PublicKeySize {
		return fmt.Errorf("ed25519 public key is %d bytes, want %d", len(p.Ed25519), ed25519.PublicKeySize)
	}
	if len(p.MLDSA65) != mldsa65.PublicKeySize {
		return fmt.Errorf("ml-dsa-65 public key is %d bytes, want %d", len(p.MLDSA65), mldsa65.PublicKeySize)
	}
	return nil
}

// Equal reports whether p and q hold the same two keys.
func (p PublicKeys) Equal(q PublicKeys) bool {
	return bytes.Equal(p.Ed25519, q.Ed25519) && bytes.Equal(p.MLDSA65, q.MLDSA65)
}

// Key ID prefixes, also the names used for the two signatures in errors.
const (
	SignerEd25519 = "ed25519"
	SignerMLDSA65 = "ml-dsa-65"
)

// KeyIDs returns the DSSE key IDs of the two keys, each the algorithm name, a
// colon and the lowercase hex of the first 16 bytes of the SHA-256 of the raw
// public key: "ed25519:<32 hex>" and "ml-dsa-65:<32 hex>". They are stable for
// a given key.
func (p PublicKeys) KeyIDs() (ed25519ID, mldsa65ID string) {
	e := sha256.Sum256(p.Ed25519)
	m := sha256.Sum256(p.MLDSA65)
	return SignerEd25519 + ":" + hex.EncodeToString(e[:16]), SignerMLDSA65 + ":" + hex.EncodeToString(m[:16])
}

// Fingerprint returns a short string identifying the key pair, for display:
// the first 10 bytes of SHA-256("pqrepro-keys-v1" || 0x00 || ed25519 || mldsa65)
// as lowercase hex in five dash-separated groups of four, e.g.
// "3f2a-9b1c-0d4e-77aa-1234". Both keys are of fixed length, so the
// concatenation is unambiguous for valid keys.
func (p PublicKeys) Fingerprint() string {
	h := sha256.New()
	h.Write([]byte("pqrepro-keys-v1\x00"))
	h.Write(p.Ed25519)
	h.Write(p.MLDSA65)
	x := hex.EncodeToString(h.Sum(nil)[:10])
	var parts []string
	for i := 0; i < len(x); i += 4 {
		parts = append(parts, x[i:i+4])
	}
	return strings.Join(parts, "-")
}

// ParsePublicKeys parses the runner.pub.json format: a JSON object with
// exactly the fields "ed25519" and "mldsa65", each base64 (standard alphabet,
// padded), and validates the keys.
func ParsePublicKeys(data []byte) (PublicKeys, error) {
	var p PublicKeys
	if len(data) > identityMaxFileBytes {
		return PublicKeys{}, fmt.Errorf("parse public keys: larger than %d bytes", identityMaxFileBytes)
	}
	if err := strictjson.Check(data, map[string]bool{"ed25519": true, "mldsa65": true}); err != nil {
		return PublicKeys{}, fmt.Errorf("parse public keys: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return PublicKeys{}, fmt.Errorf("parse public keys: %w", err)
	}
	if err := p.Validate(); err != nil {
		return PublicKeys{}, fmt.Errorf("parse public keys: %w", err)
	}
	return p, nil
}

// MarshalFile returns the runner.pub.json form of p: indented JSON with a
// trailing newline. It fails if p does not validate.
func (p PublicKeys) MarshalFile() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("encode public keys: %w", err)
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode public keys: %w", err)
	}
	return append(data, '\n'), nil
}
