package portal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
)

// apiChallenge issues a proof-of-possession challenge: POST /api/v1/challenges with a
// ChallengeRequest. The challenge is stored in the database, so any portal process sharing
// it accepts the proof, once, until it expires (Config.ChallengeTTL).
func (s *Server) apiChallenge(c echo.Context) error {
	var req protocol.ChallengeRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.Purpose != identity.PurposeRunnerEnrol && req.Purpose != identity.PurposeSubmitterKeys {
		return fault.New(fault.Invalid, "purpose must be %s or %s", identity.PurposeRunnerEnrol, identity.PurposeSubmitterKeys)
	}
	ch, err := s.issueChallenge(c.Request().Context(), req.Purpose)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ch)
}

func (s *Server) issueChallenge(ctx context.Context, purpose string) (protocol.ChallengeResponse, error) {
	b := make([]byte, identity.ChallengeBytes)
	if _, err := rand.Read(b); err != nil {
		return protocol.ChallengeResponse{}, err
	}
	exp := time.Now().Add(s.cfg.ChallengeTTL).UTC()
	ch := protocol.ChallengeResponse{Challenge: hex.EncodeToString(b), Purpose: purpose, ExpiresAt: exp}
	if err := s.store.IssueChallenge(ctx, ch.Challenge, purpose, exp); err != nil {
		return protocol.ChallengeResponse{}, err
	}
	return ch, nil
}

// checkPossession spends the proof's challenge (once, whatever follows) and checks both
// signatures over it for purpose and keys. Every refusal is unauthorized, with its reason.
func (s *Server) checkPossession(ctx context.Context, purpose string, keys identity.PublicKeys, p identity.Possession) error {
	ch, err := hex.DecodeString(p.Challenge)
	if p.Challenge == "" || err != nil || len(ch) != identity.ChallengeBytes {
		return fault.New(fault.Unauthorized, "proof of possession: missing or malformed challenge (want the %d-byte hex challenge from %s, signed with both keys)",
			identity.ChallengeBytes, protocol.RouteChallenge)
	}
	if err := s.store.UseChallenge(ctx, p.Challenge, purpose); err != nil {
		return err
	}
	if err := identity.VerifyPossession(purpose, ch, keys, p); err != nil {
		if errors.Is(err, identity.ErrNoPossession) {
			return fault.Wrap(fault.Unauthorized, err, "%s", err.Error())
		}
		return fault.Wrap(fault.Invalid, err, "%s", err.Error())
	}
	return nil
}
