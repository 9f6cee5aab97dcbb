package portalclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
)

// NewSubmitter returns a portal client for a community member's tools: it authenticates
// with the member's submitter token rather than a runner token.
func NewSubmitter(baseURL, token string) *Client {
	return &Client{BaseURL: baseURL, token: token}
}

// RegisterKeys registers id's public keys under the submitter's account, proving possession
// of both private keys over a challenge from the portal, so bundles signed with them can be
// submitted. It returns the keys' fingerprint; ErrConflict wraps the portal's reason when the
// keys are already registered (to this or another account) or enrolled by a runner.
func (p *Client) RegisterKeys(ctx context.Context, id *identity.Identity, label string) (string, error) {
	ch, err := p.Challenge(ctx, identity.PurposeSubmitterKeys)
	if err != nil {
		return "", err
	}
	reg, err := KeyRegistrationFor(id, ch.Challenge, label)
	if err != nil {
		return "", err
	}
	var out protocol.KeyRegistrationResponse
	_, err = p.doJSON(ctx, http.MethodPost, protocol.RouteSubmitKeys, reg, &out)
	return out.Fingerprint, err
}

// KeyRegistrationFor signs a portal's submitter-keys challenge (hex) with id's keys.
func KeyRegistrationFor(id *identity.Identity, challenge, label string) (protocol.KeyRegistration, error) {
	raw, err := hex.DecodeString(challenge)
	if err != nil {
		return protocol.KeyRegistration{}, fmt.Errorf("challenge %q is not hex: %w", challenge, err)
	}
	proof, err := id.ProvePossession(identity.PurposeSubmitterKeys, raw)
	if err != nil {
		return protocol.KeyRegistration{}, err
	}
	return protocol.KeyRegistration{PublicKeys: id.Public(), Label: label, Proof: proof}, nil
}

// Submit uploads a signed bundle (.tar.gz bytes) as a community result. The portal verifies
// it against the keys registered under the token before publishing; a refusal (unknown key,
// bad signature, digest mismatch, malformed archive) is ErrRefused with the portal's reason.
func (p *Client) Submit(ctx context.Context, bundle []byte) (protocol.CompleteResponse, error) {
	var resp protocol.CompleteResponse
	_, err := p.do(ctx, http.MethodPost, protocol.RouteSubmissions, bytes.NewReader(bundle), "application/gzip", nil, &resp)
	return resp, err
}
