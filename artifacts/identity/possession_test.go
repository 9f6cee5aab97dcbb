package identity

import (
	"bytes"
	"errors"
	"testing"
)

func TestPossession(t *testing.T) {
	id, err := GenerateIdentity()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := GenerateIdentity()
	ch := bytes.Repeat([]byte{7}, ChallengeBytes)
	p, err := id.ProvePossession(PurposeRunnerEnrol, ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyPossession(PurposeRunnerEnrol, ch, id.Public(), p); err != nil {
		t.Fatalf("valid proof refused: %v", err)
	}
	other2 := bytes.Repeat([]byte{8}, ChallengeBytes)
	mixed := p
	op, _ := other.ProvePossession(PurposeRunnerEnrol, ch)
	mixed.MLDSA65 = op.MLDSA65
	for name, tc := range map[string]struct {
		purpose string
		ch      []byte
		p       Possession
		keys    PublicKeys
	}{
		"other purpose":     {PurposeSubmitterKeys, ch, p, id.Public()},
		"other challenge":   {PurposeRunnerEnrol, other2, p, id.Public()},
		"other keys":        {PurposeRunnerEnrol, ch, p, other.Public()},
		"no signatures":     {PurposeRunnerEnrol, ch, Possession{}, id.Public()},
		"ml-dsa of another": {PurposeRunnerEnrol, ch, mixed, id.Public()},
		"ed25519 only":      {PurposeRunnerEnrol, ch, Possession{Ed25519: p.Ed25519}, id.Public()},
	} {
		t.Run(name, func(t *testing.T) {
			if err := VerifyPossession(tc.purpose, tc.ch, tc.keys, tc.p); !errors.Is(err, ErrNoPossession) {
				t.Errorf("got %v, want ErrNoPossession", err)
			}
		})
	}
	if _, err := id.ProvePossession("other", ch); err == nil {
		t.Error("unknown purpose accepted")
	}
	if _, err := id.ProvePossession(PurposeRunnerEnrol, ch[:5]); err == nil {
		t.Error("short challenge accepted")
	}
}
