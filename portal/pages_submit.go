package portal

// Community submissions and key registration.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

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
	fh, err := c.FormFile("bundle")
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "choose a bundle file")
	}
	if fh.Size > s.cfg.MaxBundleBytes {
		return fault.New(fault.TooLarge, "the bundle is larger than the limit of %s", bytesHuman(s.cfg.MaxBundleBytes))
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
// `pqrepro keys --prove CHALLENGE` over the challenge the submit page showed.
func (s *Server) registerKeys(c echo.Context) error {
	ctx := c.Request().Context()
	u, _ := currentUser(c)
	fh, err := c.FormFile("registration")
	if err != nil {
		return fault.Wrap(fault.Invalid, err, "choose the key registration file from pqrepro keys --prove")
	}
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("open uploaded key registration: %w", err)
	}
	defer f.Close()
	data, err := readLimited(f, 64<<10)
	if err != nil {
		return err
	}
	var req protocol.KeyRegistration
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fault.Wrap(fault.Invalid, err, "key registration file: %s", err.Error())
	}
	if l := strings.TrimSpace(c.FormValue("label")); l != "" {
		req.Label = l
	}
	if _, err := s.addSubmitterKeys(ctx, u, req); err != nil {
		return err
	}
	return s.redirectWithFlash(c, "/submit", flash{Kind: "ok", Msg: "Keys registered."})
}
