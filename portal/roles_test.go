package portal_test

import (
	"context"
	"net/http"
	"net/url"
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

// A firmware build can be withdrawn by its uploader or the administrator, with a reason;
// another account cannot; the re-run form stops offering it and a job naming it is refused
// with the reason. Before, a bad build could not be withdrawn at all.
func TestFirmwareWithdrawal(t *testing.T) {
	p := portaltest.Start(t, nil)
	startAgent(t, p)
	ctx := context.Background()
	member := func(name string) *browser {
		tok, err := p.Server.CreateAccount(ctx, name, store.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, p.URL)
		b.signIn(tok)
		return b
	}
	owner, other := member("fw-owner"), member("fw-other")
	owner.get("/firmware")
	fields := map[string]string{"board_class": "host", "toolchain": "gcc 14", "libraries": "mlkem 1",
		"source_url": "https://example.org/fw", "source_commit": "0123abcd"}
	if code, _, body := owner.upload("/firmware", fields, "file", "bad.elf", armELF(700)); code != http.StatusSeeOther {
		t.Fatalf("upload: %d %s", code, body)
	}
	fw, err := p.Server.Store().FirmwareBuilds(ctx, "host")
	if err != nil || len(fw) != 1 {
		t.Fatalf("builds: %v %v", fw, err)
	}
	digest := fw[0].Digest
	withdraw := "/firmware/" + digest + "/withdraw"
	other.get("/firmware")
	if code, _, body := other.post(withdraw, url.Values{"reason": {"mine now"}}); code != http.StatusForbidden || !strings.Contains(body, "uploaded") {
		t.Errorf("another member withdraws the build: %d %s", code, body)
	}
	if _, body := owner.get("/firmware"); !strings.Contains(body, `action="`+withdraw+`"`) {
		t.Error("the uploader is not offered the withdraw form")
	}
	if code, _, _ := owner.post(withdraw, url.Values{"reason": {"  "}}); code != http.StatusBadRequest {
		t.Errorf("withdrawal without a reason: %d", code)
	}
	owner.get("/firmware")
	if code, _, body := owner.post(withdraw, url.Values{"reason": {"miscompiled: wrong stack size"}}); code != http.StatusSeeOther {
		t.Fatalf("withdraw: %d %s", code, body)
	}
	if _, body := owner.get("/firmware"); !strings.Contains(body, "miscompiled: wrong stack size") || !strings.Contains(body, "badge withdrawn") {
		t.Error("the firmware page does not say the build is withdrawn and why")
	}
	if _, body := owner.get("/experiments/paper001/mlkem"); strings.Contains(body, `value="`+digest+`"`) {
		t.Error("the re-run form still offers the withdrawn build")
	}
	code, _, body := owner.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}, "firmware": {digest}, "iterations": {"2"}})
	if code != http.StatusBadRequest || !strings.Contains(body, "withdrawn") || !strings.Contains(body, "miscompiled: wrong stack size") {
		t.Errorf("a job naming the withdrawn build: %d %s", code, body)
	}
	if code, _ := owner.get("/firmware/" + digest); code != http.StatusOK {
		t.Errorf("a withdrawn build's file: %d, want it still downloadable", code)
	}
}
