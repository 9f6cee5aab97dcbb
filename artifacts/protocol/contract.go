package protocol

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"pqrepro/artifacts"
)

// Routes of the runner protocol, relative to the portal's address. The portal registers its
// handlers under exactly these; the runner's client builds its requests from them with
// ProtocolPath. ":id" is a job id, ":index" a log chunk's index.
const (
	RouteEnrol       = "/api/v1/runners/enrol"
	RouteLease       = "/api/v1/jobs/lease"
	RouteHeartbeat   = "/api/v1/jobs/:id/heartbeat"
	RouteLog         = "/api/v1/jobs/:id/log/:index"
	RouteComplete    = "/api/v1/jobs/:id/complete"
	RouteFail        = "/api/v1/jobs/:id/fail"
	RouteSubmissions = "/api/v1/submissions"
	RouteSubmitKeys  = "/api/v1/submitters/keys"
	// RouteChallenge issues a one-time proof-of-possession challenge.
	RouteChallenge = "/api/v1/challenges"
)

// ProtocolPath fills a route's :id and :index.
func ProtocolPath(route string, jobID int64, index ...int) string {
	p := strings.Replace(route, ":id", strconv.FormatInt(jobID, 10), 1)
	if len(index) > 0 {
		p = strings.Replace(p, ":index", strconv.Itoa(index[0]), 1)
	}
	return p
}

// Portal is the runner protocol as a runner uses it: enrol, lease (long poll), heartbeat,
// append log chunks by index, complete with a bundle or fail with a reason. The runner's
// HTTP client implements it over the routes above (the local runner of `serve` uses the same
// client on loopback); every error it returns carries an ErrorKind (KindOf), and callers
// decide on the kind, never on a status code.
type Portal interface {
	// Challenge asks for a one-time challenge to prove possession of the keys with.
	Challenge(ctx context.Context, purpose string) (ChallengeResponse, error)
	Enrol(ctx context.Context, req EnrolRequest) (EnrolResponse, error)
	// Lease waits up to wait for a job; it returns nil and no error when none came.
	Lease(ctx context.Context, wait time.Duration) (*Lease, error)
	Heartbeat(ctx context.Context, jobID int64, req HeartbeatRequest) error
	// AppendLog stores chunk index of the job's log; sending the same index again is harmless.
	AppendLog(ctx context.Context, jobID int64, leaseID string, index int, chunk []byte) error
	Complete(ctx context.Context, jobID int64, leaseID string, bundle []byte) (CompleteResponse, error)
	Fail(ctx context.Context, jobID int64, req FailRequest) error
}

// ErrorKind is what went wrong with a protocol request, as the portal states it in
// ProtocolError.Kind. The portal's error mapping emits exactly these strings.
type ErrorKind string

// Error kinds. The first seven are generic; the rest name what the runner must do.
const (
	KindInternal     ErrorKind = "internal"
	KindInvalid      ErrorKind = "invalid"
	KindNotFound     ErrorKind = "not found"
	KindConflict     ErrorKind = "conflict"
	KindUnauthorized ErrorKind = "unauthorized"
	KindForbidden    ErrorKind = "forbidden"
	KindTooLarge     ErrorKind = "too large"
	// KindLeaseLost: the job is no longer leased to this runner under this lease (it expired
	// and was re-queued, or finished); stop working on it.
	KindLeaseLost ErrorKind = "lease lost"
	// KindUnknownRunner: the runner token is not (or no longer) accepted; enrol again.
	KindUnknownRunner ErrorKind = "unknown runner"
	// KindBundleRefused: the bundle did not verify or does not answer the job; sending it
	// again cannot help.
	KindBundleRefused ErrorKind = "bundle refused"
	// KindRateLimited: too many requests from this client; retry after RetryAfter.
	KindRateLimited ErrorKind = "rate limited"
	// KindUnavailable: the portal could not be reached or answered without a kind (a proxy's
	// error page); retrying later may help.
	KindUnavailable ErrorKind = "unavailable"
)

// ErrorKinds lists every error kind, in the order they are declared. KindUnavailable is the
// client's own (the portal never answers with it).
func ErrorKinds() []ErrorKind {
	return []ErrorKind{KindInternal, KindInvalid, KindNotFound, KindConflict, KindUnauthorized, KindForbidden, KindTooLarge,
		KindLeaseLost, KindUnknownRunner, KindBundleRefused, KindRateLimited, KindUnavailable}
}

