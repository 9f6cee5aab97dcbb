// Package attest signs and verifies result bundles: a DSSE envelope over an in-toto Statement
// v1 whose subjects are the bundle's content files, signed with both keys of an identity. A
// bundle verifies only when both signatures do and every file's digest matches.
package attest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/internal/strictjson"
)

// How a bundle is attested
//
// Files[FileAttestation] is a DSSE envelope (JSON, one line) whose payload is
// an in-toto Statement v1. The statement has one subject per content file, in
// ContentFiles order (then the optional tls.csv when the bundle holds it), named by the file name with its SHA-256 digest, and a
// Predicate of type PredicateType. The envelope carries exactly two
// signatures over the DSSE pre-authentication encoding
//
//	"DSSEv1" SP len(payloadType) SP payloadType SP len(payload) SP payload
//
// (lengths in ASCII decimal): an Ed25519 signature (RFC 8032, pure) and an
// ML-DSA-65 signature (FIPS 204 pure ML-DSA, hedged signing, empty context
// string; the PAE already binds the payload type, so no context is added).
// Each signature's keyid is the matching PublicKeys.KeyIDs value. A bundle
// verifies only when both signatures do.

// PredicateType is the in-toto predicate type of a bench-result attestation as Sign writes
// it: v2, which binds a portal runner's bundle to its job (Predicate.Job).
const PredicateType = "https://pqrepro.dev/attestation/bench-result/v2"

// PredicateTypeV1 is the predicate type of bundles signed before job binding. Verify still
// reads it (Verification.Legacy); such a bundle carries no job and is never a runner result.
const PredicateTypeV1 = "https://pqrepro.dev/attestation/bench-result/v1"

// PayloadType is the DSSE payload type of the attestation envelope.
const PayloadType = "application/vnd.in-toto+json"

// StatementType is the in-toto Statement v1 type.
const StatementType = "https://in-toto.io/Statement/v1"

// Assurance origins: who ran it.
const (
	OriginPortalRunner = "portal-runner" // a runner registered with the portal
	OriginCommunity    = "community"     // a submitted bundle
	OriginLocal        = "local"         // run locally, never submitted
)

// Predicate is the bench-result predicate carried in the in-toto Statement.
type Predicate struct {
	// Summary is filled by the caller: a short summary of result.json. It
	// may be null.
	Summary json.RawMessage `json:"summary"`
	// Runner identifies the software that ran and signed; Sign fills its
	// PublicKeys.
	Runner RunnerRef `json:"runner"`
	// Assurance says how the numbers were obtained and by whom.
	Assurance Assurance `json:"assurance"`
	// CreatedAt is when the bundle was signed; Sign sets it to the current
	// time (UTC, whole seconds) if it is zero.
	CreatedAt time.Time `json:"createdAt"`
	// Job binds the bundle to the portal job it answers (v2). It is required when
	// Assurance.Origin is OriginPortalRunner and absent otherwise; a v1 predicate never has it.
	Job *JobBinding `json:"job,omitempty"`
}

// JobBinding is what a portal runner signs about the job it ran: which portal, which job,
// which lease (attempt) and the lease's nonce, so the bundle answers that lease and no other.
type JobBinding struct {
	// Portal is the portal's configured public URL, as the lease gave it.
	Portal string `json:"portal"`
	// JobID is the job's id on that portal.
	JobID int64 `json:"jobId"`
	// LeaseID and Attempt identify the lease the job ran under.
	LeaseID string `json:"leaseId"`
	Attempt int    `json:"attempt"`
	// Nonce is the random value the portal issued with the lease.
	Nonce string `json:"nonce"`
}

// Validate checks that every field of the binding is set and within MaxTextField.
func (j JobBinding) Validate() error {
	switch {
	case j.Portal == "" || len(j.Portal) > artifacts.MaxTextField:
		return errors.New("job binding: portal is empty or too long")
	case j.JobID <= 0:
		return fmt.Errorf("job binding: job id %d is not positive", j.JobID)
	case j.LeaseID == "" || len(j.LeaseID) > 200:
		return errors.New("job binding: lease id is empty or too long")
	case j.Attempt <= 0:
		return fmt.Errorf("job binding: attempt %d is not positive", j.Attempt)
	case len(j.Nonce) < 16 || len(j.Nonce) > 200:
		return errors.New("job binding: nonce is missing or not 16 to 200 characters")
	}
	return nil
}

