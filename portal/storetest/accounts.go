package storetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// testSchema: the migrations are recorded in order, the integrity check passes, Listen on a
// cancelled context returns, and a list has a plan.
func testSchema(e *env) {
	vs, err := e.st.AppliedMigrations(e.ctx)
	e.must(err, "applied migrations")
	if len(vs) == 0 || vs[0] != 1 || !slices.IsSorted(vs) || len(slices.Compact(slices.Clone(vs))) != len(vs) {
		e.Fatalf("applied migrations %v, want 1, 2, … in order", vs)
	}
	e.must(e.st.QuickCheck(e.ctx), "quick check")
	plan, err := e.st.ListPlan(e.ctx, store.ListFilter{BoardClass: "host"})
	e.must(err, "list plan")
	if plan == "" {
		e.Fatal("empty list plan")
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	done := make(chan error, 1)
	go func() { done <- e.st.Listen(ctx, func(string) {}) }()
	select {
	case err := <-done:
		if err != nil && ctx.Err() == nil {
			e.Fatalf("listen: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.Fatal("Listen did not return after its context ended")
	}
}

// testAdminToken: the first SetAdminToken creates the administrator, a later one replaces its
// token (the old one stops working).
func testAdminToken(e *env) {
	has, err := e.st.HasAdmin(e.ctx)
	e.must(err, "has admin")
	if has {
		e.Fatal("a fresh store has an administrator")
	}
	created, err := e.st.SetAdminToken(e.ctx, "admin-1")
	e.must(err, "set admin token")
	if !created {
		e.Fatal("the first administrator token did not create the administrator")
	}
	if has, _ := e.st.HasAdmin(e.ctx); !has {
		e.Fatal("no administrator after SetAdminToken")
	}
	created, err = e.st.SetAdminToken(e.ctx, "admin-2")
	e.must(err, "replace admin token")
	if created {
		e.Fatal("replacing the token created a second administrator")
	}
	_, err = e.st.UserByToken(e.ctx, "admin-1")
	e.wantKind(err, fault.NotFound, "the replaced administrator token")
	u, err := e.st.UserByToken(e.ctx, "admin-2")
	e.must(err, "user by the new administrator token")
	if u.Role != store.RoleAdmin || u.Name != "admin" || u.ID <= 0 || u.CreatedAt.IsZero() {
		e.Fatalf("administrator %+v", u)
	}
	us, err := e.st.Users(e.ctx)
	e.must(err, "users")
	if len(us) != 1 {
		e.Fatalf("%d accounts after two SetAdminToken calls, want 1", len(us))
	}
}

// testUsers: accounts are created with unique names regardless of case and found by token.
func testUsers(e *env) {
	before := time.Now().Add(-time.Second)
	a, err := e.st.CreateUser(e.ctx, "Alice", store.RoleSubmitter, "tok-a")
	e.must(err, "create Alice")
	if a.ID <= 0 || a.Name != "Alice" || a.Role != store.RoleSubmitter || a.CreatedAt.Before(before) {
		e.Fatalf("created %+v", a)
	}
	_, err = e.st.CreateUser(e.ctx, "aLICE", store.RoleMember, "tok-a2")
	e.wantKind(err, fault.Conflict, "a second account named aLICE")
	b := e.user("bob", store.RoleMember)
	got, err := e.st.UserByToken(e.ctx, "tok-a")
	e.must(err, "user by token")
	if got.ID != a.ID || got.Name != "Alice" || got.Role != store.RoleSubmitter || !got.CreatedAt.Equal(a.CreatedAt.Truncate(time.Millisecond)) {
		e.Fatalf("user by token %+v, created %+v", got, a)
	}
	_, err = e.st.UserByToken(e.ctx, "no-such-token")
	e.wantKind(err, fault.NotFound, "unknown token")
	us, err := e.st.Users(e.ctx)
	e.must(err, "users")
	if len(us) != 2 || us[0].ID != b.ID || us[1].ID != a.ID || !us[1].RevokedAt.IsZero() {
		e.Fatalf("users %+v, want the newest first: bob then Alice", us)
	}
}

// testSessions: a session finds its user until it expires or is deleted.
func testSessions(e *env) {
	u := e.user("carol", store.RoleMember)
	e.must(e.st.CreateSession(e.ctx, "sess-1", u.ID, time.Now().Add(time.Hour)), "create session")
	e.must(e.st.CreateSession(e.ctx, "sess-old", u.ID, time.Now().Add(-time.Second)), "create expired session")
	got, err := e.st.UserBySession(e.ctx, "sess-1")
	e.must(err, "user by session")
	if got.ID != u.ID || got.Name != "carol" || got.Role != store.RoleMember {
		e.Fatalf("session user %+v", got)
	}
	_, err = e.st.UserBySession(e.ctx, "sess-old")
	e.wantKind(err, fault.NotFound, "an expired session")
	_, err = e.st.UserBySession(e.ctx, "sess-none")
	e.wantKind(err, fault.NotFound, "an unknown session")
	e.must(e.st.DeleteSession(e.ctx, "sess-1"), "delete session")
	_, err = e.st.UserBySession(e.ctx, "sess-1")
	e.wantKind(err, fault.NotFound, "a deleted session")
	e.must(e.st.DeleteSession(e.ctx, "sess-1"), "delete a deleted session")
}

// testRevokeUser: a revoked account's token and sessions stop working; the administrator
// cannot be revoked; revoking twice is not found.
func testRevokeUser(e *env) {
	_, err := e.st.SetAdminToken(e.ctx, "admin")
	e.must(err, "admin")
	admin, err := e.st.UserByToken(e.ctx, "admin")
	e.must(err, "admin by token")
	u := e.user("dave", store.RoleSubmitter)
	e.must(e.st.CreateSession(e.ctx, "sess-dave", u.ID, time.Now().Add(time.Hour)), "create session")
	e.must(e.st.RevokeUser(e.ctx, u.ID), "revoke dave")
	_, err = e.st.UserByToken(e.ctx, "user-token-dave")
	e.wantKind(err, fault.NotFound, "a revoked account's token")
	_, err = e.st.UserBySession(e.ctx, "sess-dave")
	e.wantKind(err, fault.NotFound, "a revoked account's session")
	e.wantKind(e.st.RevokeUser(e.ctx, u.ID), fault.NotFound, "revoking dave again")
	e.wantKind(e.st.RevokeUser(e.ctx, admin.ID), fault.NotFound, "revoking the administrator")
	e.wantKind(e.st.RevokeUser(e.ctx, 987654), fault.NotFound, "revoking an unknown account")
	us, err := e.st.Users(e.ctx)
	e.must(err, "users")
	for _, x := range us {
		if (x.ID == u.ID) == x.RevokedAt.IsZero() {
			e.Errorf("account %s revoked at %v", x.Name, x.RevokedAt)
		}
	}
	if _, err := e.st.UserByToken(e.ctx, "admin"); err != nil {
		e.Fatalf("the administrator after revoking dave: %v", err)
	}
}

// testChallenges: a challenge is used once, for its purpose, before it expires.
func testChallenges(e *env) {
	e.must(e.st.IssueChallenge(e.ctx, "c1", "enrol", time.Now().Add(time.Minute)), "issue c1")
	e.must(e.st.IssueChallenge(e.ctx, "c-old", "enrol", time.Now().Add(-time.Second)), "issue an expired challenge")
	e.wantKind(e.st.UseChallenge(e.ctx, "c1", "register-keys"), fault.Unauthorized, "c1 for another purpose")
	e.must(e.st.UseChallenge(e.ctx, "c1", "enrol"), "use c1")
	e.wantKind(e.st.UseChallenge(e.ctx, "c1", "enrol"), fault.Unauthorized, "c1 a second time")
	e.wantKind(e.st.UseChallenge(e.ctx, "c-old", "enrol"), fault.Unauthorized, "an expired challenge")
	e.wantKind(e.st.UseChallenge(e.ctx, "c-none", "enrol"), fault.Unauthorized, "an unknown challenge")
	err := e.st.IssueChallenge(e.ctx, "c1", "enrol", time.Now().Add(time.Minute))
	if err == nil {
		e.Fatal("issuing challenge c1 again was accepted")
	}
}

// testEnrolTokens: tokens are listed newest first with their uses; an expired, revoked or
// used-up token enrols nobody.
func testEnrolTokens(e *env) {
	admin, err := e.st.CreateUser(e.ctx, "root", store.RoleAdmin, "t-root")
	e.must(err, "admin")
	exp := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	t1, err := e.st.CreateEnrolToken(e.ctx, "lab A", "e1", admin.ID, store.EnrolTokenOptions{MaxUses: 2, Expires: exp})
	e.must(err, "token 1")
	t2, err := e.st.CreateEnrolToken(e.ctx, "old", "e2", 0, store.EnrolTokenOptions{Expires: time.Now().Add(-time.Second)})
	e.must(err, "token 2")
	t3, err := e.st.CreateEnrolToken(e.ctx, "revoked", "e3", 0, store.EnrolTokenOptions{})
	e.must(err, "token 3")
	e.must(e.st.RevokeEnrolToken(e.ctx, t3), "revoke token 3")
	e.wantKind(e.st.RevokeEnrolToken(e.ctx, t3), fault.NotFound, "revoking token 3 again")
	n := 0
	enrol := func(tok string) error {
		n++
		_, _, err := e.st.Enrol(e.ctx, store.Enrolment{EnrolTokenHash: tok, Name: "r", Version: "v", Keys: e.identity(), NewTokenHash: fmt.Sprintf("rt-%s-%d", tok, n)})
		return err
	}
	e.wantKind(enrol("e2"), fault.Unauthorized, "an expired token")
	e.wantKind(enrol("e3"), fault.Unauthorized, "a revoked token")
	e.wantKind(enrol("e-none"), fault.Unauthorized, "an unknown token")
	e.must(enrol("e1"), "first use of token 1")
	e.must(enrol("e1"), "second use of token 1")
	e.wantKind(enrol("e1"), fault.Unauthorized, "a third use of a two-use token")
	ts, err := e.st.EnrolTokens(e.ctx)
	e.must(err, "enrol tokens")
	if len(ts) != 3 || ts[0].ID != t3 || ts[1].ID != t2 || ts[2].ID != t1 {
		e.Fatalf("tokens %+v, want 3, 2, 1", ts)
	}
	a := ts[2]
	if a.Label != "lab A" || a.MaxUses != 2 || a.Uses != 2 || a.Runners != 2 || !a.Expires.Equal(exp) || a.CreatedAt.IsZero() || !a.RevokedAt.IsZero() {
		e.Fatalf("token 1 %+v", a)
	}
	if ok, _ := a.Usable(time.Now()); ok {
		e.Fatal("a used-up token is usable")
	}
	if ts[1].MaxUses != 1 || ts[1].Uses != 0 || ts[0].RevokedAt.IsZero() {
		e.Fatalf("tokens 2 and 3 %+v %+v", ts[1], ts[0])
	}
}

// testEnrol: a runner enrols with a token, is found by its token, and re-enrols its keys
// only with its current token (which the re-enrolment replaces).
func testEnrol(e *env) {
	id, keys := e.runner("r1")
	r, err := e.st.RunnerByToken(e.ctx, "runner-token-r1")
	e.must(err, "runner by token")
	if r.ID != id || r.Name != "r1" || r.Fingerprint != keys.Fingerprint() || !reflect.DeepEqual(r.PublicKeys, keys) || r.Version != "test" ||
		len(r.Boards) != 1 || r.Boards[0].Class != "host" || !r.Boards[0].Available || r.CreatedAt.IsZero() || r.LastSeen.IsZero() || r.ReenrolAllowed {
		e.Fatalf("runner %+v", r)
	}
	_, err = e.st.RunnerByToken(e.ctx, "no-such")
	e.wantKind(err, fault.NotFound, "unknown runner token")
	_, _, err = e.st.Enrol(e.ctx, store.Enrolment{Name: "thief", Keys: keys, NewTokenHash: "rt-thief"})
	e.wantKind(err, fault.Conflict, "enrolled keys without their token")
	_, _, err = e.st.Enrol(e.ctx, store.Enrolment{Name: "new", Keys: e.identity(), NewTokenHash: "rt-new"})
	e.wantKind(err, fault.Unauthorized, "new keys without an enrolment token")
	caps := protocol.Capabilities{OpenSSL: "OpenSSL 3.5.4", OpenSSLUsable: true}
	id2, re, err := e.st.Enrol(e.ctx, store.Enrolment{CurrentTokenHash: "runner-token-r1", Name: "r1b", Version: "v2", Keys: keys,
		Boards: []protocol.BoardInfo{{Name: "q", Class: "qemu-mps2-an386", Driver: "qemu", Available: true}}, Capabilities: caps, NewTokenHash: "rt-2"})
	e.must(err, "re-enrol with the current token")
	if id2 != id || !re {
		e.Fatalf("re-enrolment gave runner %d (re-enrolled %v), want %d", id2, re, id)
	}
	_, err = e.st.RunnerByToken(e.ctx, "runner-token-r1")
	e.wantKind(err, fault.NotFound, "the token a re-enrolment replaced")
	r, err = e.st.Runner(e.ctx, id)
	e.must(err, "runner")
	if r.Name != "r1b" || r.Version != "v2" || r.Boards[0].Class != "qemu-mps2-an386" || r.Capabilities != caps {
		e.Fatalf("re-enrolled runner %+v", r)
	}
	seen := r.LastSeen
	e.must(e.st.TouchRunner(e.ctx, id), "touch")
	r, _ = e.st.Runner(e.ctx, id)
	if r.LastSeen.Before(seen) {
		e.Fatalf("last seen went back from %v to %v", seen, r.LastSeen)
	}
	caps2 := protocol.Capabilities{OpenSSLReason: "no openssl"}
	e.must(e.st.SetRunnerCapabilities(e.ctx, id, caps2), "set capabilities")
	if r, _ = e.st.Runner(e.ctx, id); r.Capabilities != caps2 {
		e.Fatalf("capabilities %+v, want %+v", r.Capabilities, caps2)
	}
	_, err = e.st.Runner(e.ctx, 987654)
	e.wantKind(err, fault.NotFound, "unknown runner")
	id3, _ := e.runner("r3")
	rs, err := e.st.Runners(e.ctx)
	e.must(err, "runners")
	if len(rs) != 2 || (rs[0].ID != id && rs[0].ID != id3) {
		e.Fatalf("runners %+v", rs)
	}
}

// testReenrolRelease: the administrator's release lets a runner re-enrol its keys once without
// its token.
func testReenrolRelease(e *env) {
	id, keys := e.runner("r1")
	e.must(e.st.AllowReenrol(e.ctx, id), "allow re-enrolment")
	r, _ := e.st.Runner(e.ctx, id)
	if !r.ReenrolAllowed {
		e.Fatal("released runner: ReenrolAllowed false")
	}
	got, re, err := e.st.Enrol(e.ctx, store.Enrolment{Name: "r1", Version: "v", Keys: keys, NewTokenHash: "rt-released"})
	e.must(err, "re-enrol released keys")
	if got != id || !re {
		e.Fatalf("re-enrolment: runner %d re-enrolled %v", got, re)
	}
	if r, _ = e.st.Runner(e.ctx, id); r.ReenrolAllowed {
		e.Fatal("the release was not used up by the re-enrolment")
	}
	_, _, err = e.st.Enrol(e.ctx, store.Enrolment{Name: "r1", Version: "v", Keys: keys, NewTokenHash: "rt-again"})
	e.wantKind(err, fault.Conflict, "a second re-enrolment without a token")
	e.wantKind(e.st.AllowReenrol(e.ctx, 987654), fault.NotFound, "releasing an unknown runner")
	e.must(e.st.AllowReenrolKeys(e.ctx, keys.Fingerprint()), "release by fingerprint")
	if r, _ = e.st.Runner(e.ctx, id); !r.ReenrolAllowed {
		e.Fatal("released by fingerprint: ReenrolAllowed false")
	}
	e.must(e.st.AllowReenrolKeys(e.ctx, "sha256:nobody"), "release keys nobody holds")
}

// testRevokeRunner: a revoked runner's token stops working and its keys never enrol again.
func testRevokeRunner(e *env) {
	id, keys := e.runner("r1")
	e.must(e.st.RevokeRunner(e.ctx, id), "revoke")
	_, err := e.st.RunnerByToken(e.ctx, "runner-token-r1")
	e.wantKind(err, fault.NotFound, "a revoked runner's token")
	r, err := e.st.Runner(e.ctx, id)
	e.must(err, "a revoked runner is still listed")
	if r.RevokedAt.IsZero() {
		e.Fatal("RevokedAt is zero")
	}
	_, _, err = e.st.Enrol(e.ctx, store.Enrolment{CurrentTokenHash: "runner-token-r1", Name: "r1", Keys: keys, NewTokenHash: "rt-x"})
	e.wantKind(err, fault.Forbidden, "re-enrolling a revoked runner's keys")
	e.wantKind(e.st.RevokeRunner(e.ctx, id), fault.NotFound, "revoking twice")
	e.wantKind(e.st.AllowReenrol(e.ctx, id), fault.NotFound, "releasing a revoked runner")
}

// testSubmitterKeys: keys are registered once, never also as a runner's, found by
// fingerprint and revoked.
func testSubmitterKeys(e *env) {
	u := e.user("erin", store.RoleSubmitter)
	v := e.user("frank", store.RoleSubmitter)
	keys := e.identity()
	k, err := e.st.AddSubmitterKey(e.ctx, u.ID, "laptop", keys)
	e.must(err, "add keys")
	if k.ID <= 0 || k.Fingerprint != keys.Fingerprint() || k.UserID != u.ID || k.Label != "laptop" {
		e.Fatalf("added %+v", k)
	}
	_, err = e.st.AddSubmitterKey(e.ctx, v.ID, "mine", keys)
	e.wantKind(err, fault.Conflict, "the same keys for another account")
	_, rkeys := e.runner("r1")
	_, err = e.st.AddSubmitterKey(e.ctx, u.ID, "runner's", rkeys)
	e.wantKind(err, fault.Conflict, "a runner's keys as a submitter's")
	_, err = e.st.CreateEnrolToken(e.ctx, "t", "e-sub", 0, store.EnrolTokenOptions{})
	e.must(err, "token")
	_, _, err = e.st.Enrol(e.ctx, store.Enrolment{EnrolTokenHash: "e-sub", Name: "r", Keys: keys, NewTokenHash: "rt-sub"})
	e.wantKind(err, fault.Conflict, "enrolling a submitter's keys as a runner")
	k2, err := e.st.AddSubmitterKey(e.ctx, v.ID, "desk", e.identity())
	e.must(err, "frank's keys")
	got, err := e.st.SubmitterKeyByFingerprint(e.ctx, keys.Fingerprint())
	e.must(err, "by fingerprint")
	if got.ID != k.ID || got.UserName != "erin" || !reflect.DeepEqual(got.PublicKeys, keys) || got.CreatedAt.IsZero() || !got.RevokedAt.IsZero() {
		e.Fatalf("by fingerprint %+v", got)
	}
	_, err = e.st.SubmitterKeyByFingerprint(e.ctx, "sha256:none")
	e.wantKind(err, fault.NotFound, "unknown fingerprint")
	mine, err := e.st.SubmitterKeys(e.ctx, u.ID)
	e.must(err, "erin's keys")
	all, err := e.st.SubmitterKeys(e.ctx, 0)
	e.must(err, "all keys")
	if len(mine) != 1 || mine[0].ID != k.ID || len(all) != 2 || all[0].ID != k2.ID || all[1].ID != k.ID {
		e.Fatalf("erin's keys %+v, all %+v (want the newest first)", mine, all)
	}
	e.must(e.st.RevokeSubmitterKey(e.ctx, k.ID), "revoke")
	if got, _ = e.st.SubmitterKeyByFingerprint(e.ctx, keys.Fingerprint()); got.RevokedAt.IsZero() {
		e.Fatal("revoked keys: RevokedAt is zero")
	}
	e.wantKind(e.st.RevokeSubmitterKey(e.ctx, k.ID), fault.NotFound, "revoking twice")
}

// testFirmware: a build is stored once and listed by board class, newest first, and can be
// withdrawn once with its reason.
func testFirmware(e *env) {
	u := e.user("gina", store.RoleSubmitter)
	f := store.Firmware{Digest: "sha256:fw1", Filename: "fw.elf", Size: 12345, BoardClass: "pico-w", Toolchain: "gcc 14", Libraries: "mbedtls 3.6",
		SourceURL: "https://example.org/src", SourceCommit: "abc123",
		Build: store.FirmwareBuildInfo{Compiler: "GNU C11 14.2.0", CompilerFrom: "ELF DWARF producer", Flags: "-mcpu=cortex-m0plus -O2", FlagsFrom: "ELF DWARF producer",
			Producers: []string{"GNU C11 14.2.0 -mcpu=cortex-m0plus -O2"}, MetaCFlags: "-O2", LDFlags: "-Wl,--gc-sections",
			Sections: []store.FirmwareSection{{Name: ".text", Kind: "text", Size: 9000}, {Name: ".bss", Kind: "bss", Size: 512}}, Text: 9000, BSS: 512,
			MetaSize: &store.FirmwareSize{Text: 9001, BSS: 512}, CodeSize: []store.FirmwareCodeGroup{{Group: "ML-KEM-768", Code: 3686, ROData: 308, Total: 3994, WithShared: 7618}},
			CodeSizeMethod: "sum of ELF symbol sizes", BuildID: "852f0f71"},
		Metadata: `{"target":"pico-w","cflags":"-O2"}`}
	e.must(e.st.AddFirmware(e.ctx, f, u.ID), "add firmware")
	e.wantKind(e.st.AddFirmware(e.ctx, f, u.ID), fault.Conflict, "adding the same digest again")
	g := f
	g.Digest, g.BoardClass = "sha256:fw2", "esp32c6"
	e.must(e.st.AddFirmware(e.ctx, g, u.ID), "add a second build")
	got, err := e.st.FirmwareBuild(e.ctx, "sha256:fw1")
	e.must(err, "firmware build")
	want := f
	want.UploadedBy, want.UploaderID, want.CreatedAt = "gina", u.ID, got.CreatedAt
	if !reflect.DeepEqual(got, want) || got.CreatedAt.IsZero() {
		e.Fatalf("firmware %+v, want %+v", got, want)
	}
	// Withdrawn once, with its reason; again is a conflict, an unknown build not found. The
	// jobs still queued that would flash it are cancelled with the reason; a running one
	// and a job naming another build are left alone.
	r, _ := e.runner("fw-runner")
	newJob := func(fw string) int64 {
		id, err := e.st.CreateJob(e.ctx, store.NewJob{Experiment: "paper001/mlkem", Paper: "paper001", ManifestYAML: "x", ManifestID: "m", BoardClass: "esp32c6", Firmware: fw})
		e.must(err, "job with firmware "+fw)
		return id
	}
	running := newJob("sha256:fw2")
	if j := e.lease(r, "esp32c6", "fw-l1", time.Now().Add(hour)); j.ID != running {
		e.Fatalf("leased job %d, want %d", j.ID, running)
	}
	queued1, other, queued2 := newJob("sha256:fw2"), newJob("sha256:fw1"), newJob("sha256:fw2")
	cancelled, err := e.st.WithdrawFirmware(e.ctx, "sha256:fw2", "miscompiled")
	e.must(err, "withdraw")
	if fmt.Sprint(cancelled) != fmt.Sprint([]int64{queued1, queued2}) {
		e.Fatalf("withdrawal cancelled jobs %v, want %v", cancelled, []int64{queued1, queued2})
	}
	for _, id := range []int64{queued1, queued2} {
		j, err := e.st.Job(e.ctx, id)
		e.must(err, "cancelled job")
		if !j.Cancelled() || !j.Terminal() || j.FinishedAt.IsZero() || !strings.Contains(j.CancelReason(), "sha256:fw2 was withdrawn") ||
			!strings.HasSuffix(j.CancelReason(), ": miscompiled") {
			e.Fatalf("job %d after the withdrawal: %s %q, want cancelled with the reason", id, j.State, j.Error)
		}
	}
	if j, err := e.st.Job(e.ctx, running); err != nil || j.State != store.JobRunning || j.Cancelled() {
		e.Fatalf("the running job after the withdrawal: %s %q %v, want it still running", j.State, j.Error, err)
	}
	if j, err := e.st.Job(e.ctx, other); err != nil || j.State != store.JobQueued {
		e.Fatalf("a job naming another build after the withdrawal: %s %v, want queued", j.State, err)
	}
	_, err = e.st.WithdrawFirmware(e.ctx, "sha256:fw2", "again")
	e.wantKind(err, fault.Conflict, "withdrawing twice")
	_, err = e.st.WithdrawFirmware(e.ctx, "sha256:none", "x")
	e.wantKind(err, fault.NotFound, "withdrawing an unknown build")
	if w, err := e.st.FirmwareBuild(e.ctx, "sha256:fw2"); err != nil || w.WithdrawnAt.IsZero() || w.Withdrawn != "miscompiled" {
		e.Fatalf("withdrawn build %+v, %v", w, err)
	}
	_, err = e.st.FirmwareBuild(e.ctx, "sha256:none")
	e.wantKind(err, fault.NotFound, "unknown firmware")
	pico, err := e.st.FirmwareBuilds(e.ctx, "pico-w")
	e.must(err, "pico builds")
	all, err := e.st.FirmwareBuilds(e.ctx, "")
	e.must(err, "all builds")
	if len(pico) != 1 || pico[0].Digest != "sha256:fw1" || len(all) != 2 || pico[0].Metadata != "" || pico[0].Build.Compiler != "" {
		e.Fatalf("pico builds %+v, all %+v", pico, all)
	}
}
