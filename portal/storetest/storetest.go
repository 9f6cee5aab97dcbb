// Package storetest is the suite every portal store passes: it defines, through the
// *sqlstore.DB interface only, the behaviour portal/sqlite has and portal/postgres must keep.
//
// Each subtest opens a fresh, empty store. The store runs on the real clock (the interface
// has no clock), so expiries in the past stand for expired ones and nothing waits or asserts
// a duration; the store's log limits are expected to be store.DefaultLogLimits().
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) *sqlstore.DB { ... a fresh store, closed at cleanup ... })
//	}
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/attest"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/portal/fault"
	"pqrepro/portal/sqlstore"
	"pqrepro/portal/store"
)

// Run runs the suite; open returns a fresh, empty store (and closes it when t ends).
func Run(t *testing.T, open func(t *testing.T) *sqlstore.DB) {
	for _, c := range []struct {
		name string
		fn   func(*env)
	}{
		{"Schema", testSchema},
		{"AdminToken", testAdminToken},
		{"Users", testUsers},
		{"Sessions", testSessions},
		{"RevokeUser", testRevokeUser},
		{"Challenges", testChallenges},
		{"EnrolTokens", testEnrolTokens},
		{"Enrol", testEnrol},
		{"ReenrolRelease", testReenrolRelease},
		{"RevokeRunner", testRevokeRunner},
		{"SubmitterKeys", testSubmitterKeys},
		{"Firmware", testFirmware},
		{"CreateJob", testCreateJob},
		{"LeaseByClass", testLeaseByClass},
		{"LeaseHeld", testLeaseHeld},
		{"FailJob", testFailJob},
		{"RequeueExpired", testRequeueExpired},
		{"PublishJob", testPublishJob},
		{"LogOrder", testLogOrder},
		{"LogFailure", testLogFailure},
		{"LogAttempts", testLogAttempts},
		{"LogBounded", testLogBounded},
		{"LogKeepsSummaryLines", testLogKeepsSummaryLines},
		{"PublishRun", testPublishRun},
		{"DuplicateBundle", testDuplicateBundle},
		{"PublishBatch", testPublishBatch},
		{"Aggregates", testAggregates},
		{"EnergyMethods", testEnergyMethods},
		{"Claims", testClaims},
		{"SignerRevoked", testSignerRevoked},
		{"ListRuns", testListRuns},
		{"ListJobs", testListJobs},
		{"PairReports", testPairReports},
		{"Rebuild", testRebuild},
		{"Summaries", testSummaries},
		{"Highlights", testHighlights},
		{"LogQueue", testLogQueue},
		{"Sequencer", testSequencer},
		{"SequencerExclusive", testSequencerExclusive},
		{"Integrate", testIntegrate},
		{"Witnesses", testWitnesses},
		{"ConcurrentLeases", testConcurrentLeases},
		{"RacePublish", testRacePublish},
		{"RaceEnrolToken", testRaceEnrolToken},
		{"RaceChallenge", testRaceChallenge},
		{"RaceAppendLog", testRaceAppendLog},
		{"RaceSummaries", testRaceSummaries},
		{"Generations", testGenerations},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c.fn(&env{T: t, ctx: ctx, st: open(t)})
		})
	}
}

// env is one subtest's store.
type env struct {
	*testing.T
	ctx context.Context
	st  *sqlstore.DB
	n   int // runs published by publish, for distinct bundle digests
}

func (e *env) must(err error, what string) {
	e.Helper()
	if err != nil {
		e.Fatalf("%s: %v", what, err)
	}
}

// wantKind fails unless err is a fault of kind k.
func (e *env) wantKind(err error, k fault.Kind, what string) {
	e.Helper()
	if err == nil {
		e.Fatalf("%s: no error, want %s", what, k)
	}
	if got := fault.KindOf(err); got != k {
		e.Fatalf("%s: %v (%s), want %s", what, err, got, k)
	}
}

// digest is a well-formed bundle digest (the log's leaf takes only sha256:<64 hex>).
func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return artifacts.DigestOfSum(h[:])
}