// Validate checks the runner, assurance and summary of a predicate.
func (p Predicate) Validate() error {
	if err := p.Runner.Validate(); err != nil {
		return fmt.Errorf("predicate: %w", err)
	}
	if err := p.Assurance.Validate(); err != nil {
		return fmt.Errorf("predicate: %w", err)
	}
	if len(p.Summary) > 0 && !json.Valid(p.Summary) {
		return errors.New("predicate: summary is not valid JSON")
	}
	if p.CreatedAt.IsZero() {
		return errors.New("predicate: createdAt is missing")
	}
	switch {
	case p.Assurance.Origin == OriginPortalRunner && p.Job == nil:
		return errors.New("predicate: a portal-runner bundle must carry its job binding")
	case p.Assurance.Origin != OriginPortalRunner && p.Job != nil:
		return fmt.Errorf("predicate: a %s bundle carries no job binding", p.Assurance.Origin)
	case p.Job != nil:
		if err := p.Job.Validate(); err != nil {
			return fmt.Errorf("predicate: %w", err)
		}
	}
	return nil
}

// RunnerRef names the runner software and the keys it signed with.
type RunnerRef struct {
	// Name of the runner, e.g. "pqrepro-runner".
	Name string `json:"name"`
	// Version of the runner software.
	Version string `json:"version"`
	// PublicKeys are the signing identity's public keys.
	PublicKeys identity.PublicKeys `json:"publicKeys"`
}

// Validate checks that the runner has a name and valid public keys.
func (r RunnerRef) Validate() error {
	if strings.TrimSpace(r.Name) == "" {
		return errors.New("runner name is empty")
	}
	if err := r.PublicKeys.Validate(); err != nil {
		return fmt.Errorf("runner public keys: %w", err)
	}
	return nil
}

// Assurance says how a result was measured and who ran it.
type Assurance struct {
	// Level is "host" (the runner's own CPU), "emulated" (QEMU,
	// instruction counts) or "hardware" (a real board): artifacts.AssuranceHost,
	// AssuranceEmulated or AssuranceHardware.
	Level artifacts.Level `json:"level"`
	// Origin is OriginPortalRunner, OriginCommunity or OriginLocal.
	Origin string `json:"origin"`
}

// Validate checks that level and origin are known values.
func (a Assurance) Validate() error {
	switch a.Level {
	case artifacts.AssuranceHost, artifacts.AssuranceEmulated, artifacts.AssuranceHardware:
	default:
		return fmt.Errorf("assurance level %q is not one of \"host\", \"emulated\", \"hardware\"", a.Level)
	}
	switch a.Origin {
	case OriginPortalRunner, OriginCommunity, OriginLocal:
	default:
		return fmt.Errorf("assurance origin %q is not one of %q, %q, %q", a.Origin, OriginPortalRunner, OriginCommunity, OriginLocal)
	}
	return nil
}

// Statement is an in-toto Statement v1 with the bench-result predicate.
type Statement struct {
	// Type is StatementType.
	Type string `json:"_type"`
	// Subject lists the content files with their digests.
	Subject []Subject `json:"subject"`
	// PredicateType is PredicateType.
	PredicateType string `json:"predicateType"`
	// Predicate is the bench-result predicate.
	Predicate Predicate `json:"predicate"`
}

// Subject is one attested file.
type Subject struct {
	// Name is the file name within the bundle.
	Name string `json:"name"`
	// Digest maps an algorithm to a hex digest; this package writes and
	// requires "sha256".
	Digest map[string]string `json:"digest"`
}

// Envelope is a DSSE envelope.
type Envelope struct {
	// PayloadType is PayloadType.
	PayloadType string `json:"payloadType"`
	// Payload is the serialized Statement, base64 (standard alphabet, padded).
	Payload string `json:"payload"`
	// Signatures are the Ed25519 and the ML-DSA-65 signature, in that order.
	Signatures []Signature `json:"signatures"`
}

// Signature is one DSSE signature.
type Signature struct {
	// KeyID is one of the values of PublicKeys.KeyIDs.
	KeyID string `json:"keyid"`
	// Sig is the signature over the PAE, base64 (standard alphabet, padded).
	Sig string `json:"sig"`
}

// attestPAE returns the DSSE v1 pre-authentication encoding of a payload.
func attestPAE(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(payload)))
	b.WriteByte(' ')
	b.Write(payload)
	return b.Bytes()
}

