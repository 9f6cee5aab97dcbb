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

// refusedForm checks a refused form's answer: the status, the error shown beside the field
// it names (a field-error paragraph holding the message) and every submitted value kept.
func refusedForm(t *testing.T, what string, code int, body string, wantCode int, errText string, kept ...string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: status %d, want %d", what, code, wantCode)
	}
	i := strings.Index(body, `class="field-error"`)
	if i < 0 {
		i = strings.Index(body, `field-error"`)
	}
	if i < 0 || !strings.Contains(body[i:min(len(body), i+600)], errText) {
		t.Errorf("%s: the answer does not show %q beside the field", what, errText)
	}
	if strings.Contains(body, "<h1>Bad Request</h1>") {
		t.Errorf("%s: the answer is a bare error page", what)
	}
	for _, k := range kept {
		if !strings.Contains(body, k) {
			t.Errorf("%s: the answer does not keep the input %s", what, k)
		}
	}
}

// TestRefusedFormsKeepTheirInput posts bad input to each form of the portal and checks that
// the page comes back with the input kept and the error beside its field, not as a bare
// error page that loses what was typed.
func TestRefusedFormsKeepTheirInput(t *testing.T) {
	p := portaltest.Start(t, nil)
	enrol(t, p, "lab") // a runner offering the host board
	ctx := context.Background()
	admin := newBrowser(t, p.URL)
	admin.signIn(p.AdminToken)

	t.Run("re-run iterations", func(t *testing.T) {
		admin.get("/experiments/paper001/mlkem")
		code, _, body := admin.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"host"}, "iterations": {"100000"}})
		refusedForm(t, "re-run with too many iterations", code, body, http.StatusBadRequest, "iterations must be between 1 and",
			`name="iterations" min="1" max="`, `value="100000"`, `value="host" checked`)
		if !strings.Contains(body, `id="rerun-iterations-error"`) {
			t.Error("the iterations error is not beside the iterations field")
		}
	})
	t.Run("re-run board", func(t *testing.T) {
		admin.get("/experiments/paper001/mlkem")
		code, _, body := admin.post("/experiments/paper001/mlkem/jobs", url.Values{"board": {"esp32-nowhere"}, "iterations": {"7"}})
		refusedForm(t, "re-run on a board nobody offers", code, body, http.StatusBadRequest, `no connected runner offers board &#34;esp32-nowhere&#34;`, `value="7"`)
		if !strings.Contains(body, `id="rerun-board-error"`) {
			t.Error("the board error is not beside the board field")
		}
	})

	fields := map[string]string{"board_class": "qemu-mps2-an386", "toolchain": "arm-none-eabi-gcc 14.2", "libraries": "mlkem 1",
		"source_url": "https://example.org/fw-kept", "source_commit": "main"}
	keptFirmware := []string{`value="qemu-mps2-an386"`, `value="arm-none-eabi-gcc 14.2"`, `value="mlkem 1"`, `value="https://example.org/fw-kept"`}
	t.Run("firmware commit", func(t *testing.T) {
		admin.get("/firmware")
		code, _, body := admin.upload("/firmware", fields, "file", "fw.elf", armELF(512))
		refusedForm(t, "firmware with a branch name for a commit", code, body, http.StatusBadRequest, "7 to 64 lower-case hexadecimal digits",
			append(keptFirmware, `value="main"`, "choose the file and its metadata.json again")...)
		if !strings.Contains(body, `id="fw-commit-error"`) {
			t.Error("the commit error is not beside the commit field")
		}
	})
	t.Run("firmware file", func(t *testing.T) {
		good := map[string]string{}
		for k, v := range fields {
			good[k] = v
		}
		good["source_commit"] = "0123abcd"
		admin.get("/firmware")
		code, _, body := admin.upload("/firmware", good, "file", "notes.txt", []byte("not a firmware at all, a text file\n"))
		refusedForm(t, "firmware that is no ELF", code, body, http.StatusBadRequest, "firmware refused", append(keptFirmware, `value="0123abcd"`)...)
		if !strings.Contains(body, `id="fw-file-error"`) {
			t.Error("the file error is not beside the file field")
		}
	})
	t.Run("firmware withdrawal", func(t *testing.T) {
		good := map[string]string{}
		for k, v := range fields {
			good[k] = v
		}
		good["source_commit"] = "0123abcd"
		admin.get("/firmware")
		if code, _, body := admin.upload("/firmware", good, "file", "fw.elf", armELF(640)); code != http.StatusSeeOther {
			t.Fatalf("upload: %d %s", code, body)
		}
		fw, err := p.Server.Store().FirmwareBuilds(ctx, "qemu-mps2-an386")
		if err != nil || len(fw) == 0 {
			t.Fatalf("builds: %v %v", fw, err)
		}
		admin.get("/firmware")
		reason := "miscompiled " + strings.Repeat("x", 500)
		code, _, body := admin.post("/firmware/"+fw[0].Digest+"/withdraw", url.Values{"reason": {reason}})
		refusedForm(t, "withdrawal with a 512-character reason", code, body, http.StatusBadRequest, "at most 500", `value="`+reason+`"`)
	})
	t.Run("key registration", func(t *testing.T) {
		admin.get("/submit")
		code, _, body := admin.upload("/submit/keys", map[string]string{"label": "bench board west"}, "registration", "registration.json", []byte(`{"nonsense": true}`))
		refusedForm(t, "a registration that is not one", code, body, http.StatusBadRequest, "key registration file", `value="bench board west"`)
		if !strings.Contains(body, `id="keys-registration-error"`) {
			t.Error("the registration error is not beside the file field")
		}
	})
	t.Run("bundle", func(t *testing.T) {
		admin.get("/submit")
		code, _, body := admin.post("/submit", url.Values{})
		refusedForm(t, "a submission without a bundle", code, body, http.StatusBadRequest, "choose a bundle file")
		if !strings.Contains(body, `id="bundle-error"`) {
			t.Error("the bundle error is not beside the bundle field")
		}
	})
	t.Run("enrolment token", func(t *testing.T) {
		admin.get("/admin")
		code, _, body := admin.post("/admin/enrol-tokens", url.Values{"label": {"lab west"}, "uses": {"5000"}, "hours": {"12"}})
		refusedForm(t, "an enrolment token for 5000 runners", code, body, http.StatusBadRequest, "1 to 1000",
			`value="lab west"`, `value="5000"`, `value="12"`)
		if !strings.Contains(body, `id="enrol-uses-error"`) {
			t.Error("the uses error is not beside the uses field")
		}
	})
	t.Run("account", func(t *testing.T) {
		if _, err := p.Server.CreateAccount(ctx, "taken-name", store.RoleSubmitter); err != nil {
			t.Fatal(err)
		}
		admin.get("/admin")
		code, _, body := admin.post("/admin/users", url.Values{"name": {"taken-name"}, "role": {"member"}})
		refusedForm(t, "an account under a taken name", code, body, http.StatusConflict, "", `value="taken-name"`, `value="member" selected`)
		if !strings.Contains(body, `id="account-name-error"`) {
			t.Error("the name error is not beside the name field")
		}
	})
	t.Run("witness", func(t *testing.T) {
		admin.get("/admin")
		code, _, body := admin.post("/admin/log/witnesses", url.Values{"ed25519": {"not-a-key"}, "url": {"https://witness.example/kept"}})
		refusedForm(t, "a witness with a malformed key", code, body, http.StatusBadRequest, "", `value="not-a-key"`, `value="https://witness.example/kept"`)
	})
	t.Run("sign-in", func(t *testing.T) {
		anon := newBrowser(t, p.URL)
		anon.get("/signin?next=/firmware")
		code, _, body := anon.post("/signin", url.Values{"token": {"pqs-wrong"}, "next": {"/firmware"}})
		if code != http.StatusUnauthorized || !strings.Contains(body, "That token is not valid.") || !strings.Contains(body, `value="/firmware"`) {
			t.Errorf("a wrong token: %d; want the sign-in form again with the error and the return address", code)
		}
		if strings.Contains(body, "pqs-wrong") {
			t.Error("the sign-in page echoes the token typed: a secret is never sent back")
		}
	})
}

// TestRefusedListFiltersKeepTheirInput: a /runs or /jobs filter that is refused shows the
// filter form again with every value given and the error beside the field, and no list.
func TestRefusedListFiltersKeepTheirInput(t *testing.T) {
	p := portaltest.Start(t, nil)
	anon := newBrowser(t, p.URL)
	code, body := anon.get("/runs?algorithm=ML-KEM&submitter=lab-west&from=31%2F01%2F2026&to=2026-02-01&assurance=host")
	refusedForm(t, "/runs with a day-first date", code, body, http.StatusBadRequest, "is not a date",
		`value="ML-KEM"`, `value="lab-west"`, `value="31/01/2026"`, `value="2026-02-01"`, `value="host" selected`, "correct the filter above")
	if !strings.Contains(body, `id="filter-from-error"`) {
		t.Error("the date error is not beside the from field")
	}
	code, body = anon.get("/jobs?state=stuck&from=2026-01-05")
	refusedForm(t, "/jobs with an unknown state", code, body, http.StatusBadRequest, "filter state: &#34;stuck&#34;", `value="stuck" selected`, `value="2026-01-05"`)
}
