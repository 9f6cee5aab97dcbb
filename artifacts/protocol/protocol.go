// Package protocol is the runner protocol: the routes under /api/v1, the JSON types a runner
// and the portal exchange (enrolment, leases, heartbeats, results), the Portal interface both
// the portal's service and the runner's client implement, and the one vocabulary of error
// kinds. It holds no HTTP code: the portal maps error kinds to statuses, the client back.
package protocol

import (
	"slices"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
)

// The runner protocol's wire types (JSON over HTTP under /api/v1). Both the portal (server)
// and the runner agent (client) use them, so they live in the contract package.

// ProtocolHeaderLease carries the lease id on requests whose body is not JSON (log chunks,
// bundle uploads).
const ProtocolHeaderLease = "X-Pqrepro-Lease"

// BoardInfo is one board a runner offers, as reported at enrolment.
type BoardInfo struct {
	// Name is the board's name in the runner's hardware map ("host").
	Name string `json:"name"`
	// Class is the board class jobs ask for ("host", "qemu-mps2-an386", "esp32c6").
	Class string `json:"class"`
	// Driver is host, qemu or serial.
	Driver artifacts.Driver `json:"driver"`
	// Available is false when the board is known but cannot run now; Reason says why.
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// FirmwareOnly marks a board that is unavailable on its own (its firmware is not built
	// or not mapped) but can run a firmware build a job brings with it.
	FirmwareOnly bool `json:"firmwareOnly,omitempty"`
	// Methods are the timing methods the board can run (in-process, process-per-operation,
	// openssl-cli); empty from runners that predate capabilities, meaning in-process only.
	Methods []artifacts.Method `json:"methods,omitempty"`
	// Kinds are the experiment kinds the board can run; empty means every kind.
	Kinds []artifacts.Kind `json:"kinds,omitempty"`
	// Algorithms is a board's declared algorithm subset (a firmware too small for the whole
	// table, e.g. ML-KEM-512 alone on a 16 KiB Cortex-M0); empty means no declared limit.
	Algorithms []string `json:"algorithms,omitempty"`
	// ClassStatus is verified or declared (see BoardIdentity.ClassStatus).
	ClassStatus string `json:"classStatus,omitempty"`
}

// CanRun reports whether the board runs experiments with the timing method. Boards from
// runners that predate capabilities (no Methods) run everything but openssl-cli.
func (b BoardInfo) CanRun(method artifacts.Method) bool {
	if len(b.Methods) == 0 {
		return method != artifacts.MethodOpenSSLCLI
	}
	return slices.Contains(b.Methods, method)
}

// Capabilities is what a runner can run beyond its boards' classes: the openssl it would use
// for openssl-cli experiments, and why not when it has none that qualifies.
type Capabilities struct {
	// OpenSSL is the version `openssl version` printed ("OpenSSL 3.5.4 30 Sep 2025"), empty
	// when the runner has no openssl.
	OpenSSL string `json:"openssl,omitempty"`
	// OpenSSLUsable is true when that openssl is 3.5 or later (ML-KEM and ML-DSA built in).
	OpenSSLUsable bool `json:"opensslUsable"`
	// OpenSSLReason says why openssl-cli experiments cannot run here, when they cannot.
	OpenSSLReason string `json:"opensslReason,omitempty"`
}

// Route of the proof-of-possession challenge: POST with a ChallengeRequest.

// ChallengeRequest asks the portal for a fresh challenge to sign for purpose
// (PurposeRunnerEnrol or PurposeSubmitterKeys).
type ChallengeRequest struct {
	Purpose string `json:"purpose"`
}

