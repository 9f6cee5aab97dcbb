package storetest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"pqrepro/artifacts/identity"
	"pqrepro/portal/fault"
	"pqrepro/portal/store"
)

// racers is how many goroutines race in each test below: as many requests reaching
// different portal processes at once.
const racers = 8

// race runs fn on racers goroutines at once and returns their errors.
func race(fn func(i int) error) []error {
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// testRacePublish: the same bundle published at once: one run, and every other attempt is a
// DuplicateBundleError naming it.
func testRacePublish(e *env) {
	for round := range rounds {
		e.racePublish(round)
	}
}

// rounds is how many times a race that is lost only sometimes is run.
const rounds = 5

func (e *env) racePublish(round int) {
	p := e.pub("host", "host", 1)
	ids := make([]int64, racers)
	errs := race(func(i int) error {
		var err error
		ids[i], err = e.st.Publish(e.ctx, p)
		return err
	})
	var winner int64
	for i, err := range errs {
		if err == nil {
			if winner != 0 {
				e.Fatalf("the bundle was published twice: runs %d and %d", winner, ids[i])
			}
			winner = ids[i]
		}
	}
	if winner == 0 {
		e.Fatalf("no publication succeeded: %v", errs)
	}
	for _, err := range errs {
		if d, ok := isDuplicate(err); err != nil && (!ok || d.RunID != winner) {
			e.Fatalf("a racing publication failed with %v, want a DuplicateBundleError naming run %d", err, winner)
		}
	}
	if n, _ := e.st.CountCells(e.ctx); n != round+1 {
		e.Fatalf("%d cells stored after %d rounds, want one per round", n, round+1)
	}
}

// testRaceEnrolToken: a token of 3 uses raced by 8 enrolments enrols exactly 3 runners.
func testRaceEnrolToken(e *env) {
	_, err := e.st.CreateEnrolToken(e.ctx, "three", "e3", 0, store.EnrolTokenOptions{MaxUses: 3})
	e.must(err, "token")
	keys := make([]identity.PublicKeys, racers)
	for i := range keys {
		keys[i] = e.identity()
	}
	errs := race(func(i int) error {
		_, _, err := e.st.Enrol(e.ctx, store.Enrolment{EnrolTokenHash: "e3", Name: fmt.Sprint("r", i), Version: "v", Keys: keys[i], NewTokenHash: fmt.Sprint("rt", i)})
		return err
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case fault.KindOf(err) != fault.Unauthorized:
			e.Fatalf("a racing enrolment failed with %v, want unauthorized (used up)", err)
		}
	}
	ts, _ := e.st.EnrolTokens(e.ctx)
	if ok != 3 || len(ts) != 1 || ts[0].Uses != 3 || ts[0].Runners != 3 {
		e.Fatalf("%d enrolments succeeded, token %+v; want 3 uses", ok, ts)
	}
}

// testRaceChallenge: a challenge used by 8 requests at once is good for one.
func testRaceChallenge(e *env) {
	e.must(e.st.IssueChallenge(e.ctx, "c", "enrol", time.Now().Add(time.Minute)), "issue")
	ok := 0
	for _, err := range race(func(int) error { return e.st.UseChallenge(e.ctx, "c", "enrol") }) {
		switch {
		case err == nil:
			ok++
		case fault.KindOf(err) != fault.Unauthorized:
			e.Fatalf("a racing use failed with %v", err)
		}
	}
	if ok != 1 {
		e.Fatalf("the challenge was used %d times", ok)
	}
}

// testRaceAppendLog: one chunk retried by 8 requests at once is stored, and counted, once.
func testRaceAppendLog(e *env) {
	for range rounds {
		e.raceAppendLog()
	}
}

func (e *env) raceAppendLog() {
	job, r := e.leased()
	for _, err := range race(func(int) error { return e.st.AppendLog(e.ctx, job, r, "l1", 0, "abc\n") }) {
		e.must(err, "append")
	}
	e.must(e.st.AppendLog(e.ctx, job, r, "l1", 1, "def\n"), "append chunk 1")
	v, err := e.st.JobLogView(e.ctx, job, 0, 100, 100)
	e.must(err, "view")
	if v.Text != "abc\ndef\n" || v.End != 8 || v.Omitted != 0 || strings.Contains(v.Text, "dropped") {
		e.Fatalf("log after a raced chunk %+v, want abc, def and end 8", v)
	}
}
