package portal_test

import (
	"context"
	"strings"
	"testing"

	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/portaltest"
	"pqrepro/runner"
	"pqrepro/runner/portalclient"
)

// TestNamesReadAsTheyAre: a runner, board or account name carrying a right-to-left override
// or a zero-width character is refused, naming the character; plain names pass.
func TestNamesReadAsTheyAre(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	try := func(runnerName, boardName string) error {
		id, _ := identity.GenerateIdentity()
		_, err := runner.EnrolWithProof(ctx, &portalclient.Client{BaseURL: p.URL}, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: runnerName, Version: "test",
			PublicKeys: id.Public(), Boards: []protocol.BoardInfo{{Name: boardName, Class: "host", Driver: "host", Available: true}}})
		return err
	}
	if err := try("lab \u202Enur", "host"); err == nil || !strings.Contains(err.Error(), "U+202E") {
		t.Errorf("runner name with U+202E: %v", err)
	}
	if err := try("lab runner", "pico\u200B"); err == nil || !strings.Contains(err.Error(), "U+200B") {
		t.Errorf("board name with U+200B: %v", err)
	}
	if err := try("lab runner", "host"); err != nil {
		t.Errorf("a plain name: %v", err)
	}
	if _, err := p.Server.CreateAccount(ctx, "ad\u2060min", "submitter"); err == nil || !strings.Contains(err.Error(), "U+2060") {
		t.Errorf("account name with U+2060: %v", err)
	}
}
