package portal

import (
	"net/http"

	"pqrepro/portal/fault"
)

// statusOf is the one table from the portal's error kinds to HTTP status codes; a kind not
// in it (internal) is a 500. The runner's client reads the kind from the answer's body
// (protocol.ProtocolError), not from the status.
var statusOf = map[fault.Kind]int{
	fault.Invalid:       http.StatusBadRequest,
	fault.BundleRefused: http.StatusBadRequest,
	fault.NotFound:      http.StatusNotFound,
	fault.Conflict:      http.StatusConflict,
	fault.LeaseLost:     http.StatusConflict,
	fault.Unauthorized:  http.StatusUnauthorized,
	fault.UnknownRunner: http.StatusUnauthorized,
	fault.Forbidden:     http.StatusForbidden,
	fault.TooLarge:      http.StatusRequestEntityTooLarge,
	fault.RateLimited:   http.StatusTooManyRequests,
}

// kindOfStatus is the kind of an error the HTTP framework answered with a status of its own
// (a route that does not exist, a refused CSRF token, a body over the limit).
func kindOfStatus(status int) fault.Kind {
	switch status {
	case http.StatusNotFound:
		return fault.NotFound
	case http.StatusForbidden:
		return fault.Forbidden
	case http.StatusRequestEntityTooLarge:
		return fault.TooLarge
	}
	return fault.Invalid
}
