package portal

import (
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// flashCookie carries a form's outcome across its POST → redirect → GET: set by the POST,
// read and cleared by the next page, never in the URL. It lives a minute, is HttpOnly and
// SameSite=Lax. A new token shown once (an enrolment or account token) travels in it too,
// limited to the path that shows it.
const flashCookie = "pqrepro_flash"

// flash is a form's outcome.
type flash struct {
	// Kind is "ok" or "error"; Msg the one-line message.
	Kind string `json:"k"`
	Msg  string `json:"m"`
	// Token and TokenKind: a secret shown once on the page redirected to.
	Token     string `json:"t,omitempty"`
	TokenKind string `json:"tk,omitempty"`
	// RunID is a run a submission published; Refused why a submission was refused.
	RunID   int64  `json:"r,omitempty"`
	Refused string `json:"x,omitempty"`
	// Already: the submitted bundle was published before, as RunID.
	Already bool `json:"a,omitempty"`
}

// redirectWithFlash ends a POST: it keeps f for the next page and redirects (303) to path.
func (s *Server) redirectWithFlash(c echo.Context, path string, f flash) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https"})
	return c.Redirect(http.StatusSeeOther, path)
}

// takeFlash returns the request's flash (the zero flash when none) and clears it, once per
// request.
func takeFlash(c echo.Context) flash {
	if f, ok := c.Get("flash").(flash); ok {
		return f
	}
	var f flash
	ck, err := c.Cookie(flashCookie)
	if err == nil && ck.Value != "" {
		if b, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil && len(b) <= 4096 {
			if json.Unmarshal(b, &f) != nil {
				f = flash{}
			}
		}
		c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	}
	if f.Kind != "ok" && f.Kind != "error" {
		f.Kind = "ok"
	}
	c.Set("flash", f)
	return f
}
