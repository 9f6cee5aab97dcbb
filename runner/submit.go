package runner

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"pqrepro/artifacts"
)

// NewSubmitter returns a portal client for a community member's tools: it authenticates
// with the member's submitter token rather than a runner token.
func NewSubmitter(baseURL, token string) *HTTPPortal {
	return &HTTPPortal{BaseURL: baseURL, token: token}
}

// RegisterKeys registers a runner's public keys under the submitter's account, so bundles
// signed with them can be submitted. It returns the keys' fingerprint; ErrRefused wraps the
// portal's reason (e.g. keys already registered).
func (p *HTTPPortal) RegisterKeys(ctx context.Context, keys artifacts.PublicKeys, label string) (string, error) {
	body, err := keys.MarshalFile()
	if err != nil {
		return "", err
	}
	var out struct {
		Fingerprint string `json:"fingerprint"`
	}
	_, err = p.do(ctx, http.MethodPost, artifacts.RouteSubmitKeys+"?label="+url.QueryEscape(label), bytes.NewReader(body), "application/json", nil, &out)
	return out.Fingerprint, err
}

// Submit uploads a signed bundle (.tar.gz bytes) as a community result. The portal verifies
// it against the keys registered under the token before publishing; a refusal (unknown key,
// bad signature, digest mismatch, malformed archive) is ErrRefused with the portal's reason.
func (p *HTTPPortal) Submit(ctx context.Context, bundle []byte) (artifacts.CompleteResponse, error) {
	var resp artifacts.CompleteResponse
	_, err := p.do(ctx, http.MethodPost, artifacts.RouteSubmissions, bytes.NewReader(bundle), "application/gzip", nil, &resp)
	return resp, err
}
