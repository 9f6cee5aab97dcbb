package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeConfigProxiesAndTimeouts(t *testing.T) {
	t.Setenv("PQREPRO_TRUSTED_PROXIES", "10.0.0.0/8,192.0.2.1")
	cfg, _, err := serveConfig([]string{"--read-timeout", "5s", "--no-local-runner"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.TrustedProxies) != 2 || cfg.ReadTimeout != 5*time.Second {
		t.Errorf("env proxies %v, read timeout %v", cfg.TrustedProxies, cfg.ReadTimeout)
	}
	cfg, _, err = serveConfig([]string{"--trusted-proxy", "172.16.0.0/12", "--trusted-proxy", "::1"}, io.Discard)
	if err != nil || len(cfg.TrustedProxies) != 2 || cfg.TrustedProxies[0] != "172.16.0.0/12" {
		t.Errorf("flags override the environment: %v %v", cfg.TrustedProxies, err)
	}
	if _, _, err := serveConfig([]string{"--trusted-proxy", "not-a-cidr"}, io.Discard); err == nil {
		t.Error("a malformed proxy was accepted")
	}
	if _, _, err := serveConfig([]string{"--write-timeout", "10s"}, io.Discard); err == nil {
		t.Error("a write timeout shorter than the long poll was accepted")
	}
}

// A first start that cannot bind leaves nothing behind: the log's key, named by the address,
// used to be made before the bind failed, and named the log for that port for good.
func TestServeThatCannotBindMakesNoLog(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := t.TempDir()
	code, _, stderr := pq(t, "serve", "--addr", busy.Addr().String(), "--data", data, "--no-local-runner")
	if code == 0 || !strings.Contains(stderr, "listen on "+busy.Addr().String()) {
		t.Fatalf("serve on a busy port: exit %d\n%s", code, stderr)
	}
	for _, f := range []string{"log.skey", "portal.db"} {
		if _, err := os.Stat(filepath.Join(data, f)); err == nil {
			t.Errorf("a start that could not bind left %s", f)
		}
	}
}
