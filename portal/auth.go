package portal

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/portal/fault"
	"pqrepro/portal/store"
	"pqrepro/portal/token"
	"pqrepro/templates"
)

const sessionCookie = "pqrepro_session"

// loadUser puts the signed-in user, if any, into the request context as "user".
func (s *Server) loadUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			if u, err := s.store.UserBySession(c.Request().Context(), token.Hash(ck.Value)); err == nil {
				c.Set("user", u)
			}
		}
		return next(c)
	}
}

func currentUser(c echo.Context) (store.User, bool) {
	u, ok := c.Get("user").(store.User)
	return u, ok
}

func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, ok := currentUser(c); !ok {
			return fault.New(fault.Unauthorized, "sign in first: starting re-runs, uploading firmware and submitting need an account")
		}
		return next(c)
	}
}

// mayUploadFirmware says whether u's role may upload firmware: as the roles are described on
// /admin, members and the administrator do; a submitter publishes the bundles of its own runs
// but does not put code on the lab's boards.
func mayUploadFirmware(u store.User) bool {
	return u.Role == store.RoleMember || u.Role == store.RoleAdmin
}

// requireFirmwareRole admits a signed-in account whose role may upload firmware.
func (s *Server) requireFirmwareRole(next echo.HandlerFunc) echo.HandlerFunc {
	return s.requireUser(func(c echo.Context) error {
		if u, _ := currentUser(c); !mayUploadFirmware(u) {
			return fault.New(fault.Forbidden, "a %s account cannot upload firmware: firmware runs on the lab's boards, so members and the administrator upload it; ask the administrator for a member account", u.Role)
		}
		return next(c)
	})
}

func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, ok := currentUser(c)
		if !ok {
			return c.Redirect(http.StatusSeeOther, "/signin?next="+url.QueryEscape(c.Request().URL.Path))
		}
		if u.Role != store.RoleAdmin {
			return fault.New(fault.Forbidden, "only the administrator can do this")
		}
		return next(c)
	}
}

// requireRunner authenticates a runner by its bearer token and puts it in the context.
func (s *Server) requireRunner(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		tok, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
		if !ok || tok == "" {
			return fault.New(fault.Unauthorized, "missing runner token")
		}
		r, err := s.store.RunnerByToken(c.Request().Context(), token.Hash(tok))
		if err != nil {
			if fault.Is(err, fault.NotFound) {
				return fault.New(fault.UnknownRunner, "unknown runner token: enrol again")
			}
			return err
		}
		if err := s.store.TouchRunner(c.Request().Context(), r.ID); err != nil {
			s.log.Warn("record runner seen", "runner", r.ID, "err", err)
		}
		c.Set("runner", r)
		return next(c)
	}
}

// page builds the layout's view model for the request.
func (s *Server) page(c echo.Context, title string) templates.Page {
	p := templates.Page{Title: title, Path: url.QueryEscape(c.Request().URL.RequestURI())}
	if u, ok := currentUser(c); ok {
		p.User, p.Admin = u.Name, u.Role == store.RoleAdmin
	}
	p.CSRF, _ = c.Get("csrf").(string)
	if f := takeFlash(c); f.Msg != "" {
		p.Flash, p.FlashKind = f.Msg, f.Kind
	}
	return p
}

func (s *Server) signinPage(c echo.Context) error {
	return s.render(c, http.StatusOK, templates.SigninPage(templates.SigninView{Page: s.page(c, "Sign in"), Next: safeNext(c.QueryParam("next"))}))
}

func (s *Server) signin(c echo.Context) error {
	ctx := c.Request().Context()
	next := safeNext(c.FormValue("next"))
	u, err := s.store.UserByToken(ctx, token.Hash(strings.TrimSpace(c.FormValue("token"))))
	if err != nil {
		if fault.Is(err, fault.NotFound) {
			v := templates.SigninView{Page: s.page(c, "Sign in"), Next: next, Error: "That token is not valid."}
			return s.render(c, http.StatusUnauthorized, templates.SigninPage(v))
		}
		return err
	}
	tok := token.New("pqs")
	if err := s.store.CreateSession(ctx, token.Hash(tok), u.ID, time.Now().Add(s.cfg.SessionTTL)); err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: c.Scheme() == "https", MaxAge: int(s.cfg.SessionTTL.Seconds())})
	return s.redirectWithFlash(c, next, flash{Kind: "ok", Msg: "Signed in."})
}

func (s *Server) signout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		s.store.DeleteSession(c.Request().Context(), token.Hash(ck.Value))
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, "/")
}

// safeNext keeps redirects on this site.
func safeNext(next string) string {
	// Browsers drop tabs and newlines from a URL and read "\\" as "/", so "/\t/evil.example"
	// is "//evil.example" to them: only printable ASCII without a backslash is let through,
	// and it must be a path on this site.
	if len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