// Sign attests bundle b's content files with id and stores the envelope in
// Files[FileAttestation], replacing any earlier one. It sets
// p.Runner.PublicKeys to id.Public(), fills a zero p.CreatedAt and a nil
// p.Summary (as null), and fails if p does not validate, if a content file is
// missing (naming it) or if the bundle holds a file of another name.
func Sign(b *artifacts.Bundle, id *identity.Identity, p Predicate) error {
	return sign(b, id, p, PredicateType)
}

// SignLegacy signs like Sign but with the v1 predicate (PredicateTypeV1, no job binding),
// as builds before job binding did. It exists so the refusal of legacy bundles as runner
// results can be tested end to end; nothing in pqrepro signs with it.
func SignLegacy(b *artifacts.Bundle, id *identity.Identity, p Predicate) error {
	if p.Job != nil {
		return errors.New("sign bundle: a v1 predicate has no job binding")
	}
	return sign(b, id, p, PredicateTypeV1)
}

func sign(b *artifacts.Bundle, id *identity.Identity, p Predicate, predicateType string) error {
	if id == nil {
		return errors.New("sign bundle: no identity")
	}
	if b.Files == nil {
		b.Files = make(map[string][]byte)
	}
	for name := range b.Files {
		if !artifacts.KnownFile(name) {
			return fmt.Errorf("sign bundle: unexpected file %q", name)
		}
	}
	st := Statement{Type: StatementType, PredicateType: predicateType}
	for _, name := range b.AttestedNames() {
		data, ok := b.Files[name]
		if !ok {
			return fmt.Errorf("sign bundle: missing %s", name)
		}
		st.Subject = append(st.Subject, Subject{Name: name, Digest: map[string]string{"sha256": sha256Hex(data)}})
	}
	pub := id.Public()
	p.Runner.PublicKeys = pub
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now().UTC().Truncate(time.Second)
	}
	if len(p.Summary) == 0 {
		p.Summary = json.RawMessage("null")
	}
	check := p
	if predicateType == PredicateTypeV1 {
		check.Assurance.Origin = OriginLocal // the binding rule is v2's
	}
	if err := check.Validate(); err != nil {
		return fmt.Errorf("sign bundle: %w", err)
	}
	st.Predicate = p
	payload, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("sign bundle: encode statement: %w", err)
	}
	// Verify parses the statement strictly; refuse what it would refuse.
	if _, err := attestParseStatement(payload); err != nil {
		return fmt.Errorf("sign bundle: statement: %w", err)
	}
	if err := strictjson.Check(payload, nil); err != nil {
		return fmt.Errorf("sign bundle: statement: %w", err)
	}

	pae := attestPAE(PayloadType, payload)
	edSig, mlSig, err := id.SignBoth(pae)
	if err != nil {
		return fmt.Errorf("sign bundle: %w", err)
	}
	edID, mlID := pub.KeyIDs()
	env := Envelope{
		PayloadType: PayloadType,
		Payload:     base64.StdEncoding.EncodeToString(payload),
		Signatures: []Signature{
			{KeyID: edID, Sig: base64.StdEncoding.EncodeToString(edSig)},
			{KeyID: mlID, Sig: base64.StdEncoding.EncodeToString(mlSig)},
		},
	}
	data, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("sign bundle: encode envelope: %w", err)
	}
	data = append(data, '\n')
	if int64(len(data)) > artifacts.MaxFileBytes(artifacts.FileAttestation) {
		return fmt.Errorf("sign bundle: attestation is %d bytes, more than the limit of %d (summary too large?)", len(data), artifacts.MaxFileBytes(artifacts.FileAttestation))
	}
	b.Files[artifacts.FileAttestation] = data
	return nil
}

// Kinds of VerifyError.
const (
	VerifyKindDigest      = "digest"       // a content file's digest differs from the statement's
	VerifyKindMissingFile = "missing-file" // a content file or the attestation is missing
	VerifyKindExtraFile   = "extra-file"   // the bundle holds a file the statement does not cover
	VerifyKindSignature   = "signature"    // a signature is missing or does not verify
	VerifyKindKey         = "key"          // the signing keys are not the pinned keys
	VerifyKindFormat      = "format"       // the envelope or statement is malformed
)

// VerifyError says why a bundle did not verify. Kind is one of the
// VerifyKind constants; File names the file concerned (the attestation for
// envelope, signature and key problems); Signature is SignerEd25519 or
// SignerMLDSA65 for signature problems.
type VerifyError struct {
	Kind      string
	File      string
	Signature string
	Err       error
}