// Permanent reports whether repeating the same request cannot succeed (invalid input, a
// refused bundle, a lost lease, a refused token).
func (k ErrorKind) Permanent() bool {
	switch k {
	case KindInvalid, KindNotFound, KindConflict, KindUnauthorized, KindForbidden, KindTooLarge, KindLeaseLost, KindUnknownRunner, KindBundleRefused:
		return true
	}
	return false
}

// RemoteError is a failed protocol request as the client sees it: the operation, the
// portal's kind and message, and for KindRateLimited how long to wait.
type RemoteError struct {
	// Op is the request ("POST /api/v1/jobs/7/heartbeat").
	Op   string
	Kind ErrorKind
	// Message is the portal's public message (or the transport's error).
	Message string
	// RetryAfter is the portal's Retry-After, 0 when it gave none.
	RetryAfter time.Duration
	// Err is the transport error for KindUnavailable, nil otherwise.
	Err error
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Kind, e.Message)
}

func (e *RemoteError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrLeaseLost) and the other kind sentinels match by kind.
func (e *RemoteError) Is(target error) bool {
	var k kindSentinel
	if errors.As(target, &k) {
		if k.kind == kindRefused {
			switch e.Kind {
			case KindInvalid, KindNotFound, KindForbidden, KindTooLarge, KindBundleRefused:
				return true
			}
			return false
		}
		return k.kind == e.Kind || (k.kind == KindConflict && e.Kind == KindLeaseLost) ||
			(k.kind == KindUnauthorized && e.Kind == KindUnknownRunner) || (k.kind == KindInvalid && e.Kind == KindBundleRefused)
	}
	return false
}

type kindSentinel struct{ kind ErrorKind }

// kindRefused is ErrRefused's pseudo-kind: any refusal of the request's content.
const kindRefused ErrorKind = "refused"

func (k kindSentinel) Error() string { return string(k.kind) }

// Sentinels to test a protocol error's kind with errors.Is. A more specific kind matches its
// general one too: a lost lease is a conflict, an unknown runner unauthorized, a refused
// bundle invalid.
var (
	ErrProtocolInvalid      error = kindSentinel{KindInvalid}
	ErrProtocolConflict     error = kindSentinel{KindConflict}
	ErrProtocolUnauthorized error = kindSentinel{KindUnauthorized}
	ErrLeaseLost            error = kindSentinel{KindLeaseLost}
	ErrUnknownRunner        error = kindSentinel{KindUnknownRunner}
	ErrBundleRefused        error = kindSentinel{KindBundleRefused}
	ErrRateLimited          error = kindSentinel{KindRateLimited}
	// ErrRefused matches every refusal of what was sent (invalid, not found, forbidden, too
	// large, bundle refused): retrying the same request cannot help.
	ErrRefused error = kindSentinel{kindRefused}
)

// KindOf returns the kind of the first RemoteError in err's chain; KindUnavailable when there
// is none (the request never got a portal's answer).
func KindOf(err error) ErrorKind {
	var re *RemoteError
	if errors.As(err, &re) {
		return re.Kind
	}
	return KindUnavailable
}

// Limits on a heartbeat's progress report.
const (
	// MaxProgressText bounds Progress.Current.
	MaxProgressText = 256
	// MaxProgressIterations bounds Progress.Requested (a manifest's spec.iterations is at most
	// 10,000,000).
	MaxProgressIterations = artifacts.MaxSamplesPerCell
)

// Validate checks a progress report: counts non-negative, cells done at most the total (at
// most MaxCells), the iteration at most the requested iterations, and a short current cell.
func (p Progress) Validate() error {
	var errs []error
	if p.CellsTotal < 0 || p.CellsTotal > artifacts.MaxCells {
		errs = append(errs, fmt.Errorf("cellsTotal must be between 0 and %d, got %d", artifacts.MaxCells, p.CellsTotal))
	}
	if p.CellsDone < 0 || p.CellsDone > max(p.CellsTotal, 0) {
		errs = append(errs, fmt.Errorf("cellsDone must be between 0 and cellsTotal (%d), got %d", p.CellsTotal, p.CellsDone))
	}
	if p.Requested < 0 || p.Requested > MaxProgressIterations {
		errs = append(errs, fmt.Errorf("requested must be between 0 and %d, got %d", MaxProgressIterations, p.Requested))
	}
	if p.Iteration < 0 || p.Iteration > max(p.Requested, 0) {
		errs = append(errs, fmt.Errorf("iteration must be between 0 and requested (%d), got %d", p.Requested, p.Iteration))
	}
	if len(p.Current) > MaxProgressText || !utf8.ValidString(p.Current) {
		errs = append(errs, fmt.Errorf("current must be UTF-8 of at most %d bytes", MaxProgressText))
	}
	return errors.Join(errs...)
}
