package portal_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
)

// The roles on /admin say a submitter "submits bundles, re-runs" and a member "re-runs,
// firmware"; a submitter could upload firmware all the same. Firmware is code the lab's boards
// run: a submitter is refused with the reason, and the page says so instead of offering the
// form; a member uploads. A malformed source commit says what a commit id looks like.
func TestFirmwareUploadFollowsTheRoles(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	fields := map[string]string{"board_class": "qemu-mps2-an386", "toolchain": "arm-none-eabi-gcc 14", "libraries": "mlkem 1",
		"source_url": "https://example.org/fw", "source_commit": "0123abcd"}
	for _, tc := range []struct {
		role string
		code int
		page string
	}{
		{store.RoleSubmitter, http.StatusForbidden, "Your account is a submitter"},
		{store.RoleMember, http.StatusSeeOther, `id="fw-upload"`},
	} {
		tok, err := p.Server.CreateAccount(ctx, "fw-"+tc.role, tc.role)
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, p.URL)
		b.signIn(tok)
		if _, body := b.get("/firmware"); !strings.Contains(body, tc.page) {
			t.Errorf("%s: /firmware lacks %q", tc.role, tc.page)
		}
		code, _, body := b.upload("/firmware", fields, "file", "fw-"+tc.role+".elf", armELF(512+len(tc.role)))
		if code != tc.code {
			t.Errorf("%s uploads firmware: %d, want %d\n%s", tc.role, code, tc.code, body)
		}
		if tc.code == http.StatusForbidden && !strings.Contains(body, "cannot upload firmware") {
			t.Errorf("%s refusal gives no reason: %s", tc.role, body)
		}
		if tc.role == store.RoleMember {
			bad := map[string]string{}
			for k, v := range fields {
				bad[k] = v
			}
			bad["source_commit"] = "main"
			b.get("/firmware")
			if _, _, body := b.upload("/firmware", bad, "file", "fw2.elf", armELF(600)); !strings.Contains(body, "7 to 64 lower-case hexadecimal digits") {
				t.Errorf("a malformed commit gives no hint: %s", body)
			}
		}
	}
}
