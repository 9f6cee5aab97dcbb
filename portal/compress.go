package portal

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Pages are compressed (gzip) when the client accepts it. Compression beside a secret
// opens a BREACH hole (an attacker who can reflect text into a page learns the secret from
// the compressed sizes), so the secrets pages carry are handled first:
//
//   - the CSRF token appears in every page only masked, with a fresh random mask per
//     response (maskedPrefix + base64url(mask || mask XOR token)): its bytes differ in every
//     response, so sizes tell nothing about it. unmaskCSRF restores the token before the
//     CSRF check; an unmasked token (a script's X-CSRF-Token) still works.
//   - a page that shows a token once (a new enrolment or account token) is not compressed.
//
// Session tokens never appear in a page.
const maskedPrefix = "m1."

// maskToken masks a CSRF token with a fresh random mask.
func maskToken(tok string) string {
	b := make([]byte, 2*len(tok))
	rand.Read(b[:len(tok)])
	for i := range len(tok) {
		b[len(tok)+i] = b[i] ^ tok[i]
	}
	return maskedPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// unmaskToken returns the token a masked value carries; a value that is not masked is
// returned as it is.
func unmaskToken(v string) string {
	rest, ok := strings.CutPrefix(v, maskedPrefix)
	if !ok {
		return v
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil || len(b)%2 != 0 || len(b) == 0 || len(b) > 512 {
		return ""
	}
	n := len(b) / 2
	out := make([]byte, n)
	subtle.XORBytes(out, b[:n], b[n:])
	return string(out)
}

// unmaskCSRF restores the masked CSRF token of a form or header before the CSRF check.
func unmaskCSRF(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			return next(c)
		}
		if h := r.Header.Get("X-CSRF-Token"); h != "" {
			r.Header.Set("X-CSRF-Token", unmaskToken(h))
		}
		ct := r.Header.Get("Content-Type")
		var err error
		switch {
		case strings.HasPrefix(ct, "multipart/form-data"):
			err = r.ParseMultipartForm(32 << 20)
		case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
			err = r.ParseForm()
		default:
			return next(c)
		}
		if err != nil {
			return err
		}
		if v := r.Form.Get("_csrf"); v != "" {
			r.Form.Set("_csrf", unmaskToken(v))
		}
		if r.PostForm != nil && r.PostForm.Get("_csrf") != "" {
			r.PostForm.Set("_csrf", unmaskToken(r.PostForm.Get("_csrf")))
		}
		if r.MultipartForm != nil && len(r.MultipartForm.Value["_csrf"]) > 0 {
			r.MultipartForm.Value["_csrf"] = []string{unmaskToken(r.MultipartForm.Value["_csrf"][0])}
		}
		return next(c)
	}
}

// writePage sends a rendered page: the CSRF token masked afresh, gzip-compressed when the
// client accepts it and the page shows no one-time secret.
func (s *Server) writePage(c echo.Context, status int, page []byte) error {
	if capture, _ := c.Get(cacheCaptureKey).(bool); capture {
		return c.HTMLBlob(status, page) // cachePages masks and compresses (pagecache.go)
	}
	if tok, _ := c.Get("csrf").(string); tok != "" {
		page = bytes.ReplaceAll(page, []byte(tok), []byte(maskToken(tok)))
	}
	h := c.Response().Header()
	h.Add("Vary", "Accept-Encoding")
	if secret, _ := c.Get(pageSecretKey).(bool); secret || len(page) < 1024 || !acceptsGzip(c.Request()) {
		return c.HTMLBlob(status, page)
	}
	h.Set(echo.HeaderContentEncoding, "gzip")
	return c.Blob(status, echo.MIMETextHTMLCharsetUTF8, gzipBytes(page))
}

// pageSecretKey marks a request whose page shows a one-time secret (not compressed).
const pageSecretKey = "page-secret"

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}

// staticCache lets browsers keep the stylesheet, script and icon for an hour.
func staticCache(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Cache-Control", "public, max-age=3600")
		return next(c)
	}
}