func (e *env) identity() identity.PublicKeys {
	e.Helper()
	id, err := identity.GenerateIdentity()
	e.must(err, "generate identity")
	return id.Public()
}

// user creates an account.
func (e *env) user(name, role string) store.User {
	e.Helper()
	u, err := e.st.CreateUser(e.ctx, name, role, "user-token-"+name)
	e.must(err, "create user "+name)
	return u
}

// runner enrols a runner with new keys and returns its id and keys; its token hash is
// "runner-token-<name>".
func (e *env) runner(name string) (int64, identity.PublicKeys) {
	e.Helper()
	_, err := e.st.CreateEnrolToken(e.ctx, "for "+name, "enrol-"+name, 0, store.EnrolTokenOptions{MaxUses: 1})
	e.must(err, "create enrolment token")
	keys := e.identity()
	id, re, err := e.st.Enrol(e.ctx, store.Enrolment{EnrolTokenHash: "enrol-" + name, Name: name, Version: "test", Keys: keys,
		Boards: []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true}}, NewTokenHash: "runner-token-" + name})
	e.must(err, "enrol runner "+name)
	if re || id <= 0 {
		e.Fatalf("enrolling new keys: id %d, re-enrolled %v", id, re)
	}
	return id, keys
}

// job queues a job of board class and method ("" for in-process).
func (e *env) job(class string, method artifacts.Method) int64 {
	e.Helper()
	id, err := e.st.CreateJob(e.ctx, store.NewJob{Experiment: "paper001/mlkem", Paper: "paper001", ManifestYAML: "kind: kem-bench\n",
		ManifestID: "sha256:m", BoardClass: class, Method: method})
	e.must(err, "create job")
	return id
}

func (e *env) lease(runner int64, class, lease string, expires time.Time) store.Job {
	e.Helper()
	j, err := e.st.LeaseJob(e.ctx, runner, []string{class}, nil, nil, lease, "nonce-"+lease, expires)
	e.must(err, "lease a "+class+" job")
	return j
}

// pub is a publication of a community run with one ok cell of ML-KEM-768 keygen.
func (e *env) pub(board string, level artifacts.Level, median float64) store.Publication {
	e.n++
	at := time.UnixMilli(1764590000000 + int64(e.n)).UTC()
	return store.Publication{
		Run: store.Run{Experiment: "paper001/mlkem", Paper: "paper001", ManifestID: "sha256:m", Kind: "kem-bench", Method: artifacts.MethodInProcess,
			BoardClass: board, BoardName: board + "-1", Level: level, ClassStatus: artifacts.ClassVerified, Origin: attest.OriginCommunity,
			Binding: store.BindingUnbound, Signer: "signer", Bundle: digest(fmt.Sprintf("%s-%d", e.Name(), e.n)), BundleSize: 1000 + int64(e.n),
			StartedAt: at, FinishedAt: at.Add(time.Second), Environment: `{"os":"linux"}`, Report: `{"cells":1}`, Checks: `[]`, CellsTotal: 1, CellsOK: 1},
		Cells: []artifacts.Cell{okCell("ML-KEM-768", "keygen", unitOf(level), median)},
	}
}

func unitOf(level artifacts.Level) artifacts.Unit {
	if level == "emulated" {
		return "instructions"
	}
	return "ns"
}

func okCell(alg, op string, unit artifacts.Unit, median float64) artifacts.Cell {
	return artifacts.Cell{Algorithm: alg, Operation: op, Status: artifacts.StatusOK, Unit: unit, Requested: 5,
		Stats: &artifacts.Stats{N: 5, Min: median - 2, P25: median - 1, Median: median, P75: median + 1, Max: median + 2, Mean: median, Stddev: 0.5}}
}

func (e *env) publish(p store.Publication) int64 {
	e.Helper()
	id, err := e.st.Publish(e.ctx, p)
	e.must(err, "publish")
	if id <= 0 {
		e.Fatalf("publish returned run id %d", id)
	}
	return id
}

func isDuplicate(err error) (*store.DuplicateBundleError, bool) {
	var d *store.DuplicateBundleError
	return d, errors.As(err, &d)
}
