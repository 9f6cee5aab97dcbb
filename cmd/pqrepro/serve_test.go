package main

import (
	"io"
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
