// Package fault gives portal errors a kind (invalid, not found, conflict, unauthorized,
// forbidden, too large, internal) so one error handler can map them to status codes, and a
// message that is safe to show to a user. Internal causes stay in the wrapped error and are
// only logged.
package fault

import (
	"errors"
	"fmt"
	"net/http"

	"pqrepro/artifacts/protocol"
)

// Kind classifies an error for the HTTP layer.
type Kind int

// Error kinds.
const (
	Internal Kind = iota
	Invalid
	NotFound
	Conflict
	Unauthorized
	Forbidden
	TooLarge
	// LeaseLost: a runner's request names a job it no longer holds (a conflict).
	LeaseLost
	// UnknownRunner: a runner token that is not accepted (unauthorized).
	UnknownRunner
	// BundleRefused: an uploaded bundle did not verify or does not answer its job (invalid).
	BundleRefused
	// RateLimited: too many requests from one client.
	RateLimited
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not found"
	case Conflict:
		return "conflict"
	case Unauthorized:
		return "unauthorized"
	case Forbidden:
		return "forbidden"
	case TooLarge:
		return "too large"
	case LeaseLost:
		return "lease lost"
	case UnknownRunner:
		return "unknown runner"
	case BundleRefused:
		return "bundle refused"
	case RateLimited:
		return "rate limited"
	}
	return "internal"
}

// Protocol is the kind as the runner protocol names it (protocol.ErrorKind).
func (k Kind) Protocol() protocol.ErrorKind { return protocol.ErrorKind(k.String()) }

// Status is the HTTP status code of the kind.
func (k Kind) Status() int {
	switch k {
	case Invalid, BundleRefused:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case Conflict, LeaseLost:
		return http.StatusConflict
	case Unauthorized, UnknownRunner:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case RateLimited:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// Error is an error with a kind and a public message. Err, when set, is the cause; it is
// logged but never shown.
type Error struct {
	Kind Kind
	// Msg is safe to show to the user.
	Msg string
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with a public message.
func New(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k with a public message and a private cause.
func Wrap(k Kind, err error, format string, args ...any) error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...), Err: err}
}

// KindOf returns the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Message returns the public message of the first *Error in err's chain, or "" when err
// carries none (an internal error, whose text must not be shown).
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Kind != Internal {
		return e.Msg
	}
	return ""
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }
