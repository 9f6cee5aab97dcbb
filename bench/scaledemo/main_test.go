package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"pqrepro/portal/blob/s3test"
	"pqrepro/portal/postgres/pgtest"
)

// TestDemo runs the whole demonstration at a small size against a real PostgreSQL and a real
// versitygw: every job is published exactly once although a replica and a runner were
// SIGKILLed midway, nothing is duplicated or lost, the log holds one entry per run and its
// checkpoint is cosigned, a random run verifies against the log with every key pinned, and
// no folder is left behind.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, versitygw and nine processes")
	}
	if pgtest.BinDir() == "" {
		msg := "PostgreSQL's server programs are not installed (scripts/postgres installs them)"
		if pgtest.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	gw := s3test.Binary()
	if gw == "" {
		msg := "versitygw not found: run scripts/versitygw and set PQREPRO_VERSITYGW"
		if pgtest.Required() || os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 30
	var progress bytes.Buffer
	rep, err := Demo(context.Background(), Config{Jobs: jobs, Iterations: 2, Timeout: 3 * time.Minute, Root: root, Versitygw: gw, Lease: 2 * time.Second}, &progress)
	if rep != nil {
		var out bytes.Buffer
		rep.Print(&out)
		t.Logf("progress:\n%s%s", progress.String(), out.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Jobs != jobs || rep.PublishedOnce != jobs || len(rep.Failed) != 0 {
		t.Errorf("%d jobs, %d published once, failed %v; want %d published once", rep.Jobs, rep.PublishedOnce, rep.Failed, jobs)
	}
	if rep.Duplicates != 0 || rep.Lost != 0 || rep.LogOrphans != 0 {
		t.Errorf("duplicates %d, lost %d, log entries of no published run %d", rep.Duplicates, rep.Lost, rep.LogOrphans)
	}
	if rep.Runs != jobs || rep.LogEntries != jobs || rep.LogSize != jobs {
		t.Errorf("%d runs, %d log entries, checkpoint size %d; want %d each", rep.Runs, rep.LogEntries, rep.LogSize, jobs)
	}
	if rep.Killed == "" || rep.KilledAt < jobs/3 {
		t.Errorf("nothing was killed midway (%q after %d)", rep.Killed, rep.KilledAt)
	}
	if rep.CheckpointWitnessSigs != 2 || rep.CosignedSizes == 0 {
		t.Errorf("the final checkpoint carries %d witness signatures (want Ed25519 and ML-DSA-44); %d sizes cosigned", rep.CheckpointWitnessSigs, rep.CosignedSizes)
	}
	for i, n := range rep.Queued {
		if n == 0 || rep.Served[i] == 0 {
			t.Errorf("replica %d: %d jobs queued through it, %d answers", i, n, rep.Served[i])
		}
	}
	if !rep.VerifyOK || !strings.Contains(rep.VerifyOutput, "inclusion proof holds") || !strings.Contains(rep.VerifyOutput, "signing keys are the pinned keys") {
		t.Errorf("the random run did not verify:\n%s", rep.VerifyOutput)
	}
	if why := rep.Problems(); why != "" {
		t.Errorf("problems: %s", why)
	}
	if _, err := os.Stat(rep.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demonstration left %s behind (%v)", rep.Dir, err)
	}
}

// TestReportProblems: a report with a duplicate, a lost job or a failed verification is a
// failed demonstration, and the command exits 1 for it.
func TestReportProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  Report
		want string
	}{
		{"clean", Report{VerifyOK: true}, ""},
		{"duplicate", Report{Duplicates: 1, VerifyOK: true}, "1 duplicates"},
		{"lost", Report{Lost: 2, VerifyOK: true}, "2 lost"},
		{"log orphan", Report{LogOrphans: 1, VerifyOK: true}, "log entries of no published run"},
		{"unverified", Report{}, "did not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rep.Problems()
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Problems() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFlags: bad flags are refused, naming the flag, with exit status 2.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{{"-jobs", "2"}, {"-iterations", "0"}, {"-lease", "1ms"}, {"extra"}} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, io.Discard, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr.String())
		}
		if name := strings.TrimPrefix(args[0], "-"); name != "extra" && !strings.Contains(stderr.String(), name) {
			t.Errorf("%v: the error does not name the flag: %s", args, stderr.String())
		}
	}
}
