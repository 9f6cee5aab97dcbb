package portal

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
	"pqrepro/templates"
)

// whenSet is when(t) for a time that is usually unset: "" when zero.
func whenSet(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return when(t)
}

// adminView lists what the administrator can create and revoke: enrolment tokens, runners,
// submitter keys and accounts.
func (s *Server) adminView(c echo.Context) (templates.AdminView, error) {
	ctx := c.Request().Context()
	v := templates.AdminView{Page: s.page(c, "Administration")}
	toks, err := s.store.EnrolTokens(ctx)
	if err != nil {
		return v, err
	}
	now := s.now()
	for _, t := range toks {
		_, why := t.Usable(now)
		expires := "never"
		if !t.Expires.IsZero() {
			expires = when(t.Expires)
		}
		v.Tokens = append(v.Tokens, templates.TokenRow{ID: t.ID, Label: t.Label, When: when(t.CreatedAt), Revoked: !t.RevokedAt.IsZero(), Runners: t.Runners,
			Uses: strconv.Itoa(t.Uses) + " of " + strconv.Itoa(t.MaxUses), Expires: expires, Unusable: why})
	}
	users, err := s.store.Users(ctx)
	if err != nil {
		return v, err
	}
	for _, u := range users {
		v.Users = append(v.Users, templates.UserRow{ID: u.ID, Name: u.Name, Role: u.Role, When: when(u.CreatedAt), Revoked: whenSet(u.RevokedAt)})
	}
	rs, err := s.store.Runners(ctx)
	if err != nil {
		return v, err
	}
	v.Runners = runnerRows(rs, s.cfg.ConnectedWithin)
	for i, r := range rs {
		v.Runners[i].Revoked, v.Runners[i].Released = whenSet(r.RevokedAt), r.ReenrolAllowed
	}
	keys, err := s.store.SubmitterKeys(ctx, 0)
	if err != nil {
		return v, err
	}
	for _, k := range keys {
		v.Keys = append(v.Keys, templates.KeyRow{ID: k.ID, Fingerprint: k.Fingerprint, Label: k.Label, Owner: k.UserName, When: when(k.CreatedAt), Revoked: whenSet(k.RevokedAt)})
	}
	var full []string
	for _, l := range []struct {
		name   string
		n, max int
	}{{"enrolment tokens", len(toks), store.EnrolTokenList}, {"runners", len(rs), store.AdminList}, {"submitter keys", len(keys), store.AdminList}, {"accounts", len(users), store.AdminList}} {
		if l.n >= l.max {
			full = append(full, fmt.Sprintf("%s (the newest %d)", l.name, l.max))
		}
	}
	if len(full) > 0 {
		v.ListNote = "Shown in part: " + strings.Join(full, ", ") + "."
	}
	if f := takeFlash(c); f.Token != "" {
		v.NewToken, v.NewTokenKind = f.Token, f.TokenKind
		c.Set(pageSecretKey, true) // a token shown once: this page is not compressed
	}
	return v, nil
}

func (s *Server) adminPage(c echo.Context) error {
	v, err := s.adminView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, templates.AdminPage(v))
}

// createEnrolToken makes an enrolment token: single-use unless the form gives a use count
// (1 to 1000), expiring after the form's hours (0 or empty: never).
// A refused form shows the page again with the input kept and the error beside its field.
func (s *Server) createEnrolToken(c echo.Context) error {
	form := templates.EnrolTokenForm{Label: strings.TrimSpace(c.FormValue("label")), Uses: strings.TrimSpace(c.FormValue("uses")),
		Hours: strings.TrimSpace(c.FormValue("hours"))}
	tok, err := s.enrolTokenForm(c, form)
	if err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.adminView(c)
			form.Error = fe
			v.EnrolForm = form
			return templates.AdminPage(v), err
		})
	}
	label := form.Label
	return s.redirectWithFlash(c, "/admin", flash{Kind: "ok", Msg: "Enrolment token created: copy it now, it is shown once.", Token: tok, TokenKind: "runner enrolment token for " + label})
}

