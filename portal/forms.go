package portal

// Refused forms: the page is shown again with the input kept and the error beside its field.

import (
	"errors"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
	"pqrepro/templates"
)

// fieldError is an error about one input of a posted form.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// onField marks err (nil stays nil) as being about the form's input named field.
func onField(field string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldError{field: field, err: err}
}

// formRefusal is err as a form's error to show beside its field (onField), with the page's
// status; ok is false when err is not the input's fault (internal, or who may post the form
// or how often), which the error handler shows as a page of its own, and for a nil err.
func formRefusal(err error) (templates.FormError, int, bool) {
	kind := fault.KindOf(err)
	status, known := statusOf[kind]
	switch {
	case !known, kind == fault.Unauthorized, kind == fault.Forbidden, kind == fault.RateLimited:
		return templates.FormError{}, 0, false
	}
	var fe *fieldError
	field := ""
	if errors.As(err, &fe) {
		field = fe.field
	}
	return templates.FormError{Field: field, Msg: fault.Message(err)}, status, true
}

// refuseForm answers a form post that failed with err: the page again, rendered by page with
// the form's error (the handler keeps the input in its view), or, when err is not about the
// input, err for the error handler.
func (s *Server) refuseForm(c echo.Context, err error, page func(templates.FormError) (templ.Component, error)) error {
	fe, status, ok := formRefusal(err)
	if !ok {
		return err
	}
	comp, perr := page(fe)
	if perr != nil {
		return perr
	}
	return s.render(c, status, comp)
}
