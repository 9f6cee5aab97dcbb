package portal

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"pqrepro/artifacts/protocol"
)

// apiChallenge issues a proof-of-possession challenge: POST /api/v1/challenges with a
// ChallengeRequest (rpc.Service.Challenge).
func (s *Server) apiChallenge(c echo.Context) error {
	var req protocol.ChallengeRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	ch, err := s.rpc.Challenge(c.Request().Context(), req.Purpose)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ch)
}