// enrolTokenForm makes the enrolment token the form asks for and returns it.
func (s *Server) enrolTokenForm(c echo.Context, form templates.EnrolTokenForm) (string, error) {
	u, _ := currentUser(c)
	if form.Label == "" || len(form.Label) > 100 {
		return "", onField("label", fault.New(fault.Invalid, "give the token a label of at most 100 characters"))
	}
	opt := store.EnrolTokenOptions{MaxUses: 1}
	if form.Uses != "" {
		n, err := strconv.Atoi(form.Uses)
		if err != nil || n < 1 || n > 1000 {
			return "", onField("uses", fault.New(fault.Invalid, "uses: how many runners the token may enrol, 1 to 1000; got %q", form.Uses[:min(len(form.Uses), 40)]))
		}
		opt.MaxUses = n
	}
	if form.Hours != "" && form.Hours != "0" {
		h, err := strconv.ParseFloat(form.Hours, 64)
		if err != nil || h <= 0 || h > 24*366 {
			return "", onField("hours", fault.New(fault.Invalid, "hours: how long the token stays usable, more than 0 and at most a year (8784); empty for no expiry"))
		}
		opt.Expires = time.Now().Add(time.Duration(h * float64(time.Hour)))
	}
	tok := token.New("pqe")
	if _, err := s.store.CreateEnrolToken(c.Request().Context(), form.Label, token.Hash(tok), u.ID, opt); err != nil {
		return "", err
	}
	return tok, nil
}

func (s *Server) createUser(c echo.Context) error {
	name, role := strings.TrimSpace(c.FormValue("name")), c.FormValue("role")
	tok, err := s.CreateAccount(c.Request().Context(), name, role)
	if err != nil {
		return s.refuseForm(c, err, func(fe templates.FormError) (templ.Component, error) {
			v, err := s.adminView(c)
			v.AccountForm = templates.AccountForm{Name: name, Role: role, Error: fe}
			return templates.AdminPage(v), err
		})
	}
	return s.redirectWithFlash(c, "/admin", flash{Kind: "ok", Msg: "Account created: copy its token now, it is shown once.", Token: tok, TokenKind: role + " token for " + name})
}

// An adminAction is one of the administrator's revocations (or a runner's release).
type adminAction int

const (
	revokeEnrolToken adminAction = iota
	revokeRunner
	releaseRunner
	revokeKey
	revokeUser
)

// adminRevoke handles POST /admin/<things>/:id/revoke (and a runner's release), then shows
// the admin page again.
func (s *Server) adminRevoke(a adminAction) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "id")
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		do := map[adminAction]func(context.Context, int64) error{
			revokeEnrolToken: s.store.RevokeEnrolToken, revokeRunner: s.store.RevokeRunner, releaseRunner: s.store.AllowReenrol,
			revokeKey: s.store.RevokeSubmitterKey, revokeUser: s.store.RevokeUser,
		}[a]
		if err := do(ctx, id); err != nil {
			return err
		}
		u, _ := currentUser(c)
		s.log.Info("administrator action", "action", c.Path(), "id", id, "by", u.ID)
		if a == revokeRunner || a == revokeKey {
			s.invalidate() // runs they signed are now flagged
		}
		msg := "Revoked."
		if a == releaseRunner {
			msg = "Released: the runner may re-enrol its keys once without its current token."
		}
		return s.redirectWithFlash(c, "/admin", flash{Kind: "ok", Msg: msg})
	}
}

// ReleaseRunnerKeys lets the runner holding the keys of fingerprint fp re-enrol once without
// its current token (the portal's own local runner, which serve vouches for as administrator).
func (s *Server) ReleaseRunnerKeys(ctx context.Context, fp string) error {
	return s.store.AllowReenrolKeys(ctx, fp)
}