// Error reads like `result.json: sha256 mismatch (statement 3f2a…, file 9b1c…)`
// or `attestation.dsse.json: signature ml-dsa-65 does not verify`.
func (e *VerifyError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Signature != "" {
		b.WriteString("signature ")
		b.WriteString(e.Signature)
		b.WriteString(" ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Kind)
	}
	return b.String()
}

func (e *VerifyError) Unwrap() error { return e.Err }

// attestVerifyErr builds a *VerifyError.
func attestVerifyErr(kind, file, sig, format string, args ...any) *VerifyError {
	return &VerifyError{Kind: kind, File: file, Signature: sig, Err: fmt.Errorf(format, args...)}
}

// Verification is the result of a successful Verify.
type Verification struct {
	// Statement is the verified statement.
	Statement Statement
	// KeyFingerprint is the Fingerprint of the keys that signed.
	KeyFingerprint string
	// Pinned is true when the keys were given to Verify, false when they
	// were taken from the statement itself (which proves only that the
	// bundle is intact, not who made it).
	Pinned bool
	// Legacy is true for a v1 predicate (PredicateTypeV1): signed before job binding, so it
	// carries no job and cannot be a portal runner's result.
	Legacy bool
	// Checked lists, for people, the checks that held.
	Checked []string
}

// attestSig is one decoded envelope signature.
type attestSig struct {
	keyID string
	sig   []byte
}

// Verify checks the bundle offline: the envelope, both signatures, the keys,
// the statement and every content file's digest. pinned may be nil: then the
// keys inside the statement are used and the result says so (Pinned false).
// With pinned keys the signatures are checked against them before the
// statement is parsed.
//
// On failure the error is a *VerifyError naming what failed: a content file
// missing, extra, or with a differing digest (naming the file); a malformed
// envelope or statement ("format"); a signature missing or not verifying
// (naming "ed25519" or "ml-dsa-65"); or pinned keys that differ from the
// signing keys ("key mismatch").
func Verify(b *artifacts.Bundle, pinned *identity.PublicKeys) (*Verification, error) {
	if b == nil {
		return nil, attestVerifyErr(VerifyKindFormat, "", "", "no bundle")
	}
	v := &Verification{Pinned: pinned != nil}
	att, ok := b.Files[artifacts.FileAttestation]
	if !ok {
		return nil, attestVerifyErr(VerifyKindMissingFile, artifacts.FileAttestation, "", "missing from the bundle (unsigned bundle)")
	}
	payload, sigs, err := attestParseEnvelope(att)
	if err != nil {
		return nil, err
	}
	v.Checked = append(v.Checked, "envelope is well-formed DSSE with payload type "+PayloadType)
	for _, s := range []string{identity.SignerEd25519, identity.SignerMLDSA65} {
		if _, ok := sigs[s]; !ok {
			return nil, attestVerifyErr(VerifyKindSignature, artifacts.FileAttestation, s, "is missing")
		}
	}
	pae := attestPAE(PayloadType, payload)

	var (
		st   Statement
		keys identity.PublicKeys
	)
	if pinned != nil {
		keys = *pinned
		if err := keys.Validate(); err != nil {
			return nil, attestVerifyErr(VerifyKindKey, "", "", "pinned keys: %w", err)
		}
		if err := attestCheckSigs(keys, sigs, pae, true, v); err != nil {
			return nil, err
		}
		if st, err = attestParseStatement(payload); err != nil {
			return nil, err
		}
		if !st.Predicate.Runner.PublicKeys.Equal(keys) {
			return nil, attestVerifyErr(VerifyKindKey, artifacts.FileAttestation, "", "key mismatch: statement names keys %s, pinned keys are %s",
				st.Predicate.Runner.PublicKeys.Fingerprint(), keys.Fingerprint())
		}
		v.Checked = append(v.Checked, "signing keys are the pinned keys "+keys.Fingerprint())
	} else {
		// Without pinned keys the statement has to be read before its
		// signatures are checked, to learn the keys.
		if st, err = attestParseStatement(payload); err != nil {
			return nil, err
		}
		keys = st.Predicate.Runner.PublicKeys
		if err := attestCheckSigs(keys, sigs, pae, false, v); err != nil {
			return nil, err
		}
	}
	v.Statement = st
	ki, err := parsedKeys(keys) // parsed by attestCheckSigs: from the cache
	if err != nil {
		return nil, attestVerifyErr(VerifyKindFormat, artifacts.FileAttestation, "", "ml-dsa-65 public key: %w", err)
	}
	v.KeyFingerprint = ki.fingerprint
	v.Legacy = st.PredicateType == PredicateTypeV1
	v.Checked = append(v.Checked, "statement is in-toto v1 with predicate "+st.PredicateType)

	want := make(map[string]string, len(st.Subject))
	for _, s := range st.Subject {
		want[s.Name] = s.Digest["sha256"]
	}
	attested := artifacts.ContentNames()
	for _, name := range artifacts.OptionalNames() {
		if _, ok := want[name]; ok {
			attested = append(attested, name) // a subject the statement lists must be there
		}
	}
	for _, name := range attested {
		data, ok := b.Files[name]
		if !ok {
			return nil, attestVerifyErr(VerifyKindMissingFile, name, "", "missing from the bundle")
		}
		got := sha256Hex(data)
		if got != want[name] {
			return nil, attestVerifyErr(VerifyKindDigest, name, "", "sha256 mismatch (statement %s…, file %s…)", want[name][:12], got[:12])
		}
		v.Checked = append(v.Checked, fmt.Sprintf("%s sha256 %s matches the statement", name, got))
	}
	var extra []string
	for name := range b.Files {
		if name != artifacts.FileAttestation && !slices.Contains(attested, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, attestVerifyErr(VerifyKindExtraFile, extra[0], "", "not covered by the attestation")
	}
	v.Checked = append(v.Checked, "bundle holds no other files")
	return v, nil
}

// attestCheckSigs verifies both signatures over pae with keys, Ed25519
// first. A signature that does not verify is reported as a key mismatch when
// keys are pinned and the signature's keyid names another key, else as a
// signature failure. A signature that verifies under a keyid naming another
// key is a malformed envelope.
func attestCheckSigs(keys identity.PublicKeys, sigs map[string]attestSig, pae []byte, pinned bool, v *Verification) error {
	ki, err := parsedKeys(keys)
	if err != nil {
		return attestVerifyErr(VerifyKindFormat, artifacts.FileAttestation, "", "ml-dsa-65 public key: %w", err)
	}
	edID, mlID := ki.edID, ki.mlID
	checks := []struct {
		signer, keyID string
		verify        func(sig []byte) bool
	}{
		{identity.SignerEd25519, edID, func(sig []byte) bool {
			return len(sig) == ed25519.SignatureSize && ed25519.Verify(ed25519.PublicKey(keys.Ed25519), pae, sig)
		}},
		{identity.SignerMLDSA65, mlID, func(sig []byte) bool {
			return len(sig) == mldsa65.SignatureSize && mldsa65.Verify(ki.ml, pae, nil, sig)
		}},
	}
	for _, c := range checks {
		s := sigs[c.signer]
		if !c.verify(s.sig) {
			if pinned && s.keyID != c.keyID {
				return attestVerifyErr(VerifyKindKey, artifacts.FileAttestation, "", "key mismatch: %s signature is by %s, pinned key is %s", c.signer, s.keyID, c.keyID)
			}
			return attestVerifyErr(VerifyKindSignature, artifacts.FileAttestation, c.signer, "does not verify")
		}
		if s.keyID != c.keyID {
			return attestVerifyErr(VerifyKindFormat, artifacts.FileAttestation, "", "malformed envelope: %s signature has keyid %s, but was made by %s", c.signer, s.keyID, c.keyID)
		}
		v.Checked = append(v.Checked, fmt.Sprintf("%s signature verifies with %s", c.signer, c.keyID))
	}
	return nil
}

// attestParseEnvelope strictly parses a DSSE envelope: exact field names, no
// duplicate or unknown fields, canonical base64, the expected payload type,
// and at most one signature per signer with a well-formed keyid.
func attestParseEnvelope(data []byte) (payload []byte, sigs map[string]attestSig, err error) {
	bad := func(format string, args ...any) error {
		return attestVerifyErr(VerifyKindFormat, artifacts.FileAttestation, "", "malformed envelope: "+format, args...)
	}
	if int64(len(data)) > artifacts.MaxFileBytes(artifacts.FileAttestation) {
		return nil, nil, bad("%d bytes, more than the limit of %d", len(data), artifacts.MaxFileBytes(artifacts.FileAttestation))
	}
	allowed := map[string]bool{"payloadType": true, "payload": true, "signatures": true, "keyid": true, "sig": true}
	if err := strictjson.Check(data, allowed); err != nil {
		return nil, nil, bad("%w", err)
	}
	var env Envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, nil, bad("%w", err)
	}
	if env.PayloadType != PayloadType {
		return nil, nil, bad("payload type %q, want %q", env.PayloadType, PayloadType)
	}
	payload, err = attestDecodeBase64(env.Payload)
	if err != nil {
		return nil, nil, bad("payload: %w", err)
	}
	sigs = make(map[string]attestSig, 2)
	for i, s := range env.Signatures {
		signer, idHex, ok := strings.Cut(s.KeyID, ":")
		if !ok || (signer != identity.SignerEd25519 && signer != identity.SignerMLDSA65) {
			return nil, nil, bad("signature %d: unknown keyid %q", i, s.KeyID)
		}
		if len(idHex) != 32 || strings.ToLower(idHex) != idHex {
			return nil, nil, bad("signature %d: keyid %q is not %s:<32 lowercase hex>", i, s.KeyID, signer)
		}
		if _, err := hex.DecodeString(idHex); err != nil {
			return nil, nil, bad("signature %d: keyid %q: %w", i, s.KeyID, err)
		}
		if _, dup := sigs[signer]; dup {
			return nil, nil, bad("more than one %s signature", signer)
		}
		raw, err := attestDecodeBase64(s.Sig)
		if err != nil {
			return nil, nil, bad("signature %d (%s): %w", i, signer, err)
		}
		sigs[signer] = attestSig{keyID: s.KeyID, sig: raw}
	}
	return payload, sigs, nil
}

// attestDecodeBase64 decodes canonical standard base64: padded, zero
// padding bits, and (unlike base64.Encoding.Strict) no line breaks, so each
// value has exactly one encoding.
func attestDecodeBase64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("line break in base64")
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}