// ChallengeResponse is a portal-issued challenge: 32 random bytes (lowercase hex), usable
// once for its purpose until ExpiresAt.
type ChallengeResponse struct {
	Challenge string    `json:"challenge"`
	Purpose   string    `json:"purpose"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// KeyRegistration registers a submitter's runner keys under the account of the bearer token
// (POST /api/v1/submitters/keys), with a proof for PurposeSubmitterKeys.
type KeyRegistration struct {
	PublicKeys identity.PublicKeys `json:"publicKeys"`
	Label      string              `json:"label,omitempty"`
	Proof      identity.Possession `json:"proof"`
}

// KeyRegistrationResponse names the registered keys.
type KeyRegistrationResponse struct {
	Fingerprint string `json:"fingerprint"`
}

// EnrolRequest registers a runner with an enrolment token and its public keys.
type EnrolRequest struct {
	// Token is the enrolment token from the administrator; a runner re-enrolling with its
	// CurrentToken does not need one.
	Token string `json:"token,omitempty"`
	// CurrentToken is the runner token this runner holds from its last enrolment: re-enrolling
	// keys the portal already knows needs it (or the administrator's release).
	CurrentToken string `json:"currentToken,omitempty"`
	// Proof proves possession of both private keys (purpose PurposeRunnerEnrol).
	Proof      identity.Possession `json:"proof"`
	Name       string              `json:"name"`
	Version    string              `json:"version"`
	PublicKeys identity.PublicKeys `json:"publicKeys"`
	Boards     []BoardInfo         `json:"boards"`
	// Capabilities say what the runner can run (openssl-cli needs OpenSSL 3.5 or later).
	Capabilities Capabilities `json:"capabilities"`
}

// EnrolResponse gives the runner its id and the bearer token for every later call.
type EnrolResponse struct {
	RunnerID    int64  `json:"runnerId"`
	RunnerToken string `json:"runnerToken"`
	// LeaseSeconds is how long a lease lasts without a heartbeat.
	LeaseSeconds int `json:"leaseSeconds"`
}

// Lease is a job handed to a runner until ExpiresAt unless extended by heartbeats.
type Lease struct {
	JobID   int64  `json:"jobId"`
	LeaseID string `json:"leaseId"`
	Attempt int    `json:"attempt"`
	// Experiment is <paper>/<name>; Manifest the exact manifest YAML to run.
	Experiment string `json:"experiment"`
	Manifest   string `json:"manifest"`
	// ManifestID is the manifest's identity; the bundle must carry the same.
	ManifestID string `json:"manifestId"`
	// BoardClass is the board class the job must run on.
	BoardClass string `json:"boardClass"`
	// Firmware is the digest of the firmware build to flash, "" when none; FirmwareURL
	// downloads it (relative to the portal).
	Firmware     string    `json:"firmware,omitempty"`
	FirmwareURL  string    `json:"firmwareUrl,omitempty"`
	ExpiresAt    time.Time `json:"expiresAt"`
	LeaseSeconds int       `json:"leaseSeconds"`
	// Nonce is a random value issued with this lease; the runner signs it into the bundle's
	// JobBinding, and completion refuses a bundle without it.
	Nonce string `json:"nonce"`
	// PortalURL is the portal's configured public URL, which the runner signs into the
	// bundle's JobBinding.
	PortalURL string `json:"portalUrl"`
}

// Binding is the JobBinding a bundle produced under this lease must carry.
func (l Lease) Binding() *attest.JobBinding {
	return &attest.JobBinding{Portal: l.PortalURL, JobID: l.JobID, LeaseID: l.LeaseID, Attempt: l.Attempt, Nonce: l.Nonce}
}

// Progress is what a runner reports with each heartbeat.
type Progress struct {
	CellsDone  int    `json:"cellsDone"`
	CellsTotal int    `json:"cellsTotal"`
	Current    string `json:"current,omitempty"`
	Iteration  int    `json:"iteration"`
	Requested  int    `json:"requested"`
}

// HeartbeatRequest extends a lease and reports progress.
type HeartbeatRequest struct {
	LeaseID  string   `json:"leaseId"`
	Progress Progress `json:"progress"`
}

// HeartbeatResponse says until when the lease now holds.
type HeartbeatResponse struct {
	ExpiresAt time.Time `json:"expiresAt"`
}

// FailRequest ends a lease with a failure; Log holds the run's log when it was not streamed.
type FailRequest struct {
	LeaseID string `json:"leaseId"`
	Reason  string `json:"reason"`
	Log     string `json:"log,omitempty"`
}

// CompleteResponse names the published run.
type CompleteResponse struct {
	RunID int64  `json:"runId"`
	URL   string `json:"url"`
	// AlreadyPublished: a submission of a bundle published before; RunID is that run and
	// nothing new was stored.
	AlreadyPublished bool `json:"alreadyPublished,omitempty"`
}

// ProtocolError is the body of every error response under /api/v1.
type ProtocolError struct {
	// Kind is one of the ErrorKind values (invalid, not found, conflict, unauthorized,
	// forbidden, too large, internal, lease lost, unknown runner, bundle refused, rate limited).
	Kind  string `json:"kind"`
	Error string `json:"error"`
}
