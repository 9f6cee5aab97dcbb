package portal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"pqrepro/artifacts"
	"pqrepro/artifacts/identity"
	"pqrepro/artifacts/protocol"
	"pqrepro/experiments"
	"pqrepro/portal/portaltest"
	"pqrepro/portal/store"
	"pqrepro/runner"
	"pqrepro/runner/host"
	"pqrepro/runner/portalclient"
)

// TestOpenSSLJobLeasedOnlyToCapableRunner queues an openssl-cli job and an in-process job:
// a runner without OpenSSL 3.5 gets only the in-process one, however often it asks, and a
// runner that reports OpenSSL 3.5 for its host board gets the openssl-cli job.
func TestOpenSSLJobLeasedOnlyToCapableRunner(t *testing.T) {
	p := portaltest.Start(t, nil)
	ctx := context.Background()
	cat, err := experiments.Load()
	if err != nil {
		t.Fatal(err)
	}
	om, err := cat.Manifest("paper002/keygen-openssl")
	if err != nil {
		t.Fatal(err)
	}
	st := p.Server.Store()
	osslJob, err := st.CreateJob(ctx, store.NewJob{Experiment: om.Ref(), Paper: om.Metadata.Paper, ManifestYAML: string(om.YAML()),
		ManifestID: om.ID(), BoardClass: "host", Method: om.Spec.Method})
	if err != nil {
		t.Fatal(err)
	}
	plain := queueJob(t, p, smallManifest(t, 2))

	enrolWith := func(name string, caps protocol.Capabilities, methods []artifacts.Method) *portalclient.Client {
		id, err := identity.GenerateIdentity()
		if err != nil {
			t.Fatal(err)
		}
		c := &portalclient.Client{BaseURL: p.URL}
		if _, err := runner.EnrolWithProof(ctx, c, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: name, Version: "test", PublicKeys: id.Public(),
			Capabilities: caps, Boards: []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true, Methods: methods}}}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := enrolWith("old", protocol.Capabilities{OpenSSL: "OpenSSL 3.0.19 27 Jan 2026", OpenSSLReason: "too old"},
		[]artifacts.Method{artifacts.MethodInProcess, artifacts.MethodProcessPerOperation})
	for i := range 3 {
		l, err := old.Lease(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 0 && (l == nil || l.JobID != plain):
			t.Fatalf("runner without OpenSSL 3.5: lease %+v, want the in-process job %d", l, plain)
		case i > 0 && l != nil:
			t.Fatalf("runner without OpenSSL 3.5 leased job %d (%s)", l.JobID, l.Experiment)
		}
	}
	// A runner claiming openssl-cli on a board without a usable openssl is refused at enrolment.
	id, _ := identity.GenerateIdentity()
	if _, err := runner.EnrolWithProof(ctx, &portalclient.Client{BaseURL: p.URL}, id, protocol.EnrolRequest{Token: p.EnrolToken(t), Name: "liar", Version: "test",
		PublicKeys: id.Public(), Boards: []protocol.BoardInfo{{Name: "host", Class: "host", Driver: "host", Available: true,
			Methods: []artifacts.Method{artifacts.MethodOpenSSLCLI}}}}); err == nil || !strings.Contains(err.Error(), "no usable OpenSSL") {
		t.Fatalf("enrolment with openssl-cli but no usable openssl: %v", err)
	}
	capable := enrolWith("new", protocol.Capabilities{OpenSSL: "OpenSSL 3.5.9 29 Sep 2026", OpenSSLUsable: true},
		host.Methods(protocol.Capabilities{OpenSSLUsable: true}))
	l, err := capable.Lease(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l == nil || l.JobID != osslJob {
		t.Fatalf("runner with OpenSSL 3.5: lease %+v, want the openssl-cli job %d", l, osslJob)
	}
	rs, err := st.Runners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		if r.Name == "new" {
			found = r.Capabilities.OpenSSLUsable && strings.HasPrefix(r.Capabilities.OpenSSL, "OpenSSL 3.5")
		}
	}
	if !found {
		t.Fatalf("the capable runner's capabilities were not stored: %+v", rs)
	}
}
