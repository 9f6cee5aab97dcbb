// Package fault gives portal errors a kind and a message that is safe to show to a user.
// The kinds are the runner protocol's (protocol.ErrorKind: invalid, not found, conflict,
// unauthorized, forbidden, too large, internal, and the protocol's own), so the portal has
// one error vocabulary; only the portal's HTTP error handler maps a kind to a status code.
// Internal causes stay in the wrapped error and are only logged.
package fault

import (
	"errors"
	"fmt"

	"pqrepro/artifacts/protocol"
)

// Kind classifies an error: a kind of the runner protocol.
type Kind = protocol.ErrorKind

// Error kinds.
const (
	Internal     = protocol.KindInternal
	Invalid      = protocol.KindInvalid
	NotFound     = protocol.KindNotFound
	Conflict     = protocol.KindConflict
	Unauthorized = protocol.KindUnauthorized
	Forbidden    = protocol.KindForbidden
	TooLarge     = protocol.KindTooLarge
	// LeaseLost: a runner's request names a job it no longer holds (a conflict).
	LeaseLost = protocol.KindLeaseLost
	// UnknownRunner: a runner token that is not accepted (unauthorized).
	UnknownRunner = protocol.KindUnknownRunner
	// BundleRefused: an uploaded bundle did not verify or does not answer its job (invalid).
	BundleRefused = protocol.KindBundleRefused
	// RateLimited: too many requests from one client.
	RateLimited = protocol.KindRateLimited
)

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
