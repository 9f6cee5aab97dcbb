package portal

// Community submissions and key registration.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/templates"
)

func (s *Server) submitView(c echo.Context) (templates.SubmitView, error) {
	u, signed := currentUser(c)
	v := templates.SubmitView{Page: s.page(c, "Submit"), SignedIn: signed, MaxBytes: bytesHuman(s.cfg.MaxBundleBytes)}
	f := takeFlash(c)
	v.Refused, v.RunID, v.Already = f.Refused, f.RunID, f.Already
	if signed {
		keys, err := s.store.SubmitterKeys(c.Request().Context(), u.ID)
		if err != nil {
			return v, err
		}
		for _, k := range keys {
			v.Keys = append(v.Keys, templates.KeyRow{ID: k.ID, Fingerprint: k.Fingerprint, Label: k.Label, Owner: k.UserName, When: when(k.CreatedAt), Revoked: whenSet(k.RevokedAt)})
		}
		ch, err := s.rpc.Challenge(c.Request().Context(), identity.PurposeSubmitterKeys)
		if err != nil {
			return v, err
		}
		v.Challenge = ch.Challenge
	}
	return v, nil
}

func (s *Server) submitPage(c echo.Context) error {
	v, err := s.submitView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.SubmitPage(v))
}

// submitBundle verifies an uploaded community bundle and publishes it, or shows why not.
func (s *Server) submitBundle(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	refuse := func(err error) error {
		return s.refuseForm(c, onField("bundle", err), func(fe templates.FormError) (templ.Component, error) {
			v, err := s.submitView(c)
			v.BundleError = fe
			return templates.SubmitPage(v), err
		})
	}
	fh, err := c.FormFile("bundle")
	if err != nil {
		return refuse(fault.Wrap(fault.Invalid, err, "choose a bundle file"))
	}
	if fh.Size > s.cfg.MaxBundleBytes {
		return refuse(fault.New(fault.TooLarge, "the bundle is larger than the limit of %s", bytesHuman(s.cfg.MaxBundleBytes)))
	}
	file, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded bundle: %w", err)
	}
	defer file.Close()
	var runID int64
	var already bool
	data, err := readLimited(file, s.cfg.MaxBundleBytes)
	if err == nil {
		runID, already, err = s.submitCommunity(ctx, u, data)
	}
	if err != nil {
		if fault.KindOf(err) == fault.Internal {
			return err
		}
		why := fault.Message(err)
		s.log.Info("submission refused", "by", u.Name, "reason", why)
		return s.redirectWithFlash(c, "/submit", flash{Kind: "error", Refused: why})
	}
	return s.redirectWithFlash(c, "/submit", flash{Kind: "ok", RunID: runID, Already: already})
}

// registerKeys registers keys from the form: a key registration made by
// `pqrepro keys --prove CHALLENGE` over the challenge the submit page showed. A refused
// registration shows the page again with the label kept and the error beside its field.
func (s *Server) registerKeys(c echo.Context) error {
	form := templates.KeysForm{Label: strings.TrimSpace(c.FormValue("label"))}
	if err := s.registerKeysForm(c, form.Label); err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.submitView(c)
			form.Error = fe
			v.KeysForm = form
			return templates.SubmitPage(v), err
		})
	}
	return s.redirectWithFlash(c, "/submit", flash{Kind: "ok", Msg: "Keys registered."})
}

// registerKeysForm registers the uploaded key registration under label ("": the file's).
func (s *Server) registerKeysForm(c echo.Context, label string) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	if len(label) > 200 {
		return onField("label", fault.New(fault.Invalid, "the label is %d characters; at most 200", len(label)))
	}
	if label != "" {
		if err := artifacts.CheckName("key label", label, 200); err != nil {
			return onField("label", fault.Wrap(fault.Invalid, err, "%s", err.Error()))
		}
	}
	fh, err := c.FormFile("registration")
	if err != nil {
		return onField("registration", fault.Wrap(fault.Invalid, err, "choose the key registration file from pqrepro keys --prove"))
	}
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded key registration: %w", err)
	}
	defer f.Close()
	data, err := readLimited(f, 64<<10)
	if err != nil {
		return onField("registration", err)
	}
	var req protocol.KeyRegistration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return onField("registration", fault.Wrap(fault.Invalid, err, "key registration file: %s", err.Error()))
	}
	if label != "" {
		req.Label = label
	}
	_, err = s.addSubmitterKeys(ctx, u, req)
	return onField("registration", err)
}