// attestParseStatement strictly parses and checks the statement: its type,
// predicate type, predicate, and exactly one sha256 subject per content file.
func attestParseStatement(payload []byte) (Statement, error) {
	bad := func(format string, args ...any) error {
		return attestVerifyErr(VerifyKindFormat, artifacts.FileAttestation, "", "malformed statement: "+format, args...)
	}
	var st Statement
	if err := strictjson.Check(payload, nil); err != nil {
		return Statement{}, bad("%w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return Statement{}, bad("%w", err)
	}
	if st.Type != StatementType {
		return Statement{}, bad("_type %q, want %q", st.Type, StatementType)
	}
	switch st.PredicateType {
	case PredicateType:
		if err := st.Predicate.Validate(); err != nil {
			return Statement{}, bad("%w", err)
		}
	case PredicateTypeV1:
		// v1 knew no job binding; its portal-runner bundles were unbound.
		if st.Predicate.Job != nil {
			return Statement{}, bad("a %s predicate has no job binding", PredicateTypeV1)
		}
		v1 := st.Predicate
		v1.Assurance.Origin = OriginLocal // the binding rule is v2's
		if err := v1.Validate(); err != nil {
			return Statement{}, bad("%w", err)
		}
	default:
		return Statement{}, bad("predicateType %q, want %q (or the legacy %q)", st.PredicateType, PredicateType, PredicateTypeV1)
	}
	seen := make(map[string]bool, len(st.Subject))
	for _, s := range st.Subject {
		if !slices.Contains(artifacts.ContentNames(), s.Name) && !slices.Contains(artifacts.OptionalNames(), s.Name) {
			return Statement{}, bad("subject %q is not a bundle content file", s.Name)
		}
		if seen[s.Name] {
			return Statement{}, bad("subject %q listed twice", s.Name)
		}
		seen[s.Name] = true
		d := s.Digest["sha256"]
		if _, err := hex.DecodeString(d); err != nil || len(d) != 64 || strings.ToLower(d) != d {
			return Statement{}, bad("subject %q: sha256 digest %q is not 64 lowercase hex digits", s.Name, d)
		}
	}
	for _, name := range artifacts.ContentNames() {
		if !seen[name] {
			return Statement{}, bad("no subject for %s", name)
		}
	}
	return st, nil
}

// sha256Hex is a subject digest: the lowercase hex SHA-256 of data, without a prefix.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
