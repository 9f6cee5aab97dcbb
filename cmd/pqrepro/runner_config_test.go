package main

import (
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// TestRunnerConfig: the environment fills what no flag sets, a flag wins over it, and a
// runner without a portal or a token (and no kept runner token) is refused before it starts.
func TestRunnerConfig(t *testing.T) {
	keys := t.TempDir()
	env := map[string]string{"PQREPRO_PORTAL": "http://env.example:8080", "PQREPRO_ENROL_TOKEN": "env-token",
		"PQREPRO_MAP": "env-map.yaml", "PQREPRO_KEYS": keys}
	getenv := func(k string) string { return env[k] }
	c, err := parseRunnerConfig([]string{"--map", "flag-map.yaml", "--rediscover", "3s", "--name", "bench"}, io.Discard, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Portal != "http://env.example:8080" || c.EnrolToken != "env-token" || c.Map != "flag-map.yaml" || c.Keys != keys ||
		c.TokenFile != filepath.Join(keys, "runner.token") || c.Rediscover != 3*time.Second || c.Name != "bench" {
		t.Errorf("config %+v", c)
	}
	delete(env, "PQREPRO_ENROL_TOKEN")
	_, err = parseRunnerConfig(nil, io.Discard, getenv)
	var u usageError
	if !errors.As(err, &u) {
		t.Errorf("no token and no kept runner token: %v, want a usage error", err)
	}
}
